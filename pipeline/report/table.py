"""A small generic table (title, columns, rows, footer) rendered as TSV or Markdown."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.fileio import atomic_open


@dataclass
class Table:
    """Rows are lists of strings, one per column; footer lines are free text."""

    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    footer: list[str] = field(default_factory=list)

    def __post_init__(self):
        for number, row in enumerate(self.rows, start=1):
            if len(row) != len(self.columns):
                raise PipelineError(f"table {self.title!r} row {number}: {len(row)} cells; "
                                    f"expected {len(self.columns)} ({', '.join(self.columns)})")
        for where, text in self._texts():
            if not isinstance(text, str) or "\t" in text or "\n" in text or "\r" in text:
                raise PipelineError(f"table {self.title!r} {where}: expected a string without tabs "
                                    f"or line breaks, got {text!r}")

    def _texts(self):
        """(where, text) for every string the table renders."""
        yield "title", self.title
        for i, col in enumerate(self.columns, start=1):
            yield f"column {i}", col
        for r, row in enumerate(self.rows, start=1):
            for c, cell in enumerate(row, start=1):
                yield f"row {r} cell {c}", cell
        for i, line in enumerate(self.footer, start=1):
            yield f"footer line {i}", line

    def to_tsv(self) -> str:
        """Header row, one line per row, then footer lines as '# ...' comments."""
        lines = ["\t".join(self.columns)] + ["\t".join(row) for row in self.rows]
        lines += [f"# {line}" for line in self.footer]
        return "\n".join(lines) + "\n"

    def to_markdown(self) -> str:
        """Bold title, pipe table, footer paragraph (one hard line break per footer line)."""
        def md_row(cells):
            return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

        parts = [f"**{self.title}**", "", md_row(self.columns), "|" + "|".join("---" for _ in self.columns) + "|"]
        parts += [md_row(row) for row in self.rows]
        if self.footer:
            parts += ["", "\\\n".join(self.footer)]
        return "\n".join(parts) + "\n"


def tsv_parts(path: str | os.PathLike) -> tuple[list[str], list[list[str]], list[str]]:
    """(header, rows, footer lines as written, '#' kept) of a table's TSV (Table.to_tsv's inverse)."""
    path = Path(path)
    if not path.is_file():
        raise PipelineError(f"{path}: no such table")
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines:
        raise PipelineError(f"{path}: empty; expected a header row")
    rows = [line.split("\t") for line in lines[1:] if not line.startswith("#")]
    return lines[0].split("\t"), rows, [line for line in lines[1:] if line.startswith("#")]


def write_table(table: Table, tsv: str | os.PathLike, markdown: str | os.PathLike | None = None) -> None:
    """Write the TSV (and optionally the Markdown rendering) atomically."""
    with atomic_open(tsv) as handle:
        handle.write(table.to_tsv())
    if markdown is not None:
        with atomic_open(markdown) as handle:
            handle.write(table.to_markdown())
