"""The text a metric reads: tokenised metrics get Japanese in janome's words (as WAT scores it), other languages
Moses-tokenised, and a truecased corpus's casing; detokenised metrics (sacreBLEU) get the text as it is."""
from __future__ import annotations

import functools
from pathlib import Path


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
