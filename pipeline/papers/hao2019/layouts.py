"""hao2019 tables and figures: the paper's rows and numbers beside ours (Tables 1-5, Figure 5, BLEU by length).

Each layout takes the generic cells[row][column] and facts (pipeline/report/cells.py); footer() builds every
footer from the facts. Our control rows (base-cont, big-cont) follow their baseline row: the baseline trained
on for as many steps as the systems fine-tuned from it.
"""
from __future__ import annotations

from matplotlib.figure import Figure

from pipeline.errors import PipelineError
from pipeline.evaluate.length import bin_label
from pipeline.papers.hao2019.reported import (HAO2019_FIG5, HAO2019_TABLE1, HAO2019_TABLE2, HAO2019_TABLE3,
                                              HAO2019_TABLE4, HAO2019_TABLE5, PROBING_GROUPS, PROBING_TASKS)
from pipeline.report.figures import grouped_bars, steps_figure
from pipeline.report.format import (SIGNIFICANCE_FIELDS, analysis, check_cells, check_facts, check_keys,
                                    check_number, check_significance, decimal, format_params, mark, pair_label,
                                    per_column, signature_text, source_bins, splits_text, standin_lines,
                                    stat_test_text)
from pipeline.report.layouts import register_layout
from pipeline.report.reported import Cell, ReportedTable, Row
from pipeline.report.table import Table
from pipeline.scales import embedded_data

PAPER = "Hao et al. (2019)"
THRESHOLDS = [(0.01, "⇑"), (0.05, "↑")]  # the paper's marks; ours only where the system beats its baseline
PAIRS = HAO2019_TABLE3.pairs
EN_DE = ("en-de",)
# baseline row -> (our control row, its label)
CONTROLS = {"base": ("base-cont", "Transformer-Base, continued (control)"),
            "big": ("big-cont", "Transformer-Big, continued (control)")}
NEEDS_PARSED = "needs parsed data"
LENGTH_ROWS = ("base", "base-cont", "biarn")
LENGTH_LABELS = {"base": "Base", "base-cont": "Base, continued (control)", "biarn": "Ours"}  # the paper's legend
BLEU_FACTS = ("scale", "corpora", "test_sets", "signatures")


# ------------------------------------------------------------------ rows and cells
def _rows(table: ReportedTable, controls: bool = True) -> list[tuple[str, Row | None]]:
    """(row id, the paper's row or None for our control) in display order, each control after its baseline."""
    out = []
    for row in table.rows:
        out.append((row.row_id, row))
        if controls and row.row_id in CONTROLS:
            out.append((CONTROLS[row.row_id][0], None))
    return out


def _row_ids(table: ReportedTable, controls: bool = True) -> tuple[str, ...]:
    """The rows we fill: all but the paper's citations of existing systems."""
    return tuple(row_id for row_id, row in _rows(table, controls) if row is None or row.group != "existing")


def _control_label(row_id: str) -> str:
    return next(label for cont, label in CONTROLS.values() if cont == row_id)


def _bleu_check(values: tuple[str, ...]):
    """A cell check: 'bleu' (a number), optionally the other `values`, system and significance fields."""
    def check(cell, where: str, column: str) -> None:
        check_keys(cell, where, ("bleu",), ("system", *values, *SIGNIFICANCE_FIELDS))
        check_number(cell["bleu"], f"{where}.bleu", float, optional=False)
        check_number(cell.get("params"), f"{where}.params", int, optional=True)
        speed = check_number(cell.get("steps_per_s"), f"{where}.steps_per_s", float, optional=True)
        if speed is not None and speed <= 0:
            raise PipelineError(f"{where}.steps_per_s: expected a positive rate, got {speed!r}")
        check_significance(cell, where)
        if "baseline" in cell:
            check_number(cell["baseline"].get("params"), f"{where}.baseline.params", int, optional=True)
    return check


def _cell(cells: dict, row_id: str, column: str = "en-de") -> dict | None:
    """cells[row_id][column], None if we have none."""
    return cells.get(row_id, {}).get(column)


def _our_bleu(cell: dict | None) -> str:
    """Our BLEU with ⇑/↑ where the system is significantly better than its baseline; empty without a result."""
    return "" if cell is None else f"{cell['bleu']:.2f}{mark(cell, THRESHOLDS)}"


