"""shu2016's numbers as printed: Table 1 (4.2: RIBES(%) and BLEU(%) of the four decoders on ASPEC En-Ja) and Table 2
(5.2: the official WAT 2016 results, RIBES(%), BLEU(%) and the pairwise crowdsourcing HUMAN score; "-" = n/a).
Each score is kept as printed text in Cell.bleu (the field holds any printed score)."""
from __future__ import annotations

from pipeline.errors import PipelineError
from pipeline.report.reported import NA, Cell, ReportedTable, Row

EXISTING = {"online-a"}  # reported only: not built by the pipeline


def _rows(columns: tuple[str, ...], printed: dict[str, tuple[str, str]]) -> tuple[Row, ...]:
    """Rows from (label, 'value value ...') per row id, in `columns` order; '-' -> n/a."""
    rows = []
    for row_id, (label, text) in printed.items():
        values = text.split()
        if len(values) != len(columns):
            raise PipelineError(f"shu2016 row {row_id}: {len(values)} values; expected {len(columns)}")
        cells = {col: NA if v == "-" else Cell(bleu=v) for col, v in zip(columns, values)}
        rows.append(Row(row_id, "existing" if row_id in EXISTING else "this work", label, label, cells))
    return tuple(rows)


# Table 1: ASPEC English-Japanese test, the four decoder variants of 4.1
SHU2016_TABLE1 = ReportedTable(
    paper="shu2016", table="table1", description="RIBES(%) and BLEU(%), ASPEC En-Ja (4.2)", pairs=("ribes", "bleu"),
    rows=_rows(("ribes", "bleu"), {
        "baseline": ("Baseline model", "79.49 29.32"),
        "enlarged": ("Enlarged decoder RNN", "79.60 30.24"),
        "stacked": ("Stacked decoder RNN", "79.25 29.07"),
        "residual": ("Residual decoder RNN", "79.88 30.75")}),
)

# Table 2: official evaluation results of WAT2016 (En-Ja)
SHU2016_TABLE2 = ReportedTable(
    paper="shu2016", table="table2", description="official WAT 2016 En-Ja results (5.2)",
    pairs=("ribes", "bleu", "human"),
    rows=_rows(("ribes", "bleu", "human"), {
        "online-a": ("Online A", "71.52 19.81 49.750"),
        "t2s": ("T2S system 1-best", "77.87 32.32 -"),
        "t2s-rerank": ("T2S neural reranking", "78.29 33.57 -"),
        "ensemble": ("Ensemble of 2 NMT models with residual decoder RNNs (submission 1)", "81.72 33.38 30.500"),
        "gmbr": ("+ GMBR system combination with T2S results", "80.90 34.25 -"),
        "heuristic": ("+ System combination with a simple heuristics (submission 2)", "81.44 34.77 29.750")}),
)
