"""The smoke scale: the paper scale's models, recipes and GPU code paths on the embedded corpora for a few hundred
updates, derived from the params files' tiny and paper values (pipeline/scales.py). Its dry run is planned here on the
CPU; a real build on a GPU node is what it is for (docs/paper-scale.md)."""
import copy
import json
import shlex
from collections import Counter

import pytest

from pipeline.config import load_params, parse_params
from pipeline.dry_run import planned_jobs
from pipeline.dvc_stage import check_scale
from pipeline.errors import PipelineError
from pipeline.scales import SMOKE_MINUTES, SMOKE_STEPS, embedded_data, smoke_recipe
from pipeline.steps import load_steps
from workspace import ROOT, make_workspace, project_params, run, write_params

TABLE = "results/smoke/hao2019/table3.tsv"


def parse(shared, papers, scale="smoke"):
    return parse_params(shared, scale=scale,
                        papers={name: (f"params/{name}.yaml", data) for name, data in papers.items()})


@pytest.fixture(scope="module")
def smoke():
    return load_params(ROOT / "params.yaml", scale="smoke")


def test_smoke_takes_the_papers_models_and_recipes_on_the_tiny_data(smoke):
    assert smoke.root == "artifacts/smoke" and smoke.tables["hao2019-table3"].target == TABLE
    assert smoke.model_spec("ende-base")["d_model"] == 512 and smoke.model_spec("zhen-big")["ffn_dim"] == 4096
    assert smoke.corpora["zh-en"].source == "l10n-zh-en" and smoke.corpora["zh-en"].bpe_merges == 3000
    assert smoke.corpora["zh-en"].max_len == 60 and smoke.corpora["rn-zh-en"].test_size == 800
    assert smoke.corpora["w-lm"].src == "es" and smoke.corpora["z-summarization"].source == "standin-summarization"
    base = smoke.recipes["base"]
    assert base.train == {"precision": "auto", "optimizer": "adam", "lr": 0.0007, "schedule": "inverse_sqrt",
                          "warmup": 100, "max_steps": SMOKE_STEPS, "max_epochs": 0, "batch_unit": "tokens",
                          "batch_size": 32768, "label_smoothing": 0.1, "checkpoint_every": 100, "valid_every": 100,
                          "log_every": 10}
    assert (base.resources.gpu, base.resources.runtime, base.resources.mem_mb) == (1, SMOKE_MINUTES, 64000)
    assert smoke.recipes["dl4mt"].train["optimizer"] == "adadelta"   # the paper's optimizer, not tiny's Adam
    assert smoke.train_minutes("ende-base") == SMOKE_MINUTES and smoke.train_slices("ende-base") == 1
    assert smoke.decoding["batch_size"] == 128 and smoke.cpu_math == "native"
    # the tables' data-bound choices are tiny's: stand-ins, test sets, case-sensitive metrics, sample sizes
    assert smoke.tables["shu2016-table2"].cells["t2s"]["test"] == "shu-standin"
    assert smoke.tables["zhang2018-table4"].test_sets == {"align": "test"}
    assert smoke.tables["zhang2018-table4"].values["bleu"] == "multi-bleu"
    assert smoke.tables["zeng2021-fig3"].analyses["speed"]["sentences"] == 200
    assert smoke.combinations["shu-heuristic"].settings["threshold"] == 12


def test_an_epoch_based_recipe_keeps_its_halving_schedule_on_fewer_epochs(smoke):
    shu = smoke.recipes["shu-adam"].train
    assert (shu["max_epochs"], shu["halve_epochs"], shu["schedule"]) == (2, 1, "halve_last_epochs")
    assert shu.get("max_steps", 0) == 0 and shu["valid_every"] == 100 and shu["checkpoint_every"] == 100
    assert smoke_recipe({"lr": 1.0, "batch_size": 8, "max_epochs": 9}) == {
        "lr": 1.0, "batch_size": 8, "max_epochs": 0, "max_steps": SMOKE_STEPS, "checkpoint_every": 100,
        "valid_every": 100, "log_every": 10}   # another epoch-based schedule: SMOKE_STEPS updates
    short = smoke_recipe({"lr": 1.0, "batch_size": 8, "max_steps": 60, "warmup": 4000, "valid_every": 5})
    assert (short["max_steps"], short["warmup"], short["valid_every"], short["checkpoint_every"]) == (60, 30, 5, 30)


def test_smoke_gpus_caps_each_run_on_one_node():
    shared, papers = project_params()
    four = parse({**shared, "smoke_gpus": 4}, papers)
    assert four.recipes["base"].resources.gpu == 4 and four.recipes["shu-adam"].resources.gpu == 1   # paper's: 1
    assert parse(shared, papers, scale="paper").recipes["base"].resources.gpu == 8   # no effect at paper scale


@pytest.mark.parametrize("value, expected", [
    (0, "params.yaml: smoke_gpus: expected a positive number of GPUs"),
    ("two", "params.yaml: smoke_gpus: expected int, got str 'two'"),
    (True, "params.yaml: smoke_gpus: expected int, got bool True"),
])
def test_a_bad_smoke_gpus_is_refused_naming_the_key(value, expected):
    shared, papers = project_params()
    for scale in ("tiny", "smoke", "paper"):   # validated up front, whatever the scale
        with pytest.raises(PipelineError, match=expected):
            parse({**shared, "smoke_gpus": value}, papers, scale=scale)


