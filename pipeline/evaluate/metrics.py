"""The metrics registry: every metric a score file or a significance test names, registered where it is defined.

A metric object has:
- score(hyps, refs, lang) -> dict: refs is a list of reference STREAMS (refs[k][i] = k-th reference of sentence
  i; NIST test sets have 4); the dict holds "metric", "score", "signature", "n_sentences", "n_references",
  "stats" (per-sentence sufficient statistics, enough to rescore any resample without the text) and the
  metric's own fields;
- score_from_stats(stats, field=None) -> float: the corpus score of these rows (all rows: score()["score"]);
- sentence_scores(stats, field=None) -> array [N]: one score per sentence (t-test, sign test);
- fields: what `field` may name (the first is "score"); tokenized: True if the caller must tokenise the text.

Registered here, on the numbers that bleu.py, rouge.py and ribes.py compute: sacrebleu, sacrebleu-ci, multi-bleu,
multi-bleu-ci, rouge, ribes (shu2016). A paper's package may register its own with the same @register_metric
decorator (pipeline/papers/<paper>/: found by pipeline.registry.load_plugins).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from sacrebleu.metrics import BLEU
from sacrebleu.metrics.bleu import MAX_NGRAM_ORDER

from pipeline.errors import PipelineError
from pipeline.evaluate import bleu as sb
from pipeline.evaluate import ribes as rb
from pipeline.evaluate import rouge as rs
from pipeline.registry import Registry

METRICS: Registry = Registry("metric")


def register_metric(name: str, **options) -> Callable[[type], type]:
    """Class decorator: METRICS[name] = cls(name, **options); stack it to register variants of one class."""
    def register(cls: type) -> type:
        where = f"{METRICS[name].__class__.__name__} and {cls.__name__}" if name in METRICS else ""
        METRICS.add(name, cls(name, **options), where)
        return cls
    return register


def metrics() -> dict[str, "Metric"]:
    """Every registered metric: these, and those the papers' packages register (pipeline.registry: load_plugins)."""
    return METRICS.every()


def get_metric(name: str) -> "Metric":
    """The registered metric called `name`; PipelineError listing the known names otherwise."""
    return METRICS.lookup(name)


def _check_lang(lang) -> None:
    """Refuse a missing or non-string target language code."""
    if not isinstance(lang, str) or not lang:
        raise PipelineError(f"lang: expected a target language code, got {lang!r}")


class Metric:
    """Base class: the interface in the module docstring."""

    fields: tuple[str, ...] = ("score",)
    tokenized = False

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.name!r})"

    def score(self, hyps: list[str], refs: list[list[str]], lang: str) -> dict:
        """Corpus score of hyps against every reference stream, with per-sentence stats."""
        raise NotImplementedError

    def score_from_stats(self, stats, field: str | None = None) -> float:
        """Corpus score of the sentences whose stats are the rows of `stats` [N, k]."""
        raise NotImplementedError

    def sentence_scores(self, stats, field: str | None = None) -> np.ndarray:
        """One score per row of `stats` [N, k]."""
        raise NotImplementedError

    def check_field(self, field: str | None) -> str:
        """`field` or "score"; PipelineError unless it is one of self.fields."""
        field = field or "score"
        if field not in self.fields:
            raise PipelineError(f"field: metric '{self.name}' has no field {field!r}; expected one of "
                                f"{', '.join(self.fields)}")
        return field

    def check_stats(self, stats, width: int | None = None) -> np.ndarray:
        """`stats` as a 2-D numeric array with at least one row (and `width` columns if given), dtype kept."""
        array = np.asarray(stats)
        if array.ndim != 2 or array.shape[0] == 0 or (width is not None and array.shape[1] != width) \
                or array.dtype.kind not in "iuf" or not np.all(np.isfinite(array)):
            shape = f"[N, {width}]" if width is not None else "[N, k]"
            raise PipelineError(f"stats: expected a non-empty {shape} array of finite numbers for metric "
                                f"'{self.name}', got shape {array.shape} and dtype {array.dtype}")
        return array


