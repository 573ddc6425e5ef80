"""hao2019 Tables 1, 2, 4, 5, Figure 5 and BLEU by length: transcribed numbers, exact layouts, figures, checks."""
import hashlib

import numpy as np
import pytest
from matplotlib.image import imread

from pipeline.errors import PipelineError
from pipeline.report import hao2019
from pipeline.report.figures import save_figure
from pipeline.report.hao2019 import LAYOUTS, build, fig5, length_figure, table1, table2, table3, table4, table5
from pipeline.report.reported import PROBING_TASKS, Cell, reported

FOOTER = {
    "scale": "tiny",
    "corpora": {"zh-en": "toy-zh", "en-de": "toy-de"},
    "test_sets": {"en-de": "toy-de test"},
    "bleu_signature": {"en-de": "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"},
    "significance": {"n_samples": 1000, "seed": 12345},
    "device": "cpu (1 thread)",
    "probing": "logistic regression on mean-pooled encoder states, 2 seeds",
}
COMMON = [
    "# scale: tiny",
    "# corpora: En-De: toy-de",
    "# test sets: En-De: toy-de test",
    "# BLEU (ours): nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0",
    "# significance (ours): paired bootstrap resampling against our Transformer-Base, 1000 samples, seed 12345; "
    "⇑ p < 0.01, ↑ p < 0.05 (shown only where a p-value is given; the paper marks none in this table)",
]


def paper_line(table: str) -> str:
    """The first footer line of a paper-vs-ours table."""
    return f"# paper: Hao et al. (2019), {table}; (paper) columns as printed there, (ours) columns from this run"


def tsv(*lines) -> str:
    """Lines (lists are tab-joined) as TSV text."""
    return "\n".join("\t".join(line) if isinstance(line, list) else line for line in lines) + "\n"


def test_reported_numbers_equal_the_paper():
    t1, t2, t4 = reported("hao2019", "table1"), reported("hao2019", "table2"), reported("hao2019", "table4")
    t5, f5 = reported("hao2019", "table5"), reported("hao2019", "fig5")
    assert [(r.row_id, r.cells["en-de"].speed, r.cells["en-de"].bleu) for r in t1.rows] == [
        ("base", "1.28", "27.31"), ("birnn-6l", "1.10", "27.54"), ("biarn-6l", "1.09", "27.72"),
        ("biarn-3l", "1.15", "28.10"), ("biarn-1l", "1.24", "28.21")]
    assert t1.row("biarn-1l").cells["en-de"].speed_value == 1.24
    assert [(r.row_id, r.architecture, r.setting, r.cells["en-de"].bleu_value) for r in t2.rows] == [
        ("base", "n/a", "n/a", 27.31), ("gated-top", "Gated Sum", "Top", 28.12),
        ("gated-all", "Gated Sum", "All", 28.02), ("stack-top", "Stack", "Top", 28.21),
        ("stack-all", "Stack", "All", 27.93)]
    assert [(r.row_id, r.cells["en-de"].bleu) for r in t4.rows] == [
        ("base", "27.31"), ("relpos", "27.64"), ("disan", "27.58"), ("rnn-encoder", "27.47"), ("biarn", "28.21")]
    assert [(r.row_id, r.cells["en-de"].bleu) for r in f5.rows] == [
        ("base", "27.31"), ("steps-1", "27.50"), ("steps-4", "27.99"), ("steps-8", "28.21"),
        ("steps-16", "27.92"), ("steps-J", "27.33")]
    assert [r.row_id for r in t5.rows] == ["base", "birnn-6l", "biarn-6l", "biarn-3l", "biarn-1l"]
    assert [t5.row("base").cells["en-de"].probing[t] for t in PROBING_TASKS] == [
        "92.20", "63.00", "44.74", "79.02", "71.24", "89.24", "84.69", "84.53", "52.13", "62.47"]
    assert [t5.row("biarn-1l").cells["en-de"].probing_value(t) for t in PROBING_TASKS] == [
        90.91, 73.68, 45.15, 79.62, 72.21, 89.00, 85.54, 84.54, 53.44, 62.71]
    assert t5.row("birnn-6l").cells["en-de"].probing["WC"] == "77.46"
    assert t5.row("biarn-6l").cells["en-de"].probing["SoMo"] == "53.27"
    assert t5.row("biarn-3l").cells["en-de"].probing["BShif"] == "71.84"
    # the 1-layer BiARN with stack-top and T = 8 is the same model in Tables 1, 2, 4 and Figure 5
    assert {t.row(r).cells["en-de"].bleu for t, r in ((t1, "biarn-1l"), (t2, "stack-top"), (t4, "biarn"),
                                                      (f5, "steps-8"))} == {"28.21"}


