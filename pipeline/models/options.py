"""Model specs and their typed options, torch-free so that params files are validated cheaply at start-up.

A model spec is a flat mapping {"encoder": kind, "decoder": kind, **options}. Each encoder kind and decoder kind
has an options dataclass, registered where it is defined (a torch-free `<concept>_options.py` module beside the
torch module) with @register_encoder_options(kind) / @register_decoder_options(kind); ModelOptions holds the
model-level options (the embedding tables). An option goes to every one of the three classes that declares it
(d_model, dropout: encoder and decoder alike); an option no class declares is an error.
"""
from __future__ import annotations

import dataclasses
import difflib
import importlib
import pkgutil
import typing
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Mapping

from pipeline.errors import PipelineError
from pipeline.registry import Registry

PARTS = ("model", "encoder", "decoder")


def require(ok: bool, key: str, expected: str, value: Any) -> None:
    """Raise PipelineError naming the option `key` unless `ok`."""
    if not ok:
        raise PipelineError(f"model option '{key}': expected {expected}, got {value!r}")


# ------------------------------------------------------------------------------------------- option classes
@dataclass
class ModelOptions:
    """Model-level options: which of the three embedding tables (source, target input, output projection) are one.

    hao2019 Table 3's #Para. implies three untied tables (the default); zeng2021 3.1 shares all three over one joint
    vocabulary (share_embeddings); tie_output ties only the target embedding and the output projection.
    """

    share_embeddings: bool = False  # one table for source, target and output: needs one joint vocabulary
    tie_output: bool = False  # target embedding = output projection
    # a bias on the output projection (dl4mt's ff_logit has one; it carries the unigram distribution, so that an RNN's
    # tanh readout need not saturate to express it); the Transformers have none
    output_bias: bool = False
    # xavier: Xavier-uniform matrices, embeddings N(0, e^-1/2), zero biases (the Transformers) | normal: every
    # matrix and embedding N(0, weight_init_scale^2), zero biases (werlen2018 6.2: N(0,1) x 0.01) | dl4mt: as normal,
    # but square matrices and the square gate blocks of RNN weights orthogonal (dl4mt's norm_weight and ortho_weight,
    # which werlen2018's code keeps) | uniform: every parameter U(-weight_init_scale, weight_init_scale) (zhang2018
    # 5.2: 0.1)
    weight_init: Literal["xavier", "normal", "dl4mt", "uniform"] = "xavier"
    weight_init_scale: float = 0.01

    def __post_init__(self) -> None:
        require(self.weight_init_scale > 0, "weight_init_scale", "a positive number", self.weight_init_scale)


@dataclass
class EncoderOptions:
    """Base of an encoder kind's options: the size of the embeddings it reads and the memory entries it writes."""

    writes: ClassVar[tuple[str, ...]] = ("enc",)  # memory entries holding states, each with a "<name>_pad"

    @property
    def embed_dim(self) -> int:
        """Size of the source embeddings the encoder reads."""
        raise NotImplementedError

    @property
    def memory_dims(self) -> dict[str, int]:
        """Size of each memory entry of `writes` (states [B,L,size], padding "<name>_pad" [B,L])."""
        raise NotImplementedError


@dataclass
class DecoderOptions:
    """Base of a decoder kind's options: what it reads from the memory, its embedding and output sizes."""

    reads: ClassVar[tuple[str, ...]] = ("enc",)  # memory entries the decoder attends to

    @property
    def embed_dim(self) -> int:
        """Size of the target embeddings the decoder reads."""
        raise NotImplementedError

    @property
    def output_dim(self) -> int:
        """Size of the features the output projection maps to the vocabulary."""
        raise NotImplementedError

    def check_memory(self, memory_dims: Mapping[str, int]) -> None:
        """PipelineError naming the option when the encoder's memory entries do not fit (beyond their presence)."""


ENCODER_OPTIONS: Registry = Registry("encoder options", same=lambda old, new: old is new,
                                    discover=lambda: load_option_modules())
DECODER_OPTIONS: Registry = Registry("decoder options", same=lambda old, new: old is new,
                                    discover=lambda: load_option_modules())


def _register(table: Registry, what: str, base: type, name: str):
    def decorator(cls):
        if not (dataclasses.is_dataclass(cls) and issubclass(cls, base)):
            raise TypeError(f"{what} options '{name}': {cls.__name__} must be a dataclass derived from "
                            f"{base.__name__}")
        where = f"{table[name].__name__} and {cls.__name__}" if name in table else ""
        table.add(name, cls, where)
        return cls
    return decorator


def register_encoder_options(name: str):
    """Class decorator: the options dataclass of encoder kind `name`."""
    return _register(ENCODER_OPTIONS, "encoder", EncoderOptions, name)


def register_decoder_options(name: str):
    """Class decorator: the options dataclass of decoder kind `name`."""
    return _register(DECODER_OPTIONS, "decoder", DecoderOptions, name)


_LOADED = False


def load_option_modules() -> None:
    """Import every `*_options` module of pipeline.models once (torch-free): each registers its kinds, so a new
    encoder or decoder is a new file, not an entry here."""
    global _LOADED
    if _LOADED:
        return
    import pipeline.models as package
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name.endswith("_options"):
            importlib.import_module(f"{package.__name__}.{info.name}")
    _LOADED = True


