"""Japanese word segmentation for scoring (BLEU/RIBES on ja, shu2016): janome with its bundled IPA dictionary.

WAT segments Japanese with KyTea (also Juman, MeCab) before BLEU and RIBES; KyTea's model cannot be had offline,
so our choice is janome (pure Python, dictionary inside the package, deterministic). Every whitespace character
is removed first: our Japanese is split into characters (pipeline.data.tokenize), and detokenize_lines(..., "ja")
joins CJK characters but leaves Latin runs spaced ("P C R を用いた"); the original spaces are lost either way,
so hypotheses and references are both scored without them ("PCR を 用い た").
"""
from __future__ import annotations

import functools
from importlib.metadata import version

from pipeline.errors import PipelineError

SEGMENTER = f"janome {version('janome')}"


@functools.lru_cache(maxsize=1)
def _tokenizer():
    """One janome tokenizer per process (loading the dictionary takes a fraction of a second)."""
    from janome.tokenizer import Tokenizer
    return Tokenizer(wakati=True)


def _segment(line: str) -> str:
    """The line without whitespace, cut into janome's words, joined by single spaces."""
    text = "".join(line.split())
    return " ".join(word for word in _tokenizer().tokenize(text, wakati=True) if word.strip())


def segment_ja(lines: list[str]) -> list[str]:
    """Each Japanese line as janome's words separated by single spaces (one output line per input line)."""
    for number, line in enumerate(lines, start=1):
        if not isinstance(line, str) or "\n" in line:
            raise PipelineError(f"line {number}: expected one sentence as a string without line breaks, "
                                f"got {line!r}")
    return [_segment(line) for line in lines]
