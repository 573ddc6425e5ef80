"""Shared report code: the layout registry, the generic Table, transcribed-cell checks, format helpers, and no
paper named in shared code."""
import sys

import pytest
import yaml
from cells import facts, significance
from workspace import ROOT

from pipeline.errors import PipelineError
from pipeline.report import layouts
from pipeline.report.format import (check_cells, check_facts, check_significance, format_params, mark, pair_label,
                                    per_column, signature_text, splits_text, standin_lines, stat_test_text)
from pipeline.report.layouts import LAYOUTS, build, load_papers, register_layout
from pipeline.report.reported import NA, Cell, ReportedTable, Row, pick
from pipeline.report.table import Table, write_table

PAPERS = ("hao2019", "zeng2021")


def layout_names(paper: str) -> list[str]:
    """Every layout a paper's params file names (its tables and figures; `layout:` overrides the name)."""
    spec = yaml.safe_load((ROOT / "params" / f"{paper}.yaml").read_text(encoding="utf-8"))
    return [table.get("layout", name) for group in ("tables", "figures")
            for name, table in (spec.get(group) or {}).items()]


# ------------------------------------------------------------------ registry
@pytest.mark.parametrize("paper", PAPERS)
def test_registry_finds_every_layout_named_in_the_params_files(paper):
    names = layout_names(paper)
    assert len(names) >= 7
    known = load_papers()
    missing = [name for name in names if name not in known]
    assert not missing, f"no layout registered for {missing}"
    figures = set((yaml.safe_load((ROOT / "params" / f"{paper}.yaml").read_text(encoding="utf-8"))
                   .get("figures") or {}))
    assert {name for name in names if known[name].figure} == figures  # figures draw, tables do not


def test_unknown_layout_name_errors_and_lists_the_known_ones():
    with pytest.raises(PipelineError, match=r"unknown layout 'hao2019-table9' \(did you mean 'hao2019-table5'.*\?\); "
                                            r"expected one of .*hao2019-fig5.*zeng2021-table4"):
        build("hao2019-table9", {}, {})


def test_importing_the_papers_registers_every_paper_package():
    load_papers()
    assert {"pipeline.papers.hao2019.layouts", "pipeline.papers.zeng2021.layouts"} <= set(sys.modules)
    assert LAYOUTS["hao2019-table3"].function.__module__ == "pipeline.papers.hao2019.layouts"
    assert LAYOUTS["zeng2021-fig8"].function.__module__ == "pipeline.papers.zeng2021.figures"


def test_register_layout_table_and_figure_contracts(monkeypatch):
    monkeypatch.setattr(layouts, "LAYOUTS", layouts.LAYOUTS.copy())

    @register_layout("toy-table1")
    def table1(cells, facts):
        return Table("T", ["row", "bleu"], [[r, f"{c['x']['bleu']:.1f}"] for r, c in cells.items()],
                     [f"scale: {facts['scale']}"])

    table, figure = build("toy-table1", {"a": {"x": {"bleu": 1.25}}}, {"scale": "tiny"})
    assert figure is None and table.rows == [["a", "1.2"]] and table.footer == ["scale: tiny"]
    table, _ = build("toy-table1", {"a": {"x": {"bleu": 1.25}}}, {"scale": "tiny", "precision": "bfloat16"})
    assert table.footer == ["scale: tiny", "precision (training and decoding): bfloat16"]  # every table's last line
    compute = "torch 2.13.0+cpu, ATen AVX2, MKL_CBWR=COMPATIBLE, oneDNN <= AVX2, 1 thread"
    table, _ = build("toy-table1", {"a": {"x": {"bleu": 1.25}}}, {"scale": "tiny", "precision": "float32",
                                                                 "compute": compute})
    assert table.footer == ["scale: tiny", "precision (training and decoding): float32",
                            f"training computed with: {compute}"]

    @register_layout("toy-fig1", figure=True)
    def fig1(cells, facts):
        return Table("T", ["a"])  # a figure layout that forgot its figure

    with pytest.raises(PipelineError, match=r"layout 'toy-fig1': expected a \(Table, Figure\) pair"):
        build("toy-fig1", {}, {})

    def other(cells, facts):
        return Table("T", ["a"])

    with pytest.raises(PipelineError, match="layout 'toy-table1': registered twice \\(by .*table1 and by .*other\\)"):
        register_layout("toy-table1")(other)
    register_layout("toy-table1")(table1)  # the same function again (a re-import) is fine


# ------------------------------------------------------------------ no paper in shared code
SHARED = sorted(p for d in ("pipeline/report", "pipeline/evaluate") for p in (ROOT / d).glob("*.py"))


@pytest.mark.parametrize("path", SHARED, ids=lambda p: str(p.relative_to(ROOT)))
def test_shared_code_names_no_paper(path):
    text = path.read_text(encoding="utf-8").lower()
    found = [paper for paper in PAPERS if paper in text]
    assert not found, f"{path.relative_to(ROOT)} names {found}; paper-specific code belongs in pipeline/papers/"


def test_shared_code_list_is_not_empty():
    assert {"layouts.py", "reported.py", "format.py", "length.py"} <= {p.name for p in SHARED}


# ------------------------------------------------------------------ generic Table
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


# ------------------------------------------------------------------ transcribed cells
def test_reported_cell_rejects_typos():
    with pytest.raises(PipelineError, match="params"):
        Cell("9.4 M", "24.70")
    with pytest.raises(PipelineError, match="mark"):
        Cell("+9.4M", "24.70", "*")
    with pytest.raises(PipelineError, match="speed"):
        Cell(speed="1.2x")
    with pytest.raises(PipelineError, match="probing SeLen"):
        Cell(probing={"SeLen": "90"})
    assert Cell(probing={"AnyTask": "90.00"}).probing_value("AnyTask") == 90.0  # task names: the paper's check


