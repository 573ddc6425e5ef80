"""The unified corpus registry and the remote corpus builder, against a loopback HTTP server."""
from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import logging
import re
import tarfile
from pathlib import Path

import pytest
from loopback import make_tgz, make_zip
from sacrebleu.dataset import DATASETS

from pipeline.data import registry
from pipeline.data.registry import CorpusSpec, fetch_corpus, fetch_spec, get_corpus
from pipeline.data.remote import REMOTE_TASKS
from pipeline.data.remote.build import build_remote
from pipeline.data.remote.entries import ManualFile, Member, ParallelPart, RemoteFile, RemoteTask, SacrebleuSet, part
from pipeline.data.remote.wmt import WMT17PP_EN_DE
from pipeline.errors import PipelineError
from pipeline.papers.zhang2018.preprocess import ZHANG2018_PREPROCESS

A_EN = ["Good morning .", "The house is small .", "I see two cats ."]
A_DE = ["Guten Morgen .", "Das Haus ist klein .", "Ich sehe zwei Katzen ."]
B_EN = ["Thank you !", "Where is the station ?"]
B_DE = ["Danke !", "Wo ist der Bahnhof ?"]
M_EN = ["One line\u2028two parts"]  # a line separator inside a line: normalised to a space
M_DE = ["Eine Zeile"]
DEV_EN = ["Hello .", "Bye ."]
DEV_DE = ["Hallo .", "Tschüss ."]
SB_SRC = ["A test sentence .", "Another one ."]
SB_REF = ["Ein Testsatz .", "Noch einer ."]


def text(lines: list[str], crlf: bool = False) -> bytes:
    return "".join(line + ("\r\n" if crlf else "\n") for line in lines).encode()


