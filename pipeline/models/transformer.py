"""The post-LN Transformer encoder and decoder (Vaswani et al. 2017; hao2019 eq. 1-6).

Either side's self-attention may be zeng2021's input-agnostic patterns instead of dot-product (ran.py), and the
dot-product one may take hao2019 Table 4's relative positions (both sides) or DiSAN masks (encoder).
"""
from __future__ import annotations

import math
from typing import Mapping

from torch import Tensor, nn

from pipeline.models.compiled import compiled
from pipeline.models.layers import (PENDING_ORDER, Dropout, FeedForward, LayerNorm, MultiHeadAttention,
                                    SinusoidalPositions)
from pipeline.models.ran import TablePatterns, install_patterns, set_attention_dropout, using
from pipeline.models.ran_options import TABLE_KINDS
from pipeline.models.seq2seq import SHARED, Decoder, Encoder, index_batch, register_decoder, register_encoder
from pipeline.models.transformer_options import (TransformerDecoderOptions, TransformerEncoderOptions,
                                                 TransformerSideOptions)


class InputLayer(nn.Module):
    """Embeddings scaled by sqrt(d_model) (Vaswani et al. 3.4) plus sinusoidal positions (3.5), dropped out."""

    def __init__(self, d_model: int, max_positions: int, dropout: float):
        super().__init__()
        self.scale = math.sqrt(d_model)
        self.positions = SinusoidalPositions(d_model, max_positions)
        self.drop = Dropout(dropout)

    def forward(self, x: Tensor, offset: int = 0, positions: bool = True) -> Tensor:
        """x [B,L,d] (lookups) at positions offset.. -> [B,L,d]; positions=False leaves them out."""
        x = x * self.scale
        if positions:
            x = x + self.positions(x.size(1), offset)
        return self.drop(x)


class EncoderLayer(nn.Module):
    """Self-attention and FFN sub-layers, each with residual then LayerNorm: [B,S,d] -> [B,S,d].

    The self-attention takes the relative positions (rel_pos_k) and the DiSAN head masks (disan) if enabled.
    """

    def __init__(self, o: TransformerEncoderOptions):
        super().__init__()
        self.self_attn = MultiHeadAttention(o.d_model, o.heads, o.attention_dropout, rel_pos_k=o.rel_pos_k,
                                            directional=o.disan)
        self.self_norm = LayerNorm(o.d_model)
        self.ffn = FeedForward(o.d_model, o.ffn_dim)
        self.ffn_norm = LayerNorm(o.d_model)
        self.drop = Dropout(o.dropout)

    def forward(self, h: Tensor, pad: Tensor) -> Tensor:
        """h [B,S,d], pad [B,S] -> [B,S,d]."""
        c = self.self_norm(h + self.drop(self.self_attn(h, h, pad)))  # eq. 1
        return self.ffn_norm(c + self.drop(self.ffn(c)))  # eq. 2


def static_cache(memory: dict[str, Tensor], cache: dict | None) -> dict | None:
    """Where an incremental step keeps the projected keys/values of memory entries (fixed for the whole search): in
    memory itself, so that beam search reorders them only when sentences leave, not at every step with the state."""
    return None if cache is None else memory


