"""Paper-scale corpora: typed entries (files with URL and checksum; tasks with train/dev/test) and their builder.

Style after Sockeye Autopilot's task definitions: a corpus file is a URL plus checksum, a task names
the languages and the members that make its train, dev and test sets. Dev and test sets come
through sacrebleu (which downloads on demand); registration-only parts are user-supplied paths.
"""
from __future__ import annotations

import glob
import hashlib
import itertools
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Union
from urllib.parse import urlparse

from pipeline.data.download import archive_kind, download, extract
from pipeline.errors import PipelineError
from pipeline.fileio import atomic_open, write_lines

# Where params.yaml keeps user-supplied paths; error messages name keys as f"{MANUAL_PARAMS_SECTION}.{key}".
MANUAL_PARAMS_SECTION = "paths.manual"

# Our choice: characters that some readers treat as line breaks (Python's str.splitlines, universal
# newlines) become spaces, so every later tool sees the same line alignment.
_LINE_BREAKS = {c: " " for c in (0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x85, 0x2028, 0x2029)}


@dataclass(frozen=True)
class RemoteFile:
    """A downloadable file (archive or text) with its checksum and the public source of that checksum."""

    key: str
    url: str
    md5: str | None = None
    sha256: str | None = None
    source: str = ""
    local_name: str | None = None  # saved under this name when the URL path does not name the file (e.g. a query)

    @property
    def verified(self) -> bool:
        """True when a checksum is known."""
        return bool(self.md5 or self.sha256)

    @property
    def filename(self) -> str:
        """local_name, else the base name of the URL path."""
        return self.local_name or os.path.basename(urlparse(self.url).path) or self.key

    def describe(self) -> dict:
        """Card entry."""
        return {"key": self.key, "url": self.url, "md5": self.md5, "sha256": self.sha256,
                "verified": self.verified, "checksum_source": self.source}


@dataclass(frozen=True)
class ManualFile:
    """A registration-only file the user supplies; `key` is the params key that holds its local path."""

    key: str
    description: str
    obtain: str

    @property
    def params_key(self) -> str:
        """Full params key to set."""
        return f"{MANUAL_PARAMS_SECTION}.{self.key}"

    def describe(self) -> dict:
        """Card entry (the local path is added when resolved)."""
        return {"manual_key": self.params_key, "description": self.description, "obtain": self.obtain,
                "verified": False}


Source = Union[RemoteFile, ManualFile]


# Column separator of one-file bitexts (e.g. WMT15 Wiki Headlines: "source ||| target" per line).
BITEXT_SEPARATOR = " ||| "


@dataclass(frozen=True)
class Member:
    """One language side: a file and the path inside it (None: the file itself, or a .gz's only member).

    A member that is itself a .gz inside an archive is decompressed; `column` picks one side of a
    one-file bitext whose lines are "side0 ||| side1".
    """

    file: Source
    path: str | None = None
    column: int | None = None


@dataclass(frozen=True)
class ParallelPart:
    """A named parallel corpus part: one Member per language, and further references of a test set (NIST has four
    references per sentence: the first is the target side, the others are written as <split>.<tgt>.1, .2, ...).

    `links`: gold word alignments of a test set, written as <split>.links, one line per sentence pair of
    space-separated "i-j" (sure) or "i?j" (possible) links, i a 0-based source and j a 0-based target word index
    over the whitespace tokens of the two sides (our format; pipeline/evaluate/alignment.py reads it). A part with
    links has both directions' word indices source first: the task must be registered in one direction only.
    """

    name: str
    sides: tuple[tuple[str, Member], ...]
    more_references: tuple[tuple[str, Member], ...] = ()  # (language, member) of references 1, 2, ...
    links: Member | None = None

    def member(self, lang: str) -> Member:
        """The member holding language `lang`."""
        for code, member in self.sides:
            if code == lang:
                return member
        raise PipelineError(f"part '{self.name}' has no '{lang}' side; expected one of {[c for c, _ in self.sides]}")


def part(name: str, file: Source, paths: dict[str, str | None]) -> ParallelPart:
    """A part whose language sides all come from `file` (paths: language -> member path)."""
    return ParallelPart(name, tuple((lang, Member(file, path)) for lang, path in paths.items()))


@dataclass(frozen=True)
class SacrebleuSet:
    """A dev/test set served by sacrebleu; the language pair is the build direction (e.g. 'en-de')."""

    name: str
    test_set: str


EvalSet = Union[ParallelPart, SacrebleuSet]


@dataclass(frozen=True)
class RemoteTask:
    """A paper-scale task: a language pair, training parts (concatenated in order), a dev and a test set."""

    name: str
    langs: tuple[str, str]
    url: str
    train: tuple[ParallelPart, ...]
    valid: EvalSet
    test: EvalSet
    extra_tests: tuple[EvalSet, ...] = ()  # further test sets, built as test-<name>.{src,tgt}
    both_directions: bool = True  # False: only langs[0] -> langs[1] is registered (e.g. NIST Zh->En)

    def eval_sets(self) -> list[tuple[str, EvalSet]]:
        """(split name, set) of dev and every test set: valid, test, then test-<name> per extra test."""
        return [("valid", self.valid), ("test", self.test)] + [(f"test-{t.name}", t) for t in self.extra_tests]

    def parts(self) -> list[ParallelPart]:
        """Every ParallelPart of the task (train, then dev and test sets when they are parts)."""
        return list(self.train) + [s for _, s in self.eval_sets() if isinstance(s, ParallelPart)]

    def manual_members(self) -> dict[ManualFile, list[str]]:
        """User-supplied files and the member paths expected in each."""
        out: dict[ManualFile, list[str]] = {}
        for p in self.parts():
            for _, member in p.sides + p.more_references + ((("links", p.links),) if p.links else ()):
                if isinstance(member.file, ManualFile):
                    out.setdefault(member.file, []).append(member.path or "(the file itself)")
        return out


