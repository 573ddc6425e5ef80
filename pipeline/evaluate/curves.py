"""A learning curve of a training run (shu2016 Figure 2: validation cross-entropy over the first three epochs).

The trainer writes each curve as <curves>/<name>.tsv ("step<TAB><value>" after a header line, pipeline/train.py);
the run summary's steps and (fractional) epochs give the updates per epoch.
"""
from __future__ import annotations

from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.fileio import read_lines

CURVES = ("train/loss", "train/nll", "train/lr", "valid/loss", "valid/nll", "valid/ppl")


def read_curve(path: str | Path) -> list[tuple[int, float]]:
    """(step, value) rows of a curve file in file order; a malformed line names file:line."""
    lines = read_lines(path)
    if not lines or len(lines[0].split("\t")) != 2 or lines[0].split("\t")[0] != "step":
        raise PipelineError(f"{path}:1: expected the header 'step<TAB><value name>'")
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        try:
            rows.append((int(fields[0]), float(fields[1])))
        except (ValueError, IndexError):
            raise PipelineError(f"{path}:{number}: expected '<step><TAB><value>', got {line!r}") from None
    return rows


def steps_per_epoch(summary: dict, where: str = "run summary") -> float:
    """Updates per epoch of a finished run: its steps over its (fractional) epochs."""
    steps, epochs = summary.get("steps"), summary.get("epochs")
    if not isinstance(steps, int) or not isinstance(epochs, (int, float)) or steps < 1 or epochs <= 0:
        raise PipelineError(f"{where}: expected 'steps' >= 1 and 'epochs' > 0, got {steps!r} and {epochs!r}")
    return steps / epochs


def first_epochs(points: list[tuple[int, float]], per_epoch: float, epochs: int) -> list[tuple[int, float]]:
    """The points logged within the first `epochs` epochs (all of them for epochs 0)."""
    if epochs < 0:
        raise PipelineError(f"epochs: expected an integer >= 0 (0: the whole run), got {epochs!r}")
    if epochs == 0:
        return list(points)
    limit = epochs * per_epoch * (1 + 1e-9)
    return [(step, value) for step, value in points if step <= limit]
