"""Moses truecasing (train-truecaser.perl, truecase.perl, detruecase.perl) through sacremoses: werlen2018 6.1
truecases the tokenised text with a model trained on the training data, scores tokenised truecased text
(multi-bleu) and detruecases for NIST BLEU.

The model is the Moses file format (one line per word type: its forms and counts), written atomically.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Iterable

from sacremoses import MosesDetruecaser, MosesTruecaser

from pipeline.errors import PipelineError
from pipeline.fileio import atomic_path, new_file_mode


def learn_truecaser(lines: Iterable[str], model: Path) -> None:
    """Train on tokenised lines, read once, one at a time (the first word of a sentence does not count, as
    train-truecaser.perl), and save."""
    count = 0

    def documents():
        nonlocal count
        for line in lines:
            count += 1
            yield line.split()

    truecaser = MosesTruecaser()
    truecaser.train(documents())
    if not count:
        raise PipelineError(f"{model}: no training lines to learn a truecaser from; expected the tokenised "
                            "training text")
    with atomic_path(model) as tmp:
        truecaser.save_model(str(tmp))  # sacremoses renames its own 0600 file onto tmp: give it the umask's mode
        os.chmod(tmp, new_file_mode())


def load_truecaser(model: Path) -> MosesTruecaser:
    """A truecaser from a model file written by learn_truecaser (or train-truecaser.perl)."""
    if not Path(model).is_file():
        raise PipelineError(f"{model}: no truecasing model; expected the file learn-truecaser writes")
    return MosesTruecaser(load_from=str(model))


def truecase_lines(lines: list[str], truecaser: MosesTruecaser) -> list[str]:
    """Each tokenised line with every word in its most frequent casing (truecase.perl)."""
    return [truecaser.truecase(line, return_str=True) if line.strip() else "" for line in lines]


@functools.lru_cache(maxsize=2)
def _cached_truecaser(model: Path) -> MosesTruecaser:
    return load_truecaser(model)


def truecase_with(lines: list[str], model: Path) -> list[str]:
    """truecase_lines with the model at `model` (loaded once per process: pipeline/data/chunks.py's workers)."""
    return truecase_lines(lines, _cached_truecaser(model))


def detruecase_lines(lines: list[str]) -> list[str]:
    """Each tokenised line with its first word (and every word of an all-caps headline) capitalised
    (detruecase.perl)."""
    detruecaser = MosesDetruecaser()
    return [detruecaser.detruecase(line, return_str=True) if line.strip() else "" for line in lines]
