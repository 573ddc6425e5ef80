"""Translation models: an encoder and a decoder (each a registered kind with its options) behind one interface.

Imports are lazy so that `pipeline.models.options` (params validation) does not load torch.
"""
_EXPORTS = {
    "Seq2Seq": "pipeline.models.seq2seq", "EncoderDecoder": "pipeline.models.seq2seq",
    "Encoder": "pipeline.models.seq2seq", "Decoder": "pipeline.models.seq2seq",
    "register_encoder": "pipeline.models.seq2seq", "register_decoder": "pipeline.models.seq2seq",
    "ENCODERS": "pipeline.models.seq2seq", "DECODERS": "pipeline.models.seq2seq",
    "ModelSpec": "pipeline.models.options", "validate_model": "pipeline.models.options",
    "build_model": "pipeline.models.registry", "count_parameters": "pipeline.models.registry",
    "init_from": "pipeline.models.registry",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'pipeline.models' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    if name in ("ENCODERS", "DECODERS"):  # complete only once every module has registered its kinds
        value.every()
    return value
