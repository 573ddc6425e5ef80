"""zeng2021 Tables 1-4 and Figures 3-8: transcribed numbers, exact layouts from the generic cells and facts,
direction-aware daggers, checks, deterministic figures."""
import hashlib

import numpy as np
import pytest
from cells import cell, facts, significance
from matplotlib.image import imread

from pipeline.errors import PipelineError
from pipeline.evaluate.rouge import meteor_unavailable_reason
from pipeline.papers.zeng2021 import attention_figures as za
from pipeline.papers.zeng2021 import figures as zf
from pipeline.papers.zeng2021 import layouts as z
from pipeline.papers.zeng2021.reported import (REPORTED, ZENG2021_PAIRS, ZENG2021_TABLE1_BLEU,
                                               ZENG2021_TABLE1_DAGGERS, ZENG2021_TABLE1_SACREBLEU,
                                               ZENG2021_TABLE2_SACREBLEU, ZENG2021_TABLE3_BLEU,
                                               ZENG2021_TABLE4_DIALOGUE, ZENG2021_TABLE4_SUMMARIZATION, reported)
from pipeline.report.figures import save_figure
from pipeline.report.layouts import LAYOUTS, build

SACRE = "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"
TOK = "multi-bleu|nrefs:1|case:mixed|eff:no|tok:none|smooth:none|version:2.6.0"
COLUMNS = ("en-de", "en-fr", "summarization", "dialogue")
FACTS = facts({"en-de": "toy-de", "en-fr": "toy-fr", "summarization": "toy-sum", "dialogue": "toy-chat"},
              table="zeng2021-table1", columns=sorted(COLUMNS),
              corpus_descriptions={c: f"a toy {c} corpus" for c in COLUMNS},
              signatures={"bleu": {"en-de": TOK, "en-fr": TOK}, "sacrebleu": {"en-de": SACRE, "en-fr": SACRE}},
              significance=significance("paired_bootstrap", value="sacrebleu"), device="cpu x 1 process(es)",
              analyses={"speed": {"sentences": 200, "batch_sizes": [10, 100], "beams": [1, 4, 8], "repeats": 3},
                        "attention": {"sentences": 400, "bins": 2}, "patterns": {"size": 2},
                        "length": {"by": ["source", "target"], "bins": [[0, 10], [10, None]]}})


def mt(bleu, sacrebleu, p_value=None, params=None, reference=None, delta=None):
    """A Tables 1-3 cell; with a p-value, the significance fields against `reference` (TransF's cell; by default its
    own values), delta on SacreBLEU (the value zeng2021 tests)."""
    return cell(bleu=bleu, sacrebleu=sacrebleu, params=params, p_value=p_value, delta=delta, value="sacrebleu",
                baseline=reference or {"bleu": bleu, "sacrebleu": sacrebleu})


def printed(table, row_id, col):
    """Printed value of a reported cell."""
    return table.row(row_id).cells[col].bleu


# ------------------------------------------------------------------ transcribed numbers
def test_table1_transcription_spot_checks():
    b, s = ZENG2021_TABLE1_BLEU, ZENG2021_TABLE1_SACREBLEU
    assert b.pairs == ZENG2021_PAIRS + ("average",)
    assert [r.row_id for r in b.rows] == ["transf", "hcsa", "synr", "ran-e", "ran-d", "ran-all"]
    assert [printed(b, r.row_id, "en-de") for r in b.rows] == ["27.70", "26.94", "27.17", "27.42", "28.18", "27.66"]
    assert [printed(s, r.row_id, "tr-en") for r in s.rows] == ["16.60", "16.90", "16.10", "17.30", "17.60", "17.30"]
    assert printed(b, "ran-d", "zh-en") == "48.69" and printed(s, "ran-d", "zh-en") is None
    assert (printed(b, "transf", "average"), printed(s, "ran-d", "average")) == ("26.69", "23.11")
    assert printed(b, "ran-all", "en-fr") == "42.05" and printed(s, "hcsa", "en-lv") == "15.60"
    assert ("bleu", "ran-d", "zh-en") in ZENG2021_TABLE1_DAGGERS
    assert ("sacrebleu", "ran-d", "zh-en") not in ZENG2021_TABLE1_DAGGERS
    assert ("sacrebleu", "ran-all", "en-fi") in ZENG2021_TABLE1_DAGGERS
    assert ("bleu", "ran-all", "en-de") not in ZENG2021_TABLE1_DAGGERS
    assert len(ZENG2021_TABLE1_DAGGERS) == 27


