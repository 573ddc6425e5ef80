"""Options of zhang2018's relation-network encoder, RNMT (relation_encoder.py; sec. 3, 5.2), torch-free."""
from __future__ import annotations

from dataclasses import dataclass

from pipeline.models.options import EncoderOptions, register_encoder_options, require


@register_encoder_options("rnmt")
@dataclass
class RelationEncoderOptions(EncoderOptions):
    """A forward GRU, a relation layer (RNL), a backward GRU, an RNL, each with a residual connection (eq. 11) and
    a dense concatenation of all earlier outputs mapped back to `hidden` (eq. 12); memory {"enc": [B,S,hidden]}.

    RNL: convolutions of widths rn_widths with rn_channels output channels each, side by side ('same' padding,
    BatchNorm, LeakyReLU 0.1; eq. 7); graph propagation, an MLP of rn_gp_layers layers of rn_hidden units on every
    pair [c_i; c_j], averaged over j (eq. 8-9); an MLP of rn_mlp_layers layers back to `hidden` (eq. 10).
    Defaults: zhang2018 5.2 Zh-En (embeddings = hidden = 512; widths [1, 3], channels [128, 256], MLP 256 units);
    En-De: rn_widths [3], rn_channels [96], rn_hidden 128.
    """

    embed: int = 512
    hidden: int = 512
    rn_widths: tuple[int, ...] = (1, 3)
    rn_channels: tuple[int, ...] = (128, 256)
    rn_hidden: int = 256
    rn_gp_layers: int = 4
    rn_mlp_layers: int = 2

    @property
    def embed_dim(self) -> int:
        return self.embed

    @property
    def memory_dims(self) -> dict[str, int]:
        return {"enc": self.hidden}

    def __post_init__(self) -> None:
        for key in ("embed", "hidden", "rn_hidden", "rn_gp_layers", "rn_mlp_layers"):
            require(getattr(self, key) >= 1, key, "a positive integer", getattr(self, key))
        require(self.embed == self.hidden, "embed", f"the size of 'hidden' ({self.hidden}): the residual connection "
                "(eq. 11) adds the embeddings to the forward GRU's states", self.embed)
        require(len(self.rn_widths) >= 1 and all(w >= 1 and w % 2 == 1 for w in self.rn_widths), "rn_widths",
                "a non-empty list of odd positive widths ('same' padding)", list(self.rn_widths))
        require(len(self.rn_channels) == len(self.rn_widths) and all(c >= 1 for c in self.rn_channels),
                "rn_channels", f"one positive channel count per width ({len(self.rn_widths)})",
                list(self.rn_channels))
