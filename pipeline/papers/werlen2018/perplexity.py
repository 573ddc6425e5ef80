"""Perplexity of a model on teacher-forced sentences (werlen2018 7.3, Table 6: the language models' metric); any
Seq2Seq model (an encoder-decoder or an ensemble, a language model with the "none" encoder) is scored the same way."""
from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import nn

from pipeline.evaluate.forced import forced_batches
from pipeline.data.vocab import PAD
from pipeline.errors import PipelineError
from pipeline.search import inference


def _check(src_ids: Sequence, tgt_ids: Sequence, batch_size: int) -> None:
    """PipelineError naming the argument for empty or mismatched id lists and a non-positive batch size."""
    for name, value in (("src_ids", src_ids), ("tgt_ids", tgt_ids)):
        if len(value) == 0:
            raise PipelineError(f"perplexity: argument '{name}' is empty; expected at least one sentence")
    if len(src_ids) != len(tgt_ids):
        raise PipelineError(f"perplexity: 'src_ids' has {len(src_ids)} sentences but 'tgt_ids' has {len(tgt_ids)}; "
                            "expected one target per source (a language model's sources may be empty lists)")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise PipelineError(f"perplexity: argument 'batch_size' must be a positive integer, got {batch_size!r}")


def perplexity(model: nn.Module, src_ids: list[list[int]], tgt_ids: list[list[int]], batch_size: int = 50) -> dict:
    """exp of the mean per-token negative log-likelihood (natural log) of the targets given their sources, teacher-
    forced in eval mode without autograd; every target token and the EOS after it count, BOS and padding do not:
    {"perplexity": exp(nll), "nll": mean per-token NLL, "tokens": sum(len(y) + 1), "sentences": N}.

    Our choice: sentence by sentence (each from a fresh state), not a running text as Daniluk et al. (2016)."""
    _check(src_ids, tgt_ids, batch_size)
    param = next(model.parameters(), None)
    device = param.device if param is not None else torch.device("cpu")
    total, tokens = 0.0, 0
    with inference(model):
        for _, src, tgt_in, tgt_out in forced_batches(src_ids, tgt_ids, batch_size):
            tgt_out = tgt_out.to(device)
            log_probs = torch.log_softmax(model(src.to(device), tgt_in.to(device)).float(), dim=-1)  # [B,T,V]
            nll = -log_probs.gather(-1, tgt_out.unsqueeze(-1)).squeeze(-1)  # [B,T]
            real = tgt_out.ne(PAD)
            total += nll[real].double().sum().item()
            tokens += int(real.sum())
    mean = total / tokens
    return {"perplexity": math.exp(mean), "nll": mean, "tokens": tokens, "sentences": len(tgt_ids)}