def test_reported_cell_rejects_typos_in_new_fields():
    with pytest.raises(PipelineError, match="speed"):
        Cell(speed="1.2x")
    with pytest.raises(PipelineError, match="probing task 'Length'"):
        Cell(probing={"Length": "90.00"})
    with pytest.raises(PipelineError, match="probing SeLen"):
        Cell(probing={"SeLen": "90"})


def test_table1_exact_tsv():
    ours = {"base": {"en-de": {"bleu": 10.0, "steps_per_s": 3.456, "params": 1000, "p_value": None}},
            "biarn-1l": {"en-de": {"bleu": 11.237, "p_value": 0.004, "steps_per_s": 2.0}},
            "birnn-6l": {"en-de": {"bleu": 9.5}}}
    assert table1(ours, FOOTER).to_tsv() == tsv(
        ["Model", "Rec. Encoder", "Speed (paper)", "Speed (ours)", "BLEU (paper)", "BLEU (ours)"],
        ["Base", "n/a", "1.28", "3.46", "27.31", "10.00"],
        ["Ours", "6-Layer BiRNN", "1.10", "", "27.54", "9.50"],
        ["Ours", "6-Layer BiARN", "1.09", "", "27.72", ""],
        ["Ours", "3-Layer BiARN", "1.15", "", "28.10", ""],
        ["Ours", "1-Layer BiARN", "1.24", "2.00", "28.21", "11.24⇑"],
        paper_line("Table 1"), *COMMON,
        "# speed: training steps/second measured by our trainer on cpu (1 thread) (the paper's on its own GPUs)",
        "# recurrence encoder output fed to the top decoder layer by stack fusion, as in the paper")


def test_table2_exact_tsv():
    ours = {"stack-top": {"en-de": {"bleu": 3.0, "p_value": 0.2}}, "gated-all": {"en-de": {"bleu": 2.555}}}
    assert table2(ours, FOOTER).to_tsv() == tsv(
        ["Model", "Integration", "to Dec.", "BLEU (paper)", "BLEU (ours)"],
        ["Base", "n/a", "n/a", "27.31", ""],
        ["Ours", "Gated Sum", "Top", "28.12", ""],
        ["Ours", "Gated Sum", "All", "28.02", "2.56"],
        ["Ours", "Stack", "Top", "28.21", "3.00"],
        ["Ours", "Stack", "All", "27.93", ""],
        paper_line("Table 2"), *COMMON, "# recurrence encoder: 1-Layer BiARN")


def test_table4_exact_tsv():
    ours = {"biarn": {"en-de": {"bleu": 3.0, "p_value": 0.04}}, "relpos": {"en-de": {"bleu": 2.0}}}
    assert table4(ours, FOOTER).to_tsv() == tsv(
        ["Model", "Reference", "BLEU (paper)", "BLEU (ours)"],
        ["Transformer-Base", "this work", "27.31", ""],
        ["+ RelPos", "Shaw et al., 2018", "27.64", "2.00"],
        ["+ DiSAN", "Shen et al., 2018", "27.58", ""],
        ["+ RNN Encoder", "Chen et al., 2018", "27.47", ""],
        ["+ BiARN Encoder (Ours)", "this work", "28.21", "3.00↑"],
        paper_line("Table 4"), *COMMON,
        "# RelPos: relative positions (Shaw et al., 2018), clipping k = 16; DiSAN: directional masks "
        "(Shen et al., 2018); RNN Encoder: extra 6-layer RNN encoder, multi-column (Chen et al., 2018)")


def test_table5_exact_tsv_and_missing_tasks():
    ours = {"base": {"en-de": {"bleu": None, "probing": {"SeLen": 50.0, "WC": 1.5}}},
            "biarn-1l": {"en-de": {"bleu": 11.0, "probing": {t: 60.0 + i for i, t in enumerate(PROBING_TASKS)}}},
            "biarn-3l": {"en-de": {"probing": {}}}}
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
    assert table5(ours, FOOTER).to_tsv() == tsv(
        header, *rows, paper_line("Table 5"), "# scale: tiny", "# corpora: En-De: toy-de",
        "# probing: logistic regression on mean-pooled encoder states, 2 seeds",
        "# task groups: Surface: SeLen, WC; Syntactic: TrDep, ToCo, BShif; Semantic: Tense, SubN, ObjN, SoMo, CoIn",
        "# needs parsed data: the task's labelled sentences come from a parser, which this scale cannot build")


