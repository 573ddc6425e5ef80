"""Compare a rebuilt table with the committed one: identical, or the cells (and footer lines) that differ."""
from __future__ import annotations

from pathlib import Path

from pipeline.report.table import tsv_parts


def _keyed(header: list[str], rows: list[list[str]]) -> dict[tuple, dict[str, str]]:
    """Rows by label (their first two cells, and which occurrence of that label): column -> cell."""
    seen: dict[tuple, int] = {}
    out = {}
    for row in rows:
        label = tuple(row[:2])
        seen[label] = seen.get(label, 0) + 1
        out[label + (seen[label],)] = dict(zip(header, row))
    return out


def _name(key: tuple) -> str:
    text = " / ".join(cell for cell in key[:2] if cell)
    return f"{text} (#{key[2]})" if key[2] > 1 else text


def compare_tables(committed: Path, rebuilt: Path) -> tuple[bool, list[str]]:
    """(same, report lines): byte-identical, or every differing cell named by its row's label and column,
    rows only one side has, and differing footer lines."""
    if committed.is_file() and rebuilt.is_file() and committed.read_bytes() == rebuilt.read_bytes():
        return True, [f"{rebuilt}: identical to the committed table"]
    if not committed.is_file():
        return False, [f"{rebuilt}: rebuilt; no committed table to compare with ({committed} missing)"]
    old_head, old_rows, old_foot = tsv_parts(committed)
    new_head, new_rows, new_foot = tsv_parts(rebuilt)
    lines = [f"{rebuilt}: DIFFERS from the committed table:"]
    if old_head != new_head:
        lines.append(f"  columns: committed {old_head}, rebuilt {new_head}")
    old, new = _keyed(old_head, old_rows), _keyed(new_head, new_rows)
    for key in new:
        if key not in old:
            lines.append(f"  row {_name(key)}: new")
            continue
        for column in new_head:
            a, b = old[key].get(column, ""), new[key][column]
            if a != b:
                lines.append(f"  {_name(key)} | {column}: committed {a or '(empty)'}, rebuilt {b or '(empty)'}")
    lines += [f"  row {_name(key)}: gone" for key in old if key not in new]
    lines += [f"  footer: committed {a[2:]!r}, rebuilt {b[2:]!r}" for a, b in zip(old_foot, new_foot) if a != b]
    if len(old_foot) != len(new_foot):
        lines.append(f"  footer lines: committed {len(old_foot)}, rebuilt {len(new_foot)}")
    return False, lines