class DecoderLayer(nn.Module):
    """Masked self-attention, encoder attention and FFN sub-layers (eq. 4-6): [B,T,d] -> [B,T,d].

    `memory` holds "enc" [B,S,d] and "enc_pad" [B,S]; with `cache` the layer runs one incremental step (T = 1).
    """

    def __init__(self, o: TransformerDecoderOptions):
        super().__init__()
        self.self_attn = MultiHeadAttention(o.d_model, o.heads, o.attention_dropout, rel_pos_k=o.rel_pos_k,
                                            rel_pos_causal=True)  # relative positions here too (our choice)
        self.self_norm = LayerNorm(o.d_model)
        self.cross_attn = MultiHeadAttention(o.d_model, o.heads, o.attention_dropout)
        self.cross_norm = LayerNorm(o.d_model)
        self.ffn = FeedForward(o.d_model, o.ffn_dim)
        self.ffn_norm = LayerNorm(o.d_model)
        self.drop = Dropout(o.dropout)

    def self_sublayer(self, h: Tensor, cache: dict | None, name: str) -> Tensor:
        """Eq. 4: C = LN(SELF-ATT(H) + H), causal."""
        att = self.self_attn(h, h, causal=True, cache=cache, name=f"{name}.self")
        return self.self_norm(h + self.drop(att))

    def enc_sublayer(self, c: Tensor, memory: dict[str, Tensor], cache: dict | None, name: str) -> Tensor:
        """Eq. 5: D = LN(ATT(C, H_e) + C)."""
        att = self.cross_attn(c, memory["enc"], memory["enc_pad"], cache=static_cache(memory, cache),
                              name=f"{name}.enc")
        return self.cross_norm(c + self.drop(att))

    def ffn_sublayer(self, d: Tensor) -> Tensor:
        """Eq. 6: H = LN(FFN(D) + D)."""
        return self.ffn_norm(d + self.drop(self.ffn(d)))

    def forward(self, h: Tensor, memory: dict[str, Tensor], cache: dict | None = None, name: str = "") -> Tensor:
        """h [B,T,d] -> [B,T,d]."""
        c = self.self_sublayer(h, cache, name)
        return self.ffn_sublayer(self.enc_sublayer(c, memory, cache, name))


def _length_limit(o: TransformerSideOptions) -> int | None:
    """Positions one side can fill: the sinusoidal table (if used) and the RAN / Syn-R matrices; None: no limit."""
    limits = ([o.max_positions] if o.positions else []) + ([o.ran_max_len] if o.self_attn in TABLE_KINDS else [])
    return min(limits) if limits else None


def _pair_attention_dropout(part: nn.Module, other: nn.Module) -> None:
    """ran_attention_dropout_scope "all": in a model with patterns on either side every attention module of this
    part drops its weights with ran_attention_dropout, as the authors' toolkit does (ran_options.py)."""
    o = part.options
    if o.ran_attention_dropout_scope == "all" and (part.uses_patterns or getattr(other, "uses_patterns", False)):
        set_attention_dropout(part, o.ran_attention_dropout)


class PatternSide:
    """What the Transformer encoder and decoder share about their (optional) input-agnostic pattern attention
    (self.patterns, set by each side's __init__)."""

    @property
    def uses_patterns(self) -> bool:
        return self.patterns is not None

    @property
    def max_input_len(self) -> int | None:
        return _length_limit(self.options)

    def pair_with(self, other: nn.Module) -> None:
        _pair_attention_dropout(self, other)

    def reset_parameters(self) -> None:
        """Per-head [M,M] pattern matrices (ran.py)."""
        if self.patterns is not None:
            self.patterns.reset_parameters()


@register_encoder("transformer")
class TransformerEncoder(PatternSide, Encoder):
    """Post-LN self-attention stack over sqrt(d)-scaled embeddings + sinusoidal positions: {"enc", "enc_pad"}.

    With rel_pos_k > 0 the absolute positions stay (our choice: hao2019 5.3 does not say, and the warm-started
    model then sees the baseline's inputs).
    """

    def __init__(self, options: TransformerEncoderOptions):
        super().__init__(options)
        o = options
        self.input = InputLayer(o.d_model, o.max_positions, o.dropout)
        self.layers = nn.ModuleList(EncoderLayer(o) for _ in range(o.enc_layers))
        self.patterns = install_patterns(o.enc_self_attn, self.layers, o.d_model, o.heads, False, o)

    def embed(self, x: Tensor) -> Tensor:
        """Lookups x [B,S,d] -> the stack's input [B,S,d] (zeng2021 Table 2 drops the positions: enc_positions)."""
        return self.input(x, positions=self.options.enc_positions)

    def stack(self, h: Tensor, pad: Tensor) -> Tensor:
        """The layers over h [B,S,d] -> top layer [B,S,d], the side's pattern tables computed once."""
        with using(self.patterns):
            for layer in self.layers:
                h = compiled(layer, h, self.patterns is None and self.training)(h, pad)
        return h

    def forward(self, x: Tensor, pad: Tensor) -> dict[str, Tensor]:
        """x [B,S,d], pad [B,S] -> {"enc": [B,S,d], "enc_pad": [B,S]}."""
        return {"enc": self.stack(self.embed(x), pad), "enc_pad": pad}


