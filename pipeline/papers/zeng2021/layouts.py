"""zeng2021 tables: the paper's numbers beside ours (Tables 1-4), and what every zeng2021 layout shares (labels,
cell checks, the footer); the figures are in figures.py (Figures 3, 6, 8) and attention_figures.py (Figures 4, 5, 7).

Each layout takes the generic cells[row][column] and facts (pipeline/report/cells.py); footer() builds every
footer from the facts.
"""
from __future__ import annotations

import math
from typing import Callable

from pipeline.errors import PipelineError
from pipeline.evaluate.rouge import meteor_unavailable_reason
from pipeline.papers.zeng2021.reported import (ZENG2021_DAGGER, ZENG2021_PAIRS, ZENG2021_SYSTEMS, ZENG2021_TABLE1_BLEU,
                                               ZENG2021_TABLE1_DAGGERS, ZENG2021_TABLE1_PRINTED_DELTAS,
                                               ZENG2021_TABLE1_SACREBLEU, ZENG2021_TABLE2_BLEU,
                                               ZENG2021_TABLE2_SACREBLEU, ZENG2021_TABLE3_BLEU,
                                               ZENG2021_TABLE3_SACREBLEU, ZENG2021_TABLE4_DIALOGUE,
                                               ZENG2021_TABLE4_SUMMARIZATION)
from pipeline.report.format import (SIGNIFICANCE_FIELDS, check_cells, check_facts, check_keys, check_number,
                                    check_score, check_significance, format_params, is_standin, mark, pair_label,
                                    per_column, signature_text, splits_text, standin_lines, stat_test_text)
from pipeline.report.layouts import register_layout
from pipeline.report.reported import ReportedTable
from pipeline.report.table import Table

PAPER = "Zeng et al. (2021)"
PAIRS = ZENG2021_PAIRS
EN_DE = ("en-de",)
METRICS = ("bleu", "sacrebleu")
METRIC_NAMES = {"bleu": "BLEU", "sacrebleu": "SacreBLEU"}
TABLE1 = {"bleu": ZENG2021_TABLE1_BLEU, "sacrebleu": ZENG2021_TABLE1_SACREBLEU}
TABLE2 = {"bleu": ZENG2021_TABLE2_BLEU, "sacrebleu": ZENG2021_TABLE2_SACREBLEU}
TABLE3 = {"bleu": ZENG2021_TABLE3_BLEU, "sacrebleu": ZENG2021_TABLE3_SACREBLEU}
TABLE4 = {"summarization": ZENG2021_TABLE4_SUMMARIZATION, "dialogue": ZENG2021_TABLE4_DIALOGUE}
TASKS = tuple(TABLE4)
TASK_LABELS = {"summarization": "Summarization", "dialogue": "Dialogue"}
METRIC_LABELS = {"rouge1": "Rouge-1", "rouge2": "Rouge-2", "rougeL": "Rouge-L", "bleu4": "BLEU-4", "meteor": "Meteor"}
TABLE4_VALUES = ("rouge1", "rouge2", "rougeL", "bleu4")  # the values a Table 4 cell gives; meteor: none (n/a)
# Names of the values whose metric signatures the footers print.
SIGNATURE_NAMES = {"bleu": "BLEU, tokenised and case-sensitive", "sacrebleu": "SacreBLEU", **METRIC_LABELS}

SYSTEM_ROWS = tuple(s[0] for s in ZENG2021_SYSTEMS)
TABLE2_ROWS = tuple(r.row_id for r in ZENG2021_TABLE2_BLEU.rows)
TABLE3_ROWS = tuple(r.row_id for r in ZENG2021_TABLE3_BLEU.rows)
TABLE4_ROWS = tuple(r.row_id for r in ZENG2021_TABLE4_SUMMARIZATION.rows)
LABELS = {r.row_id: r.system for t in (ZENG2021_TABLE1_BLEU, ZENG2021_TABLE2_BLEU, ZENG2021_TABLE3_BLEU)
          for r in t.rows}
