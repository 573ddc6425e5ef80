"""What a build will run and why, before it spends anything: the jobs of a dry run grouped by rule and reason (a
params change as the keys that changed), each group's GPU-hours, and the systems of a table trained or to train."""
from __future__ import annotations

from collections import defaultdict
from typing import Callable, Sequence

from pipeline.dry_run import PlannedJob
from pipeline.reasons import explain

NAMES_SHOWN = 6  # names listed in a group's line before "+N more"


def job_name(job: PlannedJob) -> str:
    """What a job is of: its experiment, system, combination, table, output or corpus (and split, side)."""
    w = job.wildcards
    for key in ("exp", "system", "combo", "table", "output", "paper", "corpus"):
        if key in w:
            return ".".join([w[key]] + [w[k] for k in ("split", "side") if k in w])
    return ",".join(f"{k}={v}" for k, v in w.items()) or job.rule


def grouped(jobs: Sequence[PlannedJob]) -> dict[tuple[str, str], list[PlannedJob]]:
    """(rule, short reason) -> its jobs, in the dry run's order."""
    groups: dict[tuple[str, str], list[PlannedJob]] = defaultdict(list)
    for job in jobs:
        groups[(job.rule, explain(job.reason))].append(job)
    return groups


def plan_lines(jobs: Sequence[PlannedJob], gpu_hours: Callable[[PlannedJob], float] | None = None) -> list[str]:
    """One line per (rule, reason) group: `train x2 (ende-base, ende-big): params changed: recipe.lr: ... [, 82.1
    GPU-h]`; the jobs planned only because an input of theirs is rebuilt come last. gpu_hours: a job's estimate
    (None: no GPU column)."""
    lines, follow = [], []
    for (rule, why), members in grouped(jobs).items():
        names = [job_name(job) for job in members]
        shown = ", ".join(names[:NAMES_SHOWN]) + (f", +{len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN
                                                 else "")
        line = f"  {rule}{f' x{len(names)}' if len(names) > 1 else ''} ({shown}): {why}"
        hours = sum(gpu_hours(job) for job in members) if gpu_hours else 0.0
        if hours:
            line += f" [{hours:,.1f} GPU-h]"
        (follow if why == "an input is rebuilt" else lines).append(line)
    return lines + follow


def total_line(jobs: Sequence[PlannedJob], gpu_hours: Callable[[PlannedJob], float] | None, gpu: str | None) -> str:
    """`53 jobs: 3 training runs, 12 on GPUs; 98.3 GPU-h on H200` (no GPU-hours without an estimate)."""
    runs = sum(job.rule == "train" for job in jobs)
    on_gpus = sum(job.gpus > 0 for job in jobs)
    line = f"{len(jobs)} jobs: {runs} training run{'s' * (runs != 1)}, {on_gpus} on GPUs"
    if gpu_hours and on_gpus:
        train = sum(gpu_hours(job) for job in jobs if job.rule == "train")
        steps = sum(gpu_hours(job) for job in jobs if job.rule != "train")
        line += f"; {train + steps:,.1f} GPU-h on {gpu} ({train:,.1f} training, {steps:,.1f} model steps)"
    return line


def systems_line(target: str, needed: Sequence[str], jobs: Sequence[PlannedJob]) -> str:
    """`<target>: 12 trained systems, 3 done (...), 9 to train (...); 12 to decode and score`."""
    to_train = sorted({job.wildcards["exp"] for job in jobs if job.rule == "train"})
    to_score = sorted({job.wildcards["system"] for job in jobs if job.rule == "score"})
    needed = sorted(set(needed) | set(to_train))
    done = [name for name in needed if name not in to_train]
    return (f"{target}: {len(needed)} trained systems, {len(done)} done" + (f" ({', '.join(done)})" if done else "")
            + f", {len(to_train)} to train" + (f" ({', '.join(to_train)})" if to_train else "")
            + f"; {len(to_score)} to decode and score")
