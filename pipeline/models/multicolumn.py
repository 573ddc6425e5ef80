"""Chen et al. (2018) multi-column encoder on Transformer-Base (hao2019 5.3, Table 4 "RNN Encoder"): an extra
bidirectional-GRU encoder over the same embedded source, combined column-wise with the self-attention encoder."""
from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from pipeline.models.layers import Dropout, FeedForward
from pipeline.models.multicolumn_options import MultiColumnEncoderOptions
from pipeline.models.seq2seq import register_encoder
from pipeline.models.transformer import TransformerEncoder


class RNNEncoderLayer(nn.Module):
    """Pre-norm sub-layers with residuals: h + Proj([fwd GRU; bwd GRU](LN(h))), then h + FFN(LN(h)).

    Each direction has d_model hidden units and starts from zeros (our choice); padding never enters (packed).
    """

    def __init__(self, o: MultiColumnEncoderOptions):
        super().__init__()
        self.rnn_norm = nn.LayerNorm(o.d_model)
        self.rnn = nn.GRU(o.d_model, o.d_model, batch_first=True, bidirectional=True)
        self.proj = nn.Linear(2 * o.d_model, o.d_model)
        self.ffn_norm = nn.LayerNorm(o.d_model)
        self.ffn = FeedForward(o.d_model, o.ffn_dim)
        self.drop = Dropout(o.dropout)

    def recurrence(self, x: Tensor, pad: Tensor) -> Tensor:
        """[fwd; bwd] GRU states over the real tokens: x [B,S,d], pad [B,S] -> [B,S,2d] (zeros at padding)."""
        lengths = (~pad).sum(1).clamp(min=1).cpu()
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.rnn(packed)
        return pad_packed_sequence(out, batch_first=True, total_length=x.size(1))[0]

    def forward(self, h: Tensor, pad: Tensor) -> Tensor:
        """h [B,S,d], pad [B,S] -> [B,S,d]."""
        h = h + self.drop(self.proj(self.recurrence(self.rnn_norm(h), pad)))
        return h + self.drop(self.ffn(self.ffn_norm(h)))


class RNNColumn(nn.Module):
    """Stack of `rnn_layers` RNN encoder layers and a final LayerNorm: [B,S,d] -> [B,S,d]."""

    def __init__(self, o: MultiColumnEncoderOptions):
        super().__init__()
        self.layers = nn.ModuleList(RNNEncoderLayer(o) for _ in range(o.rnn_layers))
        self.final_norm = nn.LayerNorm(o.d_model)

    def forward(self, x: Tensor, pad: Tensor) -> Tensor:
        """x [B,S,d] (embedded source), pad [B,S] -> [B,S,d]."""
        for layer in self.layers:
            x = layer(x, pad)
        return self.final_norm(x)


@register_encoder("multicolumn")
class MultiColumnEncoder(TransformerEncoder):
    """The self-attention and RNN columns over the same embedded source (sqrt(d)-scaled + positions, as today's
    inputs of both; our choice), merged: "enc" = Linear([SAN_out; RNN_out]) -> d_model (our choice)."""

    def __init__(self, options: MultiColumnEncoderOptions):
        super().__init__(options)
        self.rnn = RNNColumn(options)
        self.combine = nn.Linear(2 * options.d_model, options.d_model)

    def forward(self, x: Tensor, pad: Tensor) -> dict[str, Tensor]:
        """x [B,S,d] (lookups), pad [B,S] -> {"enc": [B,S,d], "enc_pad": [B,S]}."""
        h = self.embed(x)
        return {"enc": self.combine(torch.cat([self.stack(h, pad), self.rnn(h, pad)], dim=-1)), "enc_pad": pad}
