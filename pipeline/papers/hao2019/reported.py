"""hao2019's numbers as printed (Tables 1-5, Figure 5): REPORTED[table] -> ReportedTable.

The paper's marks: "⇑" p < 0.01, "↑" p < 0.05 against the same-size Transformer.
"""
from __future__ import annotations

from pipeline.errors import PipelineError
from pipeline.report.reported import NA, Cell, ReportedTable, Row, pick

# The SentEval probing tasks of Table 5, in the paper's column order, with their groups.
PROBING_TASKS = ("SeLen", "WC", "TrDep", "ToCo", "BShif", "Tense", "SubN", "ObjN", "SoMo", "CoIn")
PROBING_GROUPS = (("Surface", ("SeLen", "WC")), ("Syntactic", ("TrDep", "ToCo", "BShif")),
                  ("Semantic", ("Tense", "SubN", "ObjN", "SoMo", "CoIn")))


def check_probing(cell: Cell) -> Cell:
    """A reported cell whose probing tasks are all among PROBING_TASKS; returns it."""
    for task in cell.probing or {}:
        if task not in PROBING_TASKS:
            raise PipelineError(f"reported probing task {task!r}: expected one of {', '.join(PROBING_TASKS)}")
    return cell


# hao2019 Table 3: WMT17 Zh-En (newstest2017) and WMT14 En-De (newstest2014), case-sensitive BLEU.
HAO2019_TABLE3 = ReportedTable(
    paper="hao2019",
    table="table3",
    description="Comparison with existing NMT systems on WMT17 Zh-En and WMT14 En-De",
    pairs=("zh-en", "en-de"),
    rows=(
        Row("vaswani2017-base", "existing", "Vaswani et al., 2017", "Transformer-Base",
            {"zh-en": NA, "en-de": Cell("65M", "27.3")}),
        Row("vaswani2017-big", "existing", "Vaswani et al., 2017", "Transformer-Big",
            {"zh-en": NA, "en-de": Cell("213M", "28.4")}),
        Row("hassan2018-big", "existing", "Hassan et al., 2018", "Transformer-Big",
            {"zh-en": Cell(None, "24.2"), "en-de": NA}),
        Row("chen2018-rnmt-san", "existing", "Chen et al., 2018", "RNMT + SAN Encoder",
            {"zh-en": NA, "en-de": Cell(None, "28.84")}),
        Row("base", "this work", "this work", "Transformer-Base",
            {"zh-en": Cell("107.9M", "24.13"), "en-de": Cell("88.0M", "27.31")}),
        Row("base+biarn", "this work", "this work", "+ 1-Layer BiARN",
            {"zh-en": Cell("+9.4M", "24.70", "⇑"), "en-de": Cell("+9.4M", "28.21", "⇑")}),
        Row("big", "this work", "this work", "Transformer-Big",
            {"zh-en": Cell("303.9M", "24.56"), "en-de": Cell("264.1M", "28.58")}),
        Row("big+biarn", "this work", "this work", "+ 1-Layer BiARN",
            {"zh-en": Cell("+69.4M", "25.10", "⇑"), "en-de": Cell("+69.4M", "28.98", "↑")}),
    ),
)

# hao2019 Table 1: recurrence encoder implementations, Transformer-Base on WMT14 En-De (stack fusion, top layer).
HAO2019_TABLE1 = ReportedTable(
    paper="hao2019",
    table="table1",
    description="Evaluation of recurrence encoder implementations (Speed: training steps/second)",
    pairs=("en-de",),
    rows=(
        Row("base", "base", "Base", "n/a", {"en-de": Cell(bleu="27.31", speed="1.28")}),
        Row("birnn-6l", "ours", "Ours", "6-Layer BiRNN", {"en-de": Cell(bleu="27.54", speed="1.10")}),
        Row("biarn-6l", "ours", "Ours", "6-Layer BiARN", {"en-de": Cell(bleu="27.72", speed="1.09")}),
        Row("biarn-3l", "ours", "Ours", "3-Layer BiARN", {"en-de": Cell(bleu="28.10", speed="1.15")}),
        Row("biarn-1l", "ours", "Ours", "1-Layer BiARN", {"en-de": Cell(bleu="28.21", speed="1.24")}),
    ),
)

