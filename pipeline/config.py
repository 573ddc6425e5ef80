"""params.yaml and every paper's params/<paper>.yaml, validated and resolved for one scale into typed settings.

params.yaml holds what all papers share (scale, seed, paths, decoding and significance defaults); each
params/<paper>.yaml holds one paper's corpora, model presets, recipes, systems (experiments, grids,
ensembles, outputs of outside systems, combinations), tables and figures. Names are global: a paper may use another paper's corpus, preset or recipe.
Every error names the file and the key (e.g. `params/<paper>.yaml: experiments.<name>.model`) and what
was expected. Any leaf may be given per scale as `{tiny: ..., paper: ...}`; resolution picks the active scale.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pipeline.analyses import ANALYSES, check_settings
from pipeline.errors import PipelineError

SCALES = ("tiny", "paper")
PAPERS_DIR = "params"  # params/<paper>.yaml, beside params.yaml
SHARED_KEYS = ("scale", "seed", "precision", "paths", "decoding", "significance")
PAPER_KEYS = ("corpora", "models", "recipes", "experiments", "grids", "ensembles", "external", "combinations", "tables",
              "figures")
RESOURCE_KEYS = {"gpu": int, "runtime": int, "mem_mb": int, "cpus": int}
DECODING_KEYS = {"beam": int, "length": str, "length_penalty": float, "batch_size": int, "max_len_a": float,
                 "max_len_b": int, "nbest": int}
LENGTH_MODES = ("penalty", "normalize", "none")
SIGNIFICANCE_KEYS = {"test": str, "n_samples": int, "seed": int}
CORPUS_KEYS = {"src": str, "tgt": str, "source": str, "max_len": int, "bpe_merges": int, "joint_bpe": bool,
               "joint_vocab": bool, "truecase": bool, "valid_size": int, "test_size": int, "test_sets": list,
               "bpe_sides": list, "vocab_size": int}
SIDES = ("src", "tgt")
SYSTEM_KEYS = ("corpus", "model", "recipe", "init", "options", "decoding", "seed")
TRAIN_FIELDS = ("n_params", "steps_per_s", "tokens_per_s", "wall_time_s", "steps", "epochs", "best_valid_nll")


@dataclass(frozen=True)
class Corpus:
    """One translation direction, its preprocessing and its test sets."""
    name: str
    paper: str
    src: str
    tgt: str
    source: str
    max_len: int
    bpe_merges: int
    joint_bpe: bool
    joint_vocab: bool = False   # one vocabulary for both sides (needs joint BPE): lets a model share embeddings
    truecase: bool = False      # Moses truecasing of the tokenised text, a model per side learnt on the training data
    valid_size: int = 500
    test_size: int = 1000
    test_sets: tuple = ("test",)
    bpe_sides: tuple = SIDES    # the sides BPE segments ("src", "tgt" order); the others keep their words
    vocab_size: int = 0         # the most frequent types kept per vocabulary (the rest map to <unk>); 0: every type


@dataclass(frozen=True)
class ModelPreset:
    """A named encoder + decoder and their options, for the active scale."""
    name: str
    paper: str
    spec: dict  # {"encoder": ..., "decoder": ..., **options}


@dataclass(frozen=True)
class Resources:
    """What a training job asks the cluster for."""
    gpu: int
    runtime: int
    mem_mb: int
    cpus: int


@dataclass(frozen=True)
class Recipe:
    """Training settings (pipeline.recipe.Recipe fields) and job resources."""
    name: str
    paper: str
    train: dict
    resources: Resources


@dataclass(frozen=True)
class Experiment:
    """One trained system: corpus + model preset + recipe (+ the system it starts from)."""
    name: str
    paper: str
    corpus: str
    model: str
    recipe: str
    init: str | None = None
    options: dict = field(default_factory=dict)   # overrides of the preset's options for this system only
    decoding: dict = field(default_factory=dict)  # overrides of the shared decoding settings
    params_keys: tuple = ()                       # (file, key) pairs DVC tracks for this system
    seed: int | None = None                       # its own initialisation seed (None: params.yaml's seed)


@dataclass(frozen=True)
class Ensemble:
    """A system that decodes with several trained experiments, averaging their log-probabilities."""
    name: str
    paper: str
    members: tuple
    corpus: str
    decoding: dict = field(default_factory=dict)
    params_keys: tuple = ()


@dataclass(frozen=True)
class External:
    """A system outside the pipeline whose outputs the user supplies: paths.manual.<manual> is a directory holding
    <split>.hyp (one translation per line) and, where a combination reads its n-best list, <split>.nbest."""
    name: str
    paper: str
    corpus: str
    manual: str
    description: str
    decoding: dict = field(default_factory=dict)
    params_keys: tuple = ()


@dataclass(frozen=True)
class Combination:
    """A system made from other systems' outputs (pipeline/combination.py METHODS): `inputs` role -> system(s)."""
    name: str
    paper: str
    method: str
    inputs: dict
    settings: dict
    corpus: str
    decoding: dict = field(default_factory=dict)
    params_keys: tuple = ()

    def systems(self) -> list[str]:
        """The systems it reads, in role order."""
        return [s for value in self.inputs.values() for s in (value if isinstance(value, list) else [value])]


