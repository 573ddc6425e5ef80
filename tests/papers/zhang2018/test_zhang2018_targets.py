"""Every zhang2018 table and figure dry-runs at paper scale with the project's params (Slurm resources, Adadelta,
target-side BPE, the Collins et al. sign test, the alignment set); Tables 1 and 4 and Figures 3 and 4 build on toy
corpora, the alignment analysis against the reorder grammar's gold links."""
import json
import re

import pytest

from pipeline.config import load_params
from pipeline.dry_run import planned_jobs
from workspace import make_workspace, paper_targets, project_params, read_table, run, toy_zhang2018_params

pytestmark = pytest.mark.slow
PROFILE = ["--profile", "workflows/profiles/local"]


def test_every_zhang2018_target_dry_runs_at_paper_scale(tmp_path):
    shared, papers = project_params()
    ws = make_workspace(tmp_path / "ws", shared, papers)
    targets = paper_targets("zhang2018", "paper")
    assert len(targets) == 6  # Tables 1-4, Figures 3-4
    dry = run(["snakemake", "--profile", "workflows/profiles/slurm", "-n", "--config", "scale=paper", "--", *targets],
              ws)
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", dry.stdout, flags=re.M))
    # Zh-En and WMT17 En-De: RNNsearch, RNNsearch*, RNMT; WMT16 En-De: RNMT. Table 4 reuses the Zh-En systems.
    assert int(jobs["train"]) == 7
    assert int(jobs["significance"]) == 4 + 3  # RNMT against RNNsearch* on MT03-06 and test15-17
    assert int(jobs["analysis_alignment"]) == 4 and int(jobs["analysis_length"]) == 2
    assert int(jobs["table"]) == 4 and int(jobs["figure"]) == 2
    for text in ('"optimizer": "adadelta"', '"batch_unit": "sentences"', '"batch_size": 80', '"adadelta_rho": 0.95',
                 '"embed": 512', '"hidden": 512', '"dropout": 0.5', '"weight_init": "uniform"',
                 '"weight_init_scale": 0.1', '"readout": "maxout"', '"rn_channels": [128, 256]',
                 '"rn_channels": [96]', '"beam": 10', '"test": "collins_sign_test"', "--sides tgt", "--sides >",
                 "--vocab-size 30000", '"raw": "artifacts/paper/data/rn-zh-en/raw"', '"split": "test-align"',
                 '"scores": "artifacts/paper/eval/rn-zh-en-rnmt/test.multi-bleu-ci.json"',
                 "--source ldc-zh-en", "--source wmt17pp-en-de", "--source wmt16b-en-de"):
        assert text in dry.stdout, text
    paper = load_params(ws / "params.yaml", scale="paper")   # twice the cost estimate on an H200, in jobs of 2 days
    asked = {job.wildcards["exp"]: job.resources for job in planned_jobs(dry.stdout) if job.rule == "train"}
    assert {exp: (resources["gpu"], int(resources["runtime"])) for exp, resources in asked.items()} == {
        exp: ("1", min(paper.train_minutes(exp), 2880)) for exp in asked}
    assert paper.train_minutes("rn-zh-en-rnnsearch-star") == 1050 and paper.train_slices("rn-zh-en-rnmt") == 2
    # the WMT17 release comes tokenised and escaped: its training text is unescaped, not tokenised again
    for side, lang in (("src", "en"), ("tgt", "de")):
        raw = f"--input artifacts/paper/data/rn-en-de/raw/train.{lang} --output artifacts/paper/data/rn-en-de/tok/train"
        assert f"{raw}.{side} --escaped" in dry.stdout
    assert "raw/valid.en --output artifacts/paper/data/rn-en-de/tok/valid.src  --workers" in dry.stdout  # tokenised


TOY_TARGETS = [f"results/tiny/zhang2018/{name}.tsv" for name in ("table1", "table4", "fig3", "fig4")]


def test_tables_1_4_and_figures_3_4_build_on_toy_corpora(tmp_path):
    ws = make_workspace(tmp_path / "ws", *toy_zhang2018_params())
    run(["snakemake", *PROFILE, "--", *TOY_TARGETS], ws, timeout=900)
    results, art = ws / "results/tiny/zhang2018", ws / "artifacts/tiny"

    table1 = {row["Systems"]: row for row in read_table(results / "table1.tsv")}
    assert table1["RNMT"]["MT03 (paper)"] == "39.24*" and table1["VRNMT"]["MT03 (ours)"] == ""
    given = json.loads((art / "tables/zhang2018-table1/cells.json").read_text(encoding="utf-8"))["cells"]
    for col, label in (("mt03", "MT03"), ("mt04", "MT04"), ("mt05", "MT05"), ("mt06", "MT06")):
        cell = given["rnmt"][col]
        assert cell["delta"] == pytest.approx(cell["bleu"] - given["rnnsearch-star"][col]["bleu"], abs=1e-9)
        mark = "*" if cell["p_value"] < 0.01 and cell["delta"] > 0 else ""
        assert table1["RNMT"][f"{label} (ours)"] == f"{cell['bleu']:.2f}{mark}"
        result = json.loads((art / f"tables/zhang2018-table1/significance/rn-zh-en-rnmt."
                                    f"{'test' if col == 'mt03' else 'test-' + col}.json").read_text(encoding="utf-8"))
        assert result["test"] == "collins_sign_test"
        assert result["wins"] + result["losses"] + result["ties"] == 15  # 60 test pairs cut into four parts
    mean = sum(given["rnmt"][c]["bleu"] for c in ("mt03", "mt04", "mt05", "mt06")) / 4
    assert table1["RNMT"]["Average (ours)"] == f"{mean:.2f}"

    table4 = {row["Systems"]: row for row in read_table(results / "table4.tsv")}
    for row_id, label in (("rnnsearch-star", "RNNsearch*"), ("rnmt", "RNMT")):
        alignment = json.loads((art / f"tables/zhang2018-table4/alignment/rn-reorder-{row_id}.json")
                               .read_text(encoding="utf-8"))
        assert alignment["sentences"] == 60 and 0.0 <= alignment["aer"] <= 1.0
        # every target word gets one link: as many links as target words in the test split
        words = sum(len(line.split()) for line in (art / "data/rn-reorder/tok/test.tgt").read_text().splitlines())
        assert alignment["links"] == words
        assert table4[label]["AER (ours)"] == f"{100 * alignment['aer']:.2f}"
    fig3 = read_table(results / "fig3.tsv")
    assert [row["Source length"] for row in fig3] == ["(0, 5]", "(5, 8]", "> 8"]
    assert sum(int(row["Sentences"]) for row in fig3) == 15
    fig4 = read_table(results / "fig4.tsv")
    assert [(row["Model"], row["sentence"]) for row in fig4] == [
        ("RNNsearch*", "1"), ("RNNsearch*", "2"), ("RNMT", "1"), ("RNMT", "2")]
    for name in ("fig3.png", "fig4.png"):
        assert (results / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
