"""The metrics registry: multi-reference BLEU against sacreBLEU, stats that rescore exactly, ROUGE via rouge-score."""
import json

import numpy as np
import pytest
import sacrebleu
from sacrebleu.metrics import BLEU

from pipeline.errors import PipelineError
from pipeline.evaluate.metrics import METRICS, Metric, get_metric, register_metric
from sentences import corpus, noisy

REFS = corpus(1)
STREAMS = [REFS, noisy(REFS, 2, 0.3), noisy(REFS, 3, 0.3), noisy(REFS, 4, 0.3)]  # NIST-like: 4 references
HYPS = noisy(REFS, 5, 0.45)


def _tokenised(lines: list[str]) -> list[str]:
    """Crude tokenisation for the multi-bleu tests: punctuation split off."""
    return [line.replace(",", " ,").replace(".", " .").replace("?", " ?").replace("!", " !") for line in lines]


SACRE = {"sacrebleu": {}, "sacrebleu-ci": {"lowercase": True}}
MULTI = {"multi-bleu": {}, "multi-bleu-ci": {"lowercase": True}}


# --- registry ---------------------------------------------------------------------------------

def test_registered_metrics_and_unknown_name():
    assert {"sacrebleu", "sacrebleu-ci", "multi-bleu", "multi-bleu-ci", "rouge"} <= set(METRICS)
    assert get_metric("multi-bleu").tokenized and get_metric("multi-bleu-ci").tokenized
    assert not get_metric("sacrebleu").tokenized and not get_metric("rouge").tokenized
    with pytest.raises(PipelineError, match="unknown metric 'bleu'.*multi-bleu, multi-bleu-ci, ribes, rouge, sacrebleu"):
        get_metric("bleu")


def test_register_metric_decorator_and_duplicates():
    try:
        @register_metric("test-double", factor=2.0)
        @register_metric("test-single")
        class Scaled(Metric):
            def __init__(self, name, factor=1.0):
                super().__init__(name)
                self.factor = factor

        assert get_metric("test-single").factor == 1.0 and get_metric("test-double").factor == 2.0
        assert get_metric("test-double").name == "test-double"
        with pytest.raises(PipelineError, match="metric 'test-single': registered twice \\(Scaled and Scaled\\)"):
            register_metric("test-single")(Scaled)
    finally:
        METRICS.pop("test-single", None), METRICS.pop("test-double", None)


# --- BLEU equals sacreBLEU ----------------------------------------------------------------------

@pytest.mark.parametrize("name", SACRE)
@pytest.mark.parametrize("n_refs", [1, 4])
def test_sacrebleu_metrics_equal_corpus_score(name, n_refs):
    streams = STREAMS[:n_refs]
    ours = get_metric(name).score(HYPS, streams, "en")
    theirs = BLEU(tokenize="13a", **SACRE[name]).corpus_score(HYPS, streams)
    assert ours["score"] == theirs.score  # exact
    assert (ours["counts"], ours["totals"]) == (list(theirs.counts), list(theirs.totals))
    assert (ours["bp"], ours["sys_len"], ours["ref_len"]) == (theirs.bp, theirs.sys_len, theirs.ref_len)
    assert (ours["n_sentences"], ours["n_references"], ours["metric"]) == (len(HYPS), n_refs, name)
    assert ours["signature"] == f"nrefs:{n_refs}|case:{'lc' if SACRE[name] else 'mixed'}|eff:no|tok:13a|" \
                                f"smooth:exp|version:{sacrebleu.__version__}"
    assert 5 < ours["score"] < 90


def test_references_matter_and_case_insensitive_differs():
    one, four = (get_metric("sacrebleu").score(HYPS, STREAMS[:k], "en")["score"] for k in (1, 4))
    assert four > one
    assert get_metric("sacrebleu-ci").score(HYPS, STREAMS, "en")["score"] > four  # case flips forgiven


@pytest.mark.parametrize("name", MULTI)
def test_multi_bleu_metrics_equal_corpus_score(name):
    hyps, streams = _tokenised(HYPS), [_tokenised(s) for s in STREAMS]
    ours = get_metric(name).score(hyps, streams, "en")
    theirs = BLEU(tokenize="none", smooth_method="none", force=True, **MULTI[name]).corpus_score(hyps, streams)
    assert ours["score"] == theirs.score and ours["counts"] == list(theirs.counts)
    assert ours["ref_len"] == theirs.ref_len
    assert ours["signature"].startswith(f"multi-bleu|nrefs:4|case:{'lc' if MULTI[name] else 'mixed'}|eff:no|"
                                        f"tok:none|smooth:none")


