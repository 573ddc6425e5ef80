"""The unified corpus registry: a corpus name -> a typed spec, and one function that builds its raw layout.

Every corpus builds the same layout: {out_dir}/train|valid|test.{src,tgt} (one sentence per line,
UTF-8; remote tasks with more test sets add test-<name>.{src,tgt}, e.g. NIST MT04) and datacard.json/.md.
Kinds: "embedded" (l10n-<src>-<tgt>, tiny scale), "synthetic" (toy-*, language-free: the caller picks
the file suffixes), "remote" (paper-scale WMT and NIST corpora) and "generation" (zeng2021 Table 4:
standin-summarization / standin-dialogue at tiny scale, cnndm / personachat at paper scale; the
"languages" doc->sum and ctx->rsp are file suffixes of English text).
"""
from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass
from pathlib import Path

from pipeline.data.generation import GENERATION_TASKS, StandinTask
from pipeline.data.remote import REMOTE_TASKS
from pipeline.data.remote.build import build_remote
from pipeline.data.remote.entries import RemoteTask
from pipeline.errors import PipelineError

KINDS = ("embedded", "synthetic", "remote", "generation")
EMBEDDED_SIZE_KEYS = ("valid_size", "test_size")
SYNTHETIC_SIZE_KEYS = ("train_size", "valid_size", "test_size", "vocab_size", "min_len", "max_len")
TOY_TASKS = {"toy-copy": "copy", "toy-reverse": "reverse", "toy-reorder": "reorder"}
_LANG_CODE = re.compile(r"^[A-Za-z0-9_]+$")


@dataclass(frozen=True)
class CorpusSpec:
    """A named corpus: direction, kind, and what its builder needs."""

    name: str
    src: str
    tgt: str
    kind: str  # "embedded" | "synthetic" | "remote" | "generation"
    pretokenized: bool  # synthetic corpora are already tokenised: skip Moses/jieba
    description: str = ""
    task: RemoteTask | None = None  # remote: the paper-scale task (either direction)
    synthetic_task: str | None = None  # synthetic: "copy" | "reverse" | "reorder"
    manual_keys: tuple[str, ...] = ()  # remote: params keys of user-supplied parts
    size_keys: tuple[str, ...] = ()  # keys `sizes` may set for this corpus
    ignored_size_keys: tuple[str, ...] = ()  # keys `sizes` may carry that this corpus does not use
    escaped_splits: tuple[str, ...] = ()  # splits that come Moses-tokenised and XML-escaped: unescaped, not tokenised

    def __post_init__(self):
        if self.kind not in KINDS:
            raise PipelineError(f"corpus '{self.name}': kind '{self.kind}' is not one of {KINDS}")

    @property
    def language_free(self) -> bool:
        """True when src/tgt are placeholders and the caller chooses the file suffixes (toy corpora)."""
        return self.kind == "synthetic"


def _toy_specs() -> dict[str, CorpusSpec]:
    """toy-copy, toy-reverse, toy-reorder: already tokenised, language-free."""
    return {name: CorpusSpec(name, "src", "tgt", "synthetic", True, f"synthetic {task} task",
                             synthetic_task=task, size_keys=SYNTHETIC_SIZE_KEYS)
            for name, task in TOY_TASKS.items()}


def _remote_specs() -> dict[str, CorpusSpec]:
    """<prefix>-<src>-<tgt> (e.g. wmt14-en-de, wmt14-de-en, nist12-zh-en) for each registered direction of a task."""
    specs = {}
    for task in REMOTE_TASKS.values():
        keys = tuple(f.key for f in task.manual_members())
        prefix = task.name.split()[0]
        for src, tgt in (task.langs, task.langs[::-1])[: 2 if task.both_directions else 1]:
            name = f"{prefix}-{src}-{tgt}"
            # The papers' dev/test sets are fixed: valid_size/test_size (set for every corpus) do not apply.
            specs[name] = CorpusSpec(name, src, tgt, "remote", False, f"{task.name} ({task.url}), {src}->{tgt}",
                                     task=task, manual_keys=keys, ignored_size_keys=EMBEDDED_SIZE_KEYS,
                                     escaped_splits=("train",) if task.tokenized_train else ())
    return specs


def _generation_specs() -> dict[str, CorpusSpec]:
    """standin-summarization, standin-dialogue (seeded splits, sizes apply) and cnndm, personachat (fixed splits)."""
    specs = {}
    for name, task in GENERATION_TASKS.items():
        if isinstance(task, StandinTask):
            specs[name] = CorpusSpec(name, task.src, task.tgt, "generation", False, task.standin,
                                     size_keys=EMBEDDED_SIZE_KEYS)
        else:
            specs[name] = CorpusSpec(name, task.src, task.tgt, "generation", False, f"{task.paper} ({task.url})",
                                     ignored_size_keys=EMBEDDED_SIZE_KEYS)
    return specs


def _embedded_specs() -> dict[str, CorpusSpec]:
    """l10n-<src>-<tgt> for every embedded direction (imports the embedded module lazily)."""
    from pipeline.data.embedded import EMBEDDED_PAIRS

    return {f"l10n-{s}-{t}": CorpusSpec(f"l10n-{s}-{t}", s, t, "embedded", False,
                                        f"software localisation catalogs, {s}->{t}", size_keys=EMBEDDED_SIZE_KEYS)
            for s, t in EMBEDDED_PAIRS}


