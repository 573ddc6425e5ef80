"""Paired significance tests from per-sentence stats: sacreBLEU's own p-values, scipy's, hand-worked ones; marks."""
import json
import math

import numpy as np
import pytest
from sacrebleu.metrics import BLEU
from sacrebleu.significance import PairedTest
from scipy import stats as scipy_stats

from pipeline.errors import PipelineError
from pipeline.evaluate.metrics import get_metric
from pipeline.evaluate.significance import TESTS, get_test, register_test, run_test
from pipeline.report.marks import significance_mark
from sentences import corpus, noisy

REFS = corpus(1)
STREAMS = [REFS, noisy(REFS, 2, 0.3)]
BASELINE = noisy(REFS, 11, 0.45)
SYSTEMS = {  # sacreBLEU 27.72 for the baseline; measured p-values (bs / ar, seed 12345, 1000 samples)
    "near-tie": noisy(REFS, 17, 0.47),  # 27.03, slightly worse: p 0.32 / 0.83
    "better": noisy(REFS, 12, 0.45),    # 33.04: p 0.039 / 0.078
    "clear": noisy(REFS, 16, 0.35),     # 39.34: p at the floor, 1/1001
}
TEST_TYPES = {"paired_bootstrap": "bs", "approximate_randomization": "ar"}


def _sacrebleu_p(monkeypatch, test_type, system, bleu_kwargs, streams, n_samples, seed, baseline=BASELINE):
    """sacrebleu's PairedTest on the text: (p_value, system Result)."""
    monkeypatch.setenv("SACREBLEU_SEED", str(seed))
    _, results = PairedTest([("baseline", baseline), ("system", system)], {"BLEU": BLEU(**bleu_kwargs)},
                            references=streams, test_type=test_type, n_samples=n_samples)()
    return results["BLEU"][1].p_value, results["BLEU"][1]


def _stats(name, lines, streams=STREAMS):
    return get_metric(name).score(lines, streams, "en")["stats"]


# --- randomisation tests equal sacreBLEU ----------------------------------------------------------

@pytest.mark.parametrize("test", TEST_TYPES)
@pytest.mark.parametrize("system", SYSTEMS)
def test_p_value_equals_sacrebleu(monkeypatch, test, system):
    metric = get_metric("sacrebleu")
    ours = run_test(test, metric, _stats("sacrebleu", BASELINE), _stats("sacrebleu", SYSTEMS[system]),
                    n_samples=1000, seed=12345)
    p, result = _sacrebleu_p(monkeypatch, TEST_TYPES[test], SYSTEMS[system], {}, STREAMS, 1000, 12345)
    assert ours["p_value"] == p  # exact, same resamples
    assert ours["system_score"] == result.score
    assert ours["baseline_score"] == BLEU().corpus_score(BASELINE, STREAMS).score
    assert ours["delta"] == ours["system_score"] - ours["baseline_score"]
    if test == "paired_bootstrap":
        assert (ours["mean"], ours["ci"]) == (result.mean, result.ci)


def test_p_values_span_the_range():
    """The cases above are not all at p = 1 or at the floor: a near tie, a borderline and a clear win."""
    metric = get_metric("sacrebleu")
    base = _stats("sacrebleu", BASELINE)
    p = {name: run_test("paired_bootstrap", metric, base, _stats("sacrebleu", lines))["p_value"]
         for name, lines in SYSTEMS.items()}
    assert 0.2 < p["near-tie"] < 0.5 and 0.01 < p["better"] < 0.05 and p["clear"] == pytest.approx(1 / 1001)


@pytest.mark.parametrize("test", TEST_TYPES)
@pytest.mark.parametrize("name,kwargs", [("sacrebleu-ci", {"lowercase": True}),
                                         ("multi-bleu", {"tokenize": "none", "smooth_method": "none", "force": True}),
                                         ("multi-bleu-ci", {"tokenize": "none", "smooth_method": "none",
                                                            "force": True, "lowercase": True})])
def test_other_bleu_metrics_equal_sacrebleu_with_another_seed(monkeypatch, test, name, kwargs):
    metric, system = get_metric(name), SYSTEMS["better"]
    ours = run_test(test, metric, _stats(name, BASELINE), _stats(name, system), n_samples=500, seed=7)
    p, _ = _sacrebleu_p(monkeypatch, TEST_TYPES[test], system, kwargs, STREAMS, 500, 7)
    assert ours["p_value"] == p and (ours["n_samples"], ours["seed"]) == (500, 7)


