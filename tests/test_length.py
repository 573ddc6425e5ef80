"""BLEU by length: bins, counts, per-bin BLEU equal to sacrebleu on the subset, empty bins, bad input."""
import pytest
from sacrebleu.metrics import BLEU

from pipeline.errors import PipelineError
from pipeline.evaluate import length
from pipeline.evaluate.length import bin_index, bin_label, bleu_by_length, check_bins


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
