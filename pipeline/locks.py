"""A lock file that names its holder: flock (it dies with its holder, so a killed job leaves nothing to clean)."""
from __future__ import annotations

import fcntl
import os
import socket
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable


@contextmanager
def holder_lock(path: Path, on_busy: Callable[[str], None], what: str):
    """Hold `path` while the block runs, naming this process in it (emptied on release). When another process holds
    it, on_busy(its holder) either raises or returns, and then this waits for the lock; on a file system without
    locks, a warning that `what` would not be stopped."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        try:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                on_busy(handle.read().strip() or "another process")
                fcntl.flock(handle, fcntl.LOCK_EX)
        except OSError as err:
            print(f"warning: {path}: cannot lock ({err.strerror}); {what} would not be stopped", file=sys.stderr)
        handle.truncate(0)
        handle.write(f"pid {os.getpid()} on {socket.gethostname()} since "
                     f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime())}\n")
        handle.flush()
        try:
            yield
        finally:
            handle.truncate(0)
