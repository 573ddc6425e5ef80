"""A run directory's place on disk: the lock its trainer holds, and where a run that is not reused is set aside."""
from __future__ import annotations

import os
import time
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.locks import holder_lock


def run_lock(run_dir: Path):
    """Hold <run_dir>.lock while training into run_dir: a second trainer of the same run is refused (pipeline.locks)."""
    def refuse(holder: str) -> None:
        raise PipelineError(f"{run_dir}: being trained by {holder}; expected one trainer per run directory "
                            "(wait for it to end, or stop it)")

    return holder_lock(Path(run_dir).with_name(Path(run_dir).name + ".lock"), refuse,
                       "two trainers of this run")


def set_aside(run_dir: Path) -> Path:
    """Move a run directory out of the way, never deleting it: to <run_dir>.set-aside/<UTC time>."""
    run_dir = Path(run_dir)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = run_dir.with_name(run_dir.name + ".set-aside") / stamp
    n = 1
    while target.exists():
        n += 1
        target = target.with_name(f"{stamp}-{n}")
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(run_dir, target)
    return target
