"""hao2019: transcribed numbers, exact layouts from the generic cells and facts, control rows, direction-aware
marks, figures and checks."""
import hashlib

import numpy as np
import pytest
from cells import bleu_cell, cell, facts, significance
from matplotlib.image import imread

from pipeline.errors import PipelineError
from pipeline.papers.hao2019 import layouts as hao2019
from pipeline.papers.hao2019.layouts import fig5, length_figure, table1, table2, table3, table4, table5
from pipeline.papers.hao2019.reported import (HAO2019_TABLE3, PROBING_TASKS, REPORTED, check_probing,
                                              reported)
from pipeline.report.figures import save_figure
from pipeline.report.layouts import LAYOUTS, build
from pipeline.report.reported import Cell

SIG = "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"
FACTS = facts({"zh-en": "toy-zh", "en-de": "toy-de"}, table="hao2019-table3", columns=["en-de", "zh-en"],
              corpus_descriptions={"zh-en": "a toy Zh-En corpus", "en-de": "a toy En-De corpus"},
              signatures={"bleu": {"zh-en": SIG, "en-de": SIG}}, significance=significance("paired_bootstrap"),
              device="cpu x 1 process(es)",
              analyses={"probing": {"corpus": "en-de", "max_per_task": 6000, "seed": 1, "epochs": 100, "hidden": 0,
                                    "lr": 0.01},
                        "length": {"by": ["source"], "bins": [[0, 15], [15, 30], [30, 45], [45, None]]}})
COMMON = [
    "# scale: tiny",
    "# corpora: En-De: toy-de",
    "# test sets: En-De: the test split of toy-de",
    f"# BLEU (ours): {SIG}",
    "# significance (ours): paired bootstrap resampling, 1000 samples, seed 12345, against our Transformer-Base "
    "(the paper marks none in this table); ⇑ p < 0.01, ↑ p < 0.05, only where ours scores higher than its baseline",
    "# continued (control): ours, not in the paper: the baseline trained on for as many extra steps as the rows "
    "fine-tuned from it, so that every row has trained as long; marked against the baseline like the proposed rows",
]


def paper_line(table: str) -> str:
    """The first footer line of a paper-vs-ours table."""
    return f"# paper: Hao et al. (2019), {table}; (paper) columns as printed there, (ours) columns from this run"


def tsv(*lines) -> str:
    """Lines (lists are tab-joined) as TSV text."""
    return "\n".join("\t".join(line) if isinstance(line, list) else line for line in lines) + "\n"


# ------------------------------------------------------------------ transcribed numbers
def test_reported_table3_equals_the_paper():
    t = reported("table3")
    assert t is REPORTED["table3"] is HAO2019_TABLE3
    assert [r.row_id for r in t.rows] == ["vaswani2017-base", "vaswani2017-big", "hassan2018-big",
                                          "chen2018-rnmt-san", "base", "base+biarn", "big", "big+biarn"]
    assert t.row("vaswani2017-base").cells["en-de"] == Cell("65M", "27.3")
    assert t.row("vaswani2017-big").cells["en-de"].params_millions == 213.0
    assert t.row("hassan2018-big").cells["zh-en"].bleu_value == 24.2
    assert t.row("chen2018-rnmt-san").cells["en-de"].bleu_value == 28.84
    assert t.row("base").cells["zh-en"].params_millions == 107.9
    assert t.row("base+biarn").cells["zh-en"] == Cell("+9.4M", "24.70", "⇑")
    assert t.row("big").cells["en-de"] == Cell("264.1M", "28.58")
    assert t.row("big+biarn").cells["zh-en"] == Cell("+69.4M", "25.10", "⇑")
    assert t.row("big+biarn").cells["en-de"] == Cell("+69.4M", "28.98", "↑")
    assert t.row("vaswani2017-base").cells["zh-en"] == Cell(None, None)
    with pytest.raises(PipelineError, match="hao2019: no reported 'table6'; known: table1, table2, table3"):
        reported("table6")


