"""Options of the bidirectional RNN encoder (rnn_encoder.py; werlen2018 A.1, zhang2018 eq. 1-2, shu2016 sec. 2),
torch-free."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pipeline.models.options import EncoderOptions, register_encoder_options, require


@register_encoder_options("birnn")
@dataclass
class BiRNNEncoderOptions(EncoderOptions):
    """A forward and a backward GRU (or LSTM) over the source embeddings; memory {"enc": [fwd; bwd], "enc_pad"}.
    Defaults: werlen2018 6.2 (embeddings 500, hidden 1024)."""

    embed: int = 500
    hidden: int = 1024
    cell: Literal["gru", "lstm"] = "gru"

    @property
    def embed_dim(self) -> int:
        return self.embed

    @property
    def memory_dims(self) -> dict[str, int]:
        return {"enc": 2 * self.hidden}

    def __post_init__(self) -> None:
        for key in ("embed", "hidden"):
            require(getattr(self, key) >= 1, key, "a positive integer", getattr(self, key))
