"""Several test sets from one held-out split: a corpus that asks for test sets its source does not build (an
embedded stand-in for NT14/NT15/NT16, say) gets its one test split cut into consecutive parts, one per name.

Our choice: consecutive, near-equal parts in file order (the split is already a seeded sample), the first part
keeping the name "test"; the data card records which lines each part holds. Gold word alignments of the test split
(test.links, one line per pair) are cut along with it. A source that builds its own test-<name> files (paper-scale
WMT, NIST) is left as it is.
"""
from __future__ import annotations

import json
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.fileio import atomic_open, read_lines, read_parallel, write_lines

CARD = "datacard.json"


def _bounds(total: int, parts: int) -> list[tuple[int, int]]:
    """[start, end) of `parts` consecutive near-equal parts of `total` lines (the first ones one line longer)."""
    size, extra = divmod(total, parts)
    bounds, start = [], 0
    for k in range(parts):
        end = start + size + (k < extra)
        bounds.append((start, end))
        start = end
    return bounds


def _links(path: Path, total: int) -> list[str]:
    """The gold links of the test split, one line per pair; another line count is an error naming the file."""
    lines = read_lines(path)
    if len(lines) != total:
        raise PipelineError(f"{path}: {len(lines)} lines, but the test split has {total} pairs; expected one line of "
                            f"gold links per pair")
    return lines


def ensure_test_sets(out_dir: Path, src: str, tgt: str, names: tuple[str, ...] | list[str]) -> dict[str, list[int]]:
    """Make test splits `names` ("test" first) exist in a raw layout; returns name -> [first line, end) of the parts
    cut here ({} when every split was already there). Missing splits and a present "test" -> the test split is cut
    into len(names) parts; any other gap -> PipelineError naming the files."""
    out_dir = Path(out_dir)
    names = list(names)
    if not names or names[0] != "test" or len(set(names)) != len(names):
        raise PipelineError(f"test sets {names!r}: expected distinct names, 'test' first")
    missing = [n for n in names[1:] if not (out_dir / f"{n}.{src}").exists()]
    if not missing:
        return {}
    if len(missing) != len(names) - 1:
        raise PipelineError(f"{out_dir}: has {', '.join(n for n in names[1:] if n not in missing)} but not "
                            f"{', '.join(missing)}; expected all of the corpus's test sets or only 'test'")
    sides = dict(zip((src, tgt), read_parallel(out_dir / f"test.{src}", out_dir / f"test.{tgt}")))
    total = len(sides[src])
    if (out_dir / "test.links").exists():
        sides["links"] = _links(out_dir / "test.links", total)
    if total < len(names):
        raise PipelineError(f"{out_dir}/test.{src}: {total} lines cannot make {len(names)} test sets "
                            f"({', '.join(names)}); raise the corpus's test_size")
    parts = dict(zip(names, _bounds(total, len(names))))
    for name in reversed(names):  # the fetch rule's output directory goes as a whole if this is interrupted
        start, end = parts[name]
        for lang, lines in sides.items():
            write_lines(out_dir / f"{name}.{lang}", lines[start:end])
    card_path = out_dir / CARD
    if card_path.exists():
        card = json.loads(card_path.read_text(encoding="utf-8"))
        card["test_sets"] = {"cut_from": f"test ({total} lines)", "parts": {n: list(b) for n, b in parts.items()}}
        with atomic_open(card_path) as f:
            f.write(json.dumps(card, ensure_ascii=False, indent=2) + "\n")
    return {n: list(b) for n, b in parts.items()}