def test_reported_numbers_equal_the_paper():
    t1, t2, t4, t5, f5 = (reported(t) for t in ("table1", "table2", "table4", "table5", "fig5"))
    assert [(r.row_id, r.cells["en-de"].speed, r.cells["en-de"].bleu) for r in t1.rows] == [
        ("base", "1.28", "27.31"), ("birnn-6l", "1.10", "27.54"), ("biarn-6l", "1.09", "27.72"),
        ("biarn-3l", "1.15", "28.10"), ("biarn-1l", "1.24", "28.21")]
    assert [(r.row_id, r.architecture, r.setting, r.cells["en-de"].bleu_value) for r in t2.rows] == [
        ("base", "n/a", "n/a", 27.31), ("gated-top", "Gated Sum", "Top", 28.12),
        ("gated-all", "Gated Sum", "All", 28.02), ("stack-top", "Stack", "Top", 28.21),
        ("stack-all", "Stack", "All", 27.93)]
    assert [(r.row_id, r.cells["en-de"].bleu) for r in t4.rows] == [
        ("base", "27.31"), ("relpos", "27.64"), ("disan", "27.58"), ("rnn-encoder", "27.47"), ("biarn", "28.21")]
    assert [(r.row_id, r.cells["en-de"].bleu) for r in f5.rows] == [
        ("base", "27.31"), ("steps-1", "27.50"), ("steps-4", "27.99"), ("steps-8", "28.21"),
        ("steps-16", "27.92"), ("steps-J", "27.33")]
    assert [t5.row("base").cells["en-de"].probing[t] for t in PROBING_TASKS] == [
        "92.20", "63.00", "44.74", "79.02", "71.24", "89.24", "84.69", "84.53", "52.13", "62.47"]
    assert [t5.row("biarn-1l").cells["en-de"].probing_value(t) for t in PROBING_TASKS] == [
        90.91, 73.68, 45.15, 79.62, 72.21, 89.00, 85.54, 84.54, 53.44, 62.71]
    # the 1-layer BiARN with stack-top and T = 8 is the same model in Tables 1, 2, 4 and Figure 5
    assert {t.row(r).cells["en-de"].bleu for t, r in ((t1, "biarn-1l"), (t2, "stack-top"), (t4, "biarn"),
                                                      (f5, "steps-8"))} == {"28.21"}


def test_probing_task_names_are_checked_by_the_paper():
    with pytest.raises(PipelineError, match="probing task 'Length'"):
        check_probing(Cell(probing={"Length": "90.00"}))
    assert check_probing(Cell(probing={"WC": "90.00"})).probing_value("WC") == 90.0


