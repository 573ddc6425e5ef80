"""werlen2018 tables: the paper's rows and numbers beside ours (Tables 1-6; Figures 2-4: figures.py).

Each layout takes the generic cells[row][column] and facts (pipeline/report/cells.py); footer() builds every footer
from the facts. Rows the paper cites from other work show its numbers only.
"""
from __future__ import annotations

from pipeline.errors import PipelineError
from pipeline.papers.werlen2018.reported import (LABELS, WERLEN2018_MARKS, WERLEN2018_TABLE1, WERLEN2018_TABLE2,
                                                 WERLEN2018_TABLE3, WERLEN2018_TABLE3_MARKS, WERLEN2018_TABLE4,
                                                 WERLEN2018_TABLE5, WERLEN2018_TABLE5_PAIRS, WERLEN2018_TABLE6,
                                                 WERLEN2018_TABLE6_PARAMS)
from pipeline.report.format import (SIGNIFICANCE_FIELDS, check_cells, check_facts, check_keys, check_number,
                                    check_significance, format_params, mark, pair_label, per_column, signature_text,
                                    splits_text, stat_test_text, training_words)
from pipeline.report.layouts import register_layout
from pipeline.report.reported import Cell, ReportedTable
from pipeline.report.table import Table
from pipeline.scales import embedded_data

PAPER = "Miculicich Werlen et al. (2018)"
TEST_LABELS = {"nt14": "NT14", "nt15": "NT15", "nt16": "NT16", "lm": "LM"}


def label(column: str) -> str:
    """'en-zh' -> 'En-Zh', 'nt14' -> 'NT14'."""
    return TEST_LABELS.get(column) or pair_label(column)


# ------------------------------------------------------------------ cells
def _check(values: tuple[str, ...]):
    """A cell check: 'bleu' (a number), optionally `values`, the system and significance fields."""
    def check(cell, where: str, column: str) -> None:
        check_keys(cell, where, ("bleu",), ("system", *values, *SIGNIFICANCE_FIELDS))
        check_number(cell["bleu"], f"{where}.bleu", float, optional=False)
        check_number(cell.get("params"), f"{where}.params", int, optional=True)
        check_significance(cell, where)
    return check


def _ours(cells: dict, row_id: str, column: str, marks: list | None = None) -> str:
    """Our BLEU (two decimals, with the paper's marks where `marks` and better than the baseline); '' if none."""
    cell = cells.get(row_id, {}).get(column)
    if cell is None:
        return ""
    return f"{cell['bleu']:.2f}{mark(cell, marks) if marks else ''}"


def _paper(cell: Cell | None, suffix: str = "") -> str:
    """BLEU as printed, 'n/a' where the paper prints none."""
    return "n/a" if cell is None or cell.bleu is None else cell.bleu + suffix


def _ours_rows(table: ReportedTable) -> tuple[str, ...]:
    return tuple(row.row_id for row in table.rows if row.group != "existing")


# ------------------------------------------------------------------ footer
def footer(facts: dict, table: str, columns: tuple[str, ...], metric: str, extra: list[str] | tuple = ()) -> list[str]:
    """Paper, scale, corpora, test sets, the BLEU signature, and what the embedded data stand in for."""
    check_facts(facts, ("scale", "corpora", "test_sets", "signatures"))
    lines = [f"paper: {PAPER}, {table}; (paper) columns as printed there, (ours) columns from this run",
             f"scale: {facts['scale']}", f"corpora: {per_column(facts['corpora'], columns, label, collapse=True)}",
             f"test sets: {splits_text(facts, columns, label)}",
             f"BLEU (ours): {metric}; {signature_text(facts, 'bleu', columns, label)}"]
    scale = facts["scale"]
    if embedded_data(scale):
        lines.append(f"{scale} scale: the embedded software-localisation catalogues of the same directions stand in "
                     f"for the paper's corpora (UN En-Zh, WMT13 Es-En, WMT16 En-De), with {training_words(scale)} "
                     "(params/werlen2018.yaml)")
        if any(col in TEST_LABELS for col in columns):
            lines.append(f"{scale} scale: NT14, NT15 and NT16 are three consecutive parts of one held-out test split "
                         "(stand-ins for newstest2014-2016)")
    return lines + list(extra)


