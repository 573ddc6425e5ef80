"""RIBES (Isozaki et al. 2010) as NTT's reference script RIBES.py (1.03.1; 1.02.4 gives the same numbers) computes it.

Written from reading the script (GPL, not copied). On whitespace tokens the caller made (WAT: segmented Japanese):
- words: the line split on whitespace, lowercased unless case-sensitive (the script's -c);
- alignment of each hypothesis word w at position i, left to right: w absent from the reference -> unaligned;
  w once in the reference and once in the hypothesis -> that reference position; otherwise, for window
  k = 1, 2, ...: first the n-gram hyp[i-k .. i] (if i >= k), then hyp[i .. i+k] (if i+k < |hyp|); the first
  one that occurs exactly once in the reference and once in the hypothesis (overlapping occurrences counted)
  aligns w to its own position inside that reference occurrence; none -> unaligned. Two hypothesis words may
  thus align to one reference position (the script keeps both; so do we);
- NKT = ascending pairs (strictly smaller reference position first) / C(n, 2) over the n aligned words;
  precision P = n / |hyp|; BP = min(1, exp(1 - |ref| / |hyp|));
- n < 2 -> 0, except n == 1 with a one-word reference: NKT 1, P = 1 / |hyp|;
- sentence RIBES = NKT * P ** alpha * BP ** beta, alpha 0.25, beta 0.10; an empty hypothesis scores 0;
- several references: per sentence the best-scoring one; corpus RIBES = mean over sentences of these bests.
An empty reference line is an error (the script's default; its -z option, which skips such lines, is not offered).
Scale: a fraction in [0, 1], as RIBES.py prints it and WAT reports it (e.g. 0.8083), not x 100.
"""
from __future__ import annotations

from math import exp

from pipeline.errors import PipelineError
from pipeline.evaluate.bleu import check_streams

ALPHA = 0.25
BETA = 0.10
SCRIPT = "RIBES.py-1.03.1"


def words(line: str, case: bool = False) -> list[str]:
    """The line's whitespace tokens, lowercased unless `case`."""
    return (line if case else line.lower()).split()


def _as_text(tokens: list[str], ids: dict[str, int]) -> str:
    """One character per word (same word, same character), so n-gram search is substring search."""
    return "".join(chr(ids.setdefault(token, len(ids))) for token in tokens)


def _unique_start(pattern: str, text: str) -> int | None:
    """Start of the only occurrence of `pattern` in `text` (overlaps counted); None for 0 or 2+ occurrences."""
    first = text.find(pattern)
    if first < 0 or text.find(pattern, first + 1) >= 0:
        return None
    return first


def _in_context(i: int, hyp: str, ref: str) -> int | None:
    """Reference position of hyp[i] through the shortest unique context n-gram, left context tried first."""
    for window in range(1, max(i + 1, len(hyp) - i + 1)):
        if window <= i:
            left = hyp[i - window:i + 1]
            start = _unique_start(left, ref)
            if start is not None and _unique_start(left, hyp) is not None:
                return start + window
        if i + window < len(hyp):
            right = hyp[i:i + window + 1]
            start = _unique_start(right, ref)
            if start is not None and _unique_start(right, hyp) is not None:
                return start
    return None


def word_order(hyp: list[str], ref: list[str]) -> list[int]:
    """Reference positions of the aligned hypothesis words, in hypothesis order (RIBES.py's alignment)."""
    ids: dict[str, int] = {}
    ref_text, hyp_text = _as_text(ref, ids), _as_text(hyp, ids)
    order = []
    for i, word in enumerate(hyp_text):
        in_ref = ref_text.count(word)
        if in_ref == 1 and hyp_text.count(word) == 1:
            order.append(ref_text.index(word))
        elif in_ref:
            position = _in_context(i, hyp_text, ref_text)
            if position is not None:
                order.append(position)
    return order


def nkt(order: list[int]) -> float:
    """Normalised Kendall's tau: the share of pairs (i < j) with order[i] < order[j]; needs 2+ positions."""
    n = len(order)
    ascending = sum(order[i] < order[j] for i in range(n - 1) for j in range(i + 1, n))
    return ascending / (n * (n - 1) / 2)


def components(hyp: list[str], ref: list[str]) -> tuple[float, float, float]:
    """(NKT, unigram precision, brevity penalty) of one hypothesis against one non-empty reference."""
    if not hyp:
        return 0.0, 0.0, 0.0
    bp = min(1.0, exp(1.0 - len(ref) / len(hyp)))
    order = word_order(hyp, ref)
    if len(order) == 1 and len(ref) == 1:
        return 1.0, 1.0 / len(hyp), bp
    if len(order) < 2:
        return 0.0, 0.0, bp
    return nkt(order), len(order) / len(hyp), bp


def sentence_ribes(hyp: list[str], ref: list[str], alpha: float = ALPHA, beta: float = BETA) -> float:
    """NKT * precision ** alpha * BP ** beta of one tokenised hypothesis against one tokenised reference."""
    tau, precision, bp = components(hyp, ref)
    return tau * precision ** alpha * bp ** beta


def _best(hyp: str, targets: list[str], number: int, case: bool) -> float:
    """The best sentence RIBES of `hyp` over its references; PipelineError on an empty reference."""
    tokens, best = words(hyp, case), 0.0
    for k, target in enumerate(targets):
        ref = words(target, case)
        if not ref:
            raise PipelineError(f"refs[{k}] line {number}: empty reference; expected at least one word "
                                f"(RIBES.py rejects empty references)")
        best = max(best, sentence_ribes(tokens, ref))
    return best


def ribes_statistics(hyps: list[str], refs: list[list[str]], case: bool = False) -> list[list[float]]:
    """Per sentence [best RIBES over the reference streams] (refs[k][i] = k-th reference of sentence i)."""
    check_streams(hyps, refs)
    return [[_best(hyp, [stream[i] for stream in refs], i + 1, case)] for i, hyp in enumerate(hyps)]


def ribes_signature(n_refs: int, case: bool = False) -> str:
    """What produced the RIBES numbers, in sacrebleu's signature style."""
    return f"ribes|alpha:{ALPHA}|beta:{BETA}|case:{'mixed' if case else 'lc'}|nrefs:{n_refs}|impl:{SCRIPT}"