def test_table1_printed_averages_are_the_mean_of_the_printed_values():
    for table, pairs in ((ZENG2021_TABLE1_BLEU, ZENG2021_PAIRS), (ZENG2021_TABLE1_SACREBLEU, ZENG2021_PAIRS[:-1])):
        for row in table.rows:
            mean = sum(row.cells[p].bleu_value for p in pairs) / len(pairs)
            assert abs(mean - row.cells["average"].bleu_value) <= 0.005 + 1e-9, (table.table, row.row_id)


def test_tables_2_to_4_transcription():
    assert printed(ZENG2021_TABLE2_SACREBLEU, "transf", "en-de") == "27.12"
    assert printed(ZENG2021_TABLE2_SACREBLEU, "-pos-e", "en-de") == "12.90"
    assert [printed(ZENG2021_TABLE3_BLEU, r, "en-fr") for r in ("ran-all", "fixed", "no-ln-res")] == [
        "42.05", "41.93", "41.14"]
    assert [r.row_id for r in ZENG2021_TABLE4_SUMMARIZATION.rows] == ["transf", "synr", "ran-e", "ran-d", "ran-all"]
    assert printed(ZENG2021_TABLE4_SUMMARIZATION, "ran-e", "rougeL") == "36.62"
    assert printed(ZENG2021_TABLE4_DIALOGUE, "ran-all", "bleu4") == "3.50"
    assert printed(ZENG2021_TABLE4_DIALOGUE, "synr", "meteor") == "7.74"
    assert reported("table2-bleu") is REPORTED["table2-bleu"]
    with pytest.raises(PipelineError, match="zeng2021: no reported 'table9'"):
        reported("table9")
    assert sorted(REPORTED) == ["table1-bleu", "table1-sacrebleu", "table2-bleu", "table2-sacrebleu",
                                         "table3-bleu", "table3-sacrebleu", "table4-dialogue", "table4-summarization"]


# ------------------------------------------------------------------ Table 1
def test_table1_paper_cells_as_printed():
    rows = {(r[0], r[1]): r for r in z.table1({}, FACTS).rows}
    en_de = rows[("En-De", "BLEU")]
    assert en_de[2::2] == ["27.70", "26.94 (-0.76)", "27.17 (-0.53)", "27.42 (-0.28)", "28.18 (+0.48)†",
                           "27.66 (-0.04)"]
    assert en_de[3::2] == [""] * 6
    assert rows[("En-De", "SacreBLEU")][12] == "27.00 (+0.00)"
    assert rows[("En-Fr", "BLEU")][12] == "42.05 (-0.25)"  # printed so, though 42.05 - 42.40 = -0.35
    assert rows[("Fi-En", "BLEU")][8] == "25.96 (+0.09)"  # printed so, though 25.96 - 26.05 = -0.09
    assert rows[("Zh-En", "SacreBLEU")][2::2] == ["n/a"] * 6
    assert rows[("Zh-En", "BLEU")][10] == "48.69 (+0.52)†"
    assert rows[("Average", "BLEU")][2::2] == ["26.69", "26.02 (-0.67)", "26.27 (-0.42)", "26.82 (+0.13)",
                                               "27.17 (+0.48)†", "26.85 (+0.16)"]
    assert rows[("Average", "SacreBLEU")][10] == "23.11 (+0.44)†"


