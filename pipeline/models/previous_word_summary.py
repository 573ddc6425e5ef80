"""werlen2018's summaries of the previous target words (sec. 4, eq. 9-13), shared by the conditional-GRU decoder and
the LSTM language model: the mean residual connection and the self-attentive residual connection, over
y_0..y_{t-1} with y_0 a zero vector (so that d_1 = 0)."""
from __future__ import annotations

import torch
from torch import Tensor, nn

NEG = torch.finfo(torch.float32).min


def zero_first(y: Tensor, position: int = 0) -> Tensor:
    """y [B,T,e] whose first position is absolute `position`, with the input at position 0 (BOS) replaced by the
    zero vector y_0 (dl4mt shifts the target embeddings right and puts zeros first)."""
    return y * (torch.arange(position, position + y.size(1), device=y.device) > 0).to(y.dtype)[None, :, None]


class PreviousWordSummary(nn.Module):
    """d_t, the self-attentive summary of the previous target words y_0..y_{t-1} (eq. 10-13)."""

    def __init__(self, embed_dim: int, hidden_dim: int, scope: bool):
        super().__init__()
        self.word_proj = nn.Linear(embed_dim, embed_dim)  # W_y (+ b, dl4mt's b_prev)
        self.state_proj = nn.Linear(hidden_dim, embed_dim, bias=False) if scope else None  # W_s (eq. 12)
        self.score = nn.Linear(embed_dim, 1, bias=False)  # v

    def weights(self, y: Tensor, s: Tensor | None = None) -> Tensor:
        """y [B,T,e] (y_0 first), s [B,T,h] (content+scope) -> alpha [B,T,T]: row p weighs y_0..y_p, so that
        position p (predicting y_{p+1}) summarises every word before the one it predicts."""
        keys = self.word_proj(y)  # [B,T,e]
        if self.state_proj is None:
            scores = self.score(torch.tanh(keys)).squeeze(-1).unsqueeze(1).expand(-1, y.size(1), -1)  # eq. 13
        else:
            scores = self.score(torch.tanh(keys.unsqueeze(1) + self.state_proj(s).unsqueeze(2))).squeeze(-1)  # eq. 12
        t = y.size(1)
        future = torch.ones(t, t, dtype=torch.bool, device=y.device).triu(1)
        return torch.softmax(scores.float().masked_fill(future, NEG), dim=-1).to(y.dtype)  # eq. 11

    def forward(self, y: Tensor, s: Tensor | None = None) -> Tensor:
        """y [B,T,e], s [B,T,h] -> d [B,T,e], d at position p = sum_{i <= p} alpha_pi y_i (eq. 10)."""
        return self.weights(y, s) @ y

    def step(self, keys: Tensor, y: Tensor, s: Tensor) -> Tensor:
        """One position: keys [B,t,e] = W_y y_i + b of y_0..y_{t-1}, y [B,t,e], s [B,h] -> d_t [B,e]."""
        pre = keys if self.state_proj is None else keys + self.state_proj(s).unsqueeze(1)
        alpha = torch.softmax(self.score(torch.tanh(pre)).squeeze(-1).float(), dim=-1).to(y.dtype)
        return torch.bmm(alpha.unsqueeze(1), y).squeeze(1)


def summarise(kind: str, attention: PreviousWordSummary | None, y: Tensor, s: Tensor) -> Tensor | None:
    """d for every position: y [B,T,e] (y_0 = 0), s [B,T,h] -> [B,T,e] for kind "mean" (eq. 9 over y_0..y_{t-1};
    y_0 = 0 counts) or "attention" (eq. 10-13); None for any other kind."""
    if kind == "mean":
        count = torch.arange(1, y.size(1) + 1, device=y.device, dtype=y.dtype)[None, :, None]
        return y.cumsum(1) / count
    if kind == "attention":
        return attention(y, s)
    return None


def summarise_step(kind: str, attention: PreviousWordSummary | None, y: Tensor, position: int, s: Tensor,
                   state: dict[str, Tensor]) -> Tensor | None:
    """d_t of one step: y [B,1,e] the input at absolute `position` (y_0 = 0), s [B,h]; keeps "word_sum" [B,e]
    (mean) or "words", "word_keys" [B,t,e] (attention) in the flat, batch-first `state` (updated in place)."""
    if kind == "mean":
        state["word_sum"] = y[:, 0] if "word_sum" not in state else state["word_sum"] + y[:, 0]
        return state["word_sum"] / (position + 1)
    if kind == "attention":
        key = attention.word_proj(y)
        state["words"] = y if "words" not in state else torch.cat([state["words"], y], 1)
        state["word_keys"] = key if "word_keys" not in state else torch.cat([state["word_keys"], key], 1)
        return attention.step(state["word_keys"], state["words"], s)
    return None