def _our_params(cell: dict | None) -> str:
    """Our #Para.: '+X.XM' over the baseline for a row with one, as the paper prints proposed rows."""
    if cell is None:
        return ""
    return format_params(cell.get("params"), cell.get("baseline", {}).get("params"))


def _paper_bleu(cell: Cell | None) -> str:
    """BLEU as printed (with the paper's mark), 'n/a' where it prints none or has no such row."""
    return "n/a" if cell is None or cell.bleu is None else cell.bleu + cell.mark


# ------------------------------------------------------------------ footer (every layout's, from the facts)
def _paper_line(where: str) -> str:
    return f"paper: {PAPER}, {where}; (paper) columns as printed there, (ours) columns from this run"


def footer(facts: dict, first: str, *, columns: tuple[str, ...] = EN_DE, scores: bool = True,
           bleu: str | None = None, against: str | None = None, controls: bool = False,
           extra: list[str] | tuple = ()) -> list[str]:
    """The footer lines: `first`, scale, corpora, then (scores) test sets and the BLEU signature (or `bleu`),
    stand-ins, the significance settings (against: what the marks compare with), the control rows, `extra`."""
    check_facts(facts, ("scale", "corpora") + (("test_sets", "signatures") if scores else ()))
    lines = [first, f"scale: {facts['scale']}", f"corpora: {per_column(facts['corpora'], columns)}"]
    if scores:
        lines += [f"test sets: {splits_text(facts, columns)}",
                  f"BLEU (ours): {bleu or signature_text(facts, 'bleu', columns)}"]
    lines += standin_lines(facts, columns)
    if against is not None and facts.get("significance"):
        lines.append(f"significance (ours): {stat_test_text(facts)}, against {against}; ⇑ p < 0.01, ↑ p < 0.05, "
                     f"only where ours scores higher than its baseline")
    if controls:
        lines.append("continued (control): ours, not in the paper: the baseline trained on for as many extra steps "
                     "as the rows fine-tuned from it, so that every row has trained as long; marked against the "
                     "baseline like the proposed rows")
    return lines + list(extra)


# ------------------------------------------------------------------ Table 3
def columns() -> list[str]:
    """System, Architecture, then per pair: #Para. (paper), #Para. (ours), BLEU (paper), BLEU (ours)."""
    cols = ["System", "Architecture"]
    for pair in PAIRS:
        label = pair_label(pair)
        cols += [f"{label} #Para. (paper)", f"{label} #Para. (ours)", f"{label} BLEU (paper)", f"{label} BLEU (ours)"]
    return cols


@register_layout("hao2019-table3")
def table3(cells: dict, facts: dict) -> Table:
    """hao2019 Table 3 with our numbers: cells[row][pair] = {"bleu", "params", significance fields}.

    Rows: base, base-cont, base+biarn, big, big-cont, big+biarn (the paper's existing systems: its numbers only).
    """
    check_cells(cells, _row_ids(HAO2019_TABLE3), PAIRS, _bleu_check(("params",)))
    rows = []
    for row_id, row in _rows(HAO2019_TABLE3):
        out = [row.system, row.architecture] if row else ["this work", _control_label(row_id)]
        for pair in PAIRS:
            paper = row.cells[pair] if row else None
            cell = _cell(cells, row_id, pair)
            out += [paper.params if paper and paper.params else "n/a", _our_params(cell),
                    _paper_bleu(paper), _our_bleu(cell)]
        rows.append(out)
    lines = footer(facts, _paper_line("Table 3"), columns=PAIRS, against="the same-size Transformer baseline",
                   controls=True,
                   extra=["#Para.: proposed and control rows show the increase over their baseline, as the paper "
                          "prints them"])
    return Table(title="hao2019 Table 3: #Para. and BLEU, paper vs. ours", columns=columns(), rows=rows,
                 footer=lines)


# ------------------------------------------------------------------ Tables 1, 2, 4 (En-De variations)
AGAINST_BASE = "our Transformer-Base (the paper marks none in this table)"