def test_table1_ours_deltas_marks_and_averages():
    transf = {"en-de": mt(20.0, 19.5, params=1_200_000), "de-en": mt(22.0, 21.0), "zh-en": mt(10.0, 9.0)}
    ours = {
        "transf": transf,
        "ran-d": {"en-de": mt(21.234, 20.0, 0.004, 1_100_000, transf["en-de"]),
                  "de-en": mt(21.0, 21.5, 0.2, reference=transf["de-en"]),
                  "zh-en": mt(12.0, 9.5, 0.001, reference=transf["zh-en"])},
        "hcsa": {"en-de": mt(19.0, 20.0, 0.001, reference=transf["en-de"])},  # beats TransF's SacreBLEU, p < 0.01
        "synr": {"en-de": mt(19.0, 19.0, 0.001, reference=transf["en-de"])},  # p < 0.01 but worse: no mark
    }
    table = z.table1(ours, FACTS)
    rows = {(r[0], r[1]): r for r in table.rows}
    assert rows[("En-De", "BLEU")][3::2] == ["20.00", "19.00 (-1.00)†", "19.00 (-1.00)", "", "21.23 (+1.23)†", ""]
    assert rows[("En-De", "SacreBLEU")][3::2] == ["19.50", "20.00 (+0.50)†", "19.00 (-0.50)", "",
                                                  "20.00 (+0.50)†", ""]
    assert rows[("De-En", "BLEU")][11] == "21.00 (-1.00)"
    assert rows[("Zh-En", "SacreBLEU")][11] == "9.50 (+0.50)†"
    # BLEU averages over 3 pairs; SacreBLEU leaves out Zh-En like the paper: (19.5 + 21) / 2 and (20 + 21.5) / 2.
    assert rows[("Average", "BLEU")][3::2] == ["17.33", "19.00", "19.00", "", "18.08 (+0.74)", ""]
    assert rows[("Average", "SacreBLEU")][3] == "20.25" and rows[("Average", "SacreBLEU")][11] == "20.75 (+0.50)"
    assert "Average (ours), BLEU: each system over its own pairs (TransF 3, HC-SA 1, Syn-R 1, RAN-D 3); " \
           "delta only where a system has TransF's pairs" in table.footer
    assert "#Para. (ours): En-De: TransF 1.2M, RAN-D 1.1M" in table.footer
    assert table.columns[:4] == ["Lang.", "Metric", "TransF (paper)", "TransF (ours)"] and len(table.columns) == 14
    assert len(table.rows) == 22


def test_table1_average_footer_names_the_pairs_when_shared():
    ours = {"transf": {"en-de": mt(20.0, 19.0), "zh-en": mt(10.0, 9.0)},
            "ran-e": {"en-de": mt(21.0, 19.0), "zh-en": mt(10.0, 9.0)}}
    table = z.table1(ours, FACTS)
    assert "Average (ours), BLEU: over 2 of 10 pairs (En-De, Zh-En)" in table.footer
    assert "Average (ours), SacreBLEU: over 1 of 9 pairs (En-De)" in table.footer
    assert [r for r in table.rows if r[:2] == ["Average", "BLEU"]][0][9] == "15.50 (+0.50)"


def test_table1_footer_text():
    lines = z.table1({}, FACTS).footer
    assert lines[:7] == [
        "paper: Zeng et al. (2021), Table 1; (paper) columns as printed there, (ours) columns from this run",
        "scale: tiny", "corpora: En-De: toy-de; En-Fr: toy-fr",
        "test sets: En-De: the test split of toy-de; En-Fr: the test split of toy-fr",
        f"BLEU, tokenised and case-sensitive (ours): {TOK}", f"SacreBLEU (ours): {SACRE}",
        "† (ours): paired bootstrap resampling, 1000 samples, seed 12345 on SacreBLEU against our TransF of the same "
        "pair; shown when p < 0.01 and the system scores higher (the paper's convention)"]
    same = {**FACTS, "signatures": {"bleu": {"en-de": SACRE}, "sacrebleu": {"en-de": SACRE}}}
    assert f"BLEU, tokenised and case-sensitive, SacreBLEU (ours): {SACRE}" in z.table2({}, same).footer
    assert not any(line.startswith("†") for line in z.table1({}, {**FACTS, "significance": None}).footer)


