"""zeng2021 Figures 4, 5 and 7: statistics of the self-attention of TransF, Syn-R and RAN-ALL per layer (entropy,
histograms of the weights, Jensen-Shannon divergence between layers; ours only: the paper prints no numbers)."""
from __future__ import annotations

import math

from matplotlib.figure import Figure

from pipeline.errors import PipelineError
from pipeline.papers.zeng2021.layouts import (EN_DE, LABELS, PAPER, SIDES, cell_of, check_count, check_matrix,
                                              check_nonneg, check_positive_int, footer)
from pipeline.report.figures import heatmap_grid, histogram_grid, line_panels
from pipeline.report.format import analysis, check_cells, check_keys, check_number
from pipeline.report.layouts import register_layout
from pipeline.report.table import Table

ANALYSIS_ROWS = ("transf", "synr", "ran-all")  # Figures 4, 5, 7


# ------------------------------------------------------------------ Figures 4, 5, 7 (attention statistics)
def _check_side(side, where: str, bins: int) -> None:
    """{"entropy": [L], "histogram": {"edges": [bins+1], "counts": [L x bins]}, "js": [L x L]}."""
    check_keys(side, where, ("entropy", "histogram", "js"))
    entropy = side["entropy"]
    if not isinstance(entropy, list) or not entropy:
        raise PipelineError(f"{where}.entropy: expected a non-empty list of floats (one per layer), got {entropy!r}")
    for i, v in enumerate(entropy):
        check_nonneg(v, f"{where}.entropy[{i}]")
    layers = len(entropy)
    hist = side["histogram"]
    check_keys(hist, f"{where}.histogram", ("edges", "counts"))
    edges = hist["edges"]
    if not isinstance(edges, list) or len(edges) != bins + 1:
        raise PipelineError(f"{where}.histogram.edges: expected a list of bins + 1 = {bins + 1} edges, "
                            f"got {edges!r}"[:300])
    for i, edge in enumerate(edges):
        _number_finite(edge, f"{where}.histogram.edges[{i}]")
    if any(b <= a for a, b in zip(edges, edges[1:])):
        raise PipelineError(f"{where}.histogram.edges: expected strictly ascending edges, got {edges!r}")
    check_matrix(hist["counts"], f"{where}.histogram.counts", layers, bins, check_count)
    check_matrix(side["js"], f"{where}.js", layers, layers, check_nonneg)


def _number_finite(value, where: str) -> float:
    """A finite number."""
    value = check_number(value, where, float, optional=False)
    if not math.isfinite(value):
        raise PipelineError(f"{where}: expected a finite number, got {value!r}")
    return value


def _check_attention(cell, where: str, pair: str) -> None:
    """{"attention": {"enc": SIDE, "dec": SIDE, "n_sentences": int, "bins": int}}."""
    check_keys(cell, where, ("attention",), ("system",))
    attention, at = cell["attention"], f"{where}.attention"
    check_keys(attention, at, ("enc", "dec", "n_sentences", "bins"))
    check_positive_int(attention["n_sentences"], f"{at}.n_sentences")
    bins = check_positive_int(attention["bins"], f"{at}.bins")
    for side in SIDES:
        _check_side(attention[side], f"{at}.{side}", bins)


def _attention(cells: dict) -> dict[str, dict]:
    """Checked attention statistics by row (ANALYSIS_ROWS order); all models the same depth per side."""
    check_cells(cells, ANALYSIS_ROWS, EN_DE, _check_attention)
    found = {row: c["attention"] for row in ANALYSIS_ROWS if (c := cell_of(cells, row))}
    for side in SIDES:
        depths = {row: len(a[side]["entropy"]) for row, a in found.items()}
        first = next(iter(depths), None)
        for row, depth in depths.items():
            if depth != depths[first]:
                raise PipelineError(f"cells.{row}.en-de.attention.{side}.entropy: {depth} layers; expected "
                                    f"{depths[first]} like cells.{first}")
    return found


def _analysis_footer(facts: dict, figure: str, found: dict[str, dict], what: str) -> list[str]:
    """Paper reference (no numbers printed), the facts, the attention settings, sentences analysed, `what`."""
    s = analysis(facts, "attention", ("sentences", "bins"))
    analysed = ", ".join(f"{LABELS[row]} {a['n_sentences']}" for row, a in found.items()) or "none yet"
    return footer(facts, f"paper: {PAPER}, {figure} (prints no numbers); all numbers are ours, on the En-De test "
                         f"set", EN_DE, extra=[
        f"attention: teacher-forced passes over the first {s['sentences']} test sentences (pairs longer than the "
        f"model's positions left out), {s['bins']} histogram bins",
        f"sentences analysed: {analysed}", what])


def _depth(found: dict[str, dict], side: str) -> int:
    """Number of layers on a side (0 without results)."""
    return next((len(a[side]["entropy"]) for a in found.values()), 0)


