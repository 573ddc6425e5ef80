"""Options of the RNNsearch decoder (rnnsearch_decoder.py; Bahdanau et al. 2015, zhang2018 eq. 2-5), torch-free."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pipeline.models.cgru_decoder_options import check_attention_decoder
from pipeline.models.options import DecoderOptions, register_decoder_options


@register_decoder_options("rnnsearch")
@dataclass
class RNNsearchDecoderOptions(DecoderOptions):
    """One GRU on [E y_{j-1}; a_j], a_j attention queried by s_{j-1}; readout over s_j, E y_{j-1} and a_j.

    readout: "maxout" (pool 2 over 2 x embed units, zhang2018's RNNsearch(*) as released; Bahdanau et al. A.2.2) |
    "tanh" (dl4mt's). Defaults: zhang2018 5.2 (embeddings and hidden units 512, dropout 0.5 on the output layer).
    """

    embed: int = 512
    hidden: int = 512
    attention_dim: int = 0  # additive attention's hidden size; 0: the context size (as the cgru decoder)
    dropout: float = 0.5  # on the readout only, before the output layer (zhang2018 5.2)
    readout: Literal["tanh", "maxout"] = "maxout"

    @property
    def embed_dim(self) -> int:
        return self.embed

    @property
    def output_dim(self) -> int:
        return self.embed  # the readout has the embedding size (maxout pools 2 x embed units to embed)

    def __post_init__(self) -> None:
        check_attention_decoder(self)