# ------------------------------------------------------------------ Table 3
BASE_ZH, BASE_DE = {"bleu": 21.234, "params": 107_912_345}, {"bleu": 26.5, "params": 88_012_000}
BIG_DE = {"bleu": 27.0, "params": 264_100_000}
CELLS3 = {
    "base": {"zh-en": bleu_cell(21.234, 107_912_345), "en-de": bleu_cell(26.5, 88_012_000)},
    "base-cont": {"zh-en": bleu_cell(21.5, 107_912_345, p_value=0.2, baseline=BASE_ZH),
                  "en-de": bleu_cell(26.0, 88_012_000, p_value=0.001, baseline=BASE_DE)},  # worse: no mark
    "base+biarn": {"zh-en": bleu_cell(22.01, 117_312_345, p_value=0.001, baseline=BASE_ZH),
                   "en-de": bleu_cell(26.9, 97_412_000, p_value=0.03, baseline=BASE_DE)},
    "big": {"en-de": bleu_cell(27.0, 264_100_000)},
    "big-cont": {"en-de": bleu_cell(27.2, 264_100_000, p_value=0.04, baseline=BIG_DE)},
    "big+biarn": {"en-de": bleu_cell(27.456, 333_500_000, p_value=0.2, baseline=BIG_DE)},
}
EXPECTED_TSV3 = tsv(
    ["System", "Architecture",
     "Zh-En #Para. (paper)", "Zh-En #Para. (ours)", "Zh-En BLEU (paper)", "Zh-En BLEU (ours)",
     "En-De #Para. (paper)", "En-De #Para. (ours)", "En-De BLEU (paper)", "En-De BLEU (ours)"],
    ["Vaswani et al., 2017", "Transformer-Base", "n/a", "", "n/a", "", "65M", "", "27.3", ""],
    ["Vaswani et al., 2017", "Transformer-Big", "n/a", "", "n/a", "", "213M", "", "28.4", ""],
    ["Hassan et al., 2018", "Transformer-Big", "n/a", "", "24.2", "", "n/a", "", "n/a", ""],
    ["Chen et al., 2018", "RNMT + SAN Encoder", "n/a", "", "n/a", "", "n/a", "", "28.84", ""],
    ["this work", "Transformer-Base", "107.9M", "107.9M", "24.13", "21.23", "88.0M", "88.0M", "27.31", "26.50"],
    ["this work", "Transformer-Base, continued (control)", "n/a", "+0.0K", "n/a", "21.50",
     "n/a", "+0.0K", "n/a", "26.00"],
    ["this work", "+ 1-Layer BiARN", "+9.4M", "+9.4M", "24.70⇑", "22.01⇑", "+9.4M", "+9.4M", "28.21⇑", "26.90↑"],
    ["this work", "Transformer-Big", "303.9M", "", "24.56", "", "264.1M", "264.1M", "28.58", "27.00"],
    ["this work", "Transformer-Big, continued (control)", "n/a", "", "n/a", "", "n/a", "+0.0K", "n/a", "27.20↑"],
    ["this work", "+ 1-Layer BiARN", "+69.4M", "", "25.10⇑", "", "+69.4M", "+69.4M", "28.98↑", "27.46"],
    paper_line("Table 3"),
    "# scale: tiny",
    "# corpora: Zh-En: toy-zh; En-De: toy-de",
    "# test sets: Zh-En: the test split of toy-zh; En-De: the test split of toy-de",
    f"# BLEU (ours): {SIG}",
    "# significance (ours): paired bootstrap resampling, 1000 samples, seed 12345, against the same-size "
    "Transformer baseline; ⇑ p < 0.01, ↑ p < 0.05, only where ours scores higher than its baseline",
    COMMON[-1],
    "# #Para.: proposed and control rows show the increase over their baseline, as the paper prints them",
)


def test_table3_exact_tsv_with_control_rows():
    assert table3(CELLS3, FACTS).to_tsv() == EXPECTED_TSV3


def test_table3_without_our_results_keeps_paper_columns():
    rows = table3({}, FACTS).rows
    assert len(rows) == 10
    assert rows[6] == ["this work", "+ 1-Layer BiARN", "+9.4M", "", "24.70⇑", "", "+9.4M", "", "28.21⇑", ""]
    assert rows[5] == ["this work", "Transformer-Base, continued (control)"] + ["n/a", "", "n/a", ""] * 2


@pytest.mark.parametrize("p,delta,expected", [(0.001, -0.4, ""), (0.001, 0.4, "⇑"), (0.03, 0.4, "↑"),
                                              (0.03, -0.4, ""), (0.2, 0.4, ""), (0.001, 0.0, "")])
def test_a_worse_system_gets_no_mark(p, delta, expected):
    base = {"bleu": 20.4, "params": 1_000_000}
    cells = {"base": {"en-de": bleu_cell(20.4, 1_000_000)},
             "base+biarn": {"en-de": bleu_cell(20.0, 1_100_000, p_value=p, delta=delta, baseline=base)}}
    assert table3(cells, FACTS).rows[6][9] == f"20.00{expected}"
    assert table4({"biarn": {"en-de": bleu_cell(20.0, p_value=p, delta=delta, baseline=base)}}, FACTS).rows[5][3] == \
        f"20.00{expected}"


