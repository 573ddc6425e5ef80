"""shu2016 Tables 1-2: the paper's rows and numbers beside ours (Figure 2: figures.py).

Table 1 (4.2): RIBES and BLEU of the four decoders (baseline, enlarged, stacked, residual) on ASPEC En-Ja. Table 2
(5.2): the official WAT 2016 results of the submitted systems; Online A and the HUMAN column as reported only. Each
layout takes the generic cells[row]["test"] and facts (pipeline/report/cells.py); ours RIBES is a fraction, shown x 100.
"""
from __future__ import annotations

import math

from pipeline.errors import PipelineError
from pipeline.papers.shu2016.reported import EXISTING, SHU2016_TABLE1, SHU2016_TABLE2
from pipeline.report.format import (check_cells, check_facts, check_keys, check_number, check_score,
                                    check_significance, decimal, signature_text, standin_lines, training_words)
from pipeline.report.layouts import register_layout
from pipeline.report.reported import ReportedTable
from pipeline.report.table import Table
from pipeline.scales import embedded_data

PAPER = "Shu and Miura (2016)"
COLUMN = "test"
STANDIN = "shu-standin"  # params/shu2016.yaml: the tiny-scale stand-in for the T2S system
HEADERS = {"ribes": "RIBES(%)", "bleu": "BLEU(%)", "human": "HUMAN"}
# params/shu2016.yaml combinations, per scale: n-best size, GMBR tuning sentences, the heuristic's length threshold
SEGMENTATION = ("segmentation (ours): Japanese hypotheses and references cut into words by janome before RIBES and "
                "BLEU, where WAT segments them with KyTea (our choice: KyTea's model is not available offline)")
FOOTNOTE1 = ("the paper's footnote 1: a critical bug in the submitted NMT implementation was found after submission "
             "(Table 1's models are bug-free), so Table 2's ensemble is not comparable with Table 1")


def embedded_line(models: str, scale: str) -> str:
    """What the embedded data stand in for at a scale on them (the same words in every table and the figure)."""
    rank = "; compare how the systems rank, not absolute scores" if scale == "tiny" else ""
    return (f"{scale} scale: the embedded en-ja software-localisation catalogue (its own held-out split) stands in for "
            f"ASPEC, with {training_words(scale, models)} (params/shu2016.yaml){rank}")


def _check_scores(cell, where: str, column: str) -> None:
    """ribes a fraction in [0, 1] (RIBES.py's scale), bleu in 0..100, system a string if given."""
    check_keys(cell, where, ("ribes", "bleu"), ("system",))
    ribes = check_number(cell["ribes"], f"{where}.ribes", float, optional=False)
    if not (math.isfinite(ribes) and 0.0 <= ribes <= 1.0):
        raise PipelineError(f"{where}.ribes: expected a fraction in [0, 1] (RIBES.py's scale), got {ribes!r}")
    check_score(cell["bleu"], f"{where}.bleu")
    check_significance(cell, where)


def _ours(cells: dict, row: str, value: str) -> str:
    """Our RIBES (x 100) or BLEU, two decimals; '' without a cell."""
    cell = cells.get(row, {}).get(COLUMN)
    if cell is None:
        return ""
    return decimal(100 * cell["ribes"]) if value == "ribes" else decimal(cell["bleu"])


def _rows(table: ReportedTable, cells: dict, labels: dict[str, str]) -> tuple[list[str], list[list[str]]]:
    """Columns and rows: per value, (paper) as printed ('-' for n/a) and (ours); HUMAN (paper) only."""
    columns, rows = ["Model"], []
    for value in table.pairs:
        columns += [f"{HEADERS[value]} (paper)"] + ([] if value == "human" else [f"{HEADERS[value]} (ours)"])
    for row in table.rows:
        out = [labels.get(row.row_id, row.system)]
        for value in table.pairs:
            out.append(row.cells[value].bleu or "-")
            if value != "human":
                out.append("" if row.row_id in EXISTING else _ours(cells, row.row_id, value))
        rows.append(out)
    return columns, rows


def footer(facts: dict, where: str, models: str, extra: list[str] | tuple = ()) -> list[str]:
    """Paper, scale, corpus, test set, the RIBES and BLEU signatures, segmentation, the tiny scale, then `extra`."""
    check_facts(facts, ("scale", "corpora", "test_sets", "signatures"))
    corpus = facts["corpora"].get(COLUMN, "n/a")
    lines = [f"paper: {PAPER}, {where}; (paper) columns as printed there, (ours) columns from this run",
             f"scale: {facts['scale']}", f"corpus: {corpus}",
             f"test set: the {facts['test_sets'].get(COLUMN, 'test')} split of {corpus}",
             f"RIBES (ours): RIBES.py's corpus RIBES x 100; {signature_text(facts, 'ribes', (COLUMN,))}",
             f"BLEU (ours): multi-bleu.perl 4-gram BLEU; {signature_text(facts, 'bleu', (COLUMN,))}",
             SEGMENTATION, *standin_lines(facts, (COLUMN,))]
    if embedded_data(facts["scale"]):
        lines.append(embedded_line(models, facts["scale"]))
    return lines + list(extra)


