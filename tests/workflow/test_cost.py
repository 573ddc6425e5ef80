"""`python -m pipeline cost` (pipeline/cost.py): GPU-hours from step times measured on a GPU, checked by hand on toy
params; every paper-scale run is estimated and its time limit is sized from its estimate; the table of
docs/paper-scale.md is the command's output."""
import copy
import re

import pytest

from pipeline.config import load_params
from pipeline.cost import (EPOCH_PAIRS, MARGIN, Estimator, Measurements, approximate_parameters, costs_by_paper,
                           load_measurements)
from pipeline.dry_run import PlannedJob, planned_jobs
from pipeline.errors import PipelineError
from workspace import ROOT, TOY_HAO2019, TOY_SHARED, run
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
    (row,), runs = costs_by_paper(toy, jobs)
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


def test_every_paper_scale_run_is_estimated_and_its_time_limit_sized_from_it():
    params = load_params(ROOT / "params.yaml", scale="paper")
    estimator = Estimator(params, load_measurements())
    needed = {}
    for name, exp in params.experiments.items():
        run_ = estimator.run(name)
        assert run_.gpu_hours > 0, name
        needed[exp.recipe] = max(needed.get(exp.recipe, 0), run_.needed_minutes)
    for recipe, minutes in needed.items():
        limit = params.recipes[recipe].resources.runtime
        assert minutes <= limit <= minutes + 60, (recipe, limit, minutes)   # MARGIN x the estimate, whole hours
    assert MARGIN == 2


@pytest.mark.slow
def test_the_docs_cost_table_is_the_commands_output():
    printed = run(["python", "-m", "pipeline", "cost"], ROOT, timeout=600).stdout
    rows = [line.split("\t") for line in printed.splitlines() if re.match(r"^(\w+)\t\d", line)]
    readme = (ROOT / "docs/paper-scale.md").read_text(encoding="utf-8")
    table = [[cell.strip() for cell in line.strip("|").split("|")]
             for line in readme.splitlines() if re.match(r"^\| (hao2019|shu2016|werlen2018|zeng2021|zhang2018|all) \|",
                                                         line)]
    assert len(rows) == 6 and table == rows
