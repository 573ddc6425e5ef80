"""Greedy decoding over the Seq2Seq incremental interface (the trainer's validation BLEU) and the inference mode every
decoder runs in; beam search is pipeline.beam_search, which no trainer imports (a beam-search edit trains nothing
afresh: pipeline/steps/training.py's weights_files)."""
from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Iterator

import torch
from torch import Tensor

from pipeline.beam import log_probs, max_lengths
from pipeline.data.vocab import BOS, EOS, PAD

if TYPE_CHECKING:
    from pipeline.models import Seq2Seq


@contextlib.contextmanager
def inference(model: Seq2Seq) -> Iterator[None]:
    """Eval mode and no autograd for the block; the model's previous mode is restored afterwards."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was_training)


def _strip(tokens: list[int]) -> list[int]:
    """Tokens before the first EOS."""
    return tokens[:tokens.index(EOS)] if EOS in tokens else tokens


def greedy(model: Seq2Seq, src: Tensor, *, max_len_a: float = 1.2, max_len_b: int = 10) -> list[list[int]]:
    """Most probable next token at every step: src [B,S] -> B token lists without BOS/EOS."""
    if src.size(0) == 0:
        return []
    with inference(model):
        max_len = max_lengths(model, src, max_len_a, max_len_b)
        memory = model.encode(src)
        tokens = torch.full((src.size(0), 1), BOS, dtype=torch.long, device=src.device)
        done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
        state = None
        for step in range(1, int(max_len.max()) + 2):
            logits, state = model.decode_step(tokens, memory, state)
            nxt = log_probs(logits, step > max_len).argmax(-1).masked_fill(done, PAD)
            tokens = torch.cat([tokens, nxt.unsqueeze(1)], dim=1)
            done |= nxt.eq(EOS)
            if bool(done.all()):
                break
        return [_strip(row) for row in tokens[:, 1:].tolist()]
