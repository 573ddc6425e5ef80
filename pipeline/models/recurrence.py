"""hao2019: a Transformer with an additional recurrence encoder (BiARN or BiRNN, sec. 3.1) read by the decoder
(sec. 3.2-3.3): encoder "recurrence" (the self-attention encoder plus the recurrence encoder) and decoder
"recurrence" (the Transformer decoder whose top or every layer also attends the recurrence states)."""
from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from pipeline.models.layers import Dropout, FeedForward, MultiHeadAttention, masked_mean
from pipeline.models.recurrence_options import RecurrenceDecoderOptions, RecurrenceEncoderOptions
from pipeline.models.seq2seq import register_decoder, register_encoder
from pipeline.models.transformer import DecoderLayer, TransformerDecoder, TransformerEncoder, static_cache


def reverse_padded(x: Tensor, pad: Tensor) -> Tensor:
    """Reverse each sequence within its own length: x [B,L,d], pad [B,L] -> [B,L,d] (padding stays in place)."""
    length = (~pad).sum(1, keepdim=True)  # [B,1]
    pos = torch.arange(x.size(1), device=x.device).unsqueeze(0)  # [1,L]
    index = torch.where(pos < length, length - 1 - pos, pos)
    return x.gather(1, index.unsqueeze(-1).expand_as(x))


class ARN(nn.Module):
    """One direction of the attentive recurrent network (eq. 12-13): T GRU steps over attention contexts of H."""

    def __init__(self, d_model: int, heads: int, attention_dropout: float):
        super().__init__()
        self.init_proj = nn.Linear(d_model, d_model)
        self.attn = MultiHeadAttention(d_model, heads, attention_dropout)
        self.cell = nn.GRUCell(d_model, d_model)

    def forward(self, h_in: Tensor, pad: Tensor, steps: int) -> Tensor:
        """h_in [B,L,d], pad [B,L] -> states h_1..h_T [B,T,d]."""
        h = torch.tanh(self.init_proj(masked_mean(h_in, pad)))  # h_0 = tanh(W mean(H)) (our choice)
        cache: dict[str, Tensor] = {}  # keys/values of H projected once for all steps
        states = []
        for _ in range(steps):
            c = self.attn(h.unsqueeze(1), h_in, pad, cache=cache, name="H").squeeze(1)  # eq. 13, query h_{t-1}
            h = self.cell(c, h)  # eq. 12, f = GRU cell with c_t as input (our choice)
            states.append(h)
        return torch.stack(states, dim=1)


class BiARN(nn.Module):
    """Bidirectional ARN: forward and (separately parameterised) backward ARN, the backward outputs reversed,
    concatenated with the forward ones and projected to d_model (our choice)."""

    def __init__(self, d_model: int, heads: int, steps: int, attention_dropout: float):
        super().__init__()
        self.steps = steps
        self.fwd = ARN(d_model, heads, attention_dropout)
        self.bwd = ARN(d_model, heads, attention_dropout)
        self.proj = nn.Linear(2 * d_model, d_model)

    def forward(self, h_in: Tensor, pad: Tensor) -> tuple[Tensor, Tensor]:
        """h_in [B,L,d], pad [B,L] -> states [B,T,d] and their padding [B,T] (T = steps, or L when steps = 0)."""
        if self.steps:
            out_pad = torch.zeros(h_in.size(0), self.steps, dtype=torch.bool, device=h_in.device)
        else:  # T = J: sentence b keeps its own J_b states
            out_pad = pad
        steps = out_pad.size(1)
        fwd = self.fwd(h_in, pad, steps)
        bwd = reverse_padded(self.bwd(h_in, pad, steps), out_pad)
        return self.proj(torch.cat([fwd, bwd], dim=-1)), out_pad


class BiRNN(nn.Module):
    """Bidirectional GRU over the layer input (eq. 9-11), h_0 = masked mean of the input; [fwd; bwd] projected
    to d_model (our choice)."""

    def __init__(self, d_model: int):
        super().__init__()
        self.rnn = nn.GRU(d_model, d_model, batch_first=True, bidirectional=True)
        self.proj = nn.Linear(2 * d_model, d_model)

    def forward(self, h_in: Tensor, pad: Tensor) -> tuple[Tensor, Tensor]:
        """h_in [B,J,d], pad [B,J] -> states [B,J,d] and pad [B,J]; padding never enters the recurrence."""
        lengths = (~pad).sum(1).clamp(min=1).cpu()
        h0 = masked_mean(h_in, pad).unsqueeze(0).expand(2, -1, -1).contiguous()  # [2,B,d], both directions
        packed = pack_padded_sequence(h_in, lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.rnn(packed, h0)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=h_in.size(1))
        return self.proj(out), pad


