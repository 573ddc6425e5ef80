"""The attention of a decoder over the source words, teacher-forced on references (zhang2018 5.5, Figure 4).

Per sentence a [T,S] matrix: row j the weights with which target token j (EOS excluded) was predicted, over the
source tokens (EOS excluded: our choice, an alignment links words). Rows are read from the decoder's
source_attention() module by a forward hook: one call per target step, in order.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from torch import nn

from pipeline.evaluate.forced import forced_batches
from pipeline.errors import PipelineError
from pipeline.search import inference


def _attention_module(model: nn.Module) -> nn.Module:
    """The decoder's source-attention module; PipelineError for a decoder without one."""
    decoder = getattr(model, "decoder", None)
    module = decoder.source_attention() if hasattr(decoder, "source_attention") else None
    if module is None:
        raise PipelineError(f"source attention: model {type(model).__name__} with decoder "
                            f"{type(decoder).__name__} offers no source attention (expected an RNN decoder with "
                            "additive attention: cgru, rnnsearch)")
    return module


def source_attention(model: nn.Module, src_ids: Sequence[Sequence[int]], tgt_ids: Sequence[Sequence[int]], *,
                     batch_size: int = 50) -> list[np.ndarray]:
    """Per sentence pair the [len(tgt), len(src)] attention weights (float64) of a teacher-forced pass in eval mode."""
    if len(src_ids) != len(tgt_ids) or not src_ids:
        raise PipelineError(f"source attention: {len(src_ids)} sources and {len(tgt_ids)} targets; expected the "
                            "same number, at least one")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise PipelineError(f"source attention: batch_size must be a positive integer, got {batch_size!r}")
    steps: list[torch.Tensor] = []
    handle = _attention_module(model).register_forward_hook(lambda module, args, output: steps.append(output[1]))
    device = next(model.parameters()).device
    out: list[np.ndarray | None] = [None] * len(src_ids)
    try:
        with inference(model):
            for chunk, src, tgt_in, _ in forced_batches(src_ids, tgt_ids, batch_size):
                steps.clear()
                model(src.to(device), tgt_in.to(device))
                weights = torch.stack(steps, 1).double().cpu().numpy()  # [B,T,S]
                for row, k in enumerate(chunk):
                    out[k] = weights[row, :len(tgt_ids[k]), :len(src_ids[k])]
    finally:
        handle.remove()
    return out