def test_facts_per_column_and_missing_keys():
    facts = {**FACTS, "signatures": {"bleu": {"zh-en": "tok:zh", "en-de": "tok:13a"}}}
    assert "BLEU (ours): Zh-En: tok:zh; En-De: tok:13a" in table3({}, facts).footer
    assert "BLEU (ours): no results yet" in table3({}, {**FACTS, "signatures": {}}).footer
    assert not any(line.startswith("significance") for line in table3({}, {**FACTS, "significance": None}).footer)
    with pytest.raises(PipelineError, match=r"facts\.test_sets: missing"):
        table3(CELLS3, {k: v for k, v in FACTS.items() if k != "test_sets"})
    with pytest.raises(PipelineError, match=r"facts\.device: missing"):
        table1({}, {k: v for k, v in FACTS.items() if k != "device"})
    with pytest.raises(PipelineError, match=r"facts\.analyses\.probing: missing"):
        table5({}, {**FACTS, "analyses": {}})
    standin = {**FACTS, "corpora": {"en-de": "standin-copy"}, "corpus_descriptions": {"en-de": "copies"}}
    assert "STAND-IN (En-De): standin-copy: copies" in table2({}, standin).footer


@pytest.mark.parametrize("cells,key", [
    ({"huge": {}}, r"cells\.huge: unknown row"),
    ({"base": {"fr-en": bleu_cell(1.0)}}, r"cells\.base\.fr-en: unknown column"),
    ({"vaswani2017-base": {}}, r"cells\.vaswani2017-base: unknown row"),  # the paper's citations: its numbers only
    ({"base": {"zh-en": {"params": 5}}}, r"cells\.base\.zh-en\.bleu: missing"),
    ({"base": {"zh-en": {"bleu": "high"}}}, r"cells\.base\.zh-en\.bleu: expected float"),
    ({"base": {"zh-en": {"bleu": 1.0, "chrf": 2.0}}}, r"cells\.base\.zh-en\.chrf: unknown key"),
    ({"base+biarn": {"zh-en": bleu_cell(1.0, p_value=1.5, baseline=1.0)}}, r"cells\.base\+biarn\.zh-en\.p_value"),
])
def test_bad_cells_name_the_key(cells, key):
    with pytest.raises(PipelineError, match=key):
        table3(cells, FACTS)


# ------------------------------------------------------------------ Tables 1, 2, 4, 5
BASE = {"bleu": 10.0, "params": 1000, "steps_per_s": 3.456}


def test_table1_exact_tsv():
    cells = {"base": {"en-de": bleu_cell(10.0, 1000, steps_per_s=3.456)},
             "base-cont": {"en-de": bleu_cell(10.5, 1000, p_value=0.04, baseline=BASE, steps_per_s=3.4)},
             "biarn-1l": {"en-de": bleu_cell(11.237, 1100, p_value=0.004, baseline=BASE, steps_per_s=2.0)},
             "birnn-6l": {"en-de": bleu_cell(9.5, 1200, p_value=0.001, baseline=BASE, steps_per_s=None)}}
    assert table1(cells, FACTS).to_tsv() == tsv(
        ["Model", "Rec. Encoder", "Speed (paper)", "Speed (ours)", "BLEU (paper)", "BLEU (ours)"],
        ["Base", "n/a", "1.28", "3.46", "27.31", "10.00"],
        ["Transformer-Base, continued (control)", "n/a", "n/a", "3.40", "n/a", "10.50↑"],
        ["Ours", "6-Layer BiRNN", "1.10", "", "27.54", "9.50"],
        ["Ours", "6-Layer BiARN", "1.09", "", "27.72", ""],
        ["Ours", "3-Layer BiARN", "1.15", "", "28.10", ""],
        ["Ours", "1-Layer BiARN", "1.24", "2.00", "28.21", "11.24⇑"],
        paper_line("Table 1"), *COMMON,
        "# speed: training steps/second measured by our trainer on cpu x 1 process(es) (the paper's on its own GPUs)",
        "# recurrence encoder output fed to the top decoder layer by stack fusion, as in the paper")


