"""zhang2018 Tables 1-4 and Figures 3-4: transcribed numbers, layouts from generic cells and facts (averages, the
paper's and our '*' marks, |Θ| differences, AER in %), deterministic figures, bad cells naming the key."""
import hashlib

import pytest
from cells import bleu_cell, cell, facts, significance

from pipeline.errors import PipelineError
from pipeline.papers.zhang2018 import figures as f
from pipeline.papers.zhang2018.reported import (ZHANG2018_STARS, ZHANG2018_TABLE1, ZHANG2018_TABLE2, ZHANG2018_TABLE3,
                                                ZHANG2018_TABLE4)
from pipeline.report.figures import save_figure
from pipeline.report.layouts import build

CI = "nrefs:4|case:lc|eff:no|tok:none|smooth:none|version:2.6.0"
FACTS = facts({c: "l10n-zh-en" for c in ("mt03", "mt04", "mt05", "mt06")} | {"align": "toy-reorder"},
              test_sets={"mt04": "test-mt04", "mt05": "test-mt05", "mt06": "test-mt06"},
              signatures={"bleu": {c: CI for c in ("mt03", "mt04", "mt05", "mt06", "align")}},
              significance=significance("collins_sign_test"))


def test_transcribed_numbers():
    assert [r.row_id for r in ZHANG2018_TABLE1.rows] == ["rnnsearch", "rnnsearch-star", "vrnmt", "rnmt"]
    assert [ZHANG2018_TABLE1.row("rnmt").cells[c].bleu for c in ZHANG2018_TABLE1.pairs] == [
        "39.24", "42.01", "37.79", "37.81", "39.21"]
    assert [ZHANG2018_TABLE2.row("rnnsearch-star").cells[c].bleu for c in ZHANG2018_TABLE2.pairs] == [
        "21.4", "25.6", "20.1", "22.4"]
    assert [r.cells["test16"].bleu for r in ZHANG2018_TABLE3.rows] == ["23.9", "25.4"]
    assert ZHANG2018_TABLE4 == {"rnnsearch-star": ("22.40", "46.76"), "rnmt": ("24.12", "45.66")}
    # the printed averages are the means of the printed test sets, to the printed precision
    for table, digits in ((ZHANG2018_TABLE1, 2), (ZHANG2018_TABLE2, 1)):
        for row in table.rows:
            values = [row.cells[c].bleu_value for c in table.pairs[:-1]]
            assert round(sum(values) / len(values), digits) == pytest.approx(row.cells["average"].bleu_value,
                                                                               abs=10 ** -digits), row.row_id
    assert ZHANG2018_STARS["table1"]["rnmt"] == {"mt03", "mt04", "mt05", "mt06"}


def test_table1_averages_marks_and_sizes():
    cells = {"rnnsearch": {c: bleu_cell(10.0 + k, params=1_000_000)
                           for k, c in enumerate(("mt03", "mt04", "mt05", "mt06"))},
             "rnnsearch-star": {c: bleu_cell(12.0, params=1_100_000) for c in ("mt03", "mt04", "mt05", "mt06")},
             "rnmt": {"mt03": bleu_cell(13.0, 1_150_000, p_value=0.001, baseline=12.0),
                      "mt04": bleu_cell(12.5, 1_150_000, p_value=0.02, baseline=12.0),
                      "mt05": bleu_cell(11.0, 1_150_000, p_value=0.001, baseline=12.0),
                      "mt06": bleu_cell(12.5, 1_150_000, p_value=0.5, baseline=12.0)}}
    table, figure = build("zhang2018-table1", cells, FACTS)
    assert figure is None
    rows = {row[0]: row for row in table.rows}
    assert table.columns[:3] == ["Systems", "MT03 (paper)", "MT03 (ours)"]
    assert rows["RNMT"][1:] == ["39.24*", "13.00*", "42.01*", "12.50", "37.79*", "11.00", "37.81*", "12.50",
                                "39.21", "12.25"]  # * only at p < 0.01 and better than RNNsearch*
    assert rows["RNNsearch"][-1] == "11.50" and rows["VRNMT"][2] == ""
    text = "\n".join(table.footer)
    assert "|Θ| (ours): RNNsearch 1.0M, RNNsearch* 1.1M, RNMT 1.1M; RNMT - RNNsearch* = +50.0K (paper, En-De: " \
        "+4.1M" in text
    assert "the sign test of Collins et al. (2005), one-tailed" in text
    assert "MT03, MT04, MT05, MT06 are consecutive parts of its one held-out test split" in text
    incomplete = {"rnmt": {"mt03": bleu_cell(13.0)}}
    assert {row[0]: row for row in build("zhang2018-table1", incomplete, FACTS)[0].rows}["RNMT"][-1] == ""


