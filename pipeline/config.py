"""params.yaml, validated and resolved for one scale into typed settings.

Every error names the key (e.g. `experiments.zhen-base.model`) and what was expected.
Any leaf may be given per scale as `{tiny: ..., paper: ...}`; resolution picks the active scale.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pipeline.errors import PipelineError
from pipeline.models.options import OPTIONS, validate_options

SCALES = ("tiny", "paper")
RECIPE_KEYS = {
    "lr": float, "warmup": int, "max_steps": int, "batch_tokens": int, "label_smoothing": float,
    "adam_betas": list, "adam_eps": float, "clip_norm": float, "checkpoint_every": int,
    "valid_every": int, "log_every": int,
}
RESOURCE_KEYS = {"gpu": int, "runtime": int, "mem_mb": int, "cpus": int}
# Per-cell analyses a table or figure may ask for (zeng2021): tokenised multi-bleu BLEU beside SacreBLEU, BLEU by
# source and target length, attention statistics, the learnt attention patterns, decoding speed, and the
# generation metrics (ROUGE, BLEU-4, METEOR) of Table 4.
ANALYSES = ("tokenized_bleu", "length_src_tgt", "attention", "patterns", "speed", "generation")
ANALYSIS_KEYS = {"speed_sentences": int, "speed_batch_sizes": list, "speed_beams": list, "speed_repeats": int,
                 "attention_sentences": int, "attention_bins": int, "patterns_size": int}
DECODING_KEYS = {"beam": int, "length_penalty": float, "batch_size": int, "max_len_a": float, "max_len_b": int}


@dataclass(frozen=True)
class Corpus:
    """One translation direction and its preprocessing."""
    name: str
    src: str
    tgt: str
    source: str
    max_len: int
    bpe_merges: int
    joint_bpe: bool
    valid_size: int = 500
    test_size: int = 1000


@dataclass(frozen=True)
class ModelPreset:
    """A named architecture with its options for the active scale."""
    name: str
    arch: str
    options: dict


@dataclass(frozen=True)
class Resources:
    """What a training job asks the cluster for."""
    gpu: int
    runtime: int
    mem_mb: int
    cpus: int


@dataclass(frozen=True)
class Recipe:
    """Optimiser/schedule settings (pipeline.train.Recipe fields) and job resources."""
    name: str
    train: dict
    resources: Resources


@dataclass(frozen=True)
class Experiment:
    """One trained system: corpus + model preset + recipe (+ the system it starts from)."""
    name: str
    corpus: str
    model: str
    recipe: str
    init: str | None = None
    options: dict = field(default_factory=dict)  # overrides of the preset's options for this system only
    decoding: dict = field(default_factory=dict)  # overrides of the global decoding settings (e.g. length_penalty)


@dataclass(frozen=True)
class Table:
    """Which experiment fills which cell of a paper's table or figure, and what else the layout needs."""
    name: str
    paper: str
    output: str                 # results/<paper>/<output>.tsv (+ .md for tables, .png for figures)
    cells: dict
    baselines: dict
    figure: bool = False
    probing: bool = False       # the layout shows probing accuracies (hao2019 Table 5)
    length_bins: bool = False   # the layout shows BLEU by source length
    analyses: tuple = ()        # further per-cell files the layout reads (ANALYSES)

    @property
    def target(self) -> str:
        return f"results/{self.paper}/{self.output}.tsv"

    @property
    def rendering(self) -> str:
        """The .md of a table or the .png of a figure."""
        return f"results/{self.paper}/{self.output}.{'png' if self.figure else 'md'}"

    def experiments(self) -> list[str]:
        return sorted({exp for row in self.cells.values() for exp in row.values()})