SIDES = {"enc": "Enc", "dec": "Dec"}

SIGNIFICANCE = 0.01  # the paper's † threshold
THRESHOLDS = [(SIGNIFICANCE, ZENG2021_DAGGER)]  # † only where the system beats its baseline
# Averages as in the paper: BLEU over all 10 pairs, SacreBLEU without Zh-En (the paper prints none for it).
AVERAGE_PAIRS = {"bleu": PAIRS, "sacrebleu": tuple(p for p in PAIRS if p != "zh-en")}


# ------------------------------------------------------------------ checks
def check_nonneg(value, where: str) -> float:
    """A finite number >= 0."""
    value = check_number(value, where, float, optional=False)
    if not (math.isfinite(value) and value >= 0.0):
        raise PipelineError(f"{where}: expected a finite number >= 0, got {value!r}")
    return value


def check_positive_int(value, where: str) -> int:
    """An int >= 1."""
    value = check_number(value, where, int, optional=False)
    if value < 1:
        raise PipelineError(f"{where}: expected an integer >= 1, got {value!r}")
    return value


def check_matrix(value, where: str, n_rows: int, n_cols: int, kind: Callable) -> list[list]:
    """A list of n_rows lists of n_cols values, each checked by kind(value, where)."""
    if not isinstance(value, list) or len(value) != n_rows:
        raise PipelineError(f"{where}: expected a list of {n_rows} rows, got {value!r}"[:300])
    for i, row in enumerate(value):
        if not isinstance(row, list) or len(row) != n_cols:
            raise PipelineError(f"{where}[{i}]: expected a list of {n_cols} values, got {row!r}"[:300])
        for j, v in enumerate(row):
            kind(v, f"{where}[{i}][{j}]")
    return value


def check_count(value, where: str) -> int:
    """An int >= 0."""
    value = check_number(value, where, int, optional=False)
    if value < 0:
        raise PipelineError(f"{where}: expected a count >= 0, got {value!r}")
    return value


def _mt_check(values: tuple[str, ...] = ()):
    """A Tables 1-3 cell check: "bleu", "sacrebleu" (scores), optionally `values`, system, significance fields."""
    def check(cell, where: str, pair: str) -> None:
        check_keys(cell, where, METRICS, ("system", *values, *SIGNIFICANCE_FIELDS))
        for metric in METRICS:
            check_score(cell[metric], f"{where}.{metric}")
        check_number(cell.get("params"), f"{where}.params", int, optional=True)
        check_significance(cell, where)
    return check


def _check_task(cell, where: str, task: str) -> None:
    """Table 4: every metric the task shows but Meteor (never given: n/a), each a score in %."""
    shown = tuple(m for m in TABLE4[task].pairs if m != "meteor")
    check_keys(cell, where, shown, ("system", *(v for v in TABLE4_VALUES if v not in shown)))
    for value in TABLE4_VALUES:
        if value in cell:
            check_score(cell[value], f"{where}.{value}", optional=value not in shown)


def _label(key: str) -> str:
    """'en-de' -> 'En-De', 'dialogue' -> 'Dialogue'."""
    return TASK_LABELS.get(key) or pair_label(key)


# ------------------------------------------------------------------ footer (every layout's, from the facts)
def _paper_line(where: str) -> str:
    return f"paper: {PAPER}, {where}; (paper) columns as printed there, (ours) columns from this run"