def test_baseline_stats_reused_from_json_score_files():
    """What the pipeline does: the baseline's score file (scored once) against several systems' files."""
    metric = get_metric("sacrebleu")
    baseline = json.loads(json.dumps(metric.score(BASELINE, STREAMS, "en")))
    for lines in SYSTEMS.values():
        system = json.loads(json.dumps(metric.score(lines, STREAMS, "en")))
        result = run_test("paired_bootstrap", metric, baseline["stats"], system["stats"], n_samples=200)
        assert result["baseline_score"] == baseline["score"] and result["system_score"] == system["score"]
        json.dumps(result, allow_nan=False)


def test_identical_systems_get_p_one_and_same_seed_same_result():
    metric = get_metric("sacrebleu")
    base = _stats("sacrebleu", BASELINE)
    for test in TESTS:
        result = run_test(test, metric, base, [list(row) for row in base], n_samples=100)
        assert result["p_value"] == 1.0 and result["delta"] == 0.0, test
    system = _stats("sacrebleu", SYSTEMS["better"])
    first, again = (run_test("paired_bootstrap", metric, base, system, n_samples=300, seed=3) for _ in range(2))
    other = run_test("paired_bootstrap", metric, base, system, n_samples=300, seed=4)
    assert first == again and (other["mean"], other["ci"]) != (first["mean"], first["ci"])


def test_bootstrap_on_a_rouge_field_resamples_sentence_means():
    """ROUGE has no sacrebleu oracle: the same resampling written out on the chosen field's column."""
    metric = get_metric("rouge")
    base, system = _stats("rouge", BASELINE), _stats("rouge", SYSTEMS["better"])
    result = run_test("paired_bootstrap", metric, base, system, field="rouge2", n_samples=300, seed=5)
    b, s = np.asarray(base, dtype="float32")[:, 1], np.asarray(system, dtype="float32")[:, 1]
    idxs = np.random.default_rng(5).choice(len(b), size=(300, len(b)), replace=True)
    diffs = np.abs(np.array([100 * float(np.mean(s[i], dtype=np.float64)) - 100 * float(np.mean(b[i], dtype=np.float64))
                             for i in idxs]))
    delta = 100 * np.mean(np.asarray(system)[:, 1]) - 100 * np.mean(np.asarray(base)[:, 1])
    assert result["delta"] == pytest.approx(delta, rel=1e-12) and result["field"] == "rouge2"
    assert result["p_value"] == (np.sum(diffs - diffs.mean() > abs(delta)) + 1) / 301


# --- sentence-level tests against scipy and by hand ------------------------------------------------

def _rouge_rows(scores: list[float]) -> list[list[float]]:
    """Hand-made sentence scores (0..100) as "rouge" stats: sentence_scores() gives them back."""
    return [[0.0, 0.0, s / 100] for s in scores]


BASE_SCORES = [20.0, 35.5, 41.0, 12.0, 50.0, 33.0, 27.5, 60.0]
SYS_SCORES = [24.0, 35.5, 47.5, 10.0, 58.0, 36.0, 27.0, 66.0]


def test_paired_t_test_equals_scipy():
    result = run_test("paired_t_test", get_metric("rouge"), _rouge_rows(BASE_SCORES), _rouge_rows(SYS_SCORES))
    expected = scipy_stats.ttest_rel(SYS_SCORES, BASE_SCORES, alternative="greater")
    assert result["p_value"] == pytest.approx(expected.pvalue, rel=1e-9)
    assert result["t"] == pytest.approx(expected.statistic, rel=1e-9) and result["df"] == 7
    assert 0.01 < result["p_value"] < 0.1
    reverse = run_test("paired_t_test", get_metric("rouge"), _rouge_rows(SYS_SCORES), _rouge_rows(BASE_SCORES))
    assert reverse["p_value"] == pytest.approx(1 - result["p_value"], rel=1e-9)  # one-tailed


def test_paired_t_test_hand_worked():
    # differences 1, 2, 3: mean 2, sd 1, t = 2 sqrt(3), df 2; P(T_2 > t) = 1/2 - t / (2 sqrt(t^2 + 2))
    result = run_test("paired_t_test", get_metric("rouge"), _rouge_rows([10, 10, 10]), _rouge_rows([11, 12, 13]))
    t = 2 * math.sqrt(3)
    assert result["t"] == pytest.approx(t, rel=1e-9)
    assert result["p_value"] == pytest.approx(0.5 - t / (2 * math.sqrt(t * t + 2)), rel=1e-9)
    assert round(result["p_value"], 4) == 0.0371


