"""Deterministic matplotlib figures (Agg, no display, no timestamps) and their atomic PNG writer."""
from __future__ import annotations

import math
import os

import matplotlib

matplotlib.use("Agg")  # no display; set before anything imports pyplot

from matplotlib import rc_context  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from pipeline.errors import PipelineError  # noqa: E402
from pipeline.fileio import atomic_path  # noqa: E402

SIZE = (6.0, 4.0)  # inches
DPI = 100
# Fixed style, independent of any user matplotlibrc (our choice: matplotlib's defaults plus a fixed font).
STYLE = {**{k: v for k, v in matplotlib.rcParamsDefault.items() if k != "backend"},
         "font.family": "DejaVu Sans", "font.size": 10.0, "figure.dpi": DPI, "savefig.dpi": DPI}
PAPER_COLOUR, OURS_COLOUR = "tab:blue", "tab:orange"
SHARED_RANGE = 5.0  # BLEU


def _values(values: list[float | None]) -> list[float]:
    """None -> NaN, so matplotlib leaves a gap."""
    return [math.nan if v is None else float(v) for v in values]


def _spread(values: list[float | None]) -> tuple[float, float] | None:
    """(min, max) of the given values, None if there are none."""
    present = [v for v in values if v is not None]
    return (min(present), max(present)) if present else None


def steps_figure(labels: list[str], paper: list[float | None], ours: list[float | None],
                 paper_base: float | None, ours_base: float | None, *, title: str,
                 ours_control: float | None = None) -> Figure:
    """BLEU vs recurrent steps: paper and ours as solid lines at evenly spaced x, their base lines dashed.

    ours_control: our baseline continued for the fine-tuning steps, a dotted line beside our base line.

    Our choice: when ours lie more than SHARED_RANGE BLEU outside the paper's range (tiny scale), ours get
    their own right-hand axis so both curves stay readable.
    """
    if not len(labels) == len(paper) == len(ours):
        raise PipelineError(f"steps figure: {len(labels)} labels, {len(paper)} paper and {len(ours)} "
                            f"ours values; expected one value per label")
    paper_span, ours_span = _spread(paper + [paper_base]), _spread(ours + [ours_base, ours_control])
    twin = bool(paper_span and ours_span and (ours_span[0] < paper_span[0] - SHARED_RANGE
                                              or ours_span[1] > paper_span[1] + SHARED_RANGE))
    with rc_context(STYLE):
        fig = Figure(figsize=SIZE, dpi=DPI)
        ax = fig.add_subplot()
        ax_ours = ax.twinx() if twin else ax
        x = list(range(len(labels)))
        lines = ax.plot(x, _values(paper), marker="o", color=PAPER_COLOUR, label="paper")
        lines += ax_ours.plot(x, _values(ours), marker="s", color=OURS_COLOUR, label="ours")
        if paper_base is not None:
            lines.append(ax.axhline(paper_base, linestyle="--", color=PAPER_COLOUR, label="paper base"))
        if ours_base is not None:
            lines.append(ax_ours.axhline(ours_base, linestyle="--", color=OURS_COLOUR, label="ours base"))
        if ours_control is not None:
            lines.append(ax_ours.axhline(ours_control, linestyle=":", color=OURS_COLOUR,
                                         label="ours base, continued (control)"))
        ax.set_xticks(x, labels)
        ax.set_xlabel("Number of recurrent steps")
        ax.set_ylabel("BLEU (paper)" if twin else "BLEU")
        if twin:
            ax_ours.set_ylabel("BLEU (ours)")
        ax.set_title(title)
        ax.legend(lines, [line.get_label() for line in lines], loc="best")
        fig.tight_layout()
    return fig


def grouped_bars(groups: list[str], series: dict[str, list[float | None]], *, title: str,
                 xlabel: str, ylabel: str = "BLEU") -> Figure:
    """One group of bars per x label, one bar per series (None: no bar)."""
    for name, values in series.items():
        if len(values) != len(groups):
            raise PipelineError(f"bar figure series {name!r}: {len(values)} values; expected {len(groups)}")
    with rc_context(STYLE):
        fig = Figure(figsize=SIZE, dpi=DPI)
        ax = fig.add_subplot()
        width = 0.8 / max(len(series), 1)
        for k, (name, values) in enumerate(series.items()):
            shown = [(i, v) for i, v in enumerate(values) if v is not None]
            ax.bar([i - 0.4 + width * (k + 0.5) for i, _ in shown], [v for _, v in shown], width, label=name)
        heights = [v for values in series.values() for v in values if v is not None]
        if heights:  # our choice: zoom on the data like the paper's axis (it starts at 25, not 0)
            low, high = min(heights), max(heights)
            pad = max((high - low) * 0.2, 0.5)
            ax.set_ylim(max(low - pad, 0.0), high + pad)
        ax.set_xticks(range(len(groups)), groups)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        if series:
            ax.legend(loc="best")
        fig.tight_layout()
    return fig


