"""The combination methods a params file may name under `combinations:` (torch-free): which systems each reads, in
which roles, and its settings with defaults.

- rerank: the `nbest` system's n-best lists reordered by the `scorer`'s (a trained model's or an ensemble's)
  teacher-forced log-probability of each candidate (pipeline/rerank.py);
- gmbr: GMBR system combination over the n-best lists of `systems`, its weights tuned on the first
  `tune_sentences` of `tune_split` to maximise `metric` (pipeline/combination.py);
- length: per sentence the `short` system's output below `threshold` source words, else the `long` one's.
"""
from __future__ import annotations

from pipeline.errors import PipelineError

NBEST_KINDS = ("experiment", "ensemble", "external")  # systems with n-best lists: beam search's or supplied
MODEL_KINDS = ("experiment", "ensemble")               # systems with weights that can score a candidate
ANY_KIND = NBEST_KINDS + ("combination",)

# method -> {"inputs": role -> (a list of systems?, the kinds allowed), "settings": name -> (type, default),
#            "steps": the registered steps that make its outputs (pipeline/steps/)}
METHODS: dict[str, dict] = {
    "rerank": {"inputs": {"nbest": (False, NBEST_KINDS), "scorer": (False, MODEL_KINDS)},
               "settings": {"n": (int, 20), "length": (str, "normalize")}, "steps": ("rerank",)},
    "gmbr": {"inputs": {"systems": (True, NBEST_KINDS)}, "steps": ("gmbr-tune", "gmbr"),
             "settings": {"n": (int, 20), "tune_split": (str, "valid"), "tune_sentences": (int, 500),
                          "metric": (str, "multi-bleu"), "trials": (int, 200), "seed": (int, 1)}},
    "length": {"inputs": {"short": (False, ANY_KIND), "long": (False, ANY_KIND)}, "steps": ("length-switch",),
               "settings": {"threshold": (int, 40)}},
}
RERANK_LENGTH = ("normalize", "none")  # a candidate's score: log-probability per token (and EOS) | summed


def check_combination(spec: dict, kinds: dict[str, str]) -> tuple[str, dict, dict]:
    """(method, role -> system or [systems], settings with defaults) of one combination; kinds: every system name ->
    experiment | ensemble | external | combination. A bad key or value -> PipelineError naming it."""
    method = spec.get("method")
    if method not in METHODS:
        raise PipelineError(f"method: expected one of {', '.join(METHODS)}, got {method!r}")
    schema = METHODS[method]
    allowed = {"method", "settings", *schema["inputs"]}
    for key in spec:
        if key not in allowed:
            raise PipelineError(f"{key}: unknown key for method {method}; expected one of {', '.join(sorted(allowed))}")
    inputs = {}
    for role, (many, wanted) in schema["inputs"].items():
        if role not in spec:
            raise PipelineError(f"{role}: missing required key (method {method})")
        value = spec[role]
        if many != isinstance(value, list) or (many and not value):
            shape = "a non-empty list of system names" if many else "one system name"
            raise PipelineError(f"{role}: expected {shape}, got {value!r}")
        for i, system in enumerate(value if many else [value]):
            where = f"{role}[{i}]" if many else role
            if system not in kinds:
                raise PipelineError(f"{where}: unknown system {system!r}")
            if kinds[system] not in wanted:
                raise PipelineError(f"{where}: {system} is of kind {kinds[system]}; expected a system of kind "
                                    f"{' or '.join(wanted)}")
        inputs[role] = list(value) if many else value
    return method, inputs, _settings(method, spec.get("settings") or {})


def _settings(method: str, raw) -> dict:
    schema = METHODS[method]["settings"]
    if not isinstance(raw, dict):
        raise PipelineError(f"settings: expected a mapping, got {raw!r}")
    out = {}
    for key, value in raw.items():
        if key not in schema:
            raise PipelineError(f"settings.{key}: unknown setting for method {method}; expected one of "
                                f"{', '.join(schema)}")
        kind = schema[key][0]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise PipelineError(f"settings.{key}: expected {kind.__name__}, got {value!r}")
        if kind is int and value < 1:
            raise PipelineError(f"settings.{key}: expected an integer >= 1, got {value!r}")
        out[key] = value
    settings = {key: out.get(key, default) for key, (_, default) in schema.items()}
    if method == "rerank" and settings["length"] not in RERANK_LENGTH:
        raise PipelineError(f"settings.length: expected one of {', '.join(RERANK_LENGTH)}, got {settings['length']!r}")
    if method == "gmbr":
        from pipeline.evaluate.metrics import get_metric
        try:
            get_metric(settings["metric"])
        except PipelineError as err:
            raise PipelineError(f"settings.metric: {err}") from None
        if not (settings["tune_split"] == "valid" or settings["tune_split"].startswith("test")):
            raise PipelineError(f"settings.tune_split: expected valid or a test split, got {settings['tune_split']!r}")
    return settings
