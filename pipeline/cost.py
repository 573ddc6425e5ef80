"""What a build costs: GPU-hours of its training runs and model-step jobs, estimated from step times measured on an
H200 (benchmarks/results/gpu_step_times.json) and scaled to another GPU model by the file's stated factors, and the
time limit each training run takes from its estimate (the train rule's, at a scale with GPUs).

A training run takes its updates x the time of one update on each of its G GPUs (the layout: each holds the batch /
G), from the nearest measured model family (the same encoder and decoder where one is measured, else the same kind of
decoder, then the nearest parameter count), scaled by the parameter counts (6·N·T: time grows with N), the file's
overhead (validation, checkpoints, all-reduce) and the GPU model's time factor; its GPU-hours are that wall time x G.
An update's time: the whole batch's target tokens over the measured target tokens per second (bound by arithmetic);
at 4,096 tokens a rank the measured (or, for a family without one, Base's ratio of) per-rank update time (bound by
kernel launches); linear between (our assumption). A family without a rank figure (the RNNs, on one GPU) scales
linearly with the tokens a GPU holds. A model-step job (decoding, rescoring, an analysis that runs a model) costs the
file's stated hours x the time factor.
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping

from pipeline.errors import PipelineError
from pipeline.fileio import atomic_open

MEASUREMENTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "gpu_step_times.json"
TRANSFORMER_DECODERS = ("transformer", "recurrence")  # the rest are recurrent decoders
COUNTS_FILE = "parameters.json"   # under artifacts/<scale>/: the models' parameter counts (a cache)
MARGIN = 2.0     # a run's time limit covers twice its estimate (our choice: the measurement is short and synthetic)
# epoch-based recipes need their corpus's size: ASPEC-JE's three training files (Nakazawa et al. 2016), before the
# length filter (an upper bound: shu2016 does not say how many pairs are left)
EPOCH_PAIRS = {"aspec-en-ja": 3_008_500}
MODEL_STEP_KINDS = {"translate": "decode", "nbest_decode": "decode", "rerank": "decode",
                    "analysis_speed": "speed"}  # the other GPU jobs: "analysis"


@dataclass(frozen=True)
class Measurements:
    """The step times a cost is estimated from (the JSON file's fields)."""
    gpu: str
    families: dict        # name -> {"experiment", "target_tokens_per_s", maybe "rank": {"tokens", "updates_per_s"}}
    token_batch_fill: float
    target_tokens_per_sentence: float
    job_hours: dict       # decode | analysis | speed -> hours of one job
    whole_batch_tokens: int = 32768   # the Transformer families' measured whole batch (tokens)
    overhead: float = 1.0             # every run's time x this: validation, checkpoints, all-reduce
    gpu_models: dict = field(default_factory=lambda: {"H200": {"time_factor": 1.0}})   # name -> its time factor


@functools.lru_cache(maxsize=None)
def load_measurements(path: Path | str = MEASUREMENTS) -> Measurements:
    """The JSON file's step times (read once a process)."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise PipelineError(f"{path}: not a readable JSON file of step times ({err})") from None
    try:
        return Measurements(raw["gpu"], raw["families"], float(raw["token_batch_fill"]),
                            float(raw["target_tokens_per_sentence"]), dict(raw["job_hours"]),
                            int(raw["whole_batch_tokens"]), float(raw["overhead"]), dict(raw["gpu_models"]))
    except (KeyError, TypeError, ValueError) as err:
        raise PipelineError(f"{path}: expected gpu, families, token_batch_fill, target_tokens_per_sentence, "
                            f"job_hours, whole_batch_tokens, overhead and gpu_models "
                            f"({type(err).__name__}: {err})") from None


def gpu_models(path: Path | str = MEASUREMENTS) -> tuple[str, ...]:
    """The GPU models a cost can be estimated for: the measured one and those scaled from it."""
    return tuple(load_measurements(path).gpu_models)


def approximate_parameters(params, experiment: str, vocab: int | None = None) -> int:
    """An experiment's parameter count with vocabularies of `vocab` tokens (default: the corpus's cap, else its BPE
    merges: our approximation before a vocabulary is built); counted on the meta device, so no memory is used, and
    kept in artifacts/<scale>/parameters.json by model spec, vocabulary and the models' code: the Snakefile sizes
    every run's time limit from its count when it is read (about 0.1 s a model to count)."""
    corpus = params.corpora[params.experiments[experiment].corpus]
    vocab = vocab or corpus.vocab_size or corpus.bpe_merges
    spec = params.model_spec(experiment)
    key = hashlib.sha256(json.dumps([spec, vocab, _models_code()], sort_keys=True).encode()).hexdigest()[:20]
    path = Path(params.root) / COUNTS_FILE
    counts = _counts(path)
    if key not in counts:
        import torch

        from pipeline.models.registry import build_model, count_parameters
        with torch.device("meta"):
            counts[key] = count_parameters(build_model(spec, vocab, vocab))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_open(path) as out:
                json.dump(counts, out, sort_keys=True)
        except OSError:
            pass   # a cache: counted again by the next process
    return counts[key]