MULTI_BLEU = "multi-bleu.perl's BLEU on tokenised, truecased text"
NIST_BLEU = "NIST BLEU (mteval-v13a's tokenisation, sacreBLEU) on detokenised, detruecased text"


# ------------------------------------------------------------------ Table 1
@register_layout("werlen2018-table1")
def table1(cells: dict, facts: dict) -> Table:
    """Table 1: |Θ| and BLEU of the five NMT systems on En-Zh and Es-En; cells need "bleu", may give "params"."""
    pairs = WERLEN2018_TABLE1.pairs
    check_cells(cells, _ours_rows(WERLEN2018_TABLE1), pairs, _check(("params",)))
    rows = []
    for row in WERLEN2018_TABLE1.rows:
        paper_params = next((c.params for c in row.cells.values() if c.params), None)
        ours = cells.get(row.row_id, {})
        params = {c.get("params") for c in ours.values()}
        out = [row.system, paper_params or "–", " / ".join(format_params(p) for p in sorted(p for p in params if p))]
        for pair in pairs:
            out += [_paper(row.cells[pair]), _ours(cells, row.row_id, pair)]
        rows.append(out)
    columns = ["Models", "|Θ| (paper)", "|Θ| (ours)"]
    for pair in pairs:
        columns += [f"{label(pair)} BLEU (paper)", f"{label(pair)} BLEU (ours)"]
    lines = footer(facts, "Table 1", pairs, MULTI_BLEU, extra=[
        "|Θ| (ours): our parameter count (per direction where the vocabularies differ); the paper's at 50K "
        "vocabularies, ours at paper scale in the README",
        "SMT baseline: Moses, as printed (not rebuilt)"])
    return Table(title="werlen2018 Table 1: |Θ| and BLEU (multi-bleu), En-Zh and Es-En, paper vs. ours",
                 columns=columns, rows=rows, footer=lines)


# ------------------------------------------------------------------ Tables 2-4
def _bleu_table(table: ReportedTable, cells: dict, marks: list | None = None,
                paper_marks: dict | None = None) -> tuple[list[str], list[list[str]]]:
    """Columns and rows: the system, then per column BLEU (paper) and BLEU (ours)."""
    check_cells(cells, _ours_rows(table), table.pairs, _check(()))
    columns = ["Models"] + [f"{label(c)} {side}" for c in table.pairs for side in ("(paper)", "(ours)")]
    rows = []
    for row in table.rows:
        suffix = (paper_marks or {}).get(row.row_id, "")
        rows.append([row.system + suffix] + [text for col in table.pairs for text in
                                             (_paper(row.cells[col]), _ours(cells, row.row_id, col, marks))])
    return columns, rows


@register_layout("werlen2018-table2")
def table2(cells: dict, facts: dict) -> Table:
    """Table 2: multi-bleu of the five NMT systems on En-De NT14 and NT15, the cited systems as printed."""
    columns, rows = _bleu_table(WERLEN2018_TABLE2, cells)
    lines = footer(facts, "Table 2", WERLEN2018_TABLE2.pairs, MULTI_BLEU,
                   extra=["cited systems (Luong, Zhang, Yang, Zhang): as printed (not rebuilt)"])
    return Table(title="werlen2018 Table 2: BLEU (multi-bleu), En-De NT14 and NT15, paper vs. ours",
                 columns=columns, rows=rows, footer=lines)