def read(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def sacrebleu_cache(cache_dir: Path, test_set: str, pair: str, src: list[str], ref: list[str]) -> None:
    """Pre-populate sacrebleu's text cache (cache_dir/sacrebleu) so the real CLI serves the set offline."""
    name = test_set.replace("/", "_")
    folder = cache_dir / "sacrebleu" / test_set
    folder.mkdir(parents=True)
    n = len(src)
    for field, lines in (("src", src), ("ref", ref), ("docid", ["d1"] * n), ("genre", ["news"] * n),
                         ("origlang", ["en"] * n)):
        (folder / f"{name}.{pair}.{field}").write_text("".join(x + "\n" for x in lines), encoding="utf-8")


@pytest.fixture
def corpus_files(server, tmp_path):
    """Serve a tar.gz (part A), a zip (part B, no checksum), two .gz dev files; a user dir holds part M."""
    tgz = make_tgz({"training/a.de-en.de": text(A_DE), "training/a.de-en.en": text(A_EN), "README": b"r\n"})
    zp = make_zip({"b.de": text(B_DE, crlf=True), "b.en": text(B_EN)})
    dev_de, dev_en = gzip.compress(text(DEV_DE), mtime=0), gzip.compress(text(DEV_EN), mtime=0)
    server.files = {"/a.tgz": tgz, "/b.zip": zp, "/dev.de.gz": dev_de, "/dev.en.gz": dev_en}
    user = tmp_path / "user" / "m"
    user.mkdir(parents=True)
    (user / "m.en").write_bytes(text(M_EN))
    (user / "m.de").write_bytes(text(M_DE))
    return {"tgz": tgz, "zip": zp, "dev_de": dev_de, "dev_en": dev_en, "user": tmp_path / "user"}


def loopback_task(server, files) -> RemoteTask:
    """A RemoteTask whose files live on the loopback server (and one user-supplied directory)."""
    a = RemoteFile("a", server.url("/a.tgz"), md5=md5(files["tgz"]), source="test")
    b = RemoteFile("b", server.url("/b.zip"))
    user = ManualFile("test_user_part", "a user-supplied test part", "the test")
    dev_de = RemoteFile("dev_de", server.url("/dev.de.gz"), md5=md5(files["dev_de"]), source="test")
    dev_en = RemoteFile("dev_en", server.url("/dev.en.gz"), md5=md5(files["dev_en"]), source="test")
    return RemoteTask(
        name="loop en-de", langs=("en", "de"), url="http://example.invalid/task",
        train=(part("a", a, {"en": "training/a.de-en.en", "de": "training/a.de-en.de"}),
               part("b", b, {"en": "b.en", "de": "b.de"}),
               part("m", user, {"en": "m/m.en", "de": "m/m.de"})),
        valid=ParallelPart("dev", (("en", Member(dev_en)), ("de", Member(dev_de)))),
        test=SacrebleuSet("newstest2014", "wmt14/full"),
    )


def test_remote_spec_builds_layout_and_card(server, corpus_files, tmp_path, caplog):
    task = loopback_task(server, corpus_files)
    spec = CorpusSpec("loop-en-de", "en", "de", "remote", False, task=task, manual_keys=("test_user_part",))
    out, cache = tmp_path / "out", tmp_path / "cache"
    sacrebleu_cache(cache, "wmt14/full", "en-de", SB_SRC, SB_REF)
    manual = {"test_user_part": str(corpus_files["user"])}
    with caplog.at_level(logging.WARNING):
        card = fetch_spec(spec, out, cache, manual=manual, progress=False)
    assert read(out / "train.en") == A_EN + B_EN + ["One line two parts"]
    assert read(out / "train.de") == A_DE + B_DE + M_DE
    assert read(out / "valid.en") == DEV_EN and read(out / "valid.de") == DEV_DE
    assert read(out / "test.en") == SB_SRC and read(out / "test.de") == SB_REF
    assert sorted(p.name for p in out.iterdir()) == ["datacard.json", "datacard.md", "test.de", "test.en",
                                                     "train.de", "train.en", "valid.de", "valid.en"]
    assert json.loads((out / "datacard.json").read_text(encoding="utf-8")) == card
    splits = card["splits"]
    assert [(p["name"], p["lines"]) for p in splits["train"]["parts"]] == [("a", 3), ("b", 2), ("m", 1)]
    assert card["counts"] == {"train": 6, "valid": 2, "test": 2} and card["name"] == "loop-en-de"
    assert [p["normalised_lines"] for p in splits["train"]["parts"]] == [0, 0, 1]
    first = splits["train"]["parts"][0]["files"]
    assert first["en"]["url"] == server.url("/a.tgz") and first["en"]["md5"] == md5(corpus_files["tgz"])
    assert first["de"]["member"] == "training/a.de-en.de"
    assert splits["test"]["parts"][0]["files"]["set"]["sacrebleu"] == "wmt14/full"
    assert card["unverified"] == ["b", "paths.manual.test_user_part"]
    assert any("UNVERIFIED" in r.message and "/b.zip" in r.message for r in caplog.records)
    assert "| train | a | 3 |" in (out / "datacard.md").read_text(encoding="utf-8")
    requests = len(server.requests)
    assert requests == 4

    # Reversed direction from the same downloads: sides swap, no new request.
    rev = dataclasses.replace(task, test=task.valid)
    build_remote(rev, "de", "en", tmp_path / "rev", cache, manual=manual, progress=False)
    assert read(tmp_path / "rev" / "train.de") == A_DE + B_DE + M_DE
    assert read(tmp_path / "rev" / "test.en") == DEV_EN
    assert len(server.requests) == requests


def test_mismatched_part_names_the_part(server, corpus_files, tmp_path):
    server.files["/bad.zip"] = make_zip({"b.de": text(B_DE), "b.en": text(B_EN + ["one too many"])})
    bad = RemoteFile("bad", server.url("/bad.zip"))
    task = dataclasses.replace(loopback_task(server, corpus_files),
                               train=(part("bad-part", bad, {"en": "b.en", "de": "b.de"}),), test=None)
    task = dataclasses.replace(task, test=task.valid)
    with pytest.raises(PipelineError, match=r"part 'bad-part': .*b\.en has 3 lines but .*b\.de has 2"):
        build_remote(task, "en", "de", tmp_path / "out", tmp_path / "cache", progress=False)
    assert not (tmp_path / "out" / "train.en").exists() and not (tmp_path / "out" / "datacard.json").exists()


def test_invalid_utf8_names_file_and_line(server, corpus_files, tmp_path):
    server.files["/latin.zip"] = make_zip({"l.de": "ok\nÄrger\n".encode("latin-1"), "l.en": b"ok\ntrouble\n"})
    task = dataclasses.replace(loopback_task(server, corpus_files),
                               train=(part("latin", RemoteFile("latin", server.url("/latin.zip")),
                                           {"en": "l.en", "de": "l.de"}),), test=None)
    task = dataclasses.replace(task, test=task.valid)
    with pytest.raises(PipelineError, match=r"l\.de:2: invalid UTF-8"):
        build_remote(task, "en", "de", tmp_path / "out", tmp_path / "cache", progress=False)


def test_missing_user_path_names_the_params_key_before_any_download(tmp_path):
    with pytest.raises(PipelineError) as missing:
        fetch_corpus("wmt17-zh-en", tmp_path / "out", tmp_path / "cache", manual={})
    assert not (tmp_path / "cache").exists()  # failed before downloading anything
    # every missing key at once, in one line: the UN and CWMT parts
    assert "\n" not in str(missing.value) and str(missing.value).startswith("2 licensed parts of wmt17 zh-en are missing: (1) ")
    assert re.search(r"\(1\) .*set params key 'paths\.manual\.wmt17_un_zh_en'.*UNv1\.0\.en-zh\.zh.*; \(2\) .*"
                     r"set params key 'paths\.manual\.wmt17_cwmt_zh_en'", str(missing.value))
    manual = {"wmt17_un_zh_en": str(tmp_path / "nowhere"), "wmt17_cwmt_zh_en": str(tmp_path)}
    with pytest.raises(PipelineError, match=r"'paths\.manual\.wmt17_un_zh_en' points to .*nowhere, which does not"):
        fetch_corpus("wmt17-en-zh", tmp_path / "out", tmp_path / "cache", manual=manual)


def test_user_supplied_archive_is_extracted(server, corpus_files, tmp_path):
    archive = tmp_path / "user.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(corpus_files["user"] / "m", arcname="m")
    task = dataclasses.replace(loopback_task(server, corpus_files), train=loopback_task(server, corpus_files).train[2:],
                               test=loopback_task(server, corpus_files).valid)
    build_remote(task, "en", "de", tmp_path / "out", tmp_path / "cache", manual={"test_user_part": str(archive)},
                 progress=False)
    assert read(tmp_path / "out" / "train.de") == M_DE


def test_unknown_corpus_suggests_close_names():
    with pytest.raises(PipelineError, match=r"unknown corpus 'wmt14-en-dx'; did you mean wmt14-en-de"):
        get_corpus("wmt14-en-dx")
    with pytest.raises(PipelineError, match=r"unknown corpus 'toy-revers'; did you mean toy-reverse"):
        get_corpus("toy-revers")


def test_registry_names_and_paper_entries():
    names = set(registry.CORPORA)
    assert {"toy-copy", "toy-reverse", "toy-reorder", "wmt14-en-de", "wmt14-de-en", "wmt17-zh-en",
            "wmt17-en-zh", "l10n-en-de", "l10n-zh-en"} <= names
    # every name says what its entry builds, so that a new entry needs no edit here: lowercase words joined by
    # hyphens; toy-<task>; <family>-<src>-<tgt> for a translation direction, in its task's languages
    for name, spec in registry.CORPORA.items():
        assert spec.name == name and re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name), name
        if spec.kind == "synthetic":
            assert name.endswith(f"-{spec.synthetic_task}"), name
        elif spec.kind != "generation":  # a generation corpus's "languages" are file suffixes (doc->sum, ctx->rsp)
            family = name.removesuffix(f"-{spec.src}-{spec.tgt}")
            assert family != name and "-" not in family, f"{name}: not <family>-{spec.src}-{spec.tgt}"
            assert spec.task is None or {spec.src, spec.tgt} == set(spec.task.langs), name
    # no direction of a remote task is lost to another's name
    assert sum(spec.kind == "remote" for spec in registry.CORPORA.values()) == sum(
        2 if task.both_directions else 1 for task in REMOTE_TASKS.values())
    ende, deen = get_corpus("wmt14-en-de"), get_corpus("wmt14-de-en")
    assert (ende.src, ende.tgt, deen.src, deen.tgt) == ("en", "de", "de", "en") and ende.task is deen.task
    assert [p.name for p in ende.task.train] == ["europarl-v7", "commoncrawl", "news-commentary-v9"]
    assert [p.member("de").file.md5 for p in ende.task.train] == [
        "c52404583294a1b609e56d45b2ed06f5", "7e0acbe86b0d7816300e14650f5b2bd4", "92e42b68f9d3c2ae9722e6d1c2623e21"]
    assert (ende.task.valid.test_set, ende.task.test.test_set) == ("wmt13", "wmt14/full")
    zhen = get_corpus("wmt17-zh-en")
    assert zhen.manual_keys == ("wmt17_un_zh_en", "wmt17_cwmt_zh_en")
    assert zhen.task.train[0].member("zh").file.md5 == "fc6b83b809347e64f511d291e4bc8731"
    assert (zhen.task.valid.test_set, zhen.task.test.test_set) == ("wmt17/dev", "wmt17")
    esen, ende16, enzh = get_corpus("wmt13-es-en"), get_corpus("wmt16-en-de"), get_corpus("unpc-en-zh")
    assert [p.name for p in esen.task.train] == ["europarl-v7", "news-commentary-v8"]
    assert (esen.task.valid.test_set, esen.task.test.test_set) == ("wmt12", "wmt13")
    assert [name for name, _ in ende16.task.eval_sets()] == ["valid", "test", "test-nt15", "test-nt16"]
    assert [s.test_set for _, s in ende16.task.eval_sets()] == ["wmt13", "wmt14/full", "wmt15", "wmt16"]
    assert enzh.manual_keys == ("un_en_zh_subset",) and "unpc-zh-en" not in names
    lm = get_corpus("wikilm-lm-en")
    assert (lm.src, lm.tgt, lm.manual_keys) == ("lm", "en", ("wikipedia_lm",))
    assert lm.task.test.member("lm") == lm.task.test.member("en")  # the text on both sides
    assert get_corpus("toy-reorder").pretokenized and not get_corpus("l10n-en-de").pretokenized
    # zhang2018's WMT17 release: training text tokenised and escaped as released; dev and test raw (sacreBLEU's)
    assert get_corpus("wmt17pp-en-de").escaped_splits == get_corpus("wmt17pp-de-en").escaped_splits == ("train",)
    assert get_corpus("wmt14-en-de").escaped_splits == ()
    assert get_corpus("toy-copy").synthetic_task == "copy"