def test_sign_test_hand_worked_and_scipy():
    # differences 2, 0, 1, -1, 5, 0, 3, 4: 5 wins, 1 loss, 2 ties dropped; p = P(X >= 5 | n=6) = (6 + 1) / 64
    base = [10, 10, 10, 10, 10, 10, 10, 10]
    system = [12, 10, 11, 9, 15, 10, 13, 14]
    result = run_test("sign_test", get_metric("rouge"), _rouge_rows(base), _rouge_rows(system))
    assert (result["wins"], result["losses"], result["ties"]) == (5, 1, 2)
    assert result["p_value"] == pytest.approx(7 / 64, rel=1e-12)
    assert result["p_value"] == pytest.approx(scipy_stats.binomtest(5, 6, 0.5, alternative="greater").pvalue,
                                              rel=1e-12)
    other = run_test("sign_test", get_metric("rouge"), _rouge_rows(BASE_SCORES), _rouge_rows(SYS_SCORES))
    assert other["p_value"] == pytest.approx(scipy_stats.binomtest(5, 7, 0.5, alternative="greater").pvalue)


def test_sentence_tests_on_bleu_use_smoothed_sentence_bleu():
    import sacrebleu
    metric = get_metric("sacrebleu")
    base, system = _stats("sacrebleu", BASELINE), _stats("sacrebleu", SYSTEMS["better"])
    sent_b = [sacrebleu.sentence_bleu(h, [r0, r1]).score for h, r0, r1 in zip(BASELINE, *STREAMS)]
    sent_s = [sacrebleu.sentence_bleu(h, [r0, r1]).score for h, r0, r1 in zip(SYSTEMS["better"], *STREAMS)]
    result = run_test("paired_t_test", metric, base, system)
    assert result["p_value"] == pytest.approx(scipy_stats.ttest_rel(sent_s, sent_b, alternative="greater").pvalue,
                                              rel=1e-9)
    assert result["delta"] == pytest.approx(33.038 - 27.719, abs=1e-3) and result["n_samples"] is None
    d = np.array(sent_s) - np.array(sent_b)
    sign = run_test("sign_test", metric, base, system)
    assert (sign["wins"], sign["losses"]) == (int(np.sum(d > 0)), int(np.sum(d < 0)))


# --- Collins, Koehn & Kucerova (2005): corpus BLEU with one sentence swapped ----------------------

# sacrebleu stats rows: [hyp_len, ref_len, correct 1-4, total 1-4].
COLLINS_BASE = [[20, 14, 14, 10, 6, 3, 20, 19, 18, 17],  # long: the corpus is not short (BP 1)
                [10, 10, 7, 5, 3, 1, 10, 9, 8, 7],
                [4, 10, 4, 3, 2, 1, 4, 3, 2, 1],         # short and precise: sentence BP exp(1 - 10/4)
                [10, 10, 7, 5, 3, 1, 10, 9, 8, 7]]
COLLINS_SYS = [COLLINS_BASE[0],                          # identical: a tie
               [10, 10, 8, 6, 4, 2, 10, 9, 8, 7],        # more matches
               [10, 10, 6, 4, 2, 1, 10, 9, 8, 7],        # full length, less precise
               [10, 10, 6, 4, 2, 0, 10, 9, 8, 7]]        # fewer matches


def _bleu(correct, total, bp=1.0):
    """Corpus BLEU x 100 by hand: bp x geometric mean of the four precisions."""
    return 100 * bp * math.prod(c / t for c, t in zip(correct, total)) ** 0.25