@register_layout("werlen2018-table3")
def table3(cells: dict, facts: dict) -> Table:
    """Table 3: NIST BLEU of the baseline and the two residual decoders on En-De NT14-16, marked against the
    baseline (* p < 0.05, ** p < 0.01; the paper marks whole rows, we mark each test set)."""
    columns, rows = _bleu_table(WERLEN2018_TABLE3, cells, WERLEN2018_MARKS, WERLEN2018_TABLE3_MARKS)
    check_facts(facts, ("scale", "corpora", "test_sets", "signatures"))
    extra = ["Winning WMT, NMT (BPE), Syntax NMT: as printed (not rebuilt)"]
    if facts.get("significance"):
        extra.insert(0, f"significance (ours): {stat_test_text(facts)}, one-tailed, over sentence-level BLEU "
                        f"(our choice: the paper does not say over what), against our NMT baseline; * p < 0.05, "
                        f"** p < 0.01, only where ours scores higher; the paper marks rows, we mark each test set")
    lines = footer(facts, "Table 3", WERLEN2018_TABLE3.pairs, NIST_BLEU, extra=extra)
    return Table(title="werlen2018 Table 3: NIST BLEU, En-De NT14-16, paper vs. ours", columns=columns, rows=rows,
                 footer=lines)


@register_layout("werlen2018-table4")
def table4(cells: dict, facts: dict) -> Table:
    """Table 4: the self-attentive residual connections with the content+scope (eq. 12) and content (eq. 13)
    scores, En-Zh and Es-En."""
    columns, rows = _bleu_table(WERLEN2018_TABLE4, cells)
    lines = footer(facts, "Table 4", WERLEN2018_TABLE4.pairs, MULTI_BLEU,
                   extra=[f"Content: the same systems as Table 1's '{LABELS['self-attentive']}'"])
    return Table(title="werlen2018 Table 4: scoring functions of the self-attentive residual connections, paper vs. "
                       "ours", columns=["Attention function"] + columns[1:], rows=rows, footer=lines)


# ------------------------------------------------------------------ Table 6
def _check_lm(cell, where: str, column: str) -> None:
    check_keys(cell, where, ("perplexity",), ("system", "params"))
    for key in ("perplexity", "nll", "tokens"):
        if key not in (cell["perplexity"] or {}):
            raise PipelineError(f"{where}.perplexity: missing '{key}'")


@register_layout("werlen2018-table6")
def table6(cells: dict, facts: dict) -> Table:
    """Table 6: LSTM language models with mean and self-attentive residual connections, test perplexity; the paper's
    other rows as printed. cells[row]["lm"] = {"perplexity": the perplexity analysis, "params"}."""
    ours = tuple(row_id for row_id, *_, trained in WERLEN2018_TABLE6 if trained)
    check_cells(cells, ours, ("lm",), _check_lm)
    check_facts(facts, ("scale", "corpora"))
    rows = []
    for row_id, system, d, ppl, _ in WERLEN2018_TABLE6:
        cell = cells.get(row_id, {}).get("lm")
        rows.append([system, str(d), ppl, "" if cell is None else f"{cell['perplexity']['perplexity']:.1f}",
                     "" if cell is None else format_params(cell.get("params"))])
    lines = [f"paper: {PAPER}, Table 6; (paper) columns as printed there ({WERLEN2018_TABLE6_PARAMS} parameters each), "
             "(ours) from this run",
             f"scale: {facts['scale']}", f"corpus (ours): {per_column(facts['corpora'], ('lm',), label)}, the target "
             "side (the language model reads no source)",
             "perplexity (ours): exp of the mean negative log-likelihood per target token and end of sentence on the "
             "test references, sentence by sentence (Daniluk et al. 2016 run over continuous text)",
             "d (paper): the hidden size as printed; ours: params/werlen2018.yaml, models lm-*"]
    if embedded_data(facts["scale"]):
        lines.append(f"{facts['scale']} scale: a stand-in for Daniluk et al. (2016)'s Wikipedia corpus: the English "
                     "side of the embedded Es-En catalogue, with subword units")
    lines.append("LSTM + Attention and LSTM + 4-gram (Daniluk et al., 2016): as printed (not rebuilt)")
    return Table(title="werlen2018 Table 6: language modelling perplexity, paper vs. ours",
                 columns=["Systems", "d (paper)", "Perplexity (paper)", "Perplexity (ours)", "|Θ| (ours)"], rows=rows,
                 footer=lines)


