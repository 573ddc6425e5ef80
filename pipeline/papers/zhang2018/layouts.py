"""zhang2018 tables: the paper's rows and numbers beside ours (Tables 1-4; Figures 3-4: figures.py).

Each layout takes the generic cells[row][column] and facts (pipeline/report/cells.py). Rows the paper cites from
other work (VRNMT, BiRNN+GCN) show its numbers only; "Average" is the mean over the test sets, ours as theirs.
"""
from __future__ import annotations

from pipeline.errors import PipelineError
from pipeline.papers.zhang2018.reported import (CITED, LABELS, ZHANG2018_EXTRA_PARAMS, ZHANG2018_MARKS, ZHANG2018_STARS,
                                                ZHANG2018_TABLE1, ZHANG2018_TABLE2, ZHANG2018_TABLE3, ZHANG2018_TABLE4)
from pipeline.report.format import (SIGNIFICANCE_FIELDS, check_cells, check_facts, check_keys, check_number,
                                    check_significance, format_params, mark, per_column, signature_text, splits_text,
                                    stat_test_text, training_words)
from pipeline.report.layouts import register_layout
from pipeline.report.reported import ReportedTable
from pipeline.report.table import Table
from pipeline.scales import embedded_data

PAPER = "Zhang et al. (2018)"
COLUMN_LABELS = {"mt03": "MT03", "mt04": "MT04", "mt05": "MT05", "mt06": "MT06", "test15": "test15",
                 "test16": "test16", "test17": "test17", "average": "Average", "align": "alignment set"}
CASE_INSENSITIVE = "case-insensitive 4-gram BLEU (multi-bleu.perl -lc) on tokenised text, every reference"
CASE_SENSITIVE = "case-sensitive 4-gram BLEU (multi-bleu.perl) on tokenised text"


def label(column: str) -> str:
    return COLUMN_LABELS.get(column, column)


def _check_bleu(cell, where: str, column: str) -> None:
    check_keys(cell, where, ("bleu",), ("system", "params", *SIGNIFICANCE_FIELDS))
    check_number(cell["bleu"], f"{where}.bleu", float, optional=False)
    check_number(cell.get("params"), f"{where}.params", int, optional=True)
    check_significance(cell, where)


def footer(facts: dict, table: str, columns: tuple[str, ...], metric: str, extra: list[str] | tuple = (),
           catalogue: bool = True) -> list[str]:
    """Paper, scale, corpora, test sets, the BLEU signature, what the embedded data stand in for (`catalogue`: an
    embedded catalogue), then `extra`."""
    check_facts(facts, ("scale", "corpora", "test_sets", "signatures"))
    lines = [f"paper: {PAPER}, {table}; (paper) columns as printed there, (ours) columns from this run",
             f"scale: {facts['scale']}", f"corpora: {per_column(facts['corpora'], columns, label, collapse=True)}",
             f"test sets: {splits_text(facts, columns, label)}",
             f"BLEU (ours): {metric}; {signature_text(facts, 'bleu', columns, label)}"]
    scale = facts["scale"]
    standin = (f"{scale} scale: the embedded software-localisation catalogue of the same direction stands in for the "
               f"paper's corpus, {training_words(scale)} (params/zhang2018.yaml)")
    if embedded_data(scale) and catalogue and len(columns) > 1:
        lines.append(f"{standin}; {', '.join(label(c) for c in columns)} are consecutive parts of its one held-out "
                     "test split, with one reference each (labelled stand-ins)")
    elif embedded_data(scale) and catalogue:
        lines.append(standin)
    return lines + list(extra)


def _ours_bleu(cells: dict, row: str, column: str) -> str:
    cell = cells.get(row, {}).get(column)
    return "" if cell is None else f"{cell['bleu']:.2f}{mark(cell, ZHANG2018_MARKS)}"


def _average(cells: dict, row: str, columns: tuple[str, ...]) -> str:
    """The mean of our BLEU over the test sets, '' unless every one is there."""
    found = [cells.get(row, {}).get(c) for c in columns]
    return "" if any(c is None for c in found) else f"{sum(c['bleu'] for c in found) / len(found):.2f}"


def _bleu_table(table: ReportedTable, cells: dict) -> tuple[list[str], list[list[str]], tuple[str, ...]]:
    """Columns, rows and our row ids: per test set and the average, BLEU (paper) with its '*' and BLEU (ours)."""
    tests = tuple(c for c in table.pairs if c != "average")
    ours = tuple(row.row_id for row in table.rows if row.row_id not in CITED)
    check_cells(cells, ours, tests, _check_bleu)
    stars = ZHANG2018_STARS.get(table.table, {})
    rows = []
    for row in table.rows:
        out = [row.system]
        for col in table.pairs:
            printed = row.cells[col].bleu + ("*" if col in stars.get(row.row_id, ()) else "")
            ours_text = "" if row.row_id in CITED else (_average(cells, row.row_id, tests) if col == "average"
                                                        else _ours_bleu(cells, row.row_id, col))
            out += [printed, ours_text]
        rows.append(out)
    columns = ["Systems"] + [f"{label(c)} {side}" for c in table.pairs for side in ("(paper)", "(ours)")]
    return columns, rows, ours


def _params_line(cells: dict, ours: tuple[str, ...], tests: tuple[str, ...]) -> str:
    """'|Θ| (ours): RNNsearch 1.2M, ...; RNMT - RNNsearch* = +0.1M (paper: +4.1M)'."""
    sizes = {row: next((c.get("params") for c in cells.get(row, {}).values() if c.get("params")), None)
             for row in ours}
    text = ", ".join(f"{LABELS[row]} {format_params(n)}" for row, n in sizes.items() if n)
    if sizes.get("rnmt") and sizes.get("rnnsearch-star"):
        text += (f"; RNMT - RNNsearch* = {format_params(sizes['rnmt'], sizes['rnnsearch-star'])} "
                 f"(paper, En-De: {ZHANG2018_EXTRA_PARAMS}; ours at paper scale in the README)")
    return f"|Θ| (ours): {text or 'no results yet'}"