# --- Registry entries for hao2019 Table 3 -----------------------------------------------------------
# URLs and md5 sums: Sockeye Autopilot's RAW_FILES (awslabs/sockeye, contrib/autopilot/tasks.py), here
# with https; archive member names from the same file and tensor2tensor's translate_enzh.py.
_SOCKEYE = "md5 from Sockeye Autopilot, awslabs/sockeye contrib/autopilot/tasks.py (RAW_FILES)"

EUROPARL_V7 = RemoteFile("europarl_v7", "https://www.statmt.org/wmt13/training-parallel-europarl-v7.tgz",
                         md5="c52404583294a1b609e56d45b2ed06f5", source=_SOCKEYE)
COMMONCRAWL_WMT13 = RemoteFile("common_crawl_wmt13", "https://www.statmt.org/wmt13/training-parallel-commoncrawl.tgz",
                               md5="7e0acbe86b0d7816300e14650f5b2bd4", source=_SOCKEYE)
NEWS_COMMENTARY_V9 = RemoteFile("news_commentary_v9", "https://www.statmt.org/wmt14/training-parallel-nc-v9.tgz",
                                md5="92e42b68f9d3c2ae9722e6d1c2623e21", source=_SOCKEYE)
NEWS_COMMENTARY_V12 = RemoteFile("news_commentary_v12",
                                 "https://data.statmt.org/wmt17/translation-task/training-parallel-nc-v12.tgz",
                                 md5="fc6b83b809347e64f511d291e4bc8731", source=_SOCKEYE)

UN_V1_ZH_EN = ManualFile(
    "wmt17_un_zh_en", "United Nations Parallel Corpus v1.0, en-zh (registration-only)",
    "https://conferences.unite.un.org/UNCorpus (register; join UNv1.0.en-zh.tar.gz.00 and .01 into one archive "
    "or extract it, then point the key at the archive or the directory holding en-zh/)")
CWMT_ZH_EN = ManualFile(
    "wmt17_cwmt_zh_en", "CWMT corpus as released for WMT17 zh-en (registration-only)",
    "http://nlp.nju.edu.cn/cwmt-wmt/ (register; point the key at the directory holding casia2015/, casict2015/, "
    "neu2017/, datum2015/, datum2017/)")

# Our choice: CWMT sub-corpora and file names as in tensor2tensor's translate_enzh.py (which leaves out
# casict2011); paths are relative to the user's CWMT directory.
_CWMT_FILES = [("casia2015", "casia2015/casia2015_en.txt", "casia2015/casia2015_ch.txt"),
               ("casict2015", "casict2015/casict2015_en.txt", "casict2015/casict2015_ch.txt"),
               ("neu2017", "neu2017/NEU_en.txt", "neu2017/NEU_cn.txt"),
               ("datum2015", "datum2015/datum_en.txt", "datum2015/datum_ch.txt")] + [
              (f"datum2017-book{i}", f"datum2017/Book{i}_en.txt", f"datum2017/Book{i}_cn.txt") for i in range(1, 21)]

WMT14_EN_DE = RemoteTask(
    name="wmt14 en-de", langs=("en", "de"), url="https://www.statmt.org/wmt14/translation-task.html",
    train=(
        part("europarl-v7", EUROPARL_V7,
             {"en": "training/europarl-v7.de-en.en", "de": "training/europarl-v7.de-en.de"}),
        part("commoncrawl", COMMONCRAWL_WMT13, {"en": "commoncrawl.de-en.en", "de": "commoncrawl.de-en.de"}),
        part("news-commentary-v9", NEWS_COMMENTARY_V9,
             {"en": "training/news-commentary-v9.de-en.en", "de": "training/news-commentary-v9.de-en.de"}),
    ),
    valid=SacrebleuSet("newstest2013", "wmt13"),
    # Our choice: the full newstest2014 (3003 lines, sacrebleu 'wmt14/full'), not the filtered 2737-line 'wmt14'.
    test=SacrebleuSet("newstest2014", "wmt14/full"),
)

WMT17_ZH_EN = RemoteTask(
    name="wmt17 zh-en", langs=("zh", "en"), url="https://www.statmt.org/wmt17/translation-task.html",
    train=(
        part("news-commentary-v12", NEWS_COMMENTARY_V12,
             {"zh": "training/news-commentary-v12.zh-en.zh", "en": "training/news-commentary-v12.zh-en.en"}),
        part("un-v1.0", UN_V1_ZH_EN, {"zh": "en-zh/UNv1.0.en-zh.zh", "en": "en-zh/UNv1.0.en-zh.en"}),
    ) + tuple(part(f"cwmt-{name}", CWMT_ZH_EN, {"zh": zh, "en": en}) for name, en, zh in _CWMT_FILES),
    valid=SacrebleuSet("newsdev2017", "wmt17/dev"),
    test=SacrebleuSet("newstest2017", "wmt17"),
)

# --- Registry entries for zeng2021 Table 1 -------------------------------------------------------------
# Training data as in Sockeye Autopilot's TASKS wmt14_en_fr, wmt17_en_lv, wmt17_en_fi, wmt17_en_tr (same
# file, URLs, md5 and member paths; awslabs/sockeye contrib/autopilot/tasks.py). zeng2021 follows
# Zhang et al. (2018) for WMT17; our choice: the dev sets Sockeye uses (newstest2016; newsdev2017 for
# Lv, which has no newstest2016), newstest2017 as test.
UN_WMT13 = RemoteFile("un_wmt13", "https://www.statmt.org/wmt13/training-parallel-un.tgz",
                      md5="bb25a213ba9140023e4cc82c778bef53", source=_SOCKEYE)
GIGA_FREN_WMT10 = RemoteFile("giga_fren_wmt10", "https://www.statmt.org/wmt10/training-giga-fren.tar",
                             md5="0b12e20027d5b5f0dfcca290c72c8953", source=_SOCKEYE)
EUROPARL_V8 = RemoteFile("europarl_v8", "https://data.statmt.org/wmt17/translation-task/training-parallel-ep-v8.tgz",
                         md5="07b77f254d189a5bfb7b43b7fc489716", source=_SOCKEYE)
