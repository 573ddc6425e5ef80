"""Paper-scale tasks whose data are licensed or registration-only, supplied by the user (params key paths.manual.<key>):
NIST OpenMT Zh-En (LDC), a UN Parallel Corpus subset, a Wikipedia language-modelling corpus, the LDC Zh-En bitext
with an alignment test set, and ASPEC-JE."""
from __future__ import annotations

from pipeline.data.remote.entries import ManualFile, Member, ParallelPart, RemoteTask, part

# --- Registry entries for zeng2021 Table 1 (NIST) ---------------------------------------------------------------
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

# --- Registry entries for werlen2018 6.1 and 7.3 ----------------------------------------------------------------
# En-Zh: a UN Parallel Corpus subset the paper does not publish (user-supplied).
UN_EN_ZH_SUBSET = ManualFile(
    "un_en_zh_subset", "A 0.5M / 2K / 2K subset of the United Nations Parallel Corpus, en-zh (registration-only)",
    "https://conferences.unite.un.org/UNCorpus (register; the paper does not publish its subset, our choice: "
    "sample 500,000 training, 2,000 dev and 2,000 test pairs and write train.en/.zh, dev.en/.zh, test.en/.zh, "
    "one sentence per line, into one directory, then point the key at it)")

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
LDC_ZH_EN_CORPORA = ("LDC2002E18", "LDC2003E07", "LDC2003E14", "LDC2004T07 (its Hansard portion)", "LDC2004T08",
                     "LDC2005T06")
LDC_ZH_EN_TRAIN = ManualFile(
    "ldc_zh_en_train", f"LDC Zh-En training bitext ({', '.join(LDC_ZH_EN_CORPORA)}; LDC licence)",
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
    train=(part("ldc-zh-en-train", LDC_ZH_EN_TRAIN, {"zh": "train.zh", "en": "train.en"}),),
    valid=_nist_set("02"), test=_nist_set("03"),
    extra_tests=tuple(_nist_set(y) for y in ("04", "05", "06")) + (
        ParallelPart("align", (("zh", Member(LIU_SUN_ALIGNMENT, "align.zh")),
                               ("en", Member(LIU_SUN_ALIGNMENT, "align.en"))),
                     links=Member(LIU_SUN_ALIGNMENT, "align.links")),),
    both_directions=False,
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
