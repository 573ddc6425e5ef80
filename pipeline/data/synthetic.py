"""Synthetic toy translation tasks (copy, reverse, reorder), generated in-process and deterministic per seed.

Tokens are short words, already space separated. copy: target = source; reverse: target = source reversed;
reorder: a tiny grammar (our choice) that a seq2seq model must reorder: SVO sources with adjective-noun
phrases become SOV targets with noun-adjective phrases (adjectives mirrored), case particles and distinct
target word forms, e.g. "a1 n4 v0 n2" -> "N4 A1 ga N2 o V0". Its gold word alignments are known by construction
(reorder_links; written as <split>.links beside the reorder task's splits).
"""
from __future__ import annotations

import random
import re
from pathlib import Path

from pipeline.data.corpus_files import write_corpus
from pipeline.errors import PipelineError
from pipeline.fileio import write_lines

SYNTHETIC_TASKS = ("copy", "reverse", "reorder")
SUBJECT_MARK, OBJECT_MARK = "ga", "o"  # target-side case particles of the reorder grammar
REORDER_MIN_LEN = 3  # noun verb noun
_REORDER_WORD = re.compile(r"^[anv]\d+$")  # a source word of the reorder grammar: adjective, noun or verb


def _check(task: str, vocab_size: int, min_len: int, max_len: int) -> None:
    """PipelineError naming the bad argument and what was expected."""
    if task not in SYNTHETIC_TASKS:
        raise PipelineError(f"synthetic task {task!r}: expected one of {', '.join(SYNTHETIC_TASKS)}")
    if not 1 <= min_len <= max_len:
        raise PipelineError(f"synthetic {task}: min_len={min_len}, max_len={max_len}; expected 1 <= min_len <= max_len")
    if task == "reorder" and max_len < REORDER_MIN_LEN:
        raise PipelineError(f"synthetic reorder: max_len={max_len}; expected >= {REORDER_MIN_LEN} (noun verb noun)")
    if vocab_size < (3 if task == "reorder" else 1):
        raise PipelineError(f"synthetic {task}: vocab_size={vocab_size}; expected >= {3 if task == 'reorder' else 1}")