def test_langs_and_sizes_are_validated(tmp_path):
    with pytest.raises(PipelineError, match=r"'wmt14-en-de' is en->de, but langs = \('de', 'en'\); use wmt14-de-en"):
        fetch_corpus("wmt14-en-de", tmp_path / "o", tmp_path / "c", langs=("de", "en"))
    with pytest.raises(PipelineError, match=r"sizes key 'train_size' is not supported; allowed keys: valid_size, test"):
        fetch_corpus("l10n-en-de", tmp_path / "o", tmp_path / "c", sizes={"train_size": 10})
    with pytest.raises(PipelineError, match=r"'wmt14-en-de': sizes key 'train_size' is not supported; allowed keys: n"):
        fetch_corpus("wmt14-en-de", tmp_path / "o", tmp_path / "c", sizes={"valid_size": 500, "train_size": 10})
    with pytest.raises(PipelineError, match=r"sizes\.train_size = -1; expected a positive integer"):
        fetch_corpus("toy-copy", tmp_path / "o", tmp_path / "c", sizes={"train_size": -1})
    with pytest.raises(PipelineError, match=r"langs = \('en', 'en'\); expected two different codes"):
        fetch_corpus("toy-copy", tmp_path / "o", tmp_path / "c", langs=("en", "en"))
    assert not (tmp_path / "o").exists()