# ------------------------------------------------------------------------------------------------ the spec
@dataclass(frozen=True)
class ModelSpec:
    """A validated model spec: the encoder and decoder kinds and the typed options of each part."""

    encoder: str
    decoder: str
    options: Mapping[str, Any]  # "model" -> ModelOptions, "encoder" -> its options, "decoder" -> its options
    given: Mapping[str, Any]  # the spec's own options, converted to their types

    @property
    def model_options(self) -> ModelOptions:
        return self.options["model"]

    @property
    def encoder_options(self) -> EncoderOptions:
        return self.options["encoder"]

    @property
    def decoder_options(self) -> DecoderOptions:
        return self.options["decoder"]

    def to_dict(self) -> dict[str, Any]:
        """The flat spec again (options as given, typed): validate_model(spec.to_dict()) == spec."""
        return {"encoder": self.encoder, "decoder": self.decoder, **self.given}


def _fields(cls: type) -> dict[str, Any]:
    """Option name -> type hint of an options dataclass."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _check_type(key: str, value: Any, hint: Any, where: str) -> Any:
    """The value converted to the option's type, or PipelineError naming the key and the expected type."""
    if typing.get_origin(hint) is Literal:
        choices = typing.get_args(hint)
        if isinstance(value, str) and value in choices:
            return value
        expected = " | ".join(repr(c) for c in choices)
    elif hint is bool:
        if isinstance(value, bool):
            return value
        expected = "bool (true/false)"
    elif hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        expected = "int"
    elif hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        expected = "float"
    elif hint == tuple[int, ...]:  # a YAML list of integers (e.g. zhang2018's convolution widths)
        if isinstance(value, (list, tuple)) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return tuple(value)
        expected = "a list of ints"
    else:  # pragma: no cover - every option is one of the types above
        raise TypeError(f"unsupported option type {hint!r} for '{key}'")
    raise PipelineError(f"model option '{key}' for {where}: expected {expected}, got {type(value).__name__} {value!r}")


def _kind(spec: Mapping[str, Any], part: str, table: Mapping[str, type]) -> str:
    """The encoder or decoder kind named by the spec, or PipelineError listing the known kinds."""
    known = ", ".join(sorted(table))
    if part not in spec:
        raise PipelineError(f"model spec: missing '{part}'; expected one of the {part} kinds: {known}")
    name = spec[part]
    if not isinstance(name, str) or name not in table:
        close = difflib.get_close_matches(str(name), list(table), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise PipelineError(f"unknown {part} '{name}'{hint}; known {part}s: {known}")
    return name


def _check_pairing(encoder: str, decoder: str, options: Mapping[str, Any]) -> None:
    """The decoder's memory entries come from the encoder; shared or tied tables have one size."""
    enc, dec, model = options["encoder"], options["decoder"], options["model"]
    for entry in dec.reads:
        if entry not in enc.writes:
            writers = sorted(k for k, cls in ENCODER_OPTIONS.items() if entry in cls.writes)
            raise PipelineError(f"decoder '{decoder}' reads memory entry '{entry}', which encoder '{encoder}' does "
                                f"not write; encoders that do: {', '.join(writers) or 'none'}")
    unread = [entry for entry in enc.writes if entry not in dec.reads]
    if unread:
        readers = sorted(k for k, cls in DECODER_OPTIONS.items() if set(cls.reads) == set(enc.writes))
        raise PipelineError(f"encoder '{encoder}' writes memory entry '{unread[0]}', which decoder '{decoder}' never "
                            f"reads (that part would get no gradient); decoders that read all it writes: "
                            f"{', '.join(readers) or 'none'}")
    dec.check_memory(enc.memory_dims)
    sizes = {"source embedding": enc.embed_dim, "target embedding": dec.embed_dim, "output": dec.output_dim}
    if model.share_embeddings and len(set(sizes.values())) > 1:
        raise PipelineError("model option 'share_embeddings': expected one size for the three tables, got "
                            + ", ".join(f"{k} {v}" for k, v in sizes.items()))
    if model.tie_output and dec.embed_dim != dec.output_dim:
        raise PipelineError(f"model option 'tie_output': expected the target embedding size ({dec.embed_dim}) to "
                            f"equal the decoder's output size ({dec.output_dim})")


def validate_model(spec: Mapping[str, Any]) -> ModelSpec:
    """The typed spec of {"encoder": kind, "decoder": kind, **options}, or PipelineError naming the bad key."""
    if isinstance(spec, ModelSpec):
        return spec
    if not isinstance(spec, Mapping):
        raise PipelineError(f"model spec: expected a mapping {{encoder: ..., decoder: ..., options...}}, "
                            f"got {type(spec).__name__}")
    load_option_modules()
    encoder = _kind(spec, "encoder", ENCODER_OPTIONS)
    decoder = _kind(spec, "decoder", DECODER_OPTIONS)
    classes = {"model": ModelOptions, "encoder": ENCODER_OPTIONS[encoder], "decoder": DECODER_OPTIONS[decoder]}
    declared = {part: _fields(cls) for part, cls in classes.items()}
    where = f"encoder '{encoder}' / decoder '{decoder}'"
    values: dict[str, dict[str, Any]] = {part: {} for part in PARTS}
    given: dict[str, Any] = {}
    for key, value in spec.items():
        if key in ("encoder", "decoder"):
            continue
        owners = [part for part in PARTS if key in declared[part]]
        if not owners:
            known = sorted({name for fields in declared.values() for name in fields})
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise PipelineError(f"unknown model option '{key}' for {where}{hint}; known options: {', '.join(known)}")
        for part in owners:
            values[part][key] = _check_type(key, value, declared[part][key], where)
        given[key] = values[owners[0]][key]
    options = {part: classes[part](**values[part]) for part in PARTS}  # __post_init__ checks name their option
    _check_pairing(encoder, decoder, options)
    return ModelSpec(encoder=encoder, decoder=decoder, options=options, given=given)
