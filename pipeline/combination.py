"""System combination for shu2016 Table 2: GMBR over pooled n-best lists (Duh et al. 2011; shu2016 2.2, 5.1) and the
length heuristic (5.1: the NMT ensemble below 40 input words, else the reranked T2S output).

GMBR picks, among the candidates e' of a sentence (the systems' n-best lists pooled), the one of least expected loss
against the others (eq. 10): argmin_e' sum_e L(e'|e; theta) p(e|f). Our choices where the papers leave it open:
- L(e'|e; theta) = 1 - theta . f(e'|e), f = (p_1, p_2, p_3, p_4, BP, NKT): the clipped n-gram precisions of e'
  against e (0 where e' has no n-grams), BLEU's brevity penalty and RIBES's normalised Kendall's tau (shu2016 5.1:
  "n-gram precisions, brevity penalty and Kendall's tau"); theta >= 0 summing to 1;
- p(e|f) uniform over the pooled candidates (GMBR does not compare the systems' own scores, 2.2);
- theta tuned on development sentences (500 in the paper) to maximise the corpus BLEU of the chosen candidates, by
  a seeded random search over the simplex (Dirichlet samples) that also tries the uniform weights.
Sentences are lists of tokens (the scoring segmentation).
"""
from __future__ import annotations

from collections import Counter
from math import exp
from typing import Sequence

import numpy as np

from pipeline.errors import PipelineError
from pipeline.evaluate.ribes import nkt, word_order

FEATURES = ("p1", "p2", "p3", "p4", "bp", "nkt")
Tokens = Sequence[str]


def _ngrams(tokens: Tokens, n: int) -> Counter:
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def pair_features(hyp: Tokens, other: Tokens) -> np.ndarray:
    """f(e'|e) [6]: clipped 1-4-gram precisions of hyp against other, brevity penalty, NKT (0 below 2 aligned)."""
    precisions = []
    for n in range(1, 5):
        counts = _ngrams(hyp, n)
        total = sum(counts.values())
        matched = sum((counts & _ngrams(other, n)).values())
        precisions.append(matched / total if total else 0.0)
    bp = 0.0 if not hyp else min(1.0, exp(1.0 - len(other) / len(hyp)))
    order = word_order(list(hyp), list(other)) if hyp and other else []
    return np.array([*precisions, bp, nkt(order) if len(order) >= 2 else 0.0])


def expected_features(candidates: Sequence[Tokens]) -> np.ndarray:
    """[N, 6]: row e' the mean of f(e'|e) over the N candidates e (uniform posterior), e = e' included."""
    if not candidates:
        raise PipelineError("GMBR: no candidates for a sentence; expected at least one hypothesis")
    return np.array([np.mean([pair_features(h, e) for e in candidates], axis=0) for h in candidates])


def check_theta(theta) -> np.ndarray:
    """theta as a [6] array of non-negative weights summing to 1; PipelineError naming what is wrong."""
    theta = np.asarray(theta, dtype=float)
    if theta.shape != (len(FEATURES),) or (theta < 0).any() or not np.isclose(theta.sum(), 1.0):
        raise PipelineError(f"GMBR theta {theta.tolist()}: expected {len(FEATURES)} non-negative weights of "
                            f"{', '.join(FEATURES)} summing to 1")
    return theta


def gmbr_choice(expected: np.ndarray, theta) -> int:
    """The index of least expected loss 1 - theta . E[f] (ties to the first candidate, i.e. the better-ranked)."""
    return int(np.argmax(expected @ check_theta(theta)))


def tune_theta(expected: Sequence[np.ndarray], candidate_stats: Sequence[np.ndarray], metric, *, trials: int = 200,
               seed: int = 1) -> tuple[np.ndarray, float]:
    """theta maximising metric.score_from_stats of the chosen candidates over development sentences.

    expected[s]: expected_features of sentence s's candidates; candidate_stats[s]: their per-sentence metric
    stats against the reference [N_s, width]. Returns (theta, the development score); ties keep the earlier trial.
    """
    if len(expected) != len(candidate_stats) or not expected:
        raise PipelineError(f"GMBR tuning: {len(expected)} sentences of features and {len(candidate_stats)} of "
                            "metric stats; expected the same, at least one")
    rng = np.random.default_rng(seed)
    trial_thetas = [np.full(len(FEATURES), 1.0 / len(FEATURES))] + list(rng.dirichlet(np.ones(len(FEATURES)), trials))
    best, best_score = trial_thetas[0], -np.inf
    for theta in trial_thetas:
        chosen = np.stack([stats[gmbr_choice(e, theta)] for e, stats in zip(expected, candidate_stats)])
        score = metric.score_from_stats(chosen)
        if score > best_score:
            best, best_score = theta, score
    return best, float(best_score)


def length_heuristic(source_lengths: Sequence[int], short: Sequence[str], long: Sequence[str],
                     threshold: int = 40) -> list[str]:
    """Per sentence `short`'s output if the source has fewer than `threshold` words, else `long`'s (shu2016 5.1)."""
    if not len(source_lengths) == len(short) == len(long):
        raise PipelineError(f"length heuristic: {len(source_lengths)} sources, {len(short)} and {len(long)} "
                            "outputs; expected one of each per sentence")
    return [s if n < threshold else t for n, s, t in zip(source_lengths, short, long)]
