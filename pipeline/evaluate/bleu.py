"""The sacreBLEU layer: corpus BLEU and per-sentence BLEU statistics through sacrebleu's API (see metrics.py).

Two flavours share sacrebleu's n-gram counting (`BLEU._extract_corpus_statistics`) and its score computation
(`BLEU._compute_score_from_stats`), as sacrebleu.significance does:
- sacreBLEU: detokenised text, sacrebleu's tokenizer (13a, zh, ...), exp smoothing, case-sensitive unless lowercase;
- multi-bleu: multi-bleu.perl on already tokenised text: whitespace tokens as given (tok:none), no smoothing,
  closest reference length (the shorter on a tie), clipped counts against the max over references.
Per-sentence statistics are sacrebleu's: [hyp_len, closest ref_len, correct_1..4, total_1..4].
"""
from __future__ import annotations

import string
from typing import Sequence

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


def check_streams(hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> int:
    """Number of sentences; `refs` must be a non-empty list of reference streams, each aligned with hyps."""
    if isinstance(refs, str) or not isinstance(refs, (list, tuple)) or not refs:
        raise PipelineError(f"refs: expected a non-empty list of reference streams (lists of lines), "
                            f"got {type(refs).__name__}")
    for k, stream in enumerate(refs):
        if isinstance(stream, str) or not isinstance(stream, (list, tuple)):
            raise PipelineError(f"refs[{k}]: expected a list of reference lines (one stream), "
                                f"got {type(stream).__name__}")
    return check_aligned(hyps=list(hyps), **{f"refs[{k}]": list(s) for k, s in enumerate(refs)})


def target_tokenizer(lang: str) -> str:
    """sacrebleu tokenizer for a target language: 'zh' for zh, 'char' for ja (our choice, no MeCab), else '13a'."""
    return {"zh": "zh", "ja": "char"}.get(lang, "13a")


def sacrebleu_metric(*, tokenize: str = "13a", lowercase: bool = False, tokenized: bool = False) -> BLEU:
    """sacrebleu's BLEU object: sacreBLEU (exp smoothing) or, with tokenized, multi-bleu (tok none, no smoothing)."""
    if tokenized:
        return BLEU(tokenize="none", smooth_method="none", lowercase=lowercase, force=True)
    check_tokenize(tokenize)
    return BLEU(tokenize=tokenize, lowercase=lowercase)


def signature(metric: BLEU, tokenized: bool) -> str:
    """sacrebleu's signature (nrefs, case, eff, tok, smooth, version); multi-bleu's starts with 'multi-bleu|'."""
    return ("multi-bleu|" if tokenized else "") + metric.get_signature().format()


def corpus_statistics(metric: BLEU, hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> list[list[int]]:
    """sacrebleu's per-sentence statistics [hyp_len, ref_len, correct_1..4, total_1..4] against every stream."""
    check_streams(hyps, refs)
    return metric._extract_corpus_statistics(list(hyps), [list(stream) for stream in refs])


def fields(score) -> dict:
    """A sacrebleu BLEUScore as the plain fields every BLEU score file holds."""
    return {
        "score": float(score.score),
        "counts": [int(c) for c in score.counts],
        "totals": [int(t) for t in score.totals],
        "bp": float(score.bp),
        "sys_len": int(score.sys_len),
        "ref_len": int(score.ref_len),
    }


def _corpus(hyps, streams, tokenize: str, lowercase: bool, tokenized: bool) -> dict:
    """Corpus BLEU fields, signature and n_sentences of hyps against the reference streams."""
    metric = sacrebleu_metric(tokenize=tokenize, lowercase=lowercase, tokenized=tokenized)
    stats = corpus_statistics(metric, hyps, streams)
    return {**fields(metric._aggregate_and_compute(stats)), "signature": signature(metric, tokenized),
            "n_sentences": len(stats)}


def bleu(hyps: list[str], refs: list[str], *more_refs: list[str], tokenize: str = "13a",
         lowercase: bool = False) -> dict:
    """Corpus sacreBLEU of detokenised hyps (case-sensitive unless lowercase); `more_refs` are further streams.

    Returns {"score", "signature", "counts", "totals", "bp", "sys_len", "ref_len", "n_sentences"}.
    """
    check_tokenize(tokenize)
    check_aligned(hyps=list(hyps), refs=list(refs), **{f"refs{i}": list(r) for i, r in enumerate(more_refs, 1)})
    return _corpus(hyps, [refs, *more_refs], tokenize, lowercase, tokenized=False)


def tokenized_bleu(hyps: list[str], refs: list[str], *more_refs: list[str], lowercase: bool = False) -> dict:
    """multi-bleu.perl-style BLEU: whitespace tokens as given, no smoothing, closest ref length, case-sensitive.

    `more_refs` are further reference streams (e.g. NIST's four references). Same dict as bleu(); its
    "signature" starts with "multi-bleu|" and carries sacrebleu's (tok:none, smooth:none, case:mixed or lc).
    lowercase: ASCII letters A-Z only, as multi-bleu.perl -lc does (Perl's lc on bytes) and the "multi-bleu-ci"
    metric does ("Über" stays); unlike sacreBLEU's -lc (Python's str.lower, every Unicode letter), whose case:lc the
    rest of the signature reads as.
    """
    check_aligned(hyps=list(hyps), refs=list(refs), **{f"refs{i}": list(r) for i, r in enumerate(more_refs, 1)})
    if not lowercase:
        return _corpus(hyps, [refs, *more_refs], "none", False, tokenized=True)
    streams = [[line.translate(ASCII_LOWER) for line in stream] for stream in [refs, *more_refs]]
    result = _corpus([line.translate(ASCII_LOWER) for line in hyps], streams, "none", False, tokenized=True)
    return {**result, "signature": result["signature"].replace("case:mixed", "case:lc")}


# multi-bleu.perl -lc: Perl's lc on bytes lowercases ASCII letters only
ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
