"""A run directory's place on disk: the lock its trainer holds, and where a run that is not reused is set aside."""
from __future__ import annotations

import fcntl
import os
import socket
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from pipeline.errors import PipelineError


@contextmanager
def run_lock(run_dir: Path):
    """Hold <run_dir>.lock while training into run_dir: a second trainer of the same run is refused. The lock dies
    with its holder, so a killed job leaves nothing to clean; on a file system without locks, a warning."""
    path = Path(run_dir).with_name(Path(run_dir).name + ".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise PipelineError(f"{run_dir}: being trained by {holder}; expected one trainer per run directory "
                                "(wait for it to end, or stop it)") from None
        except OSError as err:
            print(f"warning: {path}: cannot lock ({err.strerror}); two trainers of this run would not be stopped",
                  file=sys.stderr)
        handle.truncate(0)
        handle.write(f"pid {os.getpid()} on {socket.gethostname()} since "
                     f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime())}\n")
        handle.flush()
        try:
            yield
        finally:
            handle.truncate(0)


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
