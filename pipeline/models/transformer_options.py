"""Options of the Transformer encoder and decoder (Vaswani et al. 2017; hao2019 eq. 1-6), torch-free.

Each side also hosts hao2019's Table 4 baselines (relative positions, DiSAN on the encoder) and zeng2021's
input-agnostic self-attention (PatternOptions): the side's own `*_self_attn` picks dot-product or a pattern kind.
Defaults are the Base model.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal, Mapping

from pipeline.models.options import (DecoderOptions, EncoderOptions, register_decoder_options,
                                     register_encoder_options, require)
from pipeline.models.ran_options import PatternOptions

SelfAttention = Literal["dot", "ran", "hcsa", "synr"]


@dataclass
class TransformerSideOptions(PatternOptions):
    """What the encoder and decoder stacks share; each side names its layers, self-attention and positions."""

    layers_key: ClassVar[str]
    self_attn_key: ClassVar[str]
    positions_key: ClassVar[str]

    d_model: int = 512
    ffn_dim: int = 2048
    heads: int = 8
    dropout: float = 0.1  # residual and embedding dropout
    attention_dropout: float = 0.0  # dropout on the dot-product attention weights
    max_positions: int = 1024  # sinusoidal position table
    rel_pos_k: int = 0  # Shaw et al. 2018 relative positions, clipping distance k (hao2019 5.3: 16); 0 = off

    @property
    def n_layers(self) -> int:
        return getattr(self, self.layers_key)

    @property
    def self_attn(self) -> str:
        """Self-attention kind of this side: "dot" | "ran" | "hcsa" | "synr"."""
        return getattr(self, self.self_attn_key)

    @property
    def positions(self) -> bool:
        """Sinusoidal positions added to this side's embeddings."""
        return getattr(self, self.positions_key)

    @property
    def embed_dim(self) -> int:
        return self.d_model

    def __post_init__(self) -> None:
        for key in ("d_model", "ffn_dim", "heads", self.layers_key):
            require(getattr(self, key) >= 1, key, "a positive integer", getattr(self, key))
        require(self.d_model % 2 == 0, "d_model", "an even number (sin/cos halves)", self.d_model)
        require(self.d_model % self.heads == 0, "heads", f"a divisor of d_model={self.d_model}", self.heads)
        for key in ("dropout", "attention_dropout"):
            require(0.0 <= getattr(self, key) < 1.0, key, "a probability in [0, 1)", getattr(self, key))
        require(self.max_positions >= 2, "max_positions", "an integer >= 2", self.max_positions)
        require(self.rel_pos_k >= 0, "rel_pos_k", "an integer >= 0 (0: no relative positions)", self.rel_pos_k)
        require(self.rel_pos_k == 0 or self.self_attn == "dot", "rel_pos_k",
                f"0 unless {self.self_attn_key} is 'dot' (relative positions need queries)", self.rel_pos_k)
        self.check_patterns()


@register_encoder_options("transformer")
@dataclass
class TransformerEncoderOptions(TransformerSideOptions, EncoderOptions):
    """The Transformer encoder stack; memory {"enc", "enc_pad"}."""

    layers_key: ClassVar[str] = "enc_layers"
    self_attn_key: ClassVar[str] = "enc_self_attn"
    positions_key: ClassVar[str] = "enc_positions"

    enc_layers: int = 6
    enc_self_attn: SelfAttention = "dot"  # zeng2021: RAN-E / RAN-ALL "ran", baselines "hcsa" / "synr"
    enc_positions: bool = True  # zeng2021 Table 2 "-Pos-E": False drops the encoder's sinusoidal positions
    disan: bool = False  # DiSAN directional masks on the encoder self-attention (Shen et al. 2018; hao2019 Table 4)

    @property
    def memory_dims(self) -> dict[str, int]:
        return {"enc": self.d_model}

    def __post_init__(self) -> None:
        super().__post_init__()
        require(not self.disan or self.heads % 2 == 0, "heads",
                "an even number when 'disan' is on (half the heads forward, half backward)", self.heads)
        require(not self.disan or self.enc_self_attn == "dot", "disan",
                "false unless enc_self_attn is 'dot' (DiSAN masks dot-product heads)", self.disan)


@register_decoder_options("transformer")
@dataclass
class TransformerDecoderOptions(TransformerSideOptions, DecoderOptions):
    """The Transformer decoder stack, attending memory "enc"."""

    layers_key: ClassVar[str] = "dec_layers"
    self_attn_key: ClassVar[str] = "dec_self_attn"
    positions_key: ClassVar[str] = "dec_positions"

    dec_layers: int = 6
    dec_self_attn: SelfAttention = "dot"  # zeng2021: RAN-D / RAN-ALL "ran", baselines "hcsa" / "synr"
    dec_positions: bool = True  # zeng2021 Table 2 "-Pos-D"

    @property
    def output_dim(self) -> int:
        return self.d_model

    def check_memory(self, memory_dims: Mapping[str, int]) -> None:
        for entry in self.reads:
            require(memory_dims[entry] == self.d_model, "d_model",
                    f"the size of the encoder's memory entry '{entry}' ({memory_dims[entry]})", self.d_model)
