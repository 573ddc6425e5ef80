"""The post-LN Transformer (Vaswani et al. 2017; hao2019 eq. 1-6) behind the incremental-decoding interface."""
from __future__ import annotations

import contextlib
import math

import torch
from torch import Tensor, nn

from pipeline.data.vocab import PAD, SPECIALS
from pipeline.errors import PipelineError
from pipeline.models.layers import SHARED, FeedForward, MultiHeadAttention, Seq2Seq, SinusoidalPositions
from pipeline.models.options import TransformerOptions
from pipeline.models.ran import PatternAttention, Patterns, TablePatterns, make_patterns


class EncoderLayer(nn.Module):
    """Self-attention and FFN sub-layers, each with residual then LayerNorm: [B,S,d] -> [B,S,d].

    The self-attention takes the relative positions (rel_pos_k) and the DiSAN head masks (disan) if enabled.
    """

    def __init__(self, o: TransformerOptions):
        super().__init__()
        self.self_attn = MultiHeadAttention(o.d_model, o.heads, o.attention_dropout, rel_pos_k=o.rel_pos_k,
                                            directional=o.disan)
        self.self_norm = nn.LayerNorm(o.d_model)
        self.ffn = FeedForward(o.d_model, o.ffn_dim)
        self.ffn_norm = nn.LayerNorm(o.d_model)
        self.drop = nn.Dropout(o.dropout)

    def forward(self, h: Tensor, pad: Tensor) -> Tensor:
        """h [B,S,d], pad [B,S] -> [B,S,d]."""
        c = self.self_norm(h + self.drop(self.self_attn(h, h, pad)))  # eq. 1
        return self.ffn_norm(c + self.drop(self.ffn(c)))  # eq. 2


class DecoderLayer(nn.Module):
    """Masked self-attention, encoder attention and FFN sub-layers (eq. 4-6): [B,T,d] -> [B,T,d].

    `memory` holds "enc" [B,S,d] and "enc_pad" [B,S]; with `cache` the layer runs one incremental step (T = 1).
    """

    def __init__(self, o: TransformerOptions):
        super().__init__()
        self.self_attn = MultiHeadAttention(o.d_model, o.heads, o.attention_dropout, rel_pos_k=o.rel_pos_k,
                                            rel_pos_causal=True)  # relative positions here too (our choice)
        self.self_norm = nn.LayerNorm(o.d_model)
        self.cross_attn = MultiHeadAttention(o.d_model, o.heads, o.attention_dropout)
        self.cross_norm = nn.LayerNorm(o.d_model)
        self.ffn = FeedForward(o.d_model, o.ffn_dim)
        self.ffn_norm = nn.LayerNorm(o.d_model)
        self.drop = nn.Dropout(o.dropout)

    def self_sublayer(self, h: Tensor, cache: dict | None, name: str) -> Tensor:
        """Eq. 4: C = LN(SELF-ATT(H) + H), causal."""
        att = self.self_attn(h, h, causal=True, cache=cache, name=f"{name}.self")
        return self.self_norm(h + self.drop(att))

    def enc_sublayer(self, c: Tensor, memory: dict[str, Tensor], cache: dict | None, name: str) -> Tensor:
        """Eq. 5: D = LN(ATT(C, H_e) + C)."""
        att = self.cross_attn(c, memory["enc"], memory["enc_pad"], cache=cache, name=f"{name}.enc")
        return self.cross_norm(c + self.drop(att))

    def ffn_sublayer(self, d: Tensor) -> Tensor:
        """Eq. 6: H = LN(FFN(D) + D)."""
        return self.ffn_norm(d + self.drop(self.ffn(d)))

    def forward(self, h: Tensor, memory: dict[str, Tensor], cache: dict | None = None, name: str = "") -> Tensor:
        """h [B,T,d] -> [B,T,d]."""
        c = self.self_sublayer(h, cache, name)
        return self.ffn_sublayer(self.enc_sublayer(c, memory, cache, name))


