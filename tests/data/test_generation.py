"""zeng2021 Table 4 corpora: METEOR's stated absence, the offline stand-ins (fake catalogs and
the real cached En-De wheels), the stand-in codes' tokenisation, and the paper-scale archive builders against
a loopback HTTP server."""
from __future__ import annotations

import dataclasses
import json
import zipfile
from collections import Counter
from pathlib import Path

import polib
import pytest
from loopback import make_tgz, sha256
from workspace import ROOT

from pipeline.data import generation
from pipeline.data.generation import (CNNDM, PERSONACHAT, STANDIN_DIALOGUE, STANDIN_SUMMARIZATION, build_archive,
                                      build_standin, english_runs, lead_documents, next_string_pairs)
from pipeline.data.registry import fetch_corpus, get_corpus
from pipeline.data.splitting import normalise
from pipeline.data.tokenize import detokenize_lines, tokenize_lines
from pipeline.data.wheels import WHEELS, Wheel
from pipeline.errors import PipelineError
from pipeline.evaluate.rouge import meteor_unavailable_reason
from pipeline.fileio import read_lines


# ROUGE itself is rouge-score's (tests/evaluate/test_metrics.py); METEOR's absence is stated.


def test_meteor_reason_names_what_is_missing():
    reason = meteor_unavailable_reason()
    assert "METEOR" in reason and "WordNet" in reason and "jar" in reason and "n/a" in reason


# --------------------------------------------------------------------------------------------------------------
# Stand-in codes tokenise as English
# --------------------------------------------------------------------------------------------------------------


def test_standin_codes_tokenise_and_detokenise_as_english():
    lines = ["Don't split the well-known e-mail, please!", "It costs $5.00 (approx.) -- \"really\"?"]
    en_tok = tokenize_lines(lines, "en")
    assert en_tok[0] == "Don 't split the well @-@ known e @-@ mail , please !"
    for code in ("doc", "sum", "ctx", "rsp"):
        assert tokenize_lines(lines, code) == en_tok
        assert detokenize_lines(en_tok, code) == detokenize_lines(en_tok, "en")


# --------------------------------------------------------------------------------------------------------------
# Stand-ins on invented catalogs
# --------------------------------------------------------------------------------------------------------------

A_STRINGS = [f"Water plant number {i}" for i in range(60)]
B_STRINGS = [f"Feed the goat {i} times" for i in range(31)]


def catalog(strings: list[str], extra: list[dict] = ()) -> bytes:
    """A .po catalog translating each string (German side invented), plus extra entries."""
    cat = polib.POFile()
    cat.metadata = {"Content-Type": "text/plain; charset=UTF-8", "Language": "de"}
    for s in strings:
        cat.append(polib.POEntry(msgid=s, msgstr=f"Übersetzt: {s}"))
    for entry in extra:
        cat.append(polib.POEntry(**entry))
    return str(cat).encode("utf-8")


def fake_wheel(cache: Path, name: str, members: dict[str, bytes]) -> Wheel:
    """A wheel of `members` in cache/wheels, pinned to its real sha256."""
    path = cache / "wheels" / f"{name}-0.1-py3-none-any.whl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    return Wheel(name, "0.1", path.name, sha256(path.read_bytes()), "MIT", ("de",))


def fake_wheels(cache: Path) -> list[Wheel]:
    """Wheel one: A (plus an ignored fuzzy entry and a French catalog); wheel two: B."""
    fuzzy = [{"msgid": "Never used", "msgstr": "Nie benutzt", "flags": ["fuzzy"]}]
    one = fake_wheel(cache, "fake-one", {"p/locale/de/LC_MESSAGES/app.po": catalog(A_STRINGS, fuzzy),
                                         "p/locale/fr/LC_MESSAGES/app.po": catalog(["Only French"])})
    two = fake_wheel(cache, "fake-two", {"q/locale/de_DE/LC_MESSAGES/web.po": catalog(B_STRINGS)})
    return [one, two]


def pairs_by_split(out: Path, src: str, tgt: str) -> dict[str, list[tuple[str, str]]]:
    """The written (src, tgt) pairs of each split."""
    return {split: list(zip(read_lines(out / f"{split}.{src}"), read_lines(out / f"{split}.{tgt}")))
            for split in ("train", "valid", "test")}