# ------------------------------------------------------------------ Tables 2, 3, 4
def test_table2_exact_rows():
    transf = mt(20.0, 19.0)
    ours = {"transf": {"en-de": transf}, "-pos-e": {"en-de": mt(10.0, 9.0, 0.5, reference=transf)},
            "-pos-d+ran-d": {"en-de": mt(20.5, 19.6, 0.009, reference=transf)}}
    table = z.table2(ours, FACTS)
    assert table.columns == ["Model", "En-De BLEU (paper)", "En-De BLEU (ours)", "En-De SacreBLEU (paper)",
                             "En-De SacreBLEU (ours)"]
    assert table.rows == [
        ["TransF", "27.70", "20.00", "27.12", "19.00"],
        ["−Pos-E", "13.14", "10.00 (-10.00)", "12.90", "9.00 (-10.00)"],
        ["−Pos-E+RAN-E", "27.48", "", "26.80", ""],
        ["−Pos-D", "27.66", "", "27.07", ""],
        ["−Pos-D+RAN-D", "28.02", "20.50 (+0.50)†", "27.40", "19.60 (+0.60)†"],
    ]


@pytest.mark.parametrize("p,delta,expected", [(0.001, -0.5, ""), (0.001, 0.5, "†"), (0.009, 0.5, "†"),
                                              (0.02, 0.5, ""), (0.001, 0.0, "")])
def test_a_worse_system_gets_no_dagger(p, delta, expected):
    transf = mt(20.0, 19.0)
    cells = {"transf": {"en-de": transf}, "-pos-d": {"en-de": mt(19.0, 18.5, p, reference=transf, delta=delta)}}
    assert z.table2(cells, FACTS).rows[3][2::2] == [f"19.00 (-1.00){expected}", f"18.50 (-0.50){expected}"]
    grid = {"transf": {"en-de": transf}, "ran-e": {"en-de": mt(19.0, 18.5, p, reference=transf, delta=delta)}}
    row = next(r for r in z.table1(grid, FACTS).rows if r[:2] == ["En-De", "SacreBLEU"])
    assert row[9] == f"18.50 (-0.50){expected}"


def test_table3_deltas_against_ran_all_without_marks():
    ours = {"ran-all": {"en-fr": mt(20.0, 19.0)}, "fixed": {"en-fr": mt(19.9, 19.2)},
            "no-ln-res": {"en-de": mt(15.0, 14.0)}}
    table = z.table3(ours, {**FACTS, "significance": None})
    assert len(table.columns) == 9
    assert table.rows == [
        ["RAN-ALL", "27.66", "", "27.00", "", "42.05", "20.00", "39.10", "19.00"],
        ["fixed", "27.52", "", "26.80", "", "41.93", "19.90 (-0.10)", "38.90", "19.20 (+0.20)"],
        ["w/o LN&RES", "27.15", "15.00", "26.50", "14.00", "41.14", "", "38.20", ""],
    ]


