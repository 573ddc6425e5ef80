"""Batch plans: pairs sorted by length and cut into token-count or sentence-count batches once per corpus, the
batches shuffled per epoch by a seeded generator. A plan holds a few bytes a pair (never lists of the corpus)."""
from __future__ import annotations

import random
from collections.abc import Sequence as SequenceABC
from typing import Sequence

import numpy as np

from pipeline.data.token_store import BLOCK, index_dtype
from pipeline.errors import PipelineError


def batch_cost(src_len: int, tgt_len: int) -> int:
    """Padded length of one pair in a batch: the longer of src + EOS and BOS/EOS + tgt."""
    return max(src_len, tgt_len) + 1


def _length_order(caller: str, src_lens: Sequence[int], tgt_lens: Sequence[int], batch_size: int,
                  unit: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pair indices sorted by (target length, source length, index), source lengths, target lengths), after
    checking the arguments."""
    if len(src_lens) != len(tgt_lens):
        raise PipelineError(f"{caller}: {len(src_lens)} source lengths but {len(tgt_lens)} target lengths; "
                            "expected one per pair")
    if batch_size < 1:
        raise PipelineError(f"batch_size: got {batch_size}, expected a positive integer ({unit})")
    src, tgt = _as_lengths(src_lens), _as_lengths(tgt_lens)
    return length_order(src, tgt), src, tgt


def _as_lengths(lengths: Sequence[int]) -> np.ndarray:
    """An integer array as it is (the stores' compact lengths are not copied), anything else as int64."""
    if isinstance(lengths, np.ndarray) and np.issubdtype(lengths.dtype, np.integer):
        return lengths
    return np.asarray(lengths, np.int64)


MAX_LENGTH_PAIRS = 1 << 22  # distinct (target, source) lengths the counting sort tallies (two int64 counters each)


def length_order(src: np.ndarray, tgt: np.ndarray, block: int = BLOCK) -> np.ndarray:
    """np.lexsort((src, tgt)): pair indices by (target length, source length, index), in index_dtype (4 bytes a
    pair). A stable counting sort over the distinct length pairs, `block` pairs at a time, so that no array of 8
    bytes a pair is made (lexsort's int64 result and workspace would triple start-up memory at 40M pairs)."""
    order = np.empty(len(src), index_dtype(len(src)))
    if not len(src):
        return order
    src_rank, src_kinds = _ranks(src, block)
    tgt_rank, tgt_kinds = _ranks(tgt, block)
    kinds = src_kinds * tgt_kinds
    if kinds > MAX_LENGTH_PAIRS:  # lengths too scattered to tally: sort directly
        order[:] = np.lexsort((src, tgt))
        return order

    def keys(start: int) -> np.ndarray:  # rank of each pair's (target length, source length)
        return tgt_rank[tgt[start : start + block]] * src_kinds + src_rank[src[start : start + block]]

    counts = np.zeros(kinds, np.int64)
    for start in range(0, len(src), block):
        counts += np.bincount(keys(start), minlength=kinds)
    next_slot = np.cumsum(counts) - counts  # where the next pair of each length pair goes
    for start in range(0, len(src), block):
        key = keys(start)
        local = np.argsort(key, kind="stable")
        sorted_key = key[local]
        rank_among_equal = np.arange(len(key)) - np.searchsorted(sorted_key, sorted_key)
        order[next_slot[sorted_key] + rank_among_equal] = local + start
        next_slot += np.bincount(key, minlength=kinds)
    return order


def _ranks(lengths: np.ndarray, block: int) -> tuple[np.ndarray, int]:
    """(table: a length -> its rank among the distinct lengths, how many distinct lengths)."""
    present = np.zeros(int(lengths.max()) + 1, bool)
    for start in range(0, len(lengths), block):
        present[lengths[start : start + block]] = True
    return np.cumsum(present) - 1, int(np.count_nonzero(present))


class BatchPlan:
    """Length-sorted pairs cut into batches once (order[bounds[b]:bounds[b + 1]] is batch b); each epoch shuffles
    the batches with a generator seeded by (seed, epoch). Holds a few bytes per pair, not lists of indices."""

    def __init__(self, order: np.ndarray, bounds: np.ndarray, short_last: bool = False):
        self.order, self.bounds, self.short_last = order, bounds, short_last

    def __len__(self) -> int:
        return len(self.bounds) - 1

    def epoch(self, seed: int, epoch: int, shuffle: bool = True) -> "EpochBatches":
        numbers = list(range(len(self)))
        fixed = [numbers.pop()] if self.short_last and numbers else []
        if shuffle:  # the same permutation as shuffling the batches themselves (it depends on their count only)
            random.Random(f"{seed}/{epoch}").shuffle(numbers)
        return EpochBatches(self, numbers + fixed)


class EpochBatches(SequenceABC):
    """One epoch's batches in order; batch k is a list of pair indices."""

    def __init__(self, plan: BatchPlan, numbers: list[int]):
        self.plan, self.numbers = plan, numbers

    def __len__(self) -> int:
        return len(self.numbers)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        b = self.numbers[k]
        return self.plan.order[self.plan.bounds[b] : self.plan.bounds[b + 1]].tolist()


def token_plan(src_lens: Sequence[int], tgt_lens: Sequence[int], batch_tokens: int) -> BatchPlan:
    """Pairs grouped by length so that (longest padded length) * n <= batch_tokens.

    Pairs are sorted by (target length, source length, index) and cut greedily into batches. A single pair longer
    than the budget gets a batch of its own (our choice: never drop or crash; the cleaning step filters long
    sentences).
    """
    order, src, tgt = _length_order("token_batches", src_lens, tgt_lens, batch_tokens, "padded tokens per batch")
    bounds, size, longest = [0], 0, 0
    for start in range(0, len(order), BLOCK):  # batch_cost of each pair in sorted order, as Python ints, by block
        pairs = order[start : start + BLOCK]
        for pos, cost in enumerate((np.maximum(src[pairs], tgt[pairs]).astype(np.int64) + 1).tolist(), start):
            if size and max(longest, cost) * (size + 1) > batch_tokens:
                bounds.append(pos)
                size, longest = 0, 0
            size += 1
            longest = max(longest, cost)
    if size:
        bounds.append(len(order))
    return BatchPlan(order, np.asarray(bounds, np.int64))


def sentence_plan(src_lens: Sequence[int], tgt_lens: Sequence[int], batch_size: int) -> BatchPlan:
    """Batches of exactly `batch_size` pairs but the last.

    Pairs are sorted by (target length, source length, index) and cut into consecutive batches (Shu and Nakayama
    2016: batches of 64 pairs grouped by length). Only the full batches are shuffled; the one short batch (the
    longest pairs, if len % batch_size) stays last (our choice: only the last batch of an epoch is short).
    """
    order, _, _ = _length_order("sentence_batches", src_lens, tgt_lens, batch_size, "sentence pairs")
    bounds = np.append(np.arange(0, len(order), batch_size), len(order)) if len(order) else np.zeros(1, np.int64)
    return BatchPlan(order, bounds, short_last=len(order) % batch_size != 0)


def token_batches(src_lens: Sequence[int], tgt_lens: Sequence[int], batch_tokens: int, *, seed: int, epoch: int,
                  shuffle: bool = True) -> list[list[int]]:
    """token_plan's batches as index lists, in the order of (seed, epoch)."""
    return list(token_plan(src_lens, tgt_lens, batch_tokens).epoch(seed, epoch, shuffle))


def sentence_batches(src_lens: Sequence[int], tgt_lens: Sequence[int], batch_size: int, *, seed: int, epoch: int,
                     shuffle: bool = True) -> list[list[int]]:
    """sentence_plan's batches as index lists, in the order of (seed, epoch)."""
    return list(sentence_plan(src_lens, tgt_lens, batch_size).epoch(seed, epoch, shuffle))
