"""Token <-> id mapping with the four specials every model shares."""
from __future__ import annotations

import os
from collections import Counter
from typing import Iterable, Sequence

from pipeline.errors import PipelineError
from pipeline.fileio import read_lines, write_lines

PAD, BOS, EOS, UNK = 0, 1, 2, 3
SPECIALS = ("<pad>", "<s>", "</s>", "<unk>")


class Vocab:
    """Specials first (pad=0, bos=1, eos=2, unk=3), then tokens by frequency, ties alphabetical."""

    def __init__(self, tokens: Sequence[str]):
        if tuple(tokens[: len(SPECIALS)]) != SPECIALS:
            raise PipelineError(f"vocabulary must start with {SPECIALS}, got {tuple(tokens[:4])}")
        self.itos = list(tokens)
        self.stoi = {tok: i for i, tok in enumerate(self.itos)}

    @classmethod
    def build(cls, lines: Iterable[str], min_freq: int = 1, max_size: int | None = None) -> "Vocab":
        """Count whitespace tokens of `lines`; keep the max_size most frequent (None: all), ties alphabetical."""
        if max_size is not None and (isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 0):
            raise PipelineError(f"vocabulary max_size: expected None or an integer >= 0, got {max_size!r}")
        counts = Counter(tok for line in lines for tok in line.split())
        ranked = sorted((t for t, c in counts.items() if c >= min_freq and t not in SPECIALS),
                        key=lambda t: (-counts[t], t))
        if max_size is not None:
            ranked = ranked[:max_size]
        return cls(list(SPECIALS) + ranked)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Vocab":
        """One token per line, as written by save()."""
        return cls(read_lines(path))

    def save(self, path: str | os.PathLike) -> None:
        write_lines(path, self.itos)

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, line: str) -> list[int]:
        """Ids of the whitespace tokens of `line` (no BOS/EOS added)."""
        return [self.stoi.get(tok, UNK) for tok in line.split()]

    def decode(self, ids: Iterable[int]) -> str:
        """Tokens up to the first EOS, specials other than UNK dropped."""
        out = []
        for i in ids:
            i = int(i)
            if i == EOS:
                break
            if i in (PAD, BOS):
                continue
            out.append(self.itos[i])
        return " ".join(out)