def test_multi_bleu_closest_reference_length_hand_computed():
    # hypothesis 4 tokens; references of 3 and 5 tokens: both 1 away, the shorter (3) is taken, so BP = 1
    result = get_metric("multi-bleu").score(["a b c d"], [["a b c"], ["a b c d e"]], "en")
    assert result["ref_len"] == 3 and result["bp"] == 1.0
    assert result["counts"] == [4, 3, 2, 1] and result["score"] == pytest.approx(100.0)
    # case-sensitive: "A" misses; multi-bleu-ci matches it
    assert get_metric("multi-bleu").score(["A b c d"], [["a b c d"]], "en")["counts"] == [3, 2, 1, 0]
    assert get_metric("multi-bleu-ci").score(["A b c d"], [["a b c d"]], "en")["score"] == pytest.approx(100.0)


def test_target_language_tokenizer():
    zh = get_metric("sacrebleu").score(["我们去图书馆"], [["我们去图书馆"]], "zh")
    assert zh["totals"][0] == 6 and "tok:zh" in zh["signature"]
    assert "tok:char" in get_metric("sacrebleu").score(["a"], [["a"]], "ja")["signature"]


# --- stats rescore exactly --------------------------------------------------------------------

def test_multi_bleu_lc_lowercases_ascii_only_as_the_script_does():
    """multi-bleu.perl -lc is Perl's lc on bytes: "Über" stays. By hand: 5/6, 4/5, 3/4, 2/3 n-gram precisions, no
    brevity penalty: BLEU = (1/3)^(1/4) = 75.98."""
    ci = get_metric("multi-bleu-ci")
    result = ci.score(["Über das Haus ist klein ."], [["über das haus ist klein ."]], "de")
    assert result["score"] == pytest.approx(100 * (1 / 3) ** 0.25, abs=1e-9)
    assert "case:lc" in result["signature"]
    upper_ascii = ci.score(["über DAS Haus ist klein ."], [["über das haus ist klein ."]], "de")
    assert upper_ascii["score"] == pytest.approx(100)
    assert get_metric("sacrebleu-ci").score(["Über das Haus ist klein ."], [["über das haus ist klein ."]],
                                             "de")["score"] == pytest.approx(100)  # sacreBLEU's lowercase is Unicode's


def test_tokenized_bleu_lowercase_is_multi_bleu_lc_ascii_only():
    """tokenized_bleu(lowercase=True), whose signature names multi-bleu, lowercases as multi-bleu.perl -lc does (it
    took sacreBLEU's Unicode lowercase: "Über" matched "über", 100)."""
    from pipeline.evaluate.bleu import tokenized_bleu
    hyps, refs = ["Über das Haus ist klein ."], ["über das haus ist klein ."]
    result = tokenized_bleu(hyps, refs, lowercase=True)
    assert result["score"] == pytest.approx(100 * (1 / 3) ** 0.25, abs=1e-9)
    assert result["score"] == get_metric("multi-bleu-ci").score(hyps, [refs], "de")["score"]
    assert result["signature"].startswith("multi-bleu|nrefs:1|case:lc|")


@pytest.mark.parametrize("name", ["sacrebleu", "sacrebleu-ci", "multi-bleu", "multi-bleu-ci", "rouge"])
def test_score_from_stats_equals_score_after_json(name):
    metric = get_metric(name)
    result = json.loads(json.dumps(metric.score(HYPS, STREAMS, "en")))
    stats = np.asarray(result["stats"])
    assert stats.shape[0] == len(HYPS)
    assert metric.score_from_stats(stats) == result["score"]  # exact
    assert metric.score_from_stats(result["stats"]) == result["score"]  # a plain list too
    for field in metric.fields[1:]:
        assert metric.score_from_stats(stats, field) == result[field]


@pytest.mark.parametrize("name", SACRE)
def test_stats_of_a_subset_rescore_it(name):
    """Any resample's score comes from the stats alone: here every third sentence, and a repeated one."""
    metric = get_metric(name)
    stats = np.asarray(metric.score(HYPS, STREAMS, "en")["stats"])
    rows = list(range(0, len(HYPS), 3)) + [7, 7, 7]
    expected = BLEU(**SACRE[name]).corpus_score([HYPS[i] for i in rows], [[s[i] for i in rows] for s in STREAMS])
    assert metric.score_from_stats(stats[rows]) == expected.score


@pytest.mark.parametrize("name,tokenize", [("sacrebleu", "13a"), ("multi-bleu", "none")])
def test_sentence_scores_are_sacrebleu_sentence_bleu(name, tokenize):
    metric = get_metric(name)
    stats = metric.score(HYPS, STREAMS[:2], "en")["stats"]
    expected = [sacrebleu.sentence_bleu(h, [r0, r1], tokenize=tokenize).score
                for h, r0, r1 in zip(HYPS, STREAMS[0], STREAMS[1])]
    np.testing.assert_array_equal(metric.sentence_scores(stats), expected)
    assert metric.sentence_scores(stats).shape == (len(HYPS),)


