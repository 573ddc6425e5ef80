"""zeng2021's corpora: registry entries (WMT14 En-Fr, WMT17 En-Lv/Fi/Tr, NIST12 Zh-En), preprocessing facts,
and the builder features they need (bitext columns, .gz inside a tar, query URLs, extra test sets)."""
from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest
from loopback import make_tgz, make_zip
from sacrebleu.dataset import DATASETS

from pipeline.data import registry
from pipeline.data.registry import fetch_corpus, get_corpus
from pipeline.data.remote.build import build_remote
from pipeline.data.remote.entries import Member, ParallelPart, RemoteFile, RemoteTask, part
from pipeline.errors import PipelineError
from pipeline.papers.zeng2021.preprocess import ZENG2021_PREPROCESS

FI = ["Hyvää huomenta", "Kiitos"]
EN = ["Good morning", "Thank you"]
FR = ["Bonjour", "Merci"]
DEV = (["Hei ."], ["Hi ."])


def text(lines: list[str]) -> bytes:
    return "".join(x + "\n" for x in lines).encode()


def read(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


ZENG_NAMES = ["wmt14-en-de", "wmt14-de-en", "wmt14-en-fr", "wmt14-fr-en", "wmt17-en-lv", "wmt17-lv-en",
              "wmt17-en-fi", "wmt17-fi-en", "wmt17-en-tr", "wmt17-tr-en", "nist12-zh-en"]


def test_every_zeng2021_direction_is_registered_with_its_eval_sets():
    assert set(ZENG_NAMES) <= set(registry.CORPORA) and "nist12-en-zh" not in registry.CORPORA
    for name in ZENG_NAMES:  # <task>-<src>-<tgt>: the name states the direction, one of its task's
        spec = get_corpus(name)
        assert spec.kind == "remote" and name.endswith(f"-{spec.src}-{spec.tgt}"), name
        assert {spec.src, spec.tgt} == set(spec.task.langs), name
    expected = {"wmt14-en-fr": ("wmt13", "wmt14/full"), "wmt17-en-lv": ("wmt17/dev", "wmt17"),
                "wmt17-en-fi": ("wmt16", "wmt17"), "wmt17-en-tr": ("wmt16", "wmt17")}
    for name, sets in expected.items():
        spec = get_corpus(name)
        assert (spec.task.valid.test_set, spec.task.test.test_set) == sets and not spec.manual_keys
        for direction in (name, name[:6] + "-".join(name.split("-")[1:][::-1])):
            s = get_corpus(direction)
            assert all(f"{s.src}-{s.tgt}" in DATASETS[t].langpairs for t in sets), direction


def test_training_files_carry_sockeye_checksums_and_both_sides():
    fr = get_corpus("wmt14-fr-en").task
    assert [p.name for p in fr.train] == ["europarl-v7", "commoncrawl", "un-wmt13", "news-commentary-v9", "giga-fren"]
    assert fr.train[4].member("fr").file.md5 == "0b12e20027d5b5f0dfcca290c72c8953"
    assert fr.train[2].member("en").file.md5 == "bb25a213ba9140023e4cc82c778bef53"
    lv = get_corpus("wmt17-lv-en").task
    assert [p.member("lv").file.md5 for p in lv.train] == [
        "07b77f254d189a5bfb7b43b7fc489716", "17a3a1846433ad26acb95da02f93af93", "3f367e86924f910cb1e969de57caf63c",
        "0f949102e8501dfb3c99d3e3f545b4f9", "7073092421b1259158446870990a9ca5"]
    fi = get_corpus("wmt17-en-fi").task
    wiki = fi.train[1]
    assert (wiki.member("fi").column, wiki.member("en").column) == (0, 1)
    assert wiki.member("fi").file.md5 == "f74eef43032766d55884a5073ed8ce27"
    tr = get_corpus("wmt17-tr-en").task.train[0].member("tr").file
    assert tr.md5 == "544cec8a631f7820afab6a05451c13a7" and tr.filename == "SETIMES2.en-tr.txt.zip"
    for name in ZENG_NAMES[:-1]:
        task = get_corpus(name).task
        assert all(m.file.verified and m.file.source for p in task.train for _, m in p.sides), name


def test_preprocessing_facts():
    assert set(ZENG2021_PREPROCESS) == set(ZENG_NAMES)
    assert all(f.max_words == 256 for f in ZENG2021_PREPROCESS.values())
    assert {n: f.bpe_merges for n, f in ZENG2021_PREPROCESS.items() if f.bpe_merges == 40000} == {
        "wmt14-en-de": 40000, "wmt14-de-en": 40000, "wmt14-en-fr": 40000, "wmt14-fr-en": 40000}
    nist = ZENG2021_PREPROCESS["nist12-zh-en"]
    assert (nist.bpe_merges, nist.joint_bpe, nist.zh_segmenter, nist.references) == (32000, False, "thulac", 4)
    assert ZENG2021_PREPROCESS["wmt17-tr-en"].joint_bpe and ZENG2021_PREPROCESS["wmt17-tr-en"].bpe_merges == 32000


def nist_dir(root: Path) -> dict[str, str]:
    """A user-supplied NIST layout with invented sentences: train dir and an eval dir (MT02-MT08, 4 refs)."""
    train, evals = root / "train", root / "eval"
    train.mkdir(parents=True)
    evals.mkdir()
    (train / "train.zh").write_bytes(text(["你好", "谢谢", "再见"]))
    (train / "train.en").write_bytes(text(["hello", "thanks", "bye"]))
    for year in ("02", "03", "04", "05", "06", "08"):
        (evals / f"mt{year}.zh").write_bytes(text([f"句子 {year}"] * int(year[1])))
        for r in range(4):
            (evals / f"mt{year}.en{r}").write_bytes(text([f"sentence {year} ref {r}"] * int(year[1])))
    return {"nist12_zh_en_train": str(train), "nist_zh_en_eval": str(evals)}


def test_nist_builds_dev_and_five_test_sets_from_user_files(tmp_path):
    with pytest.raises(PipelineError, match=r"set params key 'paths\.manual\.nist12_zh_en_train'.*train\.zh"):
        fetch_corpus("nist12-zh-en", tmp_path / "o", tmp_path / "c", manual={})
    manual = nist_dir(tmp_path / "user")
    card = fetch_corpus("nist12-zh-en", tmp_path / "o", tmp_path / "c", manual=manual, progress=False)
    out = tmp_path / "o"
    assert card["counts"] == {"train": 3, "valid": 2, "test": 3, "test-mt04": 4, "test-mt05": 5, "test-mt06": 6,
                              "test-mt08": 8}
    assert read(out / "train.zh") == ["你好", "谢谢", "再见"]
    assert read(out / "valid.en") == ["sentence 02 ref 0"] * 2
    assert read(out / "test-mt08.zh") == ["句子 08"] * 8 and read(out / "test.en") == ["sentence 03 ref 0"] * 3
    for k in (1, 2, 3):  # all four references of every NIST set, line-aligned: <split>.en.1 .. .3
        assert read(out / f"test.en.{k}") == [f"sentence 03 ref {k}"] * 3
        assert read(out / f"test-mt05.en.{k}") == [f"sentence 05 ref {k}"] * 5
    assert not (out / "test.en.4").exists()
    assert json.loads((out / "datacard.json").read_text(encoding="utf-8"))["unverified"] == [
        "paths.manual.nist12_zh_en_train", "paths.manual.nist_zh_en_eval"]
    with pytest.raises(PipelineError, match=r"registered for zh->en only; got src='en', tgt='zh'"):
        build_remote(get_corpus("nist12-zh-en").task, "en", "zh", tmp_path / "r", tmp_path / "c", manual=manual)


@pytest.fixture
def served(server):
    """A .tgz with a 'fi ||| en' bitext, a .tar whose members are .gz files, a zip behind a query URL."""
    wiki = make_tgz({"wiki/fi-en/titles.fi-en": text([f"{f} ||| {e}" for f, e in zip(FI, EN)])})
    giga = make_tgz({"g.en.gz": gzip.compress(text(EN), mtime=0), "g.fr.gz": gzip.compress(text(FR), mtime=0)})
    opus = make_zip({"S.en-fi.en": text(EN), "S.en-fi.fi": text(FI)})
    dev = make_tgz({"dev.fi": text(DEV[0]), "dev.en": text(DEV[1])})
    server.files = {"/wiki.tgz": wiki, "/giga.tgz": giga, "/download.php?f=S/en-fi.txt.zip": opus, "/dev.tgz": dev}
    return {k: RemoteFile(k, server.url(p), md5=md5(server.files[p]), source="test", local_name=n)
            for k, p, n in (("wiki", "/wiki.tgz", None), ("giga", "/giga.tgz", None),
                            ("opus", "/download.php?f=S/en-fi.txt.zip", "S.en-fi.txt.zip"), ("dev", "/dev.tgz", None))}


def test_bitext_columns_query_urls_and_gz_members(served, tmp_path):
    dev = part("dev", served["dev"], {"fi": "dev.fi", "en": "dev.en"})
    wiki = ParallelPart("wiki", (("en", Member(served["wiki"], "wiki/fi-en/titles.fi-en", column=1)),
                                 ("fi", Member(served["wiki"], "wiki/fi-en/titles.fi-en", column=0))))
    task = RemoteTask("loop en-fi", ("en", "fi"), "http://example.invalid", train=(
        wiki, part("opus", served["opus"], {"en": "S.en-fi.en", "fi": "S.en-fi.fi"})), valid=dev, test=dev)
    card = build_remote(task, "fi", "en", tmp_path / "o", tmp_path / "c", progress=False)
    assert read(tmp_path / "o" / "train.fi") == FI + FI and read(tmp_path / "o" / "train.en") == EN + EN
    assert card["unverified"] == [] and (tmp_path / "c" / "downloads" / "opus" / "S.en-fi.txt.zip").is_file()

    fren = RemoteTask("loop en-fr", ("en", "fr"), "http://example.invalid",
                      train=(part("giga", served["giga"], {"en": "g.en.gz", "fr": "g.fr.gz"}),),
                      valid=part("dev", served["dev"], {"en": "dev.en", "fr": "dev.en"}),
                      test=part("dev", served["dev"], {"en": "dev.en", "fr": "dev.en"}))
    for run in range(2):  # the second build reuses the decompressed members
        build_remote(fren, "fr", "en", tmp_path / f"g{run}", tmp_path / "c", progress=False)
        assert read(tmp_path / f"g{run}" / "train.fr") == FR and read(tmp_path / f"g{run}" / "train.en") == EN


def test_malformed_bitext_line_names_file_and_line(served, server, tmp_path):
    server.files["/bad.tgz"] = make_tgz({"t.fi-en": text(["a ||| b", "no separator here"])})
    bad = RemoteFile("bad", server.url("/bad.tgz"))
    pair = ParallelPart("bad", (("en", Member(bad, "t.fi-en", column=1)), ("fi", Member(bad, "t.fi-en", column=0))))
    dev = part("dev", served["dev"], {"fi": "dev.fi", "en": "dev.en"})
    task = RemoteTask("loop", ("en", "fi"), "http://example.invalid", train=(pair,), valid=dev, test=dev)
    with pytest.raises(PipelineError, match=r"t\.fi-en:2: 1 field\(s\) separated by ' \|\|\| '; expected at least 2"):
        build_remote(task, "fi", "en", tmp_path / "o", tmp_path / "c", progress=False)
    assert not (tmp_path / "o" / "train.fi").exists()
    assert not list((tmp_path / "c" / "extracted").glob("columns-*/*.col1"))  # no half-written column file


def test_a_257_token_sentence_is_filtered_with_a_count_in_the_cleaning_report(tmp_path):
    """RAN's attention matrices hold 256 positions: longer sentences are dropped at preprocessing, never a crash."""
    from pipeline.data.clean import clean_parallel
    long_src, ok_src = " ".join(["w"] * 257), " ".join(["w"] * 256)
    (tmp_path / "in.src").write_text(f"{long_src}\n{ok_src}\nshort one\n", encoding="utf-8")
    (tmp_path / "in.tgt").write_text("a b\nc d\ne f\n", encoding="utf-8")
    report = clean_parallel(tmp_path / "in.src", tmp_path / "in.tgt", tmp_path / "out.src", tmp_path / "out.tgt",
                            max_len=256)
    assert report["dropped_long"] == 1 and report["kept"] == 2
    assert (tmp_path / "out.src").read_text(encoding="utf-8").splitlines() == [ok_src, "short one"]
