"""werlen2018 Tables 1-6 and Figures 2-4: transcribed numbers, exact layouts from the generic cells and facts,
direction-aware significance marks, the human-ranking table with and without a tally, deterministic figures, bad
cells and facts naming the key."""
import hashlib

import pytest
from cells import bleu_cell, cell, facts, significance
from matplotlib.image import imread

from pipeline.errors import PipelineError
from pipeline.papers.werlen2018.ranking import pair_result
from pipeline.papers.werlen2018 import figures as f
from pipeline.papers.werlen2018 import layouts as w
from pipeline.papers.werlen2018.reported import (LABELS, WERLEN2018_MARKS, WERLEN2018_SYSTEMS, WERLEN2018_TABLE1,
                                                 WERLEN2018_TABLE2, WERLEN2018_TABLE3, WERLEN2018_TABLE3_MARKS,
                                                 WERLEN2018_TABLE4, WERLEN2018_TABLE5, WERLEN2018_TABLE5_PAIRS,
                                                 WERLEN2018_TABLE6)
from pipeline.report.figures import save_figure
from pipeline.report.layouts import LAYOUTS, build

MULTI = "nrefs:1|case:mixed|eff:no|tok:none|smooth:none|version:2.6.0"
NIST = "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"
DIRECTIONS = ("en-zh", "es-en", "en-de")
FACTS = facts({"en-zh": "l10n-en-zh", "es-en": "l10n-es-en", "en-de": "l10n-en-de", "nt14": "l10n-en-de",
               "nt15": "l10n-en-de", "nt16": "l10n-en-de", "lm": "l10n-es-en"},
              test_sets={"nt15": "test-nt15", "nt16": "test-nt16"},
              signatures={"bleu": {"en-zh": MULTI, "es-en": MULTI, "nt14": NIST, "nt15": NIST, "nt16": NIST}},
              significance=significance("paired_t_test"))
TINY_LINE = ("tiny scale: the embedded software-localisation catalogues of the same directions stand in for the "
             "paper's corpora (UN En-Zh, WMT13 Es-En, WMT16 En-De), with small models and short training "
             "(params/werlen2018.yaml)")


def printed(table, row_id: str) -> list:
    """A reported row's BLEU as printed, in the table's column order (None for '–')."""
    return [table.row(row_id).cells[col].bleu for col in table.pairs]


# ------------------------------------------------------------------ transcribed numbers
def test_table1_transcription():
    t = WERLEN2018_TABLE1
    assert [r.row_id for r in t.rows] == ["smt", "baseline", "memory", "self-rnn", "mean", "self-attentive"]
    assert [r.cells["es-en"].bleu for r in t.rows] == ["25.2", "25.4", "25.5", "25.1", "25.7", "26.3"]
    assert [r.cells["en-zh"].bleu for r in t.rows] == ["21.6", "22.6", "22.5", "22.0", "23.6", "24.0"]
    assert [r.cells["en-zh"].params for r in t.rows] == [None, "108.7M", "109.7M", "110.2M", "108.7M", "108.9M"]
    assert [r.system for r in t.rows] == ["SMT baseline", "NMT baseline", "+ Memory RNN", "+ Self-attentive RNN",
                                          "+ Mean residual connections", "+ Self-attentive residual connections"]
    assert [row_id for row_id, *_ in WERLEN2018_SYSTEMS] == ["baseline", "memory", "self-rnn", "mean",
                                                              "self-attentive"]


def test_tables_2_to_4_transcription():
    assert printed(WERLEN2018_TABLE2, "zhang2017") == ["22.57", None]
    assert printed(WERLEN2018_TABLE2, "zhang2016") == [None, "25.49"]
    assert [printed(WERLEN2018_TABLE2, r) for r in ("baseline", "memory", "self-rnn", "mean", "self-attentive")] \
        == [["22.3", "24.8"], ["22.6", "24.9"], ["22.0", "24.3"], ["22.9", "24.9"], ["23.2", "25.5"]]
    t3 = WERLEN2018_TABLE3
    assert t3.pairs == ("nt14", "nt15", "nt16")
    assert [t3.row(r).cells["nt16"].bleu for r in ("winning-wmt", "sennrich2016", "nadejde2017", "baseline",
                                                     "mean", "self-attentive")] == [
        "34.2", None, "29.0", "28.8", "29.6", "29.7"]
    assert printed(t3, "self-attentive") == ["21.7", "25.0", "29.7"]
    assert printed(t3, "sennrich2016") == [None, "22.8", None]
    assert WERLEN2018_TABLE3_MARKS == {"mean": "*", "self-attentive": "**"}
    assert WERLEN2018_MARKS == [(0.01, "**"), (0.05, "*")]
    assert printed(WERLEN2018_TABLE4, "content-scope") == ["23.1", "25.6"]
    assert printed(WERLEN2018_TABLE4, "content") == ["24.0", "26.3"]
    # Table 4's "Content" is Table 1's self-attentive residual row
    assert printed(WERLEN2018_TABLE4, "content") == printed(WERLEN2018_TABLE1, "self-attentive")


