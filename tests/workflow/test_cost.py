"""`python -m pipeline cost` (pipeline/cost.py): GPU-hours from step times measured on a GPU, checked by hand on toy
params and on the paper recipes' layouts (each GPU's share of the batch) from the measured figures; another GPU model
scales them by its stated factor; every paper-scale run is estimated and the train rule's time limits, slices and
retries follow its estimate on params' gpu_model; the tables of docs/paper-scale.md are the command's output."""
import copy
import json
import math
import re
import sys
from dataclasses import replace

import pytest

from pipeline.config import load_params
from pipeline.cost import (EPOCH_PAIRS, MARGIN, Estimator, Measurements, approximate_parameters, costs_by_paper,
                           load_measurements)
from pipeline.dry_run import PlannedJob, planned_jobs
from pipeline.errors import PipelineError
from pipeline.steps import rule_steps
from workspace import ROOT, TOY_HAO2019, TOY_SHARED, project_params, run
from test_config import parse

TOY_TIMES = Measurements(gpu="a test GPU", families={"toy": {"experiment": "zhen-base", "target_tokens_per_s": 1000}},
                         token_batch_fill=0.5, target_tokens_per_sentence=30,
                         job_hours={"decode": 0.1, "analysis": 0.2, "speed": 0.5})


@pytest.fixture
def toy():
    paper = copy.deepcopy(TOY_HAO2019)
    paper["corpora"]["en-de"]["bpe_merges"] = 60     # a larger vocabulary than zh-en's 30: more parameters
    return Estimator(parse(TOY_SHARED, {"hao2019": paper}), TOY_TIMES)


def test_a_runs_gpu_hours_are_its_target_tokens_over_the_measured_rate_scaled_by_parameters(toy):
    zh = toy.run("zhen-base")          # the measured experiment itself: 60 updates x 600-token batches x 0.5 filled
    assert (zh.family, zh.updates, zh.target_tokens) == ("toy", 60, 18000)
    assert zh.gpu_hours == pytest.approx(18000 / 1000 / 3600) and zh.needed_minutes == 60   # at least an hour
    n_zh, n_en = (approximate_parameters(toy.params, name) for name in ("zhen-base", "ende-base"))
    assert n_zh < n_en
    assert toy.run("ende-base").gpu_hours == pytest.approx(18000 / (1000 * n_zh / n_en) / 3600)   # 6·N·T
    biarn = toy.run("zhen-base-biarn")  # a recurrence decoder counts as a Transformer; 30 fine-tuning updates
    assert (biarn.family, biarn.updates) == ("toy", 30)


def test_an_epoch_recipe_needs_its_corpus_size(toy, monkeypatch):
    recipe = toy.params.recipes["toy"].train
    monkeypatch.setitem(recipe, "max_steps", 0)
    monkeypatch.setitem(recipe, "max_epochs", 2)
    with pytest.raises(PipelineError, match="zhen-base: its recipe counts epochs, and the size of corpus toy-reorder "
                                            "is not known"):
        toy.run("zhen-base")
    monkeypatch.setitem(EPOCH_PAIRS, "toy-reorder", 1200)
    assert toy.run("zhen-base").updates == 2 * 1200 // (600 // 30)   # 600-token batches of 30-token sentences


def test_a_builds_rows_add_up_its_jobs_by_paper(toy):
    jobs = [PlannedJob("train", {"exp": "zhen-base"}, {"gpu": "0", "runtime": "10"}),
            PlannedJob("train", {"exp": "ende-base"}, {"gpu": "0", "runtime": "10"}),
            PlannedJob("translate", {"system": "zhen-base", "split": "test"}, {"gpu": "1", "runtime": "120"}),
            PlannedJob("score", {"system": "zhen-base", "split": "test", "metric": "sacrebleu"}, {"gpu": "0"}),
            PlannedJob("table", {"paper": "hao2019", "output": "table3"}, {"gpu": "0"})]
    threads = {rule: step.resources[toy.params.scale].threads for rule, step in rule_steps().items()}
    (row,), runs = costs_by_paper(toy, jobs, threads)
    train = sum(r.gpu_hours for r in runs)
    assert row == ("hao2019", 2, train, 1, pytest.approx(0.1), pytest.approx(train + 0.1),
                   pytest.approx(train + 0.1), 2, pytest.approx(2.0))   # one core per job at tiny scale; 1 GPU x 2 h