RAPID_2016 = RemoteFile("rapid_eu_2016", "https://data.statmt.org/wmt17/translation-task/rapid2016.tgz",
                        md5="17a3a1846433ad26acb95da02f93af93", source=_SOCKEYE)
WIKI_HEADLINES_WMT15 = RemoteFile("wiki_headlines_wmt15", "https://www.statmt.org/wmt15/wiki-titles.tgz",
                                  md5="f74eef43032766d55884a5073ed8ce27", source=_SOCKEYE)
LETA_V1 = RemoteFile("leta_v1", "https://data.statmt.org/wmt17/translation-task/leta.v1.tgz",
                     md5="3f367e86924f910cb1e969de57caf63c", source=_SOCKEYE)
DCEP_LV_EN_V1 = RemoteFile("dcep_lv_en_v1", "https://data.statmt.org/wmt17/translation-task/dcep.lv-en.v1.tgz",
                           md5="0f949102e8501dfb3c99d3e3f545b4f9", source=_SOCKEYE)
BOOKS_LV_EN_V1 = RemoteFile("books_lv_en_v1", "https://data.statmt.org/wmt17/translation-task/books.lv-en.v1.tgz",
                            md5="7073092421b1259158446870990a9ca5", source=_SOCKEYE)
SETIMES2_EN_TR = RemoteFile("setimes2_en_tr", "https://opus.nlpl.eu/download.php?f=SETIMES2/en-tr.txt.zip",
                            md5="544cec8a631f7820afab6a05451c13a7", source=_SOCKEYE,
                            local_name="SETIMES2.en-tr.txt.zip")

WMT14_EN_FR = RemoteTask(
    name="wmt14 en-fr", langs=("en", "fr"), url="https://www.statmt.org/wmt14/translation-task.html",
    train=(
        part("europarl-v7", EUROPARL_V7,
             {"en": "training/europarl-v7.fr-en.en", "fr": "training/europarl-v7.fr-en.fr"}),
        part("commoncrawl", COMMONCRAWL_WMT13, {"en": "commoncrawl.fr-en.en", "fr": "commoncrawl.fr-en.fr"}),
        part("un-wmt13", UN_WMT13, {"en": "un/undoc.2000.fr-en.en", "fr": "un/undoc.2000.fr-en.fr"}),
        part("news-commentary-v9", NEWS_COMMENTARY_V9,
             {"en": "training/news-commentary-v9.fr-en.en", "fr": "training/news-commentary-v9.fr-en.fr"}),
        part("giga-fren", GIGA_FREN_WMT10,
             {"en": "giga-fren.release2.fixed.en.gz", "fr": "giga-fren.release2.fixed.fr.gz"}),
    ),
    valid=SacrebleuSet("newstest2013", "wmt13"),
    test=SacrebleuSet("newstest2014", "wmt14/full"),  # as for En-De: the full 3003 lines
)

WMT17_EN_LV = RemoteTask(
    name="wmt17 en-lv", langs=("en", "lv"), url="https://www.statmt.org/wmt17/translation-task.html",
    train=(
        part("europarl-v8", EUROPARL_V8,
             {"en": "training/europarl-v8.lv-en.en", "lv": "training/europarl-v8.lv-en.lv"}),
        part("rapid2016", RAPID_2016, {"en": "rapid2016.en-lv.en", "lv": "rapid2016.en-lv.lv"}),
        part("leta-v1", LETA_V1, {"en": "LETA-lv-en/leta.en", "lv": "LETA-lv-en/leta.lv"}),
        part("dcep-v1", DCEP_LV_EN_V1, {"en": "dcep.en-lv/dcep.en", "lv": "dcep.en-lv/dcep.lv"}),
        part("books-v1", BOOKS_LV_EN_V1, {"en": "farewell/farewell.en", "lv": "farewell/farewell.lv"}),
    ),
    valid=SacrebleuSet("newsdev2017", "wmt17/dev"),
    test=SacrebleuSet("newstest2017", "wmt17"),
)

WMT17_EN_FI = RemoteTask(
    name="wmt17 en-fi", langs=("en", "fi"), url="https://www.statmt.org/wmt17/translation-task.html",
    train=(
        part("europarl-v8", EUROPARL_V8,
             {"en": "training/europarl-v8.fi-en.en", "fi": "training/europarl-v8.fi-en.fi"}),
        # One "fi ||| en" file (Sockeye: TEXT_UTF8_RAW_BITEXT for fi -> en).
        ParallelPart("wiki-headlines", (("en", Member(WIKI_HEADLINES_WMT15, "wiki/fi-en/titles.fi-en", column=1)),
                                        ("fi", Member(WIKI_HEADLINES_WMT15, "wiki/fi-en/titles.fi-en", column=0)))),
        part("rapid2016", RAPID_2016, {"en": "rapid2016.en-fi.en", "fi": "rapid2016.en-fi.fi"}),
    ),
    valid=SacrebleuSet("newstest2016", "wmt16"),
    test=SacrebleuSet("newstest2017", "wmt17"),
)

WMT17_EN_TR = RemoteTask(
    name="wmt17 en-tr", langs=("en", "tr"), url="https://www.statmt.org/wmt17/translation-task.html",
    train=(part("setimes2", SETIMES2_EN_TR, {"en": "SETIMES2.en-tr.en", "tr": "SETIMES2.en-tr.tr"}),),
    valid=SacrebleuSet("newstest2016", "wmt16"),
    test=SacrebleuSet("newstest2017", "wmt17"),
)

# NIST OpenMT Zh->En (LDC, licensed): the paper's training corpora and MT02 (dev), MT03-MT08 (tests).
NIST12_LDC_CORPORA = ("LDC2000T46", "LDC2000T47", "LDC2000T50", "LDC2003E14", "LDC2005T10", "LDC2002E18",
                      "LDC2007T09", "LDC2004T08")
