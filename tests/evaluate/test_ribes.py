"""RIBES against hand-computed values of RIBES.py's rules, the registry round trip, janome's Japanese segmentation."""
import math

import numpy as np
import pytest

from pipeline.errors import PipelineError
from pipeline.evaluate.metrics import Ribes, get_metric
from pipeline.evaluate.ribes import sentence_ribes, word_order
from sentences import corpus, noisy


def ribes(hyp: str, ref: str) -> float:
    """Sentence RIBES of two whitespace-tokenised strings."""
    return sentence_ribes(hyp.split(), ref.split())


def corpus_ribes(hyps, *streams, case=False) -> float:
    """Corpus RIBES through the metric object (lowercased unless case)."""
    metric = Ribes("test-ribes", case=case) if case else get_metric("ribes")
    return metric.score(list(hyps), [list(s) for s in streams], "ja")["score"]


def test_identical_sentence_scores_one():
    assert ribes("a b c d", "a b c d") == 1.0


def test_no_common_word_scores_zero():
    assert ribes("a b", "c d") == 0.0


def test_single_aligned_word():
    # one-word reference: NKT 1, precision 1/2, BP 1 -> 0.5 ** 0.25
    assert ribes("a", "a") == 1.0
    assert ribes("a x", "a") == pytest.approx(0.5 ** 0.25, abs=1e-12)
    # one aligned word against a longer reference: fewer than 2 correspondences -> 0
    assert ribes("a x", "a y") == 0.0


def test_swapped_halves_hand_computed_nkt():
    # positions [3, 4, 5, 0, 1, 2]: 3 + 3 ascending pairs of 15 -> NKT 0.4; P = 1, BP = 1
    assert word_order("d e f a b c".split(), "a b c d e f".split()) == [3, 4, 5, 0, 1, 2]
    assert ribes("d e f a b c", "a b c d e f") == pytest.approx(0.4, abs=1e-12)


def test_brevity_penalty_short_hypothesis():
    # NKT 1, P 1, BP = exp(1 - 4/2) -> exp(-1) ** 0.1
    assert ribes("a b", "a b c d") == pytest.approx(math.exp(-0.1), abs=1e-12)


def test_repeated_word_aligned_through_left_neighbour():
    # 'a' twice in the reference: "y a" is unique in both -> position 3, not the first 'a' (1)
    assert word_order("y a x".split(), "x a y a".split()) == [2, 3, 0]
    assert ribes("y a x", "x a y a") == pytest.approx(math.exp(0.1 * (1 - 4 / 3)) / 3, abs=1e-12)


def test_left_context_is_tried_before_right_context():
    # 'a': left "p a" -> reference position 5, right "a q" -> 0; the left one wins: [4, 5, 1, 2], 2 of 6 ascending
    assert word_order("p a q r".split(), "a q r z p a".split()) == [4, 5, 1, 2]
    assert ribes("p a q r", "a q r z p a") == pytest.approx(math.exp(0.1 * (1 - 6 / 4)) / 3, abs=1e-12)


def test_two_words_on_one_reference_position_are_a_tie_not_ascending():
    # both 'the' align to reference position 3 (right "the dog", then left "saw the"): [3, 4, 2, 3, 1];
    # ascending pairs (3, 4) and (2, 3) only, the tie (3, 3) is not one -> NKT 2/10
    assert word_order("the dog saw the cat".split(), "the cat saw the dog".split()) == [3, 4, 2, 3, 1]
    assert ribes("the dog saw the cat", "the cat saw the dog") == pytest.approx(0.2, abs=1e-12)


def test_overlapping_ngram_counts_leave_middle_word_unaligned():
    # "a a" occurs twice (overlapping) in "a a a": the middle 'a' has no unique context; ends via "a a a"
    assert word_order("a a a".split(), "a a a".split()) == [0, 2]
    assert ribes("a a a", "a a a") == pytest.approx((2 / 3) ** 0.25, abs=1e-12)


