"""Paper-scale WMT tasks: training archives downloaded from statmt.org (and OPUS) with their checksums, dev and test
sets from sacrebleu (which downloads on demand); WMT17 Zh-En's UN and CWMT parts need registration (user-supplied
paths)."""
from __future__ import annotations

from pipeline.data.remote.entries import ManualFile, Member, ParallelPart, RemoteFile, RemoteTask, SacrebleuSet, part

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

# --- Registry entries for werlen2018 6.1 ----------------------------------------------------------------
# WMT13 Es-En: Europarl v7 and News Commentary (the paper says v11, which has no Es-En side; our choice: v8, the
# WMT13 release), newstest2012 dev, newstest2013 test. WMT16 En-De: Europarl v7, Common Crawl, News Commentary
# v11; newstest2013 dev; newstest2014 test, newstest2015 and 2016 as further tests. Member paths as in
# TensorFlow Datasets' WMT definitions; the two News Commentary archives' sha256 and size from TensorFlow Datasets'
# url_checksums lists, whose URLs are these (with http).
_TFDS = "sha256 ({size:,} bytes) from TensorFlow Datasets, tensorflow/datasets tensorflow_datasets/url_checksums/{file}"
NEWS_COMMENTARY_V8 = RemoteFile(
    "news_commentary_v8", "https://www.statmt.org/wmt13/training-parallel-nc-v8.tgz",
    sha256="df5801d6776190ea48e7241ee97100d81e2f89d7c352c9cd11432c8855c73c28",
    source=_TFDS.format(size=92_821_866, file="wmt13_translate.txt (commit 90b66237ad09c9e5b9b1bc61b646db7b1fb0713c)"))
NEWS_COMMENTARY_V11 = RemoteFile(
    "news_commentary_v11", "https://data.statmt.org/wmt16/translation-task/training-parallel-nc-v11.tgz",
    sha256="cfe8ab047e05043476e498ee765c98e939c7b7d6d294e856344c84476b619d6a",
    source=_TFDS.format(size=75_178_032, file="wmt16_translate.txt (commit 333639b37af6c6fedf3610a4a2d42f1c6ef6f7d5)"))

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

# --- Registry entries for zhang2018 5.1 (WMT) -------------------------------------------------------------------
# WMT17 En-De from the WMT17 preprocessed release (the paper's footnote 2; its de-en directory): 5.6M pairs, already
# tokenised and truecased; newstest2014 dev (3003 lines: sacrebleu 'wmt14/full'), newstest2015 test, newstest2016
# and 2017 further tests. No published checksum for the two files (downloaded unverified; no_checksum says why).
WMT17_PREPROCESSED = "https://data.statmt.org/wmt17/translation-task/preprocessed/de-en"
_WMT17PP_NONE = ("no published checksum: none found on statmt.org's WMT17 task page, in TensorFlow Datasets' "
                 "url_checksums, Sockeye Autopilot or other public code that downloads these files")
WMT17PP_CORPUS_EN = RemoteFile("wmt17pp_corpus_tc_en", f"{WMT17_PREPROCESSED}/corpus.tc.en.gz",
                               no_checksum=_WMT17PP_NONE)
WMT17PP_CORPUS_DE = RemoteFile("wmt17pp_corpus_tc_de", f"{WMT17_PREPROCESSED}/corpus.tc.de.gz",
                               no_checksum=_WMT17PP_NONE)

WMT17PP_EN_DE = RemoteTask(
    name="wmt17pp en-de", langs=("en", "de"), url=f"{WMT17_PREPROCESSED}/",
    train=(ParallelPart("wmt17-preprocessed", (("en", Member(WMT17PP_CORPUS_EN)), ("de", Member(WMT17PP_CORPUS_DE)))),),
    valid=SacrebleuSet("newstest2014", "wmt14/full"),
    test=SacrebleuSet("newstest2015", "wmt15"),
    extra_tests=(SacrebleuSet("nt16", "wmt16"), SacrebleuSet("nt17", "wmt17")),
    tokenized_train=True,
)

# WMT16 En-De as Bastings et al. (2017): WMT16_EN_DE's training parts, newstest2015 dev, newstest2016 test. Facts
# (zhang2018 5.1, after Bastings et al.): 4,500,966 pairs, 4,173,550 left after dropping pairs over 50 tokens on
# either side after tokenisation (pipeline/papers/zhang2018/preprocess.py; our concatenation's own count is in the
# data card).
WMT16B_EN_DE = RemoteTask(
    name="wmt16b en-de", langs=("en", "de"), url="https://www.statmt.org/wmt16/translation-task.html",
    train=WMT16_EN_DE.train,
    valid=SacrebleuSet("newstest2015", "wmt15"),
    test=SacrebleuSet("newstest2016", "wmt16"),
)