# hao2019 Table 2: decoder integration strategies (1-layer BiARN), WMT14 En-De.
HAO2019_TABLE2 = ReportedTable(
    paper="hao2019",
    table="table2",
    description="Evaluation of decoder integration strategies",
    pairs=("en-de",),
    rows=(
        Row("base", "base", "Base", "n/a", {"en-de": Cell(bleu="27.31")}, setting="n/a"),
        Row("gated-top", "ours", "Ours", "Gated Sum", {"en-de": Cell(bleu="28.12")}, setting="Top"),
        Row("gated-all", "ours", "Ours", "Gated Sum", {"en-de": Cell(bleu="28.02")}, setting="All"),
        Row("stack-top", "ours", "Ours", "Stack", {"en-de": Cell(bleu="28.21")}, setting="Top"),
        Row("stack-all", "ours", "Ours", "Stack", {"en-de": Cell(bleu="27.93")}, setting="All"),
    ),
)

# hao2019 Table 4: re-implemented related work on top of Transformer-Base, WMT14 En-De.
HAO2019_TABLE4 = ReportedTable(
    paper="hao2019",
    table="table4",
    description="Comparison with re-implemented related work",
    pairs=("en-de",),
    rows=(
        Row("base", "base", "this work", "Transformer-Base", {"en-de": Cell(bleu="27.31")}),
        Row("relpos", "related", "Shaw et al., 2018", "+ RelPos", {"en-de": Cell(bleu="27.64")}),
        Row("disan", "related", "Shen et al., 2018", "+ DiSAN", {"en-de": Cell(bleu="27.58")}),
        Row("rnn-encoder", "related", "Chen et al., 2018", "+ RNN Encoder", {"en-de": Cell(bleu="27.47")}),
        Row("biarn", "ours", "this work", "+ BiARN Encoder (Ours)", {"en-de": Cell(bleu="28.21")}),
    ),
)


def _probing(*accuracies: str) -> Cell:
    """A checked cell of task -> accuracy in PROBING_TASKS order."""
    return check_probing(Cell(probing=dict(zip(PROBING_TASKS, accuracies, strict=True))))


# hao2019 Table 5: probing accuracies (%) of the Table 1 encoders (En-De models, English source side).
HAO2019_TABLE5 = ReportedTable(
    paper="hao2019",
    table="table5",
    description="Classification accuracies on 10 probing tasks of the encoder outputs",
    pairs=("en-de",),
    rows=(
        Row("base", "base", "Base", "n/a", {"en-de": _probing(
            "92.20", "63.00", "44.74", "79.02", "71.24", "89.24", "84.69", "84.53", "52.13", "62.47")}),
        Row("birnn-6l", "ours", "Ours", "6-Layer BiRNN", {"en-de": _probing(
            "89.90", "77.46", "44.47", "79.55", "71.53", "89.17", "85.99", "84.96", "51.75", "61.92")}),
        Row("biarn-6l", "ours", "Ours", "6-Layer BiARN", {"en-de": _probing(
            "89.78", "72.02", "44.45", "79.21", "71.31", "88.38", "85.64", "85.00", "53.27", "62.38")}),
        Row("biarn-3l", "ours", "Ours", "3-Layer BiARN", {"en-de": _probing(
            "89.80", "72.61", "44.28", "79.43", "71.84", "88.93", "85.79", "84.99", "53.30", "62.42")}),
        Row("biarn-1l", "ours", "Ours", "1-Layer BiARN", {"en-de": _probing(
            "90.91", "73.68", "45.15", "79.62", "72.21", "89.00", "85.54", "84.54", "53.44", "62.71")}),
    ),
)

# hao2019 Figure 5: BLEU of a 1-layer BiARN for recurrent steps T (J = source length); base line 27.31.
HAO2019_FIG5 = ReportedTable(
    paper="hao2019",
    table="fig5",
    description="Effect of recurrent steps (values printed on the figure)",
    pairs=("en-de",),
    rows=(
        Row("base", "base", "Base", "Transformer-Base", {"en-de": Cell(bleu="27.31")}),
        Row("steps-1", "ours", "Ours", "T = 1", {"en-de": Cell(bleu="27.50")}),
        Row("steps-4", "ours", "Ours", "T = 4", {"en-de": Cell(bleu="27.99")}),
        Row("steps-8", "ours", "Ours", "T = 8", {"en-de": Cell(bleu="28.21")}),
        Row("steps-16", "ours", "Ours", "T = 16", {"en-de": Cell(bleu="27.92")}),
        Row("steps-J", "ours", "Ours", "T = J", {"en-de": Cell(bleu="27.33")}),
    ),
)

REPORTED: dict[str, ReportedTable] = {"table1": HAO2019_TABLE1, "table2": HAO2019_TABLE2, "table3": HAO2019_TABLE3,
                                       "table4": HAO2019_TABLE4, "table5": HAO2019_TABLE5, "fig5": HAO2019_FIG5}


def reported(table: str) -> ReportedTable:
    """REPORTED[table], or a PipelineError naming the known ones."""
    return pick(REPORTED, "hao2019", table)
