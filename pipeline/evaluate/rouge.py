"""The rouge-score layer: per-sentence ROUGE-1/2/L F-measures (summarisation and dialogue tables), and why METEOR is n/a.

rouge-score (Google's Python reimplementation of ROUGE-1.5.5) with its default tokenizer: lowercase, every
character outside [a-z0-9] is a separator (punctuation dropped). No stemming (ROUGE-1.5.5 without -m; our
choice, the paper names no option). ROUGE-L is the sentence-level LCS F1 of the whole line (not rougeLsum).
Several references: per sentence and per ROUGE type the reference with the highest F (rouge-score's
score_multi). The metric registered as "rouge" (pipeline.evaluate.metrics) averages these over sentences x 100.
"""
from __future__ import annotations

from functools import lru_cache
from importlib.metadata import version
from typing import Sequence

from pipeline.errors import PipelineError
from pipeline.evaluate.bleu import check_streams

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")


@lru_cache(maxsize=None)
def _scorer(use_stemmer: bool):
    """rouge-score's RougeScorer for ROUGE_TYPES."""
    from rouge_score.rouge_scorer import RougeScorer
    return RougeScorer(list(ROUGE_TYPES), use_stemmer=use_stemmer)


def rouge_statistics(hyps: Sequence[str], refs: Sequence[Sequence[str]], *,
                     use_stemmer: bool = False) -> list[list[float]]:
    """Per sentence [F rouge1, F rouge2, F rougeL] in [0, 1], the best reference of each type (refs = streams).

    References that rouge-score's tokenizer reduces to nothing everywhere (a script without [a-z0-9]) ->
    PipelineError: every score would be 0.
    """
    check_streams(hyps, refs)
    scorer = _scorer(bool(use_stemmer))
    tokenize = scorer._tokenizer.tokenize
    if any(line.strip() for stream in refs for line in stream) and \
            not any(tokenize(line) for stream in refs for line in stream):
        raise PipelineError("refs: rouge-score's tokenizer keeps only [a-z0-9] tokens and found none in any "
                            "reference; expected text in a Latin-script language")
    stats = []
    for i, hyp in enumerate(hyps):
        targets = [stream[i] for stream in refs]
        scores = scorer.score(targets[0], hyp) if len(targets) == 1 else scorer.score_multi(targets, hyp)
        stats.append([float(scores[kind].fmeasure) for kind in ROUGE_TYPES])
    return stats


def rouge_signature(n_refs: int, use_stemmer: bool = False) -> str:
    """What produced the ROUGE numbers, in sacrebleu's signature style."""
    return (f"rouge-score|nrefs:{n_refs}|refs:max-f|types:{','.join(ROUGE_TYPES)}|f:f1|avg:sentence|"
            f"tok:default|stem:{'yes' if use_stemmer else 'no'}|version:{version('rouge-score')}")


def meteor_unavailable_reason() -> str:
    """Why METEOR (nlg-eval's third dialogue metric) is reported as "n/a" here."""
    return ("METEOR needs the METEOR 1.5 jar (and Java) plus WordNet data for its synonym module; neither "
            "can be installed offline here, so METEOR is reported as n/a")
