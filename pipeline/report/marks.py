"""Significance marks in a paper's convention, only for systems better than their baseline."""
from __future__ import annotations

import math

from pipeline.errors import PipelineError


def check_thresholds(thresholds) -> list[tuple[float, str]]:
    """[(alpha, symbol), ...] with 0 < alpha <= 1 strictly increasing and non-empty symbols."""
    if not isinstance(thresholds, (list, tuple)) or not thresholds:
        raise PipelineError(f"thresholds: expected a non-empty list of (alpha, symbol) pairs, got {thresholds!r}")
    pairs = []
    for i, pair in enumerate(thresholds):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise PipelineError(f"thresholds[{i}]: expected an (alpha, symbol) pair, got {pair!r}")
        alpha, symbol = pair
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha <= 1:
            raise PipelineError(f"thresholds[{i}]: alpha must be a number in (0, 1], got {alpha!r}")
        if not isinstance(symbol, str) or not symbol:
            raise PipelineError(f"thresholds[{i}]: symbol must be a non-empty string, got {symbol!r}")
        if pairs and alpha <= pairs[-1][0]:
            raise PipelineError(f"thresholds[{i}]: alpha {alpha} must be larger than {pairs[-1][0]} "
                                f"(strictest level first)")
        pairs.append((float(alpha), symbol))
    return pairs


def significance_mark(p_value: float, delta: float, thresholds) -> str:
    """Symbol of the first threshold with p_value < alpha, only when delta (system - baseline) > 0; else ''.

    A system significantly WORSE than its baseline gets no mark.
    """
    pairs = check_thresholds(thresholds)
    for value, name in ((p_value, "p_value"), (delta, "delta")):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            raise PipelineError(f"{name}: expected a number, got {value!r}")
    if not 0 <= p_value <= 1:
        raise PipelineError(f"p_value: expected a probability in [0, 1], got {p_value!r}")
    if delta <= 0:
        return ""
    return next((symbol for alpha, symbol in pairs if p_value < alpha), "")
