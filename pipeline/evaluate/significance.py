"""The significance registry: paired tests of a system against its baseline from their per-sentence stats.

The two systems' stats come from their score files (metrics.py), so the baseline is scored once and reused for
every comparison: no test rescores text. Every test returns {"test", "p_value", "baseline_score",
"system_score", "delta" (system - baseline corpus score), "n_samples", "seed", "signature", ...}.
- paired_bootstrap: sacrebleu's paired bootstrap (Koehn 2004, centred as in multeval; two-sided, as sacrebleu):
  the same resamples (numpy default_rng(seed).choice) and float32 stats, so p equals sacrebleu's
  PairedTest(test_type="bs") for the same seed and n_samples;
- approximate_randomization: sacrebleu's "ar" (Riezler & Maxwell 2005; two-sided), equal to PairedTest("ar");
- paired_t_test: one-tailed (H1: system better) paired t-test over the metric's sentence scores;
- sign_test: one-tailed sign test over sentence scores, ties dropped;
- collins_sign_test: the sign test of Collins, Koehn & Kucerova (2005, section 5), which zhang2018 cites for its
  Table 1: sentence i scores + (-) if the CORPUS score of the baseline's output with sentence i's translation
  replaced by the system's is above (below) the baseline's corpus score, 0 if equal; ties dropped, one-tailed
  p = P(X >= n+), X ~ Binomial(n+ + n-, 1/2) (H1: system better, as sign_test). A corpus metric applied per
  sentence: its sign can differ from the sentence-score sign (e.g. a shorter, more precise sentence that
  lowers corpus BLEU through the brevity penalty).
Our choice (kept from the sacrebleu wrapper this replaces): a corpus difference of exactly 0 gives p = 1.0 in
the two randomisation tests (sacrebleu would return a small p for identical systems).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from sacrebleu.significance import estimate_ci

from pipeline.errors import PipelineError
from pipeline.registry import Registry

TESTS: Registry = Registry("significance test")


def register_test(name: str) -> Callable[[Callable], Callable]:
    """Function decorator: TESTS[name] = fn(metric, baseline, system, *, field, n_samples, seed) -> dict."""
    def register(fn: Callable) -> Callable:
        return TESTS.add(name, fn, f"{fn.__module__}.{fn.__qualname__}")
    return register


def tests() -> dict[str, Callable[..., dict]]:
    """Every registered test: these, and those the papers' packages register (pipeline.registry: load_plugins)."""
    return TESTS.every()


def get_test(name: str) -> Callable[..., dict]:
    """The registered test called `name`; PipelineError listing the known names otherwise."""
    return TESTS.lookup(name)


def _positive_int(value, name: str) -> int:
    # seed 0 is "unseeded" in sacrebleu, which would make its p-values irreproducible.
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PipelineError(f"{name}: expected a positive integer, got {value!r}")
    return value


def run_test(name: str, metric, baseline_stats, system_stats, *, field: str | None = None,
             n_samples: int = 1000, seed: int = 12345) -> dict:
    """Run the registered test `name` on two systems' per-sentence stats (same sentences, same metric)."""
    test = get_test(name)
    _positive_int(n_samples, "n_samples")
    _positive_int(seed, "seed")
    field = metric.check_field(field)
    baseline = metric.check_stats(baseline_stats)
    system = metric.check_stats(system_stats)
    if baseline.shape != system.shape:
        raise PipelineError(f"stats: baseline has shape {baseline.shape}, system has {system.shape}; expected "
                            f"the same sentences scored by the same metric")
    return test(metric, baseline, system, field=field, n_samples=n_samples, seed=seed)


def _result(name: str, metric, baseline: np.ndarray, system: np.ndarray, field: str, p_value: float,
            **extra) -> dict:
    """The common fields of every test's result (corpus scores in the stats' own dtype: exact)."""
    base, sys_ = metric.score_from_stats(baseline, field), metric.score_from_stats(system, field)
    return {"test": name, "p_value": float(p_value), "baseline_score": base, "system_score": sys_,
            "delta": sys_ - base, "field": field, "n_sentences": int(baseline.shape[0]), **extra}


def _randomisation_p(samples: np.ndarray, observed: float) -> float:
    """sacrebleu's _compute_p_value: (#samples > observed + 1) / (n + 1); observed 0 -> 1.0 (our choice)."""
    if observed == 0:
        return 1.0
    return (int(np.sum(samples > observed)) + 1) / (len(samples) + 1)


@register_test("paired_bootstrap")
def paired_bootstrap(metric, baseline: np.ndarray, system: np.ndarray, *, field: str, n_samples: int,
                     seed: int) -> dict:
    """Paired bootstrap as sacrebleu: p = share of centred resampled |differences| above the observed one.

    Also "mean" and "ci": the system's bootstrap mean and 95% half-width (sacrebleu's estimate_ci).
    """
    n = baseline.shape[0]
    idxs = np.random.default_rng(seed).choice(n, size=(n_samples, n), replace=True)
    bl32, sys32 = baseline.astype("float32"), system.astype("float32")  # sacrebleu resamples float32 stats
    scores_bl = np.array([metric.score_from_stats(bl32[idx], field) for idx in idxs])
    scores_sys = np.array([metric.score_from_stats(sys32[idx], field) for idx in idxs])
    result = _result("paired_bootstrap", metric, baseline, system, field, 0.0, n_samples=n_samples, seed=seed,
                     signature=f"paired_bootstrap|bs:{n_samples}|seed:{seed}|two-sided")
    diffs = np.abs(scores_sys - scores_bl)
    result["p_value"] = _randomisation_p(diffs - diffs.mean(), abs(result["delta"]))
    mean, ci = estimate_ci(scores_sys)
    result.update(mean=float(mean), ci=float(ci))
    return result


