"""BLEU by length: bins, counts, per-bin BLEU equal to sacrebleu on the subset, empty bins, bad input; the same
from a score file's per-sentence stats (score_by_length)."""
import pytest
from sacrebleu.metrics import BLEU

from pipeline.errors import PipelineError
from pipeline.evaluate import length
from pipeline.evaluate.length import bin_index, bin_label, bleu_by_length, check_bins, score_by_length
from pipeline.evaluate.metrics import get_metric


# The bins come from a table's settings; these are the ones of a BLEU-by-source-length figure in params.
BINS = ((0, 15), (15, 30), (30, 45), (45, None))


def words(n: int, stem: str = "w") -> str:
    """A line of n distinct whitespace tokens."""
    return " ".join(f"{stem}{i}" for i in range(n))


# Source lengths 3, 15, 16, 30, 46, 60, 0: bins (0,15] x3 (incl. the empty line), (15,30] x2, (30,45] x0, >45 x2.
SRC = [words(3), words(15), words(16), words(30), words(46), words(60), ""]
REFS = ["the cat sat on the mat .", "a b c d e f g h", "we went home early today .",
        "it is raining again in the city", "this is a long sentence about many things",
        "one two three four five six", "nothing here"]
HYPS = ["the cat sat on a mat .", "a b c d e f g h", "we went home today .",
        "it rains again in the city", "this is a long sentence about things",
        "one two three four five seven", "nothing"]


def sacrebleu_on(indices: list[int]) -> float:
    """Reference: sacrebleu corpus BLEU on the chosen sentences."""
    return BLEU(tokenize="13a").corpus_score([HYPS[i] for i in indices], [[REFS[i] for i in indices]]).score


def test_bins_counts_and_bleu_per_subset():
    result = bleu_by_length(SRC, HYPS, REFS, bins=BINS)
    assert [b["bin"] for b in result] == ["(0, 15]", "(15, 30]", "(30, 45]", "> 45"]
    assert [b["n"] for b in result] == [3, 2, 0, 2]
    assert result[0]["bleu"] == pytest.approx(sacrebleu_on([0, 1, 6]), abs=1e-9)
    assert result[1]["bleu"] == pytest.approx(sacrebleu_on([2, 3]), abs=1e-9)
    assert result[2]["bleu"] is None
    assert result[3]["bleu"] == pytest.approx(sacrebleu_on([4, 5]), abs=1e-9)
    # per-bin scores are not the corpus score, and bins differ from each other
    assert len({round(b["bleu"], 6) for b in result if b["bleu"] is not None}) == 3


def test_bin_edges_are_right_closed():
    assert [bin_index(n, BINS) for n in (0, 1, 15, 16, 30, 31, 45, 46, 1000)] == [0, 0, 0, 1, 1, 2, 2, 3, 3]
    assert [bin_label(lo, hi) for lo, hi in BINS] == ["(0, 15]", "(15, 30]", "(30, 45]", "> 45"]


def test_custom_bins_and_tokenizer():
    result = bleu_by_length(SRC, HYPS, REFS, bins=((0, 20), (20, None)), tokenize="char")
    assert [(b["bin"], b["n"]) for b in result] == [("(0, 20]", 4), ("> 20", 3)]
    expected = BLEU(tokenize="char").corpus_score([HYPS[i] for i in (0, 1, 2, 6)],
                                                  [[REFS[i] for i in (0, 1, 2, 6)]]).score
    assert result[0]["bleu"] == pytest.approx(expected, abs=1e-9)


def test_all_in_one_bin_leaves_the_others_empty():
    same = ["the cat sat on the mat .", "a dog ran in the park ."]
    result = bleu_by_length(["a b", "c"], same, same, bins=BINS)
    assert result[0] == {"bin": "(0, 15]", "bleu": pytest.approx(100.0), "n": 2}
    assert result[1:] == [{"bin": "(15, 30]", "bleu": None, "n": 0}, {"bin": "(30, 45]", "bleu": None, "n": 0},
                          {"bin": "> 45", "bleu": None, "n": 0}]


@pytest.mark.parametrize("kwargs,message", [
    ({"src": ["a"]}, "src has 1"),
    ({"tokenize": "spm"}, "tokenize"),
    ({"bins": ((0, 15), (16, None))}, r"bins\[1\]: expected to start at 15"),
    ({"bins": ((0, 15), (15, 30))}, r"bins\[1\]: the last bin must be open"),
    ({"bins": ((0, None), (15, None))}, r"bins\[0\]: upper bound"),
    ({"bins": ()}, "bins: expected a non-empty"),
])
def test_bad_input_is_named(kwargs, message):
    args = {"src": SRC, "hyps": HYPS, "refs": REFS, "bins": BINS, **kwargs}
    with pytest.raises(PipelineError, match=message):
        bleu_by_length(args.pop("src"), args.pop("hyps"), args.pop("refs"), **args)