def test_toy_corpus_takes_language_suffixes(tmp_path):
    card = fetch_corpus("toy-reverse", tmp_path / "o", tmp_path / "c", langs=("en", "de"),
                        sizes={"train_size": 20, "valid_size": 5, "test_size": 5}, seed=3)
    assert isinstance(card, dict)
    src, tgt = read(tmp_path / "o" / "train.en"), read(tmp_path / "o" / "train.de")
    assert len(src) == 20 and len(tgt) == 20
    assert all(t.split() == s.split()[::-1] for s, t in zip(src, tgt))
    assert len(read(tmp_path / "o" / "valid.de")) == 5 and len(read(tmp_path / "o" / "test.en")) == 5
    assert not (tmp_path / "o" / "train.src").exists()


def test_zhang2018_corpora_and_preprocessing_facts():
    names = set(registry.CORPORA)
    assert {"ldc-zh-en", "wmt17pp-en-de", "wmt16b-en-de"} <= names and "ldc-en-zh" not in names
    ldc = get_corpus("ldc-zh-en").task
    assert [(split, s.name) for split, s in ldc.eval_sets()] == [
        ("valid", "mt02"), ("test", "mt03"), ("test-mt04", "mt04"), ("test-mt05", "mt05"), ("test-mt06", "mt06"),
        ("test-align", "align")]
    assert all(len(s.more_references) == 3 and s.links is None for _, s in ldc.eval_sets()[:-1])
    assert ldc.extra_tests[-1].links.path == "align.links" and not ldc.extra_tests[-1].more_references
    pp = get_corpus("wmt17pp-en-de").task
    assert [(split, s.test_set) for split, s in pp.eval_sets()] == [
        ("valid", "wmt14/full"), ("test", "wmt15"), ("test-nt16", "wmt16"), ("test-nt17", "wmt17")]
    files = [pp.train[0].member(lang).file for lang in ("en", "de")]
    assert [f.url for f in files] == [f"https://data.statmt.org/wmt17/translation-task/preprocessed/de-en/corpus.tc."
                                      f"{lang}.gz" for lang in ("en", "de")]
    assert not any(f.verified for f in files) and all(pp.train[0].member(lang).path is None for lang in ("en", "de"))
    b16 = get_corpus("wmt16b-en-de").task
    assert b16.train == get_corpus("wmt16-en-de").task.train
    assert [(split, s.test_set) for split, s in b16.eval_sets()] == [("valid", "wmt15"), ("test", "wmt16")]
    for name in ("wmt17pp-en-de", "wmt16b-en-de"):
        assert all("en-de" in DATASETS[s.test_set].langpairs for _, s in get_corpus(name).task.eval_sets())
    facts = ZHANG2018_PREPROCESS
    assert set(facts) == {"ldc-zh-en", "wmt17pp-en-de", "wmt16b-en-de"}
    assert all(f.max_words == 50 and f.vocab_size == 30000 and not f.joint_bpe for f in facts.values())
    assert [(f.bpe_merges, f.bpe_sides, f.references) for f in facts.values()] == [
        (0, (), 4), (8000, ("tgt",), 1), (16000, ("tgt",), 1)]
    assert (facts["wmt16b-en-de"].train_pairs, facts["wmt16b-en-de"].kept_pairs) == (4_500_966, 4_173_550)


