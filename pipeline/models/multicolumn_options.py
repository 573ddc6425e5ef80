"""Options of the multi-column encoder (Chen et al. 2018; hao2019 Table 4's "RNN Encoder"), torch-free."""
from __future__ import annotations

from dataclasses import dataclass

from pipeline.models.options import register_encoder_options, require
from pipeline.models.transformer_options import TransformerEncoderOptions


@register_encoder_options("multicolumn")
@dataclass
class MultiColumnEncoderOptions(TransformerEncoderOptions):
    """The Transformer encoder plus a column of pre-norm bidirectional GRU layers, merged into "enc"."""

    rnn_layers: int = 6  # hao2019 5.3: six RNN layers

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.rnn_layers >= 1, "rnn_layers", "a positive integer", self.rnn_layers)
