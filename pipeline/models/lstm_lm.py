"""An LSTM language model behind the encoder-decoder interface (werlen2018 sec. 7.3, Table 6): the "none" encoder
ignores the source and writes an empty memory; the "lstm" decoder is Daniluk et al. (2016)'s LSTM language model,
optionally with werlen2018's mean or self-attentive residual connections (sec. 4, eq. 8-13) in its readout.

As the cgru decoder, the first input y_0 is a zero vector, not the BOS embedding (our choice for the language
model, so that d_1 = 0 as in translation; the BOS row of the target table is never read).
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from pipeline.models.layers import Dropout
from pipeline.models.previous_word_summary import PreviousWordSummary, summarise, summarise_step, zero_first
from pipeline.models.lstm_lm_options import LSTMLMDecoderOptions, NoneEncoderOptions
from pipeline.models.seq2seq import Decoder, Encoder, register_decoder, register_encoder


@register_encoder("none")
class NoneEncoder(Encoder):
    """Embedded source [B,S,1] -> the empty memory {}: a language model reads no source (its embedding table,
    src_vocab x 1, is never used)."""

    options: NoneEncoderOptions

    def forward(self, x: Tensor, pad: Tensor) -> dict[str, Tensor]:
        return {}


@register_decoder("lstm")
class LSTMLMDecoder(Decoder):
    """Embedded targets [B,T,e] (the memory is not read) -> features [B,T,hidden].

    h_t = LSTM^layers(y_{t-1}, h_{t-1}) from zero states, y_0 = 0; features h_t (summary "none", Daniluk's LSTM) or
    tanh(W_h h_t + W_d d_t) with d_t the mean (eq. 9) or the self-attentive summary (eq. 10-13) of y_0..y_{t-1}
    (eq. 8 without c_t); dropout on the LSTM input, between layers and on the features.
    """

    def __init__(self, options: LSTMLMDecoderOptions, memory_dims):
        super().__init__(options, memory_dims)
        o = options
        self.lstms = nn.ModuleList(nn.LSTM(o.embed if i == 0 else o.hidden, o.hidden, batch_first=True)
                                   for i in range(o.layers))
        residual = o.summary != "none"
        self.readout_state = nn.Linear(o.hidden, o.hidden) if residual else None  # W_h (+ the readout's bias)
        self.readout_words = nn.Linear(o.embed, o.hidden, bias=False) if residual else None  # W_d
        self.summary = (PreviousWordSummary(o.embed, o.hidden, o.summary_score == "content_scope")
                        if o.summary == "attention" else None)
        self.drop = Dropout(o.dropout)

    def _readout(self, h: Tensor, words: Tensor | None) -> Tensor:
        """h [...,hidden] (top layer), d [...,e] (None without summary) -> features [...,hidden]."""
        if self.readout_state is None:
            return self.drop(h)
        return self.drop(torch.tanh(self.readout_state(h) + self.readout_words(words)))

    def _words(self, y: Tensor, h: Tensor) -> Tensor | None:
        """d_t for every position: y [B,T,e] (y_0 = 0), h [B,T,hidden] -> [B,T,e] (None without a summary)."""
        return summarise(self.options.summary, self.summary, y, h)

    def forward(self, y: Tensor, memory: dict[str, Tensor]) -> Tensor:
        y = self.drop(zero_first(y))
        x = y
        for i, lstm in enumerate(self.lstms):
            x = lstm(self.drop(x) if i else x)[0]
        return self._readout(x, self._words(y, x))

    def step(self, y: Tensor, position: int, memory: dict[str, Tensor],
             state: dict[str, Tensor] | None) -> tuple[Tensor, dict[str, Tensor]]:
        """State (flat, batch-first): "h", "c" [B,layers,hidden]; "word_sum" [B,e] (mean) or "words", "word_keys"
        [B,t,e] (attention: y_0..y_{t-1} and W_y y_i + b)."""
        o = self.options
        y = self.drop(zero_first(y, position))  # [B,1,e]
        if state is None:
            zeros = y.new_zeros(y.size(0), o.layers, o.hidden)
            state = {"h": zeros, "c": zeros}
        state = dict(state)
        x, hs, cs = y, [], []
        for i, lstm in enumerate(self.lstms):
            h0, c0 = (state[k][:, i].unsqueeze(0).contiguous() for k in ("h", "c"))  # [1,B,hidden]
            x, (h, c) = lstm(self.drop(x) if i else x, (h0, c0))
            hs.append(h[0])
            cs.append(c[0])
        state["h"], state["c"] = torch.stack(hs, 1), torch.stack(cs, 1)
        top = x[:, 0]
        words = summarise_step(o.summary, self.summary, y, position, top, state)
        return self._readout(top, words), state
