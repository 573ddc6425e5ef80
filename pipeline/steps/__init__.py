"""The step registry: every `python -m pipeline <step>` is declared once, where it is implemented.

A step is a function of one typed argument object (a dataclass whose fields are its command-line options,
pipeline/steps/arguments.py), registered with `@register_step(name, Args, ...)` together with the Snakemake rules
that call it, the DVC stage group those rules run in, the code its results depend on and its job resources per
scale. The command line (pipeline/cli.py), dvc.yaml's rule lists and code dependencies (pipeline/dvcgen.py) and
the rules' resources (workflows/rules/common.smk) are derived from these declarations; a test compares the
registry with the rules Snakemake runs. Papers register their own steps, metrics, tests and analysis kinds in
pipeline/papers/<paper>/ (imported by load_steps).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping

from pipeline.errors import PipelineError
from pipeline.registry import Registry
from pipeline.scales import SMOKE_MINUTES, WRITTEN_SCALES

STAGES = ("corpus", "train", "eval", "table")  # dvc.yaml's stage groups (pipeline/dvcgen.py)
STEP_MODULES = ("pipeline.steps.project", "pipeline.steps.data", "pipeline.steps.training",
                "pipeline.steps.decoding", "pipeline.steps.scoring", "pipeline.steps.significance", "pipeline.steps.external",
                "pipeline.steps.rerank", "pipeline.steps.gmbr", "pipeline.steps.length_switch",
                "pipeline.steps.analysis", "pipeline.steps.tables")


@dataclass(frozen=True)
class Resources:
    """What one job of a step asks for: threads (cores), memory, wall time and GPUs; `alone`: a local run gives it
    every core of the machine while it computes on `threads` (timings not shared with other jobs)."""
    threads: int = 1
    mem_mb: int = 4000
    runtime: int = 60  # minutes
    gpu: int = 0
    alone: bool = False


DEFAULT_RESOURCES = {scale: Resources() for scale in WRITTEN_SCALES}  # smoke: derived from paper's (register_step)
# a step that runs a model (beam search, rescoring, teacher-forced analyses): on one GPU at paper scale, where the
# papers' test sets take seconds to minutes (a CPU thread would take hours); the tiny scale's CPU elsewhere
MODEL_RESOURCES = {"tiny": Resources(), "paper": Resources(threads=4, mem_mb=16000, runtime=120, gpu=1)}


@dataclass(frozen=True)
class Step:
    """One command of the pipeline and everything derived from its declaration."""
    name: str
    args: type                  # dataclass of its options (pipeline/steps/arguments.py)
    run: Callable               # run(args: Args) -> None
    help: str
    rules: tuple[str, ...] = ()  # the Snakemake rules that call it
    stage: str | None = None     # the dvc.yaml stage group whose Snakemake call runs those rules
    code: tuple[str, ...] = ()   # modules its results depend on besides its own (import closures are taken)
    resources: Mapping[str, Resources] = field(default_factory=lambda: dict(DEFAULT_RESOURCES))

    @property
    def modules(self) -> tuple[str, ...]:
        """The roots of its code dependencies: its own module and the declared ones."""
        return (self.run.__module__,) + tuple(self.code)


def _same_step(old: Step, new: Step) -> bool:
    """The same function declared again (its module imported twice, e.g. as __main__ and by name)."""
    return (old.run.__module__, old.run.__qualname__) == (new.run.__module__, new.run.__qualname__)


STEPS: Registry = Registry("step", same=_same_step, discover=lambda: load_steps())


def register_step(name: str, args: type, *, help: str, rules: tuple[str, ...] = (), stage: str | None = None,
                  code: tuple[str, ...] = (), resources: Mapping[str, Resources] | None = None) -> Callable:
    """Decorator: declare fn(args) as the step `name` (see the module docstring)."""
    if stage is not None and stage not in STAGES:
        raise PipelineError(f"step {name!r}: stage {stage!r}; expected one of {', '.join(STAGES)}")
    resources = dict(DEFAULT_RESOURCES if resources is None else resources)
    if set(resources) != set(WRITTEN_SCALES):
        raise PipelineError(f"step {name!r}: resources for {sorted(resources)}; expected one per scale "
                            f"({', '.join(WRITTEN_SCALES)}; smoke takes paper's)")
    # smoke: a step that runs a model on a GPU at paper scale does so at smoke; the others work on the embedded
    # corpora, as at tiny scale, with its resources; every one for at most SMOKE_MINUTES
    asked = resources["paper"] if resources["paper"].gpu else resources["tiny"]
    resources["smoke"] = replace(asked, runtime=min(asked.runtime, SMOKE_MINUTES))

    def register(fn: Callable) -> Callable:
        where = f"by {STEPS[name].run.__module__} and by {fn.__module__}" if name in STEPS else ""
        STEPS.add(name, Step(name, args, fn, help, tuple(rules), stage, tuple(code), resources), where)
        return fn

    return register


def load_steps() -> Registry:
    """Every registered step: the shared step modules and every paper's package."""
    for module in STEP_MODULES:
        importlib.import_module(module)
    importlib.import_module("pipeline.papers")
    return STEPS


def step_files(names, modules=(), functions=()) -> list[str]:
    """Repository files the named steps (and the modules and functions named) depend on (pipeline/code_deps.py)."""
    from pipeline.code_deps import code_files
    steps = load_steps()
    return code_files([steps[name].run for name in names] + list(functions),
                      [m for name in names for m in steps[name].code] + list(modules))


def rule_steps() -> dict[str, Step]:
    """Snakemake rule -> the step it calls."""
    return {rule: step for step in load_steps().values() for rule in step.rules}