def test_tables_5_and_6_transcription():
    assert WERLEN2018_TABLE5_PAIRS == (("mean", "baseline"), ("self-attentive", "baseline"),
                                       ("self-attentive", "mean"))
    assert WERLEN2018_TABLE5[("self-attentive", "mean")]["en-de"] == (32, 56, 12)
    assert WERLEN2018_TABLE5[("mean", "baseline")] == {"en-zh": (26, 56, 18), "es-en": (20, 64, 16),
                                                       "en-de": (28, 58, 24)}
    assert WERLEN2018_TABLE5[("self-attentive", "baseline")]["es-en"] == (28, 56, 16)
    sums = {(pair, d): sum(v) for pair, by_d in WERLEN2018_TABLE5.items() for d, v in by_d.items()}
    assert {k: s for k, s in sums.items() if s != 100} == {((("mean", "baseline")), "en-de"): 110}  # as printed
    assert [(row_id, d, ppl, ours) for row_id, _, d, ppl, ours in WERLEN2018_TABLE6] == [
        ("lstm", 300, "85.2", True), ("lstm-attention", 296, "82.0", False), ("lstm-4gram", 968, "75.9", False),
        ("mean", 296, "80.2", True), ("self-attentive", 296, "80.4", True)]


# ------------------------------------------------------------------ Table 1
def test_table1_paper_only():
    table = w.table1({}, FACTS)
    assert table.columns == ["Models", "|Θ| (paper)", "|Θ| (ours)", "En-Zh BLEU (paper)", "En-Zh BLEU (ours)",
                             "Es-En BLEU (paper)", "Es-En BLEU (ours)"]
    assert table.rows[0] == ["SMT baseline", "–", "", "21.6", "", "25.2", ""]
    assert table.rows[5] == ["+ Self-attentive residual connections", "108.9M", "", "24.0", "", "26.3", ""]
    assert table.footer == [
        "paper: Miculicich Werlen et al. (2018), Table 1; (paper) columns as printed there, (ours) columns from "
        "this run", "scale: tiny", "corpora: En-Zh: l10n-en-zh; Es-En: l10n-es-en",
        "test sets: En-Zh: the test split of l10n-en-zh; Es-En: the test split of l10n-es-en",
        f"BLEU (ours): multi-bleu.perl's BLEU on tokenised, truecased text; {MULTI}", TINY_LINE,
        "|Θ| (ours): our parameter count (per direction where the vocabularies differ); the paper's at 50K "
        "vocabularies, ours at paper scale in the README", "SMT baseline: Moses, as printed (not rebuilt)"]


def test_table1_ours_two_decimals_and_params():
    ours = {"baseline": {"en-zh": bleu_cell(20.126, 1_234_567), "es-en": bleu_cell(30.0, 1_300_000)},
            "mean": {"en-zh": bleu_cell(21.004, 1_234_567), "es-en": bleu_cell(29.994, 1_234_567)},
            "self-attentive": {"es-en": bleu_cell(7.5, 98_765)}}
    table = w.table1(ours, FACTS)
    assert table.rows == [
        ["SMT baseline", "–", "", "21.6", "", "25.2", ""],
        ["NMT baseline", "108.7M", "1.2M / 1.3M", "22.6", "20.13", "25.4", "30.00"],  # two vocabularies
        ["+ Memory RNN", "109.7M", "", "22.5", "", "25.5", ""],
        ["+ Self-attentive RNN", "110.2M", "", "22.0", "", "25.1", ""],
        ["+ Mean residual connections", "108.7M", "1.2M", "23.6", "21.00", "25.7", "29.99"],  # same size: once
        ["+ Self-attentive residual connections", "108.9M", "98.8K", "24.0", "", "26.3", "7.50"],
    ]


def test_table1_a_cell_without_params_is_left_out_of_the_size():
    ours = {"baseline": {"en-zh": bleu_cell(20.0, 1_234_567), "es-en": bleu_cell(30.0)}}
    assert w.table1(ours, FACTS).rows[1][:3] == ["NMT baseline", "108.7M", "1.2M"]


