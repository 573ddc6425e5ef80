"""The typed settings params.yaml and the papers' files resolve into, and the keys each file may hold."""
from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.errors import PipelineError
from pipeline.scales import SCALES, WRITTEN_SCALES  # noqa: F401 (re-exported: tiny | smoke | paper, and those written)

PAPERS_DIR = "params"  # params/<paper>.yaml, beside params.yaml
SHARED_KEYS = ("scale", "seed", "precision", "cpu_math", "max_job_minutes", "gpu_model", "smoke_gpus", "paths",
               "decoding", "significance")
PAPER_KEYS = ("corpora", "models", "recipes", "experiments", "grids", "ensembles", "external", "combinations", "tables",
              "figures")
RESOURCE_KEYS = {"gpu": int, "runtime": int, "mem_mb": int, "cpus": int}
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
class RecipeResources:
    """What a training job asks the cluster for."""
    gpu: int
    runtime: int  # minutes of a run without GPUs; one with GPUs takes its cost estimate's (Params.train_minutes)
    mem_mb: int
    cpus: int


@dataclass(frozen=True)
class RecipeSpec:
    """Training settings (pipeline.recipe.Recipe fields) and job resources."""
    name: str
    paper: str
    train: dict
    resources: RecipeResources


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
class EnsembleSpec:
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
class TableSpec:
    """A table or figure: which system fills which cell, what each cell shows, and what its layout needs."""
    name: str
    paper: str
    output: str                  # results/<scale>/<paper>/<output>.tsv (+ .md / .png): the name is <paper>-<output>
    scale: str                   # the scale it is built at, its path's first folder: tiny and paper never mix
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
        return f"results/{self.scale}/{self.paper}/{self.output}.tsv"

    @property
    def rendering(self) -> str:
        """The .md of a table or the .png of a figure."""
        return f"results/{self.scale}/{self.paper}/{self.output}.{'png' if self.figure else 'md'}"

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

    def column(self, column: str) -> dict:
        """row -> system of one column, in row order."""
        return {row: by_col[column] for row, by_col in self.cells.items() if column in by_col}

    def position(self, system: str) -> tuple[str, str]:
        """The (row, column) of a system's cell; a system with a baseline first (it is the one tested)."""
        found = [(row, col) for row, by_col in self.cells.items() for col, name in by_col.items() if name == system]
        if not found:
            raise PipelineError(f"{system} is not in table {self.name}")
        return next(((r, c) for r, c in found if self.baseline(r, c)), found[0])

    def tested_at(self, system: str, split: str) -> tuple[str, str]:
        """The (row, column) where `system` is tested against a baseline on test set `split` (a system may fill
        several columns)."""
        found = [(row, col) for row, by_col in self.cells.items() for col, name in by_col.items()
                 if name == system and self.test_sets[col] == split and self.baseline(row, col)]
        if not found:
            raise PipelineError(f"{system} is not tested on {split} in table {self.name}")
        return found[0]

    def test_set_of(self, system: str) -> str:
        """The test set of the column where a system is tested (see position)."""
        return self.test_sets[self.position(system)[1]]

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
    recipes: dict[str, RecipeSpec]
    experiments: dict[str, Experiment]
    ensembles: dict[str, EnsembleSpec] = field(default_factory=dict)
    tables: dict[str, TableSpec] = field(default_factory=dict)
    files: dict = field(default_factory=dict)  # paper -> its params file
    external: dict[str, External] = field(default_factory=dict)
    combinations: dict[str, Combination] = field(default_factory=dict)
    cpu_math: str = "native"  # pipeline.cpu_math: portable | portable-fixed (the same bits on any x86-64 CPU) | native
    max_job_minutes: int = 2880  # the longest time limit a job asks for; a longer training run takes several jobs
    gpu_model: str = "H200"      # the GPU the time limits of runs with GPUs assume (pipeline/cost.py)

    def train_minutes(self, experiment: str) -> int:
        """A training run's whole time limit: its recipe's runtime on the CPU or below paper scale; with GPUs at paper
        scale, MARGIN x its cost estimate on gpu_model (pipeline/cost.py run_minutes)."""
        resources = self.recipes[self.experiments[experiment].recipe].resources
        if not resources.gpu or self.scale != "paper":   # the estimate is of the papers' sizes (smoke: SMOKE_MINUTES)
            return resources.runtime
        from pipeline.cost import run_minutes
        return run_minutes(self, experiment)

    def train_slices(self, experiment: str) -> int:
        """The jobs (time slices) a training run takes: its minutes over max_job_minutes, rounded up; each resumes
        from the previous one's last checkpoint."""
        return -(-self.train_minutes(experiment) // self.max_job_minutes)

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