@dataclass(frozen=True)
class Significance:
    """Which value a table tests, with which test and settings, and each proposed row's baseline row."""
    value: str
    test: str
    n_samples: int
    seed: int
    baselines: dict


@dataclass(frozen=True)
class Table:
    """A table or figure: which system fills which cell, what each cell shows, and what its layout needs."""
    name: str
    paper: str
    output: str                  # results/<paper>/<output>.tsv (+ .md / .png): the name is <paper>-<output>
    cells: dict                  # row -> column -> system
    test_sets: dict              # column -> test set
    values: dict                 # value name -> source ("<metric>[.<field>]" or "train.<field>")
    significance: Significance | None = None
    analyses: dict = field(default_factory=dict)  # analysis kind -> settings (pipeline/analyses.py)
    figure: bool = False
    layout: str = ""
    params_keys: tuple = ()

    @property
    def target(self) -> str:
        return f"results/{self.paper}/{self.output}.tsv"

    @property
    def rendering(self) -> str:
        """The .md of a table or the .png of a figure."""
        return f"results/{self.paper}/{self.output}.{'png' if self.figure else 'md'}"

    def systems(self) -> list[str]:
        return sorted({system for row in self.cells.values() for system in row.values()})

    def baseline(self, row: str, column: str) -> str | None:
        """The system in the same column of `row`'s baseline row, None for a row without one."""
        if self.significance is None or row not in self.significance.baselines:
            return None
        return self.cells[self.significance.baselines[row]].get(column)

    def tested(self) -> tuple[str, str]:
        """(metric, field) of the value the significance test compares ("" for the metric's own score)."""
        metric, _, field = self.values[self.significance.value].partition(".")
        return metric, field

    def metrics(self) -> list[str]:
        """The metrics whose score files the cells read."""
        return sorted({source.split(".")[0] for source in self.values.values() if not source.startswith("train.")})


@dataclass(frozen=True)
class Params:
    """Everything params.yaml and the papers' files say, resolved for `scale`."""
    scale: str
    seed: int
    artifacts: str
    downloads: str
    manual: dict
    decoding: dict
    significance: dict
    corpora: dict[str, Corpus]
    models: dict[str, ModelPreset]
    recipes: dict[str, Recipe]
    experiments: dict[str, Experiment]
    ensembles: dict[str, Ensemble] = field(default_factory=dict)
    tables: dict[str, Table] = field(default_factory=dict)
    files: dict = field(default_factory=dict)  # paper -> its params file
    external: dict[str, External] = field(default_factory=dict)
    combinations: dict[str, Combination] = field(default_factory=dict)

    @property
    def systems(self) -> dict:
        """Every system a table cell may name: experiments, ensembles, outside systems and combinations."""
        return {**self.experiments, **self.ensembles, **self.external, **self.combinations}

    @property
    def decoded(self) -> dict:
        """The systems beam search translates with: the experiments and the ensembles."""
        return {**self.experiments, **self.ensembles}

    def corpus_of(self, system: str) -> Corpus:
        return self.corpora[self.systems[system].corpus]

    def decoding_of(self, system: str) -> dict:
        """The decoding settings of a system: the shared ones plus its own overrides."""
        return {**self.decoding, **self.systems[system].decoding}

    def model_spec(self, experiment: str) -> dict:
        """The encoder, decoder and options of an experiment: its preset plus its own overrides."""
        exp = self.experiments[experiment]
        return {**self.models[exp.model].spec, **exp.options}

    def scores_of(self, system: str) -> list[tuple[str, str]]:
        """(test set, metric) pairs a system is scored on: what its tables read, and sacreBLEU on `test`."""
        wanted = {("test", "sacrebleu")}
        for table in self.tables.values():
            for by_col in table.cells.values():
                for col, name in by_col.items():
                    if name == system:
                        wanted.update((table.test_sets[col], metric) for metric in table.metrics())
        return sorted(wanted)

    def members(self, system: str) -> list[str]:
        """The trained experiments behind a system: itself, an ensemble's members, none for an outside system, and
        for a combination those of the systems it reads (in order, each once)."""
        if system in self.combinations:
            found = [m for s in self.combinations[system].systems() for m in self.members(s)]
            return list(dict.fromkeys(found))
        if system in self.external:
            return []
        return list(self.ensembles[system].members) if system in self.ensembles else [system]

    def seed_of(self, experiment: str) -> int:
        """The initialisation seed of an experiment: its own, else params.yaml's."""
        seed = self.experiments[experiment].seed
        return self.seed if seed is None else seed

    @property
    def root(self) -> str:
        """Artifacts of this scale live here, so tiny and paper runs never mix."""
        return f"{self.artifacts}/{self.scale}"


