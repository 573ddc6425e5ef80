"""Every hao2019 table and figure: dry-runs at paper scale with the project's params, builds on a toy corpus."""
import re

import pytest

from workspace import make_workspace, paper_targets, project_params, read_table, run, toy_project_params

pytestmark = pytest.mark.slow
PROFILE = ["--profile", "workflows/profiles/local"]


def test_every_hao2019_target_dry_runs_at_paper_scale(tmp_path):
    shared, papers = project_params()
    ws = make_workspace(tmp_path / "ws", shared, {"hao2019": papers["hao2019"]})
    targets = paper_targets("hao2019", "paper")
    assert {f"results/paper/hao2019/{name}.tsv" for name in ("table1", "table5", "fig5")} <= set(targets)
    dry = run(["snakemake", "-n", "-p", "--cores", "16", "--config", "scale=paper", "--", *targets], ws)  # a 16-core node
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", dry.stdout, flags=re.M))
    assert int(jobs["train"]) == 25           # 4 baselines + 4 controls + 4 Table 3 BiARNs + 13 variations
    assert int(jobs["analysis_probing"]) == 5 and int(jobs["table"]) == 5 and int(jobs["figure"]) == 2
    assert "artifacts/paper/models/ende-base-biarn-tJ/model.pt" in dry.stdout
    assert "torchrun --standalone --nproc_per_node 8" in dry.stdout   # 8 GPUs per training job at paper scale
    # each of the 8 ranks gets 2 of the job's 16 cores; torchrun starts only once torch sees the job's GPUs
    assert "OMP_NUM_THREADS=2 PIPELINE_GPUS=8 python -m pipeline.device torchrun" in dry.stdout


def test_every_hao2019_target_builds_on_a_toy_corpus(tmp_path):
    shared, papers = toy_project_params()
    ws = make_workspace(tmp_path / "ws", shared, {"hao2019": papers["hao2019"]})
    targets = paper_targets("hao2019")
    run(["snakemake", *PROFILE, "--", *targets], ws, timeout=1500)

    table1 = read_table(ws / "results/tiny/hao2019/table1.tsv")
    speeds = [row["Speed (ours)"] for row in table1 if row["Speed (ours)"]]
    assert len(speeds) == 6 and all(float(s) > 0 for s in speeds)   # five systems and the control
    for name, rows in (("table2", 6), ("table4", 6)):
        table = read_table(ws / f"results/tiny/hao2019/{name}.tsv")
        assert len([r for r in table if r["BLEU (ours)"]]) == rows, name
    table5 = read_table(ws / "results/tiny/hao2019/table5.tsv")
    filled = [row for row in table5 if row.get("SeLen (ours)")]
    assert len(filled) == 5
    for row in filled:
        for task in ("SeLen", "WC", "BShif"):
            assert 0.0 <= float(row[f"{task} (ours)"]) <= 100.0
        assert row["TrDep (ours)"] == "needs parsed data"
    fig5 = read_table(ws / "results/tiny/hao2019/fig5.tsv")
    assert len(fig5) >= 5
    for png in ("fig5.png", "length.png"):
        assert (ws / "results/tiny/hao2019" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