def test_table2_exact_tsv():
    cells = {"stack-top": {"en-de": bleu_cell(3.0, p_value=0.2, baseline=2.0)},
             "gated-all": {"en-de": bleu_cell(2.555)},
             "base-cont": {"en-de": bleu_cell(2.1, p_value=0.001, baseline=2.0)}}
    assert table2(cells, FACTS).to_tsv() == tsv(
        ["Model", "Integration", "to Dec.", "BLEU (paper)", "BLEU (ours)"],
        ["Base", "n/a", "n/a", "27.31", ""],
        ["Transformer-Base, continued (control)", "n/a", "n/a", "n/a", "2.10⇑"],
        ["Ours", "Gated Sum", "Top", "28.12", ""],
        ["Ours", "Gated Sum", "All", "28.02", "2.56"],
        ["Ours", "Stack", "Top", "28.21", "3.00"],
        ["Ours", "Stack", "All", "27.93", ""],
        paper_line("Table 2"), *COMMON, "# recurrence encoder: 1-Layer BiARN")


def test_table4_exact_tsv():
    cells = {"biarn": {"en-de": bleu_cell(3.0, p_value=0.04, baseline=2.5)}, "relpos": {"en-de": bleu_cell(2.0)},
             "base-cont": {"en-de": bleu_cell(2.4, p_value=0.5, baseline=2.5)}}
    assert table4(cells, FACTS).to_tsv() == tsv(
        ["Model", "Reference", "BLEU (paper)", "BLEU (ours)"],
        ["Transformer-Base", "this work", "27.31", ""],
        ["Transformer-Base, continued (control)", "this work", "n/a", "2.40"],
        ["+ RelPos", "Shaw et al., 2018", "27.64", "2.00"],
        ["+ DiSAN", "Shen et al., 2018", "27.58", ""],
        ["+ RNN Encoder", "Chen et al., 2018", "27.47", ""],
        ["+ BiARN Encoder (Ours)", "this work", "28.21", "3.00↑"],
        paper_line("Table 4"), *COMMON,
        "# RelPos: relative positions (Shaw et al., 2018), clipping k = 16; DiSAN: directional masks "
        "(Shen et al., 2018); RNN Encoder: extra 6-layer RNN encoder, multi-column (Chen et al., 2018)")


def probing(accuracies: dict) -> dict:
    """A probing analysis as pipeline/papers/hao2019/probing.py writes it."""
    return {task: {"dev": acc - 1.0, "test": acc, "n_train": 10, "n_classes": 2} for task, acc in accuracies.items()}


def test_table5_exact_tsv_and_missing_tasks():
    cells = {"base": {"en-de": cell("b", probing=probing({"SeLen": 50.0, "WC": 1.5}))},
             "biarn-1l": {"en-de": cell("a", probing=probing({t: 60.0 + i for i, t in enumerate(PROBING_TASKS)}))},
             "biarn-3l": {"en-de": cell("c", probing={})}}
    paper = {"base": ["92.20", "63.00", "44.74", "79.02", "71.24", "89.24", "84.69", "84.53", "52.13", "62.47"],
             "birnn-6l": ["89.90", "77.46", "44.47", "79.55", "71.53", "89.17", "85.99", "84.96", "51.75", "61.92"],
             "biarn-6l": ["89.78", "72.02", "44.45", "79.21", "71.31", "88.38", "85.64", "85.00", "53.27", "62.38"],
             "biarn-3l": ["89.80", "72.61", "44.28", "79.43", "71.84", "88.93", "85.79", "84.99", "53.30", "62.42"],
             "biarn-1l": ["90.91", "73.68", "45.15", "79.62", "72.21", "89.00", "85.54", "84.54", "53.44", "62.71"]}
    needs = "needs parsed data"
    mine = {"base": ["50.00", "1.50"] + [needs] * 8, "birnn-6l": [""] * 10, "biarn-6l": [""] * 10,
            "biarn-3l": [needs] * 10, "biarn-1l": [f"{60 + i}.00" for i in range(10)]}
    labels = {"base": ["Base", "n/a"], "birnn-6l": ["Ours", "6-Layer BiRNN"], "biarn-6l": ["Ours", "6-Layer BiARN"],
              "biarn-3l": ["Ours", "3-Layer BiARN"], "biarn-1l": ["Ours", "1-Layer BiARN"]}
    header = ["Model", "Rec. Encoder"] + [f"{t} ({w})" for t in PROBING_TASKS for w in ("paper", "ours")]
    rows = [labels[r] + [x for pair in zip(paper[r], mine[r]) for x in pair] for r in paper]
    assert table5(cells, FACTS).to_tsv() == tsv(
        header, *rows, paper_line("Table 5"), "# scale: tiny", "# corpora: En-De: toy-de",
        "# probing: text-only tasks (those that need no parser) built from the source side of corpus en-de, at most "
        "6000 sentences per task, seed 1; a linear classifier on the mean of the top encoder layer (two encoders: "
        "gated), at most 100 epochs, lr 0.01, seed 1",
        "# task groups: Surface: SeLen, WC; Syntactic: TrDep, ToCo, BShif; Semantic: Tense, SubN, ObjN, SoMo, CoIn",
        "# needs parsed data: the task's labelled sentences come from a parser, which this scale cannot build")
    paper_scale = table5({}, {**FACTS, "scale": "paper"}).footer
    assert paper_scale[3].startswith("probing: SentEval's probing files; a linear classifier")


