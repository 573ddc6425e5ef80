"""Alignment error rate (Och and Ney 2003) on hand-made alignments, and attention -> word links."""
import numpy as np
import pytest

from pipeline.errors import PipelineError
from pipeline.papers.zhang2018.alignment import (alignment_error, argmax_links, parse_links, read_gold, word_of,
                                         word_weights)


def test_gold_lines_hold_sure_and_possible_links():
    sure, possible = parse_links("0-0 1?2 2-1")
    assert sure == {(0, 0), (2, 1)} and possible == {(0, 0), (1, 2), (2, 1)}
    assert parse_links("") == (set(), set())
    with pytest.raises(PipelineError, match=r"gold.txt, line 2: bad link '1:2'; expected i-j \(sure\) or i\?j"):
        read_gold(["0-0", "1:2"], "gold.txt")


def test_aer_precision_recall_by_hand():
    # sentence 1: S = {0-0, 1-1}, P = S + {1-2}; A = {0-0, 1-2, 2-2}: A&S = 1, A&P = 2
    # sentence 2: S = {0-1}, P = S;                A = {0-1}:           A&S = 1, A&P = 1
    gold = read_gold(["0-0 1-1 1?2", "0-1"])
    result = alignment_error([{(0, 0), (1, 2), (2, 2)}, {(0, 1)}], gold)
    assert result["precision"] == pytest.approx(3 / 4)  # (2 + 1) / (3 + 1)
    assert result["recall"] == pytest.approx(2 / 3)  # (1 + 1) / (2 + 1)
    assert result["aer"] == pytest.approx(1 - (2 + 3) / (4 + 3))  # 2/7
    assert (result["links"], result["sure"], result["sentences"]) == (4, 3, 2)
    perfect = alignment_error([{(0, 0), (1, 1)}], read_gold(["0-0 1-1 1?2"]))
    assert perfect["aer"] == 0.0 and perfect["recall"] == 1.0
    with pytest.raises(PipelineError, match="1 predicted sentences for 2 gold ones"):
        alignment_error([{(0, 0)}], gold)


def test_subword_attention_becomes_word_links():
    assert word_of(["new@@", "ton", "'s", "law"]) == [0, 0, 1, 2]
    src, tgt = ["a@@", "b", "c"], ["x", "y@@", "z"]  # source words ab, c; target words x, yz
    attention = np.array([[0.2, 0.2, 0.6],    # x: ab 0.4, c 0.6
                          [0.5, 0.4, 0.1],    # y@@: ab 0.9, c 0.1
                          [0.1, 0.1, 0.8]])   # z: ab 0.2, c 0.8 -> yz: ab 0.55, c 0.45
    words = word_weights(attention, src, tgt)
    assert words == pytest.approx(np.array([[0.4, 0.6], [0.55, 0.45]]))
    assert argmax_links(words) == {(1, 0), (0, 1)}
    assert argmax_links(np.array([[0.5, 0.5]])) == {(0, 0)}  # ties to the first source word
    with pytest.raises(PipelineError, match=r"expected \(3, 2\)"):
        word_weights(attention, src[:2], tgt)
