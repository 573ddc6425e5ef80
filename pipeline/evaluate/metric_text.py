"""The text a metric reads: tokenised metrics get Japanese in janome's words (as WAT scores it), other languages
Moses-tokenised, and a truecased corpus's casing; detokenised metrics (sacreBLEU) get the text as it is.

The references, then the hypotheses (the score step), are checked against the language they are scored as
(check_script): Japanese scored with `--lang de` would score 0 without a word, so text mostly in CJK ideographs, kana
or hangul for a language written without them, or almost without them for zh/ja/ko, is an error. Codes not listed
here (the toy corpora's "src"/"tgt", stand-ins such as "doc"/"sum") are not checked, nor are pretokenised corpora: the
synthetic ones, whose text is language-free whatever codes a corpus entry gives them (tests' toy copies of the
project's params)."""
from __future__ import annotations

import functools
import os
import re
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.fileio import read_lines, reference_paths

CJK_LANGS = frozenset({"zh", "ja", "ko"})
# ISO 639-1 codes of languages written without CJK characters (Latin, Cyrillic, Greek, Arabic, Hebrew, Indic,
# Thai, ... scripts)
NON_CJK_LANGS = frozenset(
    "af am ar az be bg bn bs ca cs cy da de el en eo es et eu fa fi fr ga gl gu he hi hr hu hy id is it ka kk km "
    "kn ky lo lt lv mk ml mn mr ms mt my nb ne nl no pa pl ps pt ro ru si sk sl so sq sr sv sw ta te tg th tl tr "
    "uk ur uz vi xh yo zu".split())
SCRIPT_SAMPLE_LINES = 500  # lines read (evenly spaced) to tell the script of a reference file
SCRIPT_MIN_CHARS = 20      # fewer non-space characters in the sample: too little to tell, not checked
MOSTLY, ALMOST_NONE = 0.5, 0.05  # CJK share above which text is not non-CJK, below which it is not zh/ja/ko


@functools.lru_cache(maxsize=1)
def _cjk_letter():
    from pipeline.data.tokenize import CJK_LETTERS
    return re.compile(f"[{CJK_LETTERS}]")


def cjk_share(lines: list[str]) -> tuple[float, int]:
    """(share of CJK ideographs, kana and hangul among the non-space characters, non-space characters) of an
    evenly spaced sample of at most SCRIPT_SAMPLE_LINES lines."""
    sample = lines[::max(1, -(-len(lines) // SCRIPT_SAMPLE_LINES))]
    text = "".join("".join(line.split()) for line in sample)
    return len(_cjk_letter().findall(text)) / max(len(text), 1), len(text)


def check_script(path: str | os.PathLike, lines: list[str], lang: str, check: str = "--lang") -> None:
    """PipelineError naming `path` when `lines` are clearly not in the script `lang` is written in (see the module
    docstring); nothing for a code that is not listed or for too little text to tell."""
    if lang not in CJK_LANGS and lang not in NON_CJK_LANGS:
        return
    share, chars = cjk_share(lines)
    if chars < SCRIPT_MIN_CHARS:
        return
    if lang in CJK_LANGS and share < ALMOST_NONE:
        expected = "which is mostly written in them"
    elif lang in NON_CJK_LANGS and share > MOSTLY:
        expected = "which has almost none"
    else:
        return
    raise PipelineError(f"{path}: {share:.0%} of the non-space characters are CJK ideographs, kana or hangul; "
                        f"expected {lang} text, {expected} (--lang {lang}); check {check}")


def read_references(ref_dir: str | os.PathLike, test_set: str, lang: str, pretokenized: bool = False
                    ) -> list[list[str]]:
    """Every reference stream of a test set (pipeline.fileio reference_paths), each checked to be in the script
    of `lang` (check_script) unless the corpus is pretokenised (synthetic: language-free)."""
    streams = []
    for path in reference_paths(ref_dir, test_set, lang):
        streams.append(read_lines(path))
        if not pretokenized:
            check_script(path, streams[-1], lang)
    return streams


def metric_lines(lines: list[str], metric, lang: str, pretokenized: bool = False, truecaser: str = "") -> list[str]:
    """`lines` as `metric` scores them (see the module docstring); truecaser: a model file, "" for none."""
    if not metric.tokenized:
        return lines
    if not pretokenized and lang == "ja":
        from pipeline.evaluate.ja_segment import segment_ja
        lines = segment_ja(lines)
    elif not pretokenized:
        from pipeline.data.tokenize import tokenize_lines
        lines = tokenize_lines(lines, lang)
    if truecaser:
        from pipeline.data.truecase import truecase_lines
        lines = truecase_lines(lines, _truecaser(truecaser))
    return lines


@functools.lru_cache(maxsize=4)
def _truecaser(path: str):
    """A truecasing model, loaded once per process (hypotheses and every reference stream share it)."""
    from pipeline.data.truecase import load_truecaser
    return load_truecaser(Path(path))


def segmenter_signature(metric, lang: str, pretokenized: bool = False) -> str:
    """What a score's signature adds for the segmentation metric_lines applied ("" for none)."""
    if metric.tokenized and not pretokenized and lang == "ja":
        from pipeline.evaluate.ja_segment import SEGMENTER
        return f"|seg:{SEGMENTER}"
    return ""