@register_decoder("transformer")
class TransformerDecoder(PatternSide, Decoder):
    """Post-LN decoder stack over sqrt(d)-scaled embeddings + positions, attending memory "enc"; incremental
    steps cache every layer's keys/values and, once per search, the decoder's pattern tables."""

    def __init__(self, options: TransformerDecoderOptions, memory_dims: Mapping[str, int]):
        super().__init__(options, memory_dims)
        o = options
        self.input = InputLayer(o.d_model, o.max_positions, o.dropout)
        self.layers = nn.ModuleList(self.make_layer(i) for i in range(o.dec_layers))
        self.patterns = install_patterns(o.dec_self_attn, self.layers, o.d_model, o.heads, True, o)

    @property
    def supports_static_step(self) -> bool:
        """The plain stack: no pattern attention, no relative positions, absolute positions, DecoderLayer layers."""
        o = self.options
        return (type(self) is TransformerDecoder and self.patterns is None and not o.rel_pos_k and o.dec_positions
                and all(type(layer) is DecoderLayer for layer in self.layers))

    def make_layer(self, index: int) -> nn.Module:
        """Decoder layer number `index` (0 = bottom)."""
        return DecoderLayer(self.options)

    def embed(self, y: Tensor, offset: int = 0) -> Tensor:
        """Lookups y [B,T,d] at positions offset.. -> the stack's input [B,T,d] (dec_positions: zeng2021 Table 2)."""
        return self.input(y, offset=offset, positions=self.options.dec_positions)

    def forward(self, y: Tensor, memory: dict[str, Tensor]) -> Tensor:
        """y [B,T,d] -> [B,T,d]."""
        h = self.embed(y)
        with using(self.patterns):
            for layer in self.layers:
                h = compiled(layer, h, self.patterns is None and self.training)(h, memory)
        return h

    def step(self, y: Tensor, position: int, memory: dict[str, Tensor],
             state: dict[str, Tensor] | None) -> tuple[Tensor, dict[str, Tensor]]:
        """y [B,1,d] at `position` -> [B,d]; the pattern tables are input-agnostic: one copy (no batch dimension)
        computed at the first step."""
        state = {} if state is None else dict(state)
        if isinstance(self.patterns, TablePatterns):
            self.patterns.check_length(position + 1)  # before any lookup: the position must fit the matrices
        h = self.embed(y, offset=position)
        key = f"{SHARED}dec_patterns"
        if self.patterns is not None and key not in state:
            tables = self.patterns.tables()
            if tables is not None:
                state[key] = tables
        with using(self.patterns, state.get(key)):
            for i, layer in enumerate(self.layers):
                h = layer(h, memory, cache=state, name=f"dec{i}")
        if state.pop(PENDING_ORDER, None) is not None:  # every self-attention cache has taken its rows
            stale = [name for name in self._appended(state) if state[name].size(2) != position + 1]
            if stale:
                raise RuntimeError(f"decoder step {position}: cache(s) {stale} not appended to; their pending "
                                   "reorder would be lost")
        return h[:, 0], state

    def _appended(self, state: dict[str, Tensor]) -> list[str]:
        """The self-attention caches in `state` (the entries every step appends to: layers.append_step)."""
        return [name for i in range(len(self.layers)) for name in (f"dec{i}.self.k", f"dec{i}.self.v")
                if name in state]

    def reorder_state(self, state: dict[str, Tensor] | None, order: Tensor) -> dict[str, Tensor] | None:
        """Select state entries `order` [N]: the self-attention caches when the next step appends to them (their
        PENDING_ORDER, composed with any earlier one), the rest now."""
        if state is None:
            return None
        appended = self._appended(state)
        pending = state.get(PENDING_ORDER)
        rest = index_batch({k: v for k, v in state.items() if k not in appended and k != PENDING_ORDER}, order)
        lazy = {name: state[name] for name in appended}
        return {**rest, **lazy, PENDING_ORDER: order if pending is None else pending.index_select(0, order)}