NIST_REFERENCES = 4  # NIST MT evaluation sets have four English references per source sentence
NIST12_TRAIN = ManualFile(
    "nist12_zh_en_train", f"NIST OpenMT12 Zh-En training bitext ({', '.join(NIST12_LDC_CORPORA)}; LDC licence)",
    "the Linguistic Data Consortium, https://catalog.ldc.upenn.edu/ (licensed; our choice: sentence-align and "
    "concatenate the listed corpora into train.zh / train.en, one sentence per line, and point the key at that "
    "directory)")
NIST_ZH_EN_EVAL = ManualFile(
    "nist_zh_en_eval", "NIST MT02-MT08 Chinese-English evaluation sets (LDC licence)",
    "the Linguistic Data Consortium, https://catalog.ldc.upenn.edu/ (licensed; our choice: plain text mtNN.zh "
    "and its four references mtNN.en0 .. mtNN.en3 for NN in 02, 03, 04, 05, 06, 08, in one directory)")


def _nist_set(year: str) -> ParallelPart:
    """MT<year> from the user's NIST directory: the target side is reference 0, references 1-3 come along."""
    more = tuple(("en", Member(NIST_ZH_EN_EVAL, f"mt{year}.en{k}")) for k in range(1, NIST_REFERENCES))
    return ParallelPart(f"mt{year}", (("zh", Member(NIST_ZH_EN_EVAL, f"mt{year}.zh")),
                                      ("en", Member(NIST_ZH_EN_EVAL, f"mt{year}.en0"))), more)


NIST12_ZH_EN = RemoteTask(
    name="nist12 zh-en", langs=("zh", "en"), url="https://catalog.ldc.upenn.edu/",
    train=(part("nist12-ldc", NIST12_TRAIN, {"zh": "train.zh", "en": "train.en"}),),
    valid=_nist_set("02"), test=_nist_set("03"),
    extra_tests=tuple(_nist_set(y) for y in ("04", "05", "06", "08")),
    both_directions=False,
)

# --- Registry entries for werlen2018 6.1 ----------------------------------------------------------------
# WMT13 Es-En: Europarl v7 and News Commentary (the paper says v11, which has no Es-En side; our choice: v8, the
# WMT13 release), newstest2012 dev, newstest2013 test. WMT16 En-De: Europarl v7, Common Crawl, News Commentary
# v11; newstest2013 dev; newstest2014 test, newstest2015 and 2016 as further tests. Member paths as in
# TensorFlow Datasets' WMT definitions; no published checksum for the two News Commentary archives (unverified).
NEWS_COMMENTARY_V8 = RemoteFile("news_commentary_v8", "https://www.statmt.org/wmt13/training-parallel-nc-v8.tgz")
NEWS_COMMENTARY_V11 = RemoteFile("news_commentary_v11",
                                 "https://data.statmt.org/wmt16/translation-task/training-parallel-nc-v11.tgz")
UN_EN_ZH_SUBSET = ManualFile(
    "un_en_zh_subset", "A 0.5M / 2K / 2K subset of the United Nations Parallel Corpus, en-zh (registration-only)",
    "https://conferences.unite.un.org/UNCorpus (register; the paper does not publish its subset, our choice: "
    "sample 500,000 training, 2,000 dev and 2,000 test pairs and write train.en/.zh, dev.en/.zh, test.en/.zh, "
    "one sentence per line, into one directory, then point the key at it)")

WMT13_ES_EN = RemoteTask(
    name="wmt13 es-en", langs=("es", "en"), url="https://www.statmt.org/wmt13/translation-task.html",
    train=(
        part("europarl-v7", EUROPARL_V7,
             {"es": "training/europarl-v7.es-en.es", "en": "training/europarl-v7.es-en.en"}),
        part("news-commentary-v8", NEWS_COMMENTARY_V8,
             {"es": "training/news-commentary-v8.es-en.es", "en": "training/news-commentary-v8.es-en.en"}),
    ),
    valid=SacrebleuSet("newstest2012", "wmt12"),
    test=SacrebleuSet("newstest2013", "wmt13"),
)

WMT16_EN_DE = RemoteTask(
    name="wmt16 en-de", langs=("en", "de"), url="https://www.statmt.org/wmt16/translation-task.html",
    train=(
        part("europarl-v7", EUROPARL_V7,
             {"en": "training/europarl-v7.de-en.en", "de": "training/europarl-v7.de-en.de"}),
        part("commoncrawl", COMMONCRAWL_WMT13, {"en": "commoncrawl.de-en.en", "de": "commoncrawl.de-en.de"}),
        part("news-commentary-v11", NEWS_COMMENTARY_V11,
             {"en": "training-parallel-nc-v11/news-commentary-v11.de-en.en",
              "de": "training-parallel-nc-v11/news-commentary-v11.de-en.de"}),
    ),
    valid=SacrebleuSet("newstest2013", "wmt13"),
    test=SacrebleuSet("newstest2014", "wmt14/full"),
    extra_tests=(SacrebleuSet("nt15", "wmt15"), SacrebleuSet("nt16", "wmt16")),
)

UN_EN_ZH = RemoteTask(
    name="unpc en-zh", langs=("en", "zh"), url="https://conferences.unite.un.org/UNCorpus",
    train=(part("un-subset", UN_EN_ZH_SUBSET, {"en": "train.en", "zh": "train.zh"}),),
    valid=part("un-subset-dev", UN_EN_ZH_SUBSET, {"en": "dev.en", "zh": "dev.zh"}),
    test=part("un-subset-test", UN_EN_ZH_SUBSET, {"en": "test.en", "zh": "test.zh"}),
    both_directions=False,
)

# A language-modelling corpus fits the parallel layout with its text on both sides: "lm" (the source a language model
# never reads) and its language. werlen2018 7.3 uses Daniluk et al. (2016)'s Wikipedia corpus (22.5M words), which
# we know no download for: user-supplied.
WIKIPEDIA_LM = ManualFile(
    "wikipedia_lm", "Daniluk et al. (2016)'s Wikipedia language-modelling corpus (22.5M words)",
    "the corpus of Daniluk, Rocktaschel, Welbl and Riedel (2016), 'Frustratingly Short Attention Spans in Neural "
    "Language Modeling' (from its authors; our choice: train.txt, valid.txt, test.txt, one sentence per line, in "
    "one directory, then point the key at it)")