def test_stats_and_field_errors():
    metric = get_metric("sacrebleu")
    with pytest.raises(PipelineError, match=r"stats: expected a non-empty \[N, 10\] array"):
        metric.score_from_stats([[1, 2, 3]])
    with pytest.raises(PipelineError, match="stats"):
        metric.score_from_stats(np.zeros((0, 10)))
    with pytest.raises(PipelineError, match="field: metric 'sacrebleu' has no field 'rouge1'; expected one of score"):
        metric.score_from_stats(np.ones((1, 10)), "rouge1")
    with pytest.raises(PipelineError, match="field: metric 'rouge' has no field 'bleu'"):
        get_metric("rouge").sentence_scores(np.ones((1, 3)), "bleu")


def test_reference_stream_errors():
    metric = get_metric("sacrebleu")
    with pytest.raises(PipelineError, match=r"hyps has 2, refs\[0\] has 2, refs\[1\] has 1"):
        metric.score(["a", "b"], [["a", "b"], ["a"]], "en")
    with pytest.raises(PipelineError, match=r"refs\[0\]: expected a list of reference lines"):
        metric.score(["a", "b"], ["a", "b"], "en")  # one stream passed without its list
    with pytest.raises(PipelineError, match="refs: expected a non-empty list"):
        metric.score(["a"], [], "en")
    with pytest.raises(PipelineError, match="empty"):
        metric.score([], [[]], "en")
    with pytest.raises(PipelineError, match="lang"):
        metric.score(["a"], [["a"]], "")


# --- ROUGE ---------------------------------------------------------------------------------------

def test_rouge_hand_computed_four_words():
    # tokens: hyp [the cat sat here], ref [a cat sat]; punctuation and case are dropped by rouge-score
    # ROUGE-1: overlap 2, P = 2/4, R = 2/3, F = 4/7; ROUGE-2: {cat sat} 1, P = 1/3, R = 1/2, F = 2/5;
    # ROUGE-L: LCS "cat sat" = 2, F = 4/7
    result = get_metric("rouge").score(["The cat, sat here."], [["a CAT sat"]], "en")
    assert result["rouge1"] == pytest.approx(100 * 4 / 7, rel=1e-12)
    assert result["rouge2"] == pytest.approx(40.0, rel=1e-12)
    assert result["rougeL"] == result["score"] == pytest.approx(100 * 4 / 7, rel=1e-12)
    assert "stem:no" in result["signature"] and "nrefs:1" in result["signature"]


def test_rouge_equals_rouge_score_directly():
    from rouge_score.rouge_scorer import RougeScorer

    hyps = ["police killed the gunman in the city", "the cat was found under the bed", "nothing matches here"]
    refs = ["the gunman was killed by police in the city", "the cat was under the bed", "completely different"]
    scorer = RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=False)
    direct = [scorer.score(r, h) for h, r in zip(hyps, refs)]
    result = get_metric("rouge").score(hyps, [refs], "en")
    for kind in ("rouge1", "rouge2", "rougeL"):
        assert result[kind] == pytest.approx(100 * np.mean([d[kind].fmeasure for d in direct]), rel=1e-12)
    assert result["stats"][0] == [direct[0][k].fmeasure for k in ("rouge1", "rouge2", "rougeL")]
    assert result["stats"][2] == [0.0, 0.0, 0.0]


def test_rouge_multiple_references_take_the_best_per_type():
    from rouge_score.rouge_scorer import RougeScorer

    # ref A wins ROUGE-1 (all four words, scrambled), ref B wins ROUGE-2 (one bigram) and ROUGE-L
    hyp, ref_a, ref_b = "a b c d", "d c b a", "a b x y z"
    result = get_metric("rouge").score([hyp], [[ref_a], [ref_b]], "en")
    best = RougeScorer(["rouge1", "rouge2", "rougeL"]).score_multi([ref_a, ref_b], hyp)
    assert result["stats"][0] == [best[k].fmeasure for k in ("rouge1", "rouge2", "rougeL")]
    assert result["rouge1"] == pytest.approx(100.0) and result["rouge2"] == pytest.approx(100 * 2 / 7)
    assert result["n_references"] == 2


def test_rouge_rejects_text_its_tokenizer_cannot_read():
    with pytest.raises(PipelineError, match=r"\[a-z0-9\]"):
        get_metric("rouge").score(["我们去图书馆"], [["我们去图书馆"]], "zh")
