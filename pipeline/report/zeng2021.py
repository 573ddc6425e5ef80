"""zeng2021 tables and figures: the paper's numbers beside ours (Tables 1-4, Figures 3-8)."""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
from matplotlib.figure import Figure

from pipeline.errors import PipelineError
from pipeline.report.figures import bar_panels, heatmap_grid, histogram_grid, line_panels
from pipeline.report.hao2019 import _number, format_params, pair_label
from pipeline.report.reported import (ZENG2021_DAGGER, ZENG2021_PAIRS, ZENG2021_SYSTEMS, ZENG2021_TABLE1_BLEU,
                                      ZENG2021_TABLE1_DAGGERS, ZENG2021_TABLE1_PRINTED_DELTAS,
                                      ZENG2021_TABLE1_SACREBLEU, ZENG2021_TABLE2_BLEU, ZENG2021_TABLE2_SACREBLEU,
                                      ZENG2021_TABLE3_BLEU, ZENG2021_TABLE3_SACREBLEU, ZENG2021_TABLE4_DIALOGUE,
                                      ZENG2021_TABLE4_SUMMARIZATION, ReportedTable)
from pipeline.report.table import Table, run_layout

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
FIG3_BEAM, FIG3_BATCH = 4, 100  # the paper's fixed beam (varying batch) and fixed batch (varying beam)
# Averages as in the paper: BLEU over all 10 pairs, SacreBLEU without Zh-En (the paper prints none for it).
AVERAGE_PAIRS = {"bleu": PAIRS, "sacrebleu": tuple(p for p in PAIRS if p != "zh-en")}

MT_FOOTER = ("scale", "corpora", "test_sets", "bleu_signature", "tok_signature", "significance")
ALL_FOOTER_KEYS = MT_FOOTER + ("device", "standin", "na_reasons", "speed")
ANALYSIS_FOOTER = ("scale", "corpora", "test_sets")