def test_several_references_best_per_sentence():
    hyps = ["a b c d", "a b c d"]
    first, second = ["a b c d", "d c b a"], ["d c b a", "a b c d"]
    assert corpus_ribes(hyps, first) == pytest.approx(0.5) and corpus_ribes(hyps, second) == pytest.approx(0.5)
    assert corpus_ribes(hyps, first, second) == 1.0  # per sentence the better reference, not the better stream


def test_lowercased_unless_case_sensitive():
    assert corpus_ribes(["The Cat sat"], ["the cat sat"]) == 1.0
    assert corpus_ribes(["The Cat sat"], ["the cat sat"], case=True) == 0.0


def test_empty_hypothesis_scores_zero_and_empty_reference_is_an_error():
    assert corpus_ribes(["", "a b"], ["a b", "a b"]) == 0.5
    with pytest.raises(PipelineError, match=r"refs\[1\] line 2: empty reference"):
        corpus_ribes(["a b", "a b"], ["a b", "a b"], ["a b", "  "])


def test_registry_round_trip():
    refs = corpus(7, 40)
    streams = [refs, noisy(refs, 8, 0.3)]
    hyps = noisy(refs, 9, 0.4)
    metric = get_metric("ribes")
    result = metric.score(hyps, streams, "en")
    assert metric.tokenized and result["metric"] == "ribes" and result["n_references"] == 2
    assert result["signature"] == "ribes|alpha:0.25|beta:0.1|case:lc|nrefs:2|impl:RIBES.py-1.03.1"
    assert result["n_sentences"] == len(result["stats"]) == 40
    assert metric.score_from_stats(result["stats"]) == result["score"]
    scores = metric.sentence_scores(result["stats"])
    assert len(scores) == 40 and 0 < result["score"] < 1 and np.mean(scores) == pytest.approx(result["score"])
    with pytest.raises(PipelineError, match="expected a non-empty \\[N, 1\\] array"):
        metric.score_from_stats([[0.5, 0.5]])


def test_segment_ja_observed_janome_words():
    from pipeline.evaluate.ja_segment import SEGMENTER, segment_ja
    assert SEGMENTER == "janome 0.5.0"
    # detokenised character-split output keeps spaces inside Latin runs; they are removed before segmenting
    assert segment_ja(["P C R 法を用いて D N A を増幅した。", "私は学生です。", ""]) == [
        "PCR 法 を 用い て DNA を 増幅 し た 。", "私 は 学生 です 。", ""]
    with pytest.raises(PipelineError, match="line 1: expected one sentence"):
        segment_ja(["a\nb"])


def test_score_step_segments_japanese_into_words_for_tokenised_metrics(tmp_path):
    """`python -m pipeline score` on ja: hypothesis and reference segmented by the analyser (WAT scores words),
    the signature names it; a character-split hypothesis scores as its joined words."""
    import json
    import subprocess
    import sys

    from pipeline.evaluate.ja_segment import SEGMENTER
    from workspace import ROOT, env

    (tmp_path / "test.ja").write_text("PCR法を用いてDNAを増幅した。\n", encoding="utf-8")
    (tmp_path / "hyp").write_text("P C R 法を用いてDNAを増幅した。\n", encoding="utf-8")
    for metric in ("ribes", "multi-bleu"):
        out = tmp_path / f"{metric}.json"
        proc = subprocess.run([sys.executable, "-m", "pipeline", "score", "--metric", metric, "--hyp",
                               str(tmp_path / "hyp"), "--ref-dir", str(tmp_path), "--test-set", "test", "--lang", "ja",
                               "--system", "s", "--output", str(out)], cwd=ROOT, env=env(), capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        result = json.loads(out.read_text(encoding="utf-8"))
        assert result["signature"].endswith(f"|seg:{SEGMENTER}")
        assert result["score"] == pytest.approx(1.0 if metric == "ribes" else 100.0)
