"""Several test sets cut from one held-out split (pipeline/data/test_splits.py)."""
from __future__ import annotations

import json

import pytest

from pipeline.data.test_splits import ensure_test_sets
from pipeline.errors import PipelineError


def _layout(tmp_path, n=7):
    (tmp_path / "test.en").write_text("".join(f"e{i}\n" for i in range(n)), encoding="utf-8")
    (tmp_path / "test.de").write_text("".join(f"d{i}\n" for i in range(n)), encoding="utf-8")
    (tmp_path / "datacard.json").write_text(json.dumps({"name": "x"}), encoding="utf-8")


def _lines(path):
    return path.read_text(encoding="utf-8").splitlines()


def test_the_test_split_is_cut_into_consecutive_near_equal_parts(tmp_path):
    _layout(tmp_path)
    parts = ensure_test_sets(tmp_path, "en", "de", ("test", "test-nt15", "test-nt16"))
    assert parts == {"test": [0, 3], "test-nt15": [3, 5], "test-nt16": [5, 7]}
    assert _lines(tmp_path / "test.en") == ["e0", "e1", "e2"]
    assert _lines(tmp_path / "test-nt15.de") == ["d3", "d4"]
    assert _lines(tmp_path / "test-nt16.en") == ["e5", "e6"]
    card = json.loads((tmp_path / "datacard.json").read_text(encoding="utf-8"))
    assert card["test_sets"]["parts"]["test-nt16"] == [5, 7] and card["test_sets"]["cut_from"] == "test (7 lines)"


def test_a_source_that_builds_its_test_sets_is_left_alone(tmp_path):
    _layout(tmp_path)
    for lang in ("en", "de"):
        (tmp_path / f"test-nt15.{lang}").write_text("x\n", encoding="utf-8")
    assert ensure_test_sets(tmp_path, "en", "de", ("test", "test-nt15")) == {}
    assert len(_lines(tmp_path / "test.en")) == 7
    assert ensure_test_sets(tmp_path, "en", "de", ("test",)) == {}


def test_errors_name_the_problem(tmp_path):
    _layout(tmp_path, n=2)
    with pytest.raises(PipelineError, match="2 lines cannot make 3 test sets"):
        ensure_test_sets(tmp_path, "en", "de", ("test", "test-a", "test-b"))
    with pytest.raises(PipelineError, match="'test' first"):
        ensure_test_sets(tmp_path, "en", "de", ("test-a", "test"))
    (tmp_path / "test-a.en").write_text("x\n", encoding="utf-8")
    with pytest.raises(PipelineError, match="has test-a but not test-b"):
        ensure_test_sets(tmp_path, "en", "de", ("test", "test-a", "test-b"))
