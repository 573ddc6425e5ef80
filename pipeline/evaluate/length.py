"""BLEU by sentence length: corpus BLEU of each length bin's sentences (the bins come from the table's settings).

- bleu_by_length: single-reference sacreBLEU of each bin's text;
- score_by_length: a metric's corpus score of each bin's rows of a score file's per-sentence stats (metrics.py),
  so all references, case folding and tokenisation are the score file's (zhang2018 Figure 3: NIST, 4 refs, ci).
"""
from __future__ import annotations

import numpy as np

from pipeline.errors import PipelineError
from pipeline.evaluate.bleu import bleu, check_aligned, check_tokenize


def check_bins(bins) -> None:
    """Bins must be contiguous (lo, hi] pairs of ints, ascending, the last one open (hi None)."""
    if not isinstance(bins, (tuple, list)) or not bins:
        raise PipelineError(f"bins: expected a non-empty sequence of (lo, hi) pairs, got {bins!r}")
    for i, pair in enumerate(bins):
        last = i == len(bins) - 1
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise PipelineError(f"bins[{i}]: expected a (lo, hi) pair, got {pair!r}")
        lo, hi = pair
        if isinstance(lo, bool) or not isinstance(lo, int) or lo < 0:
            raise PipelineError(f"bins[{i}]: lower bound must be an int >= 0, got {lo!r}")
        if last and hi is not None:
            raise PipelineError(f"bins[{i}]: the last bin must be open, (lo, None), got {pair!r}")
        if not last and (isinstance(hi, bool) or not isinstance(hi, int) or hi <= lo):
            raise PipelineError(f"bins[{i}]: upper bound must be an int > {lo}, got {hi!r}")
        if i > 0 and lo != bins[i - 1][1]:
            raise PipelineError(f"bins[{i}]: expected to start at {bins[i - 1][1]} (contiguous bins), got {lo}")


def bin_label(lo: int, hi: int | None) -> str:
    """'(0, 15]' for a closed bin, '> 45' for the open last one."""
    return f"> {lo}" if hi is None else f"({lo}, {hi}]"


def bin_index(length: int, bins) -> int:
    """Index of the bin holding `length` (lo < length <= hi).

    Our choice: a length at or below the first lower bound (an empty source line) counts in the first bin.
    """
    for i, (lo, hi) in enumerate(bins):
        if hi is None or length <= hi:
            return i
    raise AssertionError("unreachable: the last bin is open")


def bin_members(src: list[str], bins) -> list[list[int]]:
    """Per bin, the indices of the lines of `src` whose whitespace-token count falls in it (bin_index)."""
    members: list[list[int]] = [[] for _ in bins]
    for i, line in enumerate(src):
        members[bin_index(len(line.split()), bins)].append(i)
    return members


def bleu_by_length(src: list[str], hyps: list[str], refs: list[str], *, bins, tokenize: str = "13a") -> list[dict]:
    """Per bin {"bin": label, "bleu": corpus BLEU of its sentences or None if empty, "n": sentences}.

    Length = number of whitespace tokens of the line of `src` (the tokenised source, or the tokenised
    reference to bin by target length).
    """
    check_tokenize(tokenize)
    check_bins(bins)
    check_aligned(src=src, hyps=hyps, refs=refs)
    result = []
    for (lo, hi), indices in zip(bins, bin_members(src, bins)):
        score = None
        if indices:
            score = bleu([hyps[i] for i in indices], [refs[i] for i in indices], tokenize=tokenize)["score"]
        result.append({"bin": bin_label(lo, hi), "bleu": score, "n": len(indices)})
    return result


def score_by_length(src: list[str], stats, metric, *, bins, field: str | None = None) -> list[dict]:
    """Per bin {"bin": label, "bleu": metric.score_from_stats of its rows of `stats` or None if empty, "n"}.

    `stats` are the per-sentence stats of a score file (one row per line of `src`, same order); sentences are
    binned as in bleu_by_length.
    """
    check_bins(bins)
    field = metric.check_field(field)
    rows = metric.check_stats(stats)
    if rows.shape[0] != len(src):
        raise PipelineError(f"stats has {rows.shape[0]} rows, src has {len(src)} lines; expected one row of "
                            f"stats per source line")
    result = []
    for (lo, hi), indices in zip(bins, bin_members(src, bins)):
        score = metric.score_from_stats(rows[np.asarray(indices)], field) if indices else None
        result.append({"bin": bin_label(lo, hi), "bleu": score, "n": len(indices)})
    return result
