"""Blind human ranking of several systems' translations, tallied in pairs (werlen2018 section 7.2, Table 5).

The paper: an evaluator ranks the translations of the same source sentence by the systems compared (one each),
shown in random order so the system cannot be identified, for a sample of 50 sentences; the judgments are
integrated in pairs: for systems A vs B, the percentage of sentences where A was ranked higher (>), equal (=)
or lower (<) than B. Ties are allowed.

Our choices (the paper does not say how):
- the sample: `n` test lines drawn with random.Random(seed).sample, sorted by line; the candidates' order of
  each item comes from the same generator; all lines if the test set has fewer than `n`;
- the sheet: a TSV a spreadsheet opens (comment lines starting with '#', a header, one row per candidate,
  candidates lettered A, B, C ...; tabs and line breaks inside texts become spaces); the key that maps letters
  to systems is a separate JSON file, so the sheet stays blind;
- ranks: integers >= 1, 1 = best, ties share a rank, gaps allowed (1 1 3 is the same as 1 1 2 in pairs);
- several sheets (evaluators, or batches of one evaluator) are pooled: counts are summed over all their items;
  percentages are floats over the pooled number of items, rounded only at display.
"""
from __future__ import annotations

import csv
import json
import os
import random
import re
import string
from pathlib import Path
from typing import Iterator

from pipeline.errors import PipelineError
from pipeline.fileio import atomic_open

LETTERS = string.ascii_uppercase
COLUMNS = ["item", "line", "source", "reference", "candidate", "translation", "rank"]
INSTRUCTIONS = [
    "Ranking sheet: each item is one source sentence with several candidate translations, in random order.",
    "Fill the 'rank' column of every row by translation quality: 1 = best, a larger number = worse.",
    "Equally good candidates share a rank, e.g. 1 1 2; gaps are allowed (1 1 3).",
    "Do not change the item, line or candidate columns; the reference, when given, is only a help.",
    "Save as tab-separated text (UTF-8). Lines starting with '#' are ignored.",
]


def check_inputs(sources: list[str], references: list[str] | None, hypotheses: dict[str, list[str]]) -> None:
    """Two to 26 systems, each with one translation per source line (and the references too, if given)."""
    if not sources:
        raise PipelineError("sources: empty; expected at least one source line to rank")
    if not 2 <= len(hypotheses) <= len(LETTERS):
        raise PipelineError(f"hypotheses: {len(hypotheses)} systems; expected 2 to {len(LETTERS)} systems to rank")
    named = dict(hypotheses) if references is None else {**hypotheses, "(references)": references}
    for name, lines in named.items():
        if len(lines) != len(sources):
            what = "references" if name == "(references)" else f"hypotheses of system {name!r}"
            raise PipelineError(f"{what} have {len(lines)} lines, sources have {len(sources)}; "
                                "expected one line per source line")


def build_sheet(sources: list[str], references: list[str] | None, hypotheses: dict[str, list[str]],
                n: int, seed: int) -> tuple[list[dict], dict]:
    """(sheet rows, key): `n` seeded sample lines, each with its systems' translations in a seeded random order."""
    check_inputs(sources, references, hypotheses)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise PipelineError(f"n: expected a number of sentences >= 1, got {n!r}")
    rng = random.Random(seed)
    systems = list(hypotheses)
    indices = sorted(rng.sample(range(len(sources)), min(n, len(sources))))
    rows, items = [], {}
    for item, index in enumerate(indices, start=1):
        order = rng.sample(systems, len(systems))
        row = {"item": item, "line": index + 1, "source": sources[index],
               "translations": [hypotheses[system][index] for system in order]}
        if references is not None:
            row["reference"] = references[index]
        rows.append(row)
        items[item] = {"line": index + 1, "order": order}
    return rows, {"seed": seed, "n": n, "systems": systems, "items": items}


def cell(text: str) -> str:
    """A text on one spreadsheet cell: tabs and line breaks become spaces."""
    return re.sub(r"\r\n|[\t\r\n]", " ", text)


def write_sheet(rows: list[dict], path: str | os.PathLike) -> None:
    """Write the blind sheet atomically: '#' instructions, the header, one row per candidate with an empty rank."""
    with atomic_open(path) as handle:
        for line in INSTRUCTIONS:
            handle.write(f"# {line}\n")
        writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
        writer.writerow(COLUMNS)
        for row in rows:
            for letter, text in zip(LETTERS, row["translations"]):
                writer.writerow([row["item"], row["line"], cell(row["source"]), cell(row.get("reference") or ""),
                                 letter, cell(text), ""])