def test_table5_needs_only_scale_corpora_probing_in_footer():
    footer = {"scale": "tiny", "corpora": "toy-de", "probing": "p"}
    assert table5({}, footer).footer[1:3] == ["scale: tiny", "corpora: toy-de"]
    with pytest.raises(PipelineError, match="footer.probing: missing"):
        table5({}, {"scale": "tiny", "corpora": "toy-de"})


def test_fig5_exact_tsv_and_figure(tmp_path):
    ours = {"base": {"en-de": {"bleu": 5.0}}, "steps-4": {"en-de": {"bleu": 6.0, "p_value": 0.001}},
            "steps-J": {"en-de": {"bleu": 5.5}}}
    table, figure = fig5(ours, FOOTER)
    assert table.to_tsv() == tsv(
        ["Recurrent steps", "BLEU (paper)", "BLEU (ours)"],
        ["Transformer-Base", "27.31", "5.00"], ["T = 1", "27.50", ""], ["T = 4", "27.99", "6.00⇑"],
        ["T = 8", "28.21", ""], ["T = 16", "27.92", ""], ["T = J", "27.33", "5.50"],
        paper_line("Figure 5 (values printed on the figure)"), *COMMON,
        "# recurrence encoder: 1-Layer BiARN, stack fusion into the top decoder layer; "
        "T = J: as many steps as source tokens")
    axes = figure.axes
    assert len(axes) == 2  # ours far below the paper: own right-hand axis
    paper_line2d = axes[0].lines[0]
    assert list(paper_line2d.get_ydata()) == [27.50, 27.99, 28.21, 27.92, 27.33]
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["1", "4", "8", "16", "J"]
    dashed = [line for ax in axes for line in ax.lines if line.get_linestyle() == "--"]
    assert sorted(line.get_ydata()[0] for line in dashed) == [5.0, 27.31]
    close = {row: {"en-de": {"bleu": 27.0}} for row in ("base", "steps-8")}
    assert len(fig5(close, FOOTER)[1].axes) == 1  # paper-scale numbers share the axis


def sample_bins(shift: float) -> list[dict]:
    """bleu_by_length-shaped output with an empty second bin."""
    return [{"bin": "(0, 15]", "bleu": 20.0 + shift, "n": 3}, {"bin": "(15, 30]", "bleu": None, "n": 0},
            {"bin": "(30, 45]", "bleu": 10.0, "n": 1}, {"bin": "> 45", "bleu": 12.5 - shift, "n": 2}]


LENGTH_FOOTER = [
    "# paper: Hao et al. (2019), section 5.4, BLEU by source length; the paper prints no numbers for it, "
    "so all columns are ours",
    "# scale: tiny", "# corpora: En-De: toy-de", "# test sets: En-De: toy-de test",
    "# BLEU (ours): nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0",
    "# Ours: Transformer-Base + 1-Layer BiARN (stack fusion, top decoder layer)",
    "# bins: source length in whitespace tokens of the tokenised source; n/a: no sentences in the bin",
]


def test_length_exact_tsv_and_figure():
    table, figure = length_figure({"base": sample_bins(0.0), "biarn": sample_bins(2.25)}, FOOTER)
    assert table.to_tsv() == tsv(
        ["Source length", "Sentences", "BLEU Base", "BLEU Ours", "Delta BLEU"],
        ["(0, 15]", "3", "20.00", "22.25", "+2.25"], ["(15, 30]", "0", "n/a", "n/a", ""],
        ["(30, 45]", "1", "10.00", "10.00", "+0.00"], ["> 45", "2", "12.50", "10.25", "-2.25"], *LENGTH_FOOTER)
    ax = figure.axes[0]
    assert sorted(round(p.get_height(), 2) for p in ax.patches) == [10.0, 10.0, 10.25, 12.5, 20.0, 22.25]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["Base", "Ours"]


def test_length_missing_row_and_no_rows():
    rows = length_figure({"biarn": sample_bins(0.0)}, FOOTER)[0].rows
    assert rows[0] == ["(0, 15]", "3", "", "20.00", ""]
    rows = length_figure({}, FOOTER)[0].rows
    assert rows == [[b, "", "", "", ""] for b in ("(0, 15]", "(15, 30]", "(30, 45]", "> 45")]


