"""What zeng2021 states about preparing its corpora (section 3.1), for the params to be set from (not applied here)."""
from __future__ import annotations

from pipeline.data.registry import PreprocessFacts

# zeng2021 section 3.1: remove sentences over 256 words; joint BPE 40K for En-De/En-Fr, 32K for the others,
# separate 32K for Zh-En; Chinese segmented with THULAC; NIST sets have four references.
_Z21 = "zeng2021 section 3.1"
ZENG2021_PREPROCESS: dict[str, PreprocessFacts] = {
    **{name: PreprocessFacts(256, 40000, True, source=_Z21)
       for name in ("wmt14-en-de", "wmt14-de-en", "wmt14-en-fr", "wmt14-fr-en")},
    **{f"wmt17-{a}-{b}": PreprocessFacts(256, 32000, True, source=_Z21)
       for x in ("lv", "fi", "tr") for a, b in (("en", x), (x, "en"))},
    "nist12-zh-en": PreprocessFacts(256, 32000, False, zh_segmenter="thulac", references=4, source=_Z21),
}