@register_layout("zeng2021-fig4", figure=True)
def fig4(cells: dict, facts: dict) -> tuple[Table, Figure]:
    """zeng2021 Figure 4: self-attention entropy (eq. 5) per encoder and decoder layer; rows transf, synr, ran-all."""
    found = _attention(cells)
    rows, panels = [], []
    for side, short in SIDES.items():
        layers = _depth(found, side)
        for layer in range(layers):
            rows.append([short, str(layer + 1)] + [f"{found[row][side]['entropy'][layer]:.3f}" if row in found
                                                   else "" for row in ANALYSIS_ROWS])
        panels.append(("Encoder" if side == "enc" else "Decoder", "layer", [str(i + 1) for i in range(layers)],
                       {LABELS[row]: a[side]["entropy"] for row, a in found.items()}))
    lines = _analysis_footer(facts, "Figure 4", found, "entropy: eq. (5) per attention distribution, averaged over "
                             "time steps, then over the heads of each layer (section 4.1)")
    table = Table(title="zeng2021 Figure 4: attention entropy per layer (En-De), ours",
                  columns=["Side", "Layer", *(LABELS[r] for r in ANALYSIS_ROWS)], rows=rows, footer=lines)
    figure = line_panels(panels, title="zeng2021 Figure 4: attention entropy per layer (En-De), ours",
                         ylabel="attention entropy")
    return table, figure


def shown_layers(layers: int) -> list[int]:
    """1-based layers 1, middle, last (the paper's 1, 3, 6 for six layers), without repeats."""
    return sorted({1, (layers + 1) // 2, layers})


def _bin_label(edges: list[float], i: int) -> str:
    """'[0, 0.1)', the last bin closed: '[0.9, 1]'."""
    close = "]" if i == len(edges) - 2 else ")"
    return f"[{edges[i]:g}, {edges[i + 1]:g}{close}"


@register_layout("zeng2021-fig5", figure=True)
def fig5(cells: dict, facts: dict) -> tuple[Table, Figure]:
    """zeng2021 Figure 5: histograms of attention weights at layers 1, middle, last, per side and model.

    Heights are fractions of the layer's weights per bin (our choice, so models with different counts compare).
    """
    found = _attention(cells)
    rows, grid = [], []
    for side, short in SIDES.items():
        edges = next((a[side]["histogram"]["edges"] for a in found.values()), [0.0, 1.0])
        for row, a in found.items():
            if a[side]["histogram"]["edges"] != edges:
                raise PipelineError(f"cells.{row}.en-de.attention.{side}.histogram.edges: differ from "
                                    f"{LABELS[next(iter(found))]}'s; expected the same bins for every model")
        fractions = {}
        for row, a in found.items():
            counts = a[side]["histogram"]["counts"]
            fractions[row] = [[c / sum(layer) if sum(layer) else None for c in layer] for layer in counts]
        panels = []
        for layer in shown_layers(_depth(found, side)) if found else []:
            for i in range(len(edges) - 1):
                rows.append([short, str(layer), _bin_label(edges, i)] + [
                    _fraction(fractions[row][layer - 1][i]) if row in found else "" for row in ANALYSIS_ROWS])
            panels.append((f"{short} L{layer}", edges,
                           {LABELS[row]: [0.0 if v is None else v for v in f[layer - 1]]
                            for row, f in fractions.items()}))
        grid.append(panels or [(f"{short} (no results)", edges, {})])
    lines = _analysis_footer(facts, "Figure 5", found, "heights: fraction of the layer's self-attention weights (all "
                             "heads, all query positions) in each bin; layers 1, middle and last (the paper: 1, 3, 6)")
    table = Table(title="zeng2021 Figure 5: histograms of attention weights (En-De), ours",
                  columns=["Side", "Layer", "Weight bin", *(LABELS[r] for r in ANALYSIS_ROWS)], rows=rows,
                  footer=lines)
    figure = histogram_grid(grid, title="zeng2021 Figure 5: histograms of attention weights (En-De), ours")
    return table, figure


def _fraction(value: float | None) -> str:
    """Four decimals; 'n/a' for a layer without weights."""
    return "n/a" if value is None else f"{value:.4f}"


@register_layout("zeng2021-fig7", figure=True)
def fig7(cells: dict, facts: dict) -> tuple[Table, Figure]:
    """zeng2021 Figure 7: Jensen-Shannon divergence between the attention of each pair of layers."""
    found = _attention(cells)
    width = max((_depth(found, side) for side in SIDES), default=0)
    rows, grid = [], []
    for row, a in found.items():
        for side, short in SIDES.items():
            js = a[side]["js"]
            for i, values in enumerate(js):
                rows.append([LABELS[row], short, str(i + 1)] + [f"{v:.3f}" for v in values]
                            + [""] * (width - len(values)))
        grid.append([(f"{LABELS[row]}: {name} self-attention", a[side]["js"])
                     for side, name in (("enc", "encoder"), ("dec", "decoder"))])
    lines = _analysis_footer(facts, "Figure 7", found, "cell (i, j): Jensen-Shannon divergence between the attention "
                             "distributions of layers i and j (section 4.3); dark = similar, as in the paper")
    table = Table(title="zeng2021 Figure 7: JS divergence of attention between layers (En-De), ours",
                  columns=["Model", "Side", "Layer", *(f"L{j + 1}" for j in range(width))], rows=rows, footer=lines)
    figure = heatmap_grid(grid or [[None]], title="zeng2021 Figure 7: JS divergence between layers (En-De), ours",
                          cmap="Blues_r", xlabel="layer", ylabel="layer", one_based_ticks=True)
    return table, figure