@dataclass(frozen=True)
class Params:
    """Everything params.yaml says, resolved for `scale`."""
    scale: str
    seed: int
    artifacts: str
    downloads: str
    manual: dict
    corpora: dict[str, Corpus]
    models: dict[str, ModelPreset]
    recipes: dict[str, Recipe]
    decoding: dict
    significance: dict
    experiments: dict[str, Experiment]
    tables: dict[str, Table] = field(default_factory=dict)
    probing: dict = field(default_factory=dict)
    analysis: dict = field(default_factory=dict)

    def decoding_of(self, experiment: str) -> dict:
        """The decoding settings of an experiment: the global ones plus its own overrides."""
        return {**self.decoding, **self.experiments[experiment].decoding}

    def model_options(self, experiment: str) -> tuple[str, dict]:
        """The architecture and options of an experiment: its preset plus its own overrides."""
        exp = self.experiments[experiment]
        preset = self.models[exp.model]
        return preset.arch, {**preset.options, **exp.options}

    @property
    def root(self) -> str:
        """Artifacts of this scale live here, so tiny and paper runs never mix."""
        return f"{self.artifacts}/{self.scale}"


class _Reader:
    """Walks the raw YAML, resolving per-scale values and naming keys in errors."""

    def __init__(self, source: str, scale: str):
        self.source, self.scale = source, scale

    def fail(self, key: str, message: str):
        raise PipelineError(f"{self.source}: {key}: {message}")

    def mapping(self, value: Any, key: str) -> dict:
        if not isinstance(value, dict):
            self.fail(key, f"expected a mapping, got {type(value).__name__} {value!r}")
        return value

    def keys(self, value: dict, key: str, allowed, required=()) -> None:
        for name in value:
            if name not in allowed:
                close = difflib.get_close_matches(str(name), list(allowed), n=1)
                hint = f"; did you mean '{close[0]}'?" if close else ""
                self.fail(f"{key}.{name}" if key else str(name),
                          f"unknown key{hint} (expected one of: {', '.join(sorted(allowed))})")
        for name in required:
            if name not in value:
                self.fail(f"{key}.{name}" if key else name, "missing required key")

    def value(self, value: Any, key: str, kind: type):
        """Resolve `{tiny:, paper:}` and check the type (int accepted where float is expected)."""
        if isinstance(value, dict) and kind is not dict:
            self.keys(value, key, SCALES, required=SCALES)
            value = value[self.scale]
            key = f"{key}.{self.scale}"
        ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value, ok = float(value), True
        if not ok:
            self.fail(key, f"expected {kind.__name__}, got {type(value).__name__} {value!r}")
        return value

    def name_ref(self, value: Any, key: str, known: dict, what: str) -> str:
        value = self.value(value, key, str)
        if value not in known:
            close = difflib.get_close_matches(value, list(known), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            self.fail(key, f"unknown {what} '{value}'{hint}; defined: {', '.join(sorted(known)) or 'none'}")
        return value


def load_params(path: str | Path = "params.yaml", scale: str | None = None) -> Params:
    """Read and validate a params file."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PipelineError(f"{path}: no such params file") from None
    except yaml.YAMLError as err:
        raise PipelineError(f"{path}: not valid YAML: {err}") from None
    return parse_params(raw, source=str(path), scale=scale)


def parse_params(raw: Any, source: str = "params.yaml", scale: str | None = None) -> Params:
    """Validate the raw mapping (e.g. Snakemake's `config`) and resolve it for its scale."""
    if not isinstance(raw, dict):
        raise PipelineError(f"{source}: expected a mapping at the top level")
    top = ("scale", "seed", "paths", "corpora", "models", "recipes", "decoding", "significance",
           "experiments", "finetunes", "tables", "figures", "probing", "analysis")
    scale = scale or raw.get("scale", "tiny")
    if scale not in SCALES:
        raise PipelineError(f"{source}: scale: expected one of {', '.join(SCALES)}, got {scale!r}")
    r = _Reader(source, scale)
    r.keys(raw, "", top, required=("corpora", "models", "recipes", "experiments"))

    paths = r.mapping(raw.get("paths", {}), "paths")
    r.keys(paths, "paths", ("artifacts", "downloads", "manual"))
    manual = r.mapping(paths.get("manual") or {}, "paths.manual")

    corpora = {name: _corpus(r, name, spec) for name, spec in r.mapping(raw["corpora"], "corpora").items()}
    models = _models(r, r.mapping(raw["models"], "models"))
    recipes = {name: _recipe(r, name, spec) for name, spec in r.mapping(raw["recipes"], "recipes").items()}
    decoding = _flat(r, raw.get("decoding", {}), "decoding", DECODING_KEYS)
    significance = _flat(r, raw.get("significance", {}), "significance", {"n_samples": int, "seed": int})

    experiments: dict[str, Experiment] = {}
    for group in ("experiments", "finetunes"):
        for name, spec in r.mapping(raw.get(group) or {}, group).items():
            if name in experiments:
                r.fail(f"{group}.{name}", "name already used by another experiment")
            experiments[name] = _experiment(r, group, name, spec, corpora, models, recipes)
    for name, exp in experiments.items():
        group = "finetunes" if name in (raw.get("finetunes") or {}) else "experiments"
        if group == "finetunes":
            r.name_ref(exp.init, f"finetunes.{name}.init", experiments, "experiment")
            if exp.init == name:
                r.fail(f"finetunes.{name}.init", "an experiment cannot start from itself")

    tables: dict[str, Table] = {}
    for group in ("tables", "figures"):
        for name, spec in r.mapping(raw.get(group) or {}, group).items():
            if name in tables:
                r.fail(f"{group}.{name}", "name already used by a table or figure")
            tables[name] = _table(r, group, name, spec, experiments)
    probing = _flat(r, raw.get("probing", {}), "probing", {"corpus": str, "max_per_task": int, "seed": int,
                                                           "epochs": int, "hidden": int, "lr": float})
    if "corpus" in probing:
        r.name_ref(probing["corpus"], "probing.corpus", corpora, "corpus")
    analysis = _flat(r, raw.get("analysis", {}), "analysis", ANALYSIS_KEYS)
    for key in ("speed_batch_sizes", "speed_beams"):
        values = analysis.get(key, [1])
        if not values or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in values):
            r.fail(f"analysis.{key}", f"expected a non-empty list of positive integers, got {values!r}")
    return Params(
        scale=scale,
        seed=r.value(raw.get("seed", 1), "seed", int),
        artifacts=r.value(paths.get("artifacts", "artifacts"), "paths.artifacts", str),
        downloads=r.value(paths.get("downloads", "artifacts/downloads"), "paths.downloads", str),
        manual={k: r.value(v, f"paths.manual.{k}", str) for k, v in manual.items()},
        corpora=corpora, models=models, recipes=recipes, decoding=decoding, significance=significance,
        experiments=experiments, tables=tables, probing=probing, analysis=analysis,
    )


def _flat(r: _Reader, raw: Any, key: str, schema: dict) -> dict:
    raw = r.mapping(raw, key)
    r.keys(raw, key, schema)
    return {name: r.value(value, f"{key}.{name}", schema[name]) for name, value in raw.items()}


def _corpus(r: _Reader, name: str, spec: Any) -> Corpus:
    key = f"corpora.{name}"
    spec = r.mapping(spec, key)
    schema = {"src": str, "tgt": str, "source": str, "max_len": int, "bpe_merges": int, "joint_bpe": bool,
              "valid_size": int, "test_size": int}
    r.keys(spec, key, schema, required=("src", "tgt", "source", "max_len", "bpe_merges", "joint_bpe"))
    values = {k: r.value(v, f"{key}.{k}", schema[k]) for k, v in spec.items()}
    from pipeline.data.registry import CORPORA  # torch-free; the registry of downloadable corpora
    r.name_ref(values["source"], f"{key}.source", CORPORA, "registry corpus")
    return Corpus(name=name, **values)


def _models(r: _Reader, raw: dict) -> dict[str, ModelPreset]:
    """Each preset's options for the active scale (flat on purpose: DVC tracks `models.<name>` exactly)."""
    presets = {}
    for name, spec in raw.items():
        key = f"models.{name}"
        spec = dict(r.mapping(spec, key))
        if "arch" not in spec:
            r.fail(f"{key}.arch", "missing required key (the architecture, e.g. transformer)")
        arch = r.value(spec.pop("arch"), f"{key}.arch", str)
        if arch not in OPTIONS:
            r.fail(f"{key}.arch", f"unknown architecture '{arch}'; known: {', '.join(OPTIONS)}")
        options = _scaled_options(r, key, spec)
        _check_model_options(r, key, arch, options)
        presets[name] = ModelPreset(name=name, arch=arch, options=options)
    return presets


def _scaled_options(r: _Reader, key: str, spec: dict) -> dict:
    """Option values with `{tiny:, paper:}` resolved for the active scale (types are checked by the arch)."""
    options = {}
    for opt, value in spec.items():
        if isinstance(value, dict):
            r.keys(value, f"{key}.{opt}", SCALES, required=SCALES)
            value = value[r.scale]
        options[opt] = value
    return options


def _check_model_options(r: _Reader, key: str, arch: str, options: dict) -> None:
    """Option names and types come from the architecture's typed option class."""
    try:
        validate_options(arch, options)
    except PipelineError as err:
        r.fail(key, str(err))


def _recipe(r: _Reader, name: str, spec: Any) -> Recipe:
    key = f"recipes.{name}"
    spec = dict(r.mapping(spec, key))
    r.keys(spec, key, list(RECIPE_KEYS) + ["resources"], required=("lr", "warmup", "max_steps", "batch_tokens"))
    resources = _flat(r, spec.pop("resources", {}), f"{key}.resources", RESOURCE_KEYS)
    defaults = {"gpu": 0, "runtime": 60, "mem_mb": 4000, "cpus": 1}
    train = {k: r.value(v, f"{key}.{k}", RECIPE_KEYS[k]) for k, v in spec.items()}
    return Recipe(name=name, train=train, resources=Resources(**{**defaults, **resources}))


def _experiment(r, group, name, spec, corpora, models, recipes) -> Experiment:
    key = f"{group}.{name}"
    spec = r.mapping(spec, key)
    required = ("corpus", "model", "recipe") + (("init",) if group == "finetunes" else ())
    r.keys(spec, key, required + ("options", "decoding"), required=required)
    model = r.name_ref(spec["model"], f"{key}.model", models, "model preset")
    options = _scaled_options(r, f"{key}.options", r.mapping(spec.get("options") or {}, f"{key}.options"))
    _check_model_options(r, f"{key}.options", models[model].arch, {**models[model].options, **options})
    return Experiment(
        name=name,
        corpus=r.name_ref(spec["corpus"], f"{key}.corpus", corpora, "corpus"),
        model=model,
        recipe=r.name_ref(spec["recipe"], f"{key}.recipe", recipes, "recipe"),
        init=spec.get("init"),
        options=options,
        decoding=_flat(r, spec.get("decoding") or {}, f"{key}.decoding", DECODING_KEYS),
    )


def _table(r: _Reader, group: str, name: str, spec: Any, experiments: dict) -> Table:
    key = f"{group}.{name}"
    spec = r.mapping(spec, key)
    r.keys(spec, key, ("paper", "output", "cells", "baselines", "probing", "length_bins", "analyses"),
           required=("paper", "output", "cells"))
    cells = {}
    for row, by_pair in r.mapping(spec["cells"], f"{key}.cells").items():
        by_pair = r.mapping(by_pair, f"{key}.cells.{row}")
        cells[row] = {pair: r.name_ref(exp, f"{key}.cells.{row}.{pair}", experiments, "experiment")
                      for pair, exp in by_pair.items()}
    baselines = {}
    for row, base in r.mapping(spec.get("baselines") or {}, f"{key}.baselines").items():
        r.name_ref(row, f"{key}.baselines.{row}", cells, "table row")
        baselines[row] = r.name_ref(base, f"{key}.baselines.{row}", cells, "table row")
    analyses = spec.get("analyses") or []
    if not isinstance(analyses, list) or any(a not in ANALYSES for a in analyses):
        r.fail(f"{key}.analyses", f"expected a list of {', '.join(ANALYSES)}, got {analyses!r}")
    output = r.value(spec["output"], f"{key}.output", str)
    if not output.replace("_", "").isalnum():
        r.fail(f"{key}.output", f"expected a file stem such as table3 or fig5, got {output!r}")
    return Table(name=name, paper=r.value(spec["paper"], f"{key}.paper", str), output=output, cells=cells,
                 baselines=baselines, figure=group == "figures",
                 probing=r.value(spec.get("probing", False), f"{key}.probing", bool),
                 length_bins=r.value(spec.get("length_bins", False), f"{key}.length_bins", bool),
                 analyses=tuple(analyses))
