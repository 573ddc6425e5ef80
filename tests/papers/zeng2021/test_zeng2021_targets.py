"""Every zeng2021 table and figure: dry-runs at paper scale with the project's params, builds on toy corpora."""
import re

import pytest

from workspace import make_workspace, paper_targets, project_params, read_table, run, toy_project_params

pytestmark = pytest.mark.slow
PROFILE = ["--profile", "workflows/profiles/local"]
KEPT_PAIRS = ("en-de", "en-fr", "zh-en")  # Table 1 on toy corpora: three of its ten directions keep the test short


def test_every_zeng2021_target_dry_runs_at_paper_scale(tmp_path):
    shared, papers = project_params()
    ws = make_workspace(tmp_path / "ws", shared, papers)
    targets = paper_targets("zeng2021", "paper")
    assert len(targets) == 10  # Tables 1-4, Figures 3-8
    dry = run(["snakemake", "-n", "-p", "--cores", "1", "--config", "scale=paper", "--", *targets], ws)
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", dry.stdout, flags=re.M))
    assert int(jobs["train"]) == 78  # 60 of Table 1, 4 of Table 2, 4 of Table 3, 10 of Table 4
    assert int(jobs["significance"]) == 5 * 10 + 4  # vs TransF: Table 1's five systems in ten directions, Table 2
    assert int(jobs["analysis_speed"]) == 2 and int(jobs["analysis_attention"]) == 9
    assert int(jobs["analysis_patterns"]) == 1
    assert "artifacts/paper/models/z-zh-en-ran-all/model.pt" in dry.stdout
    assert "torchrun --standalone --nproc_per_node 8" in dry.stdout  # WMT: 8 GPUs
    assert "torchrun --standalone --nproc_per_node 2" in dry.stdout  # En-Tr and Zh-En: 2 GPUs
    assert '"length_penalty": 1.0' in dry.stdout  # Zh-En decodes with length penalty 1.0


def _toy_params() -> tuple[dict, dict]:
    shared, papers = toy_project_params()
    zeng = papers["zeng2021"]
    directions = zeng["grids"]["z"]["directions"]
    for pair in list(directions):
        if pair not in KEPT_PAIRS:
            del directions[pair]
    figures = zeng["figures"]
    figures["zeng2021-fig3"]["analyses"]["speed"] = {"sentences": 20, "batch_sizes": [10, 100], "beams": [1, 4],
                                                     "repeats": 1}
    for name in ("zeng2021-fig4", "zeng2021-fig5", "zeng2021-fig7"):
        figures[name]["analyses"]["attention"] = {"sentences": 30, "bins": 20}
    figures["zeng2021-fig6"]["analyses"]["patterns"] = {"size": 12}
    return shared, {"zeng2021": zeng}


def test_every_zeng2021_target_builds_on_toy_corpora(tmp_path):
    ws = make_workspace(tmp_path / "ws", *_toy_params())
    run(["snakemake", *PROFILE, "--", *paper_targets("zeng2021")], ws, timeout=1500)
    results = ws / "results/tiny/zeng2021"

    table1 = read_table(results / "table1.tsv")
    systems = ("TransF", "HC-SA", "Syn-R", "RAN-E", "RAN-D", "RAN-ALL")
    for row in table1:
        if row["Lang."] in ("En-De", "Zh-En") and row["Metric"] in ("BLEU", "SacreBLEU"):
            for system in systems:  # e.g. "0.78 (+0.75)†"
                assert 0.0 <= float(row[f"{system} (ours)"].split()[0]) <= 100.0, (row["Lang."], system)
        elif row["Lang."] == "De-En":
            assert all(row[f"{system} (ours)"] == "" for system in systems)  # not built: left empty
    table4 = read_table(results / "table4.tsv")
    assert len(table4) == 5 and all(row["Dialogue Meteor (ours)"] == "n/a" for row in table4)
    assert all(0.0 <= float(row["Summarization Rouge-1 (ours)"]) <= 100.0 for row in table4)
    fig3 = {(row["Varying"], row["Batch size"], row["Beam"]): row for row in read_table(results / "fig3.tsv")}
    assert set(fig3) == {("batch size", "10", "4"), ("batch size", "100", "4"), ("beam", "100", "1"),
                         ("beam", "100", "4")}
    for row in fig3.values():
        ran, transf = float(row["RAN-ALL tokens/s"]), float(row["TransF tokens/s"])
        if ran == 0 or transf == 0:  # an undertrained toy system may write only empty outputs: no ratio
            assert row["RAN-ALL / TransF"] == ""
            continue
        assert abs(float(row["RAN-ALL / TransF"]) - ran / transf) < 0.01 * ran / transf  # printed rounded
    for name in ("fig3", "fig4", "fig5", "fig6", "fig7", "fig8"):
        assert (results / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert read_table(results / f"{name}.tsv"), name
