"""Paper-scale corpora: typed entries (entries.py: files with URL and checksum; tasks with train/dev/test), the
registered tasks (wmt.py: downloadable WMT data; licensed.py: user-supplied licensed or registration-only data) and
their builder (build.py).

Style after Sockeye Autopilot's task definitions: a corpus file is a URL plus checksum, a task names
the languages and the members that make its train, dev and test sets. Dev and test sets come
through sacrebleu (which downloads on demand); registration-only parts are user-supplied paths.
"""
from __future__ import annotations

from pipeline.data.remote.entries import RemoteTask
from pipeline.data.remote.licensed import ASPEC_EN_JA, LDC_ZH_EN, NIST12_ZH_EN, UN_EN_ZH, WIKIPEDIA_LM_EN
from pipeline.data.remote.wmt import (WMT13_ES_EN, WMT14_EN_DE, WMT14_EN_FR, WMT16_EN_DE, WMT16B_EN_DE, WMT17_EN_FI,
                                      WMT17_EN_LV, WMT17_EN_TR, WMT17_ZH_EN, WMT17PP_EN_DE)

REMOTE_TASKS: dict[str, RemoteTask] = {
    "wmt14-en-de": WMT14_EN_DE, "wmt17-zh-en": WMT17_ZH_EN, "wmt14-en-fr": WMT14_EN_FR, "wmt17-en-lv": WMT17_EN_LV,
    "wmt17-en-fi": WMT17_EN_FI, "wmt17-en-tr": WMT17_EN_TR, "nist12-zh-en": NIST12_ZH_EN,
    "wmt13-es-en": WMT13_ES_EN, "wmt16-en-de": WMT16_EN_DE, "unpc-en-zh": UN_EN_ZH, "wikilm-lm-en": WIKIPEDIA_LM_EN,
    "ldc-zh-en": LDC_ZH_EN, "wmt17pp-en-de": WMT17PP_EN_DE, "wmt16b-en-de": WMT16B_EN_DE, "aspec-en-ja": ASPEC_EN_JA}
