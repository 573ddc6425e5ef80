"""GMBR system combination (shu2016 2.2, 5.1) on hand-made n-best lists, its tuning, and the length heuristic."""
import numpy as np
import pytest

from pipeline.errors import PipelineError
from pipeline.evaluate.metrics import get_metric
from pipeline.gmbr import check_theta, expected_features, gmbr_choice, pair_features, tune_theta
from pipeline.steps.length_switch import length_heuristic

UNIFORM = np.full(6, 1 / 6)


def test_pair_features_by_hand():
    # "a b c d" against "a b c e": 1-grams 3/4, 2-grams 2/3 (ab, bc), 3-grams 1/2 (abc), 4-grams 0/1;
    # same length -> BP 1; a, b, c aligned in order -> NKT 1
    assert pair_features("a b c d".split(), "a b c e".split()) == pytest.approx([3 / 4, 2 / 3, 1 / 2, 0, 1, 1])
    # "c b a" against "a b c d": every unigram matches, no bigram; BP exp(1 - 4/3); reversed order -> NKT 0
    assert pair_features("c b a".split(), "a b c d".split()) == pytest.approx([1, 0, 0, 0, np.exp(-1 / 3), 0])
    assert pair_features([], "a".split()).tolist() == [0, 0, 0, 0, 0, 0]


def test_gmbr_picks_the_consensus_and_a_single_system_keeps_its_one_best():
    candidates = ["a b c d".split(), "a b c d".split(), "x y z w".split()]
    expected = expected_features(candidates)
    assert expected.shape == (3, 6)
    assert gmbr_choice(expected, UNIFORM) == 0  # ties between the two copies go to the first
    assert gmbr_choice(expected_features(["only one".split()]), UNIFORM) == 0
    # weight only on the brevity penalty: every candidate has the same length -> a tie -> the first (the 1-best)
    assert gmbr_choice(expected_features(["x y z w".split(), "a b c d".split(), "a b c d".split()]),
                       [0, 0, 0, 0, 1, 0]) == 0
    with pytest.raises(PipelineError, match="no candidates"):
        expected_features([])


def test_theta_must_be_weights_on_the_simplex():
    for bad in ([1, 0, 0], [0.5, 0.5, 0.5, 0, 0, -0.5], [0.1] * 6):
        with pytest.raises(PipelineError, match="non-negative weights of p1, p2, p3, p4, bp, nkt summing to 1"):
            check_theta(bad)


def test_tuning_maximises_the_development_score():
    metric = get_metric("multi-bleu")
    refs = ["a b c d e", "f g h i j", "k l m n o"]
    nbest = [["a b c d e", "a b c x y", "a b c x y"],   # the consensus (x y) is wrong: tuning cannot fix sentence 1
             ["f g h i j z", "f g h i j", "j i h g f"],  # NKT separates the reversed one
             ["k l m n o", "o n m l k", "k l m n o"]]
    expected = [expected_features([c.split() for c in cands]) for cands in nbest]
    stats = [np.asarray(metric.score([c for c in cands], [[ref] * len(cands)], "en")["stats"])
             for cands, ref in zip(nbest, refs)]
    theta, score = tune_theta(expected, stats, metric, trials=50, seed=3)
    chosen = np.stack([s[gmbr_choice(e, theta)] for e, s in zip(expected, stats)])
    assert score == pytest.approx(metric.score_from_stats(chosen))
    uniform = np.stack([s[gmbr_choice(e, UNIFORM)] for e, s in zip(expected, stats)])
    assert score >= metric.score_from_stats(uniform)
    assert tune_theta(expected, stats, metric, trials=50, seed=3)[0].tolist() == theta.tolist()  # seeded
    with pytest.raises(PipelineError, match="3 sentences of features and 2 of metric stats"):
        tune_theta(expected, stats[:2], metric)


def test_length_heuristic_takes_the_short_system_below_40_words():
    assert length_heuristic([39, 40, 3], ["n1", "n2", "n3"], ["t1", "t2", "t3"]) == ["n1", "t2", "n3"]
    with pytest.raises(PipelineError, match="3 sources, 2 and 3 outputs"):
        length_heuristic([1, 2, 3], ["a", "b"], ["a", "b", "c"])
