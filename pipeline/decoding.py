"""The decoding settings of a system (torch-free): params.yaml's `decoding:` with a system's own overrides."""
from __future__ import annotations

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

    def search(self) -> dict:
        """The keyword arguments of pipeline.search's beam search (and translate_nbest's) these settings give."""
        return {"beam": self.beam, "length": self.length, "alpha": self.length_penalty,
                "max_len_a": self.max_len_a, "max_len_b": self.max_len_b}
