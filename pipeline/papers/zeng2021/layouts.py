"""zeng2021 tables and figures: the paper's numbers beside ours (Tables 1-4, Figures 3-8).

Each layout takes the generic cells[row][column] and facts (pipeline/report/cells.py); footer() builds every
footer from the facts.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
from matplotlib.figure import Figure

from pipeline.errors import PipelineError
from pipeline.evaluate.length import bin_label
from pipeline.evaluate.rouge import meteor_unavailable_reason
from pipeline.papers.zeng2021.reported import (ZENG2021_DAGGER, ZENG2021_PAIRS, ZENG2021_SYSTEMS, ZENG2021_TABLE1_BLEU,
                                               ZENG2021_TABLE1_DAGGERS, ZENG2021_TABLE1_PRINTED_DELTAS,
                                               ZENG2021_TABLE1_SACREBLEU, ZENG2021_TABLE2_BLEU,
                                               ZENG2021_TABLE2_SACREBLEU, ZENG2021_TABLE3_BLEU,
                                               ZENG2021_TABLE3_SACREBLEU, ZENG2021_TABLE4_DIALOGUE,
                                               ZENG2021_TABLE4_SUMMARIZATION)
from pipeline.report.figures import bar_panels, heatmap_grid, histogram_grid, line_panels
from pipeline.report.format import (SIGNIFICANCE_FIELDS, analysis, check_cells, check_facts, check_keys,
                                    check_number, check_score, check_significance, format_params, is_standin, mark,
                                    pair_label, per_column, signature_text, splits_text, standin_lines,
                                    stat_test_text)
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
FIG3_ROWS = ("transf", "ran-all")
ANALYSIS_ROWS = ("transf", "synr", "ran-all")  # Figures 4, 5, 7
FIG8_ROWS = ("transf", "ran-e", "ran-d", "ran-all")
LABELS = {r.row_id: r.system for t in (ZENG2021_TABLE1_BLEU, ZENG2021_TABLE2_BLEU, ZENG2021_TABLE3_BLEU)
          for r in t.rows}
SIDES = {"enc": "Enc", "dec": "Dec"}

SIGNIFICANCE = 0.01  # the paper's † threshold
THRESHOLDS = [(SIGNIFICANCE, ZENG2021_DAGGER)]  # † only where the system beats its baseline
FIG3_BEAM, FIG3_BATCH = 4, 100  # the paper's fixed beam (varying batch) and fixed batch (varying beam)
# Averages as in the paper: BLEU over all 10 pairs, SacreBLEU without Zh-En (the paper prints none for it).
AVERAGE_PAIRS = {"bleu": PAIRS, "sacrebleu": tuple(p for p in PAIRS if p != "zh-en")}


# ------------------------------------------------------------------ checks
def _nonneg(value, where: str) -> float:
    """A finite number >= 0."""
    value = check_number(value, where, float, optional=False)
    if not (math.isfinite(value) and value >= 0.0):
        raise PipelineError(f"{where}: expected a finite number >= 0, got {value!r}")
    return value


def _positive_int(value, where: str) -> int:
    """An int >= 1."""
    value = check_number(value, where, int, optional=False)
    if value < 1:
        raise PipelineError(f"{where}: expected an integer >= 1, got {value!r}")
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
def _cell(cells: dict, row_id: str, column: str = "en-de") -> dict | None:
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
        have = {row: [p for p in pairs if _cell(cells, row, p)] for row in SYSTEM_ROWS}
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
                 if (c := _cell(cells, row, pair)) and c.get("params") is not None]
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
        reference = _cell(cells, "transf", pair)
        for metric in METRICS:
            out = [pair_label(pair), METRIC_NAMES[metric]]
            for row in SYSTEM_ROWS:
                out += [_paper_table1(metric, row, pair), _our_mt(_cell(cells, row, pair), reference, metric)]
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
            ref = _cell(cells, reference, pair)
            for metric in METRICS:
                out += [paper[metric].row(row.row_id).cells[pair].bleu,
                        _our_mt(_cell(cells, row.row_id, pair), ref, metric)]
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
            cell = _cell(cells, row.row_id, task)
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


# ------------------------------------------------------------------ Figure 3 (decoding speed)
def _check_speed(cell, where: str, pair: str) -> None:
    """{"speed": {"rows": [{"batch_size", "beam", "tokens_per_s", ...}, ...], "sentences", "device"}}:
    distinct settings, rates >= 0."""
    check_keys(cell, where, ("speed",), ("system",))
    check_keys(cell["speed"], f"{where}.speed", ("rows",), ("sentences", "device"))
    speed = cell["speed"]["rows"]
    if not isinstance(speed, list) or not speed:
        raise PipelineError(f"{where}.speed.rows: expected a non-empty list of {{'batch_size', 'beam', "
                            f"'tokens_per_s'}} dicts, got {speed!r}")
    if "sentences" in cell["speed"]:
        _positive_int(cell["speed"]["sentences"], f"{where}.speed.sentences")
    seen = set()
    for i, item in enumerate(speed):
        at = f"{where}.speed.rows[{i}]"
        if not isinstance(item, dict):
            raise PipelineError(f"{at}: expected a dict with 'batch_size', 'beam', 'tokens_per_s', got {item!r}")
        for key in ("batch_size", "beam", "tokens_per_s"):
            if key not in item:
                raise PipelineError(f"{at}.{key}: missing")
        setting = (_positive_int(item["batch_size"], f"{at}.batch_size"), _positive_int(item["beam"], f"{at}.beam"))
        _nonneg(item["tokens_per_s"], f"{at}.tokens_per_s")  # 0: the system wrote only empty outputs
        if setting in seen:
            raise PipelineError(f"{at}: batch size {setting[0]}, beam {setting[1]} appears twice; expected "
                                f"one rate per setting")
        seen.add(setting)
    if not any(b == FIG3_BATCH or k == FIG3_BEAM for b, k in seen):
        raise PipelineError(f"{where}.speed.rows: no setting at beam {FIG3_BEAM} or batch size {FIG3_BATCH}; expected "
                            f"the paper's settings (batch sizes at beam {FIG3_BEAM}, beams at batch size "
                            f"{FIG3_BATCH})")


def _speed_text(facts: dict, found: dict[str, dict]) -> list[str]:
    """How the speed was measured: the settings, and the sentences and device of each measurement."""
    s = analysis(facts, "speed", ("sentences", "repeats"))
    measured = "; ".join(f"{LABELS[row]} {speed.get('sentences', '?')} sentences on {speed.get('device', '?')}"
                         for row, speed in found.items()) or "none yet"
    return [f"speed: one CPU thread, alone on the machine; the first {s['sentences']} test sentences; median of "
            f"{s['repeats']} timed passes after one warm-up pass",
            f"measured: {measured}"]


@register_layout("zeng2021-fig3", figure=True)
def fig3(cells: dict, facts: dict) -> tuple[Table, Figure]:
    """zeng2021 Figure 3: decoding tokens/s of TransF and RAN-ALL by batch size (beam 4) and beam (batch 100)."""
    check_cells(cells, FIG3_ROWS, EN_DE, _check_speed)
    found = {row: c["speed"] for row in FIG3_ROWS if (c := _cell(cells, row))}
    rates = {row: {(s["batch_size"], s["beam"]): s["tokens_per_s"] for s in speed["rows"]}
             for row, speed in found.items()}
    settings = {key for by_setting in rates.values() for key in by_setting}
    batches = sorted(b for b, k in settings if k == FIG3_BEAM)
    beams = sorted(k for b, k in settings if b == FIG3_BATCH)
    panels = (("batch size", [(b, FIG3_BEAM) for b in batches]), ("beam", [(FIG3_BATCH, k) for k in beams]))
    rows = []
    for varying, keys in panels:
        for key in keys:
            transf, ran = (rates.get(row, {}).get(key) for row in FIG3_ROWS)
            ratio = f"{ran / transf:.3f}" if transf and ran else ""
            rows.append([varying, str(key[0]), str(key[1]),
                         "" if transf is None else f"{transf:.1f}", "" if ran is None else f"{ran:.1f}", ratio])
    first = (f"paper: {PAPER}, Figure 3 and section 3.3 print no numbers on the figure; the text reports RAN-ALL "
             f"decoding up to 23.6% faster at batch size {FIG3_BATCH} and about 1.2x across beam sizes; all numbers "
             f"here are ours")
    lines = footer(facts, first, EN_DE, extra=[
        *_speed_text(facts, found),
        "tokens/s: target tokens (without EOS) per second of batched beam search; ratio > 1: RAN-ALL faster"])
    table = Table(title="zeng2021 Figure 3: decoding speed (tokens/s) by batch size and beam (En-De), ours",
                  columns=["Varying", "Batch size", "Beam", "TransF tokens/s", "RAN-ALL tokens/s",
                           "RAN-ALL / TransF"], rows=rows, footer=lines)

    def series(keys):
        return {LABELS[row]: [rates[row].get(key) for key in keys] for row in FIG3_ROWS if row in rates}

    figure_panels = [(f"beam {FIG3_BEAM}", "batch size", [str(b) for b in batches], series(panels[0][1])),
                     (f"batch size {FIG3_BATCH}", "beam size", [str(k) for k in beams], series(panels[1][1]))]
    figure = line_panels(figure_panels, title="zeng2021 Figure 3: decoding speed (En-De), ours", ylabel="tokens/s")
    return table, figure


# ------------------------------------------------------------------ Figures 4, 5, 7 (attention statistics)
def _matrix(value, where: str, n_rows: int, n_cols: int, kind: Callable) -> list[list]:
    """A list of n_rows lists of n_cols values, each checked by kind(value, where)."""
    if not isinstance(value, list) or len(value) != n_rows:
        raise PipelineError(f"{where}: expected a list of {n_rows} rows, got {value!r}"[:300])
    for i, row in enumerate(value):
        if not isinstance(row, list) or len(row) != n_cols:
            raise PipelineError(f"{where}[{i}]: expected a list of {n_cols} values, got {row!r}"[:300])
        for j, v in enumerate(row):
            kind(v, f"{where}[{i}][{j}]")
    return value


def _count(value, where: str) -> int:
    """An int >= 0."""
    value = check_number(value, where, int, optional=False)
    if value < 0:
        raise PipelineError(f"{where}: expected a count >= 0, got {value!r}")
    return value


def _check_side(side, where: str, bins: int) -> None:
    """{"entropy": [L], "histogram": {"edges": [bins+1], "counts": [L x bins]}, "js": [L x L]}."""
    check_keys(side, where, ("entropy", "histogram", "js"))
    entropy = side["entropy"]
    if not isinstance(entropy, list) or not entropy:
        raise PipelineError(f"{where}.entropy: expected a non-empty list of floats (one per layer), got {entropy!r}")
    for i, v in enumerate(entropy):
        _nonneg(v, f"{where}.entropy[{i}]")
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
    _matrix(hist["counts"], f"{where}.histogram.counts", layers, bins, _count)
    _matrix(side["js"], f"{where}.js", layers, layers, _nonneg)


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
    _positive_int(attention["n_sentences"], f"{at}.n_sentences")
    bins = _positive_int(attention["bins"], f"{at}.bins")
    for side in SIDES:
        _check_side(attention[side], f"{at}.{side}", bins)


def _attention(cells: dict) -> dict[str, dict]:
    """Checked attention statistics by row (ANALYSIS_ROWS order); all models the same depth per side."""
    check_cells(cells, ANALYSIS_ROWS, EN_DE, _check_attention)
    found = {row: c["attention"] for row in ANALYSIS_ROWS if (c := _cell(cells, row))}
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


# ------------------------------------------------------------------ Figure 6 (RAN weights)
def _check_patterns(cell, where: str, pair: str) -> None:
    """{"patterns": {"enc": [n x n per layer] or None, "dec": ...}}: square, finite, >= 0, rows not all zero.

    None: a side with dot-product attention (no learnt pattern).
    """
    check_keys(cell, where, ("patterns",), ("system",))
    patterns = cell["patterns"]
    check_keys(patterns, f"{where}.patterns", tuple(SIDES))
    for side in SIDES:
        at = f"{where}.patterns.{side}"
        layers = patterns[side]
        if layers is None:
            continue
        if not isinstance(layers, list) or not layers:
            raise PipelineError(f"{at}: expected None or a non-empty list of n x n matrices (one per layer)")
        for k, matrix in enumerate(layers):
            n = len(matrix) if isinstance(matrix, list) else 0
            if n == 0:
                raise PipelineError(f"{at}[{k}]: expected a non-empty n x n matrix, got {matrix!r}"[:300])
            _matrix(matrix, f"{at}[{k}]", n, n, _nonneg)
            for i, row in enumerate(matrix):
                if sum(row) <= 0:
                    raise PipelineError(f"{at}[{k}][{i}]: all weights are 0; expected an attention row")


def pattern_stats(matrix: list[list[float]]) -> tuple[float, float, float]:
    """(mean argmax offset key - query, mean row entropy in nats, mean weight on the first token) of [n x n].

    Rows are normalised to sum 1 first (our choice: a cropped matrix's rows may not).
    """
    p = np.asarray(matrix, dtype=np.float64)
    p = p / p.sum(axis=1, keepdims=True)
    offset = float(np.mean(np.argmax(p, axis=1) - np.arange(len(p))))
    logs = np.log(np.where(p > 0, p, 1.0))  # 0 log 0 = 0
    entropy = float(np.mean(-(p * logs).sum(axis=1)))
    return offset, entropy, float(np.mean(p[:, 0]))


@register_layout("zeng2021-fig6", figure=True)
def fig6(cells: dict, facts: dict) -> tuple[Table, Figure]:
    """zeng2021 Figure 6: RAN-ALL's learned attention patterns; heatmaps of layers 1 and last per side."""
    check_cells(cells, ("ran-all",), EN_DE, _check_patterns)
    cell = _cell(cells, "ran-all")
    rows, grid = [], []
    if cell is not None:
        for side, short in SIDES.items():
            layers = cell["patterns"][side]
            if layers is None:
                continue
            for k, matrix in enumerate(layers):
                offset, entropy, first = pattern_stats(matrix)
                rows.append([short, str(k + 1), f"{len(matrix)} x {len(matrix)}", f"{offset:.2f}",
                             f"{entropy:.3f}", f"{first:.3f}"])
            grid.append([(f"{short} L{k}", layers[k - 1]) for k in sorted({1, len(layers)})])
    size = analysis(facts, "patterns", ("size",))["size"]
    lines = footer(facts, f"paper: {PAPER}, Figure 6 (prints no numbers; the paper's matrices are 80 x 80); all "
                          f"numbers are ours, RAN-ALL trained on En-De", EN_DE, extra=[
        f"patterns: the learnt, input-independent weights, averaged over heads, of the first {size} positions "
        f"(the decoder's causal)",
        "summary per layer (our choice): rows normalised to sum 1; offset = argmax key position minus query "
        "position, entropy in nats, and the weight on the first token, each averaged over query positions"])
    table = Table(title="zeng2021 Figure 6: RAN-ALL attention patterns (En-De), ours",
                  columns=["Side", "Layer", "Size", "Mean argmax offset", "Mean row entropy",
                           "Mean weight on first token"], rows=rows, footer=lines)
    figure = heatmap_grid(grid or [[None]], title="zeng2021 Figure 6: RAN-ALL attention weights (En-De), ours",
                          xlabel="key position", ylabel="query position")
    return table, figure


# ------------------------------------------------------------------ Figure 8 (BLEU by length)
LENGTH_KINDS = ("source", "target")


def _check_bins(bins, where: str) -> None:
    """A non-empty list of {"bin": label, "bleu": score (None iff n == 0), "n": count}."""
    if not isinstance(bins, list) or not bins:
        raise PipelineError(f"{where}: expected a non-empty list of {{'bin', 'bleu', 'n'}} dicts, got {bins!r}")
    for i, item in enumerate(bins):
        at = f"{where}[{i}]"
        check_keys(item, at, ("bin", "bleu", "n"))
        if not isinstance(item["bin"], str) or not item["bin"]:
            raise PipelineError(f"{at}.bin: expected a label like '(0, 10]', got {item['bin']!r}")
        n = _count(item["n"], f"{at}.n")
        check_score(item["bleu"], f"{at}.bleu", optional=n == 0)
        if n == 0 and item["bleu"] is not None:
            raise PipelineError(f"{at}.bleu: expected None for an empty bin, got {item['bleu']!r}")


def _check_length(cell, where: str, pair: str) -> None:
    """{"length": {"source": BINS, "target": BINS}}."""
    check_keys(cell, where, ("length",), ("system",))
    check_keys(cell["length"], f"{where}.length", tuple(LENGTH_KINDS))
    for kind in LENGTH_KINDS:
        _check_bins(cell["length"][kind], f"{where}.length.{kind}")


@register_layout("zeng2021-fig8", figure=True)
def fig8(cells: dict, facts: dict) -> tuple[Table, Figure]:
    """zeng2021 Figure 8: BLEU per source-length and target-length bin; rows transf, ran-e, ran-d, ran-all."""
    check_cells(cells, FIG8_ROWS, EN_DE, _check_length)
    found = {row: c["length"] for row in FIG8_ROWS if (c := _cell(cells, row))}
    rows, panels = [], []
    for kind in LENGTH_KINDS:
        first = next(iter(found), None)
        reference = found[first][kind] if first else []
        for row, length in found.items():
            if [(b["bin"], b["n"]) for b in length[kind]] != [(b["bin"], b["n"]) for b in reference]:
                raise PipelineError(f"cells.{row}.en-de.length.{kind}: bins or sentence counts differ from "
                                    f"{LABELS[first]}'s; expected the same bins of the same test set")
        labels = [b["bin"] for b in reference]
        bleu = {row: [b["bleu"] for b in length[kind]] for row, length in found.items()}
        for i, b in enumerate(reference):
            rows.append([kind, b["bin"], str(b["n"])] + [
                "" if row not in bleu else "n/a" if bleu[row][i] is None else f"{bleu[row][i]:.2f}"
                for row in FIG8_ROWS])
        panels.append((f"by {kind} length", f"length of {kind} sentence", labels,
                       {LABELS[row]: values for row, values in bleu.items()}))
    bins = analysis(facts, "length", ("bins",))["bins"]
    lines = footer(facts, f"paper: {PAPER}, Figure 8 (prints no numbers; nor its bins' bounds); all numbers are "
                          f"ours", EN_DE, extra=[
        "BLEU (ours): corpus sacreBLEU of each bin's sentences, the target language's tokenizer",
        f"bins (our choice): {', '.join(bin_label(lo, hi) for lo, hi in bins)}; sentence length in tokens of the "
        f"tokenised source or reference; n/a: no sentences in the bin"])
    table = Table(title="zeng2021 Figure 8: BLEU by source and target length (En-De), ours",
                  columns=["Length of", "Bin", "Sentences", *(LABELS[r] for r in FIG8_ROWS)], rows=rows,
                  footer=lines)
    figure = bar_panels(panels, title="zeng2021 Figure 8: BLEU by sentence length (En-De), ours")
    return table, figure