def _lm_part(name: str, path: str) -> ParallelPart:
    """One file as both sides: the "lm" source and the English text."""
    return ParallelPart(name, (("lm", Member(WIKIPEDIA_LM, path)), ("en", Member(WIKIPEDIA_LM, path))))


WIKIPEDIA_LM_EN = RemoteTask(
    name="wikilm lm-en", langs=("lm", "en"), url="https://arxiv.org/abs/1702.04521",
    train=(_lm_part("wikipedia-train", "train.txt"),),
    valid=_lm_part("wikipedia-valid", "valid.txt"), test=_lm_part("wikipedia-test", "test.txt"),
    both_directions=False,
)

# --- Registry entries for zhang2018 5.1 ---------------------------------------------------------------------------
# NIST Zh-En: the LDC corpora of the paper's footnote 1 (1.25M pairs; 1.11M left after its filtering), user-supplied;
# MT02 dev, MT03 test, MT04-MT06 further tests (the NIST sets above, four references each), and Table 4's alignment
# set: Liu and Sun (2015)'s 900 Zh-En pairs with gold word alignments, the further test split test-align.
ZHANG2018_LDC_CORPORA = ("LDC2002E18", "LDC2003E07", "LDC2003E14", "LDC2004T07 (its Hansard portion)", "LDC2004T08",
                         "LDC2005T06")
LDC_ZH_EN_TRAIN = ManualFile(
    "ldc_zh_en_train", f"zhang2018's NIST Zh-En training bitext ({', '.join(ZHANG2018_LDC_CORPORA)}; LDC licence)",
    "the Linguistic Data Consortium, https://catalog.ldc.upenn.edu/ (licensed; our choice: sentence-align and "
    "concatenate the listed corpora into train.zh / train.en, one sentence per line, and point the key at that "
    "directory)")
LIU_SUN_ALIGNMENT = ManualFile(
    "liu_sun_alignment", "Liu and Sun (2015)'s 900 Zh-En sentence pairs with gold word alignments",
    "its authors (Yang Liu and Maosong Sun, Tsinghua University: the evaluation set of 'Contrastive Unsupervised Word "
    "Alignment with Non-Local Features', AAAI 2015); our choice: align.zh and align.en (one word-segmented sentence "
    "per line) and align.links (one line per pair, space-separated 0-based links 'i-j' sure and 'i?j' possible, i a "
    "word of align.zh, j a word of align.en) in one directory, then point the key at it")

LDC_ZH_EN = RemoteTask(
    name="ldc zh-en", langs=("zh", "en"), url="https://catalog.ldc.upenn.edu/",
    train=(part("zhang2018-ldc", LDC_ZH_EN_TRAIN, {"zh": "train.zh", "en": "train.en"}),),
    valid=_nist_set("02"), test=_nist_set("03"),
    extra_tests=tuple(_nist_set(y) for y in ("04", "05", "06")) + (
        ParallelPart("align", (("zh", Member(LIU_SUN_ALIGNMENT, "align.zh")),
                               ("en", Member(LIU_SUN_ALIGNMENT, "align.en"))),
                     links=Member(LIU_SUN_ALIGNMENT, "align.links")),),
    both_directions=False,
)

# WMT17 En-De from the WMT17 preprocessed release (the paper's footnote 2; its de-en directory): 5.6M pairs, already
# tokenised and truecased; newstest2014 dev (3003 lines: sacrebleu 'wmt14/full'), newstest2015 test, newstest2016
# and 2017 further tests. No published checksum for the two files (unverified).
WMT17_PREPROCESSED = "https://data.statmt.org/wmt17/translation-task/preprocessed/de-en"
WMT17PP_CORPUS_EN = RemoteFile("wmt17pp_corpus_tc_en", f"{WMT17_PREPROCESSED}/corpus.tc.en.gz")
WMT17PP_CORPUS_DE = RemoteFile("wmt17pp_corpus_tc_de", f"{WMT17_PREPROCESSED}/corpus.tc.de.gz")

WMT17PP_EN_DE = RemoteTask(
    name="wmt17pp en-de", langs=("en", "de"), url=f"{WMT17_PREPROCESSED}/",
    train=(ParallelPart("wmt17-preprocessed", (("en", Member(WMT17PP_CORPUS_EN)), ("de", Member(WMT17PP_CORPUS_DE)))),),
    valid=SacrebleuSet("newstest2014", "wmt14/full"),
    test=SacrebleuSet("newstest2015", "wmt15"),
    extra_tests=(SacrebleuSet("nt16", "wmt16"), SacrebleuSet("nt17", "wmt17")),
)

# WMT16 En-De as Bastings et al. (2017): WMT16_EN_DE's training parts, newstest2015 dev, newstest2016 test. Facts
# (zhang2018 5.1, after Bastings et al.): 4,500,966 pairs, 4,173,550 left after dropping pairs over 50 tokens on
# either side after tokenisation (registry.ZHANG2018_PREPROCESS; our concatenation's own count is in the data card).
WMT16B_EN_DE = RemoteTask(
    name="wmt16b en-de", langs=("en", "de"), url="https://www.statmt.org/wmt16/translation-task.html",
    train=WMT16_EN_DE.train,
    valid=SacrebleuSet("newstest2015", "wmt15"),
    test=SacrebleuSet("newstest2016", "wmt16"),
)

