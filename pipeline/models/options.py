"""Typed option sets of the architectures, torch-free so params.yaml can be validated cheaply."""
from __future__ import annotations

import dataclasses
import difflib
import typing
from dataclasses import dataclass
from typing import Any, Literal, Mapping

from pipeline.errors import PipelineError


def _require(ok: bool, key: str, expected: str, value) -> None:
    """Raise PipelineError naming the option `key` unless `ok`."""
    if not ok:
        raise PipelineError(f"model option '{key}': expected {expected}, got {value!r}")


@dataclass
class TransformerOptions:
    """Options of the `transformer` architecture; defaults are the paper's Base model."""

    d_model: int = 512
    ffn_dim: int = 2048
    heads: int = 8
    enc_layers: int = 6
    dec_layers: int = 6
    dropout: float = 0.1  # residual and embedding dropout
    attention_dropout: float = 0.0
    share_embeddings: bool = False  # one table for source, target and output (THUMT default off; our choice)
    tie_output: bool = False  # target embedding = output projection (THUMT default off; our choice)
    max_positions: int = 1024
    rel_pos_k: int = 0  # Shaw et al. 2018 relative positions with clipping distance k (hao2019 5.3: 16); 0 = off
    disan: bool = False  # DiSAN directional masks on the encoder self-attention (Shen et al. 2018)
    # zeng2021: self-attention kind per side; RAN-E = enc ran, RAN-D = dec ran, RAN-ALL = both
    enc_self_attn: Literal["dot", "ran", "hcsa", "synr"] = "dot"
    dec_self_attn: Literal["dot", "ran", "hcsa", "synr"] = "dot"
    ran_max_len: int = 256  # M: RAN / Syn-R matrices are [heads, M, M]; longer sentences are refused
    ran_attention_dropout: float = 0.0  # dropout on RAN / Syn-R / HC-SA weights (zeng2021 3.1: 0.2)
    ran_fixed: bool = False  # Table 3 "fixed": A_0 frozen at its random initialisation
    ran_transition: Literal["ln_res", "plain"] = "ln_res"  # eq. 3-4, or Table 3 "w/o LN&RES": tanh(W A + b)
    enc_positions: bool = True  # Table 2 "-Pos-E": False drops the encoder's sinusoidal positions
    dec_positions: bool = True  # Table 2 "-Pos-D"

    def __post_init__(self) -> None:
        for key in ("d_model", "ffn_dim", "heads", "enc_layers", "dec_layers"):
            _require(getattr(self, key) >= 1, key, "a positive integer", getattr(self, key))
        _require(self.d_model % 2 == 0, "d_model", "an even number (sin/cos halves)", self.d_model)
        _require(self.d_model % self.heads == 0, "heads", f"a divisor of d_model={self.d_model}", self.heads)
        for key in ("dropout", "attention_dropout", "ran_attention_dropout"):
            _require(0.0 <= getattr(self, key) < 1.0, key, "a probability in [0, 1)", getattr(self, key))
        _require(self.max_positions >= 2, "max_positions", "an integer >= 2", self.max_positions)
        _require(self.rel_pos_k >= 0, "rel_pos_k", "an integer >= 0 (0: no relative positions)", self.rel_pos_k)
        _require(not self.disan or self.heads % 2 == 0, "heads",
                 "an even number when 'disan' is on (half the heads forward, half backward)", self.heads)
        _require(self.ran_max_len >= 1, "ran_max_len", "a positive integer", self.ran_max_len)
        dot = self.enc_self_attn == "dot" and self.dec_self_attn == "dot"
        _require(self.rel_pos_k == 0 or dot, "rel_pos_k",
                 "0 unless both enc_self_attn and dec_self_attn are 'dot' (relative positions need queries)",
                 self.rel_pos_k)
        _require(not self.disan or self.enc_self_attn == "dot", "disan",
                 "false unless enc_self_attn is 'dot' (DiSAN masks dot-product heads)", self.disan)


@dataclass
class RecurrenceOptions(TransformerOptions):
    """Options of the `recurrence` architecture: the transformer's plus the recurrence encoder's."""

    rec_type: Literal["biarn", "birnn"] = "biarn"
    rec_layers: int = 1
    rec_steps: int = 8  # ARN steps T; 0 means T = J, the source length
    integration: Literal["stack", "gated"] = "stack"
    integrate_into: Literal["top", "all"] = "top"

    def __post_init__(self) -> None:
        super().__post_init__()
        _require(self.rec_layers >= 1, "rec_layers", "a positive integer", self.rec_layers)
        _require(self.rec_steps >= 0, "rec_steps", "an integer >= 0 (0: as many steps as source words)",
                 self.rec_steps)


@dataclass
class MultiColumnOptions(TransformerOptions):
    """Options of the `multicolumn` architecture (Chen et al. 2018): the transformer's plus the RNN encoder's."""

    rnn_layers: int = 6  # hao2019 5.3: six RNN layers

    def __post_init__(self) -> None:
        super().__post_init__()
        _require(self.rnn_layers >= 1, "rnn_layers", "a positive integer", self.rnn_layers)


OPTIONS: dict[str, type] = {"transformer": TransformerOptions, "recurrence": RecurrenceOptions,
                            "multicolumn": MultiColumnOptions}


def _check_type(arch: str, key: str, value: Any, hint: Any) -> Any:
    """The value converted to the option's type, or PipelineError naming the key and the expected type."""
    if typing.get_origin(hint) is Literal:
        choices = typing.get_args(hint)
        if value in choices and isinstance(value, str):
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
    else:  # pragma: no cover - every option is one of the types above
        raise TypeError(f"unsupported option type {hint!r} for '{key}'")
    raise PipelineError(f"model option '{key}' of architecture '{arch}': expected {expected}, "
                        f"got {type(value).__name__} {value!r}")


def parse_options(arch: str, options_cls: type, options: Mapping[str, Any]) -> Any:
    """Typed option set (a dataclass) from a plain mapping; unknown keys and wrong types -> PipelineError."""
    if not isinstance(options, Mapping):
        raise PipelineError(f"model options of architecture '{arch}': expected a mapping, "
                            f"got {type(options).__name__}")
    hints = typing.get_type_hints(options_cls)
    known = [f.name for f in dataclasses.fields(options_cls)]
    values = {}
    for key, value in options.items():
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise PipelineError(f"unknown model option '{key}' for architecture '{arch}'{hint}; "
                                f"known options: {', '.join(known)}")
        values[key] = _check_type(arch, key, value, hints[key])
    return options_cls(**values)


def validate_options(arch: str, options: Mapping[str, Any]) -> Any:
    """The typed option set of a named architecture, or PipelineError naming the bad key."""
    if arch not in OPTIONS:
        raise PipelineError(f"unknown architecture '{arch}'; known architectures: {', '.join(OPTIONS)}")
    return parse_options(arch, OPTIONS[arch], options)