def footer(facts: dict, first: str, columns: tuple[str, ...], *, scores: tuple[str, ...] = (),
           against: str | None = None, extra: list[str] | tuple = ()) -> list[str]:
    """The footer lines: `first`, scale, corpora, test sets, the signatures of `scores` (value names; equal ones
    share a line), stand-ins, the † settings (against: the rows' baseline), then `extra`."""
    check_facts(facts, ("scale", "corpora", "test_sets") + (("signatures",) if scores else ()))
    lines = [first, f"scale: {facts['scale']}", f"corpora: {per_column(facts['corpora'], columns, _label)}",
             f"test sets: {splits_text(facts, columns, _label)}"]
    texts: dict[str, list[str]] = {}
    for value in scores:
        texts.setdefault(signature_text(facts, value, columns, _label), []).append(SIGNATURE_NAMES[value])
    lines += [f"{', '.join(names)} (ours): {text}" for text, names in texts.items()]
    lines += standin_lines(facts, columns, _label)
    sig = facts.get("significance")
    if against is not None and sig:
        lines.append(f"{ZENG2021_DAGGER} (ours): {stat_test_text(facts)} on "
                     f"{METRIC_NAMES.get(sig['value'], sig['value'])} against {against}; shown when p < "
                     f"{SIGNIFICANCE} and the system scores higher (the paper's convention)")
    return lines + list(extra)


# ------------------------------------------------------------------ Tables 1-3 (BLEU and SacreBLEU)
def cell_of(cells: dict, row_id: str, column: str = "en-de") -> dict | None:
    """cells[row_id][column], None if we have none."""
    return cells.get(row_id, {}).get(column)


def _delta(value: float, reference: float) -> str:
    """'(+0.48)' like the paper; never '-0.00'."""
    return f"({round(value - reference, 2) + 0.0:+.2f})"


def _our_mt(cell: dict | None, reference: dict | None, metric: str) -> str:
    """'27.48 (-0.22)†': our score, delta to the reference row (none for the reference itself), † from its test."""
    if cell is None:
        return ""
    text = f"{cell[metric]:.2f}"
    if reference is not None and reference is not cell:
        text += f" {_delta(cell[metric], reference[metric])}"
    return text + mark(cell, THRESHOLDS)


def _paper_table1(metric: str, row_id: str, column: str) -> str:
    """A Table 1 cell as printed: value, delta vs TransF (derived unless printed otherwise), †."""
    table = TABLE1[metric]
    cell = table.row(row_id).cells[column]
    if cell.bleu is None:
        return "n/a"
    if row_id == "transf":
        return cell.bleu
    printed = ZENG2021_TABLE1_PRINTED_DELTAS.get((metric, row_id, column))
    delta = f"({printed})" if printed else _delta(cell.bleu_value, table.row("transf").cells[column].bleu_value)
    dagger = ZENG2021_DAGGER if (metric, row_id, column) in ZENG2021_TABLE1_DAGGERS else ""
    return f"{cell.bleu} {delta}{dagger}"


def _averages(cells: dict) -> tuple[dict[str, dict[str, str]], list[str]]:
    """Our Average cells per metric and row, and footer lines saying over which pairs."""
    out, lines = {}, []
    for metric, pairs in AVERAGE_PAIRS.items():
        have = {row: [p for p in pairs if cell_of(cells, row, p)] for row in SYSTEM_ROWS}
        means = {row: sum(cells[row][p][metric] for p in ps) / len(ps) for row, ps in have.items() if ps}
        out[metric] = {}
        for row in SYSTEM_ROWS:
            text = f"{means[row]:.2f}" if row in means else ""
            if row in means and row != "transf" and "transf" in means and have[row] == have["transf"]:
                text += f" {_delta(means[row], means['transf'])}"
            out[metric][row] = text
        counts = {row: len(ps) for row, ps in have.items() if ps}
        name = METRIC_NAMES[metric]
        if not counts:
            lines.append(f"Average (ours), {name}: no results yet")
        elif len({tuple(ps) for ps in have.values() if ps}) == 1:
            shown = next(ps for ps in have.values() if ps)
            lines.append(f"Average (ours), {name}: over {len(shown)} of {len(pairs)} pairs "
                         f"({', '.join(pair_label(p) for p in shown)})")
        else:
            per_row = ", ".join(f"{LABELS[row]} {n}" for row, n in counts.items())
            lines.append(f"Average (ours), {name}: each system over its own pairs ({per_row}); "
                         f"delta only where a system has TransF's pairs")
    return out, lines