def test_collins_sign_test_hand_worked_differs_from_sentence_signs():
    # Baseline corpus: len 44 = ref 44 (BP 1), correct 32 23 14 6 / total 44 40 36 32 -> BLEU 41.79.
    # Swap each sentence for the system's and rescore the corpus:
    #   1 identical                         -> 41.79  0
    #   2 correct 33 24 15 7 / 44 40 36 32  -> 45.00  +   (sentence BLEU 37.99 -> 52.54: +)
    #   3 correct 34 24 14 6 / 50 46 42 38  -> 36.97  -   (sentence BLEU 22.31 -> 31.24: + , its BP goes away
    #                                                      but the corpus had BP 1 already and loses precision)
    #   4 correct 31 22 13 5 / 44 40 36 32  -> 38.45  -   (sentence BLEU 37.99 -> 26.27: -)
    # Swap signs: 1 win, 2 losses, 1 tie -> p = P(X >= 1 | n=3) = 7/8; sentence signs: 2 wins, 1 loss -> 1/2.
    base_score = _bleu([32, 23, 14, 6], [44, 40, 36, 32])
    assert round(base_score, 2) == 41.79
    assert [round(x, 2) for x in (_bleu([33, 24, 15, 7], [44, 40, 36, 32]), _bleu([34, 24, 14, 6], [50, 46, 42, 38]),
                                  _bleu([31, 22, 13, 5], [44, 40, 36, 32]))] == [45.00, 36.97, 38.45]
    metric = get_metric("sacrebleu")
    result = run_test("collins_sign_test", metric, COLLINS_BASE, COLLINS_SYS)
    assert (result["wins"], result["losses"], result["ties"]) == (1, 2, 1)
    assert result["p_value"] == pytest.approx(7 / 8, rel=1e-12)
    assert result["baseline_score"] == pytest.approx(base_score, rel=1e-12)
    assert result["system_score"] == pytest.approx(_bleu([34, 24, 14, 6], [50, 46, 42, 38]), rel=1e-12)
    assert result["signature"] == "collins_sign_test|one-tailed|ties:dropped|corpus-score-swap"
    assert (result["n_samples"], result["seed"], result["test"]) == (None, None, "collins_sign_test")
    sentence = run_test("sign_test", metric, COLLINS_BASE, COLLINS_SYS)
    assert (sentence["wins"], sentence["losses"], sentence["ties"]) == (2, 1, 1)
    assert sentence["p_value"] == pytest.approx(1 / 2, rel=1e-12)


def test_collins_sign_test_p_value_equals_binomial_tail():
    # The reverse comparison of the example: 2 wins, 1 loss, 1 tie -> p = P(X >= 2 | n=3) = (3 + 1) / 8.
    from scipy.stats import binom
    metric = get_metric("sacrebleu")
    result = run_test("collins_sign_test", metric, COLLINS_SYS, COLLINS_BASE)
    assert (result["wins"], result["losses"], result["ties"]) == (2, 1, 1)
    assert result["p_value"] == pytest.approx(4 / 8, rel=1e-12)
    assert result["p_value"] == pytest.approx(binom.pmf(2, 3, 0.5) + binom.pmf(3, 3, 0.5), rel=1e-12)
    # ROUGE is a sentence mean, so swap signs are the sentence-score signs: differences 4, 0, 6.5, -2, 8, 3,
    # -0.5, 6 -> 5 wins, 2 losses, 1 tie; p = P(X >= 5 | n=7) = (21 + 7 + 1) / 128.
    rouge = run_test("collins_sign_test", get_metric("rouge"), _rouge_rows(BASE_SCORES), _rouge_rows(SYS_SCORES))
    assert (rouge["wins"], rouge["losses"], rouge["ties"]) == (5, 2, 1)
    assert rouge["p_value"] == pytest.approx(sum(binom.pmf(k, 7, 0.5) for k in (5, 6, 7)), rel=1e-12)
    assert rouge["p_value"] == pytest.approx(29 / 128, rel=1e-12)


def test_collins_sign_test_ties_and_identical_systems():
    metric = get_metric("sacrebleu")
    same = run_test("collins_sign_test", metric, COLLINS_BASE, [list(row) for row in COLLINS_BASE])
    assert (same["wins"], same["losses"], same["ties"], same["p_value"], same["delta"]) == (0, 0, 4, 1.0, 0.0)
    # a different row can still tie: sentence 3's closest reference length 10 -> 8 (several references) leaves
    # the corpus at len 44 >= ref 42, BP 1 as before (a tie), while its sentence BP rises exp(-1.5) -> exp(-1)
    closer = [list(row) for row in COLLINS_BASE]
    closer[2] = [4, 8, 4, 3, 2, 1, 4, 3, 2, 1]
    tie = run_test("collins_sign_test", metric, COLLINS_BASE, closer)
    assert (tie["wins"], tie["losses"], tie["ties"], tie["p_value"]) == (0, 0, 4, 1.0)
    assert run_test("sign_test", metric, COLLINS_BASE, closer)["wins"] == 1
    only_one = [list(row) for row in COLLINS_BASE]
    only_one[1] = COLLINS_SYS[1]  # one win, three ties -> p = P(X >= 1 | n=1) = 1/2
    result = run_test("collins_sign_test", metric, COLLINS_BASE, only_one)
    assert (result["wins"], result["losses"], result["ties"], result["p_value"]) == (1, 0, 3, 0.5)


