"""Learning curves (dvclive TSVs, cut back on resume) and the tqdm bar of a run (CurveLog)."""
from __future__ import annotations

import json
import math
import os
import shutil
import sys
from pathlib import Path

from pipeline.fileio import atomic_open


class CurveLog:
    """dvclive learning curves in run_dir/dvclive (resume-safe) plus a tqdm bar; rank 0 only."""

    def __init__(self, run_dir: Path, resume_step: int, total_steps: int, progress: bool):
        from tqdm import tqdm

        self.dir = run_dir / "dvclive"
        if resume_step > 0:
            _truncate_curves(self.dir, resume_step)
        self.live = _local_live(self.dir, resume=resume_step > 0)
        self.bar = tqdm(total=total_steps, initial=resume_step, disable=not progress, desc="train",
                        dynamic_ncols=True, file=sys.stderr)

    def log(self, step: int, values: dict, bar: dict | None = None) -> None:
        """Append `values` (name -> float) at `step` to the curves and refresh the summary."""
        self.live.step = step
        for name, value in values.items():
            self.live.log_metric(name, float(value))
        self.live.make_summary()
        if bar:
            self.bar.set_postfix(bar, refresh=False)

    def advance(self) -> None:
        self.bar.update(1)

    def note(self, text: str) -> None:
        """One line for the job log (above the bar when there is one)."""
        self.bar.write(text, file=sys.stderr)

    def close(self) -> None:
        self.bar.close()

    def publish(self, curves_dir: Path) -> None:
        """Replace curves_dir with the curve files (train/*.tsv, valid/*.tsv): copy to a temp dir, then rename."""
        curves_dir = Path(curves_dir)
        tmp = curves_dir.with_name(f".{curves_dir.name}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(self.dir / "plots" / "metrics", tmp)
        shutil.rmtree(curves_dir, ignore_errors=True)
        os.replace(tmp, curves_dir)


def _local_live(live_dir: Path, resume: bool):
    """A dvclive Live that only writes files: no DVC repo lookup (which would `dvc init` a bare git
    checkout and stage files), no dvc.yaml, no experiment saving. The curves are Snakemake outputs."""
    from dvclive import Live

    class LocalLive(Live):
        def _init_dvc(self):
            self._dvc_file = self._init_dvc_file()

    return LocalLive(dir=str(live_dir), resume=resume, save_dvc_exp=False, dvcyaml=None)


def _truncate_curves(live_dir: Path, step: int) -> None:
    """Prepare curves for resuming at `step`: drop rows logged after it (or cut short by a kill) and an
    unreadable summary (dvclive rewrites it at the next log)."""
    for tsv in sorted((live_dir / "plots" / "metrics").rglob("*.tsv")) if live_dir.exists() else []:
        lines = tsv.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
        if not lines or not lines[0].endswith("\n"):
            tsv.unlink()
            continue
        header = lines[0].rstrip("\r\n").split("\t")
        kept = [lines[0]] + [ln for ln in lines[1:] if _row_step(ln, header) <= step]
        with atomic_open(tsv) as handle:
            handle.writelines(kept)
    summary = live_dir / "metrics.json"
    try:
        json.loads(summary.read_text(encoding="utf-8"))
    except FileNotFoundError:
        pass
    except ValueError:
        summary.unlink()


def _row_step(line: str, header: list[str]) -> float:
    """Step of a complete TSV row; +inf for a row cut short by a kill (so it is dropped)."""
    fields = line.rstrip("\r\n").split("\t")
    if not line.endswith("\n") or len(fields) != len(header) or "step" not in header:
        return math.inf
    try:
        return int(fields[header.index("step")])
    except ValueError:
        return math.inf