@dataclass(frozen=True)
class PreprocessFacts:
    """What a paper states about preparing one corpus, for the lead to set params from (not applied here)."""

    max_words: int | None  # sentences longer than this are removed (the clean step's max_len, which counts them)
    bpe_merges: int  # BPE vocabulary size / merge operations (0: no BPE)
    joint_bpe: bool  # one BPE model and vocabulary for both sides
    zh_segmenter: str | None = None  # Chinese word segmentation the paper used
    references: int = 1  # references per test sentence
    source: str = ""
    bpe_sides: tuple[str, ...] = ("src", "tgt")  # the sides BPE segments (the others keep words; () for none)
    vocab_size: int | None = None  # types kept per vocabulary (the rest UNK); None: the paper names no cap
    train_pairs: int | None = None  # training pairs as the paper states them (possibly rounded)
    kept_pairs: int | None = None  # of those, left after the paper's length filter


# Each paper's facts, by corpus name: pipeline/papers/<paper>/preprocess.py.


@functools.cache
def _static() -> dict[str, CorpusSpec]:
    """Specs that need no other module."""
    return {**_toy_specs(), **_remote_specs(), **_generation_specs()}


@functools.cache
def all_corpora() -> dict[str, CorpusSpec]:
    """Every registered corpus by name."""
    return {**_embedded_specs(), **_static()}


def __getattr__(attr: str):
    """CORPORA is built on first use, so importing this module never imports the embedded builder."""
    if attr == "CORPORA":
        return all_corpora()
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


CORPORA: dict[str, CorpusSpec]  # provided by __getattr__ (PEP 562)


def get_corpus(name: str) -> CorpusSpec:
    """The spec named `name`; unknown -> PipelineError listing close matches."""
    if name in _static():
        return _static()[name]
    corpora = all_corpora()
    if name in corpora:
        return corpora[name]
    close = difflib.get_close_matches(name, list(corpora), n=5, cutoff=0.6)
    hint = f"did you mean {', '.join(close)}?" if close else f"known corpora: {', '.join(sorted(corpora))}"
    raise PipelineError(f"unknown corpus '{name}'; {hint}")


def _check_sizes(spec: CorpusSpec, sizes: dict | None) -> dict:
    """`sizes` without the keys this corpus ignores; any other key must be accepted, with a positive int."""
    sizes = {k: v for k, v in (sizes or {}).items() if k not in spec.ignored_size_keys}
    for key, value in sizes.items():
        if key not in spec.size_keys:
            allowed = ", ".join(spec.size_keys) or "none"
            raise PipelineError(f"corpus '{spec.name}': sizes key '{key}' is not supported; allowed keys: {allowed}")
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise PipelineError(f"corpus '{spec.name}': sizes.{key} = {value!r}; expected a positive integer")
    return sizes


def _resolve_langs(spec: CorpusSpec, langs: tuple[str, str] | None) -> tuple[str, str]:
    """File suffixes (src, tgt): the caller's for toy corpora, else the spec's own direction."""
    if langs is None:
        return spec.src, spec.tgt
    if len(langs) != 2 or langs[0] == langs[1] or not all(isinstance(x, str) and _LANG_CODE.match(x) for x in langs):
        raise PipelineError(f"corpus '{spec.name}': langs = {langs!r}; "
                            f"expected two different codes such as ('en', 'de')")
    src, tgt = langs
    if spec.language_free or (src, tgt) == (spec.src, spec.tgt):
        return src, tgt
    same = [n for n, s in all_corpora().items() if s.kind == spec.kind and (s.src, s.tgt) == (src, tgt)]
    hint = f"use {', '.join(same)}" if same else "no registered corpus of this kind covers that direction"
    raise PipelineError(f"corpus '{spec.name}' is {spec.src}->{spec.tgt}, but langs = ({src!r}, {tgt!r}); {hint}")


def fetch_spec(spec: CorpusSpec, out_dir: Path, cache_dir: Path, *, manual: dict[str, str] | None = None,
               seed: int = 1, sizes: dict | None = None, langs: tuple[str, str] | None = None,
               progress: bool = True) -> dict:
    """Build the raw layout of `spec` in `out_dir` (downloads cached in `cache_dir`); returns the data card."""
    sizes = _check_sizes(spec, sizes)
    src, tgt = _resolve_langs(spec, langs)
    out_dir, cache_dir = Path(out_dir), Path(cache_dir)
    if spec.kind == "embedded":
        from pipeline.data.embedded import build_embedded

        return build_embedded(src, tgt, out_dir, cache_dir, seed=seed, **sizes)
    if spec.kind == "synthetic":
        from pipeline.data.synthetic import build_synthetic

        return build_synthetic(spec.synthetic_task, out_dir, src=src, tgt=tgt, seed=seed, **sizes)
    if spec.kind == "generation":
        from pipeline.data.generation import build_generation

        return build_generation(spec.name, out_dir, cache_dir, seed=seed, progress=progress, **sizes)
    # Remote corpora are built deterministically in a fixed order: `seed` does not apply.
    return build_remote(spec.task, src, tgt, out_dir, cache_dir, manual=manual, name=spec.name, progress=progress)


def fetch_corpus(name: str, out_dir: Path, cache_dir: Path, *, manual: dict[str, str] | None = None,
                 seed: int = 1, sizes: dict | None = None, langs: tuple[str, str] | None = None,
                 progress: bool = True, test_sets: tuple[str, ...] = ("test",)) -> dict:
    """Build corpus `name` in `out_dir`; toy corpora take their file suffixes from `langs`; test sets the source does
    not build are cut from its test split (pipeline/data/test_splits.py). Returns the data card."""
    from pipeline.data.test_splits import ensure_test_sets

    spec = get_corpus(name)
    card = fetch_spec(spec, out_dir, cache_dir, manual=manual, seed=seed, sizes=sizes, langs=langs, progress=progress)
    parts = ensure_test_sets(Path(out_dir), *_resolve_langs(spec, langs), test_sets)
    if parts:
        card["test_sets"] = parts
    return card