def test_bins_are_the_callers_and_lists_work_too():
    assert not any("BINS" in name for name in vars(length))  # no paper's bins kept here
    with pytest.raises(TypeError, match="bins"):
        bleu_by_length(SRC, HYPS, REFS)  # type: ignore[call-arg]
    settings = [[0, 10], [10, 20], [20, 30], [30, 40], [40, 50], [50, 60], [60, None]]  # as params give them
    check_bins(settings)
    result = bleu_by_length(SRC, HYPS, REFS, bins=settings)
    assert [(b["bin"], b["n"]) for b in result] == [("(0, 10]", 2), ("(10, 20]", 2), ("(20, 30]", 1),
                                                    ("(30, 40]", 0), ("(40, 50]", 1), ("(50, 60]", 1), ("> 60", 0)]


# --- score_by_length: a metric's stats, several references ----------------------------------------

# Source lengths 4, 20, 2, 50: bins (0,15] = {0, 2}, (15,30] = {1}, (30,45] empty, > 45 = {3}. Two reference
# streams, and case differences that only a case-insensitive metric forgives.
SRC4 = [words(4), words(20), words(2), words(50)]
HYPS4 = ["The Cat sat on the mat .", "we went home early today .", "it rains in the City", "one two three five"]
REFS4 = [["the cat sat on the mat .", "We went home today .", "it is raining in the city", "one two three four"],
         ["a cat was sitting on the mat .", "we went home early .", "It rains in the city .", "one two three five ."]]


def _ci_score(indices: list[int]) -> float:
    """Reference: sacrebleu-ci's own score() of just these sentences, both reference streams."""
    refs = [[stream[i] for i in indices] for stream in REFS4]
    return get_metric("sacrebleu-ci").score([HYPS4[i] for i in indices], refs, "en")["score"]


def test_score_by_length_equals_the_metric_on_each_bin():
    metric = get_metric("sacrebleu-ci")
    scored = metric.score(HYPS4, REFS4, "en")
    result = score_by_length(SRC4, scored["stats"], metric, bins=BINS)
    assert [(b["bin"], b["n"]) for b in result] == [("(0, 15]", 2), ("(15, 30]", 1), ("(30, 45]", 0), ("> 45", 1)]
    assert result[0]["bleu"] == pytest.approx(_ci_score([0, 2]), abs=1e-9)
    assert result[1]["bleu"] == pytest.approx(_ci_score([1]), abs=1e-9)
    assert result[3]["bleu"] == pytest.approx(_ci_score([3]), abs=1e-9)
    assert len({round(b["bleu"], 6) for b in result if b["bleu"] is not None}) == 3  # the bins differ
    # the stats carry both references and the case folding: the cased metric scores bin 0 lower
    cased = score_by_length(SRC4, get_metric("sacrebleu").score(HYPS4, REFS4, "en")["stats"],
                            get_metric("sacrebleu"), bins=BINS)
    assert cased[0]["bleu"] < result[0]["bleu"]
    one_ref = score_by_length(SRC4, metric.score(HYPS4, REFS4[:1], "en")["stats"], metric, bins=BINS)
    assert one_ref[3]["bleu"] < result[3]["bleu"]


def test_score_by_length_empty_bin_and_one_bin():
    metric = get_metric("sacrebleu-ci")
    stats = metric.score(HYPS4, REFS4, "en")["stats"]
    result = score_by_length(SRC4, stats, metric, bins=BINS)
    assert result[2] == {"bin": "(30, 45]", "bleu": None, "n": 0}
    whole = score_by_length(SRC4, stats, metric, bins=((0, None),))
    assert whole == [{"bin": "> 0", "bleu": pytest.approx(_ci_score([0, 1, 2, 3]), abs=1e-9), "n": 4}]


def test_score_by_length_on_a_rouge_field():
    metric = get_metric("rouge")
    stats = metric.score(HYPS4, REFS4, "en")["stats"]
    result = score_by_length(SRC4, stats, metric, bins=BINS, field="rouge1")
    assert result[0]["bleu"] == pytest.approx(100 * (stats[0][0] + stats[2][0]) / 2, rel=1e-12)


@pytest.mark.parametrize("args,message", [
    ({"src": SRC4[:3]}, "stats has 4 rows, src has 3 lines; expected one row of stats per source line"),
    ({"stats": []}, "stats: expected a non-empty"),
    ({"field": "rouge1"}, "field: metric 'sacrebleu-ci' has no field 'rouge1'"),
    ({"bins": ((0, 15), (16, None))}, r"bins\[1\]: expected to start at 15"),
])
def test_score_by_length_bad_input_is_named(args, message):
    metric = get_metric("sacrebleu-ci")
    kwargs = {"src": SRC4, "stats": metric.score(HYPS4, REFS4, "en")["stats"], "bins": BINS, **args}
    with pytest.raises(PipelineError, match=message):
        score_by_length(kwargs.pop("src"), kwargs.pop("stats"), metric, **kwargs)
