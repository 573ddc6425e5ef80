"""Run a command as one job tree that stops whole: `python -m pipeline.job_tree CMD ...` (dvc.yaml's stage commands).

DVC runs a stage's Snakemake call as its child; killed alone, DVC left Snakemake and its trainers running on
their own, still holding Snakemake's lock. Here the command runs in its own process group, and the group is
stopped when this process is interrupted, terminated, hung up on, or when its parent (DVC) dies for any reason,
SIGKILL included (Linux's parent-death signal): SIGINT first (Snakemake cancels its jobs, Slurm's too, and
releases its lock; a trainer stops at once, its last checkpoint intact), then SIGTERM, then SIGKILL, GRACE_S
seconds apart. The exit status is the command's.
"""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading

GRACE_S = 30.0
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Ask Linux for SIGTERM when the parent process dies (a no-op elsewhere)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


def _stop(group: int, done: threading.Event) -> None:
    """SIGINT, SIGTERM, then SIGKILL to the process group until it has ended."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            return
        if done.wait(GRACE_S):
            return


def run(argv: list[str]) -> int:
    """Run argv in its own process group; stop the group with this process (see the module docstring)."""
    parent = os.getppid()
    _die_with_parent()
    if os.getppid() != parent:   # the parent died before the request took effect
        return 128 + signal.SIGTERM
    # a command started in the background (`dvc repro ... &`) inherits an ignored SIGINT, and so would the tree, whose
    # first stop signal is SIGINT: the child starts with the default action (Python's KeyboardInterrupt)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    child = subprocess.Popen(argv, start_new_session=True)
    done = threading.Event()
    stopping: list[int] = []

    def on_signal(signum, _frame):
        if not stopping:
            stopping.append(signum)
            threading.Thread(target=_stop, args=(child.pid, done), daemon=True).start()

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    status = child.wait()
    done.set()
    if stopping:
        return 128 + stopping[0]
    return status if status >= 0 else 128 - status


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: python -m pipeline.job_tree COMMAND [ARGS...]")
    sys.exit(run(sys.argv[1:]))


if __name__ == "__main__":
    main()