def test_the_dry_run_printout_is_read_with_or_without_shell_commands():
    text = """Building DAG of jobs...
[Fri Nov 27 05:49:13 2026]
rule fetch:
    output: artifacts/paper/data/shu-en-ja/raw
    wildcards: corpus=shu-en-ja
    resources: tmpdir=/tmp, runtime=60, gpu=0, mem_mb=4000, mem=4 GB, mem_mib=3815
[Fri Nov 27 05:49:13 2026]
localrule train:
    wildcards: exp=shu-baseline
    resources: tmpdir=/tmp, gpu=1, runtime=2880
Shell command: OMP_NUM_THREADS=4 python -m pipeline train --spec '{}'

[Fri Nov 27 05:49:14 2026]
rule table:
    wildcards: paper=shu2016, output=table1
Job stats:
"""
    assert planned_jobs(text) == [
        PlannedJob("fetch", {"corpus": "shu-en-ja"}, {"tmpdir": "/tmp", "runtime": "60", "gpu": "0", "mem_mb": "4000",
                                                      "mem": "4 GB", "mem_mib": "3815"}),
        PlannedJob("train", {"exp": "shu-baseline"}, {"tmpdir": "/tmp", "gpu": "1", "runtime": "2880"}),
        PlannedJob("table", {"paper": "shu2016", "output": "table1"}, {})]


def test_a_rank_figure_gives_the_update_time_of_a_gpus_share_of_the_batch(toy, monkeypatch):
    """Between the measured rank layout and the whole batch an update's time is linear in the tokens a GPU holds;
    below the rank's tokens it is the rank's (launch-bound), with GPUs x the overhead and the GPU's time factor."""
    times = replace(TOY_TIMES, families={"toy": {"experiment": "zhen-base", "target_tokens_per_s": 1000,
                                                 "rank": {"tokens": 100, "updates_per_s": 10}}},
                    whole_batch_tokens=1000, overhead=1.5, gpu_models={"H200": {"time_factor": 1.0},
                                                                       "slow": {"time_factor": 3.0}})
    recipe = toy.params.recipes["toy"]   # 600-token batches, 60 updates
    # an update of the whole 1,000 tokens: 1000 x 0.5 / 1000 = 0.5 s; of a rank's 100 tokens: 0.1 s
    for gpus, seconds in ((1, 0.1 + 0.4 * 500 / 900), (2, 0.1 + 0.4 * 200 / 900), (8, 0.1)):
        monkeypatch.setitem(toy.params.recipes, "toy", replace(recipe, resources=replace(recipe.resources, gpu=gpus)))
        estimate = Estimator(toy.params, times).run("zhen-base")
        assert estimate.per_rank == f"{600 / gpus:,.0f} tokens"
        assert estimate.gpu_hours == pytest.approx(60 * seconds * 1.5 * gpus / 3600)
        slow = Estimator(toy.params, times, gpu="slow").run("zhen-base")
        assert slow.gpu_hours == pytest.approx(3 * estimate.gpu_hours)
    with pytest.raises(PipelineError, match=r"gpu_model: expected one of H200, slow \(the GPU models of the step "
                                            r"times\), got 'B200'"):
        Estimator(toy.params, times, gpu="B200")


@pytest.fixture(scope="module")
def paper():
    return load_params(ROOT / "params.yaml", scale="paper")