@functools.lru_cache(maxsize=None)
def _counts(path: Path) -> dict:
    """The parameter counts an earlier process kept in `path` ({} if none or unreadable)."""
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return {}


@functools.lru_cache(maxsize=None)
def _models_code() -> str:
    """A digest of the models' code (pipeline/models): an edit counts every model again."""
    digest = hashlib.sha256()
    for path in sorted((Path(__file__).resolve().parent / "models").rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class RunCost:
    """One training run's estimate."""
    experiment: str
    family: str
    updates: int
    target_tokens: float
    gpu_hours: float
    gpus: int
    cpus: int
    per_rank: str           # the layout: what each GPU holds an update, e.g. "4,096 tokens"
    asked_minutes: int = 0  # what its planned jobs ask: the train rule's runtime x its slices

    @property
    def wall_hours(self) -> float:
        return self.gpu_hours / max(self.gpus, 1)

    @property
    def needed_minutes(self) -> int:
        """The time limit the estimate asks for: MARGIN x its wall time, at least an hour."""
        return max(60, math.ceil(self.wall_hours * MARGIN * 60))


def _kind(spec: dict) -> str:
    return "transformer" if spec["decoder"] in TRANSFORMER_DECODERS else "rnn"


class Estimator:
    """Training and model-step costs of one params (one scale) on one GPU model (default: params' gpu_model)."""

    def __init__(self, params, measurements: Measurements, gpu: str | None = None):
        self.params, self.gpu = params, gpu or params.gpu_model
        # the families measured on an experiment of these params (a workspace may hold only some papers' files)
        families = {n: f for n, f in measurements.families.items() if f["experiment"] in params.experiments}
        if not families:
            measured = ", ".join(f["experiment"] for f in measurements.families.values())
            raise PipelineError(f"step times measured on {measured}, none of which the params files define")
        self.m = replace(measurements, families=families)
        if self.gpu not in measurements.gpu_models:
            raise PipelineError(f"gpu_model: expected one of {', '.join(measurements.gpu_models)} (the GPU models "
                                f"of the step times), got {self.gpu!r}")
        self.time_factor = float(measurements.gpu_models[self.gpu]["time_factor"])

    def n_params(self, experiment: str) -> int:
        return approximate_parameters(self.params, experiment)

    def family(self, experiment: str) -> str:
        """The measured family nearest to an experiment's model (see the module docstring)."""
        spec = self.params.model_spec(experiment)
        families = {name: self.params.model_spec(f["experiment"]) for name, f in self.m.families.items()}
        same = [n for n, s in families.items() if (s["encoder"], s["decoder"]) == (spec["encoder"], spec["decoder"])]
        candidates = same or [n for n, s in families.items() if _kind(s) == _kind(spec)]
        if not candidates:
            raise PipelineError(f"{experiment}: no measured model family with a {_kind(spec)} decoder")
        n = self.n_params(experiment)
        return min(candidates, key=lambda name: abs(math.log(self.n_params(self.m.families[name]["experiment"]) / n)))

    def updates(self, experiment: str) -> int:
        exp = self.params.experiments[experiment]
        train = self.params.recipes[exp.recipe].train
        if train.get("max_steps"):
            return int(train["max_steps"])
        source = self.params.corpora[exp.corpus].source
        if source not in EPOCH_PAIRS:
            raise PipelineError(f"{experiment}: its recipe counts epochs, and the size of corpus {source} is not "
                                f"known (pipeline/cost.py EPOCH_PAIRS)")
        per_update = train["batch_size"] if train.get("batch_unit") == "sentences" else \
            train["batch_size"] / self.m.target_tokens_per_sentence
        return math.ceil(int(train["max_epochs"]) * EPOCH_PAIRS[source] / per_update)

    def _whole_seconds(self, family: dict) -> float:
        """A Transformer family's measured update of the whole batch, in seconds on real pairs."""
        return self.m.whole_batch_tokens * self.m.token_batch_fill / family["target_tokens_per_s"]

    def rank_update(self, family: str) -> tuple[int, float] | None:
        """(tokens a rank, seconds of its update) of a Transformer family: measured, else the whole batch's time x
        the longest measured ratio (our assumption); None for the RNN families or without a rank figure."""
        measured = [f for f in self.m.families.values() if "rank" in f]
        f = self.m.families[family]
        if "rank" in f:
            return int(f["rank"]["tokens"]), 1 / float(f["rank"]["updates_per_s"])
        if not measured or _kind(self.params.model_spec(f["experiment"])) != "transformer":
            return None
        ratio = max(1 / float(g["rank"]["updates_per_s"]) / self._whole_seconds(g) for g in measured)
        return int(measured[0]["rank"]["tokens"]), ratio * self._whole_seconds(f)

    def update_seconds(self, experiment: str) -> tuple[float, str]:
        """Seconds of one update on each of the run's GPUs (on this GPU model), and what each GPU holds."""
        recipe = self.params.recipes[self.params.experiments[experiment].recipe]
        sentences = recipe.train.get("batch_unit") == "sentences"
        per_rank = recipe.train["batch_size"] / max(recipe.resources.gpu, 1)
        fill = self.m.target_tokens_per_sentence if sentences else self.m.token_batch_fill
        name = self.family(experiment)
        family = self.m.families[name]
        seconds = per_rank * fill / family["target_tokens_per_s"]   # bound by arithmetic: linear in the tokens
        rank = None if sentences else self.rank_update(name)
        if rank and per_rank < self.m.whole_batch_tokens:   # launch-bound: linear between the two layouts
            (low, at_low), high = rank, self.m.whole_batch_tokens
            seconds = at_low + (self._whole_seconds(family) - at_low) * max(per_rank - low, 0) / (high - low)
        scale = self.n_params(experiment) / self.n_params(family["experiment"]) * self.m.overhead * self.time_factor
        return seconds * scale, f"{per_rank:,.0f} {'sentences' if sentences else 'tokens'}"

    def run(self, experiment: str) -> RunCost:
        recipe = self.params.recipes[self.params.experiments[experiment].recipe]
        fill = self.m.target_tokens_per_sentence if recipe.train.get("batch_unit") == "sentences" else \
            self.m.token_batch_fill
        seconds, per_rank = self.update_seconds(experiment)
        updates = self.updates(experiment)
        gpus = recipe.resources.gpu
        return RunCost(experiment, self.family(experiment), updates, updates * recipe.train["batch_size"] * fill,
                       updates * seconds * max(gpus, 1) / 3600, gpus, recipe.resources.cpus, per_rank)

    def step_hours(self, rule: str) -> float:
        """GPU-hours of one model-step job of `rule`."""
        return float(self.m.job_hours[MODEL_STEP_KINDS.get(rule, "analysis")]) * self.time_factor


def run_minutes(params, experiment: str) -> int:
    """A training run's whole time limit with GPUs: MARGIN x its estimate on params.gpu_model, at least an hour."""
    return Estimator(params, load_measurements()).run(experiment).needed_minutes


HEADER = ("paper", "runs", "train GPU-h", "GPU jobs", "jobs GPU-h", "total GPU-h", "CPU-h", "CPU jobs", "asked GPU-h")
_OWNERS = (("exp", "experiments"), ("system", "systems"), ("combo", "combinations"), ("table", "tables"),
           ("corpus", "corpora"))


def paper_of(params, job) -> str:
    """The paper a planned job (pipeline.dry_run.PlannedJob) belongs to, from its wildcards."""
    if "paper" in job.wildcards:
        return job.wildcards["paper"]
    for wildcard, kind in _OWNERS:
        if wildcard in job.wildcards:
            return getattr(params, kind)[job.wildcards[wildcard]].paper
    raise PipelineError(f"rule {job.rule} (wildcards {job.wildcards}): no wildcard names its paper")


def costs_by_paper(estimator: Estimator, jobs: list,
                   threads: Mapping[str, int]) -> tuple[list[tuple], list[RunCost]]:
    """(rows of HEADER per paper and, for several, "all"; every training run's estimate) of a dry run's jobs;
    `threads`: the cores a job of each rule takes at this scale (its step's resources, pipeline/steps)."""
    by_paper: dict[str, list] = {}
    for job in jobs:
        by_paper.setdefault(paper_of(estimator.params, job), []).append(job)
    rows, all_runs = [], []
    for paper, mine in sorted(by_paper.items()):
        runs = [replace(estimator.run(job.wildcards["exp"]), asked_minutes=int(job.resources.get("runtime", 0))
                        * estimator.params.train_slices(job.wildcards["exp"])) for job in mine if job.rule == "train"]
        gpu_jobs = [job for job in mine if job.rule != "train" and job.gpus > 0]
        train_hours = sum(r.gpu_hours for r in runs)
        jobs_hours = sum(estimator.step_hours(job.rule) for job in gpu_jobs)
        cpu_hours = sum(r.cpus * r.wall_hours for r in runs) + sum(
            threads[job.rule] * estimator.step_hours(job.rule) for job in gpu_jobs)
        asked = sum(r.gpus * r.asked_minutes for r in runs) / 60 + sum(job.gpu_hours_asked for job in gpu_jobs)
        rows.append((paper, len(runs), train_hours, len(gpu_jobs), jobs_hours, train_hours + jobs_hours, cpu_hours,
                     len(mine) - len(runs) - len(gpu_jobs), asked))
        all_runs += runs
    if len(rows) > 1:
        rows.append(("all", *(sum(row[i] for row in rows) for i in range(1, len(HEADER)))))
    return rows, all_runs
