"""Run a command as one job tree that stops whole: `python -m pipeline.job_tree CMD ...` (dvc.yaml's stage commands).

DVC runs a stage's Snakemake call as its child; killed alone, DVC left Snakemake and its trainers running on
their own, still holding Snakemake's lock. Here the command runs in its own process group, and the group is
stopped when this process is interrupted, terminated, hung up on, or when its parent (DVC) dies for any reason,
SIGKILL included (Linux's parent-death signal; dvc.yaml's commands `exec` this, so that no shell stands between),
and when the command ends leaving members of its group (a Snakemake killed by SIGKILL leaves its jobs): SIGINT first
(Snakemake cancels its jobs, Slurm's too, and releases its lock; a trainer stops at once, its last checkpoint
intact), then SIGTERM, then SIGKILL, GRACE_S seconds apart (JOB_TREE_GRACE_S), until the whole group has ended.
The exit status is the command's.
"""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

GRACE_S = float(os.environ.get("JOB_TREE_GRACE_S", "30"))
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Ask Linux for SIGTERM when the parent process dies (a no-op elsewhere)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


def _group_alive(group: int) -> bool:
    """Whether any process of the group is left, zombies (ended, not yet reaped by their new parent) aside."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()   # state, ppid, pgrp, ...
        except (OSError, IndexError):
            continue   # ended while we looked
        if int(fields[2]) == group and fields[0] != "Z":
            return True
    return not Path("/proc/self/stat").exists()   # no /proc: trust killpg


def _stop(group: int) -> None:
    """SIGINT, SIGTERM, then SIGKILL to the process group until every member has ended, not only the command:
    a grandchild may outlive it (one interrupted while Python was starting goes on running)."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + GRACE_S
        while time.monotonic() < deadline:
            if not _group_alive(group):
                return
            time.sleep(0.05)


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
    stopping: list[int] = []
    stopper = threading.Thread(target=_stop, args=(child.pid,), daemon=True)

    def on_signal(signum, _frame):
        if not stopping:
            stopping.append(signum)
            stopper.start()

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    status = child.wait()
    if stopping:
        stopper.join()   # the rest of the group may still be ending
        return 128 + stopping[0]
    if _group_alive(child.pid):   # the command was killed and left its jobs (a trainer) running: stop them too
        _stop(child.pid)
    return status if status >= 0 else 128 - status


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: python -m pipeline.job_tree COMMAND [ARGS...]")
    sys.exit(run(sys.argv[1:]))


if __name__ == "__main__":
    main()
