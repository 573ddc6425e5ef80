"""Why DVC's records and the workspace disagree, in one line: `dvc status --json | python -m pipeline.dvc_records`
(make sync). A stage with no entry in dvc.lock was never run through DVC (its outputs, if any, were built by
Snakemake alone: `dvc commit` records them); one with an entry differs from it (`dvc pull` or `dvc checkout`)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

SHOWN = 3   # stage names named per kind before "and N more"


def _named(stages: list[str]) -> str:
    more = f" and {len(stages) - SHOWN} more" if len(stages) > SHOWN else ""
    return ", ".join(stages[:SHOWN]) + more


def explain(status: dict, lock: dict) -> str:
    """One line for a non-empty `dvc status --json`, given dvc.lock's `stages` mapping."""
    never = sorted(name for name in status if name not in lock)
    differs = sorted(name for name in status if name in lock)
    parts = []
    if never:
        parts.append(f"{len(never)} stage(s) never run through DVC ({_named(never)}): record what Snakemake built "
                     f"with `dvc commit -f <stage>` (make run does), or build them with `dvc repro`")
    if differs:
        parts.append(f"{len(differs)} stage(s) differ from dvc.lock ({_named(differs)}): run `dvc pull` (or `dvc "
                     f"checkout`) first")
    return "; ".join(parts)


def main() -> int:
    status = json.loads(sys.stdin.read() or "{}")
    lock_file = Path("dvc.lock")
    lock = (yaml.safe_load(lock_file.read_text(encoding="utf-8")) or {}).get("stages", {}) if lock_file.exists() else {}
    if status:
        print(f"sync_after_pull: {explain(status, lock)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