def task(**values):
    """A Table 4 cell: every value the table asks for (rouge1, rouge2, rougeL, bleu4)."""
    return cell(**{"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0, "bleu4": 0.0, **values})


def test_table4_meteor_na_with_reason_and_standin_label():
    ours = {"transf": {"dialogue": task(bleu4=1.0, rougeL=2.5),
                       "summarization": task(rouge1=30.0, rouge2=10.0, rougeL=25.125)}}
    footer = {**FACTS, "corpora": {**FACTS["corpora"], "summarization": "standin-summarization"},
              "corpus_descriptions": {**FACTS["corpus_descriptions"], "summarization": "toy summaries"}}
    table = z.table4(ours, footer)
    assert table.rows[0] == ["TransF", "39.07", "30.00", "17.30", "10.00", "36.00", "25.12",
                             "3.12", "1.00", "16.54", "2.50", "8.05", "n/a"]
    assert table.rows[2] == ["RAN-E", "39.55", "", "17.73", "", "36.62", "", "3.47", "", "16.54", "", "8.33", ""]
    assert "STAND-IN" in table.title
    assert f"n/a (Meteor): {meteor_unavailable_reason()}" in table.footer
    assert "STAND-IN (Summarization): standin-summarization: toy summaries" in table.footer
    assert not any("STAND-IN (Dialogue)" in line for line in table.footer)
    assert table.columns[1:3] == ["Summarization Rouge-1 (paper)", "Summarization Rouge-1 (ours)"]
    assert "STAND-IN" not in z.table4({}, FACTS).title


def test_table4_meteor_is_never_given():
    ours = {"ran-d": {"dialogue": task(meteor=8.0)}}
    with pytest.raises(PipelineError, match=r"cells\.ran-d\.dialogue\.meteor: unknown key"):
        z.table4(ours, FACTS)


# ------------------------------------------------------------------ figures: data
def speed(factor):
    """A speed analysis: rates at beam 4 for batch 10, 100 and at batch 100 for beams 1, 8."""
    rows = ([{"batch_size": b, "beam": 4, "tokens_per_s": factor * b, "threads": 1} for b in (10, 100)]
            + [{"batch_size": 100, "beam": k, "tokens_per_s": factor * 100 / k} for k in (1, 8)])
    return cell(speed={"rows": rows, "sentences": 200, "device": "cpu"})


def side(entropy, js_off=0.1):
    """Two layers, two histogram bins."""
    return {"entropy": [entropy, entropy / 2], "histogram": {"edges": [0.0, 0.5, 1.0], "counts": [[3, 1], [2, 2]]},
            "js": [[0.0, js_off], [js_off, 0.0]]}


def attention(entropy):
    """cells[row]["en-de"] for Figures 4, 5, 7."""
    return cell(attention={"enc": side(entropy), "dec": side(entropy + 1, 0.25), "n_sentences": 5, "bins": 2})


def bins(first, n=3):
    """Two length bins, the second empty."""
    return [{"bin": "(0, 10]", "bleu": first, "n": n}, {"bin": "> 10", "bleu": None, "n": 0}]


PATTERNS = {"ran-all": {"en-de": cell(patterns={
    "enc": [[[0.5, 0.5], [0.2, 0.8]], [[1.0, 0.0], [0.0, 1.0]]],
    "dec": [[[1.0, 0.0], [0.9, 0.1]]]})}}


def test_fig3_rates_and_ratios():
    table, _ = zf.fig3({"transf": {"en-de": speed(1.0)}, "ran-all": {"en-de": speed(1.25)}}, FACTS)
    assert table.rows == [
        ["batch size", "10", "4", "10.0", "12.5", "1.250"],
        ["batch size", "100", "4", "100.0", "125.0", "1.250"],
        ["beam", "100", "1", "100.0", "125.0", "1.250"],
        ["beam", "100", "4", "100.0", "125.0", "1.250"],
        ["beam", "100", "8", "12.5", "15.6", "1.250"],
    ]
    assert "23.6%" in table.footer[0] and "1.2x" in table.footer[0]
    assert "speed: one CPU thread, alone on the machine; the first 200 test sentences; median of 3 timed passes " \
           "after one warm-up pass" in table.footer
    assert "measured: TransF 200 sentences on cpu; RAN-ALL 200 sentences on cpu" in table.footer
    only, _ = zf.fig3({"transf": {"en-de": speed(2.0)}}, FACTS)
    assert only.rows[0] == ["batch size", "10", "4", "20.0", "", ""]


def test_fig4_fig5_fig7_tables():
    ours = {"transf": {"en-de": attention(1.0)}, "ran-all": {"en-de": attention(2.0)}}
    t4, _ = za.fig4(ours, FACTS)
    assert t4.rows == [["Enc", "1", "1.000", "", "2.000"], ["Enc", "2", "0.500", "", "1.000"],
                       ["Dec", "1", "2.000", "", "3.000"], ["Dec", "2", "1.000", "", "1.500"]]
    assert "sentences analysed: TransF 5, RAN-ALL 5" in t4.footer
    assert any(line.startswith("attention: teacher-forced passes over the first 400 test sentences")
               for line in t4.footer)
    t5, _ = za.fig5(ours, FACTS)
    assert t5.rows[:2] == [["Enc", "1", "[0, 0.5)", "0.7500", "", "0.7500"],
                           ["Enc", "1", "[0.5, 1]", "0.2500", "", "0.2500"]]
    assert len(t5.rows) == 8  # 2 sides x layers {1, 2} x 2 bins
    t7, _ = za.fig7(ours, FACTS)
    assert t7.columns == ["Model", "Side", "Layer", "L1", "L2"]
    assert t7.rows[2] == ["TransF", "Dec", "1", "0.000", "0.250"]
    assert len(t7.rows) == 8


def test_fig5_shows_layers_1_middle_last():
    assert za.shown_layers(6) == [1, 3, 6]
    assert za.shown_layers(2) == [1, 2]
    assert za.shown_layers(1) == [1]


def test_fig6_pattern_summary():
    table, _ = zf.fig6(PATTERNS, FACTS)
    # Enc L1 rows: entropy (ln 2 + H(0.2, 0.8)) / 2, first-token weight (0.5 + 0.2) / 2; argmax offsets 0 and 0.
    assert table.rows == [["Enc", "1", "2 x 2", "0.00", "0.597", "0.350"],
                          ["Enc", "2", "2 x 2", "0.00", "0.000", "0.500"],
                          ["Dec", "1", "2 x 2", "-0.50", "0.163", "0.950"]]
    assert any(line.startswith("patterns: the learnt, input-independent weights") for line in table.footer)
    one_side = {"ran-all": {"en-de": {"patterns": {"enc": PATTERNS["ran-all"]["en-de"]["patterns"]["enc"],
                                                   "dec": None}}}}
    assert [r[0] for r in zf.fig6(one_side, FACTS)[0].rows] == ["Enc", "Enc"]  # a dot-product side: None
    offset, entropy, first = zf.pattern_stats([[2.0, 2.0], [1.0, 3.0]])  # rows normalised first
    assert (offset, first) == (0.0, 0.375) and abs(entropy - (np.log(2) + 0.5623351446188083) / 2) < 1e-12


def test_fig8_bins_table():
    ours = {"transf": {"en-de": cell(length={"source": bins(10.0), "target": bins(11.0)})},
            "ran-d": {"en-de": cell(length={"source": bins(12.5), "target": bins(9.0)})}}
    table, _ = zf.fig8(ours, FACTS)
    assert any(line.startswith("bins (our choice): (0, 10], > 10;") for line in table.footer)
    assert table.rows == [["source", "(0, 10]", "3", "10.00", "", "12.50", ""],
                          ["source", "> 10", "0", "n/a", "", "n/a", ""],
                          ["target", "(0, 10]", "3", "11.00", "", "9.00", ""],
                          ["target", "> 10", "0", "n/a", "", "n/a", ""]]


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("name, ours, message", [
    ("zeng2021-table1", {"ran-x": {}}, r"cells\.ran-x: unknown row"),
    ("zeng2021-table1", {"transf": {"en-xx": mt(1.0, 1.0)}}, r"cells\.transf\.en-xx: unknown column"),
    ("zeng2021-table1", {"transf": {"en-de": {"bleu": 1.0}}}, r"cells\.transf\.en-de\.sacrebleu: missing"),
    ("zeng2021-table1", {"transf": {"en-de": {**mt(1.0, 1.0), "chrf": 2}}}, r"cells\.transf\.en-de\.chrf: unknown key"),
    ("zeng2021-table2", {"transf": {"en-de": mt(1.0, 1.0, 1.5)}}, r"cells\.transf\.en-de\.p_value: expected a prob"),
    ("zeng2021-table2", {"-pos-e": {"en-de": {**mt(1.0, 1.0), "p_value": 0.1}}}, r"cells\.-pos-e\.en-de\.delta: mis"),
    ("zeng2021-table3", {"fixed": {"en-de": mt("27", 1.0)}}, r"cells\.fixed\.en-de\.bleu: expected float"),
    ("zeng2021-table4", {"synr": {"dialogue": {"bleu4": 1.0}}}, r"cells\.synr\.dialogue\.rougeL: missing"),
    ("zeng2021-table4", {"synr": {"summarization": task(rouge1=140.0)}},
     r"cells\.synr\.summarization\.rouge1: expected a score in 0\.\.100"),
    ("zeng2021-fig3", {"transf": {"en-de": {"speed": {"rows": [{"batch_size": 8, "beam": 2, "tokens_per_s": 1.0}]}}}},
     r"cells\.transf\.en-de\.speed\.rows: no setting at beam 4 or batch size 100"),
    ("zeng2021-fig3",
     {"ran-all": {"en-de": {"speed": {"rows": [{"batch_size": 100, "beam": 4, "tokens_per_s": -1.0}]}}}},
     r"cells\.ran-all\.en-de\.speed\.rows\[0\]\.tokens_per_s: expected a finite number >= 0"),
    ("zeng2021-fig3", {"ran-all": {"en-de": {"speed": [{"batch_size": 100, "beam": 4, "tokens_per_s": 1.0}]}}},
     r"cells\.ran-all\.en-de\.speed: expected a dict with keys rows"),
    ("zeng2021-fig4", {"synr": {"en-de": {"attention": {**attention(1.0)["attention"], "bins": 3}}}},
     r"cells\.synr\.en-de\.attention\.enc\.histogram\.edges: expected a list of bins \+ 1 = 4 edges"),
    ("zeng2021-fig7", {"synr": {"en-de": {"attention": {**attention(1.0)["attention"],
                                                         "dec": {**side(1.0), "js": [[0.0, -1.0], [0.1, 0.0]]}}}}},
     r"cells\.synr\.en-de\.attention\.dec\.js\[0\]\[1\]: expected a finite number >= 0"),
    ("zeng2021-fig6", {"ran-all": {"en-de": {"patterns": {"enc": [[[0.0, 0.0], [0.5, 0.5]]], "dec": [[[1.0]]]}}}},
     r"cells\.ran-all\.en-de\.patterns\.enc\[0\]\[0\]: all weights are 0"),
    ("zeng2021-fig6", {"ran-all": {"en-de": {"patterns": {"enc": [[[1.0, 0.0]]], "dec": [[[1.0]]]}}}},
     r"cells\.ran-all\.en-de\.patterns\.enc\[0\]\[0\]: expected a list of 1 values"),
    ("zeng2021-fig8",
     {"ran-e": {"en-de": cell(length={"source": bins(5.0, n=0), "target": bins(1.0)})}},
     r"cells\.ran-e\.en-de\.length\.source\[0\]\.bleu: expected None for an empty bin"),
])
def test_bad_cells_name_the_key(name, ours, message):
    with pytest.raises(PipelineError, match=message):
        build(name, ours, FACTS)


def test_models_must_agree_on_bins_and_depth():
    ours = {"transf": {"en-de": cell(length={"source": bins(1.0), "target": bins(1.0)})},
            "ran-all": {"en-de": cell(length={"source": bins(1.0, n=4), "target": bins(1.0)})}}
    with pytest.raises(PipelineError, match=r"cells\.ran-all\.en-de\.length\.source: bins or sentence counts differ"):
        zf.fig8(ours, FACTS)
    deeper = attention(1.0)
    deeper["attention"]["enc"] = {"entropy": [1.0], "histogram": {"edges": [0.0, 0.5, 1.0], "counts": [[1, 1]]},
                                  "js": [[0.0]]}
    with pytest.raises(PipelineError, match=r"cells\.synr\.en-de\.attention\.enc\.entropy: 1 layers; expected 2"):
        za.fig4({"transf": {"en-de": attention(1.0)}, "synr": {"en-de": deeper}}, FACTS)
    other_edges = attention(1.0)
    other_edges["attention"]["dec"]["histogram"]["edges"] = [0.0, 0.25, 1.0]
    with pytest.raises(PipelineError, match=r"cells\.synr\.en-de\.attention\.dec\.histogram\.edges: differ"):
        za.fig5({"transf": {"en-de": attention(1.0)}, "synr": {"en-de": other_edges}}, FACTS)


@pytest.mark.parametrize("facts, message", [
    ({k: v for k, v in FACTS.items() if k != "signatures"}, r"facts\.signatures: missing"),
    ({k: v for k, v in FACTS.items() if k != "test_sets"}, r"facts\.test_sets: missing"),
    ({**FACTS, "significance": {"n_samples": 10}}, r"facts\.significance: expected"),
    ({**FACTS, "corpora": "toy"}, r"facts\.corpora: expected a dict column -> text"),
])
def test_bad_facts_name_the_key(facts, message):
    with pytest.raises(PipelineError, match=message):
        z.table1({}, facts)


@pytest.mark.parametrize("layout,kind", [(zf.fig3, "speed"), (za.fig4, "attention"), (zf.fig6, "patterns"),
                                         (zf.fig8, "length")])
def test_figures_need_their_analysis_settings(layout, kind):
    with pytest.raises(PipelineError, match=rf"facts\.analyses\.{kind}: missing"):
        layout({}, {**FACTS, "analyses": {}})


# ------------------------------------------------------------------ build and figures
FIGURE_INPUTS = {
    "zeng2021-fig3": {"transf": {"en-de": speed(1.0)}, "ran-all": {"en-de": speed(1.25)}},
    "zeng2021-fig4": {"transf": {"en-de": attention(1.0)}, "synr": {"en-de": attention(1.5)}},
    "zeng2021-fig5": {"transf": {"en-de": attention(1.0)}, "ran-all": {"en-de": attention(2.0)}},
    "zeng2021-fig6": PATTERNS,
    "zeng2021-fig7": {"transf": {"en-de": attention(1.0)}, "ran-all": {"en-de": attention(2.0)}},
    "zeng2021-fig8": {"transf": {"en-de": cell(length={"source": bins(10.0), "target": bins(11.0)})}},
}


def test_layout_registry():
    assert sorted(n for n in LAYOUTS if n.startswith("zeng2021-")) == sorted(
        [f"zeng2021-table{i}" for i in range(1, 5)] + [f"zeng2021-fig{i}" for i in range(3, 9)])
    assert {n for n in LAYOUTS if n.startswith("zeng2021-") and LAYOUTS[n].figure} == set(FIGURE_INPUTS)
    assert LAYOUTS["zeng2021-table1"].function is z.table1
    table, figure = build("zeng2021-table2", {}, FACTS)
    assert figure is None and table.rows[0] == ["TransF", "27.70", "", "27.12", ""]


@pytest.mark.parametrize("name", sorted(FIGURE_INPUTS))
def test_figures_render_deterministically(name, tmp_path):
    table, first = build(name, FIGURE_INPUTS[name], FACTS)
    _, second = build(name, FIGURE_INPUTS[name], FACTS)
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    save_figure(first, a)
    save_figure(second, b)
    data = a.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert hashlib.sha256(data).digest() == hashlib.sha256(b.read_bytes()).digest()
    pixels = imread(a)
    assert pixels.shape[0] >= 300 and pixels.std() > 0.01  # not blank
    assert table.rows  # the table holds the plotted numbers


@pytest.mark.parametrize("name", sorted(FIGURE_INPUTS))
def test_figures_without_results_still_render(name, tmp_path):
    table, figure = build(name, {}, FACTS)
    save_figure(figure, tmp_path / "empty.png")
    assert (tmp_path / "empty.png").read_bytes()[:4] == b"\x89PNG"
    assert table.rows == []


def test_figure_differs_with_the_data(tmp_path):
    _, one = za.fig4(FIGURE_INPUTS["zeng2021-fig4"], FACTS)
    _, two = za.fig4({"transf": {"en-de": attention(3.0)}}, FACTS)
    save_figure(one, tmp_path / "one.png")
    save_figure(two, tmp_path / "two.png")
    assert (tmp_path / "one.png").read_bytes() != (tmp_path / "two.png").read_bytes()