@pytest.mark.parametrize("bins,key", [
    ({"big": []}, r"ours_bins\.big: unknown row"),
    ({"base": [{"bin": "(0, 15]", "bleu": 1.0}]}, r"ours_bins\.base\[0\]: expected a dict"),
    ({"base": [{"bin": "(0, 15]", "bleu": 1.0, "n": 0}]}, r"ours_bins\.base\[0\]\.bleu: expected None"),
    ({"base": [{"bin": "(0, 15]", "bleu": None, "n": 2}]}, r"ours_bins\.base\[0\]\.bleu: expected float"),
    ({"base": sample_bins(0), "biarn": sample_bins(0)[:3]}, r"ours_bins\.biarn: bins"),
    ({"base": sample_bins(0), "biarn": [dict(b, n=b["n"] + 1) if b["n"] else b for b in sample_bins(0)]},
     r"ours_bins\.biarn: sentence counts"),
])
def test_length_bad_bins_name_the_key(bins, key):
    with pytest.raises(PipelineError, match=key):
        length_figure(bins, FOOTER)


@pytest.mark.parametrize("layout,ours,key", [
    (table1, {"big": {}}, r"ours\.big: unknown row"),
    (table1, {"base": {"zh-en": {"bleu": 1.0}}}, r"ours\.base\.zh-en: unknown pair"),
    (table1, {"base": {"en-de": {"bleu": 1.0, "steps_per_s": -1.0}}}, r"ours\.base\.en-de\.steps_per_s"),
    (table1, {"base": {"en-de": {"bleu": 1.0, "speed": 1.0}}}, r"ours\.base\.en-de: expected a dict with 'bleu'"),
    (table2, {"stack-top": {"en-de": {"params": 5}}}, r"ours\.stack-top\.en-de: expected a dict with 'bleu'"),
    (table2, {"biarn-1l": {}}, r"ours\.biarn-1l: unknown row"),
    (table4, {"biarn": {"en-de": {"bleu": "28"}}}, r"ours\.biarn\.en-de\.bleu"),
    (table5, {"base": {"en-de": {"bleu": 1.0}}}, r"ours\.base\.en-de: expected a dict with 'probing'"),
    (table5, {"base": {"en-de": {"probing": {"Length": 1.0}}}}, r"ours\.base\.en-de\.probing\.Length: unknown"),
    (table5, {"base": {"en-de": {"probing": {"WC": 0.5, "SeLen": 101.0}}}}, r"ours\.base\.en-de\.probing\.SeLen"),
    (fig5, {"steps-32": {}}, r"ours\.steps-32: unknown row"),
    (fig5, {"steps-J": {"en-de": {"bleu": 1.0, "p_value": 2.0}}}, r"ours\.steps-J\.en-de\.p_value"),
])
def test_bad_ours_names_the_key(layout, ours, key):
    with pytest.raises(PipelineError, match=key):
        layout(ours, FOOTER)


def test_footer_checks():
    with pytest.raises(PipelineError, match="footer.device: missing"):
        table1({}, {k: v for k, v in FOOTER.items() if k != "device"})
    with pytest.raises(PipelineError, match="footer.gpu: unknown key"):
        table2({}, {**FOOTER, "gpu": "x"})
    with pytest.raises(PipelineError, match="footer.corpora"):
        table4({}, {**FOOTER, "corpora": {"zh-en": "only zh"}})
    with pytest.raises(PipelineError, match="footer.significance: missing"):
        fig5({}, {k: v for k, v in FOOTER.items() if k != "significance"})
    # the shared footer (with device and probing) also serves Table 3
    assert table3({}, FOOTER).footer[2] == "corpora: Zh-En: toy-zh; En-De: toy-de"


def test_layout_registry_and_build():
    assert sorted(LAYOUTS) == ["hao2019-fig5", "hao2019-length", "hao2019-table1", "hao2019-table2",
                               "hao2019-table3", "hao2019-table4", "hao2019-table5"]
    assert LAYOUTS["hao2019-table3"] is hao2019.table3
    table, figure = build("hao2019-table4", {}, FOOTER)
    assert figure is None and table.rows[4][2] == "28.21"
    table, figure = build("hao2019-fig5", {}, FOOTER)
    assert figure is not None and table.rows[0][1] == "27.31"
    with pytest.raises(PipelineError, match="hao2019-table9"):
        build("hao2019-table9", {}, FOOTER)


@pytest.mark.parametrize("make", [
    lambda: fig5({"base": {"en-de": {"bleu": 5.0}}, "steps-8": {"en-de": {"bleu": 6.5}}}, FOOTER)[1],
    lambda: length_figure({"base": sample_bins(0.0), "biarn": sample_bins(1.0)}, FOOTER)[1],
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
