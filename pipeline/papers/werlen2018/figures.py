"""werlen2018 Figures 2-4 (and Algorithm 1's trees) from the previous_words analysis (pipeline/evaluate/
previous_words.py): the relative position of the most attended previous word, one sentence's attention matrix
per model, and the binary trees Algorithm 1 builds from the self-attentive residual model's attention.
"""
from __future__ import annotations

from matplotlib import rc_context
from matplotlib.figure import Figure

from pipeline.errors import PipelineError
from pipeline.report.figures import STYLE, heatmap_grid, line_panels
from pipeline.report.format import check_cells, check_facts, per_column
from pipeline.report.layouts import register_layout
from pipeline.report.table import Table
from pipeline.scales import embedded_data

PAPER = "Miculicich Werlen et al. (2018)"
ROWS = ("memory", "self-rnn", "self-attentive")  # the paper's panels (a), (b), (c)
LABELS = {"memory": "Memory RNN", "self-rnn": "Self-attentive RNN", "self-attentive": "Self-attentive residual"}
COLUMN = "es-en"  # 8.1: Spanish-to-English
TREES_ROW = "self-attentive"


def _check(cell, where: str, column: str) -> None:
    if not isinstance(cell.get("previous_words"), dict):
        raise PipelineError(f"{where}: expected the previous_words analysis, got keys {sorted(cell)}")
    for key in ("fig2", "fig3", "fig4", "n_sentences", "max_distance"):
        if key not in cell["previous_words"]:
            raise PipelineError(f"{where}.previous_words: missing '{key}'")
    for key in ("fig2", "fig3"):
        if cell["previous_words"][key] is None:
            raise PipelineError(f"{where}.previous_words.{key}: None (the model has no attention to previous "
                                "words); expected a system with previous-word attention")


def _require(cells: dict, rows: tuple[str, ...]) -> None:
    """Every row's Es-En cell is there (the figure compares them), with the same relative positions (Figure 2)."""
    for row in rows:
        if COLUMN not in cells.get(row, {}):
            raise PipelineError(f"cells.{row}.{COLUMN}: missing; expected the previous_words analysis of "
                                f"{', '.join(rows)}")
    distance = cells[rows[0]][COLUMN]["previous_words"]["fig2"]["distance"]
    for row in rows:
        fig2 = cells[row][COLUMN]["previous_words"]["fig2"]
        if fig2["distance"] != distance or len(fig2["shares"]) != len(distance):
            raise PipelineError(f"cells.{row}.{COLUMN}.previous_words.fig2: {len(fig2['shares'])} shares at "
                                f"positions {fig2['distance']}; expected one share at each of {distance} (the "
                                f"same max_distance for every model)")


def _analysis(cells: dict, row: str) -> dict:
    return cells[row][COLUMN]["previous_words"]


def _lines(facts: dict, figure: str, cells: dict, rows: tuple[str, ...]) -> list[str]:
    check_facts(facts, ("scale", "corpora", "test_sets"))
    n = {_analysis(cells, r)["n_sentences"] for r in rows}
    lines = [f"paper: {PAPER}, {figure}; ours from this run (the paper's figure is not transcribed: its values are "
             f"not printed)", f"scale: {facts['scale']}", f"corpora: {per_column(facts['corpora'], (COLUMN,))}",
             f"attention: teacher-forced on the first {'/'.join(str(k) for k in sorted(n))} references of the test "
             f"set ({facts['test_sets'].get(COLUMN, 'test')}), our choice (the paper does not say)"]
    if embedded_data(facts["scale"]):
        models = "small models" if facts["scale"] == "tiny" else "the paper's models after a few hundred updates"
        lines.append(f"{facts['scale']} scale: {models} on software-localisation strings (short sentences): the "
                     "distances are short and the structures shallow; the figures show the method, not the paper's "
                     "findings")
    return lines


# ------------------------------------------------------------------ Figure 2
@register_layout("werlen2018-fig2", figure=True)
def fig2(cells: dict, facts: dict) -> tuple[Table, Figure]:
    """Figure 2: per relative position -1..-D, the share of predictions whose most attended previous word is there
    (normalised by the predictions that had a word that far back: previous_words.relative_position_shares)."""
    check_cells(cells, ROWS, (COLUMN,), _check)
    _require(cells, ROWS)
    shares = {r: _analysis(cells, r)["fig2"]["shares"] for r in ROWS}
    distance = _analysis(cells, ROWS[0])["fig2"]["distance"]
    rows = [[str(d)] + ["" if shares[r][i] is None else f"{100 * shares[r][i]:.1f}" for r in ROWS]
            for i, d in enumerate(distance)]
    figure = line_panels([("Es-En", "relative position", [str(d) for d in distance],
                           {LABELS[r]: [None if v is None else 100 * v for v in shares[r]] for r in ROWS})],
                         title="werlen2018 Figure 2: words receiving maximum attention by relative position (ours)",
                         ylabel="% of predictions")
    lines = _lines(facts, "Figure 2", cells, ROWS) + [
        "share at position -d: predictions whose most attended previous word is d words back, over the predictions "
        "that had at least d previous words (our reading of 8.1's normalisation; ties to the leftmost word)"]
    table = Table(title="werlen2018 Figure 2: % of predictions with maximum attention at each relative position",
                  columns=["relative position"] + [f"{LABELS[r]} (ours)" for r in ROWS], rows=rows, footer=lines)
    return table, figure


