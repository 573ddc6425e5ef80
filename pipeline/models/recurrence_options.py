"""hao2019's options: the recurrence encoder (BiARN / BiRNN, sec. 3.1) and its integration into the decoder
(sec. 3.2-3.3), each on top of the Transformer side it extends; torch-free."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from pipeline.models.options import register_decoder_options, register_encoder_options, require
from pipeline.models.transformer_options import TransformerDecoderOptions, TransformerEncoderOptions


@register_encoder_options("recurrence")
@dataclass
class RecurrenceEncoderOptions(TransformerEncoderOptions):
    """The Transformer encoder plus the recurrence encoder; memory adds {"rec", "rec_pad"}."""

    writes: ClassVar[tuple[str, ...]] = ("enc", "rec")

    rec_type: Literal["biarn", "birnn"] = "biarn"
    rec_layers: int = 1
    rec_steps: int = 8  # ARN steps T (sec. 5.2: 8); 0 means T = J, the source length

    @property
    def memory_dims(self) -> dict[str, int]:
        return {"enc": self.d_model, "rec": self.d_model}

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.rec_layers >= 1, "rec_layers", "a positive integer", self.rec_layers)
        require(self.rec_steps >= 0, "rec_steps", "an integer >= 0 (0: as many steps as source words)",
                self.rec_steps)


@register_decoder_options("recurrence")
@dataclass
class RecurrenceDecoderOptions(TransformerDecoderOptions):
    """The Transformer decoder whose top (or every) layer also attends the recurrence encoder's "rec"."""

    reads: ClassVar[tuple[str, ...]] = ("enc", "rec")

    integration: Literal["stack", "gated"] = "stack"  # sec. 3.2: stack (eq. 18-19) or gated sum (eq. 14-17)
    integrate_into: Literal["top", "all"] = "top"  # sec. 3.3: short-cut into the top layer, or every layer
