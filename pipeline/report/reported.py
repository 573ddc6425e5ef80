"""Numbers a paper reports, transcribed as printed: Cell, Row and ReportedTable (each paper holds its own tables).

Values are kept as the printed text ("65M", "+9.4M", "24.70") so that decimals survive; the properties give
numbers. Marks are the papers' own significance marks: "⇑" p < 0.01, "↑" p < 0.05.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from pipeline.errors import PipelineError

MARKS = ("", "↑", "⇑")
_PARAMS = re.compile(r"^\+?\d+(\.\d+)?M$")
_BLEU = re.compile(r"^\d+\.\d+$")
_DECIMAL = _BLEU  # speed (steps/second) and probing accuracy (%) are printed the same way


@dataclass(frozen=True)
class Cell:
    """One (row, column) entry as printed; None = "n/a".

    params/bleu/mark: parameters, a score (BLEU or another metric) and its mark; speed: training
    steps/second; probing: task -> accuracy in % (the paper checks its task names).
    """

    params: str | None = None
    bleu: str | None = None
    mark: str = ""
    speed: str | None = None
    probing: dict[str, str] | None = None

    def __post_init__(self):
        if self.params is not None and not _PARAMS.match(self.params):
            raise PipelineError(f"reported params: expected e.g. '65M' or '+9.4M', got {self.params!r}")
        if self.bleu is not None and not _BLEU.match(self.bleu):
            raise PipelineError(f"reported BLEU: expected e.g. '27.31', got {self.bleu!r}")
        if self.mark not in MARKS:
            raise PipelineError(f"reported mark: expected one of {MARKS}, got {self.mark!r}")
        if self.speed is not None and not _DECIMAL.match(self.speed):
            raise PipelineError(f"reported speed: expected e.g. '1.28', got {self.speed!r}")
        for task, accuracy in (self.probing or {}).items():
            if not isinstance(accuracy, str) or not _DECIMAL.match(accuracy):
                raise PipelineError(f"reported probing {task}: expected e.g. '92.20', got {accuracy!r}")

    @property
    def speed_value(self) -> float | None:
        """Training steps/second as a number, None for n/a."""
        return None if self.speed is None else float(self.speed)

    def probing_value(self, task: str) -> float | None:
        """Accuracy (%) of one probing task as a number, None if not printed."""
        value = (self.probing or {}).get(task)
        return None if value is None else float(value)

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
    """A table row: id (ours: the table's row key), group, system/citation, architecture, cells by column.

    setting: a second descriptive column where the paper has one (e.g. "to Dec."), else "".
    """

    row_id: str
    group: str
    system: str
    architecture: str
    cells: dict[str, Cell]
    setting: str = ""


@dataclass(frozen=True)
class ReportedTable:
    """One table of one paper: its columns (`pairs`, in order) and rows (in order)."""

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


def pick(tables: dict[str, ReportedTable], paper: str, table: str) -> ReportedTable:
    """tables[table] of a paper, or a PipelineError naming the known ones."""
    if table not in tables:
        raise PipelineError(f"{paper}: no reported {table!r}; known: {', '.join(tables)}")
    return tables[table]