# ASPEC-JE (Nakazawa et al. 2016b; shu2016 4.1), licensed: the user points paths.manual.aspec_je at the ASPEC-JE
# directory of the release. Its files hold " ||| "-separated fields: train-N.txt "score ||| document id ||| sentence
# id ||| Japanese ||| English", dev/test "sentence id ||| document id ||| Japanese ||| English" (the columns WAT's
# baseline scripts read). Our choice: all three training files (3M pairs; the paper names no subset, and Figure 2's
# ~40K updates of 64 pairs per epoch need more than the first 2M), dev.txt (1,790 pairs) and test.txt (1,812 pairs:
# the WAT 2016 test set).
ASPEC_JE = ManualFile(
    "aspec_je", "ASPEC-JE, the Asian Scientific Paper Excerpt Corpus's Japanese-English part (ASPEC licence)",
    "the ASPEC site of JST and NICT, https://jipsti.jst.go.jp/aspec/ (licensed: apply there; point the key at the "
    "release's ASPEC-JE directory, which holds train/train-1.txt to train-3.txt, dev/dev.txt and test/test.txt)")


def _aspec_part(name: str, path: str, ja: int) -> ParallelPart:
    """One ASPEC-JE file: Japanese in column `ja`, English in the next."""
    return ParallelPart(name, (("en", Member(ASPEC_JE, path, column=ja + 1)), ("ja", Member(ASPEC_JE, path, column=ja))))


ASPEC_EN_JA = RemoteTask(
    name="aspec en-ja", langs=("en", "ja"), url="https://jipsti.jst.go.jp/aspec/",
    train=tuple(_aspec_part(f"aspec-train-{k}", f"train/train-{k}.txt", 3) for k in (1, 2, 3)),
    valid=_aspec_part("aspec-dev", "dev/dev.txt", 2), test=_aspec_part("aspec-test", "test/test.txt", 2),
    both_directions=False,
)

REMOTE_TASKS: dict[str, RemoteTask] = {
    "wmt14-en-de": WMT14_EN_DE, "wmt17-zh-en": WMT17_ZH_EN, "wmt14-en-fr": WMT14_EN_FR, "wmt17-en-lv": WMT17_EN_LV,
    "wmt17-en-fi": WMT17_EN_FI, "wmt17-en-tr": WMT17_EN_TR, "nist12-zh-en": NIST12_ZH_EN,
    "wmt13-es-en": WMT13_ES_EN, "wmt16-en-de": WMT16_EN_DE, "unpc-en-zh": UN_EN_ZH, "wikilm-lm-en": WIKIPEDIA_LM_EN,
    "ldc-zh-en": LDC_ZH_EN, "wmt17pp-en-de": WMT17PP_EN_DE, "wmt16b-en-de": WMT16B_EN_DE, "aspec-en-ja": ASPEC_EN_JA}


