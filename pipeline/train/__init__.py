"""One trainer for every model family: it builds what a recipe (pipeline/recipe.py) names -- Adam, Adadelta or SGD;
inverse-sqrt, constant or halving schedules; token or sentence batches; per-token or per-sentence loss; stop by
updates or epochs; keep the last, best or averaged weights; float32 or bfloat16 autocast -- with label smoothing,
gradient clipping, atomic checkpoints and bitwise-exact resume, DDP (gloo on CPU, nccl on GPU), learning curves
(dvclive TSVs) and tqdm.

Modules: builders (what a recipe names), state (seeding, RNG states, run key, restart policy), run_dir (its lock,
setting a run aside), distributed (Dist), curves (CurveLog), trainer (Trainer, the loop), fitting (fit). Imports
are absolute, so that pipeline.dvcgen's code closure finds every module of the package.
"""
from __future__ import annotations

from pipeline.recipe import Recipe
from pipeline.train.builders import build_batches, build_optimizer, build_scheduler, lr_at
from pipeline.train.curves import CurveLog, _truncate_curves
from pipeline.train.fitting import fit, within_length
from pipeline.train.state import seed_everything
from pipeline.train.trainer import validation_bleu

__all__ = ["Recipe", "fit", "build_optimizer", "build_scheduler", "build_batches", "lr_at", "seed_everything",
           "within_length", "CurveLog", "validation_bleu"]
