"""zhang2018's RNMT encoder: GRUs and relation network layers (RNL) stacked alternately with residual connections
and dense concatenation (sec. 3, eq. 6-12, Figure 2; 5.2 "RNMT"), in the released code's order:

e = E x; h1 = fwdGRU(e) + e; h2 = RNL(L0[e; h1]) + L0[e; h1]; h3 = bwdGRU(L1[e; h1; h2]) + L1[...];
h4 = RNL(L2[e; h1; h2; h3]) + L2[...]; H = L3[e; h1; h2; h3; h4]      (eq. 11 residuals, eq. 12 plain linear maps)

Padding never influences a real position, in training as in evaluation (our choices, where the released code lets it):
the convolutions see zeros at padding, BatchNorm's batch statistics count the real positions only, and graph
propagation averages over the real partners j only (the released code averages over the padding too).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from pipeline.models.relation_encoder_options import RelationEncoderOptions
from pipeline.models.seq2seq import Encoder, register_encoder

SLOPE = 0.1  # LeakyReLU's negative slope, every nonlinearity of the RNL (sec. 3)


def reverse_padded(x: Tensor, lengths: Tensor) -> Tensor:
    """Each sentence's real positions in reverse order, padding left in place: x [B,L,d], lengths [B] -> [B,L,d]
    (its own inverse)."""
    pos = torch.arange(x.size(1), device=x.device).expand(x.size(0), -1)
    lengths = lengths.to(x.device)[:, None]
    index = torch.where(pos < lengths, lengths - 1 - pos, pos)
    return x.gather(1, index.unsqueeze(-1).expand_as(x))


class DirectionalGRU(nn.Module):
    """A forward or backward GRU from a zero state that never reads padding: [B,L,d] -> [B,L,d] (zeros at padding)."""

    def __init__(self, dim: int, reverse: bool):
        super().__init__()
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.reverse = reverse

    def forward(self, x: Tensor, pad: Tensor) -> Tensor:
        lengths = (~pad).sum(1).clamp(min=1)
        if self.reverse:
            x = reverse_padded(x, lengths)
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = pad_packed_sequence(self.rnn(packed)[0], batch_first=True, total_length=x.size(1))
        return reverse_padded(out, lengths) if self.reverse else out


class MaskedBatchNorm(nn.BatchNorm1d):
    """BatchNorm over channels whose batch statistics count the non-padding positions only (our choice), so that a
    sentence's real positions do not depend on how much padding the batch has: x [B,L,C], pad [B,L] -> [B,L,C].

    Running statistics as torch's BatchNorm1d (momentum 0.1, unbiased variance); evaluation uses them."""

    def forward(self, x: Tensor, pad: Tensor) -> Tensor:  # type: ignore[override]
        if self.training:
            real = x[~pad].float()  # [N,C]
            mean, var = real.mean(0), real.var(0, unbiased=False)
            with torch.no_grad():
                n = real.size(0)
                self.num_batches_tracked += 1
                self.running_mean.lerp_(mean, self.momentum)
                if n > 1:
                    self.running_var.lerp_(var * n / (n - 1), self.momentum)
        else:
            mean, var = self.running_mean, self.running_var
        out = (x.float() - mean) * torch.rsqrt(var + self.eps) * self.weight + self.bias
        return out.to(x.dtype)


def mlp(sizes: list[int]) -> nn.Sequential:
    """Linear maps sizes[0] -> sizes[1] -> ..., each followed by LeakyReLU(0.1) (eq. 8, 10)."""
    layers: list[nn.Module] = []
    for n_in, n_out in zip(sizes, sizes[1:]):
        layers += [nn.Linear(n_in, n_out), nn.LeakyReLU(SLOPE)]
    return nn.Sequential(*layers)