class _Reader:
    """Walks raw YAML of one file, resolving per-scale values and naming the file and key in errors."""

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

    def scaled(self, value: Any, key: str) -> tuple[Any, str]:
        """`{tiny:, paper:}` resolved for the active scale (other values unchanged), and the key it sits at."""
        if isinstance(value, dict) and set(value) & set(SCALES):
            self.keys(value, key, SCALES, required=SCALES)
            return value[self.scale], f"{key}.{self.scale}"
        return value, key

    def value(self, value: Any, key: str, kind: type):
        """Resolve `{tiny:, paper:}` and check the type (int accepted where float is expected)."""
        if kind is not dict:
            value, key = self.scaled(value, key)
        ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value, ok = float(value), True
        if not ok:
            self.fail(key, f"expected {kind.__name__}, got {type(value).__name__} {value!r}")
        return value

    def resolved(self, value: Any, key: str) -> Any:
        """A whole subtree with every `{tiny:, paper:}` resolved (types are checked by whoever reads it)."""
        value, key = self.scaled(value, key)
        if isinstance(value, dict):
            return {k: self.resolved(v, f"{key}.{k}") for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolved(v, f"{key}[{i}]") for i, v in enumerate(value)]
        return value

    def flat(self, raw: Any, key: str, schema: dict) -> dict:
        raw = self.mapping(raw, key)
        self.keys(raw, key, schema)
        return {name: self.value(value, f"{key}.{name}", schema[name]) for name, value in raw.items()}

    def name_ref(self, value: Any, key: str, known: dict, what: str) -> str:
        value = self.value(value, key, str)
        if value not in known:
            close = difflib.get_close_matches(value, list(known), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            self.fail(key, f"unknown {what} '{value}'{hint}; defined: {', '.join(sorted(known)) or 'none'}")
        return value


# ------------------------------------------------------------------------------------------------- loading
def _read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PipelineError(f"{path}: no such params file") from None
    except yaml.YAMLError as err:
        raise PipelineError(f"{path}: not valid YAML: {err}") from None


def read_paper_files(root: str | Path = ".") -> dict[str, tuple[str, Any]]:
    """paper -> (its file as DVC names it, params/<paper>.yaml, and its raw mapping), for every file in
    <root>/params/ (sorted by name)."""
    files = sorted((Path(root) / PAPERS_DIR).glob("*.yaml"))
    return {path.stem: (f"{PAPERS_DIR}/{path.name}", _read_yaml(path)) for path in files}


def load_params(path: str | Path = "params.yaml", scale: str | None = None) -> Params:
    """Read and validate params.yaml and the paper files in params/ beside it."""
    path = Path(path)
    return parse_params(_read_yaml(path), source=str(path), scale=scale, papers=read_paper_files(path.parent))


def parse_params(raw: Any, source: str = "params.yaml", scale: str | None = None,
                 papers: dict[str, tuple[str, Any]] | None = None) -> Params:
    """Validate params.yaml's mapping (e.g. Snakemake's `config`) and the papers' (paper -> (file, mapping))."""
    if not isinstance(raw, dict):
        raise PipelineError(f"{source}: expected a mapping at the top level")
    scale = scale or raw.get("scale", "tiny")
    if scale not in SCALES:
        raise PipelineError(f"{source}: scale: expected one of {', '.join(SCALES)}, got {scale!r}")
    r = _Reader(source, scale)
    r.keys(raw, "", SHARED_KEYS)
    paths = r.mapping(raw.get("paths", {}), "paths")
    r.keys(paths, "paths", ("artifacts", "downloads", "manual"))
    manual = r.mapping(paths.get("manual") or {}, "paths.manual")
    decoding = r.flat(raw.get("decoding", {}), "decoding", DECODING_KEYS)
    _check_decoding(r, decoding, "decoding")
    significance = {"test": "paired_bootstrap", "n_samples": 1000, "seed": 12345,
                    **r.flat(raw.get("significance", {}), "significance", SIGNIFICANCE_KEYS)}
    _check_test(r, significance["test"], "significance.test")

    from pipeline.recipe import PRECISIONS  # torch-free
    precision = r.value(raw.get("precision", "auto"), "precision", str)
    if precision not in PRECISIONS:
        r.fail("precision", f"expected one of {', '.join(PRECISIONS)}, got {precision!r}")
    house = _House(scale, significance, precision)
    for paper, (path, data) in (papers or {}).items():
        house.read(paper, path, data)
    house.resolve()
    return Params(
        scale=scale, seed=r.value(raw.get("seed", 1), "seed", int),
        artifacts=r.value(paths.get("artifacts", "artifacts"), "paths.artifacts", str),
        downloads=r.value(paths.get("downloads", "artifacts/downloads"), "paths.downloads", str),
        manual={k: r.value(v, f"paths.manual.{k}", str) for k, v in manual.items()},
        decoding=decoding, significance=significance, corpora=house.corpora, models=house.models,
        recipes=house.recipes, experiments=house.experiments, ensembles=house.ensembles, tables=house.tables,
        files={paper: path for paper, (path, _) in (papers or {}).items()}, external=house.external,
        combinations=house.combinations,
    )


class _House:
    """Collects the papers' definitions (names are global), then resolves references between them."""

    def __init__(self, scale: str, significance: dict, precision: str):
        self.scale, self.significance, self.precision = scale, significance, precision
        self.corpora: dict[str, Corpus] = {}
        self.models: dict[str, ModelPreset] = {}
        self.recipes: dict[str, Recipe] = {}
        self.experiments: dict[str, Experiment] = {}
        self.ensembles: dict[str, Ensemble] = {}
        self.external: dict[str, External] = {}
        self.combinations: dict[str, Combination] = {}
        self.tables: dict[str, Table] = {}
        self.where: dict[tuple[str, str], str] = {}  # (kind, name) -> "file: key", for duplicate errors
        self.raw_systems: list = []   # (reader, paper, key, name, spec, params_keys)
        self.raw_ensembles: list = []
        self.raw_external: list = []
        self.raw_combinations: list = []
        self.raw_tables: list = []

    def _claim(self, r: _Reader, kind: str, name: str, key: str) -> None:
        if (kind, name) in self.where:
            r.fail(key, f"the {kind} name '{name}' is already defined at {self.where[(kind, name)]}")
        self.where[(kind, name)] = f"{r.source}: {key}"

    def read(self, paper: str, path: str, raw: Any) -> None:
        r = _Reader(path, self.scale)
        raw = r.mapping(raw if raw is not None else {}, "(top level)")
        r.keys(raw, "", PAPER_KEYS)
        for name, spec in r.mapping(raw.get("corpora") or {}, "corpora").items():
            self._claim(r, "corpus", name, f"corpora.{name}")
            self.corpora[name] = _corpus(r, paper, name, spec)
        for name, spec in r.mapping(raw.get("models") or {}, "models").items():
            self._claim(r, "model preset", name, f"models.{name}")
            self.models[name] = ModelPreset(name, paper, _model_spec(r, f"models.{name}", spec))
        for name, spec in r.mapping(raw.get("recipes") or {}, "recipes").items():
            self._claim(r, "recipe", name, f"recipes.{name}")
            self.recipes[name] = _recipe(r, paper, name, spec, self.precision)
        for name, spec in r.mapping(raw.get("experiments") or {}, "experiments").items():
            self.raw_systems.append((r, paper, f"experiments.{name}", name, r.mapping(spec, f"experiments.{name}"),
                                     ((path, f"experiments.{name}"),)))
        grids = {}
        for grid, spec in r.mapping(raw.get("grids") or {}, "grids").items():
            grids[grid] = self._grid(r, paper, path, grid, spec)
        for name, spec in r.mapping(raw.get("ensembles") or {}, "ensembles").items():
            self.raw_ensembles.append((r, paper, name, spec, ((path, f"ensembles.{name}"),)))
        for group_key, todo in (("external", self.raw_external), ("combinations", self.raw_combinations)):
            for name, spec in r.mapping(raw.get(group_key) or {}, group_key).items():
                todo.append((r, paper, name, spec, ((path, f"{group_key}.{name}"),)))
        for group in ("tables", "figures"):
            for name, spec in r.mapping(raw.get(group) or {}, group).items():
                self.raw_tables.append((r, paper, group, name, spec, grids, ((path, f"{group}.{name}"),)))

    def _grid(self, r: _Reader, paper: str, path: str, grid: str, spec: Any) -> dict:
        """Expand grids.<grid>: every direction x system is the system <grid>-<direction>-<system>."""
        key = f"grids.{grid}"
        spec = r.mapping(spec, key)
        r.keys(spec, key, ("directions", "systems"), required=("directions", "systems"))
        directions = r.mapping(spec["directions"], f"{key}.directions")
        systems = r.mapping(spec["systems"], f"{key}.systems")
        cells = {}
        for system, by_system in systems.items():
            by_system = r.mapping(by_system, f"{key}.systems.{system}")
            for direction, by_direction in directions.items():
                by_direction = r.mapping(by_direction, f"{key}.directions.{direction}")
                merged = {**by_direction, **by_system}
                for part in ("options", "decoding"):
                    merged[part] = {**(by_direction.get(part) or {}), **(by_system.get(part) or {})}
                name = f"{grid}-{direction}-{system}"
                self.raw_systems.append((r, paper, f"{key} ({direction} x {system})", name, merged,
                                         ((path, f"{key}.directions.{direction}"), (path, f"{key}.systems.{system}"))))
                cells.setdefault(system, {})[direction] = name
        return cells

    def resolve(self) -> None:
        for r, paper, key, name, spec, keys in self.raw_systems:
            self._claim(r, "system", name, key)
            self.experiments[name] = self._experiment(r, paper, key, name, spec, keys)
        for name, exp in self.experiments.items():
            if exp.init is not None:
                r, key = self._origin(name)
                r.name_ref(exp.init, f"{key}.init", self.experiments, "experiment")
                if exp.init == name:
                    r.fail(f"{key}.init", "a system cannot start from itself")
        for r, paper, name, spec, keys in self.raw_ensembles:
            self._claim(r, "system", name, f"ensembles.{name}")
            self.ensembles[name] = self._ensemble(r, paper, name, spec, keys)
        for r, paper, name, spec, keys in self.raw_external:
            self._claim(r, "system", name, f"external.{name}")
            self.external[name] = self._external(r, paper, name, spec, keys)
        for r, paper, name, spec, keys in self.raw_combinations:
            self._claim(r, "system", name, f"combinations.{name}")
        self._combinations()
        for r, paper, group, name, spec, grids, keys in self.raw_tables:
            self._claim(r, "table or figure", name, f"{group}.{name}")
            self.tables[name] = self._table(r, paper, group, name, spec, grids, keys)

    def _origin(self, system: str) -> tuple[_Reader, str]:
        for r, _, key, name, _, _ in self.raw_systems:
            if name == system:
                return r, key
        raise KeyError(system)

    def _experiment(self, r, paper, key, name, spec, keys) -> Experiment:
        r.keys(spec, key, SYSTEM_KEYS, required=("corpus", "model", "recipe"))
        model = r.name_ref(spec["model"], f"{key}.model", self.models, "model preset")
        recipe = r.name_ref(spec["recipe"], f"{key}.recipe", self.recipes, "recipe")
        options = r.resolved(r.mapping(spec.get("options") or {}, f"{key}.options"), f"{key}.options")
        _check_model(r, f"{key}.options", {**self.models[model].spec, **options})
        decoding = r.flat(spec.get("decoding") or {}, f"{key}.decoding", DECODING_KEYS)
        _check_decoding(r, decoding, f"{key}.decoding")
        init = r.value(spec["init"], f"{key}.init", str) if spec.get("init") is not None else None
        seed = r.value(spec["seed"], f"{key}.seed", int) if spec.get("seed") is not None else None
        tracked = keys + ((self._file(model, "model preset"), f"models.{model}"),
                          (self._file(recipe, "recipe"), f"recipes.{recipe}"))
        return Experiment(name=name, paper=paper, model=model, recipe=recipe, init=init, options=options,
                          corpus=r.name_ref(spec["corpus"], f"{key}.corpus", self.corpora, "corpus"),
                          decoding=decoding, params_keys=tracked, seed=seed)

    def _file(self, name: str, kind: str) -> str:
        return self.where[(kind, name)].split(": ", 1)[0]

    def _ensemble(self, r, paper, name, spec, keys) -> Ensemble:
        key = f"ensembles.{name}"
        spec = r.mapping(spec, key)
        r.keys(spec, key, ("members", "decoding"), required=("members",))
        members = spec["members"]
        if not isinstance(members, list) or len(members) < 2:
            r.fail(f"{key}.members", f"expected a list of at least two experiments, got {members!r}")
        members = tuple(r.name_ref(m, f"{key}.members[{i}]", self.experiments, "experiment")
                        for i, m in enumerate(members))
        corpora = {self.experiments[m].corpus for m in members}
        if len(corpora) != 1:
            r.fail(f"{key}.members", f"expected members trained on one corpus, got {', '.join(sorted(corpora))}")
        decoding = r.flat(spec.get("decoding") or {}, f"{key}.decoding", DECODING_KEYS)
        _check_decoding(r, decoding, f"{key}.decoding")
        return Ensemble(name=name, paper=paper, members=members, corpus=corpora.pop(), decoding=decoding,
                        params_keys=keys)

    def _external(self, r, paper, name, spec, keys) -> External:
        key = f"external.{name}"
        spec = r.mapping(spec, key)
        r.keys(spec, key, ("corpus", "manual", "description"), required=("corpus", "manual", "description"))
        return External(name=name, paper=paper, corpus=r.name_ref(spec["corpus"], f"{key}.corpus", self.corpora, "corpus"),
                        manual=r.value(spec["manual"], f"{key}.manual", str),
                        description=r.value(spec["description"], f"{key}.description", str), params_keys=keys)

    def _combinations(self) -> None:
        """Resolve combinations in dependency order (one may read another); a cycle is an error naming it."""
        from pipeline.derived_systems import check_combination  # torch-free
        raw = {name: (r, paper, spec, keys) for r, paper, name, spec, keys in self.raw_combinations}
        known = {**{n: "experiment" for n in self.experiments}, **{n: "ensemble" for n in self.ensembles},
                 **{n: "external" for n in self.external}, **{n: "combination" for n in raw}}
        parsed, state = {}, {}

        def resolve(name: str, chain: tuple) -> None:
            if state.get(name) == "done":
                return
            r, paper, spec, keys = raw[name]
            key = f"combinations.{name}"
            if state.get(name) == "open":
                r.fail(key, f"reads itself through {' -> '.join(chain + (name,))}; expected no cycle")
            state[name] = "open"
            try:
                method, inputs, settings = check_combination(r.resolved(r.mapping(spec, key), key), known)
            except PipelineError as err:
                r.fail(key, str(err))
            for system in [s for v in inputs.values() for s in (v if isinstance(v, list) else [v])]:
                if system in raw:
                    resolve(system, chain + (name,))
            parsed[name] = Combination(name=name, paper=paper, method=method, inputs=inputs, settings=settings,
                                       corpus="", params_keys=keys)
            corpora = {self._corpus_of(s) for s in parsed[name].systems()}
            if len(corpora) != 1:
                r.fail(key, f"expected systems of one corpus, got {', '.join(sorted(corpora))}")
            parsed[name] = Combination(**{**parsed[name].__dict__, "corpus": corpora.pop()})
            self.combinations[name] = parsed[name]
            state[name] = "done"

        for name in raw:
            resolve(name, ())

    def _table(self, r, paper, group, name, spec, grids, keys) -> Table:
        key = f"{group}.{name}"
        spec = r.mapping(spec, key)
        r.keys(spec, key, ("layout", "cells", "grid", "test_sets", "values", "significance", "analyses"))
        output = name[len(paper) + 1:]
        if not name.startswith(f"{paper}-") or not output.replace("_", "").isalnum():
            r.fail(key, f"expected a name '{paper}-<file stem>' such as {paper}-table3 (it writes "
                        f"results/{paper}/<file stem>.tsv), got {name!r}")
        systems = {**self.experiments, **self.ensembles, **self.external, **self.combinations}
        if ("cells" in spec) == ("grid" in spec):
            r.fail(key, "expected exactly one of 'cells' (row -> column -> system) and 'grid' (a grid's name)")
        if "grid" in spec:
            grid = r.name_ref(spec["grid"], f"{key}.grid", grids, "grid of this paper")
            cells = grids[grid]
        else:
            cells = {}
            for row, by_col in r.mapping(spec["cells"], f"{key}.cells").items():
                by_col = r.mapping(by_col, f"{key}.cells.{row}")
                cells[str(row)] = {str(col): r.name_ref(system, f"{key}.cells.{row}.{col}", systems, "system")
                                   for col, system in by_col.items()}
        columns = sorted({col for row in cells.values() for col in row})
        test_sets = self._test_sets(r, f"{key}.test_sets", spec.get("test_sets", "test"), cells, columns)
        values = {k: _value_source(r, f"{key}.values.{k}", v)
                  for k, v in r.mapping(spec.get("values") or {}, f"{key}.values").items()}
        significance = None
        if "significance" in spec:
            significance = self._significance(r, f"{key}.significance", spec["significance"], cells, values)
        analyses = {}
        for kind, settings in r.mapping(spec.get("analyses") or {}, f"{key}.analyses").items():
            if kind not in ANALYSES:
                r.fail(f"{key}.analyses.{kind}", f"unknown analysis; expected one of {', '.join(ANALYSES)}")
            settings = r.resolved(r.mapping(settings or {}, f"{key}.analyses.{kind}"), f"{key}.analyses.{kind}")
            try:
                analyses[kind] = check_settings(kind, settings)
            except PipelineError as err:
                r.fail(f"{key}.analyses.{kind}", str(err))
            if "corpus" in analyses[kind]:
                r.name_ref(analyses[kind]["corpus"], f"{key}.analyses.{kind}.corpus", self.corpora, "corpus")
        if not values and not analyses:
            r.fail(key, "expected 'values' (what each cell shows) or 'analyses', or both")
        layout = r.value(spec.get("layout", name), f"{key}.layout", str)
        return Table(name=name, paper=paper, output=output, cells=cells, test_sets=test_sets, values=values,
                     significance=significance, analyses=analyses, figure=group == "figures", layout=layout,
                     params_keys=keys)

    def _test_sets(self, r, key, raw, cells, columns) -> dict:
        """column -> test set: one name for every column or a mapping; each must be a test set of the corpus."""
        raw, key = r.scaled(raw, key)
        by_col = {col: raw for col in columns} if isinstance(raw, str) else r.mapping(raw, key)
        out = {}
        for col in columns:
            if col not in by_col:
                r.fail(key, f"missing the test set of column '{col}'")
            corpora = {self._corpus_of(s) for row in cells.values() for c, s in row.items() if c == col}
            for corpus in corpora:
                if by_col[col] not in self.corpora[corpus].test_sets:
                    r.fail(f"{key}.{col}" if isinstance(raw, dict) else key,
                           f"unknown test set '{by_col[col]}' of corpus {corpus}; expected one of "
                           f"{', '.join(self.corpora[corpus].test_sets)}")
            out[col] = by_col[col]
        return out

    def _corpus_of(self, system: str) -> str:
        for kind in (self.experiments, self.ensembles, self.external, self.combinations):
            if system in kind:
                return kind[system].corpus
        raise KeyError(system)

    def _significance(self, r, key, raw, cells, values) -> Significance:
        raw = r.mapping(raw, key)
        r.keys(raw, key, ("value", "baselines") + tuple(SIGNIFICANCE_KEYS), required=("value", "baselines"))
        value = r.name_ref(raw["value"], f"{key}.value", values, "value of this table")
        if values[value].startswith("train."):
            r.fail(f"{key}.value", f"expected a value scored by a metric, got '{value}' ({values[value]})")
        baselines = {}
        for row, base in r.mapping(raw["baselines"], f"{key}.baselines").items():
            r.name_ref(row, f"{key}.baselines.{row}", cells, "table row")
            baselines[row] = r.name_ref(base, f"{key}.baselines.{row}", cells, "table row")
            missing = set(cells[row]) - set(cells[baselines[row]])
            if missing:
                r.fail(f"{key}.baselines.{row}", f"the baseline row '{base}' has no system in column(s) "
                                                 f"{', '.join(sorted(missing))}")
        settings = {**self.significance, **{k: r.value(raw[k], f"{key}.{k}", t)
                                            for k, t in SIGNIFICANCE_KEYS.items() if k in raw}}
        _check_test(r, settings["test"], f"{key}.test")
        return Significance(value=value, baselines=baselines, **settings)


# ------------------------------------------------------------------------------------------ field checks
def _corpus(r: _Reader, paper: str, name: str, spec: Any) -> Corpus:
    key = f"corpora.{name}"
    spec = r.mapping(spec, key)
    r.keys(spec, key, CORPUS_KEYS, required=("src", "tgt", "source", "max_len", "bpe_merges", "joint_bpe"))
    values = {k: r.value(v, f"{key}.{k}", CORPUS_KEYS[k]) for k, v in spec.items()}
    from pipeline.data.registry import CORPORA  # torch-free; the registry of downloadable corpora
    r.name_ref(values["source"], f"{key}.source", CORPORA, "registry corpus")
    if values.get("joint_vocab") and not values["joint_bpe"]:
        r.fail(f"{key}.joint_vocab", "expected joint_bpe: true as well (one vocabulary needs one subword model)")
    if "test_sets" in values:
        sets = values["test_sets"]
        if not sets or not all(isinstance(s, str) and s.startswith("test") for s in sets):
            r.fail(f"{key}.test_sets", f"expected a non-empty list of split names starting with 'test' (test, "
                                       f"test-nt15, ...), got {sets!r}")
        values["test_sets"] = tuple(sets)
    if "bpe_sides" in values:
        values["bpe_sides"] = _bpe_sides(r, f"{key}.bpe_sides", values["bpe_sides"], values["joint_bpe"])
    if values["bpe_merges"] < (1 if values.get("bpe_sides", SIDES) else 0):
        r.fail(f"{key}.bpe_merges", f"expected an integer >= 1 (BPE merges; 0 only with bpe_sides: []), got "
                                    f"{values['bpe_merges']!r}")
    if values.get("vocab_size", 0) < 0:
        r.fail(f"{key}.vocab_size", f"expected an integer >= 0 (the most frequent types kept; 0: every type), "
                                    f"got {values['vocab_size']!r}")
    return Corpus(name=name, paper=paper, **values)


def _bpe_sides(r: _Reader, key: str, sides: list, joint_bpe: bool) -> tuple:
    """The sides BPE segments, in (src, tgt) order: distinct names from SIDES; joint BPE needs both."""
    if not all(isinstance(s, str) and s in SIDES for s in sides) or len(set(sides)) != len(sides):
        r.fail(key, f"expected a list of distinct sides out of {', '.join(SIDES)} (those BPE segments; [] for none), "
                    f"got {sides!r}")
    if joint_bpe and set(sides) != set(SIDES):
        r.fail(key, f"joint_bpe: true learns one BPE model on both sides; expected bpe_sides [src, tgt], got {sides!r} "
                    f"(or set joint_bpe: false)")
    return tuple(s for s in SIDES if s in sides)


def _model_spec(r: _Reader, key: str, spec: Any) -> dict:
    """A preset's encoder, decoder and options for the active scale, checked by the models' option classes."""
    spec = r.resolved(r.mapping(spec, key), key)
    for part in ("encoder", "decoder"):
        if part not in spec:
            r.fail(f"{key}.{part}", "missing required key (the model's encoder and decoder, e.g. transformer)")
    _check_model(r, key, spec)
    return spec


def _check_model(r: _Reader, key: str, spec: dict) -> None:
    """Option names and types come from the encoder's, decoder's and model's typed option classes."""
    from pipeline.models.options import validate_model  # torch-free
    try:
        validate_model(spec)
    except PipelineError as err:
        r.fail(key, str(err))


def _recipe(r: _Reader, paper: str, name: str, spec: Any, precision: str) -> Recipe:
    """A paper's recipe; its precision defaults to params.yaml's `precision`."""
    from pipeline.recipe import Recipe as TrainRecipe  # torch-free: the one recipe schema
    key = f"recipes.{name}"
    spec = dict(r.mapping(spec, key))
    resources = r.flat(spec.pop("resources", {}), f"{key}.resources", RESOURCE_KEYS)
    train = {"precision": precision, **r.resolved(spec, key)}
    TrainRecipe.from_dict(train, where=f"{r.source}: {key}")
    defaults = {"gpu": 0, "runtime": 60, "mem_mb": 4000, "cpus": 1}
    return Recipe(name=name, paper=paper, train=train, resources=Resources(**{**defaults, **resources}))


def _check_decoding(r: _Reader, decoding: dict, key: str) -> None:
    if "length" in decoding and decoding["length"] not in LENGTH_MODES:
        r.fail(f"{key}.length", f"expected one of {', '.join(LENGTH_MODES)}, got {decoding['length']!r}")
    for name in ("beam", "batch_size", "nbest"):
        if name in decoding and decoding[name] < 1:
            r.fail(f"{key}.{name}", f"expected an integer >= 1, got {decoding[name]!r}")


def _check_test(r: _Reader, test: str, key: str) -> None:
    from pipeline.evaluate.significance import TESTS
    if test not in TESTS:
        r.fail(key, f"unknown significance test '{test}'; expected one of {', '.join(TESTS)}")


def _value_source(r: _Reader, key: str, source: Any) -> str:
    """'train.<field>' (the run summary) or '<metric>' / '<metric>.<field>' (a score file)."""
    source = r.value(source, key, str)
    head, _, tail = source.partition(".")
    if head == "train":
        if tail not in TRAIN_FIELDS:
            r.fail(key, f"unknown run summary field '{tail}'; expected one of {', '.join(TRAIN_FIELDS)}")
        return source
    from pipeline.evaluate.metrics import METRICS
    if head not in METRICS:
        r.fail(key, f"unknown value source '{source}'; expected train.<field> or a metric "
                    f"({', '.join(METRICS)}), optionally .<field>")
    return source