@pytest.mark.parametrize("layout,cells,key", [
    (table1, {"big": {}}, r"cells\.big: unknown row"),
    (table1, {"base": {"zh-en": bleu_cell(1.0)}}, r"cells\.base\.zh-en: unknown column"),
    (table1, {"base": {"en-de": bleu_cell(1.0, steps_per_s=-1.0)}}, r"cells\.base\.en-de\.steps_per_s"),
    (table1, {"base": {"en-de": bleu_cell(1.0, speed=1.0)}}, r"cells\.base\.en-de\.speed: unknown key"),
    (table2, {"stack-top": {"en-de": {"params": 5}}}, r"cells\.stack-top\.en-de\.bleu: missing"),
    (table2, {"biarn-1l": {}}, r"cells\.biarn-1l: unknown row"),
    (table4, {"biarn": {"en-de": bleu_cell("28")}}, r"cells\.biarn\.en-de\.bleu"),
    (table5, {"base": {"en-de": bleu_cell(1.0)}}, r"cells\.base\.en-de\.probing: missing"),
    (table5, {"base-cont": {}}, r"cells\.base-cont: unknown row"),  # Table 5 has no control
    (table5, {"base": {"en-de": {"probing": probing({"Length": 1.0})}}}, r"cells\.base\.en-de\.probing\.Length: unk"),
    (table5, {"base": {"en-de": {"probing": probing({"WC": 0.5, "SeLen": 101.0})}}},
     r"cells\.base\.en-de\.probing\.SeLen\.test"),
    (table5, {"base": {"en-de": {"probing": {"WC": 50.0}}}}, r"cells\.base\.en-de\.probing\.WC: expected a dict"),
    (fig5, {"steps-32": {}}, r"cells\.steps-32: unknown row"),
    (fig5, {"steps-J": {"en-de": bleu_cell(1.0, p_value=2.0, baseline=1.0)}}, r"cells\.steps-J\.en-de\.p_value"),
])
def test_bad_cells_of_each_layout_name_the_key(layout, cells, key):
    with pytest.raises(PipelineError, match=key):
        layout(cells, FACTS)