# ------------------------------------------------------------------ checks
def _check_keys(entry, where: str, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> None:
    """A dict holding every `required` key and nothing outside required + optional."""
    expected = ", ".join(required) + (f" (optionally {', '.join(optional)})" if optional else "")
    if not isinstance(entry, dict):
        raise PipelineError(f"{where}: expected a dict with keys {expected}, got {entry!r}")
    for key in required:
        if key not in entry:
            raise PipelineError(f"{where}.{key}: missing; expected keys {expected}")
    for key in entry:
        if key not in required and key not in optional:
            raise PipelineError(f"{where}.{key}: unknown key; expected keys {expected}")


def _score(value, where: str, optional: bool = False) -> float | None:
    """A finite score in % (0..100), or None where allowed."""
    value = _number(value, where, float, optional)
    if value is not None and not (math.isfinite(value) and 0.0 <= value <= 100.0):
        raise PipelineError(f"{where}: expected a score in 0..100, got {value!r}")
    return value


def _nonneg(value, where: str) -> float:
    """A finite number >= 0."""
    value = _number(value, where, float, optional=False)
    if not (math.isfinite(value) and value >= 0.0):
        raise PipelineError(f"{where}: expected a finite number >= 0, got {value!r}")
    return value


def _positive_int(value, where: str) -> int:
    """An int >= 1."""
    value = _number(value, where, int, optional=False)
    if value < 1:
        raise PipelineError(f"{where}: expected an integer >= 1, got {value!r}")
    return value


def _check_ours(ours, rows: tuple[str, ...], pairs: tuple[str, ...], check_entry: Callable) -> None:
    """Row ids and pairs of ours[row][pair]; check_entry(entry, where, pair) checks each entry."""
    if not isinstance(ours, dict):
        raise PipelineError(f"ours: expected a dict row_id -> pair -> entry, got {type(ours).__name__}")
    for row_id, by_pair in ours.items():
        if row_id not in rows:
            raise PipelineError(f"ours.{row_id}: unknown row; expected one of {', '.join(rows)}")
        if not isinstance(by_pair, dict):
            raise PipelineError(f"ours.{row_id}: expected a dict pair -> entry, got {by_pair!r}")
        for pair, entry in by_pair.items():
            if pair not in pairs:
                raise PipelineError(f"ours.{row_id}.{pair}: unknown pair; expected one of {', '.join(pairs)}")
            check_entry(entry, f"ours.{row_id}.{pair}", pair)


def _check_mt(entry, where: str, pair: str) -> None:
    """{"bleu", "sacrebleu", optional "p_value" in [0, 1] or None, optional "params" int}."""
    _check_keys(entry, where, METRICS, ("p_value", "params"))
    for metric in METRICS:
        _score(entry[metric], f"{where}.{metric}")
    _number(entry.get("params"), f"{where}.params", int, optional=True)
    p = _number(entry.get("p_value"), f"{where}.p_value", float, optional=True)
    if p is not None and not 0.0 <= p <= 1.0:
        raise PipelineError(f"{where}.p_value: expected a probability in [0, 1], got {p!r}")


def _check_task(entry, where: str, task: str) -> None:
    """Table 4: every metric of the task, each a score or None."""
    metrics = TABLE4[task].pairs
    _check_keys(entry, where, metrics)
    for metric in metrics:
        _score(entry[metric], f"{where}.{metric}", optional=True)


def _check_footer(footer, required: tuple[str, ...]) -> None:
    """Required keys present, none outside ALL_FOOTER_KEYS, each known key well-formed."""
    if not isinstance(footer, dict):
        raise PipelineError(f"footer: expected a dict with keys {', '.join(required)}")
    for key in required:
        if key not in footer:
            raise PipelineError(f"footer.{key}: missing; expected keys {', '.join(required)}")
    for key in footer:
        if key not in ALL_FOOTER_KEYS:
            raise PipelineError(f"footer.{key}: unknown key; expected {', '.join(ALL_FOOTER_KEYS)}")
    sig = footer.get("significance")
    if "significance" in footer and (not isinstance(sig, dict) or set(sig) != {"n_samples", "seed"}):
        raise PipelineError(f"footer.significance: expected {{'n_samples': int, 'seed': int}}, got {sig!r}")
    for key in ("scale", "device", "standin", "speed"):
        if key in footer and (not isinstance(footer[key], str) or not footer[key]):
            raise PipelineError(f"footer.{key}: expected a non-empty string, got {footer[key]!r}")
    reasons = footer.get("na_reasons", {})
    if not isinstance(reasons, dict):
        raise PipelineError(f"footer.na_reasons: expected a dict metric -> reason, got {reasons!r}")
    for metric, reason in reasons.items():
        if metric not in METRIC_LABELS:
            raise PipelineError(f"footer.na_reasons.{metric}: unknown metric; expected one of "
                                f"{', '.join(METRIC_LABELS)}")
        if not isinstance(reason, str) or not reason:
            raise PipelineError(f"footer.na_reasons.{metric}: expected a non-empty string, got {reason!r}")


def _label(key: str) -> str:
    """'en-de' -> 'En-De', 'dialogue' -> 'Dialogue'."""
    return TASK_LABELS.get(key) or pair_label(key)


def _per_pair(footer: dict, key: str, pairs: tuple[str, ...], collapse: bool = False) -> str:
    """A string as is; a dict pair/task -> text in `pairs` order (collapsed if all shown values are equal)."""
    value = footer[key]
    if isinstance(value, str):
        return value
    known = PAIRS + TASKS
    if not isinstance(value, dict) or set(value) - set(known) or not any(p in value for p in pairs):
        raise PipelineError(f"footer.{key}: expected a string or a dict with keys among {', '.join(known)} "
                            f"including one of {', '.join(pairs)}, got {value!r}")
    shown = {p: value[p] for p in pairs if p in value}
    if collapse and len(set(shown.values())) == 1:
        return str(next(iter(shown.values())))
    return "; ".join(f"{_label(p)}: {v}" for p, v in shown.items())


# ------------------------------------------------------------------ Tables 1-3 (BLEU and SacreBLEU)
def _entry(ours: dict, row_id: str, pair: str = "en-de") -> dict | None:
    """ours[row_id][pair], None if we have none."""
    return ours.get(row_id, {}).get(pair)


def _delta(value: float, reference: float) -> str:
    """'(+0.48)' like the paper; never '-0.00'."""
    return f"({round(value - reference, 2) + 0.0:+.2f})"


def _dagger(entry: dict, reference: dict | None) -> str:
    """† when p < 0.01 and the system's SacreBLEU beats the reference's (the paper's convention)."""
    p = entry.get("p_value")
    if p is None or reference is None or p >= SIGNIFICANCE or entry["sacrebleu"] <= reference["sacrebleu"]:
        return ""
    return ZENG2021_DAGGER


def _our_mt(entry: dict | None, reference: dict | None, metric: str, marks: bool = True) -> str:
    """'27.48 (-0.22)†': our score, delta to the reference row (none for the reference itself), mark."""
    if entry is None:
        return ""
    text = f"{entry[metric]:.2f}"
    if reference is not None and reference is not entry:
        text += f" {_delta(entry[metric], reference[metric])}" + (_dagger(entry, reference) if marks else "")
    return text


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
    mark = ZENG2021_DAGGER if (metric, row_id, column) in ZENG2021_TABLE1_DAGGERS else ""
    return f"{cell.bleu} {delta}{mark}"


def _averages(ours: dict) -> tuple[dict[str, dict[str, str]], list[str]]:
    """Our Average cells per metric and row, and footer lines saying over which pairs."""
    cells, lines = {}, []
    for metric, pairs in AVERAGE_PAIRS.items():
        have = {row: [p for p in pairs if _entry(ours, row, p)] for row in SYSTEM_ROWS}
        means = {row: sum(ours[row][p][metric] for p in ps) / len(ps) for row, ps in have.items() if ps}
        cells[metric] = {}
        for row in SYSTEM_ROWS:
            text = f"{means[row]:.2f}" if row in means else ""
            if row in means and row != "transf" and "transf" in means and have[row] == have["transf"]:
                text += f" {_delta(means[row], means['transf'])}"
            cells[metric][row] = text
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
    return cells, lines


def _params_line(ours: dict, rows: tuple[str, ...], pairs: tuple[str, ...]) -> list[str]:
    """'#Para. (ours): En-De: TransF 1.2M, RAN-ALL 1.1M; ...' when any params are given."""
    parts = []
    for pair in pairs:
        shown = [f"{LABELS[row]} {format_params(e['params'])}" for row in rows
                 if (e := _entry(ours, row, pair)) and e.get("params") is not None]
        if shown:
            parts.append(f"{pair_label(pair)}: {', '.join(shown)}")
    return ["#Para. (ours): " + "; ".join(parts)] if parts else []


def _mt_footer(footer: dict, table: str, pairs: tuple[str, ...], against: str | None) -> list[str]:
    """Paper reference, scale, data, both BLEU signatures and (with `against`) the significance test."""
    lines = [f"paper: {PAPER}, {table}; (paper) columns as printed there, (ours) columns from this run",
             f"scale: {footer['scale']}",
             f"corpora: {_per_pair(footer, 'corpora', pairs)}",
             f"test sets: {_per_pair(footer, 'test_sets', pairs)}",
             f"BLEU (ours): tokenised, case-sensitive: {_per_pair(footer, 'tok_signature', pairs, collapse=True)}",
             f"SacreBLEU (ours): {_per_pair(footer, 'bleu_signature', pairs, collapse=True)}"]
    if against is not None:
        sig = footer["significance"]
        lines.append(f"{ZENG2021_DAGGER} (ours): paired bootstrap resampling on SacreBLEU against {against}, "
                     f"{sig['n_samples']} samples, seed {sig['seed']}; shown when p < {SIGNIFICANCE} and the "
                     f"system scores higher (the paper's convention)")
    return lines


def _system_columns(rows: tuple[str, ...]) -> list[str]:
    """'<System> (paper)', '<System> (ours)' per row id."""
    return [f"{LABELS[row]} ({source})" for row in rows for source in ("paper", "ours")]


def table1(ours: dict[str, dict[str, dict]], footer: dict) -> Table:
    """zeng2021 Table 1: BLEU and SacreBLEU of 6 systems on 10 pairs, paper vs ours, with Average rows.

    ours[row][pair] = {"bleu", "sacrebleu", "p_value", "params"}; rows transf, hcsa, synr, ran-e, ran-d, ran-all.
    """
    _check_ours(ours, SYSTEM_ROWS, PAIRS, _check_mt)
    _check_footer(footer, MT_FOOTER)
    rows = []
    for pair in PAIRS:
        reference = _entry(ours, "transf", pair)
        for metric in METRICS:
            cells = [pair_label(pair), METRIC_NAMES[metric]]
            for row in SYSTEM_ROWS:
                cells += [_paper_table1(metric, row, pair), _our_mt(_entry(ours, row, pair), reference, metric)]
            rows.append(cells)
    averages, average_lines = _averages(ours)
    for metric in METRICS:
        cells = ["Average", METRIC_NAMES[metric]]
        for row in SYSTEM_ROWS:
            cells += [_paper_table1(metric, row, "average"), averages[metric][row]]
        rows.append(cells)
    errata = "; ".join(f"{LABELS[row]} {pair_label(col)} {METRIC_NAMES[metric]} prints ({delta})"
                       for (metric, row, col), delta in ZENG2021_TABLE1_PRINTED_DELTAS.items())
    lines = _mt_footer(footer, "Table 1", PAIRS, "our TransF of the same pair")
    lines += [f"(paper) deltas: value minus TransF, as printed; they match the printed values except: {errata} "
              f"(shown as printed)",
              "(ours) deltas: our system minus our TransF on the same pair and metric",
              "Average (paper): BLEU over the 10 pairs, SacreBLEU over 9 (Zh-En prints BLEU only); "
              "our SacreBLEU average leaves out Zh-En likewise; no significance test on our averages",
              *average_lines,
              *_params_line(ours, SYSTEM_ROWS, PAIRS)]
    return Table(title="zeng2021 Table 1: BLEU and SacreBLEU on WMT14, WMT17 and NIST12, paper vs. ours",
                 columns=["Lang.", "Metric", *_system_columns(SYSTEM_ROWS)], rows=rows, footer=lines)


def _ablation_rows(ours: dict, paper: dict[str, ReportedTable], pairs: tuple[str, ...], reference: str,
                   marks: bool) -> list[list[str]]:
    """Model, then per pair and metric: paper as printed, ours with delta to the reference row."""
    rows = []
    for row in paper["bleu"].rows:
        cells = [row.system]
        for pair in pairs:
            ref = _entry(ours, reference, pair)
            for metric in METRICS:
                cells += [paper[metric].row(row.row_id).cells[pair].bleu,
                          _our_mt(_entry(ours, row.row_id, pair), ref, metric, marks)]
        rows.append(cells)
    return rows


def _ablation_columns(pairs: tuple[str, ...]) -> list[str]:
    """Model, then '<Pair> <Metric> (paper|ours)'."""
    return ["Model"] + [f"{pair_label(p)} {METRIC_NAMES[m]} ({s})" for p in pairs for m in METRICS
                        for s in ("paper", "ours")]


def table2(ours: dict[str, dict[str, dict]], footer: dict) -> Table:
    """zeng2021 Table 2: position embeddings vs RAN (En-De); rows transf, -pos-e, -pos-e+ran-e, -pos-d, -pos-d+ran-d."""
    _check_ours(ours, TABLE2_ROWS, EN_DE, _check_mt)
    _check_footer(footer, MT_FOOTER)
    lines = _mt_footer(footer, "Table 2", EN_DE, "our TransF")
    lines += ["(ours) deltas: our system minus our TransF; the paper prints no deltas or marks in this table, "
              "and its TransF SacreBLEU here (27.12) differs from Table 1's (27.00)",
              *_params_line(ours, TABLE2_ROWS, EN_DE)]
    return Table(title="zeng2021 Table 2: ablating position embeddings and RAN (En-De), paper vs. ours",
                 columns=_ablation_columns(EN_DE), rows=_ablation_rows(ours, TABLE2, EN_DE, "transf", True),
                 footer=lines)


def table3(ours: dict[str, dict[str, dict]], footer: dict) -> Table:
    """zeng2021 Table 3: RAN-ALL ablations (En-De, En-Fr); rows ran-all, fixed, no-ln-res."""
    pairs = ZENG2021_TABLE3_BLEU.pairs
    _check_ours(ours, TABLE3_ROWS, pairs, _check_mt)
    _check_footer(footer, MT_FOOTER[:-1])
    lines = _mt_footer(footer, "Table 3", pairs, None)
    lines += ["(ours) deltas: our ablation minus our RAN-ALL (the paper's reference in section 4.5); "
              "no significance marks: the paper prints none here and our p-values are against TransF, "
              "which this table does not show",
              "fixed: initial attention matrices random and not trained; w/o LN&RES: no layer normalisation "
              "and residual connection in the recurrent transition module",
              *_params_line(ours, TABLE3_ROWS, pairs)]
    return Table(title="zeng2021 Table 3: RAN ablations (En-De, En-Fr), paper vs. ours",
                 columns=_ablation_columns(pairs), rows=_ablation_rows(ours, TABLE3, pairs, "ran-all", False),
                 footer=lines)


# ------------------------------------------------------------------ Table 4 (summarisation, dialogue)
def table4(ours: dict[str, dict[str, dict]], footer: dict) -> Table:
    """zeng2021 Table 4: ROUGE for summarisation, BLEU-4/ROUGE-L/Meteor for dialogue, paper vs ours.

    ours[row]["summarization"] = {"rouge1", "rouge2", "rougeL"}, ours[row]["dialogue"] = {"bleu4", "rougeL",
    "meteor"}, scores in % (0..100) or None ("n/a", explained by footer["na_reasons"][metric]).
    Rows transf, synr, ran-e, ran-d, ran-all.
    """
    _check_ours(ours, TABLE4_ROWS, TASKS, _check_task)
    _check_footer(footer, ANALYSIS_FOOTER)
    reasons = footer.get("na_reasons", {})
    rows = []
    for row in ZENG2021_TABLE4_SUMMARIZATION.rows:
        cells = [row.system]
        for task in TASKS:
            entry = _entry(ours, row.row_id, task)
            for metric in TABLE4[task].pairs:
                ours_text = ""
                if entry is not None and entry[metric] is None:
                    if metric not in reasons:
                        raise PipelineError(f"footer.na_reasons.{metric}: missing; ours.{row.row_id}.{task}."
                                            f"{metric} is None, so the footer must say why")
                    ours_text = "n/a"
                elif entry is not None:
                    ours_text = f"{entry[metric]:.2f}"
                cells += [TABLE4[task].row(row.row_id).cells[metric].bleu, ours_text]
        rows.append(cells)
    standin = footer.get("standin")
    title = "zeng2021 Table 4: summarisation and dialogue generation, paper vs. ours"
    lines = [f"paper: {PAPER}, Table 4: CNN/DailyMail summarisation and PersonaChat dialogue (nlg-eval); "
             f"(paper) columns as printed there, (ours) columns from this run"]
    if standin:
        title += " (ours on STAND-IN tasks, see below)"
        lines.append(f"STAND-IN: ours are not on the paper's data but on {standin}; compare how the models rank, "
                     f"not absolute scores")
    lines += [f"scale: {footer['scale']}",
              f"corpora: {_per_pair(footer, 'corpora', TASKS)}",
              f"test sets: {_per_pair(footer, 'test_sets', TASKS)}",
              "scores (ours) in % like the paper's"]
    lines += [f"n/a ({METRIC_LABELS[m]}): {reason}" for m, reason in reasons.items()]
    columns = ["Model"] + [f"{TASK_LABELS[t]} {METRIC_LABELS[m]} ({s})" for t in TASKS for m in TABLE4[t].pairs
                           for s in ("paper", "ours")]
    return Table(title=title, columns=columns, rows=rows, footer=lines)


# ------------------------------------------------------------------ Figure 3 (decoding speed)
def _check_speed(entry, where: str, pair: str) -> None:
    """{"speed": [{"batch_size", "beam", "tokens_per_s", ...}, ...]}: distinct settings, positive rates."""
    _check_keys(entry, where, ("speed",))
    speed = entry["speed"]
    if not isinstance(speed, list) or not speed:
        raise PipelineError(f"{where}.speed: expected a non-empty list of {{'batch_size', 'beam', "
                            f"'tokens_per_s'}} dicts, got {speed!r}")
    seen = set()
    for i, item in enumerate(speed):
        at = f"{where}.speed[{i}]"
        if not isinstance(item, dict):
            raise PipelineError(f"{at}: expected a dict with 'batch_size', 'beam', 'tokens_per_s', got {item!r}")
        for key in ("batch_size", "beam", "tokens_per_s"):
            if key not in item:
                raise PipelineError(f"{at}.{key}: missing")
        setting = (_positive_int(item["batch_size"], f"{at}.batch_size"), _positive_int(item["beam"], f"{at}.beam"))
        if _nonneg(item["tokens_per_s"], f"{at}.tokens_per_s") == 0:
            raise PipelineError(f"{at}.tokens_per_s: expected a positive rate, got 0")
        if setting in seen:
            raise PipelineError(f"{at}: batch size {setting[0]}, beam {setting[1]} appears twice; expected "
                                f"one rate per setting")
        seen.add(setting)
    if not any(b == FIG3_BATCH or k == FIG3_BEAM for b, k in seen):
        raise PipelineError(f"{where}.speed: no setting at beam {FIG3_BEAM} or batch size {FIG3_BATCH}; expected "
                            f"the paper's settings (batch sizes at beam {FIG3_BEAM}, beams at batch size "
                            f"{FIG3_BATCH})")


def fig3(ours: dict[str, dict[str, dict]], footer: dict) -> tuple[Table, Figure]:
    """zeng2021 Figure 3: decoding tokens/s of TransF and RAN-ALL by batch size (beam 4) and beam (batch 100)."""
    _check_ours(ours, FIG3_ROWS, EN_DE, _check_speed)
    _check_footer(footer, ("scale", "test_sets", "device"))
    rates = {row: {(s["batch_size"], s["beam"]): s["tokens_per_s"] for s in e["speed"]}
             for row in FIG3_ROWS if (e := _entry(ours, row))}
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
    lines = [f"paper: {PAPER}, Figure 3 and section 3.3 print no numbers on the figure; the text reports "
             f"RAN-ALL decoding up to 23.6% faster at batch size {FIG3_BATCH} and about 1.2x across beam sizes; "
             f"all numbers here are ours",
             f"scale: {footer['scale']}",
             f"test set: {_per_pair(footer, 'test_sets', EN_DE)}",
             f"device: {footer['device']}"]
    if "speed" in footer:
        lines.append(f"speed: {footer['speed']}")
    lines.append("tokens/s: target tokens (without EOS) per second of batched beam search; ratio > 1: RAN-ALL "
                 "faster")
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
    value = _number(value, where, int, optional=False)
    if value < 0:
        raise PipelineError(f"{where}: expected a count >= 0, got {value!r}")
    return value


def _check_side(side, where: str, bins: int) -> None:
    """{"entropy": [L], "histogram": {"edges": [bins+1], "counts": [L x bins]}, "js": [L x L]}."""
    _check_keys(side, where, ("entropy", "histogram", "js"))
    entropy = side["entropy"]
    if not isinstance(entropy, list) or not entropy:
        raise PipelineError(f"{where}.entropy: expected a non-empty list of floats (one per layer), got {entropy!r}")
    for i, v in enumerate(entropy):
        _nonneg(v, f"{where}.entropy[{i}]")
    layers = len(entropy)
    hist = side["histogram"]
    _check_keys(hist, f"{where}.histogram", ("edges", "counts"))
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
    value = _number(value, where, float, optional=False)
    if not math.isfinite(value):
        raise PipelineError(f"{where}: expected a finite number, got {value!r}")
    return value


def _check_attention(entry, where: str, pair: str) -> None:
    """{"attention": {"enc": SIDE, "dec": SIDE, "n_sentences": int, "bins": int}}."""
    _check_keys(entry, where, ("attention",))
    attention, at = entry["attention"], f"{where}.attention"
    _check_keys(attention, at, ("enc", "dec", "n_sentences", "bins"))
    _positive_int(attention["n_sentences"], f"{at}.n_sentences")
    bins = _positive_int(attention["bins"], f"{at}.bins")
    for side in SIDES:
        _check_side(attention[side], f"{at}.{side}", bins)


def _attention(ours: dict) -> dict[str, dict]:
    """Checked attention statistics by row (ANALYSIS_ROWS order); all models the same depth per side."""
    _check_ours(ours, ANALYSIS_ROWS, EN_DE, _check_attention)
    found = {row: e["attention"] for row in ANALYSIS_ROWS if (e := _entry(ours, row))}
    for side in SIDES:
        depths = {row: len(a[side]["entropy"]) for row, a in found.items()}
        first = next(iter(depths), None)
        for row, depth in depths.items():
            if depth != depths[first]:
                raise PipelineError(f"ours.{row}.en-de.attention.{side}.entropy: {depth} layers; expected "
                                    f"{depths[first]} like ours.{first}")
    return found


def _analysis_footer(footer: dict, figure: str, found: dict[str, dict]) -> list[str]:
    """Paper reference (no numbers printed), scale, data, sentences analysed per model."""
    _check_footer(footer, ANALYSIS_FOOTER)
    analysed = ", ".join(f"{LABELS[row]} {a['n_sentences']}" for row, a in found.items()) or "none yet"
    return [f"paper: {PAPER}, {figure} (prints no numbers); all numbers are ours, on the En-De test set",
            f"scale: {footer['scale']}",
            f"corpora: {_per_pair(footer, 'corpora', EN_DE)}",
            f"test set: {_per_pair(footer, 'test_sets', EN_DE)}",
            f"sentences analysed: {analysed}"]


def _depth(found: dict[str, dict], side: str) -> int:
    """Number of layers on a side (0 without results)."""
    return next((len(a[side]["entropy"]) for a in found.values()), 0)


def fig4(ours: dict[str, dict[str, dict]], footer: dict) -> tuple[Table, Figure]:
    """zeng2021 Figure 4: self-attention entropy (eq. 5) per encoder and decoder layer; rows transf, synr, ran-all."""
    found = _attention(ours)
    rows, panels = [], []
    for side, short in SIDES.items():
        layers = _depth(found, side)
        for layer in range(layers):
            rows.append([short, str(layer + 1)] + [f"{found[row][side]['entropy'][layer]:.3f}" if row in found
                                                   else "" for row in ANALYSIS_ROWS])
        panels.append(("Encoder" if side == "enc" else "Decoder", "layer", [str(i + 1) for i in range(layers)],
                       {LABELS[row]: a[side]["entropy"] for row, a in found.items()}))
    lines = _analysis_footer(footer, "Figure 4", found)
    lines.append("entropy: eq. (5) per attention distribution, averaged over time steps, then over the heads "
                 "of each layer (section 4.1)")
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


def fig5(ours: dict[str, dict[str, dict]], footer: dict) -> tuple[Table, Figure]:
    """zeng2021 Figure 5: histograms of attention weights at layers 1, middle, last, per side and model.

    Heights are fractions of the layer's weights per bin (our choice, so models with different counts compare).
    """
    found = _attention(ours)
    rows, grid = [], []
    for side, short in SIDES.items():
        edges = next((a[side]["histogram"]["edges"] for a in found.values()), [0.0, 1.0])
        for row, a in found.items():
            if a[side]["histogram"]["edges"] != edges:
                raise PipelineError(f"ours.{row}.en-de.attention.{side}.histogram.edges: differ from "
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
    lines = _analysis_footer(footer, "Figure 5", found)
    lines.append("heights: fraction of the layer's self-attention weights (all heads, all query positions) in "
                 "each bin; layers 1, middle and last (the paper: 1, 3, 6)")
    table = Table(title="zeng2021 Figure 5: histograms of attention weights (En-De), ours",
                  columns=["Side", "Layer", "Weight bin", *(LABELS[r] for r in ANALYSIS_ROWS)], rows=rows,
                  footer=lines)
    figure = histogram_grid(grid, title="zeng2021 Figure 5: histograms of attention weights (En-De), ours")
    return table, figure


def _fraction(value: float | None) -> str:
    """Four decimals; 'n/a' for a layer without weights."""
    return "n/a" if value is None else f"{value:.4f}"


def fig7(ours: dict[str, dict[str, dict]], footer: dict) -> tuple[Table, Figure]:
    """zeng2021 Figure 7: Jensen-Shannon divergence between the attention of each pair of layers."""
    found = _attention(ours)
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
    lines = _analysis_footer(footer, "Figure 7", found)
    lines.append("cell (i, j): Jensen-Shannon divergence between the attention distributions of layers i and j "
                 "(section 4.3); dark = similar, as in the paper")
    table = Table(title="zeng2021 Figure 7: JS divergence of attention between layers (En-De), ours",
                  columns=["Model", "Side", "Layer", *(f"L{j + 1}" for j in range(width))], rows=rows, footer=lines)
    figure = heatmap_grid(grid or [[None]], title="zeng2021 Figure 7: JS divergence between layers (En-De), ours",
                          cmap="Blues_r", xlabel="layer", ylabel="layer", one_based_ticks=True)
    return table, figure


# ------------------------------------------------------------------ Figure 6 (RAN weights)
def _check_patterns(entry, where: str, pair: str) -> None:
    """{"patterns": {"enc": [n x n per layer], "dec": [...]}}: square, finite, >= 0, rows not all zero."""
    _check_keys(entry, where, ("patterns",))
    patterns = entry["patterns"]
    _check_keys(patterns, f"{where}.patterns", tuple(SIDES))
    for side in SIDES:
        at = f"{where}.patterns.{side}"
        layers = patterns[side]
        if not isinstance(layers, list) or not layers:
            raise PipelineError(f"{at}: expected a non-empty list of n x n matrices (one per layer)")
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


def fig6(ours: dict[str, dict[str, dict]], footer: dict) -> tuple[Table, Figure]:
    """zeng2021 Figure 6: RAN-ALL's learned attention patterns; heatmaps of layers 1 and last per side."""
    _check_ours(ours, ("ran-all",), EN_DE, _check_patterns)
    _check_footer(footer, ANALYSIS_FOOTER)
    entry = _entry(ours, "ran-all")
    rows, grid = [], []
    if entry is not None:
        for side, short in SIDES.items():
            layers = entry["patterns"][side]
            for k, matrix in enumerate(layers):
                offset, entropy, first = pattern_stats(matrix)
                rows.append([short, str(k + 1), f"{len(matrix)} x {len(matrix)}", f"{offset:.2f}",
                             f"{entropy:.3f}", f"{first:.3f}"])
            grid.append([(f"{short} L{k}", layers[k - 1]) for k in sorted({1, len(layers)})])
    lines = [f"paper: {PAPER}, Figure 6 (prints no numbers; the paper's matrices are 80 x 80); all numbers are "
             f"ours, RAN-ALL on En-De",
             f"scale: {footer['scale']}",
             f"corpora: {_per_pair(footer, 'corpora', EN_DE)}",
             f"test set: {_per_pair(footer, 'test_sets', EN_DE)}",
             "summary per layer (our choice): rows normalised to sum 1; offset = argmax key position minus query "
             "position, entropy in nats, and the weight on the first token, each averaged over query positions"]
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
        _check_keys(item, at, ("bin", "bleu", "n"))
        if not isinstance(item["bin"], str) or not item["bin"]:
            raise PipelineError(f"{at}.bin: expected a label like '(0, 10]', got {item['bin']!r}")
        n = _count(item["n"], f"{at}.n")
        _score(item["bleu"], f"{at}.bleu", optional=n == 0)
        if n == 0 and item["bleu"] is not None:
            raise PipelineError(f"{at}.bleu: expected None for an empty bin, got {item['bleu']!r}")


def _check_length(entry, where: str, pair: str) -> None:
    """{"length": {"source": BINS, "target": BINS}}."""
    _check_keys(entry, where, ("length",))
    _check_keys(entry["length"], f"{where}.length", tuple(LENGTH_KINDS))
    for kind in LENGTH_KINDS:
        _check_bins(entry["length"][kind], f"{where}.length.{kind}")


def fig8(ours: dict[str, dict[str, dict]], footer: dict) -> tuple[Table, Figure]:
    """zeng2021 Figure 8: BLEU per source-length and target-length bin; rows transf, ran-e, ran-d, ran-all."""
    _check_ours(ours, FIG8_ROWS, EN_DE, _check_length)
    _check_footer(footer, ANALYSIS_FOOTER + ("bleu_signature",))
    found = {row: e["length"] for row in FIG8_ROWS if (e := _entry(ours, row))}
    rows, panels = [], []
    for kind in LENGTH_KINDS:
        first = next(iter(found), None)
        reference = found[first][kind] if first else []
        for row, length in found.items():
            if [(b["bin"], b["n"]) for b in length[kind]] != [(b["bin"], b["n"]) for b in reference]:
                raise PipelineError(f"ours.{row}.en-de.length.{kind}: bins or sentence counts differ from "
                                    f"{LABELS[first]}'s; expected the same bins of the same test set")
        labels = [b["bin"] for b in reference]
        bleu = {row: [b["bleu"] for b in length[kind]] for row, length in found.items()}
        for i, b in enumerate(reference):
            rows.append([kind, b["bin"], str(b["n"])] + [
                "" if row not in bleu else "n/a" if bleu[row][i] is None else f"{bleu[row][i]:.2f}"
                for row in FIG8_ROWS])
        panels.append((f"by {kind} length", f"length of {kind} sentence", labels,
                       {LABELS[row]: values for row, values in bleu.items()}))
    lines = [f"paper: {PAPER}, Figure 8 (prints no numbers); all numbers are ours",
             f"scale: {footer['scale']}",
             f"corpora: {_per_pair(footer, 'corpora', EN_DE)}",
             f"test set: {_per_pair(footer, 'test_sets', EN_DE)}",
             f"BLEU (ours): {_per_pair(footer, 'bleu_signature', EN_DE, collapse=True)}",
             "bins: sentence length in tokens of the tokenised source or reference; n/a: no sentences in the bin"]
    table = Table(title="zeng2021 Figure 8: BLEU by source and target length (En-De), ours",
                  columns=["Length of", "Bin", "Sentences", *(LABELS[r] for r in FIG8_ROWS)], rows=rows,
                  footer=lines)
    figure = bar_panels(panels, title="zeng2021 Figure 8: BLEU by sentence length (En-De), ours")
    return table, figure


LAYOUTS: dict[str, Callable] = {
    "zeng2021-table1": table1,
    "zeng2021-table2": table2,
    "zeng2021-table3": table3,
    "zeng2021-table4": table4,
    "zeng2021-fig3": fig3,
    "zeng2021-fig4": fig4,
    "zeng2021-fig5": fig5,
    "zeng2021-fig6": fig6,
    "zeng2021-fig7": fig7,
    "zeng2021-fig8": fig8,
}
FIGURE_LAYOUTS = ("zeng2021-fig3", "zeng2021-fig4", "zeng2021-fig5", "zeng2021-fig6", "zeng2021-fig7",
                  "zeng2021-fig8")  # these return (Table, Figure)


def build(name: str, ours: dict, footer: dict) -> tuple[Table, Figure | None]:
    """Run the layout `name`; (table, figure) with figure None for the plain tables."""
    return run_layout(LAYOUTS, FIGURE_LAYOUTS, name, ours, footer)
