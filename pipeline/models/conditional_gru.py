"""The conditional GRU of dl4mt-tutorial session 2 and Nematus (werlen2018 A.3; zhang2018's RNNsearch*, eq. 13):
s'_t = GRU_1(E y_{t-1}, s_{t-1}); c_t = attention(s'_t, H); s_t = GRU_2(c_t, s'_t)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pipeline.models.additive_attention import AdditiveAttention


def gru_step(input_gates: Tensor, h: Tensor, cell: nn.GRUCell) -> Tensor:
    """One GRU update from precomputed input projections: input_gates [B,3h] = W_ih x + b_ih, h [B,h] -> [B,h].

    The candidate is tanh(W x + r * (U h + b)), as dl4mt's code (and cuDNN) computes it; the new state is
    z * h + (1 - z) * candidate (werlen2018 A.1)."""
    hidden_gates = F.linear(h, cell.weight_hh, cell.bias_hh)
    r_x, z_x, n_x = input_gates.chunk(3, dim=-1)
    r_h, z_h, n_h = hidden_gates.chunk(3, dim=-1)
    r, z = torch.sigmoid(r_x + r_h), torch.sigmoid(z_x + z_h)
    candidate = torch.tanh(n_x + r * n_h)
    return candidate + z * (h - candidate)


class ConditionalGRU(nn.Module):
    """GRU_1 on the previous target embedding, additive attention queried by its state, GRU_2 on the context."""

    def __init__(self, embed_dim: int, hidden_dim: int, context_dim: int, attention_dim: int):
        super().__init__()
        self.gru1 = nn.GRUCell(embed_dim, hidden_dim)
        self.attention = AdditiveAttention(hidden_dim, context_dim, attention_dim)
        self.gru2 = nn.GRUCell(context_dim, hidden_dim)

    def input_gates(self, y: Tensor) -> Tensor:
        """GRU_1's input projections of every step at once: y [B,T,e] -> [B,T,3h]."""
        return F.linear(y, self.gru1.weight_ih, self.gru1.bias_ih)

    def forward(self, gates_t: Tensor, s_prev: Tensor, keys: Tensor, values: Tensor,
                pad: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """gates_t [B,3h] (input_gates at step t), s_prev [B,h], keys [B,S,a] (projected), values [B,S,c],
        pad [B,S] -> s_t [B,h], c_t [B,c], attention weights [B,S]."""
        s_mid = gru_step(gates_t, s_prev, self.gru1)  # s'_t
        context, weights = self.attention(s_mid, keys, values, pad)  # c_t, queried by s'_t
        s_t = gru_step(F.linear(context, self.gru2.weight_ih, self.gru2.bias_ih), s_mid, self.gru2)
        return s_t, context, weights
