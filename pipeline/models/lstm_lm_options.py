"""Options of the LSTM language model (lstm_lm.py; werlen2018 sec. 7.3, Table 6): the "none" encoder, which ignores
the source, and the "lstm" decoder, an LSTM language model with werlen2018's mean or self-attentive residual
connections; torch-free."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from pipeline.models.options import (DecoderOptions, EncoderOptions, register_decoder_options,
                                     register_encoder_options, require)

# Width of the source embedding table EncoderDecoder always creates (src_vocab x NONE_EMBED_DIM parameters, never
# used, so their gradient stays None). Our choice: 1, the narrowest width the model-wide "xavier" initialisation
# accepts (it draws embeddings from N(0, e^-1/2), undefined for e = 0).
NONE_EMBED_DIM = 1


@register_encoder_options("none")
@dataclass
class NoneEncoderOptions(EncoderOptions):
    """No encoder: the source is ignored and the memory is empty (a language model's "encoder"). It writes no memory
    entry, so it pairs only with decoders that read none (the "lstm" language model), and the "lstm" decoder only
    with it: options.validate_model names the mismatch otherwise."""

    writes: ClassVar[tuple[str, ...]] = ()

    @property
    def embed_dim(self) -> int:
        return NONE_EMBED_DIM

    @property
    def memory_dims(self) -> dict[str, int]:
        return {}


@register_decoder_options("lstm")
@dataclass
class LSTMLMDecoderOptions(DecoderOptions):
    """An LSTM language model (Daniluk et al. 2016's baseline, as werlen2018 7.3 uses it) over the target side only:
    y_0 = 0 (not the BOS embedding; as the cgru decoder, so that d_1 = 0), h_t = LSTM^layers(y_{t-1}, h_{t-1}) from
    zero states, and the features fed to the output projection (V x hidden):

    summary: "none" h_t itself (Daniluk's LSTM predicts from h_t) | "mean" tanh(W_h h_t + W_d d_t) with d_t the mean
    of y_0..y_{t-1} (eq. 9) | "attention" the same with d_t their self-attentive summary (eq. 10-11), scored by
    `summary_score`: "content" v^T tanh(W_y y_i + b) (eq. 13) or "content_scope" v^T tanh(W_y y_i + b + W_s h_t)
    (eq. 12). The residual readout is eq. 8 without the context term (our choice; it also is the form of Daniluk's
    attention LM, h*_t = tanh(W^r r_t + W^x h_t), with r_t over the previous words instead of the previous states).
    dropout: on the LSTM input embeddings, between LSTM layers and on the features (the non-recurrent connections,
    Zaremba et al. 2014; werlen2018 and Daniluk do not give theirs: our choice, off by default).
    Defaults: werlen2018 Table 6 (d = 296 for the residual variants; embeddings of the hidden size, as Daniluk's).
    """

    reads: ClassVar[tuple[str, ...]] = ()

    embed: int = 296
    hidden: int = 296
    layers: int = 1
    dropout: float = 0.0
    summary: Literal["none", "mean", "attention"] = "none"
    summary_score: Literal["content", "content_scope"] = "content"

    @property
    def embed_dim(self) -> int:
        return self.embed

    @property
    def output_dim(self) -> int:
        return self.hidden  # the LSTM state size, as Daniluk's softmax over h_t (W in R^{V x d})

    def __post_init__(self) -> None:
        for key in ("embed", "hidden", "layers"):
            require(getattr(self, key) >= 1, key, "a positive integer", getattr(self, key))
        require(0.0 <= self.dropout < 1.0, "dropout", "a probability in [0, 1)", self.dropout)
        require(self.summary == "attention" or self.summary_score == "content", "summary_score",
                "'content' unless summary is 'attention' (only the self-attentive summary is scored)",
                self.summary_score)