# ------------------------------------------------------------------ Tables 2-4
def test_table2_exact_rows():
    ours = {"baseline": {"nt14": bleu_cell(10.0), "nt15": bleu_cell(11.111)}, "self-rnn": {"nt15": bleu_cell(9.999)}}
    table = w.table2(ours, {**FACTS, "signatures": {"bleu": {"nt14": MULTI, "nt15": MULTI}}})
    assert table.columns == ["Models", "NT14 (paper)", "NT14 (ours)", "NT15 (paper)", "NT15 (ours)"]
    assert table.rows == [
        ["NMT (unk. word repl.) (Luong et al., 2015)", "20.9", "", "n/a", ""],
        ["Context-aware NMT (Zhang et al., 2017)", "22.57", "", "n/a", ""],
        ["Recurrent attention NMT (Yang et al., 2017)", "22.1", "", "25.0", ""],
        ["Variational NMT (Zhang et al., 2016a)", "n/a", "", "25.49", ""],
        ["NMT baseline", "22.3", "10.00", "24.8", "11.11"],
        ["+ Memory RNN", "22.6", "", "24.9", ""],
        ["+ Self-attentive RNN", "22.0", "", "24.3", "10.00"],
        ["+ Mean residual connections", "22.9", "", "24.9", ""],
        ["+ Self-attentive residual connections", "23.2", "", "25.5", ""],
    ]
    assert table.footer[-2:] == [
        "tiny scale: NT14, NT15 and NT16 are three consecutive parts of one held-out test split (stand-ins for "
        "newstest2014-2016)", "cited systems (Luong, Zhang, Yang, Zhang): as printed (not rebuilt)"]
    assert f"BLEU (ours): multi-bleu.perl's BLEU on tokenised, truecased text; {MULTI}" in table.footer
    assert "BLEU (ours): multi-bleu.perl's BLEU on tokenised, truecased text; no results yet" in w.table2(
        {}, {**FACTS, "signatures": {}}).footer


def test_table3_exact_rows_and_marks():
    ours = {"baseline": {"nt14": bleu_cell(20.0), "nt15": bleu_cell(21.0), "nt16": bleu_cell(22.0)},
            "mean": {"nt14": bleu_cell(20.5, p_value=0.03, delta=0.5, baseline=20.0),
                     "nt15": bleu_cell(21.5, p_value=0.2, delta=0.5, baseline=21.0),
                     "nt16": bleu_cell(21.0, p_value=0.001, delta=-1.0, baseline=22.0)},  # significantly worse
            "self-attentive": {"nt14": bleu_cell(20.7, p_value=0.004, delta=0.7, baseline=20.0),
                               "nt15": bleu_cell(21.25, p_value=0.01, delta=0.25, baseline=21.0),
                               "nt16": bleu_cell(22.0, p_value=0.001, delta=0.0, baseline=22.0)}}  # no better
    table = w.table3(ours, FACTS)
    assert table.columns == ["Models", "NT14 (paper)", "NT14 (ours)", "NT15 (paper)", "NT15 (ours)",
                             "NT16 (paper)", "NT16 (ours)"]
    assert table.rows == [
        ["Winning WMT (UEDIN-SYNTAX 2014, 2015; UEDIN-NMT 2016)", "20.1", "", "24.4", "", "34.2", ""],
        ["NMT (BPE) (Sennrich et al., 2016b)", "n/a", "", "22.8", "", "n/a", ""],
        ["Syntax NMT (Nadejde et al., 2017)", "n/a", "", "n/a", "", "29.0", ""],
        ["NMT baseline", "21.0", "20.00", "24.4", "21.00", "28.8", "22.00"],
        ["+ Mean residual connections*", "21.4", "20.50*", "24.7", "21.50", "29.6", "21.00"],
        ["+ Self-attentive residual connections**", "21.7", "20.70**", "25.0", "21.25*", "29.7", "22.00"],
    ]
    assert ("significance (ours): paired t-test, one-tailed, over sentence-level BLEU "
            "(our choice: the paper does not say over what), against our NMT baseline; * p < 0.05, ** p < 0.01, "
            "only where ours scores higher; the paper marks rows, we mark each test set") in table.footer
    assert f"BLEU (ours): NIST BLEU (mteval-v13a's tokenisation, sacreBLEU) on detokenised, detruecased text; " \
           f"{NIST}" in table.footer
    assert not any(line.startswith("significance") for line in w.table3({}, {**FACTS, "significance": None}).footer)