# ------------------------------------------------------------------ Figure 3
@register_layout("werlen2018-fig3", figure=True)
def fig3(cells: dict, facts: dict) -> tuple[Table, Figure]:
    """Figure 3: one sentence's attention to the previous words, per model (rows: the word predicted; columns: the
    previous words, <s> the zero vector y_0 or the state s_0)."""
    check_cells(cells, ROWS, (COLUMN,), _check)
    _require(cells, ROWS)
    panels = {r: _analysis(cells, r)["fig3"] for r in ROWS}
    first = panels[ROWS[0]]
    out = []
    for r in ROWS:
        for word, weights in zip(panels[r]["rows"], panels[r]["matrix"]):
            out.append([LABELS[r], word] + [f"{w:.3f}" for w in weights])
    columns = ["model", "predicted word"] + [f"{j}:{w}" for j, w in enumerate(first["columns"])]
    figure = heatmap_grid([[(f"({'abc'[k]}) {LABELS[r]}", panels[r]["matrix"]) for k, r in enumerate(ROWS)]],
                          title=f"werlen2018 Figure 3: attention to previous words, test sentence "
                                f"{first['sentence'] + 1} (ours)", cmap="Greys",
                          xlabel="previous word (0 = <s>)", ylabel="predicted word")
    lines = _lines(facts, "Figure 3", cells, ROWS) + [
        f"sentence {first['sentence'] + 1}: {' '.join(first['columns'][1:])}"]
    return Table(title="werlen2018 Figure 3: attention weights to previous words, one sentence", columns=columns,
                 rows=out, footer=lines), figure


# ------------------------------------------------------------------ Figure 4 and Algorithm 1
def parse_brackets(text: str) -> list | str:
    """An unlabelled bracket string '((a b) (c d))' -> nested lists of leaves; a bare word stays a string."""
    tokens = text.replace("(", " ( ").replace(")", " ) ").split()
    stack: list[list] = [[]]
    for token in tokens:
        if token == "(":
            stack.append([])
        elif token == ")":
            if len(stack) < 2:
                raise PipelineError(f"tree {text!r}: unbalanced ')'")
            node = stack.pop()
            stack[-1].append(node)
        else:
            stack[-1].append(token)
    if len(stack) != 1 or len(stack[0]) != 1:
        raise PipelineError(f"tree {text!r}: expected one bracketed tree")
    return stack[0][0]


def _draw(ax, tree, x0: float, depth: int, max_depth: int) -> tuple[float, float]:
    """Draw `tree` with its leaves from x0 on; returns (x of its root, x after its last leaf)."""
    y = max_depth - depth
    if isinstance(tree, str):
        ax.text(x0, 0, tree, rotation=45, ha="right", va="top", fontsize=8)
        return x0, x0 + 1
    xs, x = [], x0
    for child in tree:
        child_x, x = _draw(ax, child, x, depth + 1, max_depth)
        xs.append((child_x, 0 if isinstance(child, str) else max_depth - depth - 1))
    root = sum(cx for cx, _ in xs) / len(xs)
    for cx, cy in xs:
        ax.plot([root, cx], [y, cy], color="black", linewidth=0.8)
    return root, x


def _depth(tree) -> int:
    return 0 if isinstance(tree, str) else 1 + max(_depth(c) for c in tree)


def tree_figure(trees: list[tuple[str, str]], title: str) -> Figure:
    """One panel per (subtitle, bracket string): the binary tree drawn with its words along the bottom."""
    with rc_context(STYLE):
        fig = Figure(figsize=(6.0, 3.0 * max(len(trees), 1)), dpi=STYLE["figure.dpi"])
        axes = fig.subplots(max(len(trees), 1), 1, squeeze=False)
        for (subtitle, text), ax in zip(trees, (row[0] for row in axes)):
            tree = parse_brackets(text)
            _draw(ax, tree, 0.0, 0, _depth(tree))
            ax.set_title(subtitle, fontsize="small")
            ax.set_axis_off()
        fig.suptitle(title, fontsize="medium", wrap=True)
        fig.tight_layout()
    return fig


@register_layout("werlen2018-fig4", figure=True)
def fig4(cells: dict, facts: dict) -> tuple[Table, Figure]:
    """Figure 4 and Algorithm 1: binary trees from the self-attentive residual model's attention to the previous
    words, and their unlabelled bracketing precision/recall against gold parses where given."""
    check_cells(cells, (TREES_ROW,), (COLUMN,), _check)
    _require(cells, (TREES_ROW,))
    result = _analysis(cells, TREES_ROW)
    trees = [t for t in result["fig4"] or [] if t["tree"]]
    rows = [[str(t["sentence"] + 1), t["tree"]] for t in trees]
    lines = _lines(facts, "Figure 4 and Algorithm 1", cells, (TREES_ROW,)) + [
        "Algorithm 1 (our reading of its loop): a phrase ends where the most attended previous word changes; the "
        "rest of the sentence is split the same way, giving a right-nested binary tree of phrases"]
    parseval = result.get("parseval")
    if parseval:
        for name, label in (("algorithm1", "Algorithm 1"), ("right_branching", "right-branching baseline")):
            s = parseval[name]
            rows.append([label, f"precision {s['precision']:.2f}, recall {s['recall']:.2f} "
                                f"(paper: Algorithm 1 precision 0.56, right-branching 0.45)"])
    else:
        lines.append("no gold parses given (analyses.previous_words.parses): the paper's ParsEval precision (0.56 "
                     "against 0.45 for right-branching trees, Stanford parser) needs parses of the test references "
                     "in their subword tokens; none can be made offline here")
    figure = tree_figure([(f"sentence {t['sentence'] + 1}", t["tree"]) for t in trees],
                         title="werlen2018 Figure 4: trees from attention to previous words (ours)")
    return Table(title="werlen2018 Figure 4 and Algorithm 1: binary trees from the attention to previous words",
                 columns=["sentence", "tree"], rows=rows, footer=lines), figure