def reorder_lexicon(vocab_size: int) -> tuple[int, int, int]:
    """(nouns, adjectives, verbs) counts splitting vocab_size: half nouns, a quarter adjectives, rest verbs."""
    nouns = max(1, vocab_size // 2)
    adjectives = max(1, vocab_size // 4)
    return nouns, adjectives, max(1, vocab_size - nouns - adjectives)


def _word_sentence(rng: random.Random, vocab_size: int, min_len: int, max_len: int) -> list[str]:
    """Uniform length in [min_len, max_len], uniform tokens w0..w{vocab_size-1}."""
    return [f"w{rng.randrange(vocab_size)}" for _ in range(rng.randint(min_len, max_len))]


def _reorder_sentence(rng: random.Random, vocab_size: int, min_len: int, max_len: int) -> tuple[list[str], list[str]]:
    """One SVO source with adjective-noun phrases and its SOV, noun-adjective target."""
    nouns, adjectives, verbs = reorder_lexicon(vocab_size)
    length = rng.randint(max(min_len, REORDER_MIN_LEN), max_len)
    subject_adjs = rng.randint(0, length - REORDER_MIN_LEN)
    object_adjs = length - REORDER_MIN_LEN - subject_adjs

    def phrase(n_adjs: int) -> tuple[list[str], list[str]]:
        adjs = [rng.randrange(adjectives) for _ in range(n_adjs)]
        noun = rng.randrange(nouns)
        return [f"a{a}" for a in adjs] + [f"n{noun}"], [f"N{noun}"] + [f"A{a}" for a in reversed(adjs)]

    subj_src, subj_tgt = phrase(subject_adjs)
    verb = rng.randrange(verbs)
    obj_src, obj_tgt = phrase(object_adjs)
    source = subj_src + [f"v{verb}"] + obj_src
    target = subj_tgt + [SUBJECT_MARK] + obj_tgt + [OBJECT_MARK, f"V{verb}"]
    return source, target


def _phrase(words: list[str], source: str) -> tuple[list[str], str]:
    """(adjectives, noun) of a source phrase "a<k>* n<k>"; anything else is an error naming the source."""
    if not words or words[-1][0] != "n" or not all(w[0] == "a" for w in words[:-1]):
        raise PipelineError(f"reorder source {source!r}: phrase {' '.join(words)!r}; expected adjectives a<k> then "
                            f"a noun n<k>")
    return words[:-1], words[-1]


def reorder_links(source: str, target: str) -> str:
    """Gold alignment of a reorder pair: "i-j" sure links of each target content word to its source word (positions
    from the grammar, so repeated words are resolved), "i?j" possible links of the particles to their phrase's noun.

    Links come in target order; i indexes source words, j target words (0-based). A pair the grammar cannot have
    produced is a PipelineError."""
    words = source.split()
    bad = next((w for w in words if not _REORDER_WORD.match(w)), None)
    if bad is not None:
        raise PipelineError(f"reorder source {source!r}: word {bad!r}; expected a<k>, n<k> or v<k>")
    verbs = [i for i, w in enumerate(words) if w[0] == "v"]
    if len(verbs) != 1:
        raise PipelineError(f"reorder source {source!r}: {len(verbs)} verbs v<k>; expected exactly one")
    verb = verbs[0]
    subj_adjs, subj_noun = _phrase(words[:verb], source)
    obj_adjs, obj_noun = _phrase(words[verb + 1:], source)
    subj_at, obj_at = len(subj_adjs), len(words) - 1  # source positions of the two nouns
    # (target word, source position, sure) in target order: noun, adjectives mirrored, particle; then the verb.
    aligned = [(subj_noun.upper(), subj_at, True)]
    aligned += [(words[i].upper(), i, True) for i in reversed(range(len(subj_adjs)))]
    aligned += [(SUBJECT_MARK, subj_at, False), (obj_noun.upper(), obj_at, True)]
    aligned += [(words[i].upper(), i, True) for i in reversed(range(verb + 1, obj_at))]
    aligned += [(OBJECT_MARK, obj_at, False), (words[verb].upper(), verb, True)]
    expected = " ".join(word for word, _, _ in aligned)
    if target.split() != expected.split():
        raise PipelineError(f"reorder pair {source!r} -> {target!r}: expected the target {expected!r}")
    return " ".join(f"{i}{'-' if sure else '?'}{j}" for j, (_, i, sure) in enumerate(aligned))


def synthetic_pairs(task: str, n: int, *, vocab_size: int = 24, min_len: int = 3, max_len: int = 10,
                    seed: int = 1) -> list[tuple[str, str]]:
    """n (source, target) pairs with distinct sources, deterministic given the arguments.

    min_len/max_len bound the source length in tokens; reorder targets are two tokens longer (the particles).
    """
    _check(task, vocab_size, min_len, max_len)
    rng = random.Random(seed)
    pairs, seen = [], set()
    attempts = 0
    while len(pairs) < n:
        attempts += 1
        if attempts > 100 * n + 1000:
            raise PipelineError(f"synthetic {task}: cannot draw {n} distinct sentences from vocab_size={vocab_size}, "
                                f"lengths {min_len}..{max_len}; expected a larger vocabulary or length range")
        if task == "reorder":
            source, target = _reorder_sentence(rng, vocab_size, min_len, max_len)
        else:
            source = _word_sentence(rng, vocab_size, min_len, max_len)
            target = source if task == "copy" else source[::-1]
        line = " ".join(source)
        if line not in seen:
            seen.add(line)
            pairs.append((line, " ".join(target)))
    return pairs


def build_synthetic(task: str, out_dir: Path, *, src: str = "src", tgt: str = "tgt", train_size: int = 2000,
                    valid_size: int = 100, test_size: int = 100, vocab_size: int = 24, min_len: int = 3,
                    max_len: int = 10, seed: int = 1) -> dict:
    """Write train/valid/test files and a data card for a toy task; return the card. No source is in two splits."""
    if min(train_size, valid_size, test_size) < 0:
        raise PipelineError(f"synthetic {task}: train_size={train_size}, valid_size={valid_size}, "
                            f"test_size={test_size}; expected non-negative sizes")
    if src == tgt:
        raise PipelineError(f"synthetic {task}: src and tgt are both {src!r}; expected two different suffixes")
    pairs = synthetic_pairs(task, train_size + valid_size + test_size, vocab_size=vocab_size, min_len=min_len,
                            max_len=max_len, seed=seed)
    splits = {"train": pairs[:train_size], "valid": pairs[train_size:train_size + valid_size],
              "test": pairs[train_size + valid_size:]}
    if task == "reorder":  # gold alignments known by construction, one line per pair
        for split, split_pairs in splits.items():
            write_lines(Path(out_dir) / f"{split}.links", [reorder_links(s, t) for s, t in split_pairs])
    card = {
        "name": f"synthetic-{task}",
        "kind": "synthetic",
        "src": src,
        "tgt": tgt,
        "description": _DESCRIPTIONS[task],
        "settings": {"task": task, "train_size": train_size, "valid_size": valid_size, "test_size": test_size,
                     "vocab_size": vocab_size, "min_len": min_len, "max_len": max_len, "seed": seed},
    }
    return write_corpus(Path(out_dir), src, tgt, splits, card)


_DESCRIPTIONS = {
    "copy": "Synthetic copy task: random token sequences; the target equals the source.",
    "reverse": "Synthetic reverse task: random token sequences; the target is the source reversed.",
    "reorder": ("Synthetic reordering grammar: SVO sources with adjective-noun phrases map to SOV targets with "
                "noun-adjective phrases (adjectives mirrored), case particles 'ga'/'o' and upper-case target "
                "word forms."),
}