@pytest.mark.parametrize("p, delta, expected", [
    (0.0001, 0.3, "**"), (0.0099, 0.3, "**"), (0.01, 0.3, "*"), (0.0499, 0.3, "*"), (0.05, 0.3, ""),
    (0.5, 0.3, ""), (0.0001, -0.3, ""), (0.04, -0.3, ""), (0.0001, 0.0, "")])
def test_table3_marks_only_a_better_system(p, delta, expected):
    ours = {"mean": {"nt15": bleu_cell(24.0, p_value=p, delta=delta, baseline=24.0 - delta)}}
    assert w.table3(ours, FACTS).rows[4][4] == f"24.00{expected}"


def test_table4_exact_rows():
    ours = {"content-scope": {"en-zh": bleu_cell(5.0)}, "content": {"en-zh": bleu_cell(6.0), "es-en": bleu_cell(7.125)}}
    table = w.table4(ours, FACTS)
    assert table.columns == ["Attention function", "En-Zh (paper)", "En-Zh (ours)", "Es-En (paper)",
                             "Es-En (ours)"]
    assert table.rows == [["Content+Scope", "23.1", "5.00", "25.6", ""], ["Content", "24.0", "6.00", "26.3", "7.12"]]
    assert table.footer[-1] == "Content: the same systems as Table 1's '+ Self-attentive residual connections'"


# ------------------------------------------------------------------ Table 5
def ranking(d: str, pairs=None, filled=()):
    """A direction's ranking analysis as `pipeline ranking` writes it: tally None before any filled sheet."""
    tally = None
    if pairs is not None:
        tally = {"pairs": pairs, "items": pairs[0]["items"], "sheets": len(filled)}
    return {"sheet": f"artifacts/tiny/tables/werlen2018-table5/ranking/{d}.sheet.tsv",
            "key": f"artifacts/tiny/tables/werlen2018-table5/ranking/{d}.key.json", "items": 50,
            "systems": ["baseline", "mean", "self-attentive"], "filled": list(filled), "tally": tally}


def table5_cells(by_direction: dict) -> dict:
    """Every row's cell of a direction holds the same (per-column) ranking analysis."""
    return {row: {d: cell(f"w-{d}-{row}", ranking=result) for d, result in by_direction.items()}
            for row in ("baseline", "mean", "self-attentive")}


PAPER5 = [["Mean residual connections vs. NMT baseline", "26 56 18", "20 64 16", "28 58 24"],
          ["Self-attentive residual connections vs. NMT baseline", "28 60 12", "28 56 16", "32 54 14"],
          ["Self-attentive residual connections vs. Mean residual connections", "24 62 14", "28 58 14", "32 56 12"]]


def test_table5_without_a_tally_names_the_sheet_to_fill():
    table = w.table5(table5_cells({d: ranking(d) for d in DIRECTIONS}), FACTS)
    assert table.columns == ["System", "En-Zh (paper)", "En-Zh (ours)", "Es-En (paper)", "Es-En (ours)",
                             "En-De (paper)", "En-De (ours)"]
    assert table.rows == [[r[0], r[1], "", r[2], "", r[3], ""] for r in PAPER5]
    assert table.footer[:4] == [
        "paper: Miculicich Werlen et al. (2018), Table 5; (paper) columns as printed there ('> = <' in %), (ours) "
        "from the filled-in sheets", "scale: tiny", "corpora: En-Zh: l10n-en-zh; Es-En: l10n-es-en; En-De: l10n-en-de",
        "paper as printed: the En-De 'Mean vs. Baseline' row sums to 110"]
    assert table.footer[5] == (
        "Es-En (ours): not yet ranked; a native speaker fills in the blind sheet "
        "artifacts/tiny/tables/werlen2018-table5/ranking/es-en.sheet.tsv (50 sentences, the three systems in random "
        "order; the key artifacts/tiny/tables/werlen2018-table5/ranking/es-en.key.json stays apart), saved as "
        "<dir>/es-en.tsv, with tables.werlen2018-table5.analyses.ranking.sheets set to <dir>")
    assert len(table.footer) == 7