class RecurrenceLayer(nn.Module):
    """One recurrence-encoder layer (eq. 7-8): C = LN(REC(H) + H), H' = LN(FFN(C) + C).

    The bottom layer has no residual on REC (its output may differ in length from its input)."""

    def __init__(self, o: RecurrenceEncoderOptions, residual: bool):
        super().__init__()
        if o.rec_type == "biarn":
            self.rec = BiARN(o.d_model, o.heads, o.rec_steps, o.attention_dropout)
        else:
            self.rec = BiRNN(o.d_model)
        self.residual = residual
        self.rec_norm = nn.LayerNorm(o.d_model)
        self.ffn = FeedForward(o.d_model, o.ffn_dim)
        self.ffn_norm = nn.LayerNorm(o.d_model)
        self.drop = Dropout(o.dropout)

    def forward(self, h: Tensor, pad: Tensor) -> tuple[Tensor, Tensor]:
        """h [B,L,d], pad [B,L] -> [B,T,d], [B,T]."""
        r, out_pad = self.rec(h, pad)
        c = self.rec_norm(self.drop(r) + h if self.residual else self.drop(r))  # eq. 7
        return self.ffn_norm(c + self.drop(self.ffn(c))), out_pad  # eq. 8


class RecurrenceStack(nn.Module):
    """Stack of recurrence layers over the source word embeddings: [B,J,d] -> [B,T,d]."""

    def __init__(self, o: RecurrenceEncoderOptions):
        super().__init__()
        self.layers = nn.ModuleList(RecurrenceLayer(o, residual=i > 0) for i in range(o.rec_layers))

    def forward(self, x: Tensor, pad: Tensor) -> tuple[Tensor, Tensor]:
        """x [B,J,d], pad [B,J] -> states H_r [B,T,d] and their padding [B,T]."""
        for layer in self.layers:
            x, pad = layer(x, pad)
        return x, pad


class StackDecoderLayer(DecoderLayer):
    """Decoder layer with the recurrence attention stacked on the encoder attention (eq. 4, 5, 18, 19)."""

    def __init__(self, o: RecurrenceDecoderOptions):
        super().__init__(o)
        self.rec_attn = MultiHeadAttention(o.d_model, o.heads, o.attention_dropout)
        self.rec_norm = nn.LayerNorm(o.d_model)

    def forward(self, h: Tensor, memory: dict[str, Tensor], cache: dict | None = None, name: str = "") -> Tensor:
        """h [B,T,d] -> [B,T,d]; memory also holds "rec" [B,T_r,d] and "rec_pad" [B,T_r]."""
        c = self.self_sublayer(h, cache, name)
        d = self.enc_sublayer(c, memory, cache, name)
        att = self.rec_attn(d, memory["rec"], memory["rec_pad"], cache=static_cache(memory, cache),
                            name=f"{name}.rec")  # query D
        r = self.rec_norm(d + self.drop(att))  # eq. 18
        return self.ffn_sublayer(r)  # eq. 19


class GatedDecoderLayer(DecoderLayer):
    """Decoder layer fusing encoder and recurrence attention by a gated sum (eq. 4, 5, 14-17)."""

    def __init__(self, o: RecurrenceDecoderOptions):
        super().__init__(o)
        self.rec_attn = MultiHeadAttention(o.d_model, o.heads, o.attention_dropout)
        self.rec_norm = nn.LayerNorm(o.d_model)
        self.gate = nn.Linear(2 * o.d_model, o.d_model)

    def forward(self, h: Tensor, memory: dict[str, Tensor], cache: dict | None = None, name: str = "") -> Tensor:
        """h [B,T,d] -> [B,T,d]; memory also holds "rec" [B,T_r,d] and "rec_pad" [B,T_r]."""
        c = self.self_sublayer(h, cache, name)
        d = self.enc_sublayer(c, memory, cache, name)
        att = self.rec_attn(c, memory["rec"], memory["rec_pad"], cache=static_cache(memory, cache),
                            name=f"{name}.rec")  # query C
        r = self.rec_norm(c + self.drop(att))  # eq. 14
        lam = torch.sigmoid(self.gate(torch.cat([d, r], dim=-1)))  # eq. 17, element-wise (our choice)
        return self.ffn_sublayer(lam * d + (1.0 - lam) * r)  # eq. 15-16


@register_encoder("recurrence")
class RecurrenceEncoder(TransformerEncoder):
    """The self-attention encoder and the recurrence encoder over the same source words: memory "enc", "enc_pad"
    and "rec" [B,T,d], "rec_pad" [B,T]."""

    def __init__(self, options: RecurrenceEncoderOptions):
        super().__init__(options)
        self.rec = RecurrenceStack(options)

    def forward(self, x: Tensor, pad: Tensor) -> dict[str, Tensor]:
        """x [B,J,d] (lookups), pad [B,J] -> memory."""
        memory = super().forward(x, pad)
        # sec. 3.1, footnote 1 and Figure 2: the recurrence encoder's bottom input is the word embeddings E_in; the
        # positional encoding is added on the self-attention encoder's path only. Scaled by sqrt(d) and dropped out
        # like the self-attention input (our choice).
        memory["rec"], memory["rec_pad"] = self.rec(self.input(x, positions=False), pad)
        return memory


@register_decoder("recurrence")
class RecurrenceDecoder(TransformerDecoder):
    """Transformer decoder whose top layer (short-cut, sec. 3.3) or every layer also attends memory "rec"."""

    def make_layer(self, index: int) -> nn.Module:
        o = self.options
        if o.integrate_into == "all" or index == o.dec_layers - 1:
            return StackDecoderLayer(o) if o.integration == "stack" else GatedDecoderLayer(o)
        return DecoderLayer(o)