def write_key(key: dict, path: str | os.PathLike) -> None:
    """Write the key (letters -> systems) as JSON, atomically, apart from the sheet."""
    with atomic_open(path) as handle:
        json.dump(key, handle, indent=1, ensure_ascii=False)
        handle.write("\n")


def read_key(path: str | os.PathLike) -> dict:
    """The key written by write_key, its item numbers back to ints."""
    try:
        with open(path, encoding="utf-8") as handle:
            key = json.load(handle)
        key["items"] = {int(item): entry for item, entry in key["items"].items()}
        key["systems"] = list(key["systems"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise PipelineError(f"{path}: not a ranking key ({err}); expected the JSON written by write_key") from None
    return key


def key_items(key: dict) -> dict[int, dict]:
    """The key's items with int item numbers (a key read straight from JSON has string ones)."""
    return {int(item): entry for item, entry in key["items"].items()}


def sheet_rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(line number, 7 fields) of the sheet's data rows after its checked header; comments and blank rows skipped."""
    header_seen = False
    with open(path, encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t")
        for fields in reader:
            if not any(f.strip() for f in fields) or fields[0].lstrip().startswith("#"):
                continue
            fields = fit(fields, f"{path}:{reader.line_num}")
            if not header_seen:
                if [f.strip().lower() for f in fields] != COLUMNS:
                    raise PipelineError(f"{path}:{reader.line_num}: header {fields!r}; expected the columns "
                                        f"{', '.join(COLUMNS)} (tab-separated)")
                header_seen = True
                continue
            yield reader.line_num, fields
    if not header_seen:
        raise PipelineError(f"{path}: no header line; expected the columns {', '.join(COLUMNS)} (tab-separated)")


def fit(fields: list[str], where: str) -> list[str]:
    """Exactly the 7 columns: empty cells a spreadsheet adds or drops at the end of a row are tolerated."""
    while len(fields) > len(COLUMNS) and not fields[-1].strip():
        fields = fields[:-1]
    if len(fields) == len(COLUMNS) - 1:
        fields = fields + [""]
    if len(fields) != len(COLUMNS):
        raise PipelineError(f"{where}: {len(fields)} tab-separated columns; expected {len(COLUMNS)}: "
                            f"{', '.join(COLUMNS)}")
    return fields


def parse_rank(text: str, letter: str, item: int, where: str) -> int:
    """The rank in a cell, an integer >= 1; PipelineError naming `where` (file:line) otherwise."""
    if not text.strip():
        raise PipelineError(f"{where}: no rank for candidate {letter} of item {item}; expected an integer >= 1 "
                            "(1 = best)")
    try:
        rank = int(text.strip())
    except ValueError:
        rank = 0
    if rank < 1:
        raise PipelineError(f"{where}: rank {text!r} for candidate {letter} of item {item}; expected an "
                            "integer >= 1 (1 = best)")
    return rank


def parse_item(text: str, what: str, where: str) -> int:
    """An item or line number (integer >= 1) in a cell; PipelineError naming `where` otherwise."""
    try:
        value = int(text.strip())
    except ValueError:
        value = 0
    if value < 1:
        raise PipelineError(f"{where}: {what} {text!r}; expected an integer >= 1")
    return value


def read_sheet(path: str | os.PathLike, key: dict | None = None) -> dict[int, dict[str, int]]:
    """item -> candidate letter -> rank from a filled sheet; with `key`, its items and lines are checked too."""
    path = Path(path)
    items = key_items(key) if key is not None else None
    ranks: dict[int, dict[str, int]] = {}
    first: dict[int, int] = {}
    lines: dict[int, int] = {}
    for number, fields in sheet_rows(path):
        where = f"{path}:{number}"
        item = parse_item(fields[0], "item", where)
        if items is not None and item not in items:
            raise PipelineError(f"{where}: unknown item {item}; expected an item of the key ({len(items)} items: "
                                f"{', '.join(map(str, sorted(items)))})")
        line = parse_item(fields[1], "line", where)
        expected = items[item]["line"] if items is not None else lines.setdefault(item, line)
        if line != expected:
            raise PipelineError(f"{where}: item {item} is test line {line}; expected line {expected}, as "
                                + ("in the key" if items is not None else f"on {path}:{first[item]}"))
        letter = fields[4].strip()
        letters = LETTERS[:len(items[item]["order"])] if items is not None else LETTERS
        if len(letter) != 1 or letter not in letters:
            raise PipelineError(f"{where}: candidate {fields[4]!r} of item {item}; expected one letter of "
                                f"{', '.join(letters) if len(letters) < len(LETTERS) else 'A to Z'}")
        first.setdefault(item, number)
        if letter in ranks.setdefault(item, {}):
            raise PipelineError(f"{where}: duplicate candidate {letter} of item {item}; expected each "
                                "candidate once")
        ranks[item][letter] = parse_rank(fields[6], letter, item, where)
    check_complete(path, ranks, first, items)
    return dict(sorted(ranks.items()))


def check_complete(path: Path, ranks: dict[int, dict[str, int]], first: dict[int, int],
                   items: dict[int, dict] | None) -> None:
    """Every item has all its candidates (the key's, or every letter the sheet uses); with a key, every item."""
    used = sorted(set().union(*ranks.values())) if ranks else []
    for item in sorted(ranks):
        expected = LETTERS[:len(items[item]["order"])] if items is not None else "".join(used)
        missing = [letter for letter in expected if letter not in ranks[item]]
        if missing:
            raise PipelineError(f"{path}:{first[item]}: item {item} has candidates {', '.join(sorted(ranks[item]))}; "
                                f"missing {', '.join(missing)} (expected {', '.join(expected)})")
    absent = sorted(set(items) - set(ranks)) if items is not None else []
    if absent:
        raise PipelineError(f"{path}: items {', '.join(map(str, absent))} of the key are missing; expected a "
                            "row per candidate of every item")
    if not ranks:
        raise PipelineError(f"{path}: no ranked rows; expected one row per candidate under the header")


def check_pairs(pairs: list[tuple[str, str]]) -> None:
    """A non-empty list of (first, second) pairs of two different system names."""
    if not pairs:
        raise PipelineError("pairs: empty; expected (first, second) pairs of system names")
    for pair in pairs:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2 or pair[0] == pair[1]:
            raise PipelineError(f"pairs: {pair!r}; expected a (first, second) pair of two different systems")


def system_ranks(letter_ranks: dict[str, int], order: list[str], where: str) -> dict[str, int]:
    """system -> rank of one item, through the key's order of its candidates."""
    letters = LETTERS[:len(order)]
    if sorted(letter_ranks) != list(letters):
        raise PipelineError(f"{where}: candidates {', '.join(sorted(letter_ranks))}; expected "
                            f"{', '.join(letters)} as in the key")
    return {system: letter_ranks[letter] for letter, system in zip(letters, order)}


def check_sheet(k: int, ranks: dict[int, dict[str, int]], key: dict, pairs: list[tuple[str, str]]) -> None:
    """The pairs name systems of the key, and the sheet has exactly the key's items."""
    for pair in pairs:
        for system in pair:
            if system not in key["systems"]:
                raise PipelineError(f"sheets[{k}]: pair {tuple(pair)!r} names system {system!r}, not in the key; "
                                    f"expected one of {', '.join(key['systems'])}")
    items = key_items(key)
    missing, extra = sorted(set(items) - set(ranks)), sorted(set(ranks) - set(items))
    if missing or extra:
        raise PipelineError(f"sheets[{k}]: the sheet's items do not match the key's: missing "
                            f"{missing or 'none'}, unknown {extra or 'none'}; expected the key of this sheet")


def tally(sheets: list[tuple[dict[int, dict[str, int]], dict]], pairs: list[tuple[str, str]]) -> dict:
    """Pairwise counts and percentages (floats) of first ranked better / equal / worse than second, sheets pooled."""
    check_pairs(pairs)
    counts = [[0, 0, 0] for _ in pairs]
    total = 0
    for k, (ranks, key) in enumerate(sheets):
        check_sheet(k, ranks, key, pairs)
        for item, entry in sorted(key_items(key).items()):
            by_system = system_ranks(ranks[item], entry["order"], f"sheets[{k}] item {item}")
            for count, (first, second) in zip(counts, pairs):
                a, b = by_system[first], by_system[second]
                count[0 if a < b else 1 if a == b else 2] += 1
            total += 1
    if total == 0:
        raise PipelineError("sheets: no ranked items; expected at least one filled sheet")
    return {"pairs": [pair_result(first, second, count, total) for count, (first, second) in zip(counts, pairs)],
            "items": total, "sheets": len(sheets)}


def pair_result(first: str, second: str, count: list[int], total: int) -> dict:
    """One pair's counts and percentages of `total` items (unrounded)."""
    better, equal, worse = count
    return {"first": first, "second": second, "better": better, "equal": equal, "worse": worse, "items": total,
            "better_pct": 100.0 * better / total, "equal_pct": 100.0 * equal / total,
            "worse_pct": 100.0 * worse / total}
