"""Token and sentence batching, padding and the (src, tgt_in, tgt_out) triple."""
import random

import numpy as np
import pytest
import torch

from pipeline.data import batch_plan
from pipeline.data.batch_plan import batch_cost, length_order, sentence_batches, token_batches
from pipeline.data.batching import make_batch, pad
from pipeline.errors import PipelineError


def _lengths(n=500, seed=3):
    rng = random.Random(seed)
    return [rng.randint(0, 40) for _ in range(n)], [rng.randint(1, 40) for _ in range(n)]


def test_every_index_once_per_epoch():
    src, tgt = _lengths()
    for epoch in range(3):
        batches = token_batches(src, tgt, 300, seed=1, epoch=epoch)
        flat = [i for b in batches for i in b]
        assert sorted(flat) == list(range(len(src)))


def test_token_budget_respected_and_batches_are_full():
    src, tgt = _lengths()
    batches = token_batches(src, tgt, 300, seed=1, epoch=0)
    for batch in batches:
        longest = max(batch_cost(src[i], tgt[i]) for i in batch)
        assert longest * len(batch) <= 300
    # greedy packing over length-sorted pairs: far fewer batches than pairs
    assert len(batches) < len(src) / 5


def test_cost_counts_eos_and_bos():
    # a pair of lengths (4, 6) pads to 7 positions (BOS + 6 or 6 + EOS); 2 such pairs need 14 tokens
    assert batch_cost(4, 6) == 7
    assert token_batches([4, 4], [6, 6], 14, seed=1, epoch=0) == [[0, 1]]
    assert sorted(token_batches([4, 4], [6, 6], 13, seed=1, epoch=0)) == [[0], [1]]


def test_deterministic_for_seed_and_epoch():
    src, tgt = _lengths()
    first = token_batches(src, tgt, 300, seed=5, epoch=2)
    assert first == token_batches(src, tgt, 300, seed=5, epoch=2)
    other_epoch = token_batches(src, tgt, 300, seed=5, epoch=3)
    other_seed = token_batches(src, tgt, 300, seed=6, epoch=2)
    assert other_epoch != first and other_seed != first
    # same groups, only their order is shuffled
    assert sorted(map(tuple, other_epoch)) == sorted(map(tuple, first))


def test_unshuffled_order_is_by_length():
    src, tgt = _lengths()
    batches = token_batches(src, tgt, 300, seed=5, epoch=0, shuffle=False)
    keys = [(tgt[i], src[i], i) for b in batches for i in b]
    assert keys == sorted(keys)


def test_oversized_pair_gets_its_own_batch():
    batches = token_batches([3, 100, 3], [3, 3, 3], 20, seed=1, epoch=0)
    assert sorted(batches) == [[0, 2], [1]]


def test_bad_arguments_are_pipeline_errors():
    with pytest.raises(PipelineError, match="3 source lengths but 2 target"):
        token_batches([1, 2, 3], [1, 2], 10, seed=1, epoch=0)
    with pytest.raises(PipelineError, match="batch_size: got 0, expected a positive integer \\(padded tokens"):
        token_batches([1], [1], 0, seed=1, epoch=0)


# ---- sentence batches (shu2016: 64 pairs grouped by length, batch order shuffled)
def test_sentence_batches_hold_exactly_batch_size_pairs_but_the_last():
    src, tgt = _lengths(n=103)
    for epoch in range(3):
        batches = sentence_batches(src, tgt, 10, seed=1, epoch=epoch)
        assert [len(b) for b in batches] == [10] * 10 + [3]
        assert sorted(i for b in batches for i in b) == list(range(103))   # every pair exactly once
    assert [len(b) for b in sentence_batches(src[:100], tgt[:100], 10, seed=1, epoch=0)] == [10] * 10
    assert sentence_batches([4, 2, 9], [1, 1, 1], 5, seed=1, epoch=0) == [[1, 0, 2]]


def test_sentence_batches_group_by_length_and_shuffle_per_epoch():
    src, tgt = _lengths(n=103)
    first = sentence_batches(src, tgt, 10, seed=5, epoch=2)
    assert first == sentence_batches(src, tgt, 10, seed=5, epoch=2)              # same seed and epoch: same order
    other_epoch = sentence_batches(src, tgt, 10, seed=5, epoch=3)
    other_seed = sentence_batches(src, tgt, 10, seed=6, epoch=2)
    assert other_epoch != first and other_seed != first
    assert sorted(map(tuple, other_epoch)) == sorted(map(tuple, first))          # same groups, other order
    assert other_epoch[-1] == first[-1] and len(first[-1]) == 3                  # the short batch stays last
    unshuffled = sentence_batches(src, tgt, 10, seed=5, epoch=0, shuffle=False)
    keys = [(tgt[i], src[i], i) for b in unshuffled for i in b]
    assert keys == sorted(keys)                                                  # consecutive in length order
    assert sorted(map(tuple, unshuffled)) == sorted(map(tuple, first))


def test_sentence_batches_bad_arguments_are_pipeline_errors():
    with pytest.raises(PipelineError, match="3 source lengths but 2 target"):
        sentence_batches([1, 2, 3], [1, 2], 10, seed=1, epoch=0)
    with pytest.raises(PipelineError, match="batch_size: got 0"):
        sentence_batches([1], [1], 0, seed=1, epoch=0)


def test_pad_and_make_batch_values():
    assert pad([[5, 6, 7], [8], []]).tolist() == [[5, 6, 7], [8, 0, 0], [0, 0, 0]]
    assert pad([[4]], pad_id=9).dtype == torch.long
    src, tgt_in, tgt_out = make_batch([[5, 6], [7]], [[8], [9, 10, 11]])
    assert src.tolist() == [[5, 6, 2], [7, 2, 0]]
    assert tgt_in.tolist() == [[1, 8, 0, 0], [1, 9, 10, 11]]
    assert tgt_out.tolist() == [[8, 2, 0, 0], [9, 10, 11, 2]]


@pytest.mark.parametrize("block", [1, 5, 64, 1 << 20])
def test_the_counting_sort_orders_as_lexsort_in_int32(block):
    rng = np.random.default_rng(block)
    for _ in range(40):
        n, top = int(rng.integers(0, 400)), int(rng.choice([1, 4, 50, 3000]))
        src, tgt = (rng.integers(0, top, n).astype(np.int32) for _ in range(2))
        order = length_order(src, tgt, block)
        assert order.dtype == np.int32 and order.tolist() == np.lexsort((src, tgt)).tolist()


def test_lengths_too_scattered_to_tally_are_sorted_directly(monkeypatch):
    monkeypatch.setattr(batch_plan, "MAX_LENGTH_PAIRS", 3)
    src, tgt = np.array([5, 1, 5, 2, 1], np.int32), np.array([2, 2, 1, 2, 1], np.int32)
    order = length_order(src, tgt, 2)
    assert order.dtype == np.int32 and order.tolist() == [4, 2, 1, 3, 0]
