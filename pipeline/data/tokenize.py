"""Word tokenization per language: Moses for most, jieba for Chinese, characters for Japanese.

Our choices (IMPLEMENTATION-NOTES.md leaves them open):
- Moses tokenizer.perl v1.1 via mosestokenizer, always with aggressive dash splitting (`-a`, as
  mosestokenizer passes it) and WITHOUT XML escaping (`-no-escape`): tokens keep `'`, `"`, `&`.
- zh: jieba with its HMM on (jieba's default, as in common WMT Zh preprocessing); dictionary plus
  Viterbi are deterministic. Whitespace is dropped; non-Chinese runs are left as jieba splits them.
- ja: every non-whitespace character is a token (shu2016 splits Japanese into characters).
- Detokenization is Moses detokenizer.perl for every language. For zh/ja a space is then dropped
  between two CJK characters and next to CJK/fullwidth punctuation (Chinese and Japanese put no
  spaces there). Spaces inside Latin runs of ja text are not recovered (characters were split).
- Generation corpora (zeng2021 Table 4) use file suffixes as stand-in codes: "doc"/"sum" (summarisation)
  and "ctx"/"rsp" (dialogue) are English text, so they are tokenised and detokenised as "en".
"""
from __future__ import annotations

import functools
import logging
import os
import re
from pathlib import Path

from mosestokenizer import MosesDetokenizer, MosesTokenizer

from pipeline.data.chunks import map_file
from pipeline.errors import PipelineError
from pipeline.fileio import read_lines, write_lines

_LANG = re.compile(r"^[a-z]{2,3}$")
# Stand-in codes of generation corpora -> the language their text is in (our choice: English).
LANG_ALIASES = {"doc": "en", "sum": "en", "ctx": "en", "rsp": "en"}
# CJK letters: radicals, kana, bopomofo, Hangul, ideographs (BMP and supplementary planes).
CJK_LETTERS = (r"\u2E80-\u2FDF\u3040-\u31FF\u3200-\u4DBF\u4E00-\u9FFF\uAC00-\uD7AF"
               r"\uF900-\uFAFF\U00020000-\U0003FFFF")
# CJK punctuation: CJK symbols, vertical/compatibility forms, full- and halfwidth forms.
_CJK_PUNCT = r"\u3000-\u303F\uFE30-\uFE4F\uFF00-\uFFEF"
# The languages tokenize_file takes: Moses's with an abbreviation list of its own (mosestokenizer's nonbreaking_prefix
# files), Turkish (Moses with English's list: it has none; werlen2018's en-tr), zh (jieba), ja (characters) and the
# generation corpora's stand-in codes (English); "lm", werlen2018's language-model corpus's source side, gets Moses's
# language-neutral rules (English's list)
MOSES_LANGS = ("ca", "cs", "de", "el", "en", "es", "fi", "fr", "hu", "is", "it", "lv", "nl", "pl", "pt", "ro", "ru",
               "sk", "sl", "sv", "ta", "tr")
TOKENIZE_LANGS = frozenset(MOSES_LANGS) | {"zh", "ja", "lm"} | set(LANG_ALIASES)
_CJK_SPACE = re.compile(
    rf"(?<=[{CJK_LETTERS}{_CJK_PUNCT}]) (?=[{CJK_LETTERS}{_CJK_PUNCT}])|(?<=[{_CJK_PUNCT}]) | (?=[{_CJK_PUNCT}])"
)


def _check(lines: list[str], lang: str) -> None:
    """Reject a malformed language code or a line holding a newline (it would desync the pipe)."""
    if not isinstance(lang, str) or not _LANG.match(lang):
        raise PipelineError(f"lang: expected a 2-3 letter lowercase language code, got {lang!r}")
    for number, line in enumerate(lines, start=1):
        if "\n" in line:
            raise PipelineError(f"line {number}: contains a newline; expected one sentence per line")


def _pipe_safe(line: str) -> str:
    """Carriage returns would split a line when read back from perl; they become spaces."""
    return line.replace("\r", " ")


@functools.lru_cache(maxsize=1)
def _jieba():
    """One jieba tokenizer per process, initialised quietly."""
    import jieba

    logging.getLogger("jieba").setLevel(logging.WARNING)
    tokenizer = jieba.Tokenizer()
    tokenizer.initialize()
    return tokenizer


def _tokenize_zh(line: str) -> list[str]:
    return [tok for piece in _jieba().cut(line, HMM=True) for tok in piece.split()]


def _tokenize_ja(line: str) -> list[str]:
    return [char for char in line if not char.isspace()]


def tokenize_lines(lines: list[str], lang: str) -> list[str]:
    """Space-separated tokens of each line, one output line per input line."""
    _check(lines, lang)
    lang = LANG_ALIASES.get(lang, lang)
    if lang == "zh":
        return [" ".join(_tokenize_zh(line)) for line in lines]
    if lang == "ja":
        return [" ".join(_tokenize_ja(line)) for line in lines]
    with MosesTokenizer(lang, no_escape=True) as moses:
        return [" ".join(moses(_pipe_safe(line))) for line in lines]


@functools.lru_cache(maxsize=4)
def _moses(lang: str, pid: int) -> MosesTokenizer:
    """One Moses tokenizer (a perl process) per language and process, kept for its chunks; keyed by the process
    id, so that a forked worker never writes to its parent's perl."""
    return MosesTokenizer(lang, no_escape=True)


def tokenize_chunk(lines: list[str], lang: str) -> list[str]:
    """tokenize_lines of a file's chunk of lines, the tokenizer kept for the next chunk (pipeline/data/chunks.py)."""
    lang = LANG_ALIASES.get(lang, lang)
    if lang in ("zh", "ja"):
        return tokenize_lines(lines, lang)
    moses = _moses(lang, os.getpid())
    return [" ".join(moses(_pipe_safe(line))) for line in lines]


def detokenize_lines(lines: list[str], lang: str) -> list[str]:
    """Inverse of tokenize_lines as far as Moses' detokenizer can tell (zh/ja: CJK joined)."""
    _check(lines, lang)
    lang = LANG_ALIASES.get(lang, lang)
    with MosesDetokenizer(lang) as moses:
        out = [moses(_pipe_safe(line).split()) for line in lines]
    if lang in ("zh", "ja"):
        out = [_CJK_SPACE.sub("", line) for line in out]
    return out


def tokenize_file(src: Path, dst: Path, lang: str, workers: int = 1) -> None:
    """Tokenize a UTF-8 file in chunks of lines on `workers` processes (pipeline/data/chunks.py: the same bytes as
    one); dst is written atomically."""
    _check([], lang)
    if lang not in TOKENIZE_LANGS:
        raise PipelineError(f"--lang {lang}: not a language tokenize supports; expected {' '.join(MOSES_LANGS)} "
                            f"(Moses), zh (jieba), ja (characters), {' '.join(LANG_ALIASES)} (English stand-ins) or lm "
                            "(a language model's source side)")
    if not Path(src).is_file():
        raise PipelineError(f"{src}: no such file; expected a UTF-8 text file")
    map_file(functools.partial(tokenize_chunk, lang=lang), src, dst, workers)


def detokenize_file(src: Path, dst: Path, lang: str) -> None:
    """Detokenize a UTF-8 file line by line; dst is written atomically."""
    write_lines(dst, detokenize_lines(_read(src), lang))


def _read(path: os.PathLike) -> list[str]:
    """read_lines, with a missing file reported as a PipelineError."""
    if not Path(path).is_file():
        raise PipelineError(f"{path}: no such file; expected a UTF-8 text file")
    return read_lines(path)
