"""Moses truecasing (train-truecaser.perl, truecase.perl, detruecase.perl) through sacremoses: werlen2018 6.1
truecases the tokenised text with a model trained on the training data, scores tokenised truecased text
(multi-bleu) and detruecases for NIST BLEU.

The model is the Moses file format (one line per word type: its forms and counts), written atomically.
"""
from __future__ import annotations

import os
from pathlib import Path

from sacremoses import MosesDetruecaser, MosesTruecaser

from pipeline.errors import PipelineError
from pipeline.fileio import atomic_path, new_file_mode


def learn_truecaser(lines: list[str], model: Path) -> None:
    """Train on tokenised lines (the first word of a sentence does not count, as train-truecaser.perl) and save."""
    if not lines:
        raise PipelineError(f"{model}: no training lines to learn a truecaser from; expected the tokenised "
                            "training text")
    truecaser = MosesTruecaser()
    truecaser.train([line.split() for line in lines])
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


def detruecase_lines(lines: list[str]) -> list[str]:
    """Each tokenised line with its first word (and every word of an all-caps headline) capitalised
    (detruecase.perl)."""
    detruecaser = MosesDetruecaser()
    return [detruecaser.detruecase(line, return_str=True) if line.strip() else "" for line in lines]
