"""hao2019 Table 3: transcribed paper numbers, layout, marks and the generic Table renderings."""
import pytest

from pipeline.errors import PipelineError
from pipeline.report.hao2019 import format_params, significance_mark, table3
from pipeline.report.reported import HAO2019_TABLE3, REPORTED, Cell, reported
from pipeline.report.table import Table, write_table

OURS = {
    "base": {
        "zh-en": {"bleu": 21.234, "params": 107_912_345, "p_value": None, "baseline_params": None},
        "en-de": {"bleu": 26.5, "params": 88_012_000},
    },
    "base+biarn": {
        "zh-en": {"bleu": 22.01, "params": 117_312_345, "p_value": 0.001, "baseline_params": 107_912_345},
        "en-de": {"bleu": 26.9, "params": 97_412_000, "p_value": 0.03, "baseline_params": 88_012_000},
    },
    "big+biarn": {
        "en-de": {"bleu": 27.456, "params": 333_500_000, "p_value": 0.2, "baseline_params": 264_100_000},
    },
}
FOOTER = {
    "scale": "tiny",
    "corpora": {"zh-en": "toy-zh", "en-de": "toy-de"},
    "test_sets": {"zh-en": "toy-zh test", "en-de": "toy-de test"},
    "bleu_signature": "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0",
    "significance": {"n_samples": 1000, "seed": 12345},
}

EXPECTED_TSV = "\n".join([
    "\t".join(["System", "Architecture",
               "Zh-En #Para. (paper)", "Zh-En #Para. (ours)", "Zh-En BLEU (paper)", "Zh-En BLEU (ours)",
               "En-De #Para. (paper)", "En-De #Para. (ours)", "En-De BLEU (paper)", "En-De BLEU (ours)"]),
    "\t".join(["Vaswani et al., 2017", "Transformer-Base", "n/a", "", "n/a", "", "65M", "", "27.3", ""]),
    "\t".join(["Vaswani et al., 2017", "Transformer-Big", "n/a", "", "n/a", "", "213M", "", "28.4", ""]),
    "\t".join(["Hassan et al., 2018", "Transformer-Big", "n/a", "", "24.2", "", "n/a", "", "n/a", ""]),
    "\t".join(["Chen et al., 2018", "RNMT + SAN Encoder", "n/a", "", "n/a", "", "n/a", "", "28.84", ""]),
    "\t".join(["this work", "Transformer-Base", "107.9M", "107.9M", "24.13", "21.23",
               "88.0M", "88.0M", "27.31", "26.50"]),
    "\t".join(["this work", "+ 1-Layer BiARN", "+9.4M", "+9.4M", "24.70⇑", "22.01⇑",
               "+9.4M", "+9.4M", "28.21⇑", "26.90↑"]),
    "\t".join(["this work", "Transformer-Big", "303.9M", "", "24.56", "", "264.1M", "", "28.58", ""]),
    "\t".join(["this work", "+ 1-Layer BiARN", "+69.4M", "", "25.10⇑", "", "+69.4M", "+69.4M", "28.98↑", "27.46"]),
    "# paper: Hao et al. (2019), Table 3; (paper) columns as printed there, (ours) columns from this run",
    "# scale: tiny",
    "# corpora: Zh-En: toy-zh; En-De: toy-de",
    "# test sets: Zh-En: toy-zh test; En-De: toy-de test",
    "# BLEU (ours): nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0",
    "# significance (ours): paired bootstrap resampling against the same-size Transformer baseline, "
    "1000 samples, seed 12345; ⇑ p < 0.01, ↑ p < 0.05",
    "# #Para.: proposed rows show the increase over their baseline, as the paper prints them",
]) + "\n"


def test_table3_exact_tsv():
    assert table3(OURS, FOOTER).to_tsv() == EXPECTED_TSV


def test_table3_without_our_results_keeps_paper_columns():
    rows = table3({}, FOOTER).rows
    assert len(rows) == 8
    assert rows[5] == ["this work", "+ 1-Layer BiARN", "+9.4M", "", "24.70⇑", "", "+9.4M", "", "28.21⇑", ""]


def test_reported_numbers_equal_the_paper():
    t = reported("hao2019", "table3")
    assert t is REPORTED["hao2019"]["table3"] is HAO2019_TABLE3
    assert [r.row_id for r in t.rows] == ["vaswani2017-base", "vaswani2017-big", "hassan2018-big",
                                          "chen2018-rnmt-san", "base", "base+biarn", "big", "big+biarn"]
    assert t.row("vaswani2017-base").cells["en-de"] == Cell("65M", "27.3")
    assert t.row("vaswani2017-big").cells["en-de"].params_millions == 213.0
    assert t.row("hassan2018-big").cells["zh-en"].bleu_value == 24.2
    assert t.row("chen2018-rnmt-san").cells["en-de"].bleu_value == 28.84
    assert t.row("base").cells["zh-en"].params_millions == 107.9
    assert t.row("base").cells["en-de"].bleu == "27.31"
    assert t.row("base+biarn").cells["zh-en"] == Cell("+9.4M", "24.70", "⇑")
    assert t.row("base+biarn").cells["en-de"].bleu_value == 28.21
    assert t.row("big").cells["zh-en"] == Cell("303.9M", "24.56")
    assert t.row("big").cells["en-de"] == Cell("264.1M", "28.58")
    assert t.row("big+biarn").cells["zh-en"] == Cell("+69.4M", "25.10", "⇑")
    assert t.row("big+biarn").cells["en-de"] == Cell("+69.4M", "28.98", "↑")
    assert t.row("big+biarn").cells["en-de"].params_relative
    assert t.row("vaswani2017-base").cells["zh-en"] == Cell(None, None)


