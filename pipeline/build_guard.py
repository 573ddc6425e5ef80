"""One build per workspace: `python -m pipeline.build_guard CMD ...` runs CMD (make run's script) as its builder.

It holds <workspace>/.snakemake/make-run.lock (pipeline/locks.py: a flock naming its holder, released when the holder
dies, SIGKILL included) while CMD runs as one job tree (pipeline/job_tree.py: stopped whole, Snakemake first with
SIGINT so that it cancels its jobs and releases its lock). Before CMD starts:
- a second `make run` beside a live one is refused at once, naming it;
- a Snakemake lock (.snakemake/locks) that a killed Snakemake left behind is removed, saying so, when no Snakemake
  works in the workspace; where one does (a build started by hand), the run is refused, naming its process, rather
  than unlocked (`snakemake --unlock` would let two builds train the same systems at once).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from pipeline.errors import PipelineError

LOCK = ".snakemake/make-run.lock"
SNAKEMAKE_LOCKS = ".snakemake/locks"


def _ancestors() -> set[int]:
    """This process and its ancestors (Linux /proc)."""
    found, pid = set(), os.getpid()
    while pid > 1 and pid not in found:
        found.add(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
    return found


def running_snakemakes(root: Path) -> list[int]:
    """The live Snakemake processes working in `root` (their command names snakemake, their folder is root), this
    process's ancestors aside."""
    root, mine, found = Path(root).resolve(), _ancestors(), []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            pid = int(proc.name)
            args = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cwd = Path(os.readlink(proc / "cwd")).resolve()
        except (OSError, IndexError, ValueError):
            continue   # ended while we looked, or not ours to read
        snakemake = any(Path(arg.decode(errors="replace")).name == "snakemake" for arg in args[:3])
        if snakemake and cwd == root and state != "Z" and pid not in mine:
            found.append(pid)
    return sorted(found)


def clear_stale_lock(root: Path) -> None:
    """Remove a Snakemake lock no live Snakemake holds (what `snakemake --unlock` does), saying so on stderr; refuse
    where a Snakemake works in the workspace."""
    locks = sorted((Path(root) / SNAKEMAKE_LOCKS).glob("*.lock"))
    if not locks:
        return
    live = running_snakemakes(root)
    if live:
        raise PipelineError(f"a Snakemake (pid {', '.join(map(str, live))}) is building in this workspace; wait for "
                            f"it to end or stop it (Ctrl-C, or kill -INT), then run again")
    for lock in locks:
        lock.unlink(missing_ok=True)
    print(f"removed the Snakemake lock a stopped build left ({SNAKEMAKE_LOCKS}: no Snakemake runs in this "
          f"workspace); its unfinished jobs rerun", file=sys.stderr)


def _busy(holder: str) -> None:
    raise PipelineError(f"another make run is building in this workspace ({holder.strip()}); wait for it to end or "
                        f"stop it, then run again")


def main(argv: list[str]) -> int:
    from pipeline.job_tree import run
    from pipeline.locks import holder_lock

    if not argv:
        print("usage: python -m pipeline.build_guard COMMAND [ARG...]", file=sys.stderr)
        return 1
    root = Path.cwd()
    try:
        with holder_lock(root / LOCK, _busy, "a second make run"):
            clear_stale_lock(root)
            return run(argv)
    except PipelineError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
