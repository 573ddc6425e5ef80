"""Embedded corpora: catalog reading, cleaning, dedup, splits and data card on catalogs built here; one real
download of a small pinned wheel with its sha256 check, and a corrupted cache."""
from __future__ import annotations

import hashlib
import json
import zipfile
from collections import Counter
from pathlib import Path

import polib
import pytest

from pipeline.data.catalogs import catalog_entries, catalog_members, clean_pair, clean_text, read_catalog
from pipeline.data.embedded import EMBEDDED_PAIRS, build_embedded, build_from_wheels
from pipeline.data.splitting import normalise, split_pairs
from pipeline.data.wheels import WHEELS, Wheel, download_wheels, fetch_wheel
from pipeline.errors import PipelineError
from pipeline.fileio import read_lines

# --------------------------------------------------------------------------------------------------------------
# Helpers: catalogs and wheels made from invented strings
# --------------------------------------------------------------------------------------------------------------


def make_catalog(entries: list[dict], lang: str = "de") -> polib.POFile:
    """A POFile holding the given entries (POEntry keyword arguments)."""
    catalog = polib.POFile()
    catalog.metadata = {"Content-Type": "text/plain; charset=UTF-8", "Language": lang,
                        "Plural-Forms": "nplurals=2; plural=(n != 1);"}
    for entry in entries:
        catalog.append(polib.POEntry(**entry))
    return catalog


