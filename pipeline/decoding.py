"""The decoding settings of a system (torch-free): params.yaml's `decoding:` with a system's own overrides."""
from __future__ import annotations

import math
from dataclasses import dataclass

from pipeline.settings import require

LENGTH_MODES = ("penalty", "normalize", "none")


@dataclass(frozen=True)
class Decoding:
    """Beam search settings: beam width, length treatment (penalty: GNMT's with alpha = length_penalty | normalize:
    score / length | none), sentences per batch, the output length limit max_len_a * source length + max_len_b, and
    how many hypotheses to keep per sentence."""
    beam: int = 4
    length: str = "penalty"
    length_penalty: float = 0.6
    batch_size: int = 100
    max_len_a: float = 1.2
    max_len_b: int = 10
    nbest: int = 1

    def check(self) -> None:
        require(self.length in LENGTH_MODES, "length", f"one of {', '.join(LENGTH_MODES)}", self.length)
        for name in ("beam", "batch_size", "nbest"):
            require(getattr(self, name) >= 1, name, "an integer >= 1", getattr(self, name))
        # each field on its own: params check a system's overrides without the shared settings
        # (pipeline/config/reader.py _decoding). GNMT's alpha (Wu et al. 2016) is >= 0: a negative one divides by
        # less the longer the output, favouring ever shorter hypotheses.
        require(math.isfinite(self.length_penalty) and self.length_penalty >= 0, "length_penalty",
                "a finite number >= 0 (GNMT's alpha; 0: no penalty)", self.length_penalty)
        limit = "the output length limit is max_len_a * source length + max_len_b"
        require(math.isfinite(self.max_len_a) and self.max_len_a >= 0, "max_len_a", f"a finite number >= 0 ({limit})",
                self.max_len_a)
        require(self.max_len_b >= 0, "max_len_b", f"an integer >= 0 ({limit})", self.max_len_b)

    def search(self) -> dict:
        """The keyword arguments of pipeline.beam_search's beam search (and translate_nbest's) these settings give."""
        return {"beam": self.beam, "length": self.length, "alpha": self.length_penalty,
                "max_len_a": self.max_len_a, "max_len_b": self.max_len_b}