class GraphPropagation(nn.Module):
    """r_i = mean over the real j of MLP([c_i; c_j]) (eq. 8-9): c [B,L,C], pad [B,L] -> r [B,L,m]."""

    def __init__(self, channels: int, hidden: int, layers: int):
        super().__init__()
        self.pair = nn.Linear(2 * channels, hidden)  # first layer, W_gp [c_i; c_j] + b_gp
        self.rest = mlp([hidden] * layers)  # the other layers - 1 of the MLP

    def pairs(self, c: Tensor) -> Tensor:
        """r_ij for every pair: c [B,L,C] -> [B,L(i),L(j),m]. The first layer's W [c_i; c_j] is computed as
        W_left c_i + W_right c_j (one matrix product per word, not per pair)."""
        width = c.size(-1)
        left = F.linear(c, self.pair.weight[:, :width], self.pair.bias)  # [B,L,m]
        right = F.linear(c, self.pair.weight[:, width:])
        return self.rest(F.leaky_relu(left.unsqueeze(2) + right.unsqueeze(1), SLOPE))  # eq. 8

    def forward(self, c: Tensor, pad: Tensor) -> Tensor:
        keep = (~pad).to(c.dtype)  # [B,L]: real partners j
        summed = torch.einsum("bijm,bj->bim", self.pairs(c), keep)
        return summed / keep.sum(1).clamp(min=1.0)[:, None, None]  # eq. 9, 1/l_s over the real words only


class RelationLayer(nn.Module):
    """CNN layer (eq. 7), GP layer (eq. 8-9), MLP layer (eq. 10): h [B,L,d], pad [B,L] -> o [B,L,d]."""

    def __init__(self, dim: int, widths: tuple[int, ...], channels: tuple[int, ...], hidden: int, gp_layers: int,
                 mlp_layers: int):
        super().__init__()
        # side by side, concatenated (the released code, and IMPLEMENTATION-NOTES' 768 = 2 x (128 + 256) GP inputs),
        # although sec. 5.2 says "stacked"
        self.convs = nn.ModuleList(nn.Conv1d(dim, n, w, padding=w // 2) for w, n in zip(widths, channels))
        self.norms = nn.ModuleList(MaskedBatchNorm(n) for n in channels)  # BN with learnable parameters (5.2)
        self.gp = GraphPropagation(sum(channels), hidden, gp_layers)
        self.mlp = mlp([hidden] * mlp_layers + [dim])  # the last layer maps back to d (eq. 10)

    def cnn(self, h: Tensor, pad: Tensor) -> Tensor:
        """c_i = LeakyReLU(BN(W_cnn h^k_i + b_cnn)) per width, concatenated: [B,L,d] -> [B,L,sum(channels)]."""
        x = h.masked_fill(pad.unsqueeze(-1), 0.0).transpose(1, 2)  # zeros at padding, as beyond the sentence
        return torch.cat([F.leaky_relu(norm(conv(x).transpose(1, 2), pad), SLOPE)
                          for conv, norm in zip(self.convs, self.norms)], dim=-1)  # eq. 7

    def forward(self, h: Tensor, pad: Tensor) -> Tensor:
        return self.mlp(self.gp(self.cnn(h, pad), pad))


@register_encoder("rnmt")
class RelationEncoder(Encoder):
    """Embedded source [B,S,d] -> memory {"enc": [B,S,d], "enc_pad": [B,S]} (zeros at padding)."""

    def __init__(self, options: RelationEncoderOptions):
        super().__init__(options)
        o, d = options, options.hidden

        def rnl() -> RelationLayer:
            return RelationLayer(d, o.rn_widths, o.rn_channels, o.rn_hidden, o.rn_gp_layers, o.rn_mlp_layers)

        # "alternatively stacked GRUs and RNLs, in which the two GRU layers are in opposite direction" (5.2)
        self.layers = nn.ModuleList([DirectionalGRU(d, reverse=False), rnl(), DirectionalGRU(d, reverse=True), rnl()])
        self.dense = nn.ModuleList(nn.Linear((k + 2) * d, d) for k in range(len(self.layers)))  # W_dc (eq. 12)

    def forward(self, x: Tensor, pad: Tensor) -> dict[str, Tensor]:
        outputs, h_in = [x], x  # the embeddings enter every dense concatenation
        for layer, dense in zip(self.layers, self.dense):
            outputs.append(h_in + layer(h_in, pad))  # eq. 11: h^l = h^l_in + h^l_out
            h_in = dense(torch.cat(outputs, dim=-1))  # eq. 12: h^l_dc = W_dc [e; h^1; ...; h^l] + b_dc
        return {"enc": h_in.masked_fill(pad.unsqueeze(-1), 0.0), "enc_pad": pad}
