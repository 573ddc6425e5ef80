"""What a build costs: GPU-hours of its training runs and model-step jobs, estimated from step times measured on a
GPU (benchmarks/results/gpu_step_times.json names the GPU), and whether each run's time limit covers its estimate.

A training run's GPU-hours are its target tokens (updates x target tokens per update) over the measured target
tokens per second of the nearest measured model family (the same encoder and decoder where one is measured, else the
same kind of decoder, then the nearest parameter count), scaled by the parameter counts (6·N·T: time per token grows
with N). With G GPUs a run takes its GPU-hours / G of wall time (our assumption: data parallelism scales
linearly). A model-step job (decoding, rescoring, an analysis that runs a model) costs the file's stated hours.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import PipelineError

MEASUREMENTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "gpu_step_times.json"
TRANSFORMER_DECODERS = ("transformer", "recurrence")  # the rest are recurrent decoders
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
    families: dict        # name -> {"experiment": measured on, "target_tokens_per_s": ...}
    token_batch_fill: float
    target_tokens_per_sentence: float
    job_hours: dict       # decode | analysis | speed -> hours of one job


def load_measurements(path: Path | str = MEASUREMENTS) -> Measurements:
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise PipelineError(f"{path}: not a readable JSON file of step times ({err})") from None
    try:
        return Measurements(raw["gpu"], raw["families"], float(raw["token_batch_fill"]),
                            float(raw["target_tokens_per_sentence"]), dict(raw["job_hours"]))
    except (KeyError, TypeError, ValueError) as err:
        raise PipelineError(f"{path}: expected gpu, families, token_batch_fill, target_tokens_per_sentence and "
                            f"job_hours ({type(err).__name__}: {err})") from None


def approximate_parameters(params, experiment: str, vocab: int | None = None) -> int:
    """An experiment's parameter count with vocabularies of `vocab` tokens (default: the corpus's cap, else its BPE
    merges: our approximation before a vocabulary is built); counted on the meta device, so no memory is used."""
    import torch

    from pipeline.models.registry import build_model, count_parameters
    corpus = params.corpora[params.experiments[experiment].corpus]
    vocab = vocab or corpus.vocab_size or corpus.bpe_merges
    with torch.device("meta"):
        return count_parameters(build_model(params.model_spec(experiment), vocab, vocab))


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
    limit_minutes: int    # the recipe's runtime: the whole run's time limit, over its slices

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
    """Training and model-step costs of one params (one scale) from one measurement file."""

    def __init__(self, params, measurements: Measurements):
        self.params, self.m = params, measurements
        missing = [f["experiment"] for f in measurements.families.values() if f["experiment"] not in params.experiments]
        if missing:
            raise PipelineError(f"step times measured on {', '.join(missing)}, which the params files do not define")
        self._n = {}

    def n_params(self, experiment: str) -> int:
        if experiment not in self._n:
            self._n[experiment] = approximate_parameters(self.params, experiment)
        return self._n[experiment]

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

    def run(self, experiment: str) -> RunCost:
        exp = self.params.experiments[experiment]
        recipe = self.params.recipes[exp.recipe]
        batch = recipe.train["batch_size"]
        tokens_per_update = batch * (self.m.target_tokens_per_sentence if recipe.train.get("batch_unit") == "sentences"
                                     else self.m.token_batch_fill)
        family = self.family(experiment)
        measured = self.m.families[family]
        rate = measured["target_tokens_per_s"] * self.n_params(measured["experiment"]) / self.n_params(experiment)
        updates = self.updates(experiment)
        tokens = updates * tokens_per_update
        return RunCost(experiment, family, updates, tokens, tokens / rate / 3600, recipe.resources.gpu,
                       recipe.resources.cpus, recipe.resources.runtime)

    def step_hours(self, rule: str) -> float:
        """GPU-hours of one model-step job of `rule`."""
        return float(self.m.job_hours[MODEL_STEP_KINDS.get(rule, "analysis")])


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


def costs_by_paper(estimator: Estimator, jobs: list) -> tuple[list[tuple], list[RunCost]]:
    """(rows of HEADER per paper and, for several, "all"; every training run's estimate) of a dry run's jobs."""
    from pipeline.steps import load_steps
    scale = estimator.params.scale
    threads = {rule: step.resources[scale].threads for step in load_steps().values() for rule in step.rules}
    by_paper: dict[str, list] = {}
    for job in jobs:
        by_paper.setdefault(paper_of(estimator.params, job), []).append(job)
    rows, all_runs = [], []
    for paper, mine in sorted(by_paper.items()):
        runs = [estimator.run(job.wildcards["exp"]) for job in mine if job.rule == "train"]
        gpu_jobs = [job for job in mine if job.rule != "train" and int(job.resources.get("gpu", 0)) > 0]
        train_hours = sum(r.gpu_hours for r in runs)
        jobs_hours = sum(estimator.step_hours(job.rule) for job in gpu_jobs)
        cpu_hours = sum(r.cpus * r.wall_hours for r in runs) + sum(
            threads[job.rule] * estimator.step_hours(job.rule) for job in gpu_jobs)
        asked = (sum(r.gpus * r.limit_minutes for r in runs)
                 + sum(int(job.resources["gpu"]) * int(job.resources["runtime"]) for job in gpu_jobs)) / 60
        rows.append((paper, len(runs), train_hours, len(gpu_jobs), jobs_hours, train_hours + jobs_hours, cpu_hours,
                     len(mine) - len(runs) - len(gpu_jobs), asked))
        all_runs += runs
    if len(rows) > 1:
        rows.append(("all", *(sum(row[i] for row in rows) for i in range(1, len(HEADER)))))
    return rows, all_runs
