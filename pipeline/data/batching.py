"""Token-count and sentence-count batching, padding, and the (src, tgt_in, tgt_out) triple every model trains on."""
from __future__ import annotations

import random
from typing import Sequence

import numpy as np
import torch

from pipeline.data.vocab import BOS, EOS, PAD
from pipeline.errors import PipelineError


def batch_cost(src_len: int, tgt_len: int) -> int:
    """Padded length of one pair in a batch: the longer of src + EOS and BOS/EOS + tgt."""
    return max(src_len, tgt_len) + 1


def _length_order(caller: str, src_lens: Sequence[int], tgt_lens: Sequence[int], batch_size: int,
                  unit: str) -> list[int]:
    """Pair indices sorted by (target length, source length, index), after checking the arguments."""
    if len(src_lens) != len(tgt_lens):
        raise PipelineError(f"{caller}: {len(src_lens)} source lengths but {len(tgt_lens)} target lengths; "
                            "expected one per pair")
    if batch_size < 1:
        raise PipelineError(f"batch_size: got {batch_size}, expected a positive integer ({unit})")
    return sorted(range(len(src_lens)), key=lambda i: (tgt_lens[i], src_lens[i], i))


def token_batches(src_lens: Sequence[int], tgt_lens: Sequence[int], batch_tokens: int, *, seed: int, epoch: int,
                  shuffle: bool = True) -> list[list[int]]:
    """Indices grouped by length so that (longest padded length) * n <= batch_tokens; order seeded by (seed, epoch).

    Pairs are sorted by (target length, source length, index), cut greedily into batches, and the batch order
    is shuffled with a generator seeded by (seed, epoch). A single pair longer than the budget gets a batch of
    its own (our choice: never drop or crash; the cleaning step filters long sentences).
    """
    order = _length_order("token_batches", src_lens, tgt_lens, batch_tokens, "padded tokens per batch")
    batches: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for i in order:
        cost = batch_cost(src_lens[i], tgt_lens[i])
        if current and max(longest, cost) * (len(current) + 1) > batch_tokens:
            batches.append(current)
            current, longest = [], 0
        current.append(i)
        longest = max(longest, cost)
    if current:
        batches.append(current)
    if shuffle:
        random.Random(f"{seed}/{epoch}").shuffle(batches)
    return batches


def sentence_batches(src_lens: Sequence[int], tgt_lens: Sequence[int], batch_size: int, *, seed: int, epoch: int,
                     shuffle: bool = True) -> list[list[int]]:
    """Indices in batches of exactly `batch_size` pairs but the last; order seeded by (seed, epoch).

    Pairs are sorted by (target length, source length, index) and cut into consecutive batches (Shu and Nakayama
    2016: batches of 64 pairs grouped by length). The full batches are shuffled with a generator seeded by
    (seed, epoch); the one short batch (the longest pairs, if len % batch_size) stays last (our choice: only the
    last batch of an epoch is short).
    """
    order = _length_order("sentence_batches", src_lens, tgt_lens, batch_size, "sentence pairs")
    batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
    short = batches.pop() if batches and len(batches[-1]) < batch_size else None
    if shuffle:
        random.Random(f"{seed}/{epoch}").shuffle(batches)
    return batches + ([short] if short else [])


def pad(seqs: Sequence[Sequence[int]], pad_id: int = PAD) -> torch.Tensor:
    """Right-pad id lists into a LongTensor [B, max_len] (max_len >= 1)."""
    width = max([len(s) for s in seqs] + [1])
    out = np.full((len(seqs), width), pad_id, dtype=np.int64)  # numpy rows: one tensor copy, not one per row
    for row, seq in enumerate(seqs):
        out[row, : len(seq)] = seq
    return torch.from_numpy(out)


def encode_source(ids: Sequence[int]) -> list[int]:
    """Source ids as models see them: x + EOS (THUMT/fairseq style, our choice; an empty line stays non-empty)."""
    return list(ids) + [EOS]


def make_batch(src_ids: Sequence[Sequence[int]], tgt_ids: Sequence[Sequence[int]]
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """src [B,S] = x + EOS, tgt_in [B,T] = BOS + y, tgt_out [B,T] = y + EOS; all right-padded with PAD."""
    src = pad([encode_source(s) for s in src_ids])
    tgt_in = pad([[BOS] + list(t) for t in tgt_ids])
    tgt_out = pad([list(t) + [EOS] for t in tgt_ids])
    return src, tgt_in, tgt_out
