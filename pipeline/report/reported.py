"""Numbers the papers report, transcribed as printed: REPORTED[paper][table] -> ReportedTable.

Values are kept as the printed text ("65M", "+9.4M", "24.70") so that decimals survive; the
properties give numbers. Significance marks are the paper's own: "⇑" p < 0.01, "↑" p < 0.05.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from pipeline.errors import PipelineError

MARKS = ("", "↑", "⇑")
_PARAMS = re.compile(r"^\+?\d+(\.\d+)?M$")
_BLEU = re.compile(r"^\d+\.\d+$")


@dataclass(frozen=True)
class Cell:
    """One (row, language pair) entry: parameter count and BLEU as printed; None = "n/a"."""

    params: str | None = None
    bleu: str | None = None
    mark: str = ""

    def __post_init__(self):
        if self.params is not None and not _PARAMS.match(self.params):
            raise PipelineError(f"reported params: expected e.g. '65M' or '+9.4M', got {self.params!r}")
        if self.bleu is not None and not _BLEU.match(self.bleu):
            raise PipelineError(f"reported BLEU: expected e.g. '27.31', got {self.bleu!r}")
        if self.mark not in MARKS:
            raise PipelineError(f"reported mark: expected one of {MARKS}, got {self.mark!r}")

    @property
    def bleu_value(self) -> float | None:
        """BLEU as a number, None for n/a."""
        return None if self.bleu is None else float(self.bleu)

    @property
    def params_millions(self) -> float | None:
        """Millions of parameters (for a "+X.XM" cell: the increase over the row's baseline)."""
        return None if self.params is None else float(self.params.lstrip("+")[:-1])

    @property
    def params_relative(self) -> bool:
        """True for a "+X.XM" cell (increase over the baseline row)."""
        return self.params is not None and self.params.startswith("+")


@dataclass(frozen=True)
class Row:
    """A table row: id (ours: the experiment key), group, system/citation, architecture, cells by pair."""

    row_id: str
    group: str
    system: str
    architecture: str
    cells: dict[str, Cell]


@dataclass(frozen=True)
class ReportedTable:
    """One table of one paper: its language pairs (column order) and rows (row order)."""

    paper: str
    table: str
    description: str
    pairs: tuple[str, ...]
    rows: tuple[Row, ...]

    def row(self, row_id: str) -> Row:
        """The row with this id; an unknown id names the known ones."""
        for row in self.rows:
            if row.row_id == row_id:
                return row
        raise PipelineError(f"{self.paper} {self.table}: no row {row_id!r}; rows are "
                            f"{', '.join(r.row_id for r in self.rows)}")


NA = Cell()  # "n/a" for both numbers

# hao2019 Table 3: WMT17 Zh-En (newstest2017) and WMT14 En-De (newstest2014), case-sensitive BLEU.
HAO2019_TABLE3 = ReportedTable(
    paper="hao2019",
    table="table3",
    description="Comparison with existing NMT systems on WMT17 Zh-En and WMT14 En-De",
    pairs=("zh-en", "en-de"),
    rows=(
        Row("vaswani2017-base", "existing", "Vaswani et al., 2017", "Transformer-Base",
            {"zh-en": NA, "en-de": Cell("65M", "27.3")}),
        Row("vaswani2017-big", "existing", "Vaswani et al., 2017", "Transformer-Big",
            {"zh-en": NA, "en-de": Cell("213M", "28.4")}),
        Row("hassan2018-big", "existing", "Hassan et al., 2018", "Transformer-Big",
            {"zh-en": Cell(None, "24.2"), "en-de": NA}),
        Row("chen2018-rnmt-san", "existing", "Chen et al., 2018", "RNMT + SAN Encoder",
            {"zh-en": NA, "en-de": Cell(None, "28.84")}),
        Row("base", "this work", "this work", "Transformer-Base",
            {"zh-en": Cell("107.9M", "24.13"), "en-de": Cell("88.0M", "27.31")}),
        Row("base+biarn", "this work", "this work", "+ 1-Layer BiARN",
            {"zh-en": Cell("+9.4M", "24.70", "⇑"), "en-de": Cell("+9.4M", "28.21", "⇑")}),
        Row("big", "this work", "this work", "Transformer-Big",
            {"zh-en": Cell("303.9M", "24.56"), "en-de": Cell("264.1M", "28.58")}),
        Row("big+biarn", "this work", "this work", "+ 1-Layer BiARN",
            {"zh-en": Cell("+69.4M", "25.10", "⇑"), "en-de": Cell("+69.4M", "28.98", "↑")}),
    ),
)

REPORTED: dict[str, dict[str, ReportedTable]] = {
    "hao2019": {"table3": HAO2019_TABLE3},
}


def reported(paper: str, table: str) -> ReportedTable:
    """REPORTED[paper][table], or a PipelineError naming what exists."""
    if paper not in REPORTED:
        raise PipelineError(f"paper: no reported numbers for {paper!r}; known: {', '.join(REPORTED)}")
    if table not in REPORTED[paper]:
        raise PipelineError(f"{paper}: no reported {table!r}; known: {', '.join(REPORTED[paper])}")
    return REPORTED[paper][table]