class _Bleu(Metric):
    """BLEU through sacrebleu (pipeline.evaluate.bleu); stats are sacrebleu's 10 integers per sentence.

    sentence_scores: sacrebleu's sentence_bleu defaults (our choice): exp smoothing (Chen & Cherry 2014
    method 3, mteval's) with effective order, from each sentence's own stats (its closest reference length).
    """

    WIDTH = 2 + 2 * MAX_NGRAM_ORDER

    def __init__(self, name: str, *, lowercase: bool = False):
        super().__init__(name)
        self.lowercase = lowercase
        self._from_stats = sb.sacrebleu_metric(tokenize="none", lowercase=lowercase, tokenized=self.tokenized)

    def tokenize_for(self, lang: str) -> str:
        """sacrebleu tokenizer for the target language."""
        return sb.target_tokenizer(lang)

    def score(self, hyps: list[str], refs: list[list[str]], lang: str) -> dict:
        """Corpus BLEU of hyps against every reference stream (see the class docstring)."""
        _check_lang(lang)
        metric = sb.sacrebleu_metric(tokenize=self.tokenize_for(lang), lowercase=self.lowercase,
                                     tokenized=self.tokenized)
        stats = sb.corpus_statistics(metric, hyps, refs)
        return {"metric": self.name, **sb.fields(metric._aggregate_and_compute(stats)),
                "signature": sb.signature(metric, self.tokenized), "n_sentences": len(stats),
                "n_references": len(refs), "stats": [[int(x) for x in row] for row in stats]}

    def score_from_stats(self, stats, field: str | None = None) -> float:
        """sacrebleu's _compute_score_from_stats on the column sums, in the array's dtype (as sacrebleu does)."""
        self.check_field(field)
        return float(self._from_stats._compute_score_from_stats(self.check_stats(stats, self.WIDTH).sum(0)).score)

    def sentence_scores(self, stats, field: str | None = None) -> np.ndarray:
        """Smoothed sentence BLEU (exp smoothing, effective order: sacrebleu.sentence_bleu's defaults) per row."""
        self.check_field(field)
        order = MAX_NGRAM_ORDER
        return np.array([BLEU.compute_bleu(correct=[int(x) for x in row[2:2 + order]],
                                           total=[int(x) for x in row[2 + order:]],
                                           sys_len=int(row[0]), ref_len=int(row[1]), smooth_method="exp",
                                           effective_order=True, max_ngram_order=order).score
                         for row in self.check_stats(stats, self.WIDTH)], dtype=float)


@register_metric("sacrebleu-ci", lowercase=True)
@register_metric("sacrebleu")
class SacreBleu(_Bleu):
    """sacreBLEU on detokenised text: the target language's tokenizer (target_tokenizer), exp smoothing.

    sacrebleu-ci lowercases hypotheses and references with Python's str.lower before tokenising, exactly as sacreBLEU's
    -lc does (the tool its signature, case:lc, names): every Unicode letter with a lowercase form ("Über" -> "über",
    "ΑΘΗΝΑ" -> "αθηνα"). mteval-v13a.pl's lowercasing (its default, without -c: tr/[A-Z]/[a-z]/) and multi-bleu.perl's
    -lc take ASCII A-Z only, so scores differ from theirs wherever a text has non-ASCII capitals."""


@register_metric("multi-bleu-ci", lowercase=True)
@register_metric("multi-bleu")
class MultiBleu(_Bleu):
    """multi-bleu.perl on text the caller tokenised: tok none, no smoothing, closest reference length. Its -lc
    lowercases as the script does, with Perl's lc on bytes: ASCII letters only ("Über" stays, sacreBLEU's
    lowercase would make it "über")."""

    tokenized = True

    def __init__(self, name: str, *, lowercase: bool = False):
        super().__init__(name)  # sacreBLEU never lowercases here; score() lowercases ASCII first
        self.ascii_lowercase = lowercase

    def tokenize_for(self, lang: str) -> str:
        """No tokenizer: whitespace tokens as given."""
        return "none"

    def score(self, hyps: list[str], refs: list[list[str]], lang: str) -> dict:
        if not self.ascii_lowercase:
            return super().score(hyps, refs, lang)
        result = super().score([h.translate(sb.ASCII_LOWER) for h in hyps],
                               [[r.translate(sb.ASCII_LOWER) for r in stream] for stream in refs], lang)
        return {**result, "signature": result["signature"].replace("case:mixed", "case:lc")}