def test_table5_with_a_tally_flips_pairs_listed_the_other_way():
    # `pipeline ranking` lists the pairs in the order of the --hyp systems: (baseline, mean), (baseline,
    # self-attentive), (mean, self-attentive); Table 5's rows are mean vs. baseline, self-attentive vs. baseline,
    # self-attentive vs. mean. En-Zh, 4 items (counts better / equal / worse of the first system listed):
    #   baseline vs. mean 1 / 1 / 2 -> mean vs. baseline 50 25 25; baseline vs. self-attentive 0 / 1 / 3 -> 75 25 0;
    #   mean vs. self-attentive 0 / 2 / 2 -> self-attentive vs. mean 50 50 0.
    en_zh = [pair_result("baseline", "mean", [1, 1, 2], 4), pair_result("baseline", "self-attentive", [0, 1, 3], 4),
             pair_result("mean", "self-attentive", [0, 2, 2], 4)]
    # En-De, 3 items, listed as the table's rows: 2 / 0 / 1, 1 / 1 / 1, 0 / 3 / 0 -> 67 0 33, 33 33 33, 0 100 0.
    en_de = [pair_result("mean", "baseline", [2, 0, 1], 3), pair_result("self-attentive", "baseline", [1, 1, 1], 3),
             pair_result("self-attentive", "mean", [0, 3, 0], 3)]
    cells = table5_cells({"en-zh": ranking("en-zh", en_zh, ["sheets/en-zh.tsv"]), "es-en": ranking("es-en"),
                          "en-de": ranking("en-de", en_de, ["sheets/en-de-a.tsv", "sheets/en-de-b.tsv"])})
    table = w.table5(cells, FACTS)
    assert table.rows == [
        [PAPER5[0][0], "26 56 18", "50 25 25", "20 64 16", "", "28 58 24", "67 0 33"],
        [PAPER5[1][0], "28 60 12", "75 25 0", "28 56 16", "", "32 54 14", "33 33 33"],
        [PAPER5[2][0], "24 62 14", "50 50 0", "28 58 14", "", "32 56 12", "0 100 0"],
    ]
    assert table.footer[4] == "En-Zh (ours): 4 ranked items from 1 sheet(s): sheets/en-zh.tsv"
    assert table.footer[5].startswith("Es-En (ours): not yet ranked; a native speaker fills in the blind sheet ")
    assert table.footer[6] == "En-De (ours): 3 ranked items from 2 sheet(s): sheets/en-de-a.tsv, sheets/en-de-b.tsv"


# ------------------------------------------------------------------ Table 6
def lm(ppl, params=None):
    return {"lm": cell("w-lm", params=params,
                       perplexity={"perplexity": ppl, "nll": 1.0, "tokens": 100, "sentences": 10})}


def test_table6_exact_rows():
    table = w.table6({"lstm": lm(123.456, 1_234_567), "self-attentive": lm(80.04, 98_765)}, FACTS)
    assert table.columns == ["Systems", "d (paper)", "Perplexity (paper)", "Perplexity (ours)", "|Θ| (ours)"]
    assert table.rows == [
        ["LSTM (Daniluk et al., 2016)", "300", "85.2", "123.5", "1.2M"],
        ["LSTM + Attention (Daniluk et al., 2016)", "296", "82.0", "", ""],
        ["LSTM + 4-gram (Daniluk et al., 2016)", "968", "75.9", "", ""],
        ["LSTM + Mean residual connections", "296", "80.2", "", ""],
        ["LSTM + Self-attentive residual connections", "296", "80.4", "80.0", "98.8K"],
    ]
    assert table.footer[0] == ("paper: Miculicich Werlen et al. (2018), Table 6; (paper) columns as printed there "
                               "(47M parameters each), (ours) from this run")
    assert table.footer[2] == ("corpus (ours): LM: l10n-es-en, the target side (the language model reads no "
                               "source)")
    assert table.footer[-1] == "LSTM + Attention and LSTM + 4-gram (Daniluk et al., 2016): as printed (not rebuilt)"
    assert len(table.footer) == 7 and len(w.table6({}, {**FACTS, "scale": "paper"}).footer) == 6


# ------------------------------------------------------------------ Figures 2-4: data
# A 4 x 4 matrix (3 words): rows predict "the", "cat", "sat", </s>; columns <s>, the, cat, sat.
MATRIX = [[1.0, 0.0, 0.0, 0.0], [0.2, 0.8, 0.0, 0.0], [0.1, 0.6, 0.3, 0.0], [0.1, 0.1, 0.2, 0.6]]
WORDS = ["the", "cat", "sat"]


def previous_words(shares, matrix=MATRIX, trees=("((the cat) sat)", "(a (b c))"), n=4, sentence=0):
    """A previous_words analysis shaped like previous_word_analysis's output (max_distance = len(shares))."""
    k = len(shares)
    return {"n_sentences": n, "max_distance": k,
            "fig2": {"distance": [-d for d in range(1, k + 1)], "counts": [1] * k, "opportunities": [2] * k,
                     "shares": list(shares), "fractions": [1 / k] * k},
            "fig3": {"sentence": sentence, "rows": WORDS + ["</s>"], "columns": ["<s>"] + WORDS, "matrix": matrix},
            "fig4": [{"sentence": sentence + j, "tree": t} for j, t in enumerate(trees)], "parseval": None}


