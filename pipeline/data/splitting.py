"""Dedup by source string and a seeded train/valid/test split in which all pairs sharing a normalised source string
go to the same split (embedded and generation corpora)."""
from __future__ import annotations

import hashlib
import re
from collections import Counter
from typing import Iterable

from pipeline.errors import PipelineError

VALID_FRACTION = 0.1  # our choice: when data is small, valid <= 10% and test <= 20% of the pairs
TEST_FRACTION = 0.2
_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Split key: case-folded, trailing punctuation and whitespace differences removed ("Save." ~ "save")."""
    return _SPACE.sub(" ", text.casefold()).strip().rstrip(".:!?…。：！？ ")


def dedup_by_source(pairs: Iterable[tuple[str, str]], drops: Counter) -> list[tuple[str, str]]:
    """Keep the first pair for each exact source string; later ones count as duplicate_source."""
    seen: set[str] = set()
    kept = []
    for src, tgt in pairs:
        if src in seen:
            drops["duplicate_source"] += 1
            continue
        seen.add(src)
        kept.append((src, tgt))
    return kept


def split_sizes(n: int, valid_size: int, test_size: int) -> tuple[int, int]:
    """(valid, test) sizes, capped at VALID_FRACTION / TEST_FRACTION of n when data is small."""
    if valid_size < 0 or test_size < 0:
        raise PipelineError(f"valid_size={valid_size}, test_size={test_size}: expected non-negative sizes")
    return min(valid_size, int(n * VALID_FRACTION)), min(test_size, int(n * TEST_FRACTION))


def split_pairs(pairs: list[tuple[str, str]], valid_size: int, test_size: int,
                seed: int) -> dict[str, list[tuple[str, str]]]:
    """Deterministic train/valid/test split; all pairs sharing a normalised source go to the same split.

    Groups are visited in the order of a seeded sha256 of their key; a group fills test, then valid, while it
    fits, and otherwise goes to train. Within each split pairs keep that hash order.
    """
    groups: dict[str, list[tuple[str, str]]] = {}
    for pair in pairs:
        groups.setdefault(normalise(pair[0]), []).append(pair)
    order = sorted(groups, key=lambda key: hashlib.sha256(f"{seed}\t{key}".encode()).hexdigest())
    valid_n, test_n = split_sizes(len(pairs), valid_size, test_size)
    splits: dict[str, list[tuple[str, str]]] = {"train": [], "valid": [], "test": []}
    for key in order:
        group = groups[key]
        if len(splits["test"]) + len(group) <= test_n:
            splits["test"].extend(group)
        elif len(splits["valid"]) + len(group) <= valid_n:
            splits["valid"].extend(group)
        else:
            splits["train"].extend(group)
    return splits
