"""Outputs of a system outside the pipeline (shu2016's Travatar T2S system), supplied by the user, checked and brought
into the pipeline's formats.

The directory paths.manual.<key> holds <split>.hyp (one translation per line, source order) and <split>.nbest (the
n-best lists in Moses' format "<i> ||| <hypothesis> ||| <feature scores> ||| <total score>", i the 0-based
sentence index, best first; Travatar writes this; our own 3-field "<i> ||| <hypothesis> ||| <score>" is read too).
Hypotheses are taken as written: scoring re-tokenises (Japanese: janome re-segments, spaces ignored).
"""
from __future__ import annotations

from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.fileio import NBEST_SEP, read_lines


def supplied_dir(path: str, key: str, system: str) -> Path:
    """The directory of a system's supplied outputs; a missing key or directory -> PipelineError naming the key."""
    if not path:
        raise PipelineError(f"{system}: its outputs are supplied by you; set paths.manual.{key} in params.yaml to the "
                            "directory holding <split>.hyp and <split>.nbest (pipeline/external.py)")
    if not Path(path).is_dir():
        raise PipelineError(f"paths.manual.{key}: {path} is not a directory; expected the directory holding "
                            f"{system}'s <split>.hyp and <split>.nbest")
    return Path(path)


def read_hyps(path: Path, sentences: int) -> list[str]:
    """One translation per source sentence; a wrong line count names the file."""
    lines = read_lines(path)
    if len(lines) != sentences:
        raise PipelineError(f"{path}: {len(lines)} lines; expected {sentences}, one per source sentence")
    return lines


def read_moses_nbest(path: Path, sentences: int, n: int) -> list[list[tuple[float, str]]]:
    """The first n (score, hypothesis) of each sentence, file order (best first); every sentence must have one."""
    lists: list[list[tuple[float, str]]] = [[] for _ in range(sentences)]
    for number, line in enumerate(read_lines(path), start=1):
        fields = line.split(NBEST_SEP)
        try:
            index, score = int(fields[0]), float(fields[-1])
        except ValueError:
            index = score = None
        if len(fields) not in (3, 4) or index is None:
            raise PipelineError(f"{path}:{number}: expected '<i> ||| <hypothesis> ||| <features> ||| <score>' (Moses "
                                f"n-best) or '<i> ||| <hypothesis> ||| <score>', got {line!r}")
        if not 0 <= index < sentences:
            raise PipelineError(f"{path}:{number}: sentence index {index}; expected 0 to {sentences - 1}")
        if len(lists[index]) < n:
            lists[index].append((score, fields[1].strip()))
    missing = [i for i, hyps in enumerate(lists) if not hyps]
    if missing:
        raise PipelineError(f"{path}: no hypotheses for {len(missing)} sentence(s), first index {missing[0]}; "
                            f"expected at least one per source sentence ({sentences})")
    return lists
