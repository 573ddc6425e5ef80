"""Sentence-averaged ROUGE-N and ROUGE-L (zeng2021 Table 4 reports ROUGE-1/2/L and, via nlg-eval, ROUGE-L).

Our choice of tokens: each line is Moses-tokenised as English (pipeline.data.tokenize), lowercased and split
on whitespace; no stemming, no stopword removal. Scores are per-sentence F values averaged over sentences,
times 100. This is not the ROUGE-1.5.5 perl script (which stems and splits summaries into sentences), so
values are comparable between our systems, not digit for digit with the paper.

Per sentence, with hypothesis tokens h and reference tokens r:
- ROUGE-N: overlap = sum over n-grams g of min(count_h(g), count_r(g)) (clipped counts);
  P = overlap / (|h| - n + 1), R = overlap / (|r| - n + 1), F1 = 2 P R / (P + R); 0 when overlap is 0.
- ROUGE-L (as coco-caption's Rouge, used by nlg-eval): L = LCS(h, r); P = L / |h|, R = L / |r|,
  F = (1 + beta^2) P R / (R + beta^2 P) with beta = 1.2; 0 when L is 0.
An empty hypothesis or reference scores 0.
"""
from __future__ import annotations

from collections import Counter

from pipeline.errors import PipelineError
from pipeline.evaluate.bleu import check_aligned

BETA = 1.2  # coco-caption / nlg-eval ROUGE-L


def tokens(lines: list[str]) -> list[list[str]]:
    """Moses-tokenised (as English), lowercased whitespace tokens of each line."""
    from pipeline.data.tokenize import tokenize_lines

    return [line.lower().split() for line in tokenize_lines(list(lines), "en")]


def ngrams(toks: list[str], n: int) -> Counter:
    """Counts of the n-grams of a token list."""
    return Counter(tuple(toks[i:i + n]) for i in range(len(toks) - n + 1))


def rouge_n(hyp: list[str], ref: list[str], n: int) -> float:
    """ROUGE-N F1 in [0, 1] of one tokenised sentence pair (clipped n-gram overlap)."""
    h, r = ngrams(hyp, n), ngrams(ref, n)
    overlap = sum((h & r).values())
    if overlap == 0:
        return 0.0
    p, rec = overlap / sum(h.values()), overlap / sum(r.values())
    return 2 * p * rec / (p + rec)


def lcs_length(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence of two token lists (O(|a| |b|) dynamic programme)."""
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b, start=1):
            cur.append(prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def rouge_l(hyp: list[str], ref: list[str], beta: float = BETA) -> float:
    """ROUGE-L F_beta in [0, 1] of one tokenised sentence pair: (1 + b^2) P R / (R + b^2 P) on the LCS."""
    lcs = lcs_length(hyp, ref)
    if lcs == 0:
        return 0.0
    p, rec = lcs / len(hyp), lcs / len(ref)
    return (1 + beta ** 2) * p * rec / (rec + beta ** 2 * p)


def rouge(hyps: list[str], refs: list[str], *, n_values: tuple[int, ...] = (1, 2), lcs: bool = True) -> dict:
    """{"rouge<n>" for n in n_values, "rougeL" if lcs}: sentence-averaged F x 100 (see the module docstring).

    Mismatched lengths or empty input -> PipelineError naming hyps and refs.
    """
    n = check_aligned(hyps=list(hyps), refs=list(refs))
    if any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in n_values) or not (n_values or lcs):
        raise PipelineError(f"rouge: n_values = {n_values!r}, lcs = {lcs!r}; expected positive integers "
                            f"and/or lcs=True")
    hyp_toks, ref_toks = tokens(hyps), tokens(refs)
    out = {f"rouge{k}": 100 * sum(rouge_n(h, r, k) for h, r in zip(hyp_toks, ref_toks)) / n for k in n_values}
    if lcs:
        out["rougeL"] = 100 * sum(rouge_l(h, r) for h, r in zip(hyp_toks, ref_toks)) / n
    return out


def meteor_unavailable_reason() -> str:
    """Why METEOR (nlg-eval's third dialogue metric) is reported as "n/a" here."""
    return ("METEOR needs the METEOR 1.5 jar (and Java) plus WordNet data for its synonym module; neither "
            "can be installed offline here, so METEOR is reported as n/a")
