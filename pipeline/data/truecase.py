"""Moses truecasing (train-truecaser.perl, truecase.perl, detruecase.perl) through sacremoses: werlen2018 6.1
truecases the tokenised text with a model trained on the training data, scores tokenised truecased text
(multi-bleu) and detruecases for NIST BLEU.

The model is the Moses file format (one line per word type: its forms and counts), written atomically.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from sacremoses import MosesDetruecaser, MosesTruecaser

from pipeline.errors import PipelineError


def learn_truecaser(lines: list[str], model: Path) -> None:
    """Train on tokenised lines (the first word of a sentence does not count, as train-truecaser.perl) and save."""
    if not lines:
        raise PipelineError(f"{model}: no training lines to learn a truecaser from; expected the tokenised "
                            "training text")
    truecaser = MosesTruecaser()
    truecaser.train([line.split() for line in lines])
    model.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=model.parent, prefix=f".{model.name}.")
    os.close(fd)
    try:
        truecaser.save_model(tmp)
        os.replace(tmp, model)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


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