# --- Building ----------------------------------------------------------------------------------------
def _fingerprint(path: Path) -> str:
    """Short id of a local file's identity (path, size, mtime): a new file gets a fresh extraction dir."""
    st = path.stat()
    return hashlib.sha1(f"{path.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:12]


class _Builder:
    """Turns members into local text files (download, extract, user paths) and records what it used."""

    def __init__(self, cache_dir: Path, manual: dict[str, str] | None, progress: bool):
        self.cache_dir, self.manual, self.progress = Path(cache_dir), dict(manual or {}), progress

    def manual_path(self, file: ManualFile, expected: list[str]) -> Path:
        """The user-supplied path for `file`; missing key or path -> error naming the params key."""
        value = self.manual.get(file.key)
        wanted = ", ".join(expected)
        if not value:
            raise PipelineError(
                f"{file.description} must be supplied by you: set params key '{file.params_key}' to a local "
                f"directory or archive holding {wanted}; obtain it from {file.obtain}")
        path = Path(value).expanduser()
        if not path.exists():
            raise PipelineError(f"params key '{file.params_key}' points to {path}, which does not exist; "
                                f"expected a directory or archive holding {wanted}")
        return path

    def local_text(self, member: Member) -> tuple[Path, dict]:
        """A plain local text file for `member` (one column of it for a bitext member), and its card entry."""
        path, info = self._member_text(member)
        if member.column is None:
            return path, info
        return _bitext_column(path, member.column, self.cache_dir / "extracted" / f"columns-{_fingerprint(path)}"), info

    def _member_text(self, member: Member) -> tuple[Path, dict]:
        """A plain local text file for the whole of `member`, and its card entry."""
        if isinstance(member.file, RemoteFile):
            file = member.file
            archive = download(file.url, self.cache_dir / "downloads" / file.key / file.filename,
                               md5=file.md5, sha256=file.sha256, progress=self.progress)
            info = file.describe()
            return self._open_member(archive, member.path, f"{file.key}-{_fingerprint(archive)}", file.url), info
        file = member.file
        base = self.manual_path(file, [member.path or "(the file itself)"])
        info = dict(file.describe(), path=str(base))
        if base.is_dir():
            if member.path is None:
                raise PipelineError(f"params key '{file.params_key}' points to the directory {base}; expected a file")
            target = base / member.path
            if not target.is_file():
                raise PipelineError(f"params key '{file.params_key}': {target} is missing; expected {member.path} "
                                    f"inside {base}")
            return target, info
        return self._open_member(base, member.path, f"manual-{file.key}-{_fingerprint(base)}", file.params_key), info

    def _open_member(self, archive: Path, path: str | None, cache_name: str, origin: str) -> Path:
        """Extract `path` from `archive` (or use the file itself when it is plain text)."""
        kind = archive_kind(archive)
        if kind == "plain":
            if path is not None:
                raise PipelineError(f"{origin}: {archive} is not an archive, so member {path!r} cannot be read; "
                                    f"expected .tgz, .tar.gz, .tar, .zip or .gz")
            return archive
        if kind in ("tar", "zip") and path is None:
            raise PipelineError(f"{origin}: {archive} is an archive; expected a member path for it in the registry")
        pattern = glob.escape(path) if path is not None else "*"
        found = extract(archive, pattern, self.cache_dir / "extracted" / cache_name)[0]
        if kind in ("tar", "zip") and archive_kind(found) == "gz":  # e.g. giga-fren's *.gz inside a .tar
            plain = found.parent / f"{found.name}.d" / found.name[: -len(".gz")]
            return plain if plain.exists() else extract(found, "*", plain.parent)[0]
        return found

    def sacrebleu_text(self, item: SacrebleuSet, src: str, tgt: str) -> tuple[Path, Path, dict]:
        """Source and reference files of a sacrebleu set (sacrebleu downloads it into cache_dir/sacrebleu)."""
        import sacrebleu
        from sacrebleu.dataset import DATASETS

        pair = f"{src}-{tgt}"
        if item.test_set not in DATASETS:
            raise PipelineError(f"sacrebleu {sacrebleu.__version__} has no test set '{item.test_set}'")
        dataset = DATASETS[item.test_set]
        if pair not in dataset.langpairs:
            raise PipelineError(f"sacrebleu test set '{item.test_set}' has no language pair '{pair}'; "
                                f"expected one of {sorted(dataset.langpairs)}")
        out = self.cache_dir / "eval" / item.test_set.replace("/", "_")
        paths = []
        for field, lang in (("src", src), ("ref", tgt)):
            path = out / f"{pair}.{lang}"
            if not path.exists():
                lines = _sacrebleu_echo(item.test_set, pair, field, self.cache_dir / "sacrebleu")
                with atomic_open(path) as handle:
                    handle.writelines(line + "\n" for line in lines)
            paths.append(path)
        info = {"sacrebleu": item.test_set, "langpair": pair, "urls": list(dataset.data or []),
                "md5": list(dataset.md5 or []), "sacrebleu_version": sacrebleu.__version__,
                "verified": bool(dataset.md5)}
        return paths[0], paths[1], info


def _sacrebleu_echo(test_set: str, pair: str, field: str, sacrebleu_dir: Path) -> list[str]:
    """Lines of one side of a sacrebleu set, via `sacrebleu -t SET -l PAIR --echo FIELD` (downloads on demand)."""
    env = dict(os.environ, SACREBLEU=str(sacrebleu_dir), PYTHONIOENCODING="utf-8")
    cmd = [sys.executable, "-m", "sacrebleu", "-t", test_set, "-l", pair, "--echo", field]
    proc = subprocess.run(cmd, capture_output=True, env=env, check=False)
    if proc.returncode != 0:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise PipelineError(f"sacrebleu could not provide {test_set} {pair} {field} (it downloads into "
                            f"{sacrebleu_dir}; is the network reachable?): {' | '.join(tail)}")
    text = proc.stdout.decode("utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _bitext_column(path: Path, column: int, out_dir: Path) -> Path:
    """Column `column` of a "side0 ||| side1" file, written once to out_dir; a malformed line names file:line."""
    target = out_dir / f"{path.name}.col{column}"
    if target.exists():
        return target
    with open(path, "rb") as source, atomic_open(target) as out:
        for number, raw in enumerate(source, start=1):
            line, _ = _clean(raw, path, number)
            fields = line.split(BITEXT_SEPARATOR)
            if len(fields) <= column:
                raise PipelineError(f"{path}:{number}: {len(fields)} field(s) separated by {BITEXT_SEPARATOR!r}; "
                                    f"expected at least {column + 1}")
            out.write(fields[column].strip() + "\n")
    return target


def _clean(raw: bytes, path: Path, number: int) -> tuple[str, bool]:
    """Decode one raw line strictly; strip its newline; turn inner line-break characters into spaces."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise PipelineError(
            f"{path}:{number}: invalid UTF-8 at byte {err.start} of the line; expected UTF-8 text") from None
    text = text.rstrip("\n").rstrip("\r")
    if number == 1:
        text = text.removeprefix("\ufeff")
    cleaned = text.translate(_LINE_BREAKS)
    return cleaned, cleaned != text


def _clean_lines(path: Path) -> list[str]:
    """A file's lines decoded and cleaned as _append_part does."""
    with open(path, "rb") as handle:
        return [_clean(raw, path, number)[0] for number, raw in enumerate(handle, start=1)]


def _append_part(name: str, src_path: Path, tgt_path: Path, out_src: IO, out_tgt: IO) -> tuple[int, int]:
    """Append a part's aligned lines to the open outputs; returns (lines, lines normalised).

    Different line counts -> PipelineError naming the part and both files.
    """
    count = normalised = 0
    with open(src_path, "rb") as fs, open(tgt_path, "rb") as ft:
        for count, (a, b) in enumerate(itertools.zip_longest(fs, ft), start=1):
            if a is None or b is None:
                rest = 1 + sum(1 for _ in (ft if a is None else fs))
                n_src, n_tgt = (count - 1, count - 1 + rest) if a is None else (count - 1 + rest, count - 1)
                raise PipelineError(f"part '{name}': {src_path} has {n_src} lines but {tgt_path} has {n_tgt}; "
                                    f"expected the same number of lines on both sides")
            line_src, fixed_src = _clean(a, src_path, count)
            line_tgt, fixed_tgt = _clean(b, tgt_path, count)
            out_src.write(line_src + "\n")
            out_tgt.write(line_tgt + "\n")
            normalised += fixed_src or fixed_tgt
    return count, normalised


def _check_manual(task: RemoteTask, builder: _Builder) -> None:
    """Fail early, before any download, when a user-supplied path is missing."""
    for file, members in task.manual_members().items():
        builder.manual_path(file, members)


def _materialise(item: ParallelPart | SacrebleuSet, src: str, tgt: str, builder: _Builder) -> tuple[Path, Path, dict]:
    """Local source and target text files of a part or sacrebleu set, and its card entry."""
    if isinstance(item, SacrebleuSet):
        src_path, tgt_path, info = builder.sacrebleu_text(item, src, tgt)
        return src_path, tgt_path, {"set": info}
    src_path, src_info = builder.local_text(item.member(src))
    tgt_path, tgt_info = builder.local_text(item.member(tgt))
    return src_path, tgt_path, {src: dict(src_info, member=item.member(src).path),
                                tgt: dict(tgt_info, member=item.member(tgt).path)}


def _write_split(split: str, items: list, src: str, tgt: str, out_dir: Path) -> dict:
    """Concatenate materialised `items` (name, src path, tgt path, files) in order into {split}.{src|tgt}."""
    entries, total = [], 0
    with atomic_open(out_dir / f"{split}.{src}") as out_src, atomic_open(out_dir / f"{split}.{tgt}") as out_tgt:
        for name, src_path, tgt_path, files in items:
            lines, normalised = _append_part(name, src_path, tgt_path, out_src, out_tgt)
            entries.append({"name": name, "lines": lines, "normalised_lines": normalised, "files": files})
            total += lines
    return {"lines": total, "parts": entries}


def _write_links(split: str, item: ParallelPart, forward: bool, lines: int, builder: _Builder, out_dir: Path) -> dict:
    """Write {split}.links, line-aligned with the split's text (the part's own direction only); its card entry."""
    if not forward:
        raise PipelineError(f"part '{item.name}' has gold links source-first in its task's direction; expected the "
                            f"task built in that direction only")
    path, info = builder.local_text(item.links)
    links = _clean_lines(path)
    if len(links) != lines:
        raise PipelineError(f"{path}: {len(links)} lines, but {split} has {lines} sentence pairs; expected the gold "
                            f"links of {item.name} one line per pair")
    write_lines(out_dir / f"{split}.links", links)
    return dict(info, member=item.links.path)


def _where(side: dict) -> str:
    """Where a card entry's data came from."""
    if "sacrebleu" in side:
        return f"sacrebleu {side['sacrebleu']} {side['langpair']} ({', '.join(side['urls'])})"
    return side.get("url") or f"user-supplied `{side['manual_key']}`"


def _sums(side: dict) -> str:
    """A card entry's checksum(s), or UNVERIFIED."""
    sums = side.get("sha256") or side.get("md5")
    if isinstance(sums, list):
        sums = ", ".join(sums)
    return f"`{sums}`" if sums else "UNVERIFIED"


def _card_markdown(card: dict) -> str:
    """A short human-readable data card."""
    rows = [f"# Data card: {card['name']}", "",
            f"Task {card['task']} ({card['task_url']}), direction {card['src']} -> {card['tgt']}; "
            "plain UTF-8, untokenised.", "",
            "| split | part | lines | source | checksum |", "|---|---|---:|---|---|"]
    for split, info in card["splits"].items():
        for entry in info["parts"]:
            side = next(iter(entry["files"].values()))  # one row per part: its first side names the source
            rows.append(f"| {split} | {entry['name']} | {entry['lines']} | {_where(side)} | {_sums(side)} |")
        rows.append(f"| {split} | **total** | {info['lines']} | | |")
    unverified = card["unverified"]
    rows += ["", f"Unverified inputs (no checksum): {', '.join(unverified) if unverified else 'none'}."]
    return "\n".join(rows) + "\n"


def build_remote(task: RemoteTask, src: str, tgt: str, out_dir: Path, cache_dir: Path, *,
                 manual: dict[str, str] | None = None, name: str | None = None, progress: bool = True) -> dict:
    """Build {out_dir}/train|valid|test[-<name>].{src,tgt} and datacard.json/.md for `task`, src -> tgt."""
    if sorted((src, tgt)) != sorted(task.langs) or src == tgt:
        raise PipelineError(f"task '{task.name}' covers {task.langs[0]}-{task.langs[1]} (either direction); "
                            f"got src='{src}', tgt='{tgt}'")
    if not task.both_directions and (src, tgt) != task.langs:
        raise PipelineError(f"task '{task.name}' is registered for {task.langs[0]}->{task.langs[1]} only; "
                            f"got src='{src}', tgt='{tgt}'")
    out_dir = Path(out_dir)
    builder = _Builder(cache_dir, manual, progress)
    _check_manual(task, builder)
    # Fetch everything first (the long part), then write the outputs.
    inputs = {split: [(item.name, *_materialise(item, src, tgt, builder)) for item in items]
              for split, items in [("train", task.train)] + [(name, [s]) for name, s in task.eval_sets()]}
    splits = {split: _write_split(split, items, src, tgt, out_dir) for split, items in inputs.items()}
    for split, item in task.eval_sets():
        references = [m for lang, m in getattr(item, "more_references", ()) if lang == tgt]
        for k, member in enumerate(references, start=1):  # <split>.<tgt>.k, line-aligned with <split>.<tgt>
            path, info = builder.local_text(member)
            lines = _clean_lines(path)
            if len(lines) != splits[split]["lines"]:
                raise PipelineError(f"{path}: {len(lines)} lines, but {split}.{tgt} has {splits[split]['lines']}; "
                                    f"expected reference {k} of {item.name} to align line by line")
            write_lines(out_dir / f"{split}.{tgt}.{k}", lines)
            splits[split].setdefault("references", []).append(dict(info, member=member.path))
        if getattr(item, "links", None) is not None:
            splits[split]["links"] = _write_links(split, item, (src, tgt) == task.langs, splits[split]["lines"],
                                                  builder, out_dir)
    unverified = sorted({side.get("key") or side.get("manual_key") or side.get("sacrebleu")
                         for s in splits.values() for e in s["parts"] for side in e["files"].values()
                         if not side.get("verified")})
    card = {"name": name or f"{task.name} {src}-{tgt}", "kind": "remote", "src": src, "tgt": tgt,
            "description": f"{task.name} ({task.url}), {src}->{tgt}: training parts concatenated in the order "
                           "listed; plain UTF-8, untokenised",
            "task": task.name, "task_url": task.url, "pretokenized": False,
            "counts": {split: info["lines"] for split, info in splits.items()}, "splits": splits,
            "unverified": unverified,
            "note": "our choice: line-break-like characters inside a line are replaced by spaces "
                    "(counted per part as normalised_lines)"}
    with atomic_open(out_dir / "datacard.json") as handle:
        json.dump(card, handle, indent=2, ensure_ascii=False)
        handle.write("\n")
    with atomic_open(out_dir / "datacard.md") as handle:
        handle.write(_card_markdown(card))
    return card
