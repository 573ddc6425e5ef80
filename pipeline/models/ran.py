"""zeng2021: input-agnostic self-attention. RAN (Initial Attention Matrices + Recurrent Transition Module, sec.
2.2-2.3, eq. 3-4) and the baselines Syn-R (Random Synthesizer, Tay et al. 2020) and HC-SA (hard-coded Gaussians,
You et al. 2020), each behind one attention module with only value and output projections."""
from __future__ import annotations

import contextlib
from typing import Iterator

import torch
from torch import Tensor, nn

from pipeline.errors import PipelineError
from pipeline.models.layers import Dropout, MultiHeadAttention, append_step
from pipeline.models.ran_options import PatternOptions


class Patterns(nn.Module):
    """One side's (encoder or decoder) source of attention logits, shared by its layers and independent of the
    input. `use(tables)` fixes the tables of one pass, so they are computed once, not once per layer."""

    def __init__(self):
        super().__init__()
        self.current: Tensor | None = None

    def tables(self) -> Tensor | None:
        """Logit tables of every layer [L,h,M,M], or None when the logits are computed from positions."""
        return None

    @contextlib.contextmanager
    def use(self, tables: Tensor | None) -> Iterator[None]:
        """Layers read `tables` (from tables()) during the block."""
        self.current = tables
        try:
            yield
        finally:
            self.current = None

    def logits(self, index: int, q_pos: Tensor, k_pos: Tensor) -> Tensor:
        """Logits [h,T,S] of layer `index` for query positions q_pos [T] and key positions k_pos [S]."""
        raise NotImplementedError


class TablePatterns(Patterns):
    """Patterns read from learnt [h,M,M] tables: row i = query i, column j = key j (use A[:T, :S])."""

    def __init__(self, max_len: int):
        super().__init__()
        self.max_len = max_len

    def check_length(self, length: int) -> None:
        """PipelineError naming ran_max_len if `length` positions do not fit the [M,M] matrices."""
        if length > self.max_len:
            raise PipelineError(f"a sequence of {length} positions exceeds model option 'ran_max_len'="
                                f"{self.max_len} (the attention matrices are {self.max_len}x{self.max_len}; "
                                f"filter longer sentences)")

    def logits(self, index: int, q_pos: Tensor, k_pos: Tensor) -> Tensor:
        """Rows q_pos, columns k_pos of A_index: [h,T,S]; positions beyond M -> PipelineError."""
        self.check_length(int(max(q_pos.max(), k_pos.max())) + 1)
        tables = self.current if self.current is not None else self.tables()
        return tables[index][:, q_pos][:, :, k_pos]


class RecurrentPatterns(TablePatterns):
    """RAN: Initial Attention Matrices A_0 [h,M,M] and the Recurrent Transition Module (eq. 3-4), W and b
    shared across heads and layers, applied to each row (a vector over the M keys)."""

    def __init__(self, heads: int, max_len: int, layers: int, transition: str = "ln_res", fixed: bool = False):
        super().__init__(max_len)
        self.layers = layers
        self.initial = nn.Parameter(torch.empty(heads, max_len, max_len), requires_grad=not fixed)
        self.transition = nn.Linear(max_len, max_len)
        self.norm = nn.LayerNorm(max_len) if transition == "ln_res" else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """A_0 and W Xavier-uniform per [M,M] matrix, b zero (our choice: 'initialized together with other
        parameters', sec. 2.2); LN weight 1, bias 0."""
        with torch.no_grad():
            for head in self.initial:
                nn.init.xavier_uniform_(head)
            nn.init.xavier_uniform_(self.transition.weight)
            nn.init.zeros_(self.transition.bias)
            if self.norm is not None:
                self.norm.reset_parameters()

    def step(self, a: Tensor) -> Tensor:
        """A_{l-1} [h,M,M] -> A_l: eq. 3-4 A_{l-1} + LN(tanh(W A_{l-1} + b)), or tanh(W A_{l-1} + b) ("plain")."""
        hidden = torch.tanh(self.transition(a))  # eq. 3, W acts along the key axis of each row
        if self.norm is None:
            return hidden
        return a + self.norm(hidden)  # eq. 3 (LN) and eq. 4 (residual)

    def tables(self) -> Tensor:
        """A_1 .. A_L: [L,h,M,M] (layer 1 already uses A_1 = A_0 + ...)."""
        a, out = self.initial, []
        for _ in range(self.layers):
            a = self.step(a)
            out.append(a)
        return torch.stack(out)


