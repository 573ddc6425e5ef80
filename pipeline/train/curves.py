"""Learning curves (dvclive TSVs, cut back on resume), the tqdm bar of a run and its progress lines (CurveLog)."""
from __future__ import annotations

import json
import math
import os
import shutil
import sys
import time
from pathlib import Path

from pipeline.fileio import atomic_open

# Seconds of wall time between two progress lines in the job log when there is no bar (--no-progress, as the
# rules run training); every validation writes one too.
PROGRESS_EVERY_S = 30.0


class CurveLog:
    """dvclive learning curves in run_dir/dvclive (resume-safe) plus a tqdm bar, or without the bar a progress line
    every PROGRESS_EVERY_S seconds; rank 0 only."""

    def __init__(self, run_dir: Path, resume_step: int, total_steps: int, progress: bool, tokens: float = 0.0,
                 label: str | None = None):
        from tqdm import tqdm

        self.dir = run_dir / "dvclive"
        # the furthest step an earlier attempt logged (0: none); its rows after resume_step are dropped
        self.logged_before = _truncate_curves(self.dir, resume_step) if resume_step > 0 else 0
        self.live = _local_live(self.dir, resume=resume_step > 0)
        self.bar = tqdm(total=total_steps, initial=resume_step, disable=not progress, desc="train",
                        dynamic_ncols=True, file=sys.stderr)
        self.total, self.lines = total_steps, not progress
        self.label = f"{label}: " if label else ""  # names the run in progress lines (parallel jobs share a terminal)
        # rates count from this attempt's start, on the wall clock (validation and checkpoints included)
        self._start = (time.monotonic(), resume_step, tokens)
        self._last_line, self._last_step = self._start[0], resume_step

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

    def tick(self, step: int, tokens: float, detail: str = "") -> None:
        """Without a bar, a progress line (report) for a step not reported yet, once PROGRESS_EVERY_S seconds have
        passed since the last line."""
        if self.lines and step > self._last_step and time.monotonic() - self._last_line >= PROGRESS_EVERY_S:
            self.report(step, tokens, detail)

    def report(self, step: int, tokens: float, detail: str = "") -> None:
        """`[label: ]step 1200/3000 (40%), 3.1 steps/s, 4,100 target tokens/s, ~9 min left[, detail]` in the job log;
        tokens: target tokens trained on so far (all attempts)."""
        now = time.monotonic()
        began, first_step, first_tokens = self._start
        seconds = max(now - began, 1e-9)
        steps_per_s, tokens_per_s = (step - first_step) / seconds, (tokens - first_tokens) / seconds
        left = max(self.total - step, 0)
        eta = _duration(left / steps_per_s) if steps_per_s > 0 else "?"
        rate = f"{steps_per_s:.1f}" if steps_per_s >= 1 else f"{steps_per_s:.2g}"
        line = (f"{self.label}step {step}/{self.total} ({min(step / max(self.total, 1), 1):.0%}), {rate} steps/s, "
                f"{tokens_per_s:,.0f} target tokens/s, ~{eta} left")
        self.note(f"{line}, {detail}" if detail else line)
        self._last_line, self._last_step = now, step

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


def _duration(seconds: float) -> str:
    """A rough time span: 40 s, 9 min, 2.5 h."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _local_live(live_dir: Path, resume: bool):
    """A dvclive Live that only writes files: no DVC repo lookup (which would `dvc init` a bare git
    checkout and stage files), no dvc.yaml, no experiment saving. The curves are Snakemake outputs."""
    from dvclive import Live

    class LocalLive(Live):
        def _init_dvc(self):
            self._dvc_file = self._init_dvc_file()

    return LocalLive(dir=str(live_dir), resume=resume, save_dvc_exp=False, dvcyaml=None)


def _truncate_curves(live_dir: Path, step: int) -> int:
    """Prepare curves for resuming at `step`: drop rows logged after it (or cut short by a kill) and an
    unreadable summary (dvclive rewrites it at the next log); return the furthest complete row's step (0: none)."""
    furthest = 0
    for tsv in sorted((live_dir / "plots" / "metrics").rglob("*.tsv")) if live_dir.exists() else []:
        lines = tsv.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
        if not lines or not lines[0].endswith("\n"):
            tsv.unlink()
            continue
        header = lines[0].rstrip("\r\n").split("\t")
        furthest = max([furthest] + [s for s in (_row_step(ln, header) for ln in lines[1:]) if s != math.inf])
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
    return int(furthest)


def _row_step(line: str, header: list[str]) -> float:
    """Step of a complete TSV row; +inf for a row cut short by a kill (so it is dropped)."""
    fields = line.rstrip("\r\n").split("\t")
    if not line.endswith("\n") or len(fields) != len(header) or "step" not in header:
        return math.inf
    try:
        return int(fields[header.index("step")])
    except ValueError:
        return math.inf