def attending(memory=(1.0, 0.0, None), self_rnn=(0.5, 0.25, 0.125), self_attentive=(0.25, 0.5, 1 / 3), **kw):
    return {"memory": {"es-en": cell("w-es-en-memory", previous_words=previous_words(memory, **kw))},
            "self-rnn": {"es-en": cell("w-es-en-self-rnn", previous_words=previous_words(self_rnn, **kw))},
            "self-attentive": {"es-en": cell("w-es-en-self-attentive",
                                             previous_words=previous_words(self_attentive, **kw))}}


def trees_only(**kw):
    return {"self-attentive": attending(**kw)["self-attentive"]}


def test_fig2_shares_in_percent():
    table, _ = f.fig2(attending(), FACTS)
    assert table.columns == ["relative position", "Memory RNN (ours)", "Self-attentive RNN (ours)",
                             "Self-attentive residual (ours)"]
    assert table.rows == [["-1", "100.0", "50.0", "25.0"], ["-2", "0.0", "25.0", "50.0"], ["-3", "", "12.5", "33.3"]]
    assert table.footer[:4] == [
        "paper: Miculicich Werlen et al. (2018), Figure 2; ours from this run (the paper's figure is not "
        "transcribed: its values are not printed)", "scale: tiny", "corpora: Es-En: l10n-es-en",
        "attention: teacher-forced on the first 4 references of the test set (test), our choice (the paper does "
        "not say)"]
    assert table.footer[-1].startswith("share at position -d: predictions whose most attended previous word is d ")
    assert len(f.fig2(attending(), {**FACTS, "scale": "paper"})[0].footer) == 5  # no tiny-scale note


def test_fig3_matrix_rows():
    table, _ = f.fig3(attending(sentence=2), FACTS)
    assert table.columns == ["model", "predicted word", "0:<s>", "1:the", "2:cat", "3:sat"]
    assert len(table.rows) == 12
    assert table.rows[:4] == [["Memory RNN", "the", "1.000", "0.000", "0.000", "0.000"],
                              ["Memory RNN", "cat", "0.200", "0.800", "0.000", "0.000"],
                              ["Memory RNN", "sat", "0.100", "0.600", "0.300", "0.000"],
                              ["Memory RNN", "</s>", "0.100", "0.100", "0.200", "0.600"]]
    assert [r[:2] for r in table.rows[4::4]] == [["Self-attentive RNN", "the"], ["Self-attentive residual", "the"]]
    assert table.footer[-1] == "sentence 3: the cat sat"


def test_fig4_trees_and_the_missing_parses_note():
    table, _ = f.fig4(trees_only(sentence=4), FACTS)
    assert table.columns == ["sentence", "tree"]
    assert table.rows == [["5", "((the cat) sat)"], ["6", "(a (b c))"]]
    assert table.footer[-1].startswith("no gold parses given (analyses.previous_words.parses): the paper's ParsEval")
    cells = trees_only()
    cells["self-attentive"]["es-en"]["previous_words"]["fig4"].append({"sentence": 2, "tree": None})  # no words
    cells["self-attentive"]["es-en"]["previous_words"]["parseval"] = {
        "algorithm1": {"precision": 0.5, "recall": 0.25, "f1": 1 / 3},
        "right_branching": {"precision": 0.125, "recall": 0.0625, "f1": 1 / 12}, "sentences": 3, "gold_spans": 8}
    table, _ = f.fig4(cells, FACTS)
    assert table.rows == [
        ["1", "((the cat) sat)"], ["2", "(a (b c))"],
        ["Algorithm 1", "precision 0.50, recall 0.25 (paper: Algorithm 1 precision 0.56, right-branching 0.45)"],
        ["right-branching baseline", "precision 0.12, recall 0.06 (paper: Algorithm 1 precision 0.56, "
                                     "right-branching 0.45)"]]
    assert not any(line.startswith("no gold parses") for line in table.footer)


def test_parse_brackets():
    assert f.parse_brackets("((the cat) (sat (on mat)))") == [["the", "cat"], ["sat", ["on", "mat"]]]
    assert f.parse_brackets("word") == "word"
    with pytest.raises(PipelineError, match=r"tree '\(a b\)\)': unbalanced '\)'"):
        f.parse_brackets("(a b))")


# ------------------------------------------------------------------ bad input
BLANK5 = table5_cells({d: ranking(d) for d in DIRECTIONS})


def without(cell: dict, key: str) -> dict:
    return {k: v for k, v in cell.items() if k != key}


