"""Building blocks the attention models share: multi-head attention (with Shaw et al.'s relative positions and
DiSAN's directional masks), the position-wise FFN, sinusoidal positions, masked means."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pipeline import speedups
from pipeline.errors import PipelineError


class Dropout(nn.Dropout):
    """Inverted dropout whose masks come from 16-bit slices of 64-bit random words: one generator call per four
    elements, ~6x cheaper than nn.Dropout's bernoulli_ on CPU. p is rounded to a multiple of 2^-16 (our choice:
    0.1 becomes 0.100006) and the kept values are scaled by 1 / (1 - that p), so expectations stay exact."""

    def forward(self, x: Tensor) -> Tensor:
        """x [...] -> x with elements zeroed at rate p and the rest scaled (identity in eval mode or at p = 0)."""
        if not self.training or self.p == 0:
            return x
        if speedups.enabled("native_dropout", x):  # one fused kernel; p exact (GPUs only)
            return F.dropout(x, self.p, True)
        cut = round(self.p * 65536)
        if cut >= 65536:
            return x * 0
        words = torch.empty((x.numel() + 3) // 4, dtype=torch.int64, device=x.device).random_(-2 ** 63, 2 ** 63 - 1)
        keep = words.view(torch.int16)[:x.numel()].view(x.shape) >= cut - 32768  # P(keep) = 1 - cut / 2^16
        return x * keep * (65536 / (65536 - cut))


def masked_mean(x: Tensor, pad: Tensor) -> Tensor:
    """Mean over the non-padding positions: x [B,L,d], pad [B,L] (True at padding) -> [B,d]."""
    keep = (~pad).unsqueeze(-1).to(x.dtype)
    return (x * keep).sum(1) / keep.sum(1).clamp(min=1.0)


class LayerNorm(nn.LayerNorm):
    """nn.LayerNorm that, with the bf16_residual speed-up under bfloat16 autocast on a GPU, returns bfloat16 (the
    statistics are still float32 inside the kernel): the residual stream then needs no cast before each product."""

    def forward(self, x: Tensor) -> Tensor:
        if (speedups.enabled("bf16_residual", x) and torch.is_autocast_enabled(x.device.type)
                and torch.get_autocast_dtype(x.device.type) == torch.bfloat16):
            with torch.autocast(x.device.type, enabled=False):
                return F.layer_norm(x.to(torch.bfloat16), self.normalized_shape, self.weight.to(torch.bfloat16),
                                    self.bias.to(torch.bfloat16), self.eps)
        return super().forward(x)


class RelativePositions(nn.Module):
    """Shaw et al. (2018) edge representations a^K_ij = w^K_clip(j-i,k), a^V_ij = w^V_clip(j-i,k) (sec. 3.2),
    one table per layer and per head (hao2019 5.3): each table is [R, d], its columns split into the heads.

    A causal layer never attends j > i, so it keeps only the rows of distances -k..0 (R = k+1; our choice, no
    unused parameters); otherwise R = 2k+1.
    """

    def __init__(self, k: int, d_model: int, heads: int, causal: bool):
        super().__init__()
        self.k, self.heads, self.causal = k, heads, causal
        rows = k + 1 if causal else 2 * k + 1
        self.key_table = nn.Parameter(torch.empty(rows, d_model))
        self.value_table = nn.Parameter(torch.empty(rows, d_model))
        nn.init.xavier_uniform_(self.key_table)  # random like Shaw's embeddings (our choice; not zero)
        nn.init.xavier_uniform_(self.value_table)

    def rows(self, q_pos: Tensor, k_pos: Tensor) -> Tensor:
        """Query positions q_pos [T], key positions k_pos [S] -> table rows clip(j - i, k) + k: [T,S] long."""
        distance = k_pos[None, :] - q_pos[:, None]
        return distance.clamp(-self.k, 0 if self.causal else self.k) + self.k

    def _heads(self, table: Tensor) -> Tensor:
        """[R,d] -> [h,R,d/h]."""
        return table.view(table.size(0), self.heads, -1).transpose(0, 1)

    def edges(self, q_pos: Tensor, k_pos: Tensor) -> tuple[Tensor, Tensor]:
        """a^K and a^V of every (query, key) pair: two [T,S,h,d/h] (for inspection; attention uses the terms)."""
        rows = self.rows(q_pos, k_pos)
        shape = (*rows.shape, self.heads, -1)
        return self.key_table[rows].view(shape), self.value_table[rows].view(shape)

    def key_term(self, q: Tensor, rows: Tensor) -> Tensor:
        """q_i . a^K_ij of eq. 4: q [B,h,T,d/h] (already scaled), rows [T,S] -> [B,h,T,S]."""
        per_row = q @ self._heads(self.key_table).transpose(-1, -2)  # [B,h,T,R]
        return per_row.gather(-1, rows.expand(q.size(0), q.size(1), -1, -1))

    def value_term(self, weights: Tensor, rows: Tensor) -> Tensor:
        """sum_j alpha_ij a^V_ij of eq. 3: weights [B,h,T,S], rows [T,S] -> [B,h,T,d/h]."""
        one_hot = F.one_hot(rows, self.value_table.size(0)).to(weights.dtype)  # [T,S,R]; deterministic sum
        per_row = torch.einsum("bhts,tsr->bhtr", weights, one_hot)
        return per_row @ self._heads(self.value_table)


def directional_mask(heads: int, q_pos: Tensor, k_pos: Tensor) -> Tensor:
    """DiSAN masks (Shen et al. 2018), True where masked: [h,T,S]. Even heads forward (key j <= query i), odd
    heads backward (j >= i); the interleaving is our choice."""
    later = k_pos[None, :] > q_pos[:, None]  # [T,S]
    earlier = k_pos[None, :] < q_pos[:, None]
    forward = torch.arange(heads, device=q_pos.device).remainder(2).eq(0)[:, None, None]
    return torch.where(forward, later, earlier)


PENDING_ORDER = "shared:pending_order"  # pipeline.models.seq2seq.SHARED's prefix: no index_batch selects it


def append_step(cache: dict[str, Tensor], key: str, new: Tensor) -> Tensor:
    """cache[key] [B,h,t,d/h] followed by this step's new [B,h,1,d/h] along dim 2, stored back and returned. Where the
    decoder's reorder_state left cache[PENDING_ORDER] [B] (beam search), the cached rows are selected by it in the
    same copy: one copy of the cache per step instead of a reorder and then a concatenation."""
    old = cache.get(key)
    if old is None:
        out = new
    elif PENDING_ORDER not in cache:
        out = torch.cat([old, new], dim=2)
    else:
        t = old.size(2)
        out = new.new_empty(new.size(0), new.size(1), t + 1, new.size(3))
        torch.index_select(old, 0, cache[PENDING_ORDER], out=out[:, :, :t])
        out[:, :, t:] = new
    cache[key] = out
    return out


class MultiHeadAttention(nn.Module):
    """Multi-head scaled dot-product attention (eq. 3) with padding keys masked.

    Options for self-attention: `rel_pos_k` > 0 adds Shaw et al. relative positions (`rel_pos_causal`: the layer
    is only used causally); `directional` applies the DiSAN forward/backward head masks. Both take the queries
    as the last T of the S key positions (self-attention, full or incremental).
    """

    def __init__(self, d_model: int, heads: int, dropout: float = 0.0, *, rel_pos_k: int = 0,
                 rel_pos_causal: bool = False, directional: bool = False):
        super().__init__()
        if d_model % heads:
            raise PipelineError(f"model option 'heads': d_model={d_model} must be divisible by heads={heads}")
        if directional and heads % 2:
            raise PipelineError(f"model option 'heads': expected an even number with 'disan', got {heads}")
        self.heads, self.d_head = heads, d_model // heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.dropout = Dropout(dropout)
        self.rel_pos = RelativePositions(rel_pos_k, d_model, heads, rel_pos_causal) if rel_pos_k > 0 else None
        self.directional = directional

    def init_projections(self) -> None:
        """Xavier-uniform q/k/v projections with gain 1/sqrt(2): the variance of one Xavier matrix [d, 3d] fused over
        q, k and v, as THUMT and tensor2tensor initialise it and fairseq reproduces (our choice; the papers do not
        say). Called by the model-wide initialisation."""
        for proj in (self.q_proj, self.k_proj, self.v_proj):
            nn.init.xavier_uniform_(proj.weight, gain=2 ** -0.5)

    def _split(self, x: Tensor) -> Tensor:
        """[B,L,d] -> [B,h,L,d/h]."""
        return x.view(x.size(0), x.size(1), self.heads, self.d_head).transpose(1, 2)

    def _project(self, x: Tensor, parts: tuple[nn.Linear, ...]) -> tuple[Tensor, ...]:
        """x [B,L,d] through each of `parts` -> one [B,h,L,d/h] each: with the fused_qkv speed-up (GPUs) one matrix
        product over the concatenated weights, the same function as one product per part."""
        if len(parts) > 1 and speedups.enabled("fused_qkv", x):
            weight = torch.cat([p.weight for p in parts])
            bias = torch.cat([p.bias for p in parts])
            return tuple(self._split(y) for y in F.linear(x, weight, bias).chunk(len(parts), dim=-1))
        return tuple(self._split(p(x)) for p in parts)

    def _keys_values(self, keys: Tensor, causal: bool, cache: dict[str, Tensor] | None,
                     name: str) -> tuple[Tensor, Tensor]:
        """Projected keys and values [B,h,S,d/h], taken from or added to the cache."""
        if cache is None:
            return self._project(keys, (self.k_proj, self.v_proj))
        if causal:  # incremental self-attention: `keys` is this step's input, appended to the cached ones
            k, v = self._project(keys, (self.k_proj, self.v_proj))
            return append_step(cache, f"{name}.k", k), append_step(cache, f"{name}.v", v)
        if f"{name}.k" in cache:  # static keys (encoder states): projected once
            return cache[f"{name}.k"], cache[f"{name}.v"]
        # contiguous, so that every later step's matrix products read them without a copy
        k, v = (t.contiguous() for t in self._project(keys, (self.k_proj, self.v_proj)))
        cache[f"{name}.k"], cache[f"{name}.v"] = k, v
        return k, v

    def _weights(self, q: Tensor, k: Tensor, pad: Tensor | None, mask_future: bool,
                 offset: int) -> tuple[Tensor, Tensor | None]:
        """Softmax weights [B,h,T,S] of scaled queries q [B,h,T,d/h] over keys k [B,h,S,d/h], and the relative
        table rows [T,S] (None without relative positions)."""
        scores = q @ k.transpose(-1, -2)  # [B,h,T,S]
        t, s = scores.shape[-2:]
        rows = None
        if self.rel_pos is not None or self.directional:
            k_pos = torch.arange(s, device=q.device) + offset
            q_pos = k_pos[s - t:]
        if self.rel_pos is not None:
            rows = self.rel_pos.rows(q_pos, k_pos)
            scores = scores + self.rel_pos.key_term(q, rows)  # Shaw eq. 4
        scores = scores.float()
        neg = torch.finfo(scores.dtype).min
        if pad is not None:
            scores = scores.masked_fill(pad[:, None, None, :], neg)
        if mask_future:
            future = torch.ones(t, s, dtype=torch.bool, device=scores.device).triu(1 + s - t)
            scores = scores.masked_fill(future, neg)
        if self.directional:
            scores = scores.masked_fill(directional_mask(self.heads, q_pos, k_pos), neg)
        return torch.softmax(scores, dim=-1), rows

    def _fused(self, q: Tensor, k: Tensor, v: Tensor, pad: Tensor | None, mask_future: bool) -> Tensor:
        """Eq. 3 in one fused kernel (F.scaled_dot_product_attention): q [B,h,T,d/h] unscaled -> [B,h,T,d/h].

        GPUs only: on CPU (torch 2.13) its flash-attention backward made a whole training step 2x slower than the
        plain matrix products here (benchmarks/nmt_speed.py, bfloat16). Never cuDNN's kernel (pipeline/device.py
        use_gpu)."""
        keep = None if pad is None else ~pad[:, None, None, :]  # True where a key takes part
        if keep is not None and mask_future:
            t, s = q.size(2), k.size(2)
            keep = keep & torch.ones(t, s, dtype=torch.bool, device=q.device).tril(s - t)
            mask_future = False
        p = self.dropout.p if self.training else 0.0
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep, dropout_p=p, is_causal=mask_future)

    def forward(self, query: Tensor, keys: Tensor, pad: Tensor | None = None, *, causal: bool = False,
                cache: dict[str, Tensor] | None = None, name: str = "attn", position_offset: int = 0) -> Tensor:
        """query [B,T,d] attends keys [B,S,d] (also the values); pad [B,S] True at padding -> [B,T,d].

        causal: position i sees keys <= i (self-attention). With `cache` (incremental decoding, T = 1): causal
        self-attention appends this step's keys/values to cache[name.k/.v]; otherwise the projections of `keys`
        are computed once and reused from the cache. position_offset: absolute position of the first key (only
        relative positions could notice it, and they must not).
        """
        if query is keys and (cache is None or causal) and speedups.enabled("fused_qkv", query):
            q, k, v = self._project(query, (self.q_proj, self.k_proj, self.v_proj))  # self-attention: one product
            if cache is not None:  # incremental: this step's keys/values follow the cached ones
                k, v = append_step(cache, f"{name}.k", k), append_step(cache, f"{name}.v", v)
            return self._attend(query, q, k, v, pad, causal, cache, position_offset)
        k, v = self._keys_values(keys, causal, cache, name)
        return self._attend(query, self._split(self.q_proj(query)), k, v, pad, causal, cache, position_offset)

    def _attend(self, query: Tensor, q: Tensor, k: Tensor, v: Tensor, pad: Tensor | None, causal: bool,
                cache: dict | None, position_offset: int) -> Tensor:
        """Eq. 3 of projected, unscaled q [B,h,T,d/h] over k, v [B,h,S,d/h] -> [B,T,d] (out_proj applied)."""
        if query.is_cuda and self.rel_pos is None and not self.directional:
            out = self._fused(q, k, v, pad, causal and cache is None)
            return self.out_proj(out.transpose(1, 2).reshape(query.size(0), query.size(1), -1))
        q = q / math.sqrt(self.d_head)
        weights, rows = self._weights(q, k, pad, causal and cache is None, position_offset)
        weights = self.dropout(weights.to(v.dtype))
        out = weights @ v
        if rows is not None:
            out = out + self.rel_pos.value_term(weights, rows)  # Shaw eq. 3
        return self.out_proj(out.transpose(1, 2).reshape(query.size(0), query.size(1), -1))

    def attention_weights(self, query: Tensor, keys: Tensor, pad: Tensor | None = None, *,
                          causal: bool = False, position_offset: int = 0) -> Tensor:
        """Softmax weights [B,h,T,S] of a cache-free pass, before dropout (for inspection)."""
        q = self._split(self.q_proj(query)) / math.sqrt(self.d_head)
        return self._weights(q, self._split(self.k_proj(keys)), pad, causal, position_offset)[0]


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
        # in float64, rounded once to float32: the same table on every processor, where float32 sin and cos
        # (MKL's) differ in the last bit between processors (benchmarks/cross_isa.py; our choice)
        inv_freq = torch.exp(torch.arange(half, dtype=torch.float64) * (-2.0 * math.log(10000.0) / d_model))
        angles = torch.arange(max_positions, dtype=torch.float64)[:, None] * inv_freq[None, :]
        table = torch.cat([angles.sin(), angles.cos()], dim=1).float()
        self.register_buffer("table", table, persistent=False)

    def forward(self, length: int, offset: int = 0) -> Tensor:
        """Encodings of positions offset .. offset+length-1: [length, d]."""
        if offset + length > self.table.size(0):
            raise PipelineError(f"a sequence of {offset + length} positions exceeds model option "
                                f"'max_positions'={self.table.size(0)}")
        return self.table[offset:offset + length]
