"""Every hao2019 table and figure: dry-runs at paper scale with the project's params, builds on a toy corpus."""
import re

import pytest
import yaml

from workspace import ROOT, make_workspace, read_table, run, toy_project_params

pytestmark = pytest.mark.slow
PROFILE = ["--profile", "workflows/profiles/local"]


def hao2019_targets() -> list[str]:
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    specs = {**params["tables"], **params.get("figures", {})}
    return sorted(f"results/hao2019/{spec['output']}.tsv" for spec in specs.values() if spec["paper"] == "hao2019")


def test_every_hao2019_target_dry_runs_at_paper_scale(tmp_path):
    ws = make_workspace(tmp_path / "ws", yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8")))
    targets = hao2019_targets()
    assert {"results/hao2019/table1.tsv", "results/hao2019/table5.tsv", "results/hao2019/fig5.tsv"} <= set(targets)
    dry = run(["snakemake", "-n", "-p", "--cores", "1", "--config", "scale=paper", "--", *targets], ws)
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", dry.stdout, flags=re.M))
    assert int(jobs["train"]) == 21           # 4 baselines + 4 Table 3 BiARNs + 13 variations
    assert int(jobs["probe"]) == 5 and int(jobs["table"]) == 5 and int(jobs["figure"]) == 2
    assert "artifacts/paper/models/ende-base-biarn-tJ/model.pt" in dry.stdout
    assert "torchrun --standalone --nproc_per_node 8" in dry.stdout   # 8 GPUs per training job at paper scale


def test_every_hao2019_target_builds_on_a_toy_corpus(tmp_path):
    ws = make_workspace(tmp_path / "ws", toy_project_params())
    targets = hao2019_targets()
    run(["snakemake", *PROFILE, "--", *targets], ws, timeout=1500)

    table1 = read_table(ws / "results/hao2019/table1.tsv")
    speeds = [row["Speed (ours)"] for row in table1 if row["Speed (ours)"]]
    assert len(speeds) == 5 and all(float(s) > 0 for s in speeds)
    for name, rows in (("table2", 5), ("table4", 5)):
        table = read_table(ws / f"results/hao2019/{name}.tsv")
        assert len([r for r in table if r["BLEU (ours)"]]) == rows, name
    table5 = read_table(ws / "results/hao2019/table5.tsv")
    filled = [row for row in table5 if row.get("SeLen (ours)")]
    assert len(filled) == 5
    for row in filled:
        for task in ("SeLen", "WC", "BShif"):
            assert 0.0 <= float(row[f"{task} (ours)"]) <= 100.0
        assert row["TrDep (ours)"] == "needs parsed data"
    fig5 = read_table(ws / "results/hao2019/fig5.tsv")
    assert len(fig5) >= 5
    for png in ("fig5.png", "length_bins.png"):
        assert (ws / "results/hao2019" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
