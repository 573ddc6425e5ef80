"""zeng2021's options of input-agnostic self-attention (RAN, Syn-R, HC-SA; ran.py), torch-free.

They sit on each Transformer side that can host the patterns (transformer_options.py); the side's own option
`enc_self_attn` / `dec_self_attn` picks the kind.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pipeline.models.options import require

SELF_ATTENTION_KINDS = ("dot", "ran", "hcsa", "synr")
TABLE_KINDS = ("ran", "synr")  # kinds reading learnt [h,M,M] tables: sequences longer than M are refused


@dataclass
class PatternOptions:
    """zeng2021 3.1 and Tables 2-3: matrix size, attention dropout and the RAN ablations."""

    ran_max_len: int = 256  # M: RAN / Syn-R matrices are [heads, M, M]; longer sentences are refused
    # zeng2021 3.1: "As for RANs, we set the dropout of attention as 0.2" (not En-Fr). The authors' toolkit
    # (lemon0830/RAN, thseq/models/transformer/encoder.py and decoder.py) passes its one --attention-dropout to
    # every attention module: encoder self-attention, decoder self-attention AND encoder-decoder attention, on the
    # softmax weights, whatever the module's type. "all" does that in a model with a pattern side on either side
    # (RAN-E's dot-product decoder too); "patterns" applies it to the pattern self-attention only (the others keep
    # attention_dropout). A model without patterns (TransF) never uses it.
    ran_attention_dropout: float = 0.0
    ran_attention_dropout_scope: Literal["all", "patterns"] = "all"
    ran_fixed: bool = False  # Table 3 "fixed": A_0 frozen at its random initialisation
    ran_transition: Literal["ln_res", "plain"] = "ln_res"  # eq. 3-4, or Table 3 "w/o LN&RES": tanh(W A + b)

    def check_patterns(self) -> None:
        """PipelineError naming the option of an out-of-range value."""
        require(self.ran_max_len >= 1, "ran_max_len", "a positive integer", self.ran_max_len)
        require(0.0 <= self.ran_attention_dropout < 1.0, "ran_attention_dropout", "a probability in [0, 1)",
                self.ran_attention_dropout)
