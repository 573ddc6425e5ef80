"""shu2016 Tables 1-2 and Figure 2: transcribed numbers, layouts from generic cells and facts (RIBES x 100, the
reported-only Online A row and HUMAN column, the T2S stand-in labelled, the curves' interval and findings), a
deterministic figure, bad cells naming the key."""
import hashlib

import pytest
from cells import cell, facts

from pipeline.errors import PipelineError
from pipeline.papers.shu2016.figures import interval
from pipeline.papers.shu2016.reported import SHU2016_TABLE1, SHU2016_TABLE2
from pipeline.report.figures import save_figure
from pipeline.report.layouts import build

SEG = "|seg:janome 0.5.0"
FACTS = facts({"test": "l10n-en-ja", "valid": "l10n-en-ja"}, corpus_descriptions={"test": "en-ja catalogue"},
              signatures={"ribes": {"test": "ribes|alpha:0.25|beta:0.1|case:lc|nrefs:1|impl:RIBES.py-1.03.1" + SEG},
                          "bleu": {"test": "multi-bleu|nrefs:1|case:mixed|eff:no|tok:none|smooth:none" + SEG}},
              significance=None, device="cpu x 1 process(es)", precision="float32",
              combinations={"rr": {"method": "rerank", "settings": {"n": 8, "length": "normalize"}},
                            "mbr": {"method": "gmbr", "settings": {"n": 8, "tune_sentences": 200,
                                                                   "metric": "multi-bleu"}},
                            "sw": {"method": "length", "settings": {"threshold": 12}}})


def scores(ribes, bleu, system="sys"):
    return {"test": cell(system, ribes=ribes, bleu=bleu)}


def test_transcribed_numbers():
    assert [(r.system, r.cells["ribes"].bleu, r.cells["bleu"].bleu) for r in SHU2016_TABLE1.rows] == [
        ("Baseline model", "79.49", "29.32"), ("Enlarged decoder RNN", "79.60", "30.24"),
        ("Stacked decoder RNN", "79.25", "29.07"), ("Residual decoder RNN", "79.88", "30.75")]
    assert [r.row_id for r in SHU2016_TABLE2.rows] == ["online-a", "t2s", "t2s-rerank", "ensemble", "gmbr",
                                                       "heuristic"]
    assert [[r.cells[c].bleu for c in ("ribes", "bleu", "human")] for r in SHU2016_TABLE2.rows] == [
        ["71.52", "19.81", "49.750"], ["77.87", "32.32", None], ["78.29", "33.57", None],
        ["81.72", "33.38", "30.500"], ["80.90", "34.25", None], ["81.44", "34.77", "29.750"]]


def test_table1_ribes_in_percent_and_the_footer():
    cells = {"baseline": scores(0.61234, 20.0), "stacked": scores(0.6, 19.555), "residual": scores(1, 21)}
    table, figure = build("shu2016-table1", cells, FACTS)
    assert figure is None
    assert table.columns == ["Model", "RIBES(%) (paper)", "RIBES(%) (ours)", "BLEU(%) (paper)", "BLEU(%) (ours)"]
    assert table.rows == [["Baseline model", "79.49", "61.23", "29.32", "20.00"],
                          ["Enlarged decoder RNN", "79.60", "", "30.24", ""],
                          ["Stacked decoder RNN", "79.25", "60.00", "29.07", "19.55"],  # 19.555 in binary: 19.55
                          ["Residual decoder RNN", "79.88", "100.00", "30.75", "21.00"]]
    text = "\n".join(table.footer)
    assert "Table 1 (4.2)" in text and "impl:RIBES.py-1.03.1|seg:janome 0.5.0" in text
    assert "WAT segments them with KyTea" in text and "(64 units; the enlarged decoder 90)" in text
    assert table.footer[-1] == "precision (training and decoding): float32"


@pytest.mark.parametrize("cell, match", [
    ({"test": {"ribes": 79.5, "bleu": 20.0}}, r"cells.residual.test.ribes: expected a fraction in \[0, 1\]"),
    ({"test": {"ribes": 0.7, "bleu": 120.0}}, r"cells.residual.test.bleu: expected a score in 0..100"),
    ({"test": {"ribes": 0.7}}, r"cells.residual.test.bleu: missing"),
    ({"test": {"ribes": "0.7", "bleu": 1.0}}, r"cells.residual.test.ribes: expected float"),
    ({"test": {"ribes": 0.7, "bleu": 1.0, "chrf": 3}}, r"cells.residual.test.chrf: unknown key"),
    ({"dev": {"ribes": 0.7, "bleu": 1.0}}, r"cells.residual.dev: unknown column")])
def test_table1_bad_cells_named(cell, match):
    with pytest.raises(PipelineError, match=match):
        build("shu2016-table1", {"residual": cell}, FACTS)
    with pytest.raises(PipelineError, match="cells.online-a: unknown row"):
        build("shu2016-table2", {"online-a": scores(0.5, 1.0)}, FACTS)