def test_runs_documents_and_pairs_follow_catalogue_order(tmp_path):
    runs = english_runs(fake_wheels(tmp_path / "c"), tmp_path / "c", Counter())
    assert runs == [("fake-one:p/locale/de/LC_MESSAGES/app.po", A_STRINGS),
                    ("fake-two:q/locale/de_DE/LC_MESSAGES/web.po", B_STRINGS)]
    docs = lead_documents(runs)
    assert len(docs) == 20 + 10  # 60 // 3 and 31 // 3: runs never cross a file
    assert docs[0] == ("Water plant number 0 Water plant number 1 Water plant number 2", "Water plant number 0")
    assert docs[20] == ("Feed the goat 0 times Feed the goat 1 times Feed the goat 2 times", "Feed the goat 0 times")
    pairs = next_string_pairs(runs)
    assert len(pairs) == 59 + 30 and pairs[59] == ("Feed the goat 0 times", "Feed the goat 1 times")


def test_standin_summarization_files_splits_and_card(tmp_path):
    wheels = fake_wheels(tmp_path / "c")
    card = build_standin(STANDIN_SUMMARIZATION, tmp_path / "s", tmp_path / "c", seed=3, wheels=wheels)
    splits = pairs_by_split(tmp_path / "s", "doc", "sum")
    expected = {(" ".join(run[i:i + 3]), run[i]) for run in (A_STRINGS, B_STRINGS) for i in range(0, len(run) - 2, 3)}
    written = [p for items in splits.values() for p in items]
    assert sorted(written) == sorted(expected)  # every document once; its summary is its first string
    assert card["counts"] == {"train": 21, "valid": 3, "test": 6}  # caps: 10% / 20% of 30
    docs = {split: {normalise(d) for d, _ in items} for split, items in splits.items()}
    assert not (docs["train"] & docs["valid"] or docs["train"] & docs["test"] or docs["valid"] & docs["test"])
    on_disk = json.loads((tmp_path / "s" / "datacard.json").read_text(encoding="utf-8"))
    assert on_disk == card and card["kind"] == "generation" and "CNN/DailyMail" in card["standin"]
    assert [s["pairs"] for s in card["sources"]] == [60, 31]
    assert "lead compression" in (tmp_path / "s" / "datacard.md").read_text(encoding="utf-8")


def test_standin_dialogue_response_follows_context(tmp_path):
    wheels = fake_wheels(tmp_path / "c")
    card = build_standin(STANDIN_DIALOGUE, tmp_path / "d", tmp_path / "c", seed=3, wheels=wheels)
    written = [p for items in pairs_by_split(tmp_path / "d", "ctx", "rsp").values() for p in items]
    expected = [(run[i], run[i + 1]) for run in (A_STRINGS, B_STRINGS) for i in range(len(run) - 1)]
    assert sorted(written) == sorted(expected)
    assert card["counts"] == {"train": 64, "valid": 8, "test": 17} and "PersonaChat" in card["standin"]


def test_standin_is_deterministic_and_seeded(tmp_path):
    wheels = fake_wheels(tmp_path / "c")
    for out, seed in (("a", 5), ("b", 5), ("x", 6)):
        build_standin(STANDIN_DIALOGUE, tmp_path / out, tmp_path / "c", seed=seed, wheels=wheels)
    files = ["train.ctx", "train.rsp", "valid.ctx", "test.rsp", "datacard.json", "datacard.md"]
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)
    assert (tmp_path / "a" / "test.ctx").read_bytes() != (tmp_path / "x" / "test.ctx").read_bytes()


def test_standin_without_usable_strings_is_an_error(tmp_path):
    only_fr = fake_wheel(tmp_path / "c", "fr-only", {"p/locale/fr/LC_MESSAGES/app.po": catalog(["Bake it"])})
    with pytest.raises(PipelineError, match=r"standin-summarization: no usable English strings in \['fr-only'\]"):
        build_standin(STANDIN_SUMMARIZATION, tmp_path / "o", tmp_path / "c", wheels=[only_fr])
    assert not (tmp_path / "o").exists()


