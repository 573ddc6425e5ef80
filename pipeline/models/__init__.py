"""Translation models behind one interface (Seq2Seq) and the registry of named architectures.

Imports are lazy so that `pipeline.models.options` (params validation) does not load torch.
"""
_EXPORTS = {"Seq2Seq": "pipeline.models.layers", "ARCHITECTURES": "pipeline.models.registry",
            "build_model": "pipeline.models.registry", "count_parameters": "pipeline.models.registry",
            "init_from": "pipeline.models.registry"}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'pipeline.models' has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(_EXPORTS[name]), name)