def test_an_8_gpu_run_takes_the_measured_rank_update_time(paper):
    """hao2019's Base and Big recipes: 32,768 tokens on 8 GPUs, 4,096 a rank. Base's rank update was measured (23.325
    updates/s); Big's was not: its whole-batch update time x Base's ratio of the two (our assumption)."""
    m = load_measurements()
    raw = json.loads((ROOT / "benchmarks/results/gpu_step_times.json").read_text())
    base, big = raw["families"]["transformer-base"], raw["families"]["transformer-big"]
    assert (base["rank"]["tokens"], base["rank"]["updates_per_s"], raw["overhead"]) == (4096, 23.325, 1.1)
    whole = {name: 32768 * 0.558 / f["target_tokens_per_s"] for name, f in (("base", base), ("big", big))}
    ratio = (1 / 23.325) / whole["base"]
    assert ratio == pytest.approx(0.8675, abs=1e-4)   # a rank's 4,096 tokens take 87% of the whole batch's time
    h200 = Estimator(paper, m)
    run = h200.run("ende-base")   # the measured experiment: 100,000 updates of 1/23.325 s, x 1.1, on 8 GPUs
    assert (run.family, run.gpus, run.per_rank, run.updates) == ("transformer-base", 8, "4,096 tokens", 100_000)
    assert run.wall_hours == pytest.approx(100_000 / 23.325 * 1.1 / 3600)   # 1.31 h: more than 72 min on an H200
    assert run.gpu_hours == pytest.approx(8 * run.wall_hours) and run.needed_minutes == 158
    linear = 100_000 * 32768 * 0.558 / 370003 / 3600   # the whole-batch rate over 8 GPUs: what cost assumed before
    assert run.gpu_hours > 7 * linear
    assert h200.run("ende-big").wall_hours == pytest.approx(300_000 * ratio * whole["big"] * 1.1 / 3600)
    rnn = h200.run("rn-en-de-rnmt")   # RNMT's measured experiment: one GPU and 80 sentences, the layout measured
    assert (rnn.family, rnn.gpus, rnn.per_rank) == ("rnmt", 1, "80 sentences")
    assert rnn.wall_hours == pytest.approx(300_000 * 80 * 30 / 9242 * 1.1 / 3600)   # 30 target tokens a sentence


def test_another_gpu_model_costs_its_stated_factor(paper):
    m = load_measurements()
    assert {name: model["time_factor"] for name, model in m.gpu_models.items()} == {
        "H200": 1.0, "H100": 1.2, "A100": 2.5, "V100": 8.0}
    h200, a100 = Estimator(paper, m), Estimator(paper, m, gpu="A100")
    for name in ("ende-base", "ende-big", "z-en-de-ran-all", "shu-residual"):
        assert a100.run(name).gpu_hours == pytest.approx(2.5 * h200.run(name).gpu_hours)
    assert a100.step_hours("translate") == pytest.approx(2.5 * h200.step_hours("translate"))
    assert Estimator(replace(paper, gpu_model="A100"), m).run("ende-base") == a100.run("ende-base")


def test_every_paper_scale_run_is_estimated_and_its_time_limit_follows_the_estimate(paper):
    """A run with GPUs takes MARGIN x its estimate on gpu_model (at least an hour), in slices of at most
    max_job_minutes; the recipes give no runtime of their own at paper scale (it is a CPU run's limit)."""
    _, papers = project_params()
    assert not [name for data in papers.values() for name, recipe in data["recipes"].items()
                if "runtime" in recipe.get("resources", {})]
    for gpu in ("H200", "A100"):
        params = replace(paper, gpu_model=gpu)
        estimator = Estimator(params, load_measurements())
        for name, exp in params.experiments.items():
            run_ = estimator.run(name)
            assert run_.gpu_hours > 0 and run_.gpus > 0, name
            minutes = max(60, math.ceil(run_.wall_hours * MARGIN * 60))
            assert params.train_minutes(name) == minutes == run_.needed_minutes, name
            assert params.train_slices(name) == math.ceil(minutes / params.max_job_minutes), name
    assert MARGIN == 2