def save_figure(fig: Figure, path: str | os.PathLike) -> None:
    """Write `fig` as a PNG atomically, without metadata that varies between runs."""
    with atomic_path(path) as tmp:
        with rc_context(STYLE):
            fig.savefig(tmp, format="png", dpi=DPI, metadata={"Software": None})


# ------------------------------------------------------------------ multi-panel figures
# A panel is (subtitle, xlabel, x tick labels, {series name: values}); a grid cell is a panel or None.
PANEL_SIZE = (4.0, 3.2)  # inches per panel


def _panel_figure(n_rows: int, n_cols: int) -> tuple[Figure, list[list]]:
    """A figure of n_rows x n_cols axes sized per panel (call inside rc_context(STYLE))."""
    fig = Figure(figsize=(PANEL_SIZE[0] * n_cols, PANEL_SIZE[1] * n_rows), dpi=DPI)
    axes = fig.subplots(n_rows, n_cols, squeeze=False)
    return fig, [list(row) for row in axes]


def _check_series(where: str, n: int, series: dict[str, list[float | None]]) -> None:
    """Every series has one value per x label."""
    for name, values in series.items():
        if len(values) != n:
            raise PipelineError(f"{where} series {name!r}: {len(values)} values; expected {n}")


def line_panels(panels: list[tuple], *, title: str, ylabel: str) -> Figure:
    """Side-by-side line plots, one per panel, series at evenly spaced x (None: gap)."""
    with rc_context(STYLE):
        fig, axes = _panel_figure(1, len(panels))
        for ax, (subtitle, xlabel, labels, series) in zip(axes[0], panels):
            _check_series(f"line panel {subtitle!r}", len(labels), series)
            x = list(range(len(labels)))
            for name, values in series.items():
                ax.plot(x, _values(values), marker="o", label=name)
            ax.set_xticks(x, labels)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.set_title(subtitle)
            if series:
                ax.legend(loc="best")
        fig.suptitle(title, fontsize="medium", wrap=True)
        fig.tight_layout()
    return fig


def bar_panels(panels: list[tuple], *, title: str, ylabel: str = "BLEU") -> Figure:
    """Side-by-side grouped bar plots: one group per x label, one bar per series (None: no bar)."""
    with rc_context(STYLE):
        fig, axes = _panel_figure(1, len(panels))
        for ax, (subtitle, xlabel, groups, series) in zip(axes[0], panels):
            _check_series(f"bar panel {subtitle!r}", len(groups), series)
            width = 0.8 / max(len(series), 1)
            for k, (name, values) in enumerate(series.items()):
                shown = [(i, v) for i, v in enumerate(values) if v is not None]
                ax.bar([i - 0.4 + width * (k + 0.5) for i, _ in shown], [v for _, v in shown], width, label=name)
            ax.set_xticks(range(len(groups)), groups, rotation=30)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.set_title(subtitle)
            if series:
                ax.legend(loc="best")
        fig.suptitle(title, fontsize="medium", wrap=True)
        fig.tight_layout()
    return fig


def histogram_grid(grid: list[list[tuple]], *, title: str, ylabel: str = "fraction of weights") -> Figure:
    """Step histograms: grid[r][c] = (subtitle, bin edges [bins+1], {series name: heights [bins]})."""
    with rc_context(STYLE):
        fig, axes = _panel_figure(len(grid), max(len(row) for row in grid))
        for row, ax_row in zip(grid, axes):
            for cell, ax in zip(row, ax_row):
                subtitle, edges, series = cell
                _check_series(f"histogram {subtitle!r}", len(edges) - 1, series)
                for name, heights in series.items():
                    ax.stairs(heights, edges, label=name)
                ax.set_title(subtitle)
                ax.set_xlabel("attention weight")
                ax.set_ylabel(ylabel)
                if series:
                    ax.legend(loc="best")
        fig.suptitle(title, fontsize="medium", wrap=True)
        fig.tight_layout()
    return fig


def heatmap_grid(grid: list[list[tuple | None]], *, title: str, cmap: str = "viridis",
                 xlabel: str = "", ylabel: str = "", one_based_ticks: bool = False) -> Figure:
    """Heatmaps with colour bars: grid[r][c] = (subtitle, matrix [n x m]) or None (empty panel).

    one_based_ticks: label every row/column 1..n (e.g. layer numbers).
    """
    with rc_context(STYLE):
        fig, axes = _panel_figure(len(grid), max(len(row) for row in grid))
        for row, ax_row in zip(grid, axes):
            for cell, ax in zip(row, ax_row):
                if cell is None:
                    ax.set_axis_off()
                    continue
                subtitle, matrix = cell
                image = ax.imshow(matrix, cmap=cmap, aspect="auto", interpolation="nearest")
                fig.colorbar(image, ax=ax)
                if one_based_ticks:
                    ax.set_xticks(range(len(matrix[0])), [str(j + 1) for j in range(len(matrix[0]))])
                    ax.set_yticks(range(len(matrix)), [str(i + 1) for i in range(len(matrix))])
                ax.set_title(subtitle)
                ax.set_xlabel(xlabel)
                ax.set_ylabel(ylabel)
        fig.suptitle(title, fontsize="medium", wrap=True)
        fig.tight_layout()
    return fig