class Transformer(Seq2Seq):
    """Encoder-decoder Transformer, post-LN, sinusoidal positions, embeddings scaled by sqrt(d_model).

    With rel_pos_k > 0 the sinusoidal absolute positions stay (our choice: hao2019 5.3 does not say, and the
    warm-started model then sees the baseline's inputs). enc_self_attn / dec_self_attn other than "dot" replace
    that side's self-attention by zeng2021's input-agnostic patterns (ran.py), one Patterns module per side.
    """

    Options = TransformerOptions

    def __init__(self, options: TransformerOptions, src_vocab_size: int, tgt_vocab_size: int):
        super().__init__()
        for what, size in (("source", src_vocab_size), ("target", tgt_vocab_size)):
            if size < len(SPECIALS):
                raise PipelineError(f"{what} vocabulary size must be at least {len(SPECIALS)} (the specials), "
                                    f"got {size}")
        if options.share_embeddings and src_vocab_size != tgt_vocab_size:
            raise PipelineError(f"model option 'share_embeddings' needs one joint vocabulary, but the source has "
                                f"{src_vocab_size} entries and the target {tgt_vocab_size}")
        self.options = o = options
        self.src_embed = nn.Embedding(src_vocab_size, o.d_model, padding_idx=PAD)
        self.tgt_embed = self.src_embed if o.share_embeddings else nn.Embedding(tgt_vocab_size, o.d_model,
                                                                                  padding_idx=PAD)
        self.positions = SinusoidalPositions(o.d_model, o.max_positions)
        self.embed_drop = nn.Dropout(o.dropout)
        self.encoder_layers = nn.ModuleList(EncoderLayer(o) for _ in range(o.enc_layers))
        self.decoder_layers = nn.ModuleList(self.make_decoder_layer(i) for i in range(o.dec_layers))
        self.enc_patterns = self.install_patterns(o.enc_self_attn, self.encoder_layers, causal=False)
        self.dec_patterns = self.install_patterns(o.dec_self_attn, self.decoder_layers, causal=True)
        self.output_proj = nn.Linear(o.d_model, tgt_vocab_size, bias=False)
        if o.share_embeddings or o.tie_output:
            self.output_proj.weight = self.tgt_embed.weight
        longest = o.max_positions if o.dec_self_attn in ("dot", "hcsa") else min(o.max_positions, o.ran_max_len)
        self.max_output_len = longest - 1
        self.reset_parameters()

    def install_patterns(self, kind: str, layers: nn.ModuleList, causal: bool) -> Patterns | None:
        """For kind != "dot": the side's patterns, and every layer's self_attn replaced by a PatternAttention."""
        if kind == "dot":
            return None
        o = self.options
        patterns = make_patterns(kind, o.heads, len(layers), causal, o.ran_max_len, o.ran_transition, o.ran_fixed)
        for i, layer in enumerate(layers):
            layer.self_attn = PatternAttention(o.d_model, o.heads, o.ran_attention_dropout, patterns, i)
        return patterns

    @property
    def max_input_len(self) -> int:
        """Positions a source + EOS or BOS + target may fill: the RAN / Syn-R matrix size, else max_positions."""
        o = self.options
        tables = [o.ran_max_len for kind in (o.enc_self_attn, o.dec_self_attn) if kind in ("ran", "synr")]
        return min([o.max_positions] + tables)

    def make_decoder_layer(self, index: int) -> nn.Module:
        """Decoder layer number `index` (0 = bottom)."""
        return DecoderLayer(self.options)

    def reset_parameters(self) -> None:
        """Xavier-uniform matrices, zero biases, embeddings N(0, d^-1/2), PAD row zero (fairseq-like; our choice)."""
        with torch.no_grad():
            for name, p in self.named_parameters():
                if p.dim() > 1:
                    nn.init.xavier_uniform_(p)
                elif name.rsplit(".", 1)[-1].startswith("bias"):
                    nn.init.zeros_(p)
            tables = [self.src_embed] + ([] if self.tgt_embed is self.src_embed else [self.tgt_embed])
            for emb in tables:
                nn.init.normal_(emb.weight, mean=0.0, std=self.options.d_model ** -0.5)
                emb.weight[PAD].zero_()
        for patterns in (self.enc_patterns, self.dec_patterns):
            if patterns is not None:
                patterns.reset_parameters()  # per-head [M,M] matrices (ran.py)

    def embed(self, table: nn.Embedding, tokens: Tensor, offset: int = 0, positions: bool = True) -> Tensor:
        """tokens [B,L] at positions offset.. -> sqrt(d)-scaled embeddings (+ positions), dropped out: [B,L,d]."""
        x = table(tokens) * math.sqrt(self.options.d_model)
        if positions:  # zeng2021 Table 2 drops them per side (enc_positions / dec_positions)
            x = x + self.positions(tokens.size(1), offset)
        return self.embed_drop(x)

    def patterns_of(self, patterns: Patterns | None, tables: Tensor | None = None):
        """Context in which a side's layers share one computation of its pattern tables (or the given ones)."""
        if patterns is None:
            return contextlib.nullcontext()
        return patterns.use(patterns.tables() if tables is None else tables)

    def encode(self, src: Tensor) -> dict[str, Tensor]:
        """src [B,S] -> {"enc": [B,S,d], "enc_pad": [B,S] True at padding}."""
        x = self.embed(self.src_embed, src, positions=self.options.enc_positions)
        return self.encode_embedded(x, src.eq(PAD))

    def encode_embedded(self, x: Tensor, pad: Tensor) -> dict[str, Tensor]:
        """Encoder stack over embedded source x [B,S,d] -> memory."""
        h = x
        with self.patterns_of(self.enc_patterns):
            for layer in self.encoder_layers:
                h = layer(h, pad)
        return {"enc": h, "enc_pad": pad}

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """src [B,S], tgt_in [B,T] -> logits [B,T,V]."""
        memory = self.encode(src)
        h = self.embed(self.tgt_embed, tgt_in, positions=self.options.dec_positions)
        with self.patterns_of(self.dec_patterns):
            for layer in self.decoder_layers:
                h = layer(h, memory)
        return self.output_proj(h)

    def decode_step(self, prev_tokens: Tensor, memory: dict[str, Tensor],
                    state: dict[str, Tensor] | None) -> tuple[Tensor, dict[str, Tensor]]:
        """prev_tokens [B,t] -> logits [B,V] at position t; state caches keys/values per layer and, computed at
        the first step only, the decoder's pattern tables (input-agnostic: one copy for the whole batch)."""
        state = {} if state is None else dict(state)
        t = prev_tokens.size(1)
        h = self.embed(self.tgt_embed, prev_tokens[:, -1:], offset=t - 1, positions=self.options.dec_positions)
        if isinstance(self.dec_patterns, TablePatterns):
            self.dec_patterns.check_length(t)  # before any lookup: position t-1 must fit the matrices
        key = f"{SHARED}dec_patterns"
        if self.dec_patterns is not None and key not in state:
            tables = self.dec_patterns.tables()
            if tables is not None:
                state[key] = tables
        with self.patterns_of(self.dec_patterns, state.get(key)):
            for i, layer in enumerate(self.decoder_layers):
                h = layer(h, memory, cache=state, name=f"dec{i}")
        return self.output_proj(h[:, 0]), state