def test_table2_reported_rows_standin_and_combinations():
    cells = {"t2s": scores(0.7, 15.0, "shu-standin"), "t2s-rerank": scores(0.71, 16.0, "rr"),
             "ensemble": scores(0.75, 18.25), "gmbr": scores(0.74, 18.5, "mbr"), "heuristic": scores(0.7525, 18.75, "sw")}
    table, _ = build("shu2016-table2", cells, FACTS)
    assert table.columns[-1] == "HUMAN (paper)" and len(table.columns) == 6
    assert table.rows == [
        ["Online A", "71.52", "", "19.81", "", "49.750"],
        ["T2S system 1-best (tiny: stand-in, an RNNsearch the pipeline trains)", "77.87", "70.00", "32.32", "15.00",
         "-"],
        ["T2S neural reranking", "78.29", "71.00", "33.57", "16.00", "-"],
        ["Ensemble of 2 NMT models with residual decoder RNNs (submission 1)", "81.72", "75.00", "33.38", "18.25",
         "30.500"],
        ["+ GMBR system combination with T2S results", "80.90", "74.00", "34.25", "18.50", "-"],
        ["+ System combination with a simple heuristics (submission 2)", "81.44", "75.25", "34.77", "18.75",
         "29.750"]]
    text = "\n".join(table.footer)
    for part in ("paths.manual.shu2016_t2s", "STAND-IN for the T2S system: shu-standin",
                 "in the T2S, reranking, GMBR and heuristic rows", "length-normalised log-probability",
                 "pooled 8-best lists", "tuned on 200 development sentences to maximise multi-bleu",
                 "fewer than 12 words",
                 "footnote 1", "Table 2's ensemble is not comparable with Table 1"):
        assert part in text, part
    paper_facts = {**FACTS, "scale": "paper", "combinations": {
        "mbr": {"settings": {"n": 20, "tune_sentences": 500, "metric": "multi-bleu"}}, "sw": {"settings": {"threshold": 40}}}}
    paper = build("shu2016-table2", {"t2s": scores(0.7, 15.0, "shu-t2s"), "gmbr": scores(0.7, 15.0, "mbr"),
                                     "heuristic": scores(0.7, 15.0, "sw")}, paper_facts)[0]
    assert paper.rows[1][0] == "T2S system 1-best" and paper.rows[2][2] == ""
    text = "\n".join(paper.footer)
    assert "STAND-IN" not in text and "fewer than 40 words" in text and "tuned on 500 development" in text
    assert "T2S neural reranking (ours)" not in text  # no reranked row, no line about it
    with pytest.raises(PipelineError, match="facts.combinations: no settings of the gmbr row's system 'x'"):
        build("shu2016-table2", {"gmbr": scores(0.7, 15.0, "x")}, FACTS)


def curves(values, every=20, per_epoch=50.0):
    steps = range(every, every * len(values) + 1, every)
    return {"valid": cell("s", curves={"curve": "valid/nll", "epochs": 3, "steps_per_epoch": per_epoch,
                                       "points": [[s, v] for s, v in zip(steps, values)]})}


def test_interval_is_the_commonest_gap():
    assert interval([[20, 1.0], [40, 1.0], [60, 1.0], [73, 1.0]]) == 20
    assert interval([[1500, 2.0]]) == 1500 and interval([[10, 1.0], [30, 1.0]]) == 10


def test_figure2_rows_findings_and_a_deterministic_png(tmp_path):
    cells = {"baseline": curves([4.0, 3.0, 2.5, 2.25]), "enlarged": curves([3.9, 3.1, 2.4, 2.2]),
             "stacked": curves([4.5, 3.5, 3.0]), "residual": curves([3.8, 2.9, 2.45, 2.125])}
    table, figure = build("shu2016-fig2", cells, FACTS)
    assert table.columns == ["step", "iterations (20x)", "Baseline model (ours)", "Enlarged decoder RNN (ours)",
                             "Stacked decoder RNN (ours)", "Residual decoder RNN (ours)"]
    assert table.rows == [["20", "1", "4.0000", "3.9000", "4.5000", "3.8000"],
                          ["40", "2", "3.0000", "3.1000", "3.5000", "2.9000"],
                          ["60", "3", "2.5000", "2.4000", "3.0000", "2.4500"],
                          ["80", "4", "2.2500", "2.2000", "", "2.1250"]]
    text = "\n".join(table.footer)
    assert "lowest at 2 of 3 logged points (those where all 4 variants were logged)" in text
    assert ("final logged values: Baseline model 2.2500 (step 80), Enlarged decoder RNN 2.2000 (step 80), "
            "Stacked decoder RNN 3.0000 (step 60), Residual decoder RNN 2.1250 (step 80)") in text
    assert "logged every 20 updates" in text and "constantly lower" in text and "tiny scale" in text
    save_figure(figure, tmp_path / "a.png")
    save_figure(build("shu2016-fig2", cells, FACTS)[1], tmp_path / "b.png")
    first = (tmp_path / "a.png").read_bytes()
    assert first[:8] == b"\x89PNG\r\n\x1a\n"
    assert hashlib.sha256(first).digest() == hashlib.sha256((tmp_path / "b.png").read_bytes()).digest()
    paper = build("shu2016-fig2", {"residual": curves([2.0, 1.5], every=1500, per_epoch=9000.0)},
                  {**FACTS, "scale": "paper"})[0]
    assert paper.columns[1] == "iterations (1500x)" and paper.rows[1][:2] == ["3000", "2"]


def test_figure2_bad_cells_named():
    with pytest.raises(PipelineError, match=r"cells.stacked.valid.curves: interval 10, .*expected those of baseline"):
        build("shu2016-fig2", {"baseline": curves([3.0, 2.0]), "stacked": curves([3.0, 2.0], every=10)}, FACTS)
    bad = curves([3.0, 2.0])
    bad["valid"]["curves"]["points"][1] = [20, 2.0]
    with pytest.raises(PipelineError, match=r"cells.residual.valid.curves.points\[1\]: expected a step above 20"):
        build("shu2016-fig2", {"residual": bad}, FACTS)
    del bad["valid"]["curves"]["steps_per_epoch"]
    with pytest.raises(PipelineError, match=r"cells.residual.valid.curves.steps_per_epoch: missing"):
        build("shu2016-fig2", {"residual": bad}, FACTS)
    with pytest.raises(PipelineError, match="no curves"):
        build("shu2016-fig2", {}, FACTS)