@pytest.mark.parametrize("name, ours, message", [
    ("werlen2018-table1", {"smt": {"en-zh": bleu_cell(1.0)}}, r"cells\.smt: unknown row"),
    ("werlen2018-table1", {"baseline": {"en-de": bleu_cell(1.0)}}, r"cells\.baseline\.en-de: unknown column"),
    ("werlen2018-table1", {"baseline": {"en-zh": {"system": "s"}}}, r"cells\.baseline\.en-zh\.bleu: missing"),
    ("werlen2018-table1", {"mean": {"es-en": bleu_cell(1.0, params=1.5)}}, r"cells\.mean\.es-en\.params: expected int"),
    ("werlen2018-table1", {"mean": {"es-en": bleu_cell("27.1")}}, r"cells\.mean\.es-en\.bleu: expected float"),
    ("werlen2018-table2", {"memory": {"nt16": bleu_cell(1.0)}}, r"cells\.memory\.nt16: unknown column"),
    ("werlen2018-table2", {"memory": {"nt14": bleu_cell(1.0, params=5)}}, r"cells\.memory\.nt14\.params: unknown key"),
    ("werlen2018-table3", {"memory": {"nt14": bleu_cell(1.0)}}, r"cells\.memory: unknown row"),
    ("werlen2018-table3", {"mean": {"nt14": {**bleu_cell(1.0), "p_value": 0.01}}},
     r"cells\.mean\.nt14\.delta: missing"),
    ("werlen2018-table3", {"mean": {"nt14": bleu_cell(1.0, p_value=1.5, delta=0.1, baseline=1.0)}},
     r"cells\.mean\.nt14\.p_value: expected a probability"),
    ("werlen2018-table4", {"self-attentive": {"en-zh": bleu_cell(1.0)}}, r"cells\.self-attentive: unknown row"),
    ("werlen2018-table5", {"memory": {"en-zh": {"ranking": ranking("en-zh")}}}, r"cells\.memory: unknown row"),
    ("werlen2018-table5", {**BLANK5, "mean": {"en-zh": {"ranking": without(ranking("en-zh"), "tally")}}},
     r"cells\.mean\.en-zh\.ranking: missing 'tally'"),
    ("werlen2018-table5", {**BLANK5, "mean": {"en-zh": {"ranking": without(ranking("en-zh"), "filled")}}},
     r"cells\.mean\.en-zh\.ranking: missing 'filled'"),
    ("werlen2018-table5", {"baseline": {"en-zh": {"ranking": ranking("en-zh"), "bleu": 1.0}}},
     r"cells\.baseline\.en-zh\.bleu: unknown key"),
    ("werlen2018-table5", table5_cells({d: ranking(d, [pair_result("baseline", "mean", [1, 0, 0], 1)])
                                        for d in DIRECTIONS}),
     r"ranking tally: no pair self-attentive / baseline"),
    ("werlen2018-table5", table5_cells({"en-zh": ranking("en-zh"), "es-en": ranking("es-en")}),
     r"cells\.baseline\.en-de: missing"),
    ("werlen2018-table6", {"lstm-attention": lm(80.0)}, r"cells\.lstm-attention: unknown row"),
    ("werlen2018-table6", {"lstm": {"lm": {"perplexity": {"perplexity": 3.0, "tokens": 5}}}},
     r"cells\.lstm\.lm\.perplexity: missing 'nll'"),
    ("werlen2018-table6", {"mean": {"lm": {"params": 5}}}, r"cells\.mean\.lm\.perplexity: missing"),
    ("werlen2018-fig2", {**attending(), "memory": {"es-en": {"system": "s", "attention": {}}}},
     r"cells\.memory\.es-en: expected the previous_words analysis"),
    ("werlen2018-fig2", {**attending(), "self-rnn": {"es-en": {
        "previous_words": without(previous_words([1.0]), "fig3")}}},
     r"cells\.self-rnn\.es-en\.previous_words: missing 'fig3'"),
    ("werlen2018-fig2", {**attending(), "baseline": {"es-en": {"previous_words": previous_words([1.0])}}},
     r"cells\.baseline: unknown row"),
    ("werlen2018-fig2", {"memory": attending()["memory"], "self-rnn": attending()["self-rnn"]},
     r"cells\.self-attentive\.es-en: missing"),
    ("werlen2018-fig2", {**attending(), "memory": {"es-en": {"previous_words": {**previous_words([1.0]),
                                                                                "fig2": None}}}},
     r"cells\.memory\.es-en\.previous_words\.fig2: "),
    ("werlen2018-fig2", attending(memory=(0.5, 0.5)), r"cells\.self-rnn\.es-en\.previous_words\.fig2: 3 shares"),
    ("werlen2018-fig2", attending(self_attentive=(0.5, 0.5)),
     r"cells\.self-attentive\.es-en\.previous_words\.fig2: 2 shares"),
    ("werlen2018-fig3", {**attending(), "self-rnn": {"en-de": attending()["self-rnn"]["es-en"]}},
     r"cells\.self-rnn\.en-de: unknown column"),
    ("werlen2018-fig4", {**trees_only(), "memory": attending()["memory"]}, r"cells\.memory: unknown row"),
    ("werlen2018-fig4", trees_only(trees=("((a b)",)), r"tree '\(\(a b\)': expected one bracketed tree"),
    ("werlen2018-fig4", {}, r"cells\.self-attentive\.es-en: missing"),
])
def test_bad_cells_name_the_key(name, ours, message):
    with pytest.raises(PipelineError, match=message):
        build(name, ours, FACTS)


