"""Batches for teacher-forced passes over a test set (attention statistics, perplexity, attention to previous words
or to the source): pairs in length order, so that a batch holds little padding."""
from __future__ import annotations

from typing import Iterator, Sequence

import torch

from pipeline.data.batching import make_batch


def forced_batches(src_ids: Sequence[Sequence[int]], tgt_ids: Sequence[Sequence[int]], batch_size: int
                   ) -> Iterator[tuple[list[int], torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Pairs sorted by (target length, source length, index), cut into chunks of batch_size -> (the chunk's pair
    indices, src, tgt_in, tgt_out) as make_batch builds them."""
    order = sorted(range(len(src_ids)), key=lambda k: (len(tgt_ids[k]), len(src_ids[k]), k))
    for start in range(0, len(order), batch_size):
        chunk = order[start:start + batch_size]
        yield (chunk, *make_batch([src_ids[k] for k in chunk], [tgt_ids[k] for k in chunk]))
