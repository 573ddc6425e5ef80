"""shu2016 Figure 2 (4.2): validation cross-entropy of the four decoders over the first three epochs, from the curves
analysis (pipeline/evaluate/curves.py). The paper prints no numbers for it, so the table's columns are ours only."""
from __future__ import annotations

import math
from collections import Counter

from matplotlib import rc_context
from matplotlib.figure import Figure

from pipeline.errors import PipelineError
from pipeline.papers.shu2016.layouts import PAPER, embedded_line
from pipeline.report.figures import DPI, SIZE, STYLE
from pipeline.report.format import check_cells, check_facts, check_keys, check_number
from pipeline.report.layouts import register_layout
from pipeline.report.table import Table
from pipeline.scales import embedded_data

COLUMN = "valid"
ROWS = ("baseline", "enlarged", "stacked", "residual")
LEGEND = {"baseline": "Baseline model", "enlarged": "Enlarged decoder RNN", "stacked": "Stacked decoder RNN",
          "residual": "Residual decoder RNN"}  # the paper's legend


def _check_curve(cell, where: str, column: str) -> None:
    """A curves analysis: its name, epochs, steps_per_epoch > 0 and [step, value] points at increasing steps."""
    check_keys(cell, where, ("curves",), ("system",))
    at = f"{where}.curves"
    check_keys(cell["curves"], at, ("curve", "epochs", "steps_per_epoch", "points"))
    curves = cell["curves"]
    if check_number(curves["steps_per_epoch"], f"{at}.steps_per_epoch", float, optional=False) <= 0:
        raise PipelineError(f"{at}.steps_per_epoch: expected updates per epoch > 0, got {curves['steps_per_epoch']!r}")
    check_number(curves["epochs"], f"{at}.epochs", int, optional=False)
    points = curves["points"]
    if not isinstance(points, list) or not points:
        raise PipelineError(f"{at}.points: expected a non-empty list of [step, value], got {points!r}"[:400])
    last = 0
    for i, point in enumerate(points):
        if not isinstance(point, (list, tuple)) or len(point) != 2:
            raise PipelineError(f"{at}.points[{i}]: expected [step, value], got {point!r}")
        step = check_number(point[0], f"{at}.points[{i}][0]", int, optional=False)
        value = check_number(point[1], f"{at}.points[{i}][1]", float, optional=False)
        if step <= last or not math.isfinite(value):
            raise PipelineError(f"{at}.points[{i}]: expected a step above {last} and a finite value, got {point!r}")
        last = step


def interval(points: list) -> int:
    """The logging interval: the commonest gap between consecutive logged steps (from step 0), the smaller on ties."""
    steps = [step for step, _ in points]
    gaps = Counter(b - a for a, b in zip([0] + steps[:-1], steps))
    return min(gaps, key=lambda gap: (-gaps[gap], gap))


def _shared(curves: dict[str, dict]) -> tuple[int, float, str]:
    """(interval, steps per epoch, curve name), the same for every variant, or an error naming the cell."""
    first = next(iter(curves))
    want = (interval(curves[first]["points"]), curves[first]["steps_per_epoch"], curves[first]["curve"])
    for row, c in curves.items():
        got = (interval(c["points"]), c["steps_per_epoch"], c["curve"])
        if got[0] != want[0] or got[2] != want[2] or not math.isclose(got[1], want[1], rel_tol=1e-9):
            raise PipelineError(f"cells.{row}.{COLUMN}.curves: interval {got[0]}, {got[1]} steps per epoch, curve "
                                f"{got[2]!r}; expected those of {first} ({want[0]}, {want[1]}, {want[2]!r}): the "
                                "variants share one x axis")
    return want


def _findings(values: dict[str, dict[int, float]], steps: list[int]) -> list[str]:
    """How often residual is lowest, and each variant's final value."""
    lines = ["the paper's finding (4.2, Figure 2): the residual decoder's validation loss is constantly lower than "
             "any other variant's, while stacking decoder RNNs naively slows training down significantly"]
    common = [s for s in steps if all(s in v for v in values.values())]
    if "residual" in values and len(values) > 1:
        lowest = sum(values["residual"][s] < min(v[s] for r, v in values.items() if r != "residual") for s in common)
        lines.append(f"ours: the residual decoder's loss is the lowest at {lowest} of {len(common)} logged points "
                     f"(those where all {len(values)} variants were logged)")
    last = {r: max(v) for r, v in values.items()}
    lines.append("ours, final logged values: " + ", ".join(f"{LEGEND[r]} {v[last[r]]:.4f} (step {last[r]})"
                                                           for r, v in values.items()))
    return lines


@register_layout("shu2016-fig2", figure=True)
def fig2(cells: dict, facts: dict) -> tuple[Table, Figure]:
    """Figure 2: validation cross-entropy per logged step of the four decoders; epoch boundaries dotted."""
    check_cells(cells, ROWS, (COLUMN,), _check_curve)
    curves = {r: cells[r][COLUMN]["curves"] for r in ROWS if COLUMN in cells.get(r, {})}
    if not curves:
        raise PipelineError(f"cells: no curves of {', '.join(ROWS)}; expected at least one")
    every, per_epoch, name = _shared(curves)
    values = {r: {step: value for step, value in c["points"]} for r, c in curves.items()}
    steps = sorted({step for v in values.values() for step in v})
    xlabel = f"iterations ({every}x)"
    rows = [[str(s), f"{s / every:g}", *(f"{values[r][s]:.4f}" if s in values.get(r, {}) else "" for r in ROWS)]
            for s in steps]
    check_facts(facts, ("scale",))
    epochs = next(iter(curves.values()))["epochs"]
    lines = [f"paper: {PAPER}, Figure 2 (4.2); the paper prints no numbers for it, so all columns are ours",
             f"scale: {facts['scale']}", f"corpus: {facts.get('corpora', {}).get(COLUMN, 'n/a')}",
             f"curve: {name}, the validation cross-entropy per target token (nats), logged every {every} updates "
             f"(derived from the logged steps), over the first {epochs or 'all'} epochs ({per_epoch:g} updates each); "
             "dotted lines: epoch boundaries", *_findings(values, steps)]
    if embedded_data(facts["scale"]):
        lines.append(embedded_line("64 units; the enlarged decoder 90", facts["scale"]))
    table = Table(title="shu2016 Figure 2: validation cross-entropy of the decoder variants, ours",
                  columns=["step", xlabel, *(f"{LEGEND[r]} (ours)" for r in ROWS)], rows=rows, footer=lines)
    with rc_context(STYLE):
        figure = Figure(figsize=SIZE, dpi=DPI)
        ax = figure.add_subplot()
        for row, by_step in values.items():
            ax.plot([s / every for s in by_step], list(by_step.values()), label=LEGEND[row])
        for k in range(1, int(steps[-1] * (1 + 1e-9) // per_epoch) + 1):  # every boundary the points reach
            ax.axvline(k * per_epoch / every, linestyle=":", color="grey", linewidth=0.8)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("cross-entropy loss")
        ax.set_title("shu2016 Figure 2: validation loss (ours)")
        ax.legend(loc="best")
        figure.tight_layout()
    return table, figure