def test_reported_table_lookups():
    table = ReportedTable("toy", "t1", "d", ("en-de",), (Row("a", "g", "S", "A", {"en-de": Cell("+1.5M", "2.50")}),))
    assert table.row("a").cells["en-de"].params_millions == 1.5 and table.row("a").cells["en-de"].params_relative
    assert NA == Cell(None, None) and NA.bleu_value is None
    with pytest.raises(PipelineError, match="toy t1: no row 'b'; rows are a"):
        table.row("b")
    assert pick({"t1": table}, "toy", "t1") is table
    with pytest.raises(PipelineError, match="toy: no reported 't2'; known: t1"):
        pick({"t1": table}, "toy", "t2")


# ------------------------------------------------------------------ format helpers
FACTS = facts({"en-de": "l10n-en-de", "dialogue": "standin-dialogue"},
              corpus_descriptions={"en-de": "catalogues", "dialogue": "next string of a catalogue"},
              signatures={"bleu": {"en-de": "tok:13a"}}, significance=significance("paired_bootstrap", seed=7))


def test_param_formats_and_labels():
    assert format_params(107_912_345) == "107.9M"
    assert format_params(117_312_345, 107_912_345) == "+9.4M"
    assert format_params(1_031_500, 1_000_000) == "+31.5K"
    assert format_params(1_000_000, 1_000_000) == "+0.0K"  # a control row against its baseline
    assert format_params(None) == ""
    assert pair_label("zh-en") == "Zh-En"


def test_footer_helpers():
    assert per_column({"zh-en": "a", "en-de": "b"}, ("zh-en", "en-de")) == "Zh-En: a; En-De: b"
    assert per_column({"zh-en": "a", "en-de": "a"}, ("zh-en", "en-de"), collapse=True) == "a"
    assert per_column({}, ("en-de",)) == "n/a"
    assert splits_text(FACTS, ("en-de",)) == "En-De: the test split of l10n-en-de"
    assert signature_text(FACTS, "bleu", ("en-de",)) == "tok:13a"
    assert signature_text(FACTS, "bleu", ("dialogue",)) == "no results yet"
    assert stat_test_text(FACTS) == "paired bootstrap resampling, 1000 samples, seed 7"
    assert stat_test_text({"significance": {**FACTS["significance"], "test": "paired_t_test"}}) == "paired t-test"
    assert standin_lines(FACTS, ("en-de",)) == []
    lines = standin_lines(FACTS, ("en-de", "dialogue"), str.capitalize)
    assert lines[0].startswith("STAND-IN: ours are not on the paper's data")
    assert lines[1] == "STAND-IN (Dialogue): standin-dialogue: next string of a catalogue"


@pytest.mark.parametrize("facts,message", [
    ({k: v for k, v in FACTS.items() if k != "scale"}, r"facts\.scale: missing"),
    ({**FACTS, "corpora": ["l10n-en-de"]}, r"facts\.corpora: expected a dict column -> text"),
    ({**FACTS, "signatures": {"bleu": "tok:13a"}}, r"facts\.signatures: expected a dict value name -> column"),
    ({**FACTS, "significance": {"n_samples": 10}}, r"facts\.significance: expected None or a dict with value, test"),
])
def test_bad_facts_name_the_key(facts, message):
    with pytest.raises(PipelineError, match=message):
        check_facts(facts, ("scale", "corpora"))


@pytest.mark.parametrize("cell,message", [
    ({"bleu": 1.0, "p_value": 0.5}, r"cells\.a\.en-de\.delta: missing"),
    ({"bleu": 1.0, "p_value": 1.5, "delta": 0.1, "baseline": {}}, r"cells\.a\.en-de\.p_value: expected a prob"),
    ({"bleu": 1.0, "p_value": 0.5, "delta": "up", "baseline": {}}, r"cells\.a\.en-de\.delta: expected float"),
    ({"bleu": 1.0, "p_value": 0.5, "delta": 0.1, "baseline": 3}, r"cells\.a\.en-de\.baseline: expected a dict"),
    ({"bleu": 1.0, "system": ""}, r"cells\.a\.en-de\.system: expected the system's name"),
])
def test_bad_significance_fields_name_the_key(cell, message):
    with pytest.raises(PipelineError, match=message):
        check_cells({"a": {"en-de": cell}}, ("a",), ("en-de",), lambda c, where, col: check_significance(c, where))


def test_cells_rows_and_columns_are_checked():
    with pytest.raises(PipelineError, match=r"cells\.b: unknown row; expected one of a"):
        check_cells({"b": {}}, ("a",), ("en-de",), lambda *args: None)
    with pytest.raises(PipelineError, match=r"cells\.a\.fr-en: unknown column; expected one of en-de"):
        check_cells({"a": {"fr-en": {}}}, ("a",), ("en-de",), lambda *args: None)


def test_marks_are_direction_aware():
    thresholds = [(0.01, "⇑"), (0.05, "↑")]
    assert mark({"p_value": 0.001, "delta": 0.5}, thresholds) == "⇑"
    assert mark({"p_value": 0.03, "delta": 0.5}, thresholds) == "↑"
    assert mark({"p_value": 0.001, "delta": -0.5}, thresholds) == ""  # significantly worse: no mark
    assert mark({"p_value": 0.2, "delta": 0.5}, thresholds) == ""
    assert mark({"bleu": 1.0}, thresholds) == "" and mark(None, thresholds) == ""
