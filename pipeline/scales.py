"""The scales a build runs at, and how the smoke scale is derived from the other two (torch-free).

tiny: the embedded corpora, tiny models, the CPU. paper: the papers' corpora and sizes, GPUs on Slurm. smoke: what to
run on a cluster before spending its hours: the paper scale's models, recipes and code paths (bfloat16, DDP where
`smoke_gpus` > 1, decoding and analyses on GPUs) on the tiny scale's embedded corpora and a few hundred updates, so that
a table builds on one GPU node in minutes. The params files write per-scale values for tiny and paper only: at smoke
a value takes its paper value, except in the sections about the data (SMOKE_DATA_SECTIONS), which take their tiny
one; every recipe is shortened (smoke_recipe), its GPUs capped by params.yaml's `smoke_gpus` and every job's time
limit by SMOKE_MINUTES.
"""
from __future__ import annotations

import dataclasses

SCALES = ("tiny", "smoke", "paper")
WRITTEN_SCALES = ("tiny", "paper")  # the keys of a per-scale value `{tiny: ..., paper: ...}`: smoke is never written
# The sections of a paper's file that take their tiny value at smoke, because they describe the data and what is
# measured on it: corpora (source, languages, length filter, BPE, vocabulary, casing, split sizes and test sets);
# tables and figures (cells that name stand-in systems, test sets of the embedded data, metrics matching its casing,
# analyses' samples and bins sized to it); combinations (stand-in inputs, n-best sizes, tuning sentences and length
# thresholds fitted to its short sentences). Our choice; everything else (models, recipes, experiments' options,
# params.yaml's precision, cpu_math and decoding) takes the paper value.
SMOKE_DATA_SECTIONS = ("corpora", "tables", "figures", "combinations")
SMOKE_STEPS = 200    # our choice: a step-based recipe's updates at smoke (at most the paper's)
SMOKE_EPOCHS = 2     # our choice: an epoch-based one's epochs (shu2016's: about 115 updates an epoch of its corpus)
SMOKE_MINUTES = 30   # our choice: every smoke job's time limit (minutes), training included


def embedded_data(scale: str) -> bool:
    """Whether a scale builds on the embedded corpora and stand-ins (tiny, smoke) rather than the papers' data."""
    return scale != "paper"


def written_scale(scale: str, key: str) -> str:
    """The scale whose value of a `{tiny:, paper:}` at `key` (e.g. corpora.zh-en.source) the active scale takes."""
    if scale != "smoke":
        return scale
    return "tiny" if key.split(".", 1)[0] in SMOKE_DATA_SECTIONS else "paper"


def smoke_recipe(train: dict) -> dict:
    """A paper recipe on the smoke schedule; batch, optimizer, precision, label smoothing and keep stay the paper's."""
    out = dict(train)
    if out.get("max_epochs") and out.get("schedule") == "halve_last_epochs":   # it counts epochs: keep counting them,
        out["max_epochs"] = min(out["max_epochs"], SMOKE_EPOCHS)              # halving the rate in the last half
        out["halve_epochs"] = min(out.get("halve_epochs", 1), max(1, out["max_epochs"] // 2))
        half = SMOKE_STEPS // 2
    else:   # at most SMOKE_STEPS updates (an epoch-based recipe: SMOKE_STEPS)
        out["max_steps"], out["max_epochs"] = min(out.get("max_steps") or SMOKE_STEPS, SMOKE_STEPS), 0
        half = max(1, out["max_steps"] // 2)
    # a checkpoint, a validation and log lines at least every half of the run (one mid-run); warmup at most half of it
    from pipeline.recipe import Recipe
    defaults = {f.name: f.default for f in dataclasses.fields(Recipe)}
    for key in ("checkpoint_every", "valid_every", "log_every"):
        out[key] = min(out.get(key, defaults[key]), half)
    if "warmup" in out:
        out["warmup"] = min(out["warmup"], half)
    return out