def _train_retries(config: dict) -> int:
    """The train rule's retries as Snakemake reads the Snakefile with `config` (in a process of its own)."""
    script = ("from pathlib import Path\n"
              "from snakemake.api import SnakemakeApi\n"
              "from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings\n"
              "with SnakemakeApi(OutputSettings()) as api:\n"
              "    wf = api.workflow(resource_settings=ResourceSettings(cores=1), snakefile=Path('Snakefile'),\n"
              f"                      config_settings=ConfigSettings(config={config!r}), workdir=Path('.'))\n"
              "    print('retries', next(r for r in wf._workflow.rules if r.name == 'train')._restart_times)\n")
    return int(re.search(r"^retries (\d+)$", run([sys.executable, "-c", script], ROOT).stdout, re.M).group(1))


@pytest.mark.slow
def test_the_train_rules_time_limits_and_retries_follow_the_estimate_on_the_chosen_gpu(paper):
    """`snakemake -n --config scale=paper gpu_model=A100`: each train job asks its run's minutes on an A100, at most
    max_job_minutes (here 600: Big's runs take two jobs); the rule retries as often as the longest run has slices."""
    config = ["scale=paper", "gpu_model=A100", "max_job_minutes=600"]
    dry = run(["snakemake", "-n", "--cores", "1", "--config", *config, "--", "results/paper/hao2019/table3.tsv"],
              ROOT).stdout
    asked = {job.wildcards["exp"]: int(job.resources["runtime"]) for job in planned_jobs(dry) if job.rule == "train"}
    a100 = replace(paper, gpu_model="A100", max_job_minutes=600)
    estimator = Estimator(a100, load_measurements())
    assert len(asked) == 12 and asked == {exp: min(estimator.run(exp).needed_minutes, 600) for exp in asked}
    assert asked["ende-base"] == 393 and asked["ende-big"] == 600 and a100.train_slices("ende-big") == 4
    # Slurm warns each job 90 s before its limit (sbatch --signal through the rule's slurm_extra): a checkpoint, then
    # exit 75 and the next slice
    assert {job.resources.get("slurm_extra") for job in planned_jobs(dry) if job.rule == "train"} == {
        "--signal=TERM@90"}
    retries = max(a100.train_slices(exp) for exp in a100.experiments)
    assert _train_retries({"scale": "paper", "gpu_model": "A100", "max_job_minutes": 600}) == retries > 4
    assert _train_retries({"scale": "paper"}) == max(paper.train_slices(exp) for exp in paper.experiments)


def test_cost_names_the_gpu_models_it_knows():
    proc = run([sys.executable, "-m", "pipeline", "cost", "--gpu", "B200"], ROOT, check=False)
    assert proc.returncode != 0
    assert ("--gpu: expected one of H200, H100, A100, V100 (the GPU models of benchmarks/results/gpu_step_times.json), "
            "got 'B200'") in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("gpu", ["H200", "H100", "A100", "V100"])
def test_the_docs_cost_tables_are_the_commands_output(gpu):
    printed = run(["python", "-m", "pipeline", "cost", "--gpu", gpu], ROOT, timeout=600).stdout
    assert f"GPU {gpu}: " + ("measured" if gpu == "H200" else "scaled from") in printed.splitlines()[0]
    rows = [line.split("\t") for line in printed.splitlines() if re.match(r"^(\w+)\t\d", line)]
    doc = (ROOT / "docs/paper-scale.md").read_text(encoding="utf-8")
    section = doc.split(f"`python -m pipeline cost --gpu {gpu}`", 1)[1].split("\n\n", 2)[1]
    table = [[cell.strip() for cell in line.strip("|").split("|")]
             for line in section.splitlines() if re.match(r"^\| (hao2019|shu2016|werlen2018|zeng2021|zhang2018|all) \|",
                                                          line)]
    assert len(rows) == 6 and table == rows
