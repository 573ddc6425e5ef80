"""The bidirectional RNN encoder of the attention models (Bahdanau et al. 2015; werlen2018 A.1): h_i = [fwd_i; bwd_i],
each direction a GRU (or LSTM) from a zero state that never reads padding."""
from __future__ import annotations

from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from pipeline.models.rnn_encoder_options import BiRNNEncoderOptions
from pipeline.models.seq2seq import Encoder, register_encoder


@register_encoder("birnn")
class BiRNNEncoder(Encoder):
    """Embedded source [B,S,e] -> memory {"enc": [B,S,2h], "enc_pad": [B,S]} (zeros at padding)."""

    def __init__(self, options: BiRNNEncoderOptions):
        super().__init__(options)
        rnn = nn.GRU if options.cell == "gru" else nn.LSTM
        self.rnn = rnn(options.embed, options.hidden, batch_first=True, bidirectional=True)

    def forward(self, x: Tensor, pad: Tensor) -> dict[str, Tensor]:
        lengths = (~pad).sum(1).clamp(min=1).cpu()
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        states, _ = pad_packed_sequence(self.rnn(packed)[0], batch_first=True, total_length=x.size(1))
        return {"enc": states, "enc_pad": pad}