def test_bare_gz_training_files_as_in_the_wmt17_preprocessed_release(server, tmp_path):
    served = {f"/preprocessed/de-en/corpus.tc.{lang}.gz": gzip.compress(text(lines), mtime=0)
              for lang, lines in (("en", A_EN), ("de", A_DE))}
    server.files = dict(served)
    files = {lang: RemoteFile(f"pp_{lang}", server.url(f"/preprocessed/de-en/corpus.tc.{lang}.gz"))
             for lang in ("en", "de")}
    task = dataclasses.replace(WMT17PP_EN_DE, train=(
        ParallelPart("wmt17-preprocessed", tuple((lang, Member(files[lang])) for lang in ("en", "de"))),))
    cache = tmp_path / "cache"
    for test_set in ("wmt14/full", "wmt15", "wmt16", "wmt17"):
        sacrebleu_cache(cache, test_set, "en-de", SB_SRC, SB_REF)
    card = build_remote(task, "en", "de", tmp_path / "out", cache, progress=False)
    assert read(tmp_path / "out" / "train.en") == A_EN and read(tmp_path / "out" / "train.de") == A_DE
    assert card["counts"] == {"train": 3, "valid": 2, "test": 2, "test-nt16": 2, "test-nt17": 2}
    assert card["unverified"] == ["pp_de", "pp_en"] and len(server.requests) == 2
