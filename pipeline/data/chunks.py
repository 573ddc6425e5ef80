"""Corpus files processed in bounded chunks of lines, on the job's cores: a step holds a few chunks, never the
corpus, and writes, in input order, byte for byte what one process line by line writes."""
from __future__ import annotations

import itertools
import multiprocessing
import os
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Iterable, Iterator

from pipeline.fileio import atomic_open, iter_lines

CHUNK_LINES = 2_000


def chunked(lines: Iterable[str], size: int = CHUNK_LINES) -> Iterator[list[str]]:
    """Consecutive lists of up to `size` lines."""
    it = iter(lines)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


def map_chunks(fn: Callable[[list[str]], list[str]], chunks: Iterable[list[str]], workers: int = 1
               ) -> Iterator[list[str]]:
    """fn(chunk) of every chunk, in order. With workers > 1, fn runs in that many processes (fn and its arguments
    must pickle) and at most 2 x workers chunks are read ahead of the one written."""
    if workers <= 1:
        yield from map(fn, chunks)
        return
    # fork: the workers inherit the loaded modules (a data step imports no torch, no threads run)
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        pending = deque()
        for chunk in chunks:
            pending.append(pool.submit(fn, chunk))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def map_file(fn: Callable[[list[str]], list[str]], src: str | os.PathLike, dst: str | os.PathLike,
             workers: int = 1, chunk_lines: int = CHUNK_LINES) -> int:
    """Write fn's lines for every chunk of src's lines to dst (atomically); returns the lines written."""
    count = 0
    with atomic_open(dst) as out:
        for lines in map_chunks(fn, chunked(iter_lines(src), chunk_lines), workers):
            out.writelines(line + "\n" for line in lines)
            count += len(lines)
    return count