# ------------------------------------------------------------------ Figure 5
def test_fig5_exact_tsv_and_figure_with_the_control():
    cells = {"base": {"en-de": bleu_cell(5.0)}, "base-cont": {"en-de": bleu_cell(5.25)},
             "steps-4": {"en-de": bleu_cell(6.0, p_value=0.001, baseline=5.0)},
             "steps-J": {"en-de": bleu_cell(5.5)}}
    table, figure = fig5(cells, FACTS)
    assert table.to_tsv() == tsv(
        ["Recurrent steps", "BLEU (paper)", "BLEU (ours)"],
        ["Transformer-Base", "27.31", "5.00"], ["Transformer-Base, continued (control)", "n/a", "5.25"],
        ["T = 1", "27.50", ""], ["T = 4", "27.99", "6.00⇑"],
        ["T = 8", "28.21", ""], ["T = 16", "27.92", ""], ["T = J", "27.33", "5.50"],
        paper_line("Figure 5 (values printed on the figure)"), *COMMON,
        "# recurrence encoder: 1-Layer BiARN, stack fusion into the top decoder layer; "
        "T = J: as many steps as source tokens")
    axes = figure.axes
    assert len(axes) == 2  # ours far below the paper: own right-hand axis
    assert list(axes[0].lines[0].get_ydata()) == [27.50, 27.99, 28.21, 27.92, 27.33]
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["1", "4", "8", "16", "J"]
    dashed = [line for ax in axes for line in ax.lines if line.get_linestyle() == "--"]
    assert sorted(line.get_ydata()[0] for line in dashed) == [5.0, 27.31]
    dotted = [line for ax in axes for line in ax.lines if line.get_linestyle() == ":"]
    assert [(line.get_ydata()[0], line.get_label()) for line in dotted] == [(5.25, "ours base, continued (control)")]
    close = {row: {"en-de": bleu_cell(27.0)} for row in ("base", "steps-8")}
    figure = fig5(close, FACTS)[1]
    assert len(figure.axes) == 1  # paper-scale numbers share the axis
    assert not [line for line in figure.axes[0].lines if line.get_linestyle() == ":"]  # no control, no line


# ------------------------------------------------------------------ BLEU by length
def sample_bins(shift: float) -> list[dict]:
    """bleu_by_length-shaped output with an empty second bin."""
    return [{"bin": "(0, 15]", "bleu": 20.0 + shift, "n": 3}, {"bin": "(15, 30]", "bleu": None, "n": 0},
            {"bin": "(30, 45]", "bleu": 10.0, "n": 1}, {"bin": "> 45", "bleu": 12.5 - shift, "n": 2}]


def length(shift: float) -> dict:
    """A length cell as the table step hands it: the analysis JSON by kind."""
    return {"en-de": cell("s", length={"source": sample_bins(shift)})}


LENGTH_COLUMNS = ["Source length", "Sentences", "BLEU Base", "BLEU Base, continued (control)", "BLEU Ours",
                  "Delta BLEU (Ours - Base)", "Delta BLEU (Ours - control)"]
LENGTH_FOOTER = [
    "# paper: Hao et al. (2019), section 5.4, BLEU by source length; the paper prints no numbers for it, "
    "so all columns are ours",
    "# scale: tiny", "# corpora: En-De: toy-de", "# test sets: En-De: the test split of toy-de",
    "# BLEU (ours): corpus sacreBLEU of each bin's sentences, the target language's tokenizer",
    COMMON[-1],
    "# Ours: Transformer-Base + 1-Layer BiARN (stack fusion, top decoder layer)",
    "# bins: source length in whitespace tokens of the tokenised source; n/a: no sentences in the bin",
]


def test_length_exact_tsv_and_figure_with_the_control_series():
    table, figure = length_figure({"base": length(0.0), "base-cont": length(1.0), "biarn": length(2.25)}, FACTS)
    assert table.to_tsv() == tsv(
        LENGTH_COLUMNS,
        ["(0, 15]", "3", "20.00", "21.00", "22.25", "+2.25", "+1.25"],
        ["(15, 30]", "0", "n/a", "n/a", "n/a", "", ""],
        ["(30, 45]", "1", "10.00", "10.00", "10.00", "+0.00", "+0.00"],
        ["> 45", "2", "12.50", "11.50", "10.25", "-2.25", "-1.25"], *LENGTH_FOOTER)
    ax = figure.axes[0]
    assert sorted(round(p.get_height(), 2) for p in ax.patches) == [10.0, 10.0, 10.0, 10.25, 11.5, 12.5, 20.0,
                                                                     21.0, 22.25]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["Base", "Base, continued (control)", "Ours"]


