"""gettext catalogs (.po/.mo) in a wheel: the members of a language, their usable entries (msgid English, msgstr the
translation), and the cleaning that turns an entry into a sentence pair (placeholders, markup and accelerator marks
stripped; empty, one-character, letterless or overlong pairs dropped)."""
from __future__ import annotations

import html
import re
import zipfile
from collections import Counter
from pathlib import Path
from typing import Iterable, Iterator

import polib

from pipeline.data.corpus_files import CHAR_LANGS, text_length
from pipeline.errors import PipelineError

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

MAX_WORDS = 60  # our choice: drop pairs longer than this (either side) ...
MAX_CHARS = 120  # ... or longer than this many characters on a zh/ja side

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