@register_layout("hao2019-table1")
def table1(cells: dict, facts: dict) -> Table:
    """hao2019 Table 1: recurrence encoder implementations; Speed (training steps/s) and BLEU, paper vs ours.

    Rows base, base-cont, birnn-6l, biarn-6l, biarn-3l, biarn-1l; cells need "bleu", may give "steps_per_s".
    """
    check_cells(cells, _row_ids(HAO2019_TABLE1), EN_DE, _bleu_check(("params", "steps_per_s")))
    check_facts(facts, BLEU_FACTS + ("device",))
    rows = []
    for row_id, row in _rows(HAO2019_TABLE1):
        paper, cell = (row.cells["en-de"] if row else None), _cell(cells, row_id)
        label = [row.system, row.architecture] if row else [_control_label(row_id), "n/a"]
        rows.append([*label, paper.speed if paper and paper.speed else "n/a",
                     decimal(cell.get("steps_per_s")) if cell else "", _paper_bleu(paper), _our_bleu(cell)])
    lines = footer(facts, _paper_line("Table 1"), against=AGAINST_BASE, controls=True, extra=[
        f"speed: training steps/second measured by our trainer on {facts['device']} (the paper's on its own GPUs)",
        "recurrence encoder output fed to the top decoder layer by stack fusion, as in the paper"])
    return Table(title="hao2019 Table 1: recurrence encoder implementations (En-De), paper vs. ours",
                 columns=["Model", "Rec. Encoder", "Speed (paper)", "Speed (ours)", "BLEU (paper)", "BLEU (ours)"],
                 rows=rows, footer=lines)


@register_layout("hao2019-table2")
def table2(cells: dict, facts: dict) -> Table:
    """hao2019 Table 2: decoder integration strategies; rows base, base-cont, gated-top, gated-all, stack-*."""
    check_cells(cells, _row_ids(HAO2019_TABLE2), EN_DE, _bleu_check(("params",)))
    rows = []
    for row_id, row in _rows(HAO2019_TABLE2):
        label = [row.system, row.architecture, row.setting] if row else [_control_label(row_id), "n/a", "n/a"]
        rows.append([*label, _paper_bleu(row.cells["en-de"] if row else None), _our_bleu(_cell(cells, row_id))])
    lines = footer(facts, _paper_line("Table 2"), against=AGAINST_BASE, controls=True,
                   extra=["recurrence encoder: 1-Layer BiARN"])
    return Table(title="hao2019 Table 2: decoder integration strategies (En-De), paper vs. ours",
                 columns=["Model", "Integration", "to Dec.", "BLEU (paper)", "BLEU (ours)"], rows=rows, footer=lines)


@register_layout("hao2019-table4")
def table4(cells: dict, facts: dict) -> Table:
    """hao2019 Table 4: re-implemented related work; rows base, base-cont, relpos, disan, rnn-encoder, biarn."""
    check_cells(cells, _row_ids(HAO2019_TABLE4), EN_DE, _bleu_check(("params",)))
    rows = []
    for row_id, row in _rows(HAO2019_TABLE4):
        label = [row.architecture, row.system] if row else [_control_label(row_id), "this work"]
        rows.append([*label, _paper_bleu(row.cells["en-de"] if row else None), _our_bleu(_cell(cells, row_id))])
    lines = footer(facts, _paper_line("Table 4"), against=AGAINST_BASE, controls=True, extra=[
        "RelPos: relative positions (Shaw et al., 2018), clipping k = 16; DiSAN: directional masks "
        "(Shen et al., 2018); RNN Encoder: extra 6-layer RNN encoder, multi-column (Chen et al., 2018)"])
    return Table(title="hao2019 Table 4: comparison with re-implemented related work (En-De), paper vs. ours",
                 columns=["Model", "Reference", "BLEU (paper)", "BLEU (ours)"], rows=rows, footer=lines)


# ------------------------------------------------------------------ Table 5 (probing)
def _check_probing_cell(cell, where: str, column: str) -> None:
    """{"probing": {task: {"test": accuracy in %, ...}}} as pipeline/papers/hao2019/probing.py writes it."""
    check_keys(cell, where, ("probing",), ("system", "bleu", "params", *SIGNIFICANCE_FIELDS))
    probing = cell["probing"]
    if not isinstance(probing, dict):
        raise PipelineError(f"{where}.probing: expected a dict task -> {{'test': accuracy (%), ...}}, got {probing!r}")
    for task, result in probing.items():
        at = f"{where}.probing.{task}"
        if task not in PROBING_TASKS:
            raise PipelineError(f"{at}: unknown probing task; expected one of {', '.join(PROBING_TASKS)}")
        if not isinstance(result, dict) or "test" not in result:
            raise PipelineError(f"{at}: expected a dict with 'test' (test accuracy in %), got {result!r}")
        accuracy = check_number(result["test"], f"{at}.test", float, optional=False)
        if not 0.0 <= accuracy <= 100.0:
            raise PipelineError(f"{at}.test: expected an accuracy in % (0..100), got {accuracy!r}")


