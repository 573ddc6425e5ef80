"""Corpus BLEU through sacrebleu's Python API, returned as plain JSON-ready values."""
from __future__ import annotations

from sacrebleu.metrics import BLEU

from pipeline.errors import PipelineError

# sacrebleu tokenizers that run here without extra packages or downloads (no MeCab, no SentencePiece).
TOKENIZERS = ("13a", "intl", "zh", "char", "none")


def check_tokenize(tokenize: str) -> None:
    """PipelineError unless `tokenize` is one of TOKENIZERS."""
    if tokenize not in TOKENIZERS:
        raise PipelineError(f"tokenize: expected one of {', '.join(TOKENIZERS)}, got {tokenize!r}")


def check_aligned(**named: list[str]) -> int:
    """The common, non-zero length of the named line lists; a mismatch names every list."""
    lengths = {name: len(lines) for name, lines in named.items()}
    if len(set(lengths.values())) != 1:
        listed = ", ".join(f"{name} has {n}" for name, n in lengths.items())
        raise PipelineError(f"line counts differ: {listed}; expected one line per reference")
    n = next(iter(lengths.values()))
    if n == 0:
        raise PipelineError(f"{' and '.join(lengths)} are empty; expected at least one sentence")
    return n


def target_tokenizer(lang: str) -> str:
    """sacrebleu tokenizer for a target language: 'zh' for zh, 'char' for ja (our choice, no MeCab), else '13a'."""
    return {"zh": "zh", "ja": "char"}.get(lang, "13a")


def bleu(hyps: list[str], refs: list[str], *, tokenize: str = "13a", lowercase: bool = False) -> dict:
    """Corpus BLEU of hyps against one reference each (case-sensitive unless lowercase).

    Returns {"score", "signature", "counts", "totals", "bp", "sys_len", "ref_len", "n_sentences"}.
    """
    check_tokenize(tokenize)
    n = check_aligned(hyps=hyps, refs=refs)
    metric = BLEU(tokenize=tokenize, lowercase=lowercase)
    return _result(metric.corpus_score(list(hyps), [list(refs)]), metric.get_signature().format(), n)


def tokenized_bleu(hyps: list[str], refs: list[str], *more_refs: list[str]) -> dict:
    """multi-bleu.perl-style BLEU: case-sensitive, whitespace tokens as given, no smoothing, closest ref length.

    `more_refs` are further reference streams (e.g. NIST's four references). Same dict as bleu(); its
    "signature" starts with "multi-bleu|" and carries sacrebleu's (tok:none, smooth:none, case:mixed).
    """
    streams = [list(refs)] + [list(r) for r in more_refs]
    n = check_aligned(hyps=hyps, **{f"refs{i}" if i else "refs": r for i, r in enumerate(streams)})
    metric = BLEU(tokenize="none", smooth_method="none", lowercase=False, force=True)
    return _result(metric.corpus_score(list(hyps), streams), "multi-bleu|" + metric.get_signature().format(), n)


def _result(score, signature: str, n_sentences: int) -> dict:
    """A sacrebleu BLEUScore as the plain dict every score file holds."""
    return {
        "score": float(score.score),
        "signature": signature,
        "counts": [int(c) for c in score.counts],
        "totals": [int(t) for t in score.totals],
        "bp": float(score.bp),
        "sys_len": int(score.sys_len),
        "ref_len": int(score.ref_len),
        "n_sentences": n_sentences,
    }
