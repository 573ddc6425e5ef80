"""zhang2018 Figures 3-4: BLEU by source length on MT03 (RNNsearch* vs RNMT) and the attention of two sentences with
the gold alignment links marked (the length and alignment analyses)."""
from __future__ import annotations

from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from pipeline.errors import PipelineError
from pipeline.papers.zhang2018.layouts import PAPER, alignment_lines, label
from pipeline.papers.zhang2018.reported import LABELS
from pipeline.report.figures import STYLE, line_panels
from pipeline.report.format import check_cells, check_facts, check_keys, decimal, per_column, source_bins
from pipeline.report.layouts import register_layout
from pipeline.report.table import Table
from pipeline.scales import embedded_data

ROWS = ("rnnsearch-star", "rnmt")  # the paper's (a) and (b)


# ------------------------------------------------------------------ Figure 3
def _bleu(value: float | None) -> str:
    return "n/a" if value is None else decimal(value)


@register_layout("zhang2018-fig3", figure=True)
def fig3(cells: dict, facts: dict) -> tuple[Table, Figure]:
    """Figure 3: BLEU of RNNsearch* and RNMT by source-length bin on MT03 (the paper prints no numbers)."""
    check_cells(cells, ROWS, ("mt03",), source_bins)
    found = {row: source_bins(cells[row]["mt03"], f"cells.{row}.mt03") for row in ROWS if "mt03" in cells.get(row, {})}
    if not found:
        raise PipelineError(f"cells: no length analysis of {' or '.join(ROWS)} on mt03; expected at least one")
    labels = [b["bin"] for b in next(iter(found.values()))]
    for row, bins in found.items():
        if [(b["bin"], b["n"]) for b in bins] != [(b["bin"], b["n"]) for b in next(iter(found.values()))]:
            raise PipelineError(f"cells.{row}.mt03.length: bins or sentence counts differ between the rows; "
                                "expected the same bins of the same test set")
    bleu = {row: [b["bleu"] for b in bins] for row, bins in found.items()}
    counts = [b["n"] for b in next(iter(found.values()))]
    rows = [[text, str(counts[i]), *(_bleu(bleu[r][i]) if r in bleu else "" for r in ROWS)]
            for i, text in enumerate(labels)]
    check_facts(facts, ("scale", "corpora", "test_sets"))
    lines = [f"paper: {PAPER}, Figure 3 (5.4); the paper prints no numbers for it, so all columns are ours",
             f"scale: {facts['scale']}", f"corpus: {per_column(facts['corpora'], ('mt03',), label)}, test set "
             f"{facts['test_sets'].get('mt03', 'test')}",
             "bins: source length in words of the tokenised source, (lo, hi]; BLEU: the case-insensitive BLEU of the "
             "tables over each bin's sentences (their per-sentence statistics summed, every reference)"]
    if embedded_data(facts["scale"]):
        lines.append(f"{facts['scale']} scale: the embedded Zh-En catalogue's short strings stand in for MT03; the "
                     "bins are shorter than the paper's accordingly (params/zhang2018.yaml)")
    table = Table(title="zhang2018 Figure 3: BLEU by source length on MT03, ours",
                  columns=["Source length", "Sentences", *(f"BLEU {LABELS[r]} (ours)" for r in ROWS)], rows=rows,
                  footer=lines)
    figure = line_panels([("MT03", "length of source sentence", labels,
                           {LABELS[r]: bleu[r] for r in ROWS if r in bleu})],
                         title="zhang2018 Figure 3: BLEU by source length (ours)", ylabel="BLEU")
    return table, figure


