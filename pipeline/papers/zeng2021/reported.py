"""zeng2021's numbers as printed (Tables 1-4): REPORTED[table] -> ReportedTable.

Columns ("pairs") are the paper's: language pairs (+ "average", its Average row), or a task's metrics (Table 4,
whose scores sit in Cell.bleu, the one score field). The † marks live in ZENG2021_TABLE1_DAGGERS.
"""
from __future__ import annotations

from pipeline.errors import PipelineError
from pipeline.report.reported import NA, Cell, ReportedTable, Row, pick

ZENG2021_PAIRS = ("en-de", "de-en", "en-fr", "en-lv", "lv-en", "en-fi", "fi-en", "en-tr", "tr-en", "zh-en")
ZENG2021_DAGGER = "†"  # the paper's mark: RAN significantly better than TransF, p < 0.01
# (row id, label as printed, group, what it is)
ZENG2021_SYSTEMS = (
    ("transf", "TransF", "baseline", "Transformer-Base"),
    ("hcsa", "HC-SA", "related", "hard-coded Gaussian self-attention (You et al., 2020)"),
    ("synr", "Syn-R", "related", "random Synthesizer (Tay et al., 2020)"),
    ("ran-e", "RAN-E", "ours", "RAN in the encoder"),
    ("ran-d", "RAN-D", "ours", "RAN in the decoder"),
    ("ran-all", "RAN-ALL", "ours", "RAN in encoder and decoder"),
)


def _zeng2021_table(table: str, description: str, columns: tuple[str, ...],
                    printed: dict[str, str], systems=ZENG2021_SYSTEMS) -> ReportedTable:
    """A ReportedTable from 'value value ...' strings per row id ('n/a' = not printed), in `columns` order."""
    rows = []
    for row_id, label, group, what in systems:
        values = printed[row_id].split()
        if len(values) != len(columns):
            raise PipelineError(f"zeng2021 {table} row {row_id}: {len(values)} values; expected {len(columns)}")
        rows.append(Row(row_id, group, label, what,
                        {col: NA if v == "n/a" else Cell(bleu=v) for col, v in zip(columns, values)}))
    return ReportedTable(paper="zeng2021", table=table, description=description, pairs=columns, rows=tuple(rows))


# zeng2021 Table 1: case-sensitive tokenised BLEU (multi-bleu.perl) and SacreBLEU; Zh-En prints BLEU only.
ZENG2021_TABLE1_BLEU = _zeng2021_table(
    "table1-bleu", "Tokenised case-sensitive BLEU (multi-bleu.perl) on 10 pairs; average over the 10",
    ZENG2021_PAIRS + ("average",), {
        "transf": "27.70 30.97 42.40 16.78 18.74 21.96 26.05 16.45 17.65 48.17 26.69",
        "hcsa": "26.94 29.82 41.26 16.11 18.41 21.36 25.07 16.35 17.89 47.02 26.02",
        "synr": "27.17 30.26 41.33 16.67 18.56 22.08 25.69 16.19 17.18 47.56 26.27",
        "ran-e": "27.42 30.74 42.26 16.66 18.78 22.46 25.96 17.61 18.39 47.95 26.82",
        "ran-d": "28.18 30.95 42.39 17.39 18.84 22.89 26.55 17.22 18.62 48.69 27.17",
        "ran-all": "27.66 30.84 42.05 17.00 18.81 22.45 26.10 17.23 18.41 47.91 26.85",
    })
ZENG2021_TABLE1_SACREBLEU = _zeng2021_table(
    "table1-sacrebleu", "Detokenised SacreBLEU on 9 pairs (Zh-En: n/a); average over the 9",
    ZENG2021_PAIRS + ("average",), {
        "transf": "27.00 31.00 39.40 16.30 17.40 20.00 24.10 12.20 16.60 n/a 22.67",
        "hcsa": "26.30 29.80 38.30 15.60 17.10 19.30 23.30 12.00 16.90 n/a 22.07",
        "synr": "26.50 30.20 38.30 16.30 17.30 20.10 23.80 11.80 16.10 n/a 22.27",
        "ran-e": "26.80 30.70 39.30 16.20 17.40 20.50 24.10 13.20 17.30 n/a 22.83",
        "ran-d": "27.50 31.00 39.40 16.90 17.50 20.70 24.70 12.70 17.60 n/a 23.11",
        "ran-all": "27.00 30.80 39.10 16.50 17.50 20.50 24.30 13.00 17.30 n/a 22.89",
    })
# (metric, row id, column) of every † printed in Table 1.
ZENG2021_TABLE1_DAGGERS = frozenset(
    [(metric, row, pair) for metric in ("bleu", "sacrebleu") for row, pair in (
        ("ran-d", "en-de"), ("ran-d", "en-lv"), ("ran-e", "en-fi"), ("ran-d", "en-fi"), ("ran-all", "en-fi"),
        ("ran-d", "fi-en"), ("ran-e", "en-tr"), ("ran-d", "en-tr"), ("ran-all", "en-tr"), ("ran-e", "tr-en"),
        ("ran-d", "tr-en"), ("ran-all", "tr-en"), ("ran-d", "average"))]
    + [("bleu", "ran-d", "zh-en")])