def test_marks_and_param_formats():
    assert [significance_mark(p) for p in (0.001, 0.0099, 0.01, 0.03, 0.0499, 0.05, 0.2, None)] == \
        ["⇑", "⇑", "↑", "↑", "↑", "", "", ""]
    assert format_params(107_912_345) == "107.9M"
    assert format_params(117_312_345, 107_912_345) == "+9.4M"
    assert format_params(1_031_500, 1_000_000) == "+31.5K"
    assert format_params(None) == ""


@pytest.mark.parametrize("ours,key", [
    ({"huge": {}}, "ours.huge"),
    ({"base": {"fr-en": {"bleu": 1.0}}}, "ours.base.fr-en"),
    ({"base": {"zh-en": {"params": 5}}}, "ours.base.zh-en"),
    ({"base": {"zh-en": {"bleu": "high"}}}, "ours.base.zh-en.bleu"),
    ({"base": {"zh-en": {"bleu": 1.0, "p_value": 1.5}}}, "ours.base.zh-en.p_value"),
])
def test_bad_ours_names_the_key(ours, key):
    with pytest.raises(PipelineError, match=key.replace("+", r"\+").replace(".", r"\.")):
        table3(ours, FOOTER)


def test_footer_per_pair_values():
    footer = {**FOOTER, "corpora": {"en-de": "toy-de"},
              "bleu_signature": {"zh-en": "tok:13a", "en-de": "tok:13a"}}
    lines = table3({}, footer).footer
    assert "corpora: En-De: toy-de" in lines
    assert "BLEU (ours): tok:13a" in lines  # identical signatures shown once
    footer["bleu_signature"] = {"zh-en": "tok:zh", "en-de": "tok:13a"}
    assert "BLEU (ours): Zh-En: tok:zh; En-De: tok:13a" in table3({}, footer).footer
    with pytest.raises(PipelineError, match="footer.corpora"):
        table3({}, {**FOOTER, "corpora": {"fr-en": "x"}})


def test_missing_footer_key_is_named():
    footer = {k: v for k, v in FOOTER.items() if k != "test_sets"}
    with pytest.raises(PipelineError, match="footer.test_sets"):
        table3(OURS, footer)


def test_reported_cell_rejects_typos():
    with pytest.raises(PipelineError, match="params"):
        Cell("9.4 M", "24.70")
    with pytest.raises(PipelineError, match="mark"):
        Cell("+9.4M", "24.70", "*")


def test_generic_table_tsv_markdown_and_write(tmp_path):
    table = Table("T", ["a", "b|c"], [["1", "x|y"], ["2", ""]], ["sig: p|q", "seed 1"])
    assert table.to_tsv() == "a\tb|c\n1\tx|y\n2\t\n# sig: p|q\n# seed 1\n"
    assert table.to_markdown() == ("**T**\n\n| a | b\\|c |\n|---|---|\n| 1 | x\\|y |\n| 2 |  |\n\n"
                                   "sig: p|q\\\nseed 1\n")
    write_table(table, tmp_path / "t.tsv", tmp_path / "t.md")
    assert (tmp_path / "t.tsv").read_text(encoding="utf-8") == table.to_tsv()
    assert (tmp_path / "t.md").read_text(encoding="utf-8") == table.to_markdown()


def test_generic_table_rejects_ragged_rows_and_tabs():
    with pytest.raises(PipelineError, match="row 1: 1 cells; expected 2"):
        Table("T", ["a", "b"], [["1"]])
    with pytest.raises(PipelineError, match="row 1 cell 2"):
        Table("T", ["a", "b"], [["1", "x\ty"]])


def test_registry_holds_every_hao2019_table_and_new_cell_fields_default_to_none():
    assert list(REPORTED["hao2019"]) == ["table1", "table2", "table3", "table4", "table5", "fig5"]
    cell = HAO2019_TABLE3.row("base").cells["en-de"]
    assert (cell.speed, cell.probing, cell.speed_value, cell.probing_value("WC")) == (None, None, None, None)
    assert HAO2019_TABLE3.row("base").setting == ""
    with pytest.raises(PipelineError, match="no reported 'table6'; known: table1, table2, table3"):
        reported("hao2019", "table6")