def _probing_cell(cell: dict | None, task: str) -> str:
    """Our accuracy; empty without results for the row, NEEDS_PARSED for a task we could not run."""
    if cell is None:
        return ""
    result = cell["probing"].get(task)
    return NEEDS_PARSED if result is None else f"{result['test']:.2f}"


def _probing_text(facts: dict) -> str:
    """How the probing tasks were built and probed, from the table's probing settings."""
    s = analysis(facts, "probing", ("corpus", "max_per_task", "seed", "epochs", "hidden", "lr"))
    data = ("SentEval's probing files" if not embedded_data(facts["scale"]) else
            f"text-only tasks (those that need no parser) built from the source side of corpus {s['corpus']}, "
            f"at most {s['max_per_task']} sentences per task, seed {s['seed']}")
    probe = "a linear classifier" if s["hidden"] == 0 else f"a classifier with {s['hidden']} hidden units"
    return (f"probing: {data}; {probe} on the mean of the top encoder layer (two encoders: gated), at most "
            f"{s['epochs']} epochs, lr {s['lr']}, seed {s['seed']}")


@register_layout("hao2019-table5")
def table5(cells: dict, facts: dict) -> Table:
    """hao2019 Table 5: probing accuracies (%) per task, paper vs ours; rows as Table 1 (no control).

    cells[row]["en-de"]["probing"] = {task: {"test": accuracy}}; a task missing there shows NEEDS_PARSED.
    """
    check_cells(cells, _row_ids(HAO2019_TABLE5, controls=False), EN_DE, _check_probing_cell)
    cols = ["Model", "Rec. Encoder"]
    for task in PROBING_TASKS:
        cols += [f"{task} (paper)", f"{task} (ours)"]
    rows = []
    for row in HAO2019_TABLE5.rows:
        paper, cell = row.cells["en-de"], _cell(cells, row.row_id)
        out = [row.system, row.architecture]
        for task in PROBING_TASKS:
            out += [(paper.probing or {}).get(task, "n/a"), _probing_cell(cell, task)]
        rows.append(out)
    groups = "; ".join(f"{name}: {', '.join(tasks)}" for name, tasks in PROBING_GROUPS)
    lines = footer(facts, _paper_line("Table 5"), scores=False, extra=[
        _probing_text(facts), f"task groups: {groups}",
        f"{NEEDS_PARSED}: the task's labelled sentences come from a parser, which this scale cannot build"])
    return Table(title="hao2019 Table 5: probing accuracy (%) of the encoders (En-De models), paper vs. ours",
                 columns=cols, rows=rows, footer=lines)


# ------------------------------------------------------------------ Figure 5
@register_layout("hao2019-fig5", figure=True)
def fig5(cells: dict, facts: dict) -> tuple[Table, Figure]:
    """hao2019 Figure 5: BLEU vs recurrent steps T (1, 4, 8, 16, J) of a 1-layer BiARN, with the base lines.

    Rows base, base-cont, steps-1, steps-4, steps-8, steps-16, steps-J; the control is a dotted line.
    """
    check_cells(cells, _row_ids(HAO2019_FIG5), EN_DE, _bleu_check(("params",)))
    rows = [[row.architecture if row else _control_label(row_id), _paper_bleu(row.cells["en-de"] if row else None),
             _our_bleu(_cell(cells, row_id))] for row_id, row in _rows(HAO2019_FIG5)]
    lines = footer(facts, _paper_line("Figure 5 (values printed on the figure)"), against=AGAINST_BASE,
                   controls=True, extra=["recurrence encoder: 1-Layer BiARN, stack fusion into the top decoder "
                                         "layer; T = J: as many steps as source tokens"])
    table = Table(title="hao2019 Figure 5: BLEU vs recurrent steps (En-De), paper vs. ours",
                  columns=["Recurrent steps", "BLEU (paper)", "BLEU (ours)"], rows=rows, footer=lines)

    def ours(row_id):
        cell = _cell(cells, row_id)
        return None if cell is None else cell["bleu"]

    steps = HAO2019_FIG5.rows[1:]
    figure = steps_figure([r.architecture.removeprefix("T = ") for r in steps],
                          [r.cells["en-de"].bleu_value for r in steps], [ours(r.row_id) for r in steps],
                          HAO2019_FIG5.row("base").cells["en-de"].bleu_value, ours("base"),
                          title="hao2019 Figure 5: effect of recurrent steps (En-De)", ours_control=ours("base-cont"))
    return table, figure


