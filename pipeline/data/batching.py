"""Padding, and the (src, tgt_in, tgt_out) triple every model trains on."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from pipeline.data.vocab import BOS, EOS, PAD


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
