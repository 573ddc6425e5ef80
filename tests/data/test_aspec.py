"""ASPEC-JE (shu2016), user-supplied: the release's directory read as it is laid out, Japanese and English taken
from their " ||| " fields (train-N.txt: fields 4-5; dev and test: fields 3-4), the three training files in order,
and a missing key named."""
import pytest

from pipeline.data.registry import CORPORA, fetch_corpus, get_corpus
from pipeline.errors import PipelineError
from pipeline.fileio import read_lines


def write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def aspec_dir(root):
    """An ASPEC-JE directory with invented sentences in the release's file layout."""
    for k in (1, 2, 3):
        write(root / f"train/train-{k}.txt", [f"0.9{k} ||| doc{k} ||| {k} ||| 文{k} ||| sentence {k}"])
    write(root / "dev/dev.txt", ["1 ||| docd ||| 開発 ||| dev one", "2 ||| docd ||| 開発二 ||| dev two"])
    write(root / "test/test.txt", ["1 ||| doct ||| 試験 ||| test one"])
    return str(root)


def test_aspec_fetch_reads_the_release_columns(tmp_path):
    corpus = get_corpus("aspec-en-ja")
    assert (corpus.src, corpus.tgt, corpus.manual_keys) == ("en", "ja", ("aspec_je",))
    assert "aspec-ja-en" not in CORPORA  # registered in the paper's direction only
    out = tmp_path / "raw"
    card = fetch_corpus("aspec-en-ja", out, tmp_path / "cache", manual={"aspec_je": aspec_dir(tmp_path / "ASPEC-JE")},
                        progress=False)
    assert card["counts"] == {"train": 3, "valid": 2, "test": 1}
    assert read_lines(out / "train.en") == ["sentence 1", "sentence 2", "sentence 3"]
    assert read_lines(out / "train.ja") == ["文1", "文2", "文3"]
    assert read_lines(out / "valid.ja") == ["開発", "開発二"] and read_lines(out / "valid.en") == ["dev one", "dev two"]
    assert read_lines(out / "test.en") == ["test one"] and read_lines(out / "test.ja") == ["試験"]


def test_a_missing_aspec_key_is_named(tmp_path):
    with pytest.raises(PipelineError, match=r"paths\.manual\.aspec_je"):
        fetch_corpus("aspec-en-ja", tmp_path / "raw", tmp_path / "cache", manual={}, progress=False)


def test_a_short_aspec_line_names_file_and_line(tmp_path):
    root = tmp_path / "ASPEC-JE"
    aspec_dir(root)
    write(root / "dev/dev.txt", ["1 ||| docd ||| 開発 ||| dev one", "2 ||| only three ||| fields"])
    with pytest.raises(PipelineError, match=r"dev\.txt:2"):
        fetch_corpus("aspec-en-ja", tmp_path / "raw", tmp_path / "cache", manual={"aspec_je": str(root)},
                     progress=False)
