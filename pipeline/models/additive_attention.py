"""Additive (Bahdanau et al. 2015) attention: e_i = v^T tanh(W_q q + W_k k_i + b), softmax over the non-padding
keys, context = sum_i alpha_i value_i (werlen2018 A.2, eq. 5-7; zhang2018 eq. 3-5; shu2016 sec. 2)."""
from __future__ import annotations

import torch
from torch import Tensor, nn


class AdditiveAttention(nn.Module):
    """Scores keys against one query per sentence; the keys' projection can be computed once per source (cached).

    Sizes as in dl4mt's gru_cond (W_comb_att, Wc_att + b_att, U_att + c_tt): query q, keys k, hidden a.
    """

    def __init__(self, query_dim: int, key_dim: int, hidden_dim: int):
        super().__init__()
        self.query_proj = nn.Linear(query_dim, hidden_dim, bias=False)
        self.key_proj = nn.Linear(key_dim, hidden_dim)
        self.score = nn.Linear(hidden_dim, 1)

    def project_keys(self, keys: Tensor) -> Tensor:
        """keys [B,S,k] -> W_k k + b [B,S,a]: fixed for a whole decoding, so computed once."""
        return self.key_proj(keys)

    def forward(self, query: Tensor, projected_keys: Tensor, values: Tensor, pad: Tensor) -> tuple[Tensor, Tensor]:
        """query [B,q], projected_keys [B,S,a], values [B,S,k], pad [B,S] True at padding -> context [B,k] and the
        weights [B,S] (zero at padding)."""
        scores = self.score(torch.tanh(projected_keys + self.query_proj(query).unsqueeze(1))).squeeze(-1)  # eq. 7
        scores = scores.float().masked_fill(pad, torch.finfo(torch.float32).min)
        weights = torch.softmax(scores, dim=-1).to(values.dtype)  # eq. 6
        return torch.bmm(weights.unsqueeze(1), values).squeeze(1), weights  # eq. 5