def test_a_smoke_value_written_in_a_params_file_is_refused():
    shared, papers = project_params()
    papers = copy.deepcopy(papers)
    papers["hao2019"]["models"]["transformer-base"]["d_model"] = {"tiny": 64, "smoke": 256, "paper": 512}
    with pytest.raises(PipelineError) as err:
        parse(shared, papers, scale="tiny")
    assert str(err.value).startswith("params/hao2019.yaml: models.transformer-base.d_model.smoke: a per-scale value "
                                     "names tiny and paper only: the smoke scale takes the paper value")
    papers["hao2019"]["models"]["transformer-base"]["d_model"] = {"tiny": 64}
    with pytest.raises(PipelineError, match=r"d_model\.paper: missing required key"):
        parse(shared, papers)


def test_every_model_step_asks_at_smoke_for_the_paper_scales_gpu_for_minutes_and_the_others_for_tinys():
    for name, step in load_steps().items():
        paper, smoke = step.resources["paper"], step.resources["smoke"]
        asked = paper if paper.gpu else step.resources["tiny"]   # the embedded corpora: learn-bpe's 32 GB not asked
        assert (smoke.gpu, smoke.threads, smoke.mem_mb) == (asked.gpu, asked.threads, asked.mem_mb), name
        assert smoke.runtime == min(asked.runtime, SMOKE_MINUTES), name
    assert load_steps()["translate"].resources["smoke"].gpu == 1
    assert load_steps()["learn-bpe"].resources["smoke"].mem_mb < load_steps()["learn-bpe"].resources["paper"].mem_mb


def test_the_embedded_data_are_tiny_and_smokes():
    assert embedded_data("tiny") and embedded_data("smoke") and not embedded_data("paper")
    from pipeline.papers.shu2016.layouts import embedded_line
    line = embedded_line("64 units", "smoke")
    assert line.startswith("smoke scale: the embedded en-ja") and "the paper's models and a few hundred updates" in line
    assert "compare how the systems rank" in embedded_line("64 units", "tiny")


def test_dvc_repro_refuses_the_smoke_scale(tmp_path):
    shared, papers = project_params()
    write_params(tmp_path, {**shared, "scale": "smoke"}, papers)
    with pytest.raises(PipelineError, match="scale smoke has GPU jobs \\(training on up to 1 GPU; "):
        check_scale(tmp_path)


def test_check_config_and_targets_at_smoke_scale():
    out = run(["python", "-m", "pipeline", "check-config", "--scale", "smoke"], ROOT).stdout
    assert "OK (scale smoke;" in out
    targets = run(["python", "-m", "pipeline", "targets", "--scale", "smoke", "--paper", "hao2019"], ROOT).stdout
    assert TABLE in targets.split() and all(t.startswith("results/smoke/hao2019/") for t in targets.split())


@pytest.mark.slow
def test_the_smoke_dry_run_plans_paper_sized_runs_on_one_gpu(tmp_path):
    shared, papers = project_params()
    ws = make_workspace(tmp_path / "ws", shared, papers)
    jobs = planned_jobs(run(["snakemake", "-n", "-p", "--cores", "16", "--config", "scale=smoke", "--", TABLE],
                            ws).stdout)
    counts = Counter(job.rule for job in jobs)
    assert counts["train"] == 12 and counts["translate"] == 12 and counts["table"] == 1 and counts["fetch"] == 2
    for job in jobs:
        gpus, runtime = int(job.resources["gpu"]), int(job.resources["runtime"])
        assert runtime <= SMOKE_MINUTES, job
        assert gpus == (1 if job.rule in ("train", "translate") else 0), job
        assert "CUDA_VISIBLE_DEVICES" not in job.shell or gpus == 0
    fetches = {job.wildcards["corpus"]: job.shell for job in jobs if job.rule == "fetch"}
    assert "--source l10n-zh-en " in fetches["zh-en"] and "--source l10n-en-de " in fetches["en-de"]
    specs = {job.wildcards["exp"]: json.loads(shlex.split(job.shell.split("--spec ", 1)[1])[0])
             for job in jobs if job.rule == "train"}
    base = specs["ende-base"]
    assert base["model"]["d_model"] == 512 and base["model"]["enc_layers"] == 6
    assert base["recipe"]["max_steps"] == SMOKE_STEPS and base["recipe"]["batch_size"] == 32768
    assert base["recipe"]["precision"] == "auto" and specs["zhen-big"]["model"]["d_model"] == 1024
    train = next(job for job in jobs if job.rule == "train")
    assert int(train.resources["runtime"]) == SMOKE_MINUTES and "PIPELINE_GPUS=1 python -m pipeline" in train.shell
    other = run(["snakemake", "-n", "--cores", "1", "--", TABLE], ws, check=False)   # params.yaml's scale: tiny
    assert other.returncode != 0 and "add --config scale=smoke" in other.stdout + other.stderr