@register_test("approximate_randomization")
def approximate_randomization(metric, baseline: np.ndarray, system: np.ndarray, *, field: str, n_samples: int,
                              seed: int) -> dict:
    """Approximate randomisation as sacrebleu: swap each sentence's two outputs with probability 1/2."""
    n = baseline.shape[0]
    swap = np.random.default_rng(seed).integers(2, size=(n_samples, n), dtype=bool)  # sacrebleu's pos_sel
    scores_a = np.empty(n_samples)
    scores_b = np.empty(n_samples)
    for t, mask in enumerate(swap[:, :, None]):
        scores_a[t] = metric.score_from_stats(np.where(mask, baseline, system), field)
        scores_b[t] = metric.score_from_stats(np.where(mask, system, baseline), field)
    result = _result("approximate_randomization", metric, baseline, system, field, 0.0, n_samples=n_samples,
                     seed=seed, signature=f"approximate_randomization|ar:{n_samples}|seed:{seed}|two-sided")
    result["p_value"] = _randomisation_p(np.abs(scores_a - scores_b), abs(result["delta"]))
    return result


def _sentence_differences(metric, baseline: np.ndarray, system: np.ndarray, field: str) -> np.ndarray:
    """system - baseline sentence scores."""
    return metric.sentence_scores(system, field) - metric.sentence_scores(baseline, field)


@register_test("paired_t_test")
def paired_t_test(metric, baseline: np.ndarray, system: np.ndarray, *, field: str, n_samples: int,
                  seed: int) -> dict:
    """One-tailed paired t-test on sentence scores: t = mean(d) / (sd(d) / sqrt(n)), p = P(T_{n-1} >= t).

    All differences 0 -> p 1.0; all equal and positive (sd 0) -> p 0.0 (t None, JSON has no inf).
    n_samples and seed are unused (None).
    """
    from scipy.stats import t as student_t
    d = _sentence_differences(metric, baseline, system, field)
    n = len(d)
    if n < 2:
        raise PipelineError(f"stats: the paired t-test needs at least 2 sentences, got {n}")
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    if sd == 0:
        t_value, p = (np.inf, 0.0) if mean > 0 else ((-np.inf if mean < 0 else 0.0), 1.0)
    else:
        t_value = mean / (sd / np.sqrt(n))
        p = float(student_t.sf(t_value, n - 1))
    return _result("paired_t_test", metric, baseline, system, field, p, n_samples=None, seed=None,
                   signature="paired_t_test|one-tailed|sentence-scores",
                   t=float(t_value) if np.isfinite(t_value) else None, df=n - 1,
                   sentence_delta=mean)


def _sign_result(name: str, metric, baseline: np.ndarray, system: np.ndarray, field: str, d: np.ndarray,
                 signature: str) -> dict:
    """Sign test on the differences d, ties dropped: p = P(X >= wins), X ~ Binomial(wins + losses, 1/2).

    No untied sentence -> p 1.0.
    """
    from scipy.stats import binom
    wins, losses = int(np.sum(d > 0)), int(np.sum(d < 0))
    p = float(binom.sf(wins - 1, wins + losses, 0.5)) if wins + losses else 1.0
    return _result(name, metric, baseline, system, field, p, n_samples=None, seed=None, signature=signature,
                   wins=wins, losses=losses, ties=int(len(d) - wins - losses))


@register_test("sign_test")
def sign_test(metric, baseline: np.ndarray, system: np.ndarray, *, field: str, n_samples: int,
              seed: int) -> dict:
    """One-tailed sign test on sentence scores, ties dropped (_sign_result). n_samples and seed are unused (None)."""
    d = _sentence_differences(metric, baseline, system, field)
    return _sign_result("sign_test", metric, baseline, system, field, d,
                        "sign_test|one-tailed|ties:dropped|sentence-scores")


def _swap_differences(metric, baseline: np.ndarray, system: np.ndarray, field: str) -> np.ndarray:
    """Per sentence i: corpus score of the baseline's stats with row i the system's, minus the baseline's score.

    Any metric: rescored from all rows (about 0.2 s for 3000 sentences of BLEU stats). Both scores come from
    the same array and dtype, so an identical row gives exactly 0.
    """
    work = baseline.astype(np.result_type(baseline, system), copy=True)
    base = metric.score_from_stats(work, field)
    d = np.empty(len(work))
    for i in range(len(work)):
        work[i] = system[i]
        d[i] = metric.score_from_stats(work, field) - base
        work[i] = baseline[i]
    return d


@register_test("collins_sign_test")
def collins_sign_test(metric, baseline: np.ndarray, system: np.ndarray, *, field: str, n_samples: int,
                      seed: int) -> dict:
    """Collins et al. (2005)'s sign test: signs of the corpus score with one sentence swapped, ties dropped.

    n_samples and seed are unused (None).
    """
    d = _swap_differences(metric, baseline, system, field)
    return _sign_result("collins_sign_test", metric, baseline, system, field, d,
                        "collins_sign_test|one-tailed|ties:dropped|corpus-score-swap")
