"""Options of the conditional-GRU decoder (cgru_decoder.py): dl4mt's decoder and werlen2018's variants of it,
torch-free."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pipeline.models.options import DecoderOptions, register_decoder_options, require


def check_attention_decoder(o) -> None:
    """The options every RNN decoder with additive attention has: embed, hidden, attention_dim, dropout."""
    for key in ("embed", "hidden"):
        require(getattr(o, key) >= 1, key, "a positive integer", getattr(o, key))
    require(o.attention_dim >= 0, "attention_dim", "an integer >= 0 (0: the context size)", o.attention_dim)
    require(0.0 <= o.dropout < 1.0, "dropout", "a probability in [0, 1)", o.dropout)


@register_decoder_options("cgru")
@dataclass
class CGRUDecoderOptions(DecoderOptions):
    """dl4mt's conditional GRU decoder with the readout tanh(W_s s_t + W_y r_t + W_c c_t) -> dropout (werlen2018
    A.3), where r_t is one of:

    summary: "previous" E[y_{t-1}] (the baseline) | "mean" the mean of y_0..y_{t-1} (mean residual connections,
    eq. 9) | "attention" their self-attentive summary (eq. 10-11) scored by `summary_score`: "content"
    v^T tanh(W_y y_i) (eq. 13) or "content_scope" v^T tanh(W_y y_i + W_s s_t) (eq. 12).
    state_attention: "none" | "memory" (Memory RNN, A.3.2: the recurrence reads an attention summary of the
    previous states instead of s_{t-1}) | "self" (Self-attentive RNN, A.3.3: that summary is a fourth readout term).
    readout: "tanh" (dl4mt, werlen2018) | "maxout" (zhang2018's RNNsearch*: the linear maps have 2 x embed units and
    adjacent pairs are max-pooled, Bahdanau et al. 2015 A.2.2).
    Defaults: werlen2018 6.2 (embeddings 500, hidden 1024, dropout 0.5 on the readout, tanh).
    """

    embed: int = 500
    hidden: int = 1024
    attention_dim: int = 0  # additive attention's hidden size; 0: the context size 2 x encoder hidden (dl4mt)
    dropout: float = 0.5  # on the readout only (dl4mt's use_dropout)
    summary: Literal["previous", "mean", "attention"] = "previous"
    summary_score: Literal["content", "content_scope"] = "content"
    state_attention: Literal["none", "memory", "self"] = "none"
    readout: Literal["tanh", "maxout"] = "tanh"

    @property
    def embed_dim(self) -> int:
        return self.embed

    @property
    def output_dim(self) -> int:
        return self.embed  # the readout has the embedding size (W_o in R^{V x e}, werlen2018 A.3)

    def __post_init__(self) -> None:
        check_attention_decoder(self)
        require(self.summary == "attention" or self.summary_score == "content", "summary_score",
                "'content' unless summary is 'attention' (only the self-attentive summary is scored)",
                self.summary_score)
        require(self.summary == "previous" or self.state_attention == "none", "state_attention",
                "'none' with a mean or attention summary (the paper's baselines keep E[y_{t-1}])",
                self.state_attention)