class SynthesizerPatterns(TablePatterns):
    """Syn-R: independent learnable [h,M,M] logits per layer, no transition."""

    def __init__(self, heads: int, max_len: int, layers: int):
        super().__init__(max_len)
        self.logit_tables = nn.Parameter(torch.empty(layers, heads, max_len, max_len))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Xavier-uniform per [M,M] matrix (our choice, as RAN's A_0)."""
        with torch.no_grad():
            for layer in self.logit_tables:
                for head in layer:
                    nn.init.xavier_uniform_(head)

    def tables(self) -> Tensor:
        """[L,h,M,M]."""
        return self.logit_tables


class GaussianPatterns(Patterns):
    """HC-SA: fixed Gaussian logits -(j - c_i)^2 / (2 std^2), head k centred at i + offsets[k % len(offsets)]
    (heads interleaved: our choice). Encoder offsets (-1, +1), decoder (-1, 0); std 1.0 (zeng2021 3.1)."""

    def __init__(self, heads: int, offsets: tuple[int, ...], std: float = 1.0):
        super().__init__()
        self.register_buffer("offsets", torch.tensor([offsets[k % len(offsets)] for k in range(heads)],
                                                     dtype=torch.float), persistent=False)
        self.std = std

    def reset_parameters(self) -> None:
        """Nothing to initialise (no parameters)."""

    def logits(self, index: int, q_pos: Tensor, k_pos: Tensor) -> Tensor:
        """[h,T,S], the same in every layer."""
        centre = q_pos.to(self.offsets.dtype)[None, :, None] + self.offsets.to(q_pos.device)[:, None, None]
        distance = k_pos.to(centre.dtype)[None, None, :] - centre
        return -distance.square() / (2.0 * self.std ** 2)


def make_patterns(kind: str, heads: int, layers: int, causal: bool, o: PatternOptions) -> Patterns:
    """The patterns of one side for self-attention kind "ran" | "synr" | "hcsa"."""
    if kind == "ran":
        return RecurrentPatterns(heads, o.ran_max_len, layers, o.ran_transition, o.ran_fixed)
    if kind == "synr":
        return SynthesizerPatterns(heads, o.ran_max_len, layers)
    if kind == "hcsa":
        return GaussianPatterns(heads, (-1, 0) if causal else (-1, 1))
    raise PipelineError(f"model option 'self_attn': expected 'dot' | 'ran' | 'hcsa' | 'synr', got {kind!r}")


class PatternAttention(nn.Module):
    """Self-attention whose weights are softmax(pattern logits) with padding and future keys at -inf, times the
    projected values; no query/key projections. Same call interface as MultiHeadAttention's self-attention."""

    def __init__(self, d_model: int, heads: int, dropout: float, patterns: Patterns, index: int):
        super().__init__()
        self.heads, self.d_head, self.index = heads, d_model // heads, index
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.dropout = Dropout(dropout)
        self._patterns = (patterns,)  # shared with the other layers; registered on the model, not here

    @property
    def patterns(self) -> Patterns:
        """The side's shared patterns."""
        return self._patterns[0]

    def _values(self, keys: Tensor, causal: bool, cache: dict[str, Tensor] | None, name: str) -> Tensor:
        """Projected values [B,h,S,d/h]; incremental causal steps append to cache[name.v]."""
        v = self.v_proj(keys).view(keys.size(0), keys.size(1), self.heads, self.d_head).transpose(1, 2)
        return append_step(cache, f"{name}.v", v) if cache is not None and causal else v

    def weights(self, batch: int, t: int, s: int, pad: Tensor | None, causal: bool, device) -> Tensor:
        """Softmax weights [B,h,T,S] of the last t of s positions (queries) over the s keys, before dropout."""
        k_pos = torch.arange(s, device=device)
        scores = self.patterns.logits(self.index, k_pos[s - t:], k_pos).float()  # [h,T,S]
        scores = scores.unsqueeze(0).expand(batch, -1, -1, -1)
        neg = torch.finfo(scores.dtype).min
        if pad is not None:
            scores = scores.masked_fill(pad[:, None, None, :], neg)
        if causal:  # lower triangular (zeng2021 2.2); an incremental step (t = 1) masks nothing
            future = torch.ones(t, s, dtype=torch.bool, device=device).triu(1 + s - t)
            scores = scores.masked_fill(future, neg)
        return torch.softmax(scores, dim=-1)

    def forward(self, query: Tensor, keys: Tensor, pad: Tensor | None = None, *, causal: bool = False,
                cache: dict[str, Tensor] | None = None, name: str = "attn", position_offset: int = 0) -> Tensor:
        """Self-attention: query [B,T,d] = the last T of keys [B,S,d] (incremental: T = 1, earlier values in
        cache); pad [B,S] True at padding -> [B,T,d]. position_offset is unused (absolute patterns)."""
        v = self._values(keys, causal, cache, name)
        t, s = query.size(1), v.size(2)
        weights = self.weights(query.size(0), t, s, pad, causal, query.device)
        out = self.dropout(weights.to(v.dtype)) @ v  # eq. 2: weighted sum of the values
        return self.out_proj(out.transpose(1, 2).reshape(query.size(0), t, -1))

    def attention_weights(self, query: Tensor, keys: Tensor, pad: Tensor | None = None, *,
                          causal: bool = False, position_offset: int = 0) -> Tensor:
        """Softmax weights [B,h,T,S] of a cache-free pass, before dropout (for inspection)."""
        return self.weights(query.size(0), query.size(1), keys.size(1), pad, causal, query.device)


def install_patterns(kind: str, layers: nn.ModuleList, d_model: int, heads: int, causal: bool,
                     o: PatternOptions) -> Patterns | None:
    """For kind != "dot": one side's patterns, and every layer's self_attn replaced by a PatternAttention whose
    weights get ran_attention_dropout (zeng2021 3.1); None for "dot"."""
    if kind == "dot":
        return None
    patterns = make_patterns(kind, heads, len(layers), causal, o)
    for i, layer in enumerate(layers):
        layer.self_attn = PatternAttention(d_model, heads, o.ran_attention_dropout, patterns, i)
    return patterns


def using(patterns: Patterns | None, tables: Tensor | None = None):
    """Context in which a side's layers share one computation of its pattern tables (or the given ones)."""
    if patterns is None:
        return contextlib.nullcontext()
    return patterns.use(patterns.tables() if tables is None else tables)


def set_attention_dropout(module: nn.Module, p: float) -> None:
    """Dropout p on the weights of every attention module inside `module` (dot-product and pattern alike)."""
    for m in module.modules():
        if isinstance(m, (MultiHeadAttention, PatternAttention)):
            m.dropout.p = p