def _significance_line(facts: dict) -> list[str]:
    if not facts.get("significance"):
        return []
    return [f"significance (ours): {stat_test_text(facts)}, one-tailed: per sentence, the "
            "sign of the change of corpus BLEU when RNNsearch*'s translation of that sentence is replaced by RNMT's; "
            "* p < 0.01 against RNNsearch*, only where ours scores higher (the paper: * p < 0.01, the same test)"]


# ------------------------------------------------------------------ Tables 1-3
@register_layout("zhang2018-table1")
def table1(cells: dict, facts: dict) -> Table:
    """Table 1: NIST Zh-En MT03-MT06 and their average; VRNMT as printed."""
    columns, rows, ours = _bleu_table(ZHANG2018_TABLE1, cells)
    tests = ZHANG2018_TABLE1.pairs[:-1]
    lines = footer(facts, "Table 1", tests, CASE_INSENSITIVE, extra=[
        *_significance_line(facts), _params_line(cells, ours, tests),
        "VRNMT (Su et al., 2018): as printed (not rebuilt)"])
    return Table(title="zhang2018 Table 1: case-insensitive BLEU, NIST Zh-En, paper vs. ours", columns=columns,
                 rows=rows, footer=lines)


@register_layout("zhang2018-table2")
def table2(cells: dict, facts: dict) -> Table:
    """Table 2: WMT17 En-De newstest2015-2017 and their average."""
    columns, rows, ours = _bleu_table(ZHANG2018_TABLE2, cells)
    tests = ZHANG2018_TABLE2.pairs[:-1]
    lines = footer(facts, "Table 2", tests, CASE_INSENSITIVE,
                   extra=[*_significance_line(facts), _params_line(cells, ours, tests)])
    return Table(title="zhang2018 Table 2: case-insensitive BLEU, WMT17 En-De, paper vs. ours", columns=columns,
                 rows=rows, footer=lines)


@register_layout("zhang2018-table3")
def table3(cells: dict, facts: dict) -> Table:
    """Table 3: WMT16 En-De newstest2016 as Bastings et al. (2017); BiRNN+GCN as printed."""
    columns, rows, _ = _bleu_table(ZHANG2018_TABLE3, cells)
    lines = footer(facts, "Table 3", ZHANG2018_TABLE3.pairs, CASE_SENSITIVE,
                   extra=["BiRNN+GCN (Bastings et al., 2017): as printed (not rebuilt)"])
    return Table(title="zhang2018 Table 3: case-sensitive BLEU, WMT16 En-De newstest2016, paper vs. ours",
                 columns=columns, rows=rows, footer=lines)


# ------------------------------------------------------------------ Table 4
def _check_alignment(cell, where: str, column: str) -> None:
    check_keys(cell, where, ("bleu", "alignment"), ("system",))
    check_number(cell["bleu"], f"{where}.bleu", float, optional=False)
    for key in ("aer", "precision", "recall", "sentences"):
        if key not in (cell["alignment"] or {}):
            raise PipelineError(f"{where}.alignment: missing '{key}'")


def alignment_lines(facts: dict) -> list[str]:
    """What the alignment set is at this scale, and how links are read from the attention."""
    lines = ["links (ours): each target word linked to the source word of its largest attention weight (5.5), "
             "teacher-forced on the reference translations (our choice: the gold links name reference words); "
             "subword weights summed over a source word's units and averaged over a target word's (our choice); "
             "AER, precision and recall over sure (S) and possible (P) gold links (Och and Ney 2003)"]
    if embedded_data(facts["scale"]):
        lines.append(f"{facts['scale']} scale: STAND-IN for Liu and Sun (2015)'s 900 Zh-En pairs: the synthetic "
                     "reordering grammar (toy-reorder), whose gold links are known by construction (content words "
                     "sure, case particles possible to their noun); the models of this table are trained on it")
    return lines


@register_layout("zhang2018-table4")
def table4(cells: dict, facts: dict) -> Table:
    """Table 4: BLEU and AER of RNNsearch* and RNMT on the alignment set."""
    ours = tuple(ZHANG2018_TABLE4)
    check_cells(cells, ours, ("align",), _check_alignment)
    rows = []
    for row_id, (bleu, aer) in ZHANG2018_TABLE4.items():
        cell = cells.get(row_id, {}).get("align")
        found = cell is not None
        rows.append([LABELS[row_id], bleu, f"{cell['bleu']:.2f}" if found else "", aer,
                     f"{100 * cell['alignment']['aer']:.2f}" if found else "",
                     f"{100 * cell['alignment']['precision']:.2f}" if found else "",
                     f"{100 * cell['alignment']['recall']:.2f}" if found else ""])
    metric = CASE_SENSITIVE if embedded_data(facts["scale"]) else CASE_INSENSITIVE   # the params' values.bleu
    lines = footer(facts, "Table 4", ("align",), metric, extra=alignment_lines(facts), catalogue=False)
    return Table(title="zhang2018 Table 4: BLEU and alignment error rate, paper vs. ours",
                 columns=["Systems", "BLEU (paper)", "BLEU (ours)", "AER (paper)", "AER (ours)", "precision (ours)",
                          "recall (ours)"], rows=rows, footer=lines)
