"""Batched beam-search translation of tokenised (BPE-segmented) lines."""
from __future__ import annotations

import sys

import torch

from pipeline.data.batching import encode_source, pad


def length_sorted_chunks(lengths: list[int], batch_size: int) -> list[list[int]]:
    """Indices sorted by decreasing length (ties by index), cut into chunks of `batch_size`."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def fit_sources(ids: list[list[int]], limit: int | None) -> list[list[int]]:
    """Sources (ending in EOS) cut to the model's `limit` positions, keeping EOS; a note counts the cut ones.

    Our choice: zeng2021 removes over-long sentences from its data; a test sentence still too long for the
    attention matrices is truncated rather than dropped, so every source line keeps a hypothesis line.
    """
    if limit is None:
        return ids
    cut = [x[: limit - 1] + [x[-1]] if len(x) > limit else x for x in ids]
    n = sum(len(x) > limit for x in ids)
    if n:
        print(f"note: {n} source sentence(s) longer than the model's {limit} positions were truncated",
              file=sys.stderr)
    return cut


def translate_lines(model, src_vocab, tgt_vocab, lines: list[str], *, beam: int = 4, length_penalty: float = 0.6,
                    batch_size: int = 64, max_len_a: float = 1.2, max_len_b: int = 10,
                    progress: bool = True) -> list[str]:
    """Translate `lines` with beam search, batched by source length; outputs in input order, BPE left in place.

    Sources are encoded as in training (tokens + EOS, pipeline.data.batching.encode_source); each batch
    src [B,S] goes to pipeline.search.beam_search on the model's device; ids -> tokens by tgt_vocab.decode.
    """
    from tqdm import tqdm

    from pipeline.search import beam_search

    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    device = next(model.parameters()).device
    ids = fit_sources([encode_source(src_vocab.encode(line)) for line in lines],
                      getattr(model, "max_input_len", None))
    outputs: list[str | None] = [None] * len(lines)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for chunk in tqdm(length_sorted_chunks([len(x) for x in ids], batch_size), disable=not progress,
                              desc="translate", unit="batch", file=sys.stderr):
                src = pad([ids[i] for i in chunk]).to(device)
                hyps = beam_search(model, src, beam=beam, max_len_a=max_len_a, max_len_b=max_len_b,
                                   length_penalty=length_penalty)
                for i, hyp in zip(chunk, hyps):
                    outputs[i] = tgt_vocab.decode(hyp)
    finally:
        model.train(was_training)
    return outputs