def _params_line(cells: dict, rows: tuple[str, ...], pairs: tuple[str, ...]) -> list[str]:
    """'#Para. (ours): En-De: TransF 1.2M, RAN-ALL 1.1M; ...' when any params are given."""
    parts = []
    for pair in pairs:
        shown = [f"{LABELS[row]} {format_params(c['params'])}" for row in rows
                 if (c := cell_of(cells, row, pair)) and c.get("params") is not None]
        if shown:
            parts.append(f"{pair_label(pair)}: {', '.join(shown)}")
    return ["#Para. (ours): " + "; ".join(parts)] if parts else []


def _system_columns(rows: tuple[str, ...]) -> list[str]:
    """'<System> (paper)', '<System> (ours)' per row id."""
    return [f"{LABELS[row]} ({source})" for row in rows for source in ("paper", "ours")]


@register_layout("zeng2021-table1")
def table1(cells: dict, facts: dict) -> Table:
    """zeng2021 Table 1: BLEU and SacreBLEU of 6 systems on 10 pairs, paper vs ours, with Average rows.

    cells[row][pair] = {"bleu", "sacrebleu", "params", significance fields}; rows transf, hcsa, synr, ran-e,
    ran-d, ran-all.
    """
    check_cells(cells, SYSTEM_ROWS, PAIRS, _mt_check(("params",)))
    rows = []
    for pair in PAIRS:
        reference = cell_of(cells, "transf", pair)
        for metric in METRICS:
            out = [pair_label(pair), METRIC_NAMES[metric]]
            for row in SYSTEM_ROWS:
                out += [_paper_table1(metric, row, pair), _our_mt(cell_of(cells, row, pair), reference, metric)]
            rows.append(out)
    averages, average_lines = _averages(cells)
    for metric in METRICS:
        out = ["Average", METRIC_NAMES[metric]]
        for row in SYSTEM_ROWS:
            out += [_paper_table1(metric, row, "average"), averages[metric][row]]
        rows.append(out)
    errata = "; ".join(f"{LABELS[row]} {pair_label(col)} {METRIC_NAMES[metric]} prints ({delta})"
                       for (metric, row, col), delta in ZENG2021_TABLE1_PRINTED_DELTAS.items())
    lines = footer(facts, _paper_line("Table 1"), PAIRS, scores=METRICS, against="our TransF of the same pair",
                   extra=[f"(paper) deltas: value minus TransF, as printed; they match the printed values except: "
                          f"{errata} (shown as printed)",
                          "(ours) deltas: our system minus our TransF on the same pair and metric; † marks both "
                          "metrics of a tested pair",
                          "Average (paper): BLEU over the 10 pairs, SacreBLEU over 9 (Zh-En prints BLEU only); "
                          "our SacreBLEU average leaves out Zh-En likewise; no significance test on our averages",
                          *average_lines, *_params_line(cells, SYSTEM_ROWS, PAIRS)])
    return Table(title="zeng2021 Table 1: BLEU and SacreBLEU on WMT14, WMT17 and NIST12, paper vs. ours",
                 columns=["Lang.", "Metric", *_system_columns(SYSTEM_ROWS)], rows=rows, footer=lines)


def _ablation_rows(cells: dict, paper: dict[str, ReportedTable], pairs: tuple[str, ...],
                   reference: str) -> list[list[str]]:
    """Model, then per pair and metric: paper as printed, ours with delta to the reference row."""
    rows = []
    for row in paper["bleu"].rows:
        out = [row.system]
        for pair in pairs:
            ref = cell_of(cells, reference, pair)
            for metric in METRICS:
                out += [paper[metric].row(row.row_id).cells[pair].bleu,
                        _our_mt(cell_of(cells, row.row_id, pair), ref, metric)]
        rows.append(out)
    return rows


def _ablation_columns(pairs: tuple[str, ...]) -> list[str]:
    """Model, then '<Pair> <Metric> (paper|ours)'."""
    return ["Model"] + [f"{pair_label(p)} {METRIC_NAMES[m]} ({s})" for p in pairs for m in METRICS
                        for s in ("paper", "ours")]


