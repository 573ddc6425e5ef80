"""Atomic writes and validated reading of text and parallel corpora."""
from __future__ import annotations

import contextlib
import errno
import itertools
import json
import os
import tempfile
from pathlib import Path
from typing import IO, Iterator

from pipeline.errors import PipelineError


def current_umask() -> int:
    """The process's umask (Linux: read from /proc; elsewhere set and restored at once)."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def new_file_mode() -> int:
    """The mode open() gives a new file: 0666 less the umask (0644 under umask 022, 0640 under 027)."""
    return 0o666 & ~current_umask()


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it onto `path` only if the block succeeds.

    The temporary file gets the mode a plain open() would give (0666 less the umask: 0644 under umask 022),
    not mkstemp's 0600, so the group can read what the pipeline writes on a shared file system."""
    path = Path(path)
    with _naming(path):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:  # one of its folders is a file
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR)) from None
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp)
    try:
        try:
            os.fchmod(fd, new_file_mode())
        finally:
            os.close(fd)
        with _naming(path, WRITE_ERRNOS):
            yield tmp
        with _naming(path):
            os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


# a write's errors that name no file (write, flush, fsync): in an atomic write's block they are its output's
WRITE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


@contextlib.contextmanager
def _naming(path: Path, unnamed: tuple[int, ...] | None = None) -> Iterator[None]:
    """An OSError raised inside, re-raised naming `path` (the output, not its temp file or folder); unnamed: only
    errors with these errnos that name no file (a write's), others pass unchanged."""
    try:
        yield
    except OSError as err:
        if unnamed is not None and (err.filename is not None or err.errno not in unnamed):
            raise
        raise OSError(err.errno, err.strerror, str(path)) from None


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temporary file for writing; it replaces `path` only when the block succeeds."""
    if "b" in mode:
        encoding = None
    with atomic_path(path) as tmp:
        with open(tmp, mode, encoding=encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())


def iter_lines(path: str | os.PathLike) -> Iterator[str]:
    """The lines of a UTF-8 text file without their newlines, one at a time (memory: one line); invalid UTF-8
    names file and line."""
    path = Path(path)
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise PipelineError(
                    f"{path}:{number}: invalid UTF-8 at byte {err.start} of the line; expected UTF-8 text"
                ) from None
            yield text.rstrip("\n").rstrip("\r")


def read_lines(path: str | os.PathLike) -> list[str]:
    """All lines of a UTF-8 text file without their newlines (iter_lines, kept in memory: small files only)."""
    return list(iter_lines(path))


def iter_parallel(src: str | os.PathLike, tgt: str | os.PathLike) -> Iterator[tuple[str, str]]:
    """The line pairs of a parallel corpus, one at a time; different line counts are an error naming both files
    (raised when the shorter one ends)."""
    missing = object()
    count = 0
    for count, (s, t) in enumerate(itertools.zip_longest(iter_lines(src), iter_lines(tgt), fillvalue=missing), 1):
        if s is missing or t is missing:
            with open(tgt if s is missing else src, "rb") as longer:
                n_longer = sum(1 for _ in longer)
            n_src, n_tgt = (count - 1, n_longer) if s is missing else (n_longer, count - 1)
            raise PipelineError(f"parallel files differ in length: {src} has {n_src} lines, {tgt} has {n_tgt}; "
                                f"expected one target line per source line")
        yield s, t


def read_parallel(src: str | os.PathLike, tgt: str | os.PathLike) -> tuple[list[str], list[str]]:
    """Both sides of a parallel corpus (iter_parallel, kept in memory); different line counts are an error naming
    both files."""
    pairs = list(iter_parallel(src, tgt))
    return [s for s, _ in pairs], [t for _, t in pairs]


def reference_paths(ref_dir: str | os.PathLike, test_set: str, lang: str) -> list[Path]:
    """Every reference stream of a test set: <test_set>.<lang>, then <test_set>.<lang>.1, .2, ... if present
    (pipeline/evaluate/metric_text.py read_references reads them)."""
    streams = [Path(ref_dir) / f"{test_set}.{lang}"]
    while (Path(ref_dir) / f"{test_set}.{lang}.{len(streams)}").exists():
        streams.append(Path(ref_dir) / f"{test_set}.{lang}.{len(streams)}")
    return streams


def write_lines(path: str | os.PathLike, lines) -> None:
    """Write lines atomically, one per line, UTF-8."""
    with atomic_open(path) as handle:
        for line in lines:
            handle.write(line + "\n")


def write_json(path: str | os.PathLike, obj) -> None:
    """Write `obj` as indented JSON (keys sorted, UTF-8 kept) atomically."""
    with atomic_open(path) as handle:
        json.dump(obj, handle, indent=2, ensure_ascii=False, sort_keys=True)
        handle.write("\n")


def read_json(path: str | os.PathLike):
    """A JSON file; invalid JSON -> PipelineError naming the file."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise PipelineError(f"{path}: not valid JSON ({err})") from None


# n-best lists: one line per hypothesis, "<i> ||| <hypothesis> ||| <score>", i the 0-based sentence index, a
# sentence's hypotheses best first, score the search's (higher is better; repr, so it reads back exactly).
NBEST_SEP = " ||| "


def write_nbest(path: str | os.PathLike, nbest_lists) -> None:
    """Write n-best lists [sentences][hypotheses] of (score, text) atomically; text holding a newline is an error."""
    with atomic_open(path) as handle:
        for i, hyps in enumerate(nbest_lists):
            for score, text in hyps:
                if "\n" in text or "\r" in text:
                    raise PipelineError(f"{path}: hypothesis of sentence {i} holds a line break; expected one line")
                handle.write(f"{i}{NBEST_SEP}{text}{NBEST_SEP}{float(score)!r}\n")


def read_nbest(path: str | os.PathLike, sentences: int | None = None) -> list[list[tuple[float, str]]]:
    """N-best lists [sentences][hypotheses] of (score, text) in file order; a sentence without lines gets [].

    sentences: the expected number of sentences (lists are padded to it; a larger index is an error)."""
    lists: list[list[tuple[float, str]]] = []
    for number, line in enumerate(read_lines(path), start=1):
        index, sep1, rest = line.partition(NBEST_SEP)
        text, sep2, score = rest.rpartition(NBEST_SEP)
        try:
            i, value = int(index), float(score)
        except ValueError:
            i = value = None
        if not (sep1 and sep2) or i is None or i < 0:
            raise PipelineError(f"{path}:{number}: expected '<sentence index> ||| <hypothesis> ||| <score>', "
                                f"got {line!r}")
        if i < len(lists) - 1:
            raise PipelineError(f"{path}:{number}: sentence {i} after sentence {len(lists) - 1}; expected "
                                "sentence indices in increasing order")
        if sentences is not None and i >= sentences:
            raise PipelineError(f"{path}:{number}: sentence index {i}; expected fewer than {sentences} sentences")
        lists.extend([] for _ in range(i + 1 - len(lists)))
        lists[i].append((value, text))
    lists.extend([] for _ in range((sentences or 0) - len(lists)))
    return lists
