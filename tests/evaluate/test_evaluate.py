"""bleu.py (sacreBLEU layer), rouge.py (rouge-score layer) and the paired bootstrap, on small invented sentences."""
import math
import os

import pytest

from pipeline.errors import PipelineError
from pipeline.evaluate.bleu import bleu, target_tokenizer
from pipeline.evaluate.metrics import get_metric
from pipeline.evaluate.significance import run_test

REFS = [f"the {a} cat sat on the {b} mat near door {i}" for i, (a, b) in
        enumerate(zip(["black", "white", "small", "big"] * 15, ["red", "blue", "old", "new", "soft"] * 12))]


def _degrade(line: str, i: int) -> str:
    """Drop two words and swap two others: a clearly worse system."""
    words = line.split()
    del words[i % 5], words[-2]
    words[0], words[1] = words[1], words[0]
    return " ".join(words)


WORSE = [_degrade(line, i) for i, line in enumerate(REFS)]


# --- BLEU ---------------------------------------------------------------------------------------

def test_identical_hypotheses_score_100():
    result = bleu(REFS, REFS)
    assert result["score"] == pytest.approx(100.0, abs=1e-9)
    assert result["bp"] == 1.0 and result["n_sentences"] == len(REFS)
    assert result["counts"] == result["totals"]


def test_hand_computed_case():
    # matches 5/6, 3/5, 2/4, 1/3; equal lengths so BP = 1; BLEU = (1/12)^(1/4)
    result = bleu(["the cat sat on the mat"], ["the cat sat on a mat"])
    assert result["counts"] == [5, 3, 2, 1] and result["totals"] == [6, 5, 4, 3]
    assert (result["sys_len"], result["ref_len"], result["bp"]) == (6, 6, 1.0)
    assert result["score"] == pytest.approx(100 * (1 / 12) ** 0.25, rel=1e-12)
    assert round(result["score"], 2) == 53.73


def test_brevity_penalty_hand_computed():
    # every n-gram matches; 5 hypothesis words against 6 reference words: BP = exp(1 - 6/5)
    result = bleu(["the cat sat on the"], ["the cat sat on the mat"])
    assert result["bp"] == pytest.approx(math.exp(-0.2), rel=1e-12)
    assert result["score"] == pytest.approx(100 * math.exp(-0.2), rel=1e-12)


def test_case_sensitive_by_default_and_signature():
    mixed = bleu(["The Cat sat on the mat"], ["the cat sat on the mat"])
    lower = bleu(["The Cat sat on the mat"], ["the cat sat on the mat"], lowercase=True)
    assert "case:mixed" in mixed["signature"] and "tok:13a" in mixed["signature"]
    assert "case:lc" in lower["signature"]
    assert lower["score"] == pytest.approx(100.0, abs=1e-9)
    assert mixed["counts"] == [4, 3, 2, 1]  # 'The', 'Cat' and every n-gram holding them miss


def test_chinese_tokenizer_scores_characters():
    result = bleu(["我们去图书馆"], ["我们去图书馆"], tokenize="zh")
    assert result["totals"][0] == 6 and "tok:zh" in result["signature"]


def test_target_tokenizer_choice():
    assert [target_tokenizer(lang) for lang in ("zh", "ja", "en", "de")] == ["zh", "char", "13a", "13a"]


def test_length_mismatch_and_bad_tokenizer_are_errors():
    with pytest.raises(PipelineError, match="hyps has 2, refs has 1"):
        bleu(["a", "b"], ["a"])
    with pytest.raises(PipelineError, match="empty"):
        bleu([], [])
    with pytest.raises(PipelineError, match="tokenize"):
        bleu(["a"], ["a"], tokenize="ja-mecab")


# --- paired bootstrap from score files' stats ------------------------------------------------------

def _stats(lines: list[str]) -> list[list[int]]:
    return get_metric("sacrebleu").score(lines, [REFS], "en")["stats"]


def test_identical_systems_are_not_significant():
    result = run_test("paired_bootstrap", get_metric("sacrebleu"), _stats(WORSE), _stats(list(WORSE)), n_samples=200)
    assert result["p_value"] == 1.0
    assert result["system_score"] == result["baseline_score"] and result["delta"] == 0.0


def test_clearly_better_system_is_significant():
    result = run_test("paired_bootstrap", get_metric("sacrebleu"), _stats(WORSE), _stats(REFS), n_samples=1000)
    assert result["p_value"] < 0.01
    assert result["p_value"] == pytest.approx(1 / 1001)
    assert result["system_score"] == pytest.approx(100.0, abs=1e-9)
    assert result["baseline_score"] == bleu(WORSE, REFS)["score"]
    assert result["baseline_score"] < 60 and result["delta"] == result["system_score"] - result["baseline_score"]
    assert "bs:1000" in result["signature"] and "seed:12345" in result["signature"]
    assert all(type(result[k]) is float for k in ("p_value", "baseline_score", "system_score", "mean", "ci"))


def test_same_seed_same_result_and_env_untouched():
    half = [ref if i % 2 else worse for i, (ref, worse) in enumerate(zip(REFS, WORSE))]
    before = os.environ.get("SACREBLEU_SEED")
    metric, base, system = get_metric("sacrebleu"), _stats(WORSE), _stats(half)
    first = run_test("paired_bootstrap", metric, base, system, n_samples=300, seed=7)
    second = run_test("paired_bootstrap", metric, base, system, n_samples=300, seed=7)
    other = run_test("paired_bootstrap", metric, base, system, n_samples=300, seed=8)
    assert first == second
    assert first["seed"] == 7 and "seed:7" in first["signature"]
    assert (other["mean"], other["ci"]) != (first["mean"], first["ci"])  # the seed reaches the resampling
    assert os.environ.get("SACREBLEU_SEED") == before


