"""Binary token store: one side of a corpus as vocabulary ids, written once per corpus, memory-mapped by every
training process (fairseq's binarised datasets, in two raw files).

`<prefix>.ids` holds every sentence's ids back to back (int32, little-endian) and `<prefix>.offsets` where each
starts (int64, one more than the sentences, the first 0): sentence i is ids[offsets[i]:offsets[i + 1]]. A
process maps the files and reads the pages its batches touch; it never holds the corpus.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np

from pipeline.errors import PipelineError
from pipeline.data.chunks import chunked
from pipeline.fileio import atomic_open, iter_lines

ID_DTYPE, OFFSET_DTYPE = np.dtype("<i4"), np.dtype("<i8")
STORE_SUFFIXES = (".ids", ".offsets")
ENCODE_LINES = 50_000  # lines encoded per chunk while writing
BLOCK = 1 << 20  # sentences a pass over a whole corpus handles at a time (bounded temporaries)


def store_files(prefix: str | os.PathLike) -> tuple[Path, Path]:
    """The ids and offsets files of the store at `prefix`."""
    ids, offsets = (Path(f"{prefix}{suffix}") for suffix in STORE_SUFFIXES)
    return ids, offsets


def index_dtype(count: int) -> np.dtype:
    """The type of an index into `count` sentences: int32 (4 bytes a sentence) while it fits."""
    return np.dtype(np.int32 if count < 2**31 else np.int64)


def positions(mask: np.ndarray) -> np.ndarray:
    """np.flatnonzero(mask) in index_dtype, found a block at a time (no int64 array of the mask's size)."""
    out, done = np.empty(int(np.count_nonzero(mask)), index_dtype(len(mask))), 0
    for start in range(0, len(mask), BLOCK):
        found = np.flatnonzero(mask[start : start + BLOCK]) + start
        out[done : done + len(found)] = found
        done += len(found)
    return out


def _mapped(path: Path, dtype: np.dtype) -> np.ndarray:
    """The file as a read-only array (an empty file as an empty array: numpy cannot map zero bytes)."""
    size = path.stat().st_size
    if size % dtype.itemsize:
        raise PipelineError(f"{path}: {size} bytes, not a whole number of {dtype.itemsize}-byte values; "
                            "expected a file written by `python -m pipeline binarize` (rebuild it)")
    if size == 0:
        return np.empty(0, dtype)
    return np.memmap(path, dtype=dtype, mode="r")


class TokenArray:
    """Sequences of ids held flat: ids [tokens] and offsets [n + 1]; in memory or memory-mapped from a store."""

    def __init__(self, ids: np.ndarray, offsets: np.ndarray, where: str = "token array",
                 files: tuple[Path, Path] | None = None):
        if offsets.ndim != 1 or len(offsets) < 1 or offsets[0] != 0 or offsets[-1] != len(ids):
            raise PipelineError(f"{where}: offsets must start at 0 and end at the {len(ids)} ids; expected a "
                                "complete store (rebuild it with `python -m pipeline binarize`)")
        self.ids, self.offsets, self.where, self.files = ids, offsets, where, files

    @classmethod
    def from_lists(cls, seqs: Sequence[Sequence[int]]) -> "TokenArray":
        """An in-memory array of id lists (tests, small inputs)."""
        offsets = np.zeros(len(seqs) + 1, OFFSET_DTYPE)
        np.cumsum([len(s) for s in seqs], out=offsets[1:])
        ids = np.fromiter((i for s in seqs for i in s), ID_DTYPE, count=int(offsets[-1]))
        return cls(ids, offsets)

    @classmethod
    def open(cls, prefix: str | os.PathLike) -> "TokenArray":
        """The store at `prefix`, memory-mapped read-only."""
        ids_path, offsets_path = store_files(prefix)
        for path in (ids_path, offsets_path):
            if not path.exists():
                raise PipelineError(f"{path}: no such file; expected a token store written by "
                                    "`python -m pipeline binarize` (the rule binarize)")
        return cls(_mapped(ids_path, ID_DTYPE), _mapped(offsets_path, OFFSET_DTYPE), where=str(prefix),
                   files=(ids_path, offsets_path))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> np.ndarray:
        return self.ids[self.offsets[i] : self.offsets[i + 1]]

    def lengths(self) -> np.ndarray:
        """Every sequence's length: uint16 (2 bytes a sentence) while all are under 65,535 (a length + 1 still fits),
        else int32. A store's offsets are read from its file a block at a time, not through the map, so that they
        do not join the process's resident memory."""
        out, done = np.empty(len(self), np.uint16), 0
        for block in self._length_blocks():
            if out.dtype == np.uint16 and len(block) and block.max() >= np.iinfo(np.uint16).max:
                out = out.astype(np.int32)
            out[done : done + len(block)] = block
            done += len(block)
        return out

    def _length_blocks(self) -> Iterator[np.ndarray]:
        """The lengths (int64), BLOCK sequences at a time."""
        if self.files is None:
            for start in range(0, len(self), BLOCK):
                yield np.diff(self.offsets[start : start + BLOCK + 1])
            return
        with open(self.files[1], "rb") as handle:
            previous = np.frombuffer(handle.read(OFFSET_DTYPE.itemsize), OFFSET_DTYPE)[0]
            while block := handle.read(BLOCK * OFFSET_DTYPE.itemsize):
                ends = np.frombuffer(block, OFFSET_DTYPE)
                yield np.diff(ends, prepend=previous)
                previous = ends[-1]

    def digest(self) -> str:
        """sha256 of the offsets' bytes, then the ids'. A store's files are read in blocks, not through the map, so
        its pages do not join the process's resident memory."""
        digest = hashlib.sha256()
        if self.files:
            for path in reversed(self.files):
                with open(path, "rb") as handle:
                    while block := handle.read(1 << 24):
                        digest.update(block)
        else:
            digest.update(self.offsets.astype(OFFSET_DTYPE).tobytes())
            digest.update(self.ids.astype(ID_DTYPE).tobytes())
        return digest.hexdigest()


def write_store(lines: Iterable[str], encode, prefix: str | os.PathLike) -> int:
    """Encode `lines` (encode: a line -> its ids) into the store at `prefix`, chunk by chunk; returns the sentences
    written. Both files appear complete or not at all (written to temporary files, then renamed)."""
    ids_path, offsets_path = store_files(prefix)
    ids_path.parent.mkdir(parents=True, exist_ok=True)
    count = total = 0
    with atomic_open(ids_path, "wb") as ids_out, atomic_open(offsets_path, "wb") as offsets_out:
        offsets_out.write(np.zeros(1, OFFSET_DTYPE).tobytes())
        for chunk in chunked(lines, ENCODE_LINES):
            seqs = [encode(line) for line in chunk]
            ends = total + np.cumsum(np.fromiter((len(s) for s in seqs), OFFSET_DTYPE, count=len(seqs)))
            ids_out.write(np.fromiter((i for s in seqs for i in s), ID_DTYPE, count=int(ends[-1]) - total).tobytes())
            offsets_out.write(ends.tobytes())
            count, total = count + len(seqs), int(ends[-1])
    return count


def binarize(text: str | os.PathLike, vocab, prefix: str | os.PathLike) -> int:
    """The store of a subword file under `vocab` (pipeline.data.vocab.Vocab); returns its sentence count."""
    return write_store(iter_lines(text), vocab.encode, prefix)


@dataclass
class Pairs:
    """Sentence pairs: pair i is (src[index[i]], tgt[index[i]]), or (src[i], tgt[i]) without an index."""

    src: TokenArray
    tgt: TokenArray
    index: np.ndarray | None = None
    # the pairs' lengths: from the stores, unless given (select passes its view's)
    src_lengths: np.ndarray | None = field(default=None, repr=False, compare=False)
    tgt_lengths: np.ndarray | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if len(self.src) != len(self.tgt):
            raise PipelineError(f"{self.src.where} / {self.tgt.where}: {len(self.src)} source but {len(self.tgt)} "
                                "target sequences; expected one target per source")
        if self.src_lengths is None:
            self.src_lengths, self.tgt_lengths = self.src.lengths(), self.tgt.lengths()
            if self.index is not None:
                self.src_lengths, self.tgt_lengths = self.src_lengths[self.index], self.tgt_lengths[self.index]

    @classmethod
    def of(cls, pairs, where: str = "pairs") -> "Pairs":
        """Pairs as they are, or from a (source id lists, target id lists) tuple."""
        if isinstance(pairs, Pairs):
            return pairs
        src, tgt = pairs
        if len(src) != len(tgt):
            raise PipelineError(f"{where}: {len(src)} source but {len(tgt)} target sequences; expected equal counts")
        return cls(TokenArray.from_lists(src), TokenArray.from_lists(tgt))

    def __len__(self) -> int:
        return len(self.src_lengths)

    def _at(self, i: int) -> int:
        return int(self.index[i]) if self.index is not None else i

    def source(self, i: int) -> np.ndarray:
        return self.src[self._at(i)]

    def target(self, i: int) -> np.ndarray:
        return self.tgt[self._at(i)]

    def select(self, keep: np.ndarray) -> "Pairs":
        """The pairs at positions `keep` (ascending) of this view; their lengths are this view's, not recomputed
        from the stores."""
        keep = np.asarray(keep, index_dtype(len(self.src)))
        return Pairs(self.src, self.tgt, keep if self.index is None else self.index[keep], self.src_lengths[keep],
                     self.tgt_lengths[keep])

    def lists(self) -> tuple[list[list[int]], list[list[int]]]:
        """(source id lists, target id lists): for small sets only."""
        return ([self.source(i).tolist() for i in range(len(self))],
                [self.target(i).tolist() for i in range(len(self))])

    def digest(self, hasher) -> None:
        """Feed what identifies these pairs (both stores and the index) to a hashlib object."""
        hasher.update(len(self).to_bytes(8, "little"))
        for part in (self.src.digest(), self.tgt.digest()):
            hasher.update(part.encode())
        if self.index is not None:  # as int64, whatever the index's own type, a block at a time
            for start in range(0, len(self.index), BLOCK):
                hasher.update(self.index[start : start + BLOCK].astype(np.int64).tobytes())