def make_wheel(path: Path, members: dict[str, bytes], name: str = "fake-pkg") -> Wheel:
    """Zip `members` into `path` and return a Wheel pinned to its real sha256."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return Wheel(name, "0.1", path.name, digest, "MIT", ("de",))


def po_bytes(catalog: polib.POFile) -> bytes:
    """The .po text of a catalog as UTF-8 bytes."""
    return str(catalog).encode("utf-8")


def line_counts(out_dir: Path, src: str, tgt: str) -> dict[str, int]:
    """Line counts of the written split files; both sides must agree."""
    counts = {}
    for split in ("train", "valid", "test"):
        src_lines, tgt_lines = read_lines(out_dir / f"{split}.{src}"), read_lines(out_dir / f"{split}.{tgt}")
        assert len(src_lines) == len(tgt_lines)
        counts[split] = len(src_lines)
    return counts


# --------------------------------------------------------------------------------------------------------------
# Cleaning
# --------------------------------------------------------------------------------------------------------------

CLEAN_CASES = [
    ("Delete %s?", "en", "Delete?"),
    ("Supprimer %s ?", "fr", "Supprimer ?"),
    ("%(count)s apples were eaten by %(name)s.", "en", "apples were eaten by."),
    ("Pick {0} or {color} from {{ jar }}", "en", "Pick or from"),
    ("Hi $user, see ${page} and %1 or %2$s now", "en", "Hi, see and or now"),
    ("Ratio %.2f of %d pears", "en", "Ratio of pears"),
    ("100%% fresh", "en", "100% fresh"),
    ("10% off", "en", "10% off"),
    ('The kite "%s" flew away.', "en", "The kite flew away."),
    ("Remove the spoon (%(spoon)s).", "en", "Remove the spoon."),
    ("Das „%(thing)s“-Ding", "de", "Das -Ding"),
    ('Why not <a href="%(url)s">paint one</a>?', "en", "Why not paint one?"),
    ("<p>First line</p><p>Second line</p>", "en", "First line Second line"),
    ("Top<br/>Bottom", "en", "Top Bottom"),
    ("<b>Bold</b> &amp; <em>brave</em> &lt;3 &quot;ok&quot;", "en", 'Bold & brave <3 "ok"'),
    ("<<placeholder entry>>", "en", "<<placeholder entry>>"),
    ("a < b and c > d", "en", "a < b and c > d"),
    ("&Open the gate", "en", "Open the gate"),
    ("Save &As draft", "en", "Save As draft"),
    ("E&xit now", "en", "Exit now"),
    ("Salt && pepper", "en", "Salt & pepper"),
    ("AT&T and R&D", "en", "AT&T and R&D"),
    ("_Quit the game", "en", "Quit the game"),
    ("Put it in _drafts or my_folder", "en", "Put it in _drafts or my_folder"),
    ("ファイル(&F)", "ja", "ファイル"),
    ("ドラッグ&ドロップ", "ja", "ドラッグ&ドロップ"),
    ("已将 {item} 标记为完成。", "zh", "已将标记为完成。"),
    ("无法找到水果 %s。", "zh", "无法找到水果。"),
    ("  many\n\tspaces\u00a0here  ", "en", "many spaces here"),
    ("%s: rest of it", "en", "rest of it"),
]


@pytest.mark.parametrize("raw,lang,expected", CLEAN_CASES)
def test_clean_text_exact(raw, lang, expected):
    assert clean_text(raw, lang) == expected


@pytest.mark.parametrize("en,xx,lang,reason", [
    ("%s", "%s", "de", "empty_after_cleaning"),
    ("<b>%(x)s</b>", "Ein Wort", "de", "empty_after_cleaning"),
    ("A %s", "B", "de", "too_short"),
    ("#1 - 2", "#1 – 2", "de", "no_letters"),
    ("Kiwi %s", "Kiwi", "de", "untranslated"),
    (" ".join(["word"] * 61), "Wort", "de", "overlong"),
    ("Long one", "長" * 121, "ja", "overlong"),
])
def test_clean_pair_drop_reasons(en, xx, lang, reason):
    assert clean_pair(en, xx, lang) == (None, reason)


def test_clean_pair_keeps_cjk_within_char_limit():
    assert clean_pair("Long one", "長" * 120, "ja") == (("Long one", "長" * 120), None)


# --------------------------------------------------------------------------------------------------------------
# Catalog reading
# --------------------------------------------------------------------------------------------------------------


def test_catalog_entries_drop_fuzzy_obsolete_plural_empty_untranslated():
    catalog = make_catalog([
        {"msgid": "Feed the cat", "msgstr": "Füttere die Katze"},
        {"msgid": "Water the fern", "msgstr": "Gieße den Farn", "flags": ["fuzzy"]},
        {"msgid": "Old lamp", "msgstr": "Alte Lampe", "obsolete": True},
        {"msgid": "One goose", "msgid_plural": "Many geese", "msgstr_plural": {0: "Eine Gans", 1: "Viele Gänse"}},
        {"msgid": "Blank target", "msgstr": ""},
        {"msgid": "Kayak", "msgstr": "Kayak"},
        {"msgid": "Brush the horse", "msgstr": "Bürste das Pferd", "flags": ["python-format"]},
    ])
    drops = Counter()
    parsed = polib.pofile(str(catalog))  # round trip through the .po text
    assert list(catalog_entries(parsed, drops)) == [("Feed the cat", "Füttere die Katze"),
                                                     ("Brush the horse", "Bürste das Pferd")]
    assert drops == Counter(fuzzy=1, obsolete=1, plural=1, empty=1, untranslated=1)


def test_read_catalog_reads_mo_bytes_and_rejects_garbage():
    catalog = make_catalog([{"msgid": "Ring the bell", "msgstr": "Läute die Glocke"}])
    mo = read_catalog(catalog.to_binary(), "x/de/LC_MESSAGES/app.mo")
    assert [(e.msgid, e.msgstr) for e in mo if e.msgid] == [("Ring the bell", "Läute die Glocke")]
    with pytest.raises(PipelineError, match=r"x/de/LC_MESSAGES/bad\.mo: unreadable gettext catalog"):
        read_catalog(b"not a catalog at all", "x/de/LC_MESSAGES/bad.mo")


def test_catalog_members_pick_locale_and_prefer_po():
    names = ["pkg/locale/de/LC_MESSAGES/app.mo", "pkg/locale/de/LC_MESSAGES/app.po",
             "pkg/locale/de/LC_MESSAGES/js.mo", "pkg/locale/de_AT/LC_MESSAGES/app.po",
             "pkg/locale/de_DE/LC_MESSAGES/extra.po", "pkg/locale/fr/LC_MESSAGES/app.po", "pkg/de/readme.txt"]
    assert catalog_members(names, "de") == ["pkg/locale/de/LC_MESSAGES/app.po", "pkg/locale/de/LC_MESSAGES/js.mo",
                                            "pkg/locale/de_DE/LC_MESSAGES/extra.po"]
    zh = ["p/zh_Hans/LC_MESSAGES/a.po", "p/zh_CN/LC_MESSAGES/b.mo", "p/zh_Hant/LC_MESSAGES/c.po",
          "p/zh/LC_MESSAGES/d.po", "p/zh-cn/LC_MESSAGES/e.po"]
    assert catalog_members(zh, "zh") == ["p/zh-cn/LC_MESSAGES/e.po", "p/zh_CN/LC_MESSAGES/b.mo",
                                         "p/zh_Hans/LC_MESSAGES/a.po"]


# --------------------------------------------------------------------------------------------------------------
# Dedup, splits, files and card on fake wheels (no network: the wheels are pre-placed in the cache)
# --------------------------------------------------------------------------------------------------------------

FRUITS = ["apple", "pear", "plum", "fig", "lime", "kiwi", "mango", "peach", "grape", "melon"]
FRUCHT = ["Apfel", "Birne", "Pflaume", "Feige", "Limette", "Kiwi", "Mango", "Pfirsich", "Traube", "Melone"]


def fake_wheels(cache: Path) -> list[Wheel]:
    """Two wheels of invented catalogs with known drops and duplicates."""
    first = [{"msgid": f"Slice the {f} number {i}", "msgstr": f"Schneide {g} Nummer {i}"}
             for i in range(6) for f, g in zip(FRUITS, FRUCHT)]  # 60 distinct pairs
    first += [
        {"msgid": "Save", "msgstr": "Sichern"},
        {"msgid": "save", "msgstr": "sichern"},
        {"msgid": "Save.", "msgstr": "Sichern."},
        {"msgid": "Close the lid", "msgstr": "Deckel schließen"},
        {"msgid": "Shut the lid", "msgstr": "Deckel schließen"},  # same German: dropped in de-en only
        {"msgid": "Stir <b>%(n)s</b> times", "msgstr": "Rühre <b>%(n)s</b> mal"},
        {"msgid": "Whisk the cream", "msgstr": "Schlage die Sahne", "flags": ["fuzzy"]},
        {"msgid": "%s", "msgstr": "%s!"},
        {"msgid": "Empty one", "msgstr": ""},
    ]
    ignored_mo = make_catalog([{"msgid": "Only in the mo file", "msgstr": "Nur in der MO-Datei"}]).to_binary()
    second = [
        {"msgid": "Close the lid", "msgstr": "Mach den Deckel zu"},  # duplicate source: first wheel wins
        {"msgid": "Peel the onion", "msgstr": "Schäle die Zwiebel"},
        {"msgid": "Peel the onion", "msgstr": "Zwiebel schälen", "msgctxt": "menu"},  # duplicate in one catalog
    ]
    wheel_dir = cache / "wheels"
    a = make_wheel(wheel_dir / "fake_a-0.1-py3-none-any.whl", {
        "a/locale/de/LC_MESSAGES/app.po": po_bytes(make_catalog(first)),
        "a/locale/de/LC_MESSAGES/app.mo": ignored_mo,
        "a/locale/fr/LC_MESSAGES/app.po": po_bytes(make_catalog([{"msgid": "Bake", "msgstr": "Cuire"}], "fr")),
    }, name="fake-a")
    b = make_wheel(wheel_dir / "fake_b-0.1-py3-none-any.whl", {
        "b/locale/de_DE/LC_MESSAGES/web.mo": make_catalog(second).to_binary(),
    }, name="fake-b")
    return [a, b]


def test_build_from_fake_wheels_en_de(tmp_path, capsys):
    wheels = fake_wheels(tmp_path / "cache")
    out = tmp_path / "en-de"
    card = build_from_wheels("en", "de", out, tmp_path / "cache", wheels, valid_size=500, test_size=1000, seed=3)
    assert "downloading" not in capsys.readouterr().err  # cached wheels with matching sums are reused

    # 60 + Save/save/Save. + Close + Shut + Stir (first wheel) + Peel (second) = 67 kept
    assert sum(card["counts"].values()) == 67
    assert card["counts"] == line_counts(out, "en", "de")
    assert card["counts"]["valid"] == 6 and card["counts"]["test"] == 13  # capped at 10% / 20% of 67
    assert card["dropped"] == {"fuzzy": 1, "obsolete": 0, "plural": 0, "empty": 1, "untranslated": 0,
                               "empty_after_cleaning": 1, "too_short": 0, "no_letters": 0, "overlong": 0,
                               "duplicate_source": 2}
    assert [(s["package"], s["pairs"]) for s in card["sources"]] == [("fake-a", 66), ("fake-b", 1)]
    assert json.loads((out / "datacard.json").read_text(encoding="utf-8")) == card
    assert "| fake-a | 0.1 | MIT |" in (out / "datacard.md").read_text(encoding="utf-8")

    pairs = {}
    for split in ("train", "valid", "test"):
        src, tgt = read_lines(out / f"{split}.en"), read_lines(out / f"{split}.de")
        for s, t in zip(src, tgt):
            pairs[s] = (t, split)
    assert pairs["Close the lid"][0] == "Deckel schließen"  # first occurrence wins
    assert pairs["Stir times"][0] == "Rühre mal"  # markup and placeholders stripped
    assert "Only in the mo file" not in pairs  # the .po of the same name wins over the .mo
    assert "Bake" not in pairs  # other locales ignored
    assert len({pairs[s][1] for s in ("Save", "save", "Save.")}) == 1  # one normalised source, one split
    by_split = {split: {normalise(s) for s, (_, sp) in pairs.items() if sp == split} for split in card["counts"]}
    assert not (by_split["train"] & by_split["valid"] or by_split["train"] & by_split["test"]
                or by_split["valid"] & by_split["test"])


def test_build_from_fake_wheels_reverse_direction_dedups_by_german(tmp_path):
    wheels = fake_wheels(tmp_path / "cache")
    card = build_from_wheels("de", "en", tmp_path / "de-en", tmp_path / "cache", wheels, seed=3)
    source = [line for split in ("train", "valid", "test") for line in read_lines(tmp_path / "de-en" / f"{split}.de")]
    # "Shut the lid" shares its German side with "Close the lid"; both onion translations are distinct sources
    assert sum(card["counts"].values()) == 68
    assert card["dropped"]["duplicate_source"] == 1
    assert source.count("Deckel schließen") == 1 and "Mach den Deckel zu" in source


def test_build_is_deterministic_and_seeded(tmp_path):
    wheels = fake_wheels(tmp_path / "cache")
    files = ["train.en", "valid.en", "test.en", "train.de", "datacard.json", "datacard.md"]
    build_from_wheels("en", "de", tmp_path / "a", tmp_path / "cache", wheels, seed=5)
    build_from_wheels("en", "de", tmp_path / "b", tmp_path / "cache", wheels, seed=5)
    build_from_wheels("en", "de", tmp_path / "c", tmp_path / "cache", wheels, seed=6)
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)
    assert (tmp_path / "a" / "test.en").read_bytes() != (tmp_path / "c" / "test.en").read_bytes()


def test_split_sizes_requested_and_groups_kept_together():
    pairs = [(f"Item {i}", f"Ding {i}") for i in range(6000)] + [("Go", "Los"), ("go", "los"), ("Go!", "Los!")]
    splits = split_pairs(pairs, valid_size=500, test_size=1000, seed=1)
    assert (len(splits["valid"]), len(splits["test"]), len(splits["train"])) == (500, 1000, 4503)
    homes = [split for split, items in splits.items() for s, _ in items if normalise(s) == "go"]
    assert len(homes) == 3 and len(set(homes)) == 1


def test_unsupported_pair_names_pair_and_lists_supported(tmp_path):
    with pytest.raises(PipelineError) as err:
        build_embedded("en", "xx", tmp_path / "out", tmp_path / "cache")
    assert "en-xx" in str(err.value) and "en-de" in str(err.value) and "zh-en" in str(err.value)
    assert not (tmp_path / "cache").exists()


def test_registry_covers_every_direction_with_pinned_sums():
    assert len(EMBEDDED_PAIRS) == 13 and len(set(EMBEDDED_PAIRS)) == 13
    for src, tgt in EMBEDDED_PAIRS:
        lang = tgt if src == "en" else src
        assert any(lang in w.langs for w in WHEELS), lang
    assert all(len(w.sha256) == 64 and int(w.sha256, 16) >= 0 for w in WHEELS)
    assert len({w.name for w in WHEELS}) == len(WHEELS)


def test_cached_fake_wheel_with_wrong_sum_is_deleted(tmp_path):
    wheel = fake_wheels(tmp_path / "cache")[0]
    path = tmp_path / "cache" / "wheels" / wheel.filename
    with path.open("ab") as handle:
        handle.write(b"tampered")
    with pytest.raises(PipelineError, match=rf"fake-a==0\.1: expected {wheel.sha256}, got [0-9a-f]{{64}}"):
        build_from_wheels("en", "de", tmp_path / "out", tmp_path / "cache", [wheel])
    assert not path.exists()
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------------------------------------------
# Real download of one small pinned wheel (the Turkish JupyterLab language pack, about 60 kB)
# --------------------------------------------------------------------------------------------------------------

SMALL = next(w for w in WHEELS if w.name == "jupyterlab-language-pack-tr-tr")


def test_real_download_verifies_sum_and_card_matches_files(tmp_path, capsys):
    cache = tmp_path / "cache"
    path = fetch_wheel(SMALL, cache)
    assert path == cache / "wheels" / SMALL.filename
    assert hashlib.sha256(path.read_bytes()).hexdigest() == SMALL.sha256
    assert sorted(p.name for p in (cache / "wheels").iterdir()) == [SMALL.filename]  # no temp leftovers
    assert "downloading 1 wheel(s)" in capsys.readouterr().err

    out = tmp_path / "en-tr"
    card = build_from_wheels("en", "tr", out, cache, [SMALL], valid_size=50, test_size=100, seed=1)
    assert "downloading" not in capsys.readouterr().err  # reused from the cache
    assert card["counts"] == line_counts(out, "en", "tr")
    assert card["counts"]["valid"] == 50 and card["counts"]["test"] == 100 and card["counts"]["train"] > 300
    assert card["sources"][0]["sha256"] == SMALL.sha256 and card["sources"][0]["license"] == "BSD-3-Clause"


def test_real_download_corrupted_cache_is_reported_and_removed(tmp_path):
    cache = tmp_path / "cache"
    path = fetch_wheel(SMALL, cache)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    actual = hashlib.sha256(bytes(data)).hexdigest()
    with pytest.raises(PipelineError) as err:
        fetch_wheel(SMALL, cache)
    message = str(err.value)
    assert SMALL.name in message and SMALL.sha256 in message and actual in message
    assert not path.exists()


def test_real_download_with_wrong_pinned_sum_leaves_nothing(tmp_path):
    bad = Wheel(SMALL.name, SMALL.version, SMALL.filename, "0" * 64, SMALL.license, SMALL.langs)
    with pytest.raises(PipelineError, match=rf"{SMALL.name}==4\.5\.post3: expected 0{{64}}, got {SMALL.sha256}"):
        fetch_wheel(bad, tmp_path / "cache")
    assert list((tmp_path / "cache" / "wheels").iterdir()) == []


def test_pip_failure_is_a_pipeline_error(tmp_path):
    missing = Wheel("jupyterlab-language-pack-tr-tr", "0.0.0.dev999", "nope.whl", "0" * 64, "MIT", ("tr",))
    with pytest.raises(PipelineError, match=r"pip download of jupyterlab-language-pack-tr-tr==0\.0\.0\.dev999 failed"):
        download_wheels([missing], tmp_path / "wheels")
    assert list((tmp_path / "wheels").iterdir()) == []


def test_no_usable_pairs_is_an_error(tmp_path):
    only_fr = make_wheel(tmp_path / "cache" / "wheels" / "fr_only-0.1-py3-none-any.whl", {
        "p/locale/fr/LC_MESSAGES/app.po": po_bytes(make_catalog([{"msgid": "Bake", "msgstr": "Cuire"}], "fr")),
    }, name="fr-only")
    with pytest.raises(PipelineError, match=r"embedded corpus en-de: no usable pairs in \['fr-only'\]"):
        build_from_wheels("en", "de", tmp_path / "out", tmp_path / "cache", [only_fr])
    assert not (tmp_path / "out").exists()
