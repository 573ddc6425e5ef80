"""The interface search and training use (Seq2Seq), the Encoder and Decoder parts models are composed of, their
registries, and the composition itself (EncoderDecoder: embeddings, encoder, decoder, output projection)."""
from __future__ import annotations

import importlib
import pkgutil
from typing import Mapping

import torch
from torch import Tensor, nn

from pipeline.data.vocab import PAD, SPECIALS
from pipeline.errors import PipelineError
from pipeline.models.layers import MultiHeadAttention
from pipeline.models.options import DecoderOptions, EncoderOptions, ModelOptions, ModelSpec
from pipeline.registry import Registry

SHARED = "shared:"  # prefix of state/memory entries without a batch dimension (the same for every hypothesis)


def index_batch(tensors: dict[str, Tensor] | None, order: Tensor) -> dict[str, Tensor] | None:
    """Select (and repeat or reorder) batch entries `order` [N] along dim 0 of every tensor in a flat dict;
    entries named SHARED... are passed through unchanged."""
    if tensors is None:
        return None
    return {key: value if key.startswith(SHARED) else value.index_select(0, order) for key, value in tensors.items()}


class Seq2Seq(nn.Module):
    """One interface for every translation model: a full forward pass for training, incremental steps for search.

    `memory` and `state` are flat dicts of batch-first tensors, so the default reorder methods (index_select on
    dim 0) serve every model that keeps to that layout; entries named SHARED... have no batch dimension.
    """

    @property
    def max_input_len(self) -> int | None:
        """Longest source + EOS, and longest BOS + target, the model accepts (positions); None: no limit."""
        return None

    @property
    def max_output_len(self) -> int | None:
        """Longest output (tokens, EOS excluded) decode_step supports; None: no limit."""
        return None

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """src [B,S], tgt_in [B,T] (BOS first) -> logits [B,T,V]."""
        return self.output_layer(self.features(src, tgt_in))

    def features(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """src [B,S], tgt_in [B,T] (BOS first) -> [B,T,d]: what output_layer turns into logits (training takes
        its loss from these, pipeline.loss, never holding all [B,T,V] logits)."""
        raise NotImplementedError

    @property
    def output_layer(self) -> nn.Linear:
        """The last layer: features [...,d] -> logits [...,V]."""
        raise NotImplementedError

    def encode(self, src: Tensor) -> dict[str, Tensor]:
        """src [B,S] -> memory: dict of batch-first tensors."""
        raise NotImplementedError

    def decode_step(self, prev_tokens: Tensor, memory: dict[str, Tensor],
                    state: dict[str, Tensor] | None) -> tuple[Tensor, dict[str, Tensor]]:
        """prev_tokens [B,t] (BOS first) -> logits [B,V] for position t, and the new state.

        A step may add entries to `memory` in place: values fixed for the whole search (e.g. projected encoder keys),
        reordered with the memory when sentences leave the batch instead of with the state at every step."""
        raise NotImplementedError

    def reorder_state(self, state: dict[str, Tensor] | None, order: Tensor) -> dict[str, Tensor] | None:
        """Select state entries `order` [N] (beam search: follow the surviving hypotheses)."""
        return index_batch(state, order)

    def reorder_memory(self, memory: dict[str, Tensor], order: Tensor) -> dict[str, Tensor]:
        """Select memory entries `order` [N] (beam search: expand each sentence to its beams, drop finished ones)."""
        return index_batch(memory, order)


# ------------------------------------------------------------------------------------------------- the parts
class Encoder(nn.Module):
    """Embedded source [B,S,e] and its padding [B,S] -> memory: "<name>" [B,L,d] and "<name>_pad" [B,L] for each
    name of options.writes, plus anything else batch-first."""

    def __init__(self, options: EncoderOptions):
        super().__init__()
        self.options = options

    @property
    def outputs(self) -> tuple[str, ...]:
        """Memory entries holding sequence states (the first is the main one)."""
        return tuple(self.options.writes)

    @property
    def max_input_len(self) -> int | None:
        """Longest source (+ EOS) the encoder accepts; None: no limit."""
        return None

    def forward(self, x: Tensor, pad: Tensor) -> dict[str, Tensor]:
        """x [B,S,e] (embedding lookups, unscaled), pad [B,S] True at padding -> memory."""
        raise NotImplementedError

    def pair_with(self, decoder: Decoder) -> None:
        """Adjust to the decoder of the model (called once at construction); nothing by default."""

    def reset_parameters(self) -> None:
        """Initialise what the model-wide default (EncoderDecoder.reset_parameters) does not fit; nothing by default."""


class Decoder(nn.Module):
    """Embedded target prefix -> output features, in one pass (training) or one step at a time (search)."""

    def __init__(self, options: DecoderOptions, memory_dims: Mapping[str, int]):
        super().__init__()
        self.options = options
        self.memory_dims = dict(memory_dims)

    @property
    def max_input_len(self) -> int | None:
        """Longest BOS + target the decoder accepts; None: no limit."""
        return None

    @property
    def max_output_len(self) -> int | None:
        """Longest output (EOS excluded): BOS + output fills max_input_len positions."""
        return None if self.max_input_len is None else self.max_input_len - 1

    def forward(self, y: Tensor, memory: dict[str, Tensor]) -> Tensor:
        """y [B,T,e] (embedding lookups of BOS + target, unscaled) -> features [B,T,options.output_dim]."""
        raise NotImplementedError

    def step(self, y: Tensor, position: int, memory: dict[str, Tensor],
             state: dict[str, Tensor] | None) -> tuple[Tensor, dict[str, Tensor]]:
        """y [B,1,e]: the embedding of the token at `position` (0 = BOS) -> features [B,output_dim], new state."""
        raise NotImplementedError

    def reorder_state(self, state: dict[str, Tensor] | None, order: Tensor) -> dict[str, Tensor] | None:
        """Select state entries `order` [N]; flat batch-first dicts by default."""
        return index_batch(state, order)

    @property
    def supports_static_step(self) -> bool:
        """Whether pipeline/static_search.py's fixed-shape step computes this decoder's step; no by default."""
        return False

    def source_attention(self) -> nn.Module | None:
        """The module whose output is (context, weights [B,S]) once per target step, for alignments; None: none."""
        return None

    def pair_with(self, encoder: Encoder) -> None:
        """Adjust to the encoder of the model (called once at construction); nothing by default."""

    def reset_parameters(self) -> None:
        """Initialise what the model-wide default does not fit; nothing by default."""


_LOADED = False


def load_modules() -> None:
    """Import every module of pipeline.models once (each registers its encoder / decoder classes)."""
    global _LOADED
    if not _LOADED:
        import pipeline.models as package
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
            importlib.import_module(f"{package.__name__}.{info.name}")
        _LOADED = True


ENCODERS: Registry = Registry("encoder", same=lambda old, new: old is new, discover=load_modules)
DECODERS: Registry = Registry("decoder", same=lambda old, new: old is new, discover=load_modules)


def _register(table: Registry, base: type, name: str):
    def decorator(cls):
        if not issubclass(cls, base):
            raise TypeError(f"{base.__name__.lower()} '{name}': {cls.__name__} must derive from {base.__name__}")
        where = f"{table[name].__name__} and {cls.__name__}" if name in table else ""
        table.add(name, cls, where)
        cls.kind = name
        return cls
    return decorator


def register_encoder(name: str):
    """Class decorator (fairseq's register_model): the Encoder class of kind `name`; its options class is
    registered under the same name with register_encoder_options."""
    return _register(ENCODERS, Encoder, name)


def register_decoder(name: str):
    """Class decorator: the Decoder class of kind `name` (options: register_decoder_options)."""
    return _register(DECODERS, Decoder, name)


# ------------------------------------------------------------------------------------------- the composition
def orthogonal_square_blocks(model: nn.Module) -> None:
    """dl4mt's norm_weight/ortho_weight after a normal initialisation: every square matrix, and every square gate
    block of an RNN's stacked weights (torch's [gates x hidden, in]), becomes a random orthogonal matrix."""
    for module in model.modules():
        rnn = isinstance(module, (nn.RNNBase, nn.RNNCellBase))
        for name, p in module.named_parameters(recurse=False):
            if p.dim() != 2 or not name.startswith("weight"):
                continue
            rows = module.hidden_size if rnn else p.size(0)
            for block in p.split(rows, dim=0):
                if block.size(0) == block.size(1):
                    nn.init.orthogonal_(block)


class EncoderDecoder(Seq2Seq):
    """Source embeddings -> encoder -> memory; target embeddings + memory -> decoder -> output projection.

    Three tables by default (source, target input, output projection; hao2019 Table 3's #Para. implies them);
    share_embeddings makes them one (one joint vocabulary), tie_output ties the last two.
    """

    def __init__(self, encoder: Encoder, decoder: Decoder, options: ModelOptions, src_vocab_size: int,
                 tgt_vocab_size: int, spec: ModelSpec | None = None):
        super().__init__()
        for what, size in (("source", src_vocab_size), ("target", tgt_vocab_size)):
            if size < len(SPECIALS):
                raise PipelineError(f"{what} vocabulary size must be at least {len(SPECIALS)} (the specials), "
                                    f"got {size}")
        if options.share_embeddings and src_vocab_size != tgt_vocab_size:
            raise PipelineError(f"model option 'share_embeddings' needs one joint vocabulary, but the source has "
                                f"{src_vocab_size} entries and the target {tgt_vocab_size}")
        self.options, self.spec = options, spec
        self.encoder, self.decoder = encoder, decoder
        self.src_embed = nn.Embedding(src_vocab_size, encoder.options.embed_dim, padding_idx=PAD)
        self.tgt_embed = self.src_embed if options.share_embeddings else nn.Embedding(
            tgt_vocab_size, decoder.options.embed_dim, padding_idx=PAD)
        self.output_proj = nn.Linear(decoder.options.output_dim, tgt_vocab_size, bias=options.output_bias)
        if options.share_embeddings or options.tie_output:
            self.output_proj.weight = self.tgt_embed.weight
        encoder.pair_with(decoder)
        decoder.pair_with(encoder)
        self.reset_parameters()

    @property
    def max_input_len(self) -> int | None:
        limits = [n for n in (self.encoder.max_input_len, self.decoder.max_input_len) if n is not None]
        return min(limits) if limits else None

    @property
    def max_output_len(self) -> int | None:
        return self.decoder.max_output_len

    def reset_parameters(self) -> None:
        """By options.weight_init: "xavier" (below), or every weight N(0, scale^2) with zero biases ("normal"; "dl4mt":
        then square matrices and gate blocks orthogonal), or every parameter U(-scale, scale) ("uniform"); the PAD
        rows zero. "xavier": Xavier-uniform matrices (q/k/v projections: MultiHeadAttention.init_projections), zero
        biases, embeddings N(0, e^-1/2) (fairseq-like; our choice), then each part's own initialisation."""
        scale = self.options.weight_init_scale
        if self.options.weight_init != "xavier":
            with torch.no_grad():
                for name, p in self.named_parameters():
                    if self.options.weight_init == "uniform":
                        nn.init.uniform_(p, -scale, scale)
                    elif p.dim() > 1:
                        nn.init.normal_(p, 0.0, scale)
                    else:
                        nn.init.zeros_(p)
                if self.options.weight_init == "dl4mt":
                    orthogonal_square_blocks(self)
                for table in (self.src_embed, self.tgt_embed):
                    table.weight[PAD].zero_()
            return
        with torch.no_grad():
            for name, p in self.named_parameters():
                if p.dim() > 1:
                    nn.init.xavier_uniform_(p)
                elif name.rsplit(".", 1)[-1].startswith("bias"):
                    nn.init.zeros_(p)
            for module in self.modules():
                if isinstance(module, MultiHeadAttention):
                    module.init_projections()
            for table in {id(t): t for t in (self.src_embed, self.tgt_embed)}.values():
                nn.init.normal_(table.weight, mean=0.0, std=table.embedding_dim ** -0.5)
                table.weight[PAD].zero_()
        self.encoder.reset_parameters()
        self.decoder.reset_parameters()

    def encode(self, src: Tensor) -> dict[str, Tensor]:
        """src [B,S] -> memory of the encoder ("enc" [B,S,d], "enc_pad" [B,S] True at padding, ...)."""
        return self.encoder(self.src_embed(src), src.eq(PAD))

    def features(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """src [B,S], tgt_in [B,T] -> the decoder's outputs [B,T,d] (output_proj makes them logits)."""
        return self.decoder(self.tgt_embed(tgt_in), self.encode(src))

    @property
    def output_layer(self) -> nn.Linear:
        return self.output_proj

    def decode_step(self, prev_tokens: Tensor, memory: dict[str, Tensor],
                    state: dict[str, Tensor] | None) -> tuple[Tensor, dict[str, Tensor]]:
        """prev_tokens [B,t] -> logits [B,V] at position t; only the last token is embedded (the decoder's state
        holds what it needs of the earlier ones)."""
        features, state = self.decoder.step(self.tgt_embed(prev_tokens[:, -1:]), prev_tokens.size(1) - 1, memory,
                                            state)
        return self.output_proj(features), state

    def reorder_state(self, state: dict[str, Tensor] | None, order: Tensor) -> dict[str, Tensor] | None:
        return self.decoder.reorder_state(state, order)
