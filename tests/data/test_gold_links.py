"""Gold word alignments: known by construction for the synthetic reorder grammar, fetched for a remote test set that
has them (zhang2018's Liu and Sun alignment set), and cut along with a test split."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pipeline.data.registry import fetch_corpus, get_corpus
from pipeline.data.remote.build import build_remote
from pipeline.data.remote.entries import ManualFile, Member, ParallelPart, RemoteTask, part
from pipeline.data.synthetic import build_synthetic, reorder_links
from pipeline.data.test_splits import ensure_test_sets
from pipeline.errors import PipelineError
from pipeline.papers.zhang2018.alignment import read_gold
from pipeline.fileio import read_lines

CONTENT = re.compile(r"^[NAV]\d+$")


@pytest.mark.parametrize("source, target, links", [
    ("n0 v1 n2", "N0 ga N2 o V1", "0-0 0?1 2-2 2?3 1-4"),
    ("a0 a2 n1 v3 n7", "N1 A2 A0 ga N7 o V3", "2-0 1-1 0-2 2?3 4-4 4?5 3-6"),
    # the same noun as subject and object, the same adjective in both phrases: positions, not strings
    ("a3 n1 v0 a3 n1", "N1 A3 ga N1 A3 o V0", "1-0 0-1 1?2 4-3 3-4 4?5 2-6"),
    # repeated adjectives within a phrase are mirrored one by one
    ("a1 a0 a3 a0 a3 a3 n9 v0 a5 n7", "N9 A3 A3 A0 A3 A0 A1 ga N7 A5 o V0",
     "6-0 5-1 4-2 3-3 2-4 1-5 0-6 6?7 9-8 8-9 9?10 7-11"),
])
def test_reorder_links_of_hand_made_pairs(source, target, links):
    assert reorder_links(source, target) == links


@pytest.mark.parametrize("source, target, expected", [
    ("a0 n1 v2 n3", "N1 A0 ga N3 V2 o", r"expected the target 'N1 A0 ga N3 o V2'"),
    ("a0 n1 v2 n3", "N3 A0 ga N1 o V2", r"expected the target 'N1 A0 ga N3 o V2'"),
    ("n1 v2 v3 n3", "N1 ga N3 o V2", r"2 verbs v<k>; expected exactly one"),
    ("n1 a0 v2 n3", "N1 ga N3 o V2", r"phrase 'n1 a0'; expected adjectives a<k> then a noun n<k>"),
    ("n1 v2", "N1 ga o V2", r"phrase ''; expected adjectives"),
    ("n1 v2 x3", "N1 ga X3 o V2", r"word 'x3'; expected a<k>, n<k> or v<k>"),
])
def test_pairs_the_grammar_cannot_produce_are_errors(source, target, expected):
    with pytest.raises(PipelineError, match=expected):
        reorder_links(source, target)


def test_every_generated_pair_has_its_gold_links(tmp_path):
    card = build_synthetic("reorder", tmp_path, train_size=200, valid_size=20, test_size=30, seed=5)
    for split in ("train", "valid", "test"):
        src, tgt = read_lines(tmp_path / f"{split}.src"), read_lines(tmp_path / f"{split}.tgt")
        gold = read_gold(read_lines(tmp_path / f"{split}.links"), source=f"{split}.links")
        assert len(gold) == len(src) == card["counts"][split]
        for s, t, (sure, possible) in zip(src, tgt, gold):
            s, t = s.split(), t.split()
            assert sure <= possible and len(possible) == len(t)  # one link per target word
            for j, word in enumerate(t):
                mine = [i for i, jj in sure if jj == j]
                if CONTENT.match(word):
                    assert len(mine) == 1 and s[mine[0]] == word.lower(), (s, t, j)
                else:  # a particle: possible only, to its phrase's noun
                    assert not mine and word in ("ga", "o")
                    (i,) = [i for i, jj in possible if jj == j]
                    assert s[i].startswith("n")
    copy = tmp_path / "copy"
    build_synthetic("copy", copy, train_size=5, valid_size=2, test_size=2)
    assert not list(copy.glob("*.links"))


def test_cut_test_sets_keep_their_links(tmp_path):
    build_synthetic("reorder", tmp_path, train_size=10, valid_size=2, test_size=7, seed=3)
    parts = ensure_test_sets(tmp_path, "src", "tgt", ("test", "test-a", "test-b"))
    assert parts == {"test": [0, 3], "test-a": [3, 5], "test-b": [5, 7]}
    for name in parts:
        pairs = zip(read_lines(tmp_path / f"{name}.src"), read_lines(tmp_path / f"{name}.tgt"))
        assert read_lines(tmp_path / f"{name}.links") == [reorder_links(s, t) for s, t in pairs]
    bad = tmp_path / "bad"
    build_synthetic("reorder", bad, train_size=10, valid_size=2, test_size=7, seed=3)
    (bad / "test.links").write_text("0-0\n", encoding="utf-8")
    with pytest.raises(PipelineError, match=r"test\.links: 1 lines, but the test split has 7 pairs"):
        ensure_test_sets(bad, "src", "tgt", ("test", "test-a"))
    assert not (bad / "test-a.src").exists()


def text(lines: list[str]) -> str:
    return "".join(x + "\n" for x in lines)


ALIGN_ZH = ["我 爱 猫", "你好"]
ALIGN_EN = ["I love cats", "hello"]
ALIGN_LINKS = ["0-0 1-1 2-2", "0-0"]


def ldc_dirs(root: Path) -> dict[str, str]:
    """User-supplied directories for ldc-zh-en with invented sentences: training bitext, MT02-MT06 (4 references), and
    the alignment set."""
    dirs = {key: root / key for key in ("ldc_zh_en_train", "nist_zh_en_eval", "liu_sun_alignment")}
    for folder in dirs.values():
        folder.mkdir(parents=True)
    (dirs["ldc_zh_en_train"] / "train.zh").write_text(text(["你好", "谢谢"]), encoding="utf-8")
    (dirs["ldc_zh_en_train"] / "train.en").write_text(text(["hello", "thanks"]), encoding="utf-8")
    for year in ("02", "03", "04", "05", "06"):
        (dirs["nist_zh_en_eval"] / f"mt{year}.zh").write_text(text([f"句子 {year}"]), encoding="utf-8")
        for r in range(4):
            (dirs["nist_zh_en_eval"] / f"mt{year}.en{r}").write_text(text([f"sentence {year} ref {r}"]),
                                                                     encoding="utf-8")
    for name, lines in (("align.zh", ALIGN_ZH), ("align.en", ALIGN_EN), ("align.links", ALIGN_LINKS)):
        (dirs["liu_sun_alignment"] / name).write_text(text(lines), encoding="utf-8")
    return {key: str(folder) for key, folder in dirs.items()}


def test_ldc_zh_en_fetch_writes_the_alignment_sets_links(tmp_path):
    assert get_corpus("ldc-zh-en").manual_keys == ("ldc_zh_en_train", "nist_zh_en_eval", "liu_sun_alignment")
    manual = ldc_dirs(tmp_path / "user")
    with pytest.raises(PipelineError, match=r"set params key 'paths\.manual\.liu_sun_alignment'.*align\.links"):
        fetch_corpus("ldc-zh-en", tmp_path / "o", tmp_path / "c", manual={**manual, "liu_sun_alignment": ""})
    out = tmp_path / "raw"
    card = fetch_corpus("ldc-zh-en", out, tmp_path / "c", manual=manual, progress=False,
                        test_sets=("test", "test-mt04", "test-mt05", "test-mt06", "test-align"))
    assert card["counts"] == {"train": 2, "valid": 1, "test": 1, "test-mt04": 1, "test-mt05": 1, "test-mt06": 1,
                              "test-align": 2}
    assert read_lines(out / "test-align.zh") == ALIGN_ZH and read_lines(out / "test-align.en") == ALIGN_EN
    assert read_lines(out / "test-align.links") == ALIGN_LINKS
    assert sorted(p.name for p in out.glob("*.links")) == ["test-align.links"]
    assert read_lines(out / "test-mt06.en.3") == ["sentence 06 ref 3"] and not (out / "test-align.en.1").exists()
    saved = json.loads((out / "datacard.json").read_text(encoding="utf-8"))
    assert saved["splits"]["test-align"]["links"]["member"] == "align.links"
    assert "test_sets" not in saved  # every test set came from the source: nothing was cut


def test_a_links_member_must_align_with_its_part(tmp_path):
    user = tmp_path / "user"
    user.mkdir()
    for name, lines in (("t.en", ["a b"]), ("t.de", ["x y"]), ("g.en", ["a b", "c"]), ("g.de", ["x y", "z"]),
                        ("g.links", ["0-0 1?1"])):
        (user / name).write_text(text(lines), encoding="utf-8")
    data = ManualFile("test_gold", "a user-supplied test set with gold links", "the test")
    task = RemoteTask(name="gold en-de", langs=("en", "de"), url="http://example.invalid/gold",
                      train=(part("t", data, {"en": "t.en", "de": "t.de"}),),
                      valid=part("t", data, {"en": "t.en", "de": "t.de"}),
                      test=ParallelPart("g", (("en", Member(data, "g.en")), ("de", Member(data, "g.de"))),
                                        links=Member(data, "g.links")))
    with pytest.raises(PipelineError, match=r"g\.links: 1 lines, but test has 2 sentence pairs"):
        build_remote(task, "en", "de", tmp_path / "out", tmp_path / "cache", manual={"test_gold": str(user)})
    with pytest.raises(PipelineError, match=r"part 'g' has gold links source-first in its task's direction"):
        build_remote(task, "de", "en", tmp_path / "rev", tmp_path / "cache", manual={"test_gold": str(user)})
    (user / "g.links").write_text(text(["0-0 1?1", ""]), encoding="utf-8")  # a pair without links: an empty line
    build_remote(task, "en", "de", tmp_path / "ok", tmp_path / "cache", manual={"test_gold": str(user)})
    assert read_lines(tmp_path / "ok" / "test.links") == ["0-0 1?1", ""]