# Printed deltas that differ from value - TransF value: (metric, row id, column) -> delta as printed.
ZENG2021_TABLE1_PRINTED_DELTAS = {
    ("bleu", "ran-all", "en-fr"): "-0.25",  # 42.05 - 42.40 = -0.35
    ("bleu", "ran-e", "fi-en"): "+0.09",  # 25.96 - 26.05 = -0.09
}

# zeng2021 Table 2: ablating position embeddings (En-De); its TransF SacreBLEU (27.12) differs from Table 1's.
_ZENG2021_TABLE2_SYSTEMS = (
    ("transf", "TransF", "baseline", "Transformer-Base"),
    ("-pos-e", "−Pos-E", "ablation", "no encoder position embeddings"),
    ("-pos-e+ran-e", "−Pos-E+RAN-E", "ablation", "no encoder position embeddings, RAN encoder"),
    ("-pos-d", "−Pos-D", "ablation", "no decoder position embeddings"),
    ("-pos-d+ran-d", "−Pos-D+RAN-D", "ablation", "no decoder position embeddings, RAN decoder"),
)
ZENG2021_TABLE2_BLEU = _zeng2021_table(
    "table2-bleu", "Position-embedding ablation, tokenised BLEU", ("en-de",),
    {"transf": "27.70", "-pos-e": "13.14", "-pos-e+ran-e": "27.48", "-pos-d": "27.66", "-pos-d+ran-d": "28.02"},
    _ZENG2021_TABLE2_SYSTEMS)
ZENG2021_TABLE2_SACREBLEU = _zeng2021_table(
    "table2-sacrebleu", "Position-embedding ablation, SacreBLEU", ("en-de",),
    {"transf": "27.12", "-pos-e": "12.90", "-pos-e+ran-e": "26.80", "-pos-d": "27.07", "-pos-d+ran-d": "27.40"},
    _ZENG2021_TABLE2_SYSTEMS)

# zeng2021 Table 3: RAN-ALL ablations (En-De, En-Fr).
_ZENG2021_TABLE3_SYSTEMS = (
    ("ran-all", "RAN-ALL", "ours", "RAN in encoder and decoder"),
    ("fixed", "fixed", "ablation", "RAN-ALL, initial attention matrices random and not trained"),
    ("no-ln-res", "w/o LN&RES", "ablation", "RAN-ALL without layer norm and residual in the recurrent transition"),
)
ZENG2021_TABLE3_BLEU = _zeng2021_table(
    "table3-bleu", "RAN ablations, tokenised BLEU", ("en-de", "en-fr"),
    {"ran-all": "27.66 42.05", "fixed": "27.52 41.93", "no-ln-res": "27.15 41.14"}, _ZENG2021_TABLE3_SYSTEMS)
ZENG2021_TABLE3_SACREBLEU = _zeng2021_table(
    "table3-sacrebleu", "RAN ablations, SacreBLEU", ("en-de", "en-fr"),
    {"ran-all": "27.00 39.10", "fixed": "26.80 38.90", "no-ln-res": "26.50 38.20"}, _ZENG2021_TABLE3_SYSTEMS)

# zeng2021 Table 4: CNN/DailyMail summarisation and PersonaChat dialogue (nlg-eval); no HC-SA row.
_ZENG2021_TABLE4_SYSTEMS = tuple(s for s in ZENG2021_SYSTEMS if s[0] != "hcsa")
ZENG2021_TABLE4_SUMMARIZATION = _zeng2021_table(
    "table4-summarization", "Abstractive summarisation (CNN/DailyMail), ROUGE", ("rouge1", "rouge2", "rougeL"),
    {"transf": "39.07 17.30 36.00", "synr": "36.99 15.78 34.07", "ran-e": "39.55 17.73 36.62",
     "ran-d": "37.59 16.41 34.73", "ran-all": "38.25 17.10 35.31"}, _ZENG2021_TABLE4_SYSTEMS)
ZENG2021_TABLE4_DIALOGUE = _zeng2021_table(
    "table4-dialogue", "Dialogue generation (PersonaChat)", ("bleu4", "rougeL", "meteor"),
    {"transf": "3.12 16.54 8.05", "synr": "2.87 14.82 7.74", "ran-e": "3.47 16.54 8.33",
     "ran-d": "3.30 16.32 8.03", "ran-all": "3.50 16.66 8.21"}, _ZENG2021_TABLE4_SYSTEMS)

REPORTED: dict[str, ReportedTable] = {t.table: t for t in (
    ZENG2021_TABLE1_BLEU, ZENG2021_TABLE1_SACREBLEU, ZENG2021_TABLE2_BLEU, ZENG2021_TABLE2_SACREBLEU,
    ZENG2021_TABLE3_BLEU, ZENG2021_TABLE3_SACREBLEU, ZENG2021_TABLE4_SUMMARIZATION, ZENG2021_TABLE4_DIALOGUE)}


def reported(table: str) -> ReportedTable:
    """REPORTED[table], or a PipelineError naming the known ones."""
    return pick(REPORTED, "zeng2021", table)