# --------------------------------------------------------------------------------------------------------------
# Stand-ins on the real En-De wheels (the repo's download cache, linked into a tmp cache)
# --------------------------------------------------------------------------------------------------------------


@pytest.fixture
def ende_cache(tmp_path) -> Path:
    """A tmp cache holding links to the cached En-De wheels (missing ones are fetched by name, sha256-checked)."""
    cache = tmp_path / "cache"
    (cache / "wheels").mkdir(parents=True)
    for wheel in WHEELS:
        cached = ROOT / "artifacts" / "downloads" / "wheels" / wheel.filename
        if "de" in wheel.langs and cached.is_file():
            (cache / "wheels" / wheel.filename).symlink_to(cached)
    return cache


def test_real_standins_through_the_registry(ende_cache, tmp_path):
    spec = get_corpus("standin-summarization")
    assert (spec.kind, spec.src, spec.tgt, spec.size_keys) == ("generation", "doc", "sum", ("valid_size", "test_size"))
    card = fetch_corpus("standin-summarization", tmp_path / "s", ende_cache, seed=1)
    assert card["counts"]["valid"] == 500 and card["counts"]["test"] == 500 and card["counts"]["train"] > 3000
    for split in ("train", "valid", "test"):
        for doc, summary in pairs_by_split(tmp_path / "s", "doc", "sum")[split]:
            assert doc.startswith(summary + " ")

    card = fetch_corpus("standin-dialogue", tmp_path / "d", ende_cache, seed=1, sizes={"test_size": 300})
    assert card["counts"]["test"] == 300 and card["counts"]["train"] > 8000
    follows = set(next_string_pairs(english_runs([w for w in WHEELS if "de" in w.langs], ende_cache, Counter())))
    test = list(zip(read_lines(tmp_path / "d" / "test.ctx"), read_lines(tmp_path / "d" / "test.rsp")))
    assert all(pair in follows for pair in test)


# --------------------------------------------------------------------------------------------------------------
# Paper-scale archives against a loopback server
# --------------------------------------------------------------------------------------------------------------


def lines(*items: str) -> bytes:
    return "".join(x + "\n" for x in items).encode("utf-8")


CNNDM_MEMBERS = {
    "train.txt.src": lines("the river rose two metres overnight .", "a small bakery opened on main street ."),
    "train.txt.tgt.tagged": lines("<t> river rose two metres . </t> <t> roads closed . </t>",
                                  "<t> bakery opened . </t>"),
    "val.txt.src": lines("the museum added a new wing .", ""),
    "val.txt.tgt.tagged": lines("<t> museum grew . </t>", "<t> empty article . </t>"),
    "test.txt.src": lines("the choir sang in the old hall ."),
    "test.txt.tgt.tagged": lines("<t> choir sang . </t>"),
}


def test_cnndm_builder_against_loopback(server, tmp_path):
    data = make_tgz(CNNDM_MEMBERS)
    server.files = {"/cnndm.tar.gz": data}
    task = dataclasses.replace(CNNDM, url=server.url("/cnndm.tar.gz"), sha256=sha256(data))
    card = build_archive(task, tmp_path / "out", tmp_path / "cache", progress=False)
    out = tmp_path / "out"
    assert read_lines(out / "train.sum") == ["river rose two metres . roads closed .", "bakery opened ."]
    assert read_lines(out / "train.doc")[1] == "a small bakery opened on main street ."
    assert read_lines(out / "valid.doc") == ["the museum added a new wing ."]  # the empty article is dropped
    assert read_lines(out / "test.sum") == ["choir sang ."]
    assert card["counts"] == {"train": 2, "valid": 1, "test": 1} and card["dropped"]["empty_valid"] == 1
    assert card["archive"]["verified"] and card["archive"]["fetched_sha256"] == sha256(data)
    assert card["archive"]["members"]["valid"] == ["val.txt.src", "val.txt.tgt.tagged"]
    build_archive(task, tmp_path / "again", tmp_path / "cache", progress=False)
    assert len(server.requests) == 1  # the verified archive is reused from the cache


