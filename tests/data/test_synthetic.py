"""Synthetic toy tasks: exact outputs for a fixed seed, task relations on every line, determinism, card."""
from __future__ import annotations

import json

import pytest

from pipeline.data.synthetic import SYNTHETIC_TASKS, build_synthetic, synthetic_pairs
from pipeline.errors import PipelineError
from pipeline.fileio import read_lines

SPLITS = ("train", "valid", "test")


def reorder_reference(source: str) -> str:
    """Independent statement of the reorder grammar: "A* n v A* n" -> "N A*(mirrored) ga N A*(mirrored) o V"."""
    tokens = source.split()
    verb_at = next(i for i, t in enumerate(tokens) if t.startswith("v"))
    subject, verb, obj = tokens[:verb_at], tokens[verb_at], tokens[verb_at + 1:]

    def phrase(words: list[str]) -> list[str]:
        *adjs, noun = words
        assert noun.startswith("n") and all(a.startswith("a") for a in adjs)
        return [noun.upper()] + [a.upper() for a in reversed(adjs)]

    return " ".join(phrase(subject) + ["ga"] + phrase(obj) + ["o", verb.upper()])


def test_exact_pairs_for_seed_1():
    assert synthetic_pairs("copy", 2, seed=1) == [
        ("w18 w2 w8 w3 w15", "w18 w2 w8 w3 w15"),
        ("w15 w20 w12 w6 w3 w15 w0 w12 w13 w19", "w15 w20 w12 w6 w3 w15 w0 w12 w13 w19"),
    ]
    assert synthetic_pairs("reverse", 2, seed=1) == [
        ("w18 w2 w8 w3 w15", "w15 w3 w8 w2 w18"),
        ("w15 w20 w12 w6 w3 w15 w0 w12 w13 w19", "w19 w13 w12 w0 w15 w3 w6 w12 w20 w15"),
    ]
    assert synthetic_pairs("reorder", 3, seed=1) == [
        ("a0 a2 n1 v3 n7", "N1 A2 A0 ga N7 o V3"),
        ("a1 a0 a3 a0 a3 a3 n9 v0 a5 n7", "N9 A3 A3 A0 A3 A0 A1 ga N7 A5 o V0"),
        ("a4 n1 v2 a0 a0 a0 n10", "N1 A4 ga N10 A0 A0 A0 o V2"),
    ]


def test_exact_file_lines_for_seed_1(tmp_path):
    build_synthetic("reorder", tmp_path, train_size=5, valid_size=2, test_size=2, seed=1)
    assert read_lines(tmp_path / "train.src")[:2] == ["a0 a2 n1 v3 n7", "a1 a0 a3 a0 a3 a3 n9 v0 a5 n7"]
    assert read_lines(tmp_path / "train.tgt")[:2] == ["N1 A2 A0 ga N7 o V3", "N9 A3 A3 A0 A3 A0 A1 ga N7 A5 o V0"]


@pytest.mark.parametrize("task", SYNTHETIC_TASKS)
def test_relation_holds_on_every_line(tmp_path, task):
    card = build_synthetic(task, tmp_path, train_size=300, valid_size=40, test_size=40, seed=7)
    sources_by_split = {}
    for split in SPLITS:
        src, tgt = read_lines(tmp_path / f"{split}.src"), read_lines(tmp_path / f"{split}.tgt")
        assert len(src) == len(tgt) == card["counts"][split]
        for s, t in zip(src, tgt):
            assert 3 <= len(s.split()) <= 10
            if task == "copy":
                assert t == s
            elif task == "reverse":
                assert t.split() == s.split()[::-1]
            else:
                assert t == reorder_reference(s)
                assert len(t.split()) == len(s.split()) + 2
        sources_by_split[split] = set(src)
    assert card["counts"] == {"train": 300, "valid": 40, "test": 40}
    assert not (sources_by_split["train"] & sources_by_split["valid"]
                or sources_by_split["train"] & sources_by_split["test"]
                or sources_by_split["valid"] & sources_by_split["test"])


def test_vocabulary_and_lengths_respect_arguments():
    pairs = synthetic_pairs("copy", 200, vocab_size=5, min_len=2, max_len=4, seed=2)
    assert {tok for s, _ in pairs for tok in s.split()} == {"w0", "w1", "w2", "w3", "w4"}
    assert {len(s.split()) for s, _ in pairs} == {2, 3, 4}
    reorder = synthetic_pairs("reorder", 100, vocab_size=8, min_len=3, max_len=5, seed=2)
    words = {tok for s, _ in reorder for tok in s.split()}
    assert words <= {"n0", "n1", "n2", "n3", "a0", "a1", "v0", "v1"} and {"n3", "a1", "v1"} <= words


def test_same_seed_same_bytes_other_seed_differs(tmp_path):
    names = [f"{split}.{side}" for split in SPLITS for side in ("src", "tgt")] + ["datacard.json", "datacard.md"]
    for task in SYNTHETIC_TASKS:
        a, b, c = tmp_path / f"{task}-a", tmp_path / f"{task}-b", tmp_path / f"{task}-c"
        build_synthetic(task, a, train_size=50, valid_size=10, test_size=10, seed=3)
        build_synthetic(task, b, train_size=50, valid_size=10, test_size=10, seed=3)
        build_synthetic(task, c, train_size=50, valid_size=10, test_size=10, seed=4)
        assert all((a / n).read_bytes() == (b / n).read_bytes() for n in names)
        assert (a / "train.src").read_bytes() != (c / "train.src").read_bytes()


def test_card_counts_and_suffixes(tmp_path):
    card = build_synthetic("reverse", tmp_path, src="de", tgt="en", train_size=20, valid_size=3, test_size=4)
    assert json.loads((tmp_path / "datacard.json").read_text(encoding="utf-8")) == card
    assert card["counts"] == {split: len(read_lines(tmp_path / f"{split}.de")) for split in SPLITS}
    assert card["counts"] == {"train": 20, "valid": 3, "test": 4}
    lengths = [len(line.split()) for line in read_lines(tmp_path / "train.de")]
    assert card["mean_length"]["train"]["de"] == round(sum(lengths) / len(lengths), 2)
    assert "| train | 20 |" in (tmp_path / "datacard.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("kwargs,message", [
    ({"task": "sort"}, "expected one of copy, reverse, reorder"),
    ({"task": "copy", "min_len": 5, "max_len": 4}, "expected 1 <= min_len <= max_len"),
    ({"task": "reorder", "min_len": 1, "max_len": 2}, "expected >= 3"),
    ({"task": "reorder", "vocab_size": 2}, "vocab_size=2"),
    ({"task": "copy", "vocab_size": 1, "min_len": 1, "max_len": 1, "n": 2}, "cannot draw 2 distinct"),
])
def test_bad_arguments_raise_pipeline_error(kwargs, message):
    kwargs = {"n": 5, **kwargs}
    task, n = kwargs.pop("task"), kwargs.pop("n")
    with pytest.raises(PipelineError, match=message):
        synthetic_pairs(task, n, **kwargs)


def test_build_rejects_negative_sizes_and_equal_suffixes(tmp_path):
    with pytest.raises(PipelineError, match="expected non-negative sizes"):
        build_synthetic("copy", tmp_path, train_size=-1)
    with pytest.raises(PipelineError, match="expected two different suffixes"):
        build_synthetic("copy", tmp_path, src="x", tgt="x")
    assert list(tmp_path.iterdir()) == []
