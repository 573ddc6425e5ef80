"""Compare a rebuilt table with the committed one: identical, or the cells (and footer lines) that differ."""
from __future__ import annotations

from pathlib import Path

from pipeline.errors import PipelineError


def _parse(path: Path) -> tuple[list[str], list[list[str]], list[str]]:
    """(header, rows, footer lines) of a table TSV."""
    if not path.is_file():
        raise PipelineError(f"{path}: no such table")
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines:
        raise PipelineError(f"{path}: empty; expected a header row")
    rows = [line.split("\t") for line in lines[1:] if not line.startswith("#")]
    return lines[0].split("\t"), rows, [line for line in lines[1:] if line.startswith("#")]


def compare_tables(committed: Path, rebuilt: Path) -> tuple[bool, list[str]]:
    """(same, report lines): byte-identical, or every differing cell named by its row's first cells and column."""
    if committed.is_file() and rebuilt.is_file() and committed.read_bytes() == rebuilt.read_bytes():
        return True, [f"{rebuilt}: identical to the committed table"]
    if not committed.is_file():
        return False, [f"{rebuilt}: rebuilt; no committed table to compare with ({committed} missing)"]
    old_head, old_rows, old_foot = _parse(committed)
    new_head, new_rows, new_foot = _parse(rebuilt)
    lines = [f"{rebuilt}: DIFFERS from the committed table:"]
    if old_head != new_head:
        lines.append(f"  columns: committed {old_head}, rebuilt {new_head}")
    if len(old_rows) != len(new_rows):
        lines.append(f"  rows: committed {len(old_rows)}, rebuilt {len(new_rows)}")
    for old, new in zip(old_rows, new_rows):
        label = " / ".join(cell for cell in new[:2] if cell)
        for column, a, b in zip(new_head, old, new):
            if a != b:
                lines.append(f"  {label} | {column}: committed {a or '(empty)'}, rebuilt {b or '(empty)'}")
    for a, b in zip(old_foot, new_foot):
        if a != b:
            lines.append(f"  footer: committed {a[2:]!r}, rebuilt {b[2:]!r}")
    if len(old_foot) != len(new_foot):
        lines.append(f"  footer lines: committed {len(old_foot)}, rebuilt {len(new_foot)}")
    return False, lines
