"""The Seq2Seq interface every model implements, and the building blocks the attention models share."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pipeline.errors import PipelineError


def index_batch(tensors: dict[str, Tensor] | None, order: Tensor) -> dict[str, Tensor] | None:
    """Select (and repeat or reorder) batch entries `order` [N] along dim 0 of every tensor in a flat dict."""
    if tensors is None:
        return None
    return {key: value.index_select(0, order) for key, value in tensors.items()}


class Seq2Seq(nn.Module):
    """One interface for every translation model: a full forward pass for training, incremental steps for search.

    `memory` and `state` are flat dicts of batch-first tensors, so the default reorder methods (index_select on
    dim 0) serve every model that keeps to that layout.
    """

    max_output_len: int | None = None  # longest output (tokens, EOS excluded) decode_step supports; None: no limit

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """src [B,S], tgt_in [B,T] (BOS first) -> logits [B,T,V]."""
        raise NotImplementedError

    def encode(self, src: Tensor) -> dict[str, Tensor]:
        """src [B,S] -> memory: dict of batch-first tensors."""
        raise NotImplementedError

    def decode_step(self, prev_tokens: Tensor, memory: dict[str, Tensor],
                    state: dict[str, Tensor] | None) -> tuple[Tensor, dict[str, Tensor]]:
        """prev_tokens [B,t] (BOS first) -> logits [B,V] for position t, and the new state."""
        raise NotImplementedError

    def reorder_state(self, state: dict[str, Tensor] | None, order: Tensor) -> dict[str, Tensor] | None:
        """Select state entries `order` [N] (beam search: follow the surviving hypotheses)."""
        return index_batch(state, order)

    def reorder_memory(self, memory: dict[str, Tensor], order: Tensor) -> dict[str, Tensor]:
        """Select memory entries `order` [N] (beam search: expand each sentence to its beams, drop finished ones)."""
        return index_batch(memory, order)


def masked_mean(x: Tensor, pad: Tensor) -> Tensor:
    """Mean over the non-padding positions: x [B,L,d], pad [B,L] (True at padding) -> [B,d]."""
    keep = (~pad).unsqueeze(-1).to(x.dtype)
    return (x * keep).sum(1) / keep.sum(1).clamp(min=1.0)


class MultiHeadAttention(nn.Module):
    """Multi-head scaled dot-product attention (eq. 3) with padding keys masked."""

    def __init__(self, d_model: int, heads: int, dropout: float = 0.0):
        super().__init__()
        if d_model % heads:
            raise PipelineError(f"model option 'heads': d_model={d_model} must be divisible by heads={heads}")
        self.heads, self.d_head = heads, d_model // heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def _split(self, x: Tensor) -> Tensor:
        """[B,L,d] -> [B,h,L,d/h]."""
        return x.view(x.size(0), x.size(1), self.heads, self.d_head).transpose(1, 2)

    def _keys_values(self, keys: Tensor, causal: bool, cache: dict[str, Tensor] | None,
                     name: str) -> tuple[Tensor, Tensor]:
        """Projected keys and values [B,h,S,d/h], taken from or added to the cache."""
        if cache is None:
            return self._split(self.k_proj(keys)), self._split(self.v_proj(keys))
        if causal:  # incremental self-attention: `keys` is this step's input, appended to the cached ones
            k, v = self._split(self.k_proj(keys)), self._split(self.v_proj(keys))
            if f"{name}.k" in cache:
                k = torch.cat([cache[f"{name}.k"], k], dim=2)
                v = torch.cat([cache[f"{name}.v"], v], dim=2)
        elif f"{name}.k" in cache:  # static keys (encoder states): projected once
            return cache[f"{name}.k"], cache[f"{name}.v"]
        else:
            k, v = self._split(self.k_proj(keys)), self._split(self.v_proj(keys))
        cache[f"{name}.k"], cache[f"{name}.v"] = k, v
        return k, v

    def forward(self, query: Tensor, keys: Tensor, pad: Tensor | None = None, *, causal: bool = False,
                cache: dict[str, Tensor] | None = None, name: str = "attn") -> Tensor:
        """query [B,T,d] attends keys [B,S,d] (also the values); pad [B,S] True at padding -> [B,T,d].

        causal: position i sees keys <= i (self-attention). With `cache` (incremental decoding, T = 1): causal
        self-attention appends this step's keys/values to cache[name.k/.v]; otherwise the projections of `keys`
        are computed once and reused from the cache.
        """
        k, v = self._keys_values(keys, causal, cache, name)
        q = self._split(self.q_proj(query)) / math.sqrt(self.d_head)
        scores = (q @ k.transpose(-1, -2)).float()  # [B,h,T,S]
        neg = torch.finfo(scores.dtype).min
        if pad is not None:
            scores = scores.masked_fill(pad[:, None, None, :], neg)
        if causal and cache is None:
            t, s = scores.shape[-2:]
            future = torch.ones(t, s, dtype=torch.bool, device=scores.device).triu(1 + s - t)
            scores = scores.masked_fill(future, neg)
        weights = self.dropout(torch.softmax(scores, dim=-1).to(v.dtype))
        out = (weights @ v).transpose(1, 2).reshape(query.size(0), query.size(1), -1)
        return self.out_proj(out)


class FeedForward(nn.Module):
    """Position-wise FFN with ReLU in between: [B,L,d] -> [B,L,d]."""

    def __init__(self, d_model: int, ffn_dim: int):
        super().__init__()
        self.fc1 = nn.Linear(d_model, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, d_model)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(F.relu(self.fc1(x)))


class SinusoidalPositions(nn.Module):
    """Fixed sinusoidal position encodings, [sin | cos] halves (tensor2tensor/THUMT layout; our choice)."""

    def __init__(self, d_model: int, max_positions: int):
        super().__init__()
        half = d_model // 2
        inv_freq = torch.exp(torch.arange(half, dtype=torch.float) * (-2.0 * math.log(10000.0) / d_model))
        angles = torch.arange(max_positions, dtype=torch.float)[:, None] * inv_freq[None, :]
        self.register_buffer("table", torch.cat([angles.sin(), angles.cos()], dim=1), persistent=False)

    def forward(self, length: int, offset: int = 0) -> Tensor:
        """Encodings of positions offset .. offset+length-1: [length, d]."""
        if offset + length > self.table.size(0):
            raise PipelineError(f"a sequence of {offset + length} positions exceeds model option "
                                f"'max_positions'={self.table.size(0)}")
        return self.table[offset:offset + length]