@register_metric("rouge")
class Rouge(Metric):
    """ROUGE-1/2/L F through rouge-score (pipeline.evaluate.rouge): sentence average x 100; score = rougeL.

    Several references: per sentence and type, the reference with the highest F. stats: [F1, F2, FL] per sentence.
    """

    fields = ("score",) + rs.ROUGE_TYPES

    def __init__(self, name: str, *, use_stemmer: bool = False):
        super().__init__(name)
        self.use_stemmer = use_stemmer

    def score(self, hyps: list[str], refs: list[list[str]], lang: str) -> dict:
        """Sentence-averaged ROUGE F x 100 against every reference stream; `lang` only names the text."""
        _check_lang(lang)
        stats = rs.rouge_statistics(hyps, refs, use_stemmer=self.use_stemmer)
        array = np.asarray(stats, dtype=float)
        return {"metric": self.name, "score": self.score_from_stats(array),
                **{kind: self.score_from_stats(array, kind) for kind in rs.ROUGE_TYPES},
                "signature": rs.rouge_signature(len(refs), self.use_stemmer), "n_sentences": len(stats),
                "n_references": len(refs), "stats": stats}

    def _column(self, field: str | None) -> int:
        field = self.check_field(field)
        return rs.ROUGE_TYPES.index("rougeL" if field == "score" else field)

    def score_from_stats(self, stats, field: str | None = None) -> float:
        """100 x the mean F of the field's column (rougeL for "score")."""
        column = self._column(field)
        return float(100 * np.mean(self.check_stats(stats, len(rs.ROUGE_TYPES))[:, column], dtype=np.float64))

    def sentence_scores(self, stats, field: str | None = None) -> np.ndarray:
        """100 x each sentence's F of the field (rougeL for "score")."""
        column = self._column(field)
        return 100 * self.check_stats(stats, len(rs.ROUGE_TYPES))[:, column].astype(np.float64)


@register_metric("ribes")
class Ribes(Metric):
    """RIBES (pipeline.evaluate.ribes: RIBES.py's numbers) on text the caller tokenised, lowercased; a fraction in
    [0, 1]; stats: [sentence RIBES] per sentence."""

    tokenized = True

    def __init__(self, name: str, *, case: bool = False):
        super().__init__(name)
        self.case = case

    def score(self, hyps: list[str], refs: list[list[str]], lang: str) -> dict:
        """Corpus RIBES (mean of each sentence's best over the reference streams); `lang` only names the text."""
        _check_lang(lang)
        stats = rb.ribes_statistics(hyps, refs, self.case)
        return {"metric": self.name, "score": self.score_from_stats(stats),
                "signature": rb.ribes_signature(len(refs), self.case), "n_sentences": len(stats),
                "n_references": len(refs), "stats": stats}

    def score_from_stats(self, stats, field: str | None = None) -> float:
        """The mean sentence RIBES of these rows."""
        return float(np.mean(self.sentence_scores(stats, field), dtype=np.float64))

    def sentence_scores(self, stats, field: str | None = None) -> np.ndarray:
        """Each row's sentence RIBES."""
        self.check_field(field)
        return self.check_stats(stats, 1)[:, 0].astype(np.float64)


def rouge(hyps: list[str], refs: list[str], *more_refs: list[str]) -> dict:
    """{"rouge1", "rouge2", "rougeL"}: sentence-averaged F x 100 of the "rouge" metric; `more_refs` further streams."""
    sb.check_aligned(hyps=list(hyps), refs=list(refs), **{f"refs{i}": list(r) for i, r in enumerate(more_refs, 1)})
    result = get_metric("rouge").score(list(hyps), [list(refs), *[list(r) for r in more_refs]], "en")
    return {kind: result[kind] for kind in rs.ROUGE_TYPES}