# ------------------------------------------------------------------ BLEU by source length (section 5.4)
def _length_bins(cells: dict, facts: dict) -> tuple[list[str], dict[str, list[dict]]]:
    """(bin labels, row -> checked bins); every row the same bins and sentence counts."""
    check_cells(cells, LENGTH_ROWS, EN_DE, source_bins)
    found = {row: source_bins(c, f"cells.{row}.en-de", "en-de") for row in LENGTH_ROWS if (c := _cell(cells, row))}
    first = next(iter(found), None)
    for row, bins in found.items():
        if [b["bin"] for b in bins] != [b["bin"] for b in found[first]]:
            raise PipelineError(f"cells.{row}.en-de.length: bins {[b['bin'] for b in bins]} differ from "
                                f"cells.{first}'s; expected the same bins for every row")
        if [b["n"] for b in bins] != [b["n"] for b in found[first]]:
            raise PipelineError(f"cells.{row}.en-de.length: sentence counts {[b['n'] for b in bins]} differ from "
                                f"cells.{first}'s; expected the same test set for every row")
    if first is not None:
        return [b["bin"] for b in found[first]], found
    settings = analysis(facts, "length", ("bins",))
    return [bin_label(lo, hi) for lo, hi in settings["bins"]], found


@register_layout("hao2019-length", figure=True)
def length_figure(cells: dict, facts: dict) -> tuple[Table, Figure]:
    """BLEU by source length (section 5.4; the paper prints no numbers): Base, its control and 1-layer BiARN.

    cells[row]["en-de"]["length"] = {"source": bleu_by_length(...)}; rows base, base-cont, biarn.
    """
    labels, found = _length_bins(cells, facts)
    bleu = {row: [b["bleu"] for b in found[row]] if row in found else [None] * len(labels) for row in LENGTH_ROWS}
    counts = next(([str(b["n"]) for b in bins] for bins in found.values()), [""] * len(labels))

    def shown(row, i):
        return "n/a" if row in found and bleu[row][i] is None else decimal(bleu[row][i])

    def delta(row, i):
        ours, other = bleu["biarn"][i], bleu[row][i]
        return "" if ours is None or other is None else f"{ours - other:+.2f}"

    rows = [[label, counts[i], *(shown(row, i) for row in LENGTH_ROWS), delta("base", i), delta("base-cont", i)]
            for i, label in enumerate(labels)]
    first = ("paper: Hao et al. (2019), section 5.4, BLEU by source length; the paper prints no numbers for it, "
             "so all columns are ours")
    lines = footer(facts, first, bleu="corpus sacreBLEU of each bin's sentences, the target language's tokenizer",
                   controls=True, extra=["Ours: Transformer-Base + 1-Layer BiARN (stack fusion, top decoder layer)",
                                         "bins: source length in whitespace tokens of the tokenised source; n/a: no "
                                         "sentences in the bin"])
    table = Table(title="hao2019 BLEU by source length (En-De), ours",
                  columns=["Source length", "Sentences", *(f"BLEU {LENGTH_LABELS[r]}" for r in LENGTH_ROWS),
                           "Delta BLEU (Ours - Base)", "Delta BLEU (Ours - control)"],
                  rows=rows, footer=lines)
    figure = grouped_bars(labels, {LENGTH_LABELS[r]: bleu[r] for r in LENGTH_ROWS if r in found},
                          title="hao2019: BLEU by source length (En-De), ours", xlabel="Length of source sentence")
    return table, figure