def test_table4_aer_in_percent_and_the_standin_named():
    alignment = {"aer": 0.25, "precision": 0.7, "recall": 0.8125, "sentences": 200, "links": 10, "sure": 8}
    cells = {"rnmt": {"align": cell("s", bleu=50.0, alignment=alignment)}}
    table, _ = build("zhang2018-table4", cells, FACTS)
    assert table.rows[1] == ["RNMT", "24.12", "50.00", "45.66", "25.00", "70.00", "81.25"]
    assert table.rows[0][2] == "" and table.rows[0][3] == "46.76"
    assert any("STAND-IN for Liu and Sun (2015)" in line for line in table.footer)
    with pytest.raises(PipelineError, match=r"cells.rnmt.align.alignment: missing 'recall'"):
        build("zhang2018-table4", {"rnmt": {"align": {"bleu": 1.0, "alignment": {"aer": 0.1, "precision": 0.1,
                                                                                  "sentences": 1}}}}, FACTS)


def _bins(values, counts=(3, 0, 2)):
    labels = ["(0, 4]", "(4, 8]", "> 8"]
    return {"source": [{"bin": b, "bleu": v, "n": n} for b, v, n in zip(labels, values, counts)]}


def png(figure, path):
    save_figure(figure, path)
    return path.read_bytes()


def test_figure3_rows_and_a_deterministic_png(tmp_path):
    cells = {"rnnsearch-star": {"mt03": {"length": _bins([20.0, None, 10.0])}},
             "rnmt": {"mt03": {"length": _bins([21.5, None, 14.0])}}}
    table, figure = build("zhang2018-fig3", cells, FACTS)
    assert table.rows == [["(0, 4]", "3", "20.00", "21.50"], ["(4, 8]", "0", "n/a", "n/a"],
                          ["> 8", "2", "10.00", "14.00"]]
    first = png(figure, tmp_path / "a.png")
    assert first[:8] == b"\x89PNG\r\n\x1a\n"
    assert hashlib.sha256(first).digest() == hashlib.sha256(png(build("zhang2018-fig3", cells, FACTS)[1],
                                                                tmp_path / "b.png")).digest()
    cells["rnmt"]["mt03"]["length"] = _bins([21.5, None, 14.0], counts=(3, 0, 3))
    with pytest.raises(PipelineError, match="bins or sentence counts differ"):
        build("zhang2018-fig3", cells, FACTS)


def test_figure4_lists_links_against_gold(tmp_path):
    shown = {"index": 1, "source": ["a", "b"], "target": ["x", "y", "z"],
             "attention": [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]], "sure": [[0, 0], [1, 1]], "possible": [[0, 0], [1, 1],
                                                                                                    [1, 2]],
             "predicted": [[0, 0], [0, 2], [1, 1]]}
    cells = {row: {"align": {"alignment": {"shown": [shown]}}} for row in ("rnnsearch-star", "rnmt")}
    table, figure = build("zhang2018-fig4", cells, FACTS)
    assert table.rows[0] == ["RNNsearch*", "1", "a b", "x y z", "0-0 0-2 1-1", "2/3"]
    assert png(figure, tmp_path / "f.png")[:8] == b"\x89PNG\r\n\x1a\n"
    shown["attention"] = [[0.9, 0.1]]
    with pytest.raises(PipelineError, match=r"shown\[0\].attention: expected 3 rows of 2 weights"):
        build("zhang2018-fig4", cells, FACTS)
    with pytest.raises(PipelineError, match="cells.rnmt.align.alignment.shown"):
        f.fig4({"rnmt": {"align": {"alignment": {"shown": []}}}}, FACTS)
