"""Every shu2016 table and figure dry-runs at paper scale with the project's params (Slurm resources, the 4.1 recipe,
ASPEC, the supplied T2S outputs, GMBR and the length heuristic); Tables 1-2 and Figure 2 build on toy corpora, each
combined system's output checked against its inputs."""
import json
import re

import pytest

from pipeline.config import load_params
from pipeline.dry_run import planned_jobs
from pipeline.fileio import read_lines, read_nbest
from workspace import make_workspace, paper_targets, project_params, read_table, run, toy_project_params

pytestmark = pytest.mark.slow
PROFILE = ["--profile", "workflows/profiles/local"]


def test_every_shu2016_target_dry_runs_at_paper_scale(tmp_path):
    shared, papers = project_params()
    ws = make_workspace(tmp_path / "ws", shared, papers)
    targets = paper_targets("shu2016", "paper")
    assert targets == [f"results/paper/shu2016/{name}.tsv" for name in ("fig2", "table1", "table2")]
    dry = run(["snakemake", "--profile", "workflows/profiles/slurm", "-n", "--config", "scale=paper", "--", *targets],
              ws)
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", dry.stdout, flags=re.M))
    # the four decoders and the submission's two residual models; the T2S system is supplied, not trained
    assert int(jobs["train"]) == 6
    assert int(jobs["external_hyp"]) == 1 and int(jobs["external_nbest"]) == 3  # rerank: test; GMBR: valid, test
    assert int(jobs["nbest_decode"]) == 2 and int(jobs["gmbr_tune"]) == 1  # the ensemble's dev and test lists
    assert int(jobs["rerank"]) == 1 and int(jobs["gmbr"]) == 1 and int(jobs["length_switch"]) == 1
    assert int(jobs["analysis_curves"]) == 4 and int(jobs["table"]) == 2 and int(jobs["figure"]) == 1
    for text in ('"optimizer": "adam"', '"lr": 0.0001', '"schedule": "halve_last_epochs"', '"max_epochs": 6',
                 '"halve_epochs": 3', '"batch_unit": "sentences"', '"batch_size": 64', '"valid_every": 1500',
                 '"cell": "lstm"', '"hidden": 1000', '"dec_hidden": 1400', '"hidden": 1200', '"residual": true',
                 '"seed": 2', "--source aspec-en-ja", "--vocab-size 200000", "--key shu2016_t2s", '"n": 20',
                 '"tune_sentences": 500', "--threshold 40", "--metric ribes", '"curve": "valid/nll"'):
        assert text in dry.stdout, text
    paper = load_params(ws / "params.yaml", scale="paper")   # twice the cost estimate on an H200: 30-36 h, one job
    asked = {job.wildcards["exp"]: job.resources for job in planned_jobs(dry.stdout) if job.rule == "train"}
    assert {exp: (resources["gpu"], int(resources["runtime"])) for exp, resources in asked.items()} == {
        exp: ("1", paper.train_minutes(exp)) for exp in asked}
    assert all(1800 <= paper.train_minutes(exp) <= 2160 for exp in asked)


def _toy_params() -> tuple[dict, dict]:
    """The project's shu2016 params on a toy corpus, smaller still."""
    shared, papers = toy_project_params()
    shu = papers["shu2016"]
    for model in shu["models"].values():
        model.update(embed=12, hidden=12, **({"attention_dim": 12} if "attention_dim" in model else {}))
    shu["models"]["shu-enlarged"]["dec_hidden"] = 16
    shu["combinations"]["shu-heuristic"]["settings"]["threshold"] = 6
    return shared, {"shu2016": shu}


def test_tables_1_2_and_figure_2_build_on_toy_corpora(tmp_path):
    ws = make_workspace(tmp_path / "ws", *_toy_params())
    run(["snakemake", *PROFILE, "--", *paper_targets("shu2016")], ws, timeout=900)
    results, art = ws / "results/tiny/shu2016", ws / "artifacts/tiny"

    def score(system, metric):
        return json.loads((art / f"eval/{system}/test.{metric}.json").read_text(encoding="utf-8"))["score"]

    table1 = {row["Model"]: row for row in read_table(results / "table1.tsv")}
    residual = table1["Residual decoder RNN"]
    assert residual["RIBES(%) (paper)"] == "79.88" and residual["BLEU(%) (paper)"] == "30.75"
    assert residual["RIBES(%) (ours)"] == f"{100 * score('shu-residual', 'ribes'):.2f}"
    assert residual["BLEU(%) (ours)"] == f"{score('shu-residual', 'multi-bleu'):.2f}"

    table2 = read_table(results / "table2.tsv")
    assert [row["HUMAN (paper)"] for row in table2] == ["49.750", "-", "-", "30.500", "-", "29.750"]
    assert table2[1]["Model"].startswith("T2S system 1-best (tiny: stand-in")
    assert table2[5]["RIBES(%) (ours)"] == f"{100 * score('shu-heuristic', 'ribes'):.2f}"

    # each combined system's translations come from its inputs, sentence by sentence
    source = [len(line.split()) for line in read_lines(art / "data/shu-en-ja/tok/test.src")]
    ensemble, rerank = read_lines(art / "eval/shu-ensemble/test.hyp"), read_lines(art / "eval/shu-t2s-rerank/test.hyp")
    heuristic = read_lines(art / "eval/shu-heuristic/test.hyp")
    assert heuristic == [e if n < 6 else r for n, e, r in zip(source, ensemble, rerank)]
    assert 0 < sum(n < 6 for n in source) < len(source)
    standin = read_nbest(art / "eval/shu-t2s-rerank/nbest/shu-standin.test.nbest")
    assert all(len(hyps) == 8 for hyps in standin)
    assert all(choice in [text for _, text in hyps] for choice, hyps in zip(rerank, standin))
    pooled = [a + b for a, b in zip(read_nbest(art / "eval/shu-gmbr/nbest/shu-ensemble.test.nbest"),
                                    read_nbest(art / "eval/shu-gmbr/nbest/shu-standin.test.nbest"))]
    assert all(choice in [text for _, text in hyps] for choice, hyps in
               zip(read_lines(art / "eval/shu-gmbr/test.hyp"), pooled))
    tuned = json.loads((art / "eval/shu-gmbr/gmbr.json").read_text(encoding="utf-8"))
    assert tuned["sentences"] == 40 and tuned["tuned_score"] >= tuned["first_candidate_score"]

    # the two ensemble members differ only by their seed
    members = [json.loads((art / f"models/shu-wat-{m}/train.json").read_text(encoding="utf-8")) for m in "ab"]
    assert members[0]["n_params"] == members[1]["n_params"]
    assert members[0]["final_valid_nll"] != members[1]["final_valid_nll"]

    fig2 = read_table(results / "fig2.tsv")
    curve = json.loads((art / "tables/shu2016-fig2/curves/shu-residual.json").read_text(encoding="utf-8"))
    assert len(fig2) == len(curve["points"]) > 0
    assert all(step <= 3 * curve["steps_per_epoch"] for step, _ in curve["points"])
    assert (results / "fig2.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
