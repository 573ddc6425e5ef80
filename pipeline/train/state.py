"""Resume state: seeding and RNG states, the run key, the saved Progress and the restart policy."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import random
import socket
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from pipeline.checkpoint import load_file
from pipeline.errors import PipelineError
from pipeline.recipe import Recipe
from pipeline.train.run_dir import set_aside

STATE_FORMAT = "nmt-repro-train-state/2"
# Recipe keys that may change between a checkpoint and its resumption: cadence and how long to train, unless the
# schedule depends on them (resumable_keys).
RESUMABLE_CHANGES = ("checkpoint_every", "valid_every", "log_every", "max_steps", "max_epochs")
COMPLETE = "COMPLETE"  # marker in run_dir: the run finished and wrote its outputs
SNAPSHOTS = "average"  # run_dir subfolder of the checkpoints kept for keep: average


def resumable_keys(recipe: Recipe) -> tuple[str, ...]:
    """RESUMABLE_CHANGES minus the keys this recipe's schedule depends on."""
    fixed = {"halve_last_epochs": ("max_epochs",), "halve_on_plateau": ("valid_every",)}.get(recipe.schedule, ())
    return tuple(k for k in RESUMABLE_CHANGES if k not in fixed)


def seed_everything(seed: int) -> None:
    """Seed python, numpy and torch (call before building the model so its init is reproducible)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def get_rng_state() -> dict:
    """This process's python/numpy/torch(/cuda) generator states, in types torch.load(weights_only) accepts."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    state = {"python": random.getstate(), "torch": torch.get_rng_state(),
             "numpy": (kind, torch.from_numpy(keys.astype(np.int64)), int(pos), int(has_gauss), float(cached))}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state()
    return state


def set_rng_state(state: dict) -> None:
    """Restore what get_rng_state captured."""
    random.setstate(state["python"])
    torch.set_rng_state(state["torch"].cpu())
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"].cpu())


def fingerprint(*corpora) -> str:
    """sha256 of the training and validation pairs (pipeline.data.token_store.Pairs), so a resume never continues
    on different data."""
    digest = hashlib.sha256()
    for pairs in corpora:
        pairs.digest(digest)
    return digest.hexdigest()


@dataclass
class Progress:
    """Where training is and what it has accumulated; saved in every checkpoint."""

    step: int = 0
    epoch: int = 0
    position: int = 0            # batches of `epoch` already consumed
    lr: float = math.nan         # rate of the last update
    best_valid: float = math.inf  # lowest validation NLL so far (best.pt) and its step
    best_step: int = 0
    best_bleu: float = -math.inf  # highest validation BLEU so far (best_bleu.pt, keep: best_bleu) and its step
    best_bleu_step: int = 0
    snapshots: list = dataclasses.field(default_factory=list)  # steps of the checkpoints kept for keep: average
    window: list = dataclasses.field(default_factory=lambda: [0.0, 0.0, 0.0, 0])  # loss, nll, tokens, steps
    last_train: tuple = (math.nan, math.nan)     # per-token loss, nll of the last logged window
    last_valid: tuple = (math.nan, math.nan)     # per-token loss, nll at the last validation
    valid_step: int = 0
    tokens: float = 0.0           # target tokens trained on, all ranks
    elapsed: float = 0.0          # seconds spent training, summed over resumptions


def run_key(meta: dict, recipe: Recipe, train, valid) -> dict:
    """What identifies a run: model/meta, data fingerprint, the recipe but for its resumable keys."""
    skip = resumable_keys(recipe)
    return {"meta": _plain(meta), "data": fingerprint(train, valid),
            "recipe": {k: v for k, v in _plain(recipe.to_dict()).items() if k not in skip}}


def _beyond(progress: dict, recipe: Recipe) -> str | None:
    """Why a checkpoint's progress is past the recipe's stopping point, or None."""
    if recipe.max_steps and progress["step"] > recipe.max_steps:
        return (f"already at step {progress['step']}, beyond recipe.max_steps {recipe.max_steps}; expected "
                f"max_steps >= the checkpoint's step")
    if recipe.max_epochs and (progress["epoch"], progress["position"]) > (recipe.max_epochs, 0):
        return (f"already in epoch {progress['epoch'] + 1}, beyond recipe.max_epochs {recipe.max_epochs}; "
                f"expected max_epochs >= the checkpoint's epochs")
    return None


def _snapshot_name(step: int) -> str:
    return f"step-{step:09d}.pt"


def run_environment() -> dict:
    """Where the run finished: host, Slurm job and the GPUs it was given (provenance for train.json)."""
    return {"host": socket.gethostname(), "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}


def _plain(obj):
    """JSON round trip (tuples -> lists, non-finite floats kept) for comparison and train.json."""
    return json.loads(json.dumps(obj, sort_keys=True, default=str))


def _differences(old: dict, new: dict) -> list[str]:
    """Human-readable list of keys whose values differ between two run keys."""
    out = []
    for part in ("meta", "recipe"):
        a, b = old.get(part, {}), new.get(part, {})
        for key in sorted(set(a) | set(b)):
            if part == "meta" and key == "code" and a.get(key) != b.get(key):
                old_code, new_code = a.get(key) or {}, b.get(key) or {}
                changed = sorted(f for f in set(old_code) | set(new_code) if old_code.get(f) != new_code.get(f))
                out.append(f"code changed: {', '.join(changed)}")
            elif a.get(key) != b.get(key):
                out.append(f"{part}.{key}: checkpoint {a.get(key)!r}, now {b.get(key)!r}")
    if old.get("data") != new.get("data"):
        out.append("training/validation data differ (fingerprint)")
    return out


def _continues(progress: dict, recipe: Recipe) -> bool:
    """Whether the recipe asks for more updates than a checkpoint holds (max_steps or max_epochs raised)."""
    if recipe.max_steps:
        return progress["step"] < recipe.max_steps
    return (progress["epoch"], progress["position"]) < (recipe.max_epochs, 0)


def restart_policy(run_dir: Path, key: dict, recipe: Recipe, retry: bool = False) -> str | None:
    """Set aside a run_dir marked COMPLETE unless this run continues it (same run key, the recipe asks for more
    updates) or is a retry of the job that finished it (retry: the job failed after its run wrote its outputs, e.g.
    at a time limit, and the scheduler removed them; the run is finished again from its last checkpoint, not
    trained afresh); return why it was set aside and where, or None.

    A finished run asked for again (its outputs deleted by `--force`/`--forcerun`, or a model, trainer or recipe
    change) is trained from scratch, never silently reused. A kept COMPLETE marker is removed: until this fit
    finishes, the run is incomplete again. A run_dir without the marker is left to the resume checks (an unfinished
    run of a different key is refused, not discarded)."""
    marker = Path(run_dir) / COMPLETE
    if not marker.exists():
        return None
    try:
        ckpt = load_file(Path(run_dir) / "last.pt")
    except PipelineError as err:
        why = str(err)
    else:
        if ckpt.get("format") != STATE_FORMAT:
            why = f"training state format {ckpt.get('format')!r}, expected {STATE_FORMAT}"
        else:
            why = "; ".join(_differences(ckpt["run_key"], key)) or _beyond(ckpt["progress"], recipe)
            if not why and not retry and not _continues(ckpt["progress"], recipe):
                why = f"finished at step {ckpt['progress']['step']} and asked for again (a forced rerun)"
    if why:
        return f"{why}; set aside in {set_aside(run_dir)}"
    marker.unlink()
    return None
