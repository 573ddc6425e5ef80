"""zhang2018's numbers as printed (Tables 1-4) and its significance marks ("*": p < 0.01 against RNNsearch*, the
sign test of Collins et al. 2005)."""
from __future__ import annotations

from pipeline.errors import PipelineError
from pipeline.report.reported import Cell, ReportedTable, Row

# (row id, system as printed); ours are the rows of params/zhang2018.yaml's tables, the rest cited
LABELS = {"rnnsearch": "RNNsearch", "rnnsearch-star": "RNNsearch*", "vrnmt": "VRNMT", "rnmt": "RNMT",
          "birnn-gcn": "BiRNN+GCN"}
CITED = {"vrnmt": "Su et al. (2018)", "birnn-gcn": "Bastings et al. (2017)"}
ZHANG2018_MARKS = [(0.01, "*")]  # Tables 1-2: * p < 0.01 against RNNsearch*


def _rows(columns: tuple[str, ...], printed: dict[str, str]) -> tuple[Row, ...]:
    """Rows from 'value value ...' strings per row id, in `columns` order; a trailing '*' on a value is kept apart."""
    rows = []
    for row_id, text in printed.items():
        values = text.split()
        if len(values) != len(columns):
            raise PipelineError(f"zhang2018 row {row_id}: {len(values)} values; expected {len(columns)}")
        cells = {col: Cell(bleu=v.rstrip("*")) for col, v in zip(columns, values)}
        group = "existing" if row_id in CITED else "this work"
        rows.append(Row(row_id, group, LABELS[row_id], LABELS[row_id], cells))
    return tuple(rows)


# Table 1: NIST Zh-En, case-insensitive BLEU, four references
ZHANG2018_TABLE1 = ReportedTable(
    paper="zhang2018", table="table1", description="case-insensitive BLEU on NIST Zh-En MT03-MT06",
    pairs=("mt03", "mt04", "mt05", "mt06", "average"),
    rows=_rows(("mt03", "mt04", "mt05", "mt06", "average"), {
        "rnnsearch": "33.70 36.15 31.81 32.71 33.59", "rnnsearch-star": "37.93 40.53 36.65 35.80 37.73",
        "vrnmt": "38.08 41.07 36.82 36.72 38.17", "rnmt": "39.24* 42.01* 37.79* 37.81* 39.21"}),
)

# Table 2: WMT17 En-De, case-insensitive BLEU
ZHANG2018_TABLE2 = ReportedTable(
    paper="zhang2018", table="table2", description="case-insensitive BLEU on WMT17 En-De newstest2015-2017",
    pairs=("test15", "test16", "test17", "average"),
    rows=_rows(("test15", "test16", "test17", "average"), {
        "rnnsearch": "17.3 20.9 16.6 18.3", "rnnsearch-star": "21.4 25.6 20.1 22.4", "rnmt": "22.7* 27.8* 21.8* 24.1"}),
)

# Table 3: WMT16 En-De newstest2016, case-sensitive multi-bleu
ZHANG2018_TABLE3 = ReportedTable(
    paper="zhang2018", table="table3", description="case-sensitive BLEU (multi-bleu) on WMT16 En-De newstest2016",
    pairs=("test16",), rows=_rows(("test16",), {"birnn-gcn": "23.9", "rnmt": "25.4"}),
)

# Table 4: BLEU and AER (%) on Liu and Sun (2015)'s 900 Zh-En pairs
ZHANG2018_TABLE4 = {"rnnsearch-star": ("22.40", "46.76"), "rnmt": ("24.12", "45.66")}

# Which printed values carry '*' (Tables 1 and 2: RNMT on every test set, not the averages)
ZHANG2018_STARS = {"table1": {"rnmt": {"mt03", "mt04", "mt05", "mt06"}},
                   "table2": {"rnmt": {"test15", "test16", "test17"}}}

# 5.3: "with only 4.1M parameters more" (RNMT over RNNsearch*, WMT17 En-De)
ZHANG2018_EXTRA_PARAMS = "+4.1M"
