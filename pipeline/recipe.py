"""The one training-recipe schema (torch-free: the config check imports it): optimizer, schedule, batching, loss
normalisation, stopping and which weights to keep. pipeline/train/ builds what a recipe names."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

from pipeline.errors import PipelineError

OPTIMIZERS = ("adam", "adadelta", "sgd")
SCHEDULES = ("inverse_sqrt", "constant", "halve_last_epochs", "halve_on_plateau")
BATCH_UNITS = ("tokens", "sentences")
LOSS_NORMS = ("tokens", "sentences")
KEEPS = ("last", "best_loss", "best_bleu", "average")
PRECISIONS = ("auto", "float32", "bfloat16")  # pipeline/precision.py resolves "auto" per device


@dataclass
class Recipe:
    """Optimisation settings of one training run; each family's paper settings are values of these fields.

    optimizer: adam (adam_betas, adam_eps) | adadelta (adadelta_rho, adadelta_eps; lr scales the update, 1.0 is
    Zeiler's) | sgd (sgd_momentum). schedule: inverse_sqrt (linear warmup to lr over `warmup` updates, then
    ~ step^-0.5) | constant | halve_last_epochs (lr halved at the start of each of the last `halve_epochs` of
    `max_epochs` epochs, as Shu and Nakayama 2016) | halve_on_plateau (halved after `plateau_patience`
    validations without a lower validation NLL). batch_unit: tokens (batch_size = padded tokens per batch) |
    sentences (batch_size pairs).
    loss_norm: tokens (loss / target tokens of the batch) | sentences (per-sentence sums averaged over the batch,
    dl4mt). Stop after max_steps updates or max_epochs epochs (exactly one > 0). keep: the weights written as
    model.pt: last | best_loss (lowest validation NLL) | best_bleu (highest validation BLEU, greedy) | average
    (mean of the last `average_last` checkpoints). precision: float32 | bfloat16 (autocast: matrix products in
    bfloat16, weights and loss in float32) | auto (bfloat16 where the device has it natively); decoding follows the
    model's training precision.
    """

    lr: float
    batch_size: int
    optimizer: str = "adam"
    adam_betas: tuple = (0.9, 0.98)
    adam_eps: float = 1e-9
    adadelta_rho: float = 0.95
    adadelta_eps: float = 1e-6
    sgd_momentum: float = 0.0
    schedule: str = "inverse_sqrt"
    warmup: int = 0
    halve_epochs: int = 0
    plateau_patience: int = 1
    batch_unit: str = "tokens"
    loss_norm: str = "tokens"
    label_smoothing: float = 0.0
    clip_norm: float = 0.0
    max_steps: int = 0
    max_epochs: int = 0
    keep: str = "last"
    average_last: int = 0
    checkpoint_every: int = 100
    valid_every: int = 100
    log_every: int = 10
    seed: int = 1
    precision: str = "auto"

    def __post_init__(self):
        if isinstance(self.adam_betas, list):
            self.adam_betas = tuple(self.adam_betas)
        _validate({f.name: getattr(self, f.name) for f in dataclasses.fields(self)}, "recipe")

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], where: str = "recipe") -> "Recipe":
        """Build from a config mapping; an unknown, missing, mistyped or invalid key -> PipelineError naming
        f"{where}.{key}" and what was expected."""
        if not isinstance(values, Mapping):
            raise PipelineError(f"{where}: expected a mapping of recipe keys, got {type(values).__name__}")
        fields = {f.name: f for f in dataclasses.fields(cls)}
        for key in values:
            if key not in fields:
                raise PipelineError(f"{where}.{key}: unknown recipe key; expected one of {sorted(fields)}")
        required = [name for name, f in fields.items() if f.default is dataclasses.MISSING]
        for key in required:
            if key not in values:
                raise PipelineError(f"{where}.{key}: missing; required recipe keys are {required}")
        full = {name: values.get(name, f.default) for name, f in fields.items()}
        _validate(full, where)
        return cls(**dict(values))

    def to_dict(self) -> dict:
        """Plain JSON-able mapping (betas as a list)."""
        out = dataclasses.asdict(self)
        out["adam_betas"] = list(self.adam_betas)
        return out


def _one_of(options: tuple) -> str:
    return f"one of {', '.join(options)}"


# key -> (type, check, what was expected)
_RULES: dict[str, tuple[str, Any, str]] = {
    "lr": ("float", lambda v: v > 0, "a number > 0"),
    "batch_size": ("int", lambda v: v >= 1, "an integer >= 1 (padded tokens or sentence pairs, see batch_unit)"),
    "optimizer": ("str", lambda v: v in OPTIMIZERS, _one_of(OPTIMIZERS)),
    "adam_betas": ("pair", lambda v: all(0 <= b < 1 for b in v), "two numbers in [0, 1), e.g. [0.9, 0.98]"),
    "adam_eps": ("float", lambda v: v > 0, "a number > 0"),
    "adadelta_rho": ("float", lambda v: 0 <= v < 1, "a number in [0, 1)"),
    "adadelta_eps": ("float", lambda v: v > 0, "a number > 0"),
    "sgd_momentum": ("float", lambda v: 0 <= v < 1, "a number in [0, 1)"),
    "schedule": ("str", lambda v: v in SCHEDULES, _one_of(SCHEDULES)),
    "warmup": ("int", lambda v: v >= 0, "an integer >= 0 (updates of linear warmup; inverse_sqrt only)"),
    "halve_epochs": ("int", lambda v: v >= 0, "an integer >= 0"),
    "plateau_patience": ("int", lambda v: v >= 1, "an integer >= 1 (validations without improvement)"),
    "batch_unit": ("str", lambda v: v in BATCH_UNITS, _one_of(BATCH_UNITS)),
    "loss_norm": ("str", lambda v: v in LOSS_NORMS, _one_of(LOSS_NORMS)),
    "label_smoothing": ("float", lambda v: 0 <= v < 1, "a number in [0, 1)"),
    "clip_norm": ("float", lambda v: v >= 0, "a number >= 0 (0 = no clipping)"),
    "max_steps": ("int", lambda v: v >= 0, "an integer >= 0 (0 = stop by max_epochs)"),
    "max_epochs": ("int", lambda v: v >= 0, "an integer >= 0 (0 = stop by max_steps)"),
    "keep": ("str", lambda v: v in KEEPS, _one_of(KEEPS)),
    "average_last": ("int", lambda v: v >= 0, "an integer >= 0 (>= 2 with keep: average)"),
    "checkpoint_every": ("int", lambda v: v >= 1, "an integer >= 1"),
    "valid_every": ("int", lambda v: v >= 1, "an integer >= 1"),
    "log_every": ("int", lambda v: v >= 1, "an integer >= 1"),
    "seed": ("int", lambda v: True, "an integer"),
    "precision": ("str", lambda v: v in PRECISIONS, _one_of(PRECISIONS)),
}
_FLOAT_HINT = " (write floats with a dot and a signed exponent, e.g. 1.0e-3: YAML reads 1e-3 as a string)"


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_type(value, kind: str) -> bool:
    if kind == "float":
        return _is_number(value)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    return isinstance(value, (list, tuple)) and len(value) == 2 and all(_is_number(b) for b in value)


def _validate(values: dict, where: str) -> None:
    """Types, ranges and the rules between keys of a complete recipe mapping."""
    def fail(key: str, problem: str) -> None:
        raise PipelineError(f"{where}.{key}: {problem}")

    for key, (kind, check, expected) in _RULES.items():
        value = values[key]
        if not _check_type(value, kind):
            hint = _FLOAT_HINT if isinstance(value, str) and kind in ("float", "pair") else ""
            fail(key, f"got {value!r} ({type(value).__name__}); expected {expected}{hint}")
        if not check(value):
            fail(key, f"invalid value {value!r}; expected {expected}")
    if (values["max_steps"] > 0) == (values["max_epochs"] > 0):
        fail("max_steps", f"got max_steps {values['max_steps']} and max_epochs {values['max_epochs']}; expected "
                          "exactly one of them > 0 (stop after that many updates or epochs)")
    if values["keep"] == "average" and values["average_last"] < 2:
        fail("average_last", f"got {values['average_last']}; expected an integer >= 2 with keep: average "
                             "(the number of last checkpoints averaged)")
    if values["schedule"] == "halve_last_epochs":
        if values["max_epochs"] < 1:
            fail("max_epochs", f"got {values['max_epochs']}; schedule halve_last_epochs counts epochs, expected "
                               "max_epochs >= 1 (and max_steps 0)")
        if not 1 <= values["halve_epochs"] <= values["max_epochs"]:
            fail("halve_epochs", f"got {values['halve_epochs']}; schedule halve_last_epochs expects an integer in "
                                 f"[1, max_epochs = {values['max_epochs']}]")
