"""Decoding speed of batched beam search (target tokens per second by batch size and beam; Zeng et al. 2021, Figure 3)."""
from __future__ import annotations

import statistics
import time

import torch

from pipeline.data.batching import encode_source, pad
from pipeline.errors import PipelineError
from pipeline.precision import autocast
from pipeline.search import beam_search
from pipeline.translate import fit_sources, length_sorted_chunks


def _positive_ints(name: str, values) -> list[int]:
    """`values` as a non-empty list of positive ints; otherwise PipelineError naming `name`."""
    values = list(values)
    if not values or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in values):
        raise PipelineError(f"decoding_speed: {name} = {values!r}; expected a non-empty list of positive integers")
    return values


def _sync(device: torch.device) -> None:
    """Wait for queued GPU work so wall time covers it (no-op on CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _decode_all(model, batches: list[torch.Tensor], beam: int, **search) -> tuple[float, int, int]:
    """One pass over prepared batches src [B,S]: (seconds, output tokens without EOS, sentences)."""
    device = batches[0].device
    _sync(device)
    start = time.perf_counter()
    tokens = sentences = 0
    for src in batches:
        hyps = beam_search(model, src, beam=beam, **search)
        tokens += sum(len(h) for h in hyps)
        sentences += len(hyps)
    _sync(device)
    return time.perf_counter() - start, tokens, sentences


def decoding_speed(model, src_ids: list[list[int]], *, batch_sizes, beams, repeats: int = 3,
                   max_len_a: float = 1.2, max_len_b: int = 10, length: str = "penalty", alpha: float = 0.6,
                   precision: str = "float32") -> list[dict]:
    """Target tokens per second of batched beam search for every (batch size, beam), batch sizes outermost.

    src_ids are source ids without EOS (Vocab.encode output); EOS is appended and sentences are batched
    by length as in pipeline.translate. Each setting gets one untimed warm-up pass, then `repeats` timed
    passes; tokens_per_s / sentences_per_s are the median over the passes (our choice: the paper averages
    3 runs; every run is kept in "runs"). Output tokens exclude EOS. Rows: {"batch_size", "beam",
    "tokens_per_s", "sentences_per_s", "runs": [{"seconds", "tokens", "sentences"}], "threads"}. precision: as
    pipeline.translate (the model's training precision).
    """
    batch_sizes, beams = _positive_ints("batch_sizes", batch_sizes), _positive_ints("beams", beams)
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise PipelineError(f"decoding_speed: repeats = {repeats!r}; expected a positive integer")
    if not src_ids:
        raise PipelineError("decoding_speed: src_ids is empty; expected at least one source sentence")
    device = next(model.parameters()).device
    encoded = fit_sources([encode_source(ids) for ids in src_ids], model.max_input_len)
    search = dict(max_len_a=max_len_a, max_len_b=max_len_b, length=length, alpha=alpha)
    rows = []
    with autocast(precision, device):
        for batch_size in batch_sizes:
            batches = [pad([encoded[i] for i in chunk]).to(device)
                       for chunk in length_sorted_chunks([len(x) for x in encoded], batch_size)]
            for beam in beams:
                _decode_all(model, batches, beam, **search)  # warm-up
                runs = [dict(zip(("seconds", "tokens", "sentences"), _decode_all(model, batches, beam, **search)))
                        for _ in range(repeats)]
                rows.append({
                    "batch_size": batch_size, "beam": beam,
                    "tokens_per_s": statistics.median(r["tokens"] / r["seconds"] for r in runs),
                    "sentences_per_s": statistics.median(r["sentences"] / r["seconds"] for r in runs),
                    "runs": runs, "threads": torch.get_num_threads(),
                })
    return rows
