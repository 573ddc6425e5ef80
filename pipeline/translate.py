"""Batched beam-search translation of tokenised (BPE-segmented) lines: 1-best outputs or n-best lists."""
from __future__ import annotations

import sys

from pipeline.data.batching import encode_source, pad
from pipeline.errors import PipelineError


def length_sorted_chunks(lengths: list[int], batch_size: int) -> list[list[int]]:
    """Indices sorted by decreasing length (ties by index), cut into chunks of `batch_size`."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def fit_sources(ids: list[list[int]], limit: int | None) -> list[list[int]]:
    """Sources (ending in EOS) cut to the model's `limit` positions, keeping EOS; a note counts the cut ones.

    Our choice: a paper may remove over-long sentences from its data (RAN's fixed-size matrices); a test sentence
    still too long for the model is truncated rather than dropped, so every source line keeps a hypothesis line.
    """
    if limit is None:
        return ids
    cut = [x[: limit - 1] + [x[-1]] if len(x) > limit else x for x in ids]
    n = sum(len(x) > limit for x in ids)
    if n:
        print(f"note: {n} source sentence(s) longer than the model's {limit} positions were truncated",
              file=sys.stderr)
    return cut


def translate_nbest(model, src_vocab, tgt_vocab, lines: list[str], *, nbest: int = 1, beam: int = 4,
                    length: str = "penalty", alpha: float = 0.6, batch_size: int = 64, max_len_a: float = 1.2,
                    max_len_b: int = 10, progress: bool = True, precision: str = "float32"
                    ) -> list[list[tuple[float, str]]]:
    """Up to `nbest` (score, text) per line, best first, by batched beam search; input order, BPE left in place.

    Sources are encoded as in training (tokens + EOS, pipeline.data.batching.encode_source), batched by length;
    each batch src [B,S] goes to pipeline.beam_search.beam_search_nbest on the model's device (length, alpha: its
    length treatment), at `precision` (pipeline.precision; the model's training precision); ids -> text by
    tgt_vocab.decode. Write the lists with pipeline.fileio.write_nbest.
    """
    from tqdm import tqdm

    from pipeline.beam_search import beam_search_nbest
    from pipeline.precision import autocast
    from pipeline.search import inference

    if batch_size < 1:
        raise PipelineError(f"batch_size must be >= 1, got {batch_size}")
    device = next(model.parameters()).device
    ids = fit_sources([encode_source(src_vocab.encode(line)) for line in lines],
                      getattr(model, "max_input_len", None))
    outputs: list[list[tuple[float, str]] | None] = [None] * len(lines)
    with inference(model), autocast(precision, device):
        for chunk in tqdm(length_sorted_chunks([len(x) for x in ids], batch_size), disable=not progress,
                          desc="translate", unit="batch", file=sys.stderr):
            src = pad([ids[i] for i in chunk]).to(device)
            found = beam_search_nbest(model, src, nbest=nbest, beam=beam, max_len_a=max_len_a,
                                      max_len_b=max_len_b, length=length, alpha=alpha)
            for i, hyps in zip(chunk, found):
                outputs[i] = [(score, tgt_vocab.decode(tokens)) for score, tokens in hyps]
    return outputs


def translate_lines(model, src_vocab, tgt_vocab, lines: list[str], *, beam: int = 4, length: str = "penalty",
                    alpha: float = 0.6, batch_size: int = 64, max_len_a: float = 1.2, max_len_b: int = 10,
                    progress: bool = True, precision: str = "float32") -> list[str]:
    """The best translation of each line (the 1-best of translate_nbest), in input order, BPE left in place."""
    return [hyps[0][1] for hyps in translate_nbest(model, src_vocab, tgt_vocab, lines, nbest=1, beam=beam,
                                                   length=length, alpha=alpha, batch_size=batch_size,
                                                   max_len_a=max_len_a, max_len_b=max_len_b, progress=progress,
                                                   precision=precision)]