@register_layout("shu2016-table1")
def table1(cells: dict, facts: dict) -> Table:
    """Table 1: RIBES and BLEU of the baseline, enlarged, stacked and residual decoders."""
    check_cells(cells, tuple(r.row_id for r in SHU2016_TABLE1.rows), (COLUMN,), _check_scores)
    columns, rows = _rows(SHU2016_TABLE1, cells, {})
    lines = footer(facts, "Table 1 (4.2)", "64 units; the enlarged decoder 90")
    return Table(title="shu2016 Table 1: RIBES and BLEU of the decoder variants, En-Ja, paper vs. ours",
                 columns=columns, rows=rows, footer=lines)


def _t2s_lines(standin: bool) -> list[str]:
    """Where the T2S system's outputs come from."""
    out = ["T2S system (Travatar, 5.1): out of scope; at paper scale its 1-best and n-best outputs are user-supplied "
           "(params key paths.manual.shu2016_t2s)"]
    if standin:
        out.append(f"STAND-IN for the T2S system: {STANDIN}, an RNNsearch (BiGRU encoder, GRU decoder) the pipeline "
                   "trains, replaces it in the T2S, reranking, GMBR and heuristic rows")
    return out


def _combination_lines(cells: dict, facts: dict) -> list[str]:
    """How ours rerank and combine: the settings of the rows' combinations as the table step states them (facts)."""
    check_facts(facts, ("combinations",))
    found = {}
    for row in ("t2s-rerank", "gmbr", "heuristic"):
        system = cells.get(row, {}).get(COLUMN, {}).get("system")
        if system is not None:
            if system not in facts["combinations"]:
                raise PipelineError(f"facts.combinations: no settings of the {row} row's system {system!r}; "
                                    "expected the combination it names")
            found[row] = facts["combinations"][system]["settings"]
    lines = ["Ensemble (ours): the two residual-decoder models (1200 units at paper scale, 77 at tiny) from different "
             "seeds, their log-probabilities averaged at each beam-search step"]
    if "t2s-rerank" in found:
        lines.append(f"T2S neural reranking (ours): the T2S {found['t2s-rerank']['n']}-best list of each sentence "
                     "rescored by the ensemble's length-normalised log-probability of each candidate, the best kept "
                     "(our choice: the paper does not say how it scores)")
    if "gmbr" in found:
        gmbr = found["gmbr"]
        lines.append(f"GMBR (ours): over the pooled {gmbr['n']}-best lists of the ensemble and the T2S system, loss "
                     f"from 1-4-gram precisions, brevity penalty and Kendall's tau, weights tuned on "
                     f"{gmbr['tune_sentences']} development sentences to maximise {gmbr['metric']} (paper: 20-best "
                     "lists, 500 sentences)")
    if "heuristic" in found:
        lines.append(f"simple heuristics (ours): the ensemble's translation where the source has fewer than "
                     f"{found['heuristic']['threshold']} words, else the reranked T2S (paper: 40; tiny scale: 12, "
                     "our choice for the short catalogue sentences)")
    return lines


@register_layout("shu2016-table2")
def table2(cells: dict, facts: dict) -> Table:
    """Table 2: the WAT 2016 submissions; Online A and HUMAN as reported, the T2S stand-in labelled at tiny scale."""
    check_cells(cells, tuple(r.row_id for r in SHU2016_TABLE2.rows if r.row_id not in EXISTING), (COLUMN,),
                _check_scores)
    lines = footer(facts, "Table 2 (5.2, the official WAT 2016 evaluation)",
                   "the submission's residual models 77 units, the T2S stand-in 64")
    standin = embedded_data(facts["scale"]) or cells.get("t2s", {}).get(COLUMN, {}).get("system") == STANDIN
    labels = {"t2s": "T2S system 1-best (tiny: stand-in, an RNNsearch the pipeline trains)"} if standin else {}
    columns, rows = _rows(SHU2016_TABLE2, cells, labels)
    lines += [*_t2s_lines(standin), *_combination_lines(cells, facts),
              "Online A and HUMAN (WAT 2016's pairwise crowdsourcing score): as reported, not rebuilt; '-': not "
              "evaluated (the paper's footnote 2: GMBR was not submitted to human evaluation)", FOOTNOTE1]
    return Table(title="shu2016 Table 2: WAT 2016 En-Ja systems and combinations, paper vs. ours", columns=columns,
                 rows=rows, footer=lines)