# ------------------------------------------------------------------ Figure 4
def _check_shown(cell, where: str, column: str) -> None:
    check_keys(cell, where, ("alignment",), ("system",))
    shown = (cell["alignment"] or {}).get("shown")
    if not isinstance(shown, list) or not shown:
        raise PipelineError(f"{where}.alignment.shown: expected the chosen sentences' word attention, got {shown!r}")
    for k, item in enumerate(shown):
        check_keys(item, f"{where}.alignment.shown[{k}]",
                   ("index", "source", "target", "attention", "sure", "possible", "predicted"))
        matrix = item["attention"]
        if len(matrix) != len(item["target"]) or any(len(r) != len(item["source"]) for r in matrix):
            raise PipelineError(f"{where}.alignment.shown[{k}].attention: expected {len(item['target'])} rows of "
                                f"{len(item['source'])} weights (target x source words)")


def alignment_figure(panels: list[tuple[str, dict]], title: str) -> Figure:
    """One heatmap per (subtitle, shown sentence): target words down, source words across; gold sure links boxed
    solid, possible links dashed."""
    with rc_context(STYLE):
        n_cols = 2
        n_rows = (len(panels) + n_cols - 1) // n_cols
        fig = Figure(figsize=(5.0 * n_cols, 4.5 * n_rows), dpi=STYLE["figure.dpi"])
        axes = fig.subplots(n_rows, n_cols, squeeze=False)
        for k, ax in enumerate(ax for row in axes for ax in row):
            if k >= len(panels):
                ax.set_axis_off()
                continue
            subtitle, item = panels[k]
            ax.imshow(item["attention"], cmap="Greys", vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
            sure = {tuple(link) for link in item["sure"]}
            for i, j in sorted({tuple(link) for link in item["possible"]} | sure):
                ax.add_patch(Rectangle((i - 0.5, j - 0.5), 1, 1, fill=False, edgecolor="tab:green", linewidth=1.5,
                                       linestyle="-" if (i, j) in sure else "--"))
            ax.set_xticks(range(len(item["source"])), item["source"], rotation=90, fontsize="small")
            ax.set_yticks(range(len(item["target"])), item["target"], fontsize="small")
            ax.set_title(subtitle, fontsize="small")
        fig.suptitle(title, fontsize="medium", wrap=True)
        fig.tight_layout()
    return fig


@register_layout("zhang2018-fig4", figure=True)
def fig4(cells: dict, facts: dict) -> tuple[Table, Figure]:
    """Figure 4: word attention of RNNsearch* and RNMT on the chosen sentences, gold links marked; the table lists
    each model's argmax links against the gold ones."""
    check_cells(cells, ROWS, ("align",), _check_shown)
    check_facts(facts, ("scale", "corpora", "test_sets"))
    panels, rows = [], []
    for row in ROWS:
        cell = cells.get(row, {}).get("align")
        for item in [] if cell is None else cell["alignment"]["shown"]:
            panels.append((f"{LABELS[row]}, sentence {item['index']}", item))
            gold = {tuple(link) for link in item["sure"]} | {tuple(link) for link in item["possible"]}
            hits = sum(tuple(link) in gold for link in item["predicted"])
            rows.append([LABELS[row], str(item["index"]), " ".join(item["source"]), " ".join(item["target"]),
                         " ".join(f"{i}-{j}" for i, j in item["predicted"]), f"{hits}/{len(item['predicted'])}"])
    lines = [f"paper: {PAPER}, Figure 4 (5.5); the paper's sentences are not printed as data, so all rows are ours",
             f"scale: {facts['scale']}", f"corpus: {per_column(facts['corpora'], ('align',), label)}, test set "
             f"{facts['test_sets'].get('align', 'test')}",
             "links i-j: source word i, target word j (0-based); boxes in the figure: gold sure links solid, possible "
             "dashed", *alignment_lines(facts)]
    table = Table(title="zhang2018 Figure 4: attention argmax links of two sentences against gold, ours",
                  columns=["Model", "sentence", "source", "target", "links (ours)", "in gold"], rows=rows,
                  footer=lines)
    return table, alignment_figure(panels, "zhang2018 Figure 4: word attention, gold links boxed (ours)")