def test_collins_sign_test_on_3000_sentences_is_fast_and_equals_column_sums():
    """BLEU depends on column sums only: an independent route, total - baseline row + system row, one by one."""
    import time
    metric = get_metric("sacrebleu")
    base = np.tile(np.asarray(_stats("sacrebleu", BASELINE)), (38, 1))[:3000]
    system = np.tile(np.asarray(_stats("sacrebleu", SYSTEMS["clear"])), (38, 1))[:3000]
    start = time.perf_counter()
    result = run_test("collins_sign_test", metric, base, system)
    assert time.perf_counter() - start < 1.0
    swapped = base.sum(0) - base + system
    d = np.array([metric.score_from_stats(row[None]) for row in swapped]) - metric.score_from_stats(base)
    assert (result["wins"], result["losses"]) == (int(np.sum(d > 0)), int(np.sum(d < 0)))
    assert result["wins"] + result["losses"] + result["ties"] == 3000 and result["wins"] > result["losses"]
    assert result["p_value"] < 0.01


# --- registry and input errors ---------------------------------------------------------------------

def test_registry_and_errors():
    assert list(TESTS) == ["paired_bootstrap", "approximate_randomization", "paired_t_test", "sign_test",
                           "collins_sign_test"]
    with pytest.raises(PipelineError, match="unknown significance test 'wilcoxon'; expected one of approximate_randomization, collins_sign_test, "
                                            "paired_bootstrap"):
        get_test("wilcoxon")
    with pytest.raises(PipelineError, match="registered twice"):
        register_test("sign_test")(lambda *a, **k: {})
    metric = get_metric("sacrebleu")
    base = _stats("sacrebleu", BASELINE)
    with pytest.raises(PipelineError, match=r"baseline has shape \(80, 10\), system has \(1, 10\)"):
        run_test("paired_bootstrap", metric, base, base[:1])
    with pytest.raises(PipelineError, match="seed: expected a positive integer"):
        run_test("paired_bootstrap", metric, base, base, seed=0)
    with pytest.raises(PipelineError, match="n_samples: expected a positive integer"):
        run_test("approximate_randomization", metric, base, base, n_samples=0)
    with pytest.raises(PipelineError, match="field: metric 'sacrebleu' has no field 'rouge1'"):
        run_test("sign_test", metric, base, base, field="rouge1")
    with pytest.raises(PipelineError, match="stats"):
        run_test("sign_test", get_metric("rouge"), base, base)  # BLEU stats given to ROUGE
    with pytest.raises(PipelineError, match="at least 2 sentences"):
        run_test("paired_t_test", get_metric("rouge"), _rouge_rows([1]), _rouge_rows([2]))


# --- marks -------------------------------------------------------------------------------------------

HAO = [(0.01, "⇑"), (0.05, "↑")]


def test_significance_mark_levels_and_direction():
    assert significance_mark(0.001, 2.2, HAO) == "⇑"
    assert significance_mark(0.03, 0.4, HAO) == "↑"
    assert significance_mark(0.01, 0.4, HAO) == "↑"  # p < alpha, strictly
    assert significance_mark(0.2, 3.0, HAO) == ""
    assert significance_mark(0.001, 0.0, HAO) == ""
    # a system significantly WORSE than its baseline (hao2019: 46.3 against 100.0) gets no mark
    assert significance_mark(1 / 1001, 46.3 - 100.0, HAO) == ""
    assert significance_mark(0.001, 0.5, [(0.05, "†")]) == "†"


def test_significance_mark_on_a_worse_system_from_the_tests():
    metric = get_metric("sacrebleu")
    worse = run_test("paired_bootstrap", metric, _stats("sacrebleu", SYSTEMS["clear"]), _stats("sacrebleu", BASELINE))
    assert worse["p_value"] < 0.01 and worse["delta"] < 0
    assert significance_mark(worse["p_value"], worse["delta"], HAO) == ""
    better = run_test("paired_bootstrap", metric, _stats("sacrebleu", BASELINE), _stats("sacrebleu", SYSTEMS["clear"]))
    assert significance_mark(better["p_value"], better["delta"], HAO) == "⇑"


def test_significance_mark_errors():
    with pytest.raises(PipelineError, match=r"thresholds\[1\]: alpha 0.01 must be larger than 0.05"):
        significance_mark(0.001, 1.0, [(0.05, "↑"), (0.01, "⇑")])
    with pytest.raises(PipelineError, match="thresholds: expected a non-empty list"):
        significance_mark(0.001, 1.0, [])
    with pytest.raises(PipelineError, match="p_value: expected a probability"):
        significance_mark(1.5, 1.0, HAO)
    with pytest.raises(PipelineError, match="delta: expected a number"):
        significance_mark(0.01, float("nan"), HAO)