# ------------------------------------------------------------------ Table 5
def _check_ranking(cell, where: str, column: str) -> None:
    check_keys(cell, where, ("ranking",), ("system",))
    for key in ("sheet", "key", "items", "systems", "filled", "tally"):
        if key not in (cell["ranking"] or {}):
            raise PipelineError(f"{where}.ranking: missing '{key}'")


def _ranked(result: dict, first: str, second: str) -> tuple[float, float, float] | None:
    """(>, =, <) in % of `first` against `second` from a column's tally (either order), None before any sheet."""
    if not result["tally"]:
        return None
    for pair in result["tally"]["pairs"]:
        if (pair["first"], pair["second"]) == (first, second):
            return pair["better_pct"], pair["equal_pct"], pair["worse_pct"]
        if (pair["first"], pair["second"]) == (second, first):
            return pair["worse_pct"], pair["equal_pct"], pair["better_pct"]
    raise PipelineError(f"ranking tally: no pair {first} / {second}; expected the systems {result['systems']}")


@register_layout("werlen2018-table5")
def table5(cells: dict, facts: dict) -> Table:
    """Table 5: human ranking, % of sentences where the first system ranked higher (>), equal (=) or lower (<) than
    the second; ours from the filled-in blind sheets once there are any (the numbers cannot be measured by a
    program), else the sheets to fill."""
    directions = ("en-zh", "es-en", "en-de")
    check_cells(cells, ("baseline", "mean", "self-attentive"), directions, _check_ranking)
    check_facts(facts, ("scale", "corpora"))
    results = {}
    for d in directions:
        found = [cells[row][d]["ranking"] for row in cells if d in cells[row]]
        if not found:
            raise PipelineError(f"cells.baseline.{d}: missing; expected the ranking analysis of every direction "
                                f"({', '.join(directions)})")
        results[d] = found[0]
    rows = []
    for first, second in WERLEN2018_TABLE5_PAIRS:
        out = [f"{LABELS[first].lstrip('+ ')} vs. {LABELS[second].lstrip('+ ')}"]
        for d in directions:
            ours = _ranked(results[d], first, second)
            out += [" ".join(str(v) for v in WERLEN2018_TABLE5[(first, second)][d]),
                    "" if ours is None else " ".join(f"{v:.0f}" for v in ours)]
        rows.append(out)
    lines = [f"paper: {PAPER}, Table 5; (paper) columns as printed there ('> = <' in %), (ours) from the filled-in "
             f"sheets", f"scale: {facts['scale']}", f"corpora: {per_column(facts['corpora'], directions, label)}",
             "paper as printed: the En-De 'Mean vs. Baseline' row sums to 110"]
    for d in directions:
        r = results[d]
        if r["tally"]:
            lines.append(f"{label(d)} (ours): {r['tally']['items']} ranked items from {len(r['filled'])} sheet(s): "
                         f"{', '.join(r['filled'])}")
        else:
            lines.append(f"{label(d)} (ours): not yet ranked; a native speaker fills in the blind sheet {r['sheet']} "
                         f"({r['items']} sentences, the three systems in random order; the key {r['key']} stays "
                         f"apart), saved as <dir>/{d}.tsv, with tables.werlen2018-table5.analyses.ranking.sheets "
                         f"set to <dir>")
    return Table(title="werlen2018 Table 5: human ranking (%), paper vs. ours",
                 columns=["System"] + [f"{label(d)} {side}" for d in directions for side in ("(paper)", "(ours)")],
                 rows=rows, footer=lines)