def test_bootstrap_input_errors():
    metric = get_metric("sacrebleu")
    with pytest.raises(PipelineError, match="baseline has shape"):
        run_test("paired_bootstrap", metric, _stats(WORSE), _stats(WORSE)[:1])
    with pytest.raises(PipelineError, match="seed"):
        run_test("paired_bootstrap", metric, _stats(WORSE), _stats(REFS), seed=0)
    with pytest.raises(PipelineError, match="n_samples"):
        run_test("paired_bootstrap", metric, _stats(WORSE), _stats(REFS), n_samples=0)


# --- tokenized (multi-bleu-style) BLEU ---------------------------------------------------------------

def test_tokenized_bleu_hand_computed_and_case_sensitive():
    from pipeline.evaluate.bleu import tokenized_bleu

    # tokens as given ("mat." stays one token): matches 4/5, 3/4, 2/3, 1/2; BP = exp(1 - 7/5)
    first = tokenized_bleu(["The cat sat on mat."], ["The cat sat on the mat ."])
    assert first["counts"] == [4, 3, 2, 1] and first["totals"] == [5, 4, 3, 2]
    assert (first["sys_len"], first["ref_len"]) == (5, 7) and first["bp"] == pytest.approx(math.exp(-0.4))
    expected = 100 * math.exp(1 - 7 / 5) * (4 / 5 * 3 / 4 * 2 / 3 * 1 / 2) ** 0.25
    assert first["score"] == pytest.approx(expected, rel=1e-12)
    assert first["signature"].startswith("multi-bleu|nrefs:1|case:mixed|eff:no|tok:none|smooth:none")
    assert bleu(["The cat sat on mat."], ["The cat sat on the mat ."])["totals"] == [6, 5, 4, 3]  # 13a splits "."
    # case-sensitive ("The" unmatched; "the" matches the reference's second "the"), and no 4-gram: 0 unsmoothed
    lower = tokenized_bleu(["the cat sat on mat."], ["The cat sat on the mat ."])
    assert lower["counts"] == [4, 2, 1, 0] and lower["score"] == 0.0


def test_tokenized_bleu_equals_sacrebleu_and_takes_more_references():
    import sacrebleu

    from pipeline.evaluate.bleu import tokenized_bleu

    ours = tokenized_bleu(WORSE, REFS)
    theirs = sacrebleu.corpus_bleu(WORSE, [REFS], tokenize="none", smooth_method="none", force=True)
    assert ours["score"] == pytest.approx(theirs.score, abs=1e-12) and ours["counts"] == list(theirs.counts)
    # a second reference equal to the hypotheses makes the score 100 (closest ref length too)
    assert tokenized_bleu(WORSE, REFS, WORSE)["score"] == pytest.approx(100.0)
    with pytest.raises(PipelineError, match=r"refs1 has 1"):
        tokenized_bleu(WORSE, REFS, ["x"])


def test_bleu_takes_more_reference_streams_like_sacrebleu():
    from sacrebleu.metrics import BLEU

    second = [line.upper() for line in REFS]
    ours = bleu(WORSE, REFS, second, lowercase=True)
    theirs = BLEU(lowercase=True).corpus_score(WORSE, [REFS, second])
    assert ours["score"] == theirs.score and ours["signature"].startswith("nrefs:2|case:lc")
    assert ours == {k: v for k, v in get_metric("sacrebleu-ci").score(WORSE, [REFS, second], "en").items()
                    if k in ours}
    with pytest.raises(PipelineError, match="refs1 has 1"):
        bleu(WORSE, REFS, ["x"])


def test_tokenized_bleu_lowercase_equals_registry():
    from pipeline.evaluate.bleu import tokenized_bleu

    upper = [line.upper() for line in WORSE]
    assert tokenized_bleu(upper, REFS)["score"] == 0.0
    lower = tokenized_bleu(upper, REFS, lowercase=True)
    assert lower["score"] == tokenized_bleu(WORSE, REFS)["score"] and "case:lc" in lower["signature"]
    assert lower["score"] == get_metric("multi-bleu-ci").score(upper, [REFS], "en")["score"]


# --- rouge.py ---------------------------------------------------------------------------------------

def test_rouge_wrapper_is_the_registered_metric():
    from pipeline.evaluate.metrics import rouge

    # hyp [the cat sat here] against [a cat sat]: ROUGE-1 F 4/7, ROUGE-2 F 2/5, ROUGE-L F 4/7 (x 100)
    got = rouge(["The cat, sat here."], ["a CAT sat"])
    assert got == {"rouge1": pytest.approx(400 / 7), "rouge2": pytest.approx(40.0), "rougeL": pytest.approx(400 / 7)}
    assert rouge(["a b c d"], ["d c b a"], ["a b x y z"])["rouge2"] == pytest.approx(100 * 2 / 7)  # best reference
    with pytest.raises(PipelineError, match=r"hyps has 2, refs has 1"):
        rouge(["a", "b"], ["a"])
    with pytest.raises(PipelineError, match="hyps and refs are empty"):
        rouge([], [])


def test_meteor_reason_names_what_is_missing():
    from pipeline.evaluate.rouge import meteor_unavailable_reason

    reason = meteor_unavailable_reason()
    assert "METEOR" in reason and "Java" in reason and "WordNet" in reason
