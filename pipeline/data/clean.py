"""Length and ratio filtering of a parallel corpus (like Moses clean-corpus-n.perl)."""
from __future__ import annotations

import os

from pipeline.errors import PipelineError
from pipeline.fileio import atomic_open, iter_parallel


def _check_limits(max_len: int, max_ratio: float | None) -> None:
    """max_len is a positive int; max_ratio is None or a number >= 1."""
    if isinstance(max_len, bool) or not isinstance(max_len, int) or max_len < 1:
        raise PipelineError(f"max_len: expected a positive integer, got {max_len!r}")
    if max_ratio is not None and (isinstance(max_ratio, bool) or not isinstance(max_ratio, (int, float))
                                  or not max_ratio >= 1):
        raise PipelineError(f"max_ratio: expected None or a number >= 1, got {max_ratio!r}")


def keep_reason(src_tokens: int, tgt_tokens: int, max_len: int, max_ratio: float | None) -> str:
    """'kept' or the first failing check: 'dropped_empty', 'dropped_long', 'dropped_ratio'."""
    if src_tokens == 0 or tgt_tokens == 0:
        return "dropped_empty"
    if src_tokens > max_len or tgt_tokens > max_len:
        return "dropped_long"
    if max_ratio is not None and max(src_tokens, tgt_tokens) > max_ratio * min(src_tokens, tgt_tokens):
        return "dropped_ratio"
    return "kept"


def clean_parallel(src_in: str | os.PathLike, tgt_in: str | os.PathLike, src_out: str | os.PathLike,
                   tgt_out: str | os.PathLike, *, max_len: int, max_ratio: float | None = None) -> dict:
    """Keep pairs with 1..max_len whitespace tokens per side and longer/shorter <= max_ratio.

    Kept lines are written with single spaces between tokens (our choice, as Moses does).
    Both outputs appear together or not at all; a corpus of which no pair is kept (empty files) is an error.
    Returns {kept, dropped_empty, dropped_long, dropped_ratio}.
    """
    _check_limits(max_len, max_ratio)
    for path in (src_in, tgt_in):
        if not os.path.isfile(path):
            raise PipelineError(f"{path}: no such file; expected one side of a parallel corpus")
    report = {"kept": 0, "dropped_empty": 0, "dropped_long": 0, "dropped_ratio": 0}
    with atomic_open(src_out) as src_handle, atomic_open(tgt_out) as tgt_handle:
        for src, tgt in iter_parallel(src_in, tgt_in):  # one pair at a time
            src_tokens, tgt_tokens = src.split(), tgt.split()
            reason = keep_reason(len(src_tokens), len(tgt_tokens), max_len, max_ratio)
            report[reason] += 1
            if reason == "kept":
                src_handle.write(" ".join(src_tokens) + "\n")
                tgt_handle.write(" ".join(tgt_tokens) + "\n")
        if not report["kept"]:  # raised inside: neither output is written
            read = sum(report.values())
            found = "no lines" if not read else f"{read} pairs, none kept ({_dropped(report)})"
            raise PipelineError(f"{src_in}, {tgt_in}: {found}; expected a parallel corpus with at least one pair of "
                                f"1..{max_len} tokens per side")
    return report


def _dropped(report: dict) -> str:
    """'dropped_long: 3, dropped_ratio: 1': the reasons pairs were dropped for."""
    return ", ".join(f"{reason}: {count}" for reason, count in report.items() if reason != "kept" and count)