def test_length_accepts_the_bins_list_and_missing_rows():
    rows = length_figure({"biarn": {"en-de": {"length": sample_bins(0.0)}}}, FACTS)[0].rows
    assert rows[0] == ["(0, 15]", "3", "", "", "20.00", "", ""]
    rows = length_figure({}, FACTS)[0].rows  # no results yet: the bins of the table's settings
    assert rows == [[b, "", "", "", "", "", ""] for b in ("(0, 15]", "(15, 30]", "(30, 45]", "> 45")]
    with pytest.raises(PipelineError, match=r"facts\.analyses\.length: missing"):
        length_figure({}, {**FACTS, "analyses": {}})


@pytest.mark.parametrize("cells,key", [
    ({"big": {}}, r"cells\.big: unknown row"),
    ({"base": {"en-de": {"length": {"target": []}}}}, r"cells\.base\.en-de\.length\.source: missing"),
    ({"base": {"en-de": {"length": [{"bin": "(0, 15]", "bleu": 1.0}]}}}, r"cells\.base\.en-de\.length\[0\]: exp"),
    ({"base": {"en-de": {"length": [{"bin": "(0, 15]", "bleu": 1.0, "n": 0}]}}},
     r"cells\.base\.en-de\.length\[0\]\.bleu: expected None"),
    ({"base": {"en-de": {"length": {"source": [{"bin": "(0, 15]", "bleu": None, "n": 2}]}}}},
     r"cells\.base\.en-de\.length\.source\[0\]\.bleu: expected float"),
    ({"base": length(0), "biarn": {"en-de": {"length": sample_bins(0)[:3]}}}, r"cells\.biarn\.en-de\.length: bins"),
    ({"base": length(0), "base-cont": {"en-de": {"length": [dict(b, n=b["n"] + 1) if b["n"] else b
                                                            for b in sample_bins(0)]}}},
     r"cells\.base-cont\.en-de\.length: sentence counts"),
])
def test_length_bad_bins_name_the_key(cells, key):
    with pytest.raises(PipelineError, match=key):
        length_figure(cells, FACTS)


# ------------------------------------------------------------------ registry and figures
def test_every_hao2019_layout_is_registered_and_builds():
    names = ["hao2019-fig5", "hao2019-length", "hao2019-table1", "hao2019-table2", "hao2019-table3",
             "hao2019-table4", "hao2019-table5"]
    assert sorted(n for n in LAYOUTS if n.startswith("hao2019-")) == names
    assert LAYOUTS["hao2019-table3"].function is hao2019.table3
    assert [n for n in names if LAYOUTS[n].figure] == ["hao2019-fig5", "hao2019-length"]
    table, figure = build("hao2019-table4", {}, FACTS)
    assert figure is None and table.rows[5][2] == "28.21"
    table, figure = build("hao2019-fig5", {}, FACTS)
    assert figure is not None and table.rows[0][1] == "27.31"
    table, figure = build("hao2019-table3", CELLS3, FACTS)
    assert figure is None and table.to_tsv() == EXPECTED_TSV3


@pytest.mark.parametrize("make", [
    lambda: fig5({"base": {"en-de": bleu_cell(5.0)}, "base-cont": {"en-de": bleu_cell(5.5)},
                  "steps-8": {"en-de": bleu_cell(6.5)}}, FACTS)[1],
    lambda: length_figure({"base": length(0.0), "base-cont": length(0.5), "biarn": length(1.0)}, FACTS)[1],
])
def test_figures_are_deterministic_pngs(tmp_path, make):
    first, second = tmp_path / "a" / "f.png", tmp_path / "b" / "f.png"
    save_figure(make(), first)
    save_figure(make(), second)
    data = first.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    assert b"Software" not in data and b"matplotlib" not in data.lower()
    assert hashlib.sha256(data).hexdigest() == hashlib.sha256(second.read_bytes()).hexdigest()
    pixels = imread(first)
    assert pixels.shape[:2] == (400, 600)  # 6 x 4 inches at 100 dpi
    assert np.array_equal(pixels, imread(second))
    assert len(np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0)) > 20  # something was drawn
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["f.png"]  # no temp file left