def test_checksum_mismatch_names_url_and_writes_nothing(server, tmp_path):
    data = make_tgz(CNNDM_MEMBERS)
    server.files = {"/cnndm.tar.gz": data}
    task = dataclasses.replace(CNNDM, url=server.url("/cnndm.tar.gz"), sha256="0" * 64)
    with pytest.raises(PipelineError, match=rf"checksum mismatch for {server.url('/cnndm.tar.gz')}"):
        build_archive(task, tmp_path / "out", tmp_path / "cache", progress=False)
    assert not (tmp_path / "out").exists()
    left = list((tmp_path / "cache" / "downloads" / "cnndm").iterdir())
    assert [p.name for p in left] == ["cnndm.tar.gz.lock"] and left[0].stat().st_size == 0  # the lock stays, empty


PLATO_MEMBERS = {
    "data/DailyDialog/dial.train": lines("not persona chat\tignored"),
    "data/PersonaChat/dial.train": lines(
        "i like kites . __eou__ i own a boat .\thello ! __eou__ hi , how are you ?\ti am fine , thanks .",
        "i bake bread .\tdo you cook ?\tyes , bread mostly ."),
    "data/PersonaChat/dial.valid": lines("where do you live ?\tnear the sea ."),
    "data/PersonaChat/dial.test": lines("i sing .\tsing something !\tla la la ."),
}


def test_personachat_builder_unverified_like_the_real_entry(server, tmp_path):
    data = make_tgz(PLATO_MEMBERS)
    server.files = {"/data.tar.gz": data}
    assert PERSONACHAT.sha256 is None and PERSONACHAT.md5 is None  # no published checksum
    task = dataclasses.replace(PERSONACHAT, url=server.url("/data.tar.gz"))
    card = build_archive(task, tmp_path / "out", tmp_path / "cache", progress=False)
    out = tmp_path / "out"
    assert read_lines(out / "train.ctx") == ["hello ! | hi , how are you ?", "do you cook ?"]  # persona left out
    assert read_lines(out / "train.rsp") == ["i am fine , thanks .", "yes , bread mostly ."]
    assert read_lines(out / "valid.ctx") == ["where do you live ?"] and read_lines(out / "test.rsp") == ["la la la ."]
    assert card["archive"]["verified"] is False and card["archive"]["fetched_sha256"] == sha256(data)
    assert card["archive"]["members"]["train"] == ["data/PersonaChat/dial.train"]


def test_personachat_malformed_line_names_member_and_line(server, tmp_path):
    bad = dict(PLATO_MEMBERS, **{"data/PersonaChat/dial.valid": lines("ok ?\tyes .", "no tab at all")})
    server.files = {"/data.tar.gz": make_tgz(bad)}
    task = dataclasses.replace(PERSONACHAT, url=server.url("/data.tar.gz"))
    with pytest.raises(PipelineError, match=r"data/PersonaChat/dial\.valid:2: 1 tab-separated field"):
        build_archive(task, tmp_path / "out", tmp_path / "cache", progress=False)
    assert not (tmp_path / "out" / "datacard.json").exists()


def test_missing_member_is_reported(server, tmp_path):
    members = {k: v for k, v in CNNDM_MEMBERS.items() if not k.startswith("test")}
    server.files = {"/cnndm.tar.gz": make_tgz(members)}
    task = dataclasses.replace(CNNDM, url=server.url("/cnndm.tar.gz"))
    with pytest.raises(PipelineError, match=r"no member matches '\*test\.txt\.src'"):
        build_archive(task, tmp_path / "out", tmp_path / "cache", progress=False)


def test_paper_scale_registry_entries():
    cnndm, persona = get_corpus("cnndm"), get_corpus("personachat")
    assert (cnndm.kind, cnndm.src, cnndm.tgt) == ("generation", "doc", "sum")
    assert (persona.kind, persona.src, persona.tgt) == ("generation", "ctx", "rsp")
    assert CNNDM.url.endswith("/Summary/cnndm.tar.gz") and PERSONACHAT.url.endswith("/PLATO/data.tar.gz")
    assert cnndm.ignored_size_keys == ("valid_size", "test_size") and not cnndm.size_keys
    assert "no published checksum" in CNNDM.checksum_note and "no published checksum" in PERSONACHAT.checksum_note
    assert set(generation.GENERATION_TASKS) == {"standin-summarization", "standin-dialogue", "cnndm", "personachat"}
