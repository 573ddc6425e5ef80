"""Byte-pair encoding (Sennrich et al. 2016) through subword-nmt's Python API."""
from __future__ import annotations

import contextlib
import functools
import io
import itertools
import logging
import os
import re
from pathlib import Path
from typing import Iterable

from subword_nmt.apply_bpe import BPE
from subword_nmt.learn_bpe import learn_bpe as _learn_bpe

from pipeline.data.chunks import map_file
from pipeline.errors import PipelineError
from pipeline.fileio import atomic_open, iter_lines, read_lines, write_lines

log = logging.getLogger(__name__)

JOINT_CODES = "codes"
SEPARATOR = "@@"
_BPE_MARK = re.compile(r"(@@ )|(@@ ?$)")
_LANG = re.compile(r"^[a-z]{2,3}$")


def _existing(path: os.PathLike, what: str) -> Path:
    """The path, or a PipelineError if it is not a file."""
    path = Path(path)
    if not path.is_file():
        raise PipelineError(f"{path}: no such file; expected {what}")
    return path


def _learn(lines: Iterable[str], dst: Path, merges: int, origin: str) -> None:
    """Learn `merges` merge operations from whitespace-tokenised lines (read once, one at a time: subword-nmt keeps
    the word counts) into dst (atomic)."""
    tokens = 0

    def counted(lines):
        nonlocal tokens
        for line in lines:
            tokens += bool(line.split())
            yield line

    messages = io.StringIO()
    with atomic_open(dst) as out, contextlib.redirect_stderr(messages):  # silences tqdm
        _learn_bpe(counted(lines), out, merges, min_frequency=2)
        if not tokens:
            raise PipelineError(f"{origin}: no tokens; expected tokenised training text")
    for message in messages.getvalue().splitlines():
        if "Stopping" in message:
            log.info("%s: %s", dst, message)
    if len(read_lines(dst)) < 2:
        dst.unlink()
        raise PipelineError(f"{origin}: no symbol pair occurs twice; expected a corpus BPE can merge")


def learn_bpe(inputs: dict[str, Path], codes_dir: Path, merges: int, joint: bool) -> None:
    """Learn BPE codes: joint -> codes_dir/codes on all sides; else codes_dir/codes.<lang> per side.

    Joint training reads the sides in sorted language order. Codes files of the other mode (or of a language no
    longer given) left in codes_dir are removed so that codes_for() is never ambiguous. Separate codes for no
    language at all leave codes_dir without codes: a corpus BPE segments on neither side (see copy_unsegmented).
    """
    if isinstance(merges, bool) or not isinstance(merges, int) or merges < (1 if inputs else 0):
        raise PipelineError(f"merges: expected a positive integer (0 only where no side is segmented), got {merges!r}")
    if joint and not inputs:
        raise PipelineError("inputs: joint BPE needs at least one language -> training file")
    for lang in inputs:
        if not isinstance(lang, str) or not _LANG.match(lang):
            raise PipelineError(f"inputs: expected 2-3 letter lowercase language codes, got {lang!r}")
    texts = {lang: _existing(inputs[lang], "a tokenised training file") for lang in sorted(inputs)}
    codes_dir = Path(codes_dir)
    codes_dir.mkdir(parents=True, exist_ok=True)
    if joint:
        lines = itertools.chain.from_iterable(iter_lines(texts[lang]) for lang in sorted(texts))
        origin = " + ".join(str(inputs[lang]) for lang in sorted(texts))
        written = {codes_dir / JOINT_CODES}
        _learn(lines, codes_dir / JOINT_CODES, merges, origin)
    else:
        written = {codes_dir / f"{JOINT_CODES}.{lang}" for lang in texts}
        for lang in sorted(texts):
            _learn(iter_lines(texts[lang]), codes_dir / f"{JOINT_CODES}.{lang}", merges, str(inputs[lang]))
    for stale in [codes_dir / JOINT_CODES, *codes_dir.glob(f"{JOINT_CODES}.*")]:
        if stale.is_file() and stale not in written:
            stale.unlink()


def codes_for(codes_dir: Path, lang: str) -> Path:
    """codes_dir/codes.<lang> if learnt separately, else codes_dir/codes; neither or both is an error."""
    codes_dir = Path(codes_dir)
    separate, joint = codes_dir / f"{JOINT_CODES}.{lang}", codes_dir / JOINT_CODES
    if separate.is_file() and joint.is_file():
        raise PipelineError(f"{codes_dir}: holds both {joint.name} and {separate.name}; expected one BPE mode")
    if separate.is_file():
        return separate
    if joint.is_file():
        return joint
    raise PipelineError(f"{codes_dir}: no {joint.name} or {separate.name}; expected learnt BPE codes")


def load_bpe(codes: Path) -> BPE:
    """A subword-nmt BPE object from a validated codes file (two symbols per merge line)."""
    lines = read_lines(_existing(codes, "a BPE codes file"))
    start = 1 if lines and lines[0].startswith("#version:") else 0
    for number, line in enumerate(lines[start:], start=start + 1):
        if len(line.split(" ")) != 2:
            raise PipelineError(f"{codes}:{number}: expected two space-separated symbols, got {line!r}")
    if len(lines) == start:
        raise PipelineError(f"{codes}: no merge operations; expected learnt BPE codes")
    return BPE(io.StringIO("\n".join(lines) + "\n"), separator=SEPARATOR)


@functools.lru_cache(maxsize=2)
def _cached_bpe(codes: Path) -> BPE:
    return load_bpe(codes)


def segment_lines(lines: list[str], codes: Path) -> list[str]:
    """Each line segmented with the codes (loaded once per process)."""
    bpe = _cached_bpe(codes)
    return [bpe.segment(line) for line in lines]


def apply_bpe(codes: Path, src: Path, dst: Path, workers: int = 1) -> None:
    """Segment each line of src with codes (separator '@@') in chunks of lines on `workers` processes (the same
    bytes as one); dst is written atomically."""
    load_bpe(codes)  # a bad codes file fails here, naming it
    map_file(functools.partial(segment_lines, codes=Path(codes)), _existing(src, "a tokenised text file"), dst, workers)


def copy_unsegmented(codes_dir: Path, lang: str, src: Path, dst: Path) -> None:
    """Copy src to dst (atomic) unchanged: a side BPE does not segment; codes for `lang` in codes_dir are an error."""
    codes_dir = Path(codes_dir)
    for codes in (codes_dir / f"{JOINT_CODES}.{lang}", codes_dir / JOINT_CODES):
        if codes.is_file():
            raise PipelineError(f"{codes}: BPE codes that cover side '{lang}', which is to be copied unsegmented; "
                                f"expected codes learnt without '{lang}' (learn-bpe --sides)")
    write_lines(dst, iter_lines(_existing(src, "a tokenised text file")))


def remove_bpe(line: str) -> str:
    """Undo BPE segmentation: drop '@@ ' joints and a line-final '@@'."""
    return _BPE_MARK.sub("", line)
