"""Options of the LSTM attention decoder (lstm_attention_decoder.py; shu2016 sec. 2-4, eq. 4-8 and 11-13),
torch-free."""
from __future__ import annotations

from dataclasses import dataclass

from pipeline.models.cgru_decoder_options import check_attention_decoder
from pipeline.models.options import DecoderOptions, register_decoder_options, require


@register_decoder_options("lstm_attention")
@dataclass
class LSTMAttentionDecoderOptions(DecoderOptions):
    """Bahdanau attention queried by layer 1's h_{t-1}; LSTM layer 1 on [e_{t-1}; c_t] (eq. 7), an optional layer 2 on
    h_t (eq. 12); the output layer reads h_t (eq. 8), h'_t (stacked, Figure 1b) or h_t + h'_t (residual, eq. 13).

    shu2016 4.1's four decoders: baseline (layers 1, 1000 units), enlarged (layers 1, dec_hidden 1400), stacked
    (layers 2) and residual (layers 2, residual). `hidden` is shared with the encoder (all RNNs have 1000 units, 4.1);
    dec_hidden sizes the decoder alone. Defaults: the baseline; embed 620 and attention_dim 1000 are Bahdanau et al.
    (2015) A.2's sizes (the paper adopts that architecture and states neither; our choice); no dropout (none stated).
    """

    embed: int = 620
    hidden: int = 1000
    dec_hidden: int = 0  # units of each decoder LSTM layer; 0: `hidden` (the enlarged decoder: 1400)
    layers: int = 1
    residual: bool = False  # o_t = W_o (h_t + h'_t) + b_o (eq. 13); needs layers == 2
    attention_dim: int = 1000  # W_a's rows in eq. 5; 0: the context size (as the other RNN decoders)
    dropout: float = 0.0  # on the output layer's input only (our choice; the paper mentions none)

    @property
    def embed_dim(self) -> int:
        return self.embed

    @property
    def units(self) -> int:
        """Units of each decoder LSTM layer."""
        return self.dec_hidden or self.hidden

    @property
    def output_dim(self) -> int:
        return self.units  # W_o in R^{V x units}: eq. 8 / 13 have no readout layer between the state and W_o

    def __post_init__(self) -> None:
        check_attention_decoder(self)
        require(self.dec_hidden >= 0, "dec_hidden", "an integer >= 0 (0: hidden)", self.dec_hidden)
        require(self.layers in (1, 2), "layers", "1 or 2", self.layers)  # shu2016's decoders have one or two layers
        require(not self.residual or self.layers == 2, "residual", "false unless layers is 2 (eq. 11-13)",
                self.residual)