@register_layout("zeng2021-table2")
def table2(cells: dict, facts: dict) -> Table:
    """zeng2021 Table 2: position embeddings vs RAN (En-De); rows transf, -pos-e, -pos-e+ran-e, -pos-d, -pos-d+ran-d."""
    check_cells(cells, TABLE2_ROWS, EN_DE, _mt_check(("params",)))
    lines = footer(facts, _paper_line("Table 2"), EN_DE, scores=METRICS, against="our TransF", extra=[
        "(ours) deltas: our system minus our TransF; the paper prints no deltas or marks in this table, "
        "and its TransF SacreBLEU here (27.12) differs from Table 1's (27.00)",
        *_params_line(cells, TABLE2_ROWS, EN_DE)])
    return Table(title="zeng2021 Table 2: ablating position embeddings and RAN (En-De), paper vs. ours",
                 columns=_ablation_columns(EN_DE), rows=_ablation_rows(cells, TABLE2, EN_DE, "transf"),
                 footer=lines)


@register_layout("zeng2021-table3")
def table3(cells: dict, facts: dict) -> Table:
    """zeng2021 Table 3: RAN-ALL ablations (En-De, En-Fr); rows ran-all, fixed, no-ln-res."""
    pairs = ZENG2021_TABLE3_BLEU.pairs
    check_cells(cells, TABLE3_ROWS, pairs, _mt_check(("params",)))
    lines = footer(facts, _paper_line("Table 3"), pairs, scores=METRICS, against="our RAN-ALL", extra=[
        "(ours) deltas: our ablation minus our RAN-ALL (the paper's reference in section 4.5); the paper "
        "prints no significance marks here",
        "fixed: initial attention matrices random and not trained; w/o LN&RES: no layer normalisation "
        "and residual connection in the recurrent transition module",
        *_params_line(cells, TABLE3_ROWS, pairs)])
    return Table(title="zeng2021 Table 3: RAN ablations (En-De, En-Fr), paper vs. ours",
                 columns=_ablation_columns(pairs), rows=_ablation_rows(cells, TABLE3, pairs, "ran-all"),
                 footer=lines)


# ------------------------------------------------------------------ Table 4 (summarisation, dialogue)
@register_layout("zeng2021-table4")
def table4(cells: dict, facts: dict) -> Table:
    """zeng2021 Table 4: ROUGE for summarisation, BLEU-4/ROUGE-L/Meteor for dialogue, paper vs ours.

    cells[row][task] = {"rouge1", "rouge2", "rougeL", "bleu4"} in % (each task shows its own); Meteor is
    always n/a (meteor_unavailable_reason()). Rows transf, synr, ran-e, ran-d, ran-all.
    """
    check_cells(cells, TABLE4_ROWS, TASKS, _check_task)
    rows = []
    for row in ZENG2021_TABLE4_SUMMARIZATION.rows:
        out = [row.system]
        for task in TASKS:
            cell = cell_of(cells, row.row_id, task)
            for metric in TABLE4[task].pairs:
                ours = "" if cell is None else "n/a" if metric == "meteor" else f"{cell[metric]:.2f}"
                out += [TABLE4[task].row(row.row_id).cells[metric].bleu, ours]
        rows.append(out)
    title = "zeng2021 Table 4: summarisation and dialogue generation, paper vs. ours"
    if is_standin(facts, TASKS):
        title += " (ours on STAND-IN tasks, see below)"
    lines = footer(facts, _paper_line("Table 4: CNN/DailyMail summarisation and PersonaChat dialogue (nlg-eval)"),
                   TASKS, scores=("rouge1", "rouge2", "rougeL", "bleu4"),
                   extra=["scores (ours) in % like the paper's", f"n/a (Meteor): {meteor_unavailable_reason()}"])
    cols = ["Model"] + [f"{TASK_LABELS[t]} {METRIC_LABELS[m]} ({s})" for t in TASKS for m in TABLE4[t].pairs
                        for s in ("paper", "ours")]
    return Table(title=title, columns=cols, rows=rows, footer=lines)