@pytest.mark.parametrize("layout, facts, message", [
    (w.table1, without(FACTS, "signatures"), r"facts\.signatures: missing"),
    (w.table2, without(FACTS, "test_sets"), r"facts\.test_sets: missing"),
    (w.table3, {**FACTS, "significance": {"n_samples": 10}}, r"facts\.significance: expected"),
    (w.table4, {**FACTS, "corpora": "l10n"}, r"facts\.corpora: expected a dict column -> text"),
    (w.table5, without(FACTS, "corpora"), r"facts\.corpora: missing"),
    (w.table6, without(FACTS, "scale"), r"facts\.scale: missing"),
    (f.fig2, without(FACTS, "test_sets"), r"facts\.test_sets: missing"),
    (f.fig4, {**FACTS, "scale": 1}, r"facts\.scale: expected a string"),
])
def test_bad_facts_name_the_key(layout, facts, message):
    cells = {w.table5: BLANK5, f.fig2: attending(), f.fig4: trees_only()}.get(layout, {})
    with pytest.raises(PipelineError, match=message):
        layout(cells, facts)


# ------------------------------------------------------------------ build and figures
FIGURE_INPUTS = {"werlen2018-fig2": attending(), "werlen2018-fig3": attending(), "werlen2018-fig4": trees_only()}
OTHER_INPUTS = {  # the same shapes, other numbers
    "werlen2018-fig2": attending(memory=(0.1, 0.9, 0.5)),
    "werlen2018-fig3": attending(matrix=[[1.0, 0.0, 0.0, 0.0], [0.9, 0.1, 0.0, 0.0], [0.1, 0.1, 0.8, 0.0],
                                         [0.7, 0.1, 0.1, 0.1]]),
    "werlen2018-fig4": trees_only(trees=("(the (cat sat))",)),
}


def test_layout_registry():
    names = [f"werlen2018-table{i}" for i in range(1, 7)] + [f"werlen2018-fig{i}" for i in range(2, 5)]
    assert sorted(n for n in LAYOUTS if n.startswith("werlen2018-")) == sorted(names)
    assert {n for n in names if LAYOUTS[n].figure} == set(FIGURE_INPUTS)
    assert LAYOUTS["werlen2018-table5"].function is w.table5 and LAYOUTS["werlen2018-fig4"].function is f.fig4
    table, figure = build("werlen2018-table4", {}, {**FACTS, "precision": "float32"})
    assert figure is None and table.footer[-1] == "precision (training and decoding): float32"
    assert LABELS["self-attentive"] == "+ Self-attentive residual connections"


def png(figure, path) -> bytes:
    save_figure(figure, path)
    return path.read_bytes()


@pytest.mark.parametrize("name", sorted(FIGURE_INPUTS))
def test_figures_render_deterministically(name, tmp_path):
    table, first = build(name, FIGURE_INPUTS[name], FACTS)
    _, second = build(name, FIGURE_INPUTS[name], FACTS)
    data = png(first, tmp_path / "a.png")
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert hashlib.sha256(data).digest() == hashlib.sha256(png(second, tmp_path / "b.png")).digest()
    pixels = imread(tmp_path / "a.png")
    assert pixels.shape[0] >= 300 and pixels.std() > 0.01  # not blank
    assert table.rows


@pytest.mark.parametrize("name", sorted(FIGURE_INPUTS))
def test_figures_differ_with_the_data(name, tmp_path):
    _, one = build(name, FIGURE_INPUTS[name], FACTS)
    _, two = build(name, OTHER_INPUTS[name], FACTS)
    assert png(one, tmp_path / "one.png") != png(two, tmp_path / "two.png")
