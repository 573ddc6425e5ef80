"""GMBR system combination over pooled n-best lists (Duh et al. 2011; shu2016 2.2, 5.1), its weights tuned on
development sentences.

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
from pipeline.fileio import read_nbest
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



def pooled_candidates(paths: Sequence[str], sentences: int, keep: int | None = None) -> list[list[str]]:
    """Per sentence (the first `keep` of `sentences`, all for None) the candidates of every n-best file pooled (file
    order, duplicates kept); a sentence without candidates in a file -> PipelineError naming it."""
    keep = sentences if keep is None else min(keep, sentences)
    pooled: list[list[str]] = [[] for _ in range(keep)]
    for path in paths:
        for i, hyps in enumerate(read_nbest(path, sentences=sentences)[:keep]):
            if not hyps:
                raise PipelineError(f"{path}: sentence {i} has no candidates; expected at least one")
            pooled[i] += [text for _, text in hyps]
    return pooled


def split_like(flat: Sequence[str], pooled: Sequence[Sequence[str]]) -> list[list[list[str]]]:
    """The metric's lines of every candidate (`flat`, in pooled order) as token lists, regrouped per sentence."""
    tokens, at = [], 0
    for texts in pooled:
        tokens.append([line.split() for line in flat[at:at + len(texts)]])
        at += len(texts)
    return tokens


def tune(tokens: Sequence[Sequence[Tokens]], refs: Sequence[Sequence[str]], metric, lang: str, *, trials: int,
         seed: int) -> dict:
    """theta tuned on development sentences: tokens[s] the candidates of sentence s as the metric reads them, refs
    the reference streams (metric lines) of those sentences. Returns theta, the tuned score and the first
    candidates' score."""
    flat_hyps = [" ".join(t) for cands in tokens for t in cands]
    flat_refs = [[r[i] for i, cands in enumerate(tokens) for _ in cands] for r in refs]
    stats, at, candidate_stats = metric.score(flat_hyps, flat_refs, lang)["stats"], 0, []
    for cands in tokens:
        candidate_stats.append(np.asarray(stats[at:at + len(cands)]))
        at += len(cands)
    expected = [expected_features(cands) for cands in tokens]
    theta, score = tune_theta(expected, candidate_stats, metric, trials=trials, seed=seed)
    first = metric.score_from_stats(np.stack([s[0] for s in candidate_stats]))
    return {"theta": dict(zip(FEATURES, map(float, theta))), "tuned_score": score, "first_candidate_score": first}


def combine(tokens: Sequence[Sequence[Tokens]], theta: dict) -> list[int]:
    """Per sentence the index of the candidate GMBR chooses with the tuned weights (FEATURES -> weight)."""
    weights = [theta[name] for name in FEATURES]
    return [gmbr_choice(expected_features(cands), weights) for cands in tokens]
