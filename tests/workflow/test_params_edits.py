"""Each rule's params hold exactly what its output depends on, so a params edit plans exactly the jobs it affects.

A built workspace is made without building: every output of hao2019 Table 3's graph is created empty and stamped
by `snakemake --touch`, which records each job's params (and code, inputs) as a run would; Snakemake's dry run then
says which jobs an edit plans and why. Each edit below changes one section of params.yaml or of a paper's file, and
the jobs planned because their params changed are asserted exactly (the rest are planned only because an input of
theirs is rebuilt). The README's Zh-En edit (adding paths.manual.wmt17_un_zh_en and wmt17_cwmt_zh_en) plans no job
at tiny scale, which never reads them, and only Zh-En jobs at paper scale.
"""
import copy
import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from pipeline.dry_run import planned_jobs
from workspace import ROOT, make_workspace, project_params, run, write_params

pytestmark = pytest.mark.slow
TABLE = "hao2019/table3"
ZH_EN_KEYS = {"wmt17_un_zh_en": "/data/wmt17/UNv1.0.en-zh.tar.gz", "wmt17_cwmt_zh_en": "/data/wmt17/cwmt"}


def directory_rules() -> set[str]:
    """The rules whose output is a directory() (created as one below)."""
    text = "\n".join(path.read_text(encoding="utf-8") for path in sorted((ROOT / "workflows/rules").glob("*.smk")))
    parts = re.split(r"^rule (\w+):\n", text, flags=re.M)
    return {name for name, body in zip(parts[1::2], parts[2::2])
            if re.search(r"^    output:\s+directory\(", body, re.M)}


def dry_run(ws: Path, scale: str, *options: str) -> str:
    return run(["snakemake", "-n", "--cores", "16", *options, "--config", f"scale={scale}", "--",
                f"results/{scale}/{TABLE}.tsv"], ws).stdout


def job_blocks(text: str) -> list[str]:
    return [block for block in re.split(r"\n(?=\[[^\]\n]+\]\n)", text) if re.search(r"^(local)?rule \w+:", block, re.M)]


def touch_build(ws: Path, scale: str) -> None:
    """Every output of the table's graph created (empty files, directories where the rule declares one), then
    `snakemake --touch --forceall`: the metadata a real build leaves, in seconds."""
    directories = directory_rules()
    assert {"fetch", "learn_bpe"} <= directories
    for block in job_blocks(dry_run(ws, scale, "--forceall")):
        rule = re.search(r"^(?:local)?rule (\w+):", block, re.M).group(1)
        for out in re.search(r"^ +output: (.*)$", block, re.M).group(1).split(", "):
            path = ws / out
            if rule in directories:
                path.mkdir(parents=True, exist_ok=True)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.touch()
    run(["snakemake", "--touch", "--forceall", "--cores", "1", "--config", f"scale={scale}", "--",
         f"results/{scale}/{TABLE}.tsv"], ws)
    assert "Nothing to be done" in dry_run(ws, scale)


def name(job) -> str:
    """What a job is of: its experiment, system, corpus or table output."""
    return next(job.wildcards[key] for key in ("exp", "system", "corpus", "output") if key in job.wildcards)


def planned(ws: Path, scale: str) -> tuple[dict[str, set[str]], list]:
    """rule -> the names of the jobs planned because their params changed; and every planned job."""
    text = dry_run(ws, scale)
    jobs = planned_jobs(text)
    reasons = [re.search(r"^ +reason: (.*)$", block, re.M).group(1) for block in job_blocks(text)]
    assert len(reasons) == len(jobs)
    roots = {}
    for job, reason in zip(jobs, reasons):
        # planned for a changed param or a rebuilt input, nothing else (no code or software change)
        assert reason.startswith(("Params have changed", "Input files updated by another job")), (job, reason)
        if reason.startswith("Params have changed"):
            roots.setdefault(job.rule, set()).add(name(job))
    return roots, jobs


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The project's files and params, hao2019 Table 3 built (by touch) at tiny scale."""
    shared, papers = project_params()
    ws = make_workspace(tmp_path_factory.mktemp("params-edits") / "ws", shared, papers)
    touch_build(ws, "tiny")
    return ws, shared, papers


def edited(ws: Path, shared: dict, papers: dict, edit, scale: str = "tiny") -> tuple[dict, list]:
    """The jobs planned after `edit(shared, papers)` (on copies); the params are restored afterwards."""
    new_shared, new_papers = copy.deepcopy(shared), copy.deepcopy(papers)
    edit(new_shared, new_papers)
    write_params(ws, new_shared, new_papers)
    try:
        return planned(ws, scale)
    finally:
        write_params(ws, shared, papers)


def table3_experiments(papers, **match) -> set[str]:
    """Table 3's experiments whose keys have the given values (all of them without `match`)."""
    hao = papers["hao2019"]
    names = {exp for row in hao["tables"]["hao2019-table3"]["cells"].values() for exp in row.values()}
    return {exp for exp in names if all(hao["experiments"][exp].get(k) == v for k, v in match.items())}


def baselines(papers) -> set[str]:
    """Table 3's experiments trained from scratch (the others start from one of them)."""
    return table3_experiments(papers, init=None)


def set_key(mapping: dict, dotted: str, value) -> None:
    *parents, last = dotted.split(".")
    for key in parents:
        mapping = mapping.setdefault(key, {})
    mapping[last] = value


# (what is edited, the edit, rule -> the jobs planned for their params: a function of the project's paper params).
# Snakemake names a job's changed params only where no input of it is rebuilt: these are the first jobs an edit
# plans, every other one is planned because one of them rebuilds its input.
EDITS = [
    ("paths.manual: the Zh-En keys", lambda s, p: s["paths"]["manual"].update(ZH_EN_KEYS), lambda p: {}),
    ("paths.manual: another paper's key", lambda s, p: set_key(s, "paths.manual.aspec_je", "/data/aspec"),
     lambda p: {}),
    ("paths.downloads", lambda s, p: set_key(s, "paths.downloads", "/var/tmp/downloads"), lambda p: {}),
    ("max_job_minutes", lambda s, p: set_key(s, "max_job_minutes", 1440), lambda p: {}),
    ("seed", lambda s, p: set_key(s, "seed", 2),
     lambda p: {"fetch": {"zh-en", "en-de"}}),   # seeded splits; the trainings' seeds follow, below them
    ("precision", lambda s, p: set_key(s, "precision", "bfloat16"), lambda p: {"train": baselines(p)}),
    ("cpu_math", lambda s, p: set_key(s, "cpu_math", "native"),
     lambda p: {"train": baselines(p)}),   # the fine-tuned systems and every decode follow
    ("decoding", lambda s, p: set_key(s, "decoding.beam", 5), lambda p: {"translate": table3_experiments(p)}),
    ("significance", lambda s, p: set_key(s, "significance.n_samples", 500),
     lambda p: {"significance": table3_experiments(p) - baselines(p)}),   # the table follows
    ("corpora: a split size", lambda s, p: set_key(p["hao2019"], "corpora.zh-en.valid_size", 499),
     lambda p: {"fetch": {"zh-en"}}),
    ("corpora: BPE", lambda s, p: set_key(p["hao2019"], "corpora.en-de.bpe_merges.tiny", 2900),
     lambda p: {"learn_bpe": {"en-de"}}),
    ("models", lambda s, p: set_key(p["hao2019"], "models.transformer-big.dropout.tiny", 0.2),
     lambda p: {"train": table3_experiments(p, model="transformer-big", init=None)}),
    ("recipes", lambda s, p: set_key(p["hao2019"], "recipes.finetune.lr.tiny", 0.0009),
     lambda p: {"train": table3_experiments(p, recipe="finetune")}),
    ("experiments", lambda s, p: set_key(p["hao2019"], "experiments.zhen-big-biarn.options", {"rec_steps": 4}),
     lambda p: {"train": {"zhen-big-biarn"}}),
    ("tables: this table", lambda s, p: set_key(p["hao2019"], "tables.hao2019-table3.values",
                                                 {"bleu": "sacrebleu"}), lambda p: {"table": {"table3"}}),
    ("tables: another table", lambda s, p: set_key(p["hao2019"], "tables.hao2019-table1.values",
                                                    {"bleu": "sacrebleu"}), lambda p: {}),
    ("another paper's file", lambda s, p: set_key(p["zeng2021"], "recipes.zeng-wmt14.lr.tiny", 0.001), lambda p: {}),
]


@pytest.mark.parametrize("what, edit, expected", EDITS, ids=[e[0] for e in EDITS])
def test_a_params_edit_plans_exactly_the_jobs_whose_params_it_changes(built, what, edit, expected):
    ws, shared, papers = built
    roots, jobs = edited(ws, shared, papers, edit)
    assert roots == expected(papers)
    if not roots:
        assert jobs == []


@pytest.fixture(scope="module")
def built_paper(tmp_path_factory):
    """The project's files and params, hao2019 Table 3 built (by touch) at paper scale."""
    shared, papers = project_params()
    ws = make_workspace(tmp_path_factory.mktemp("params-edits-paper") / "ws", shared, papers)
    touch_build(ws, "paper")
    return ws, shared, papers


def test_the_zh_en_keys_plan_only_zh_en_jobs_at_paper_scale(built_paper):
    """At paper scale hao2019's Zh-En corpus reads the two keys: its fetch reruns and what follows from it, nothing of
    En-De."""
    ws, shared, papers = built_paper
    roots, jobs = edited(ws, shared, papers, lambda s, p: s["paths"]["manual"].update(ZH_EN_KEYS), scale="paper")
    assert roots == {"fetch": {"zh-en"}}
    assert {job.rule for job in jobs} >= {"fetch", "train", "translate", "table"}
    assert all(name(job) in ("zh-en", "table3") or name(job).startswith("zhen-") for job in jobs), jobs


def test_plan_names_the_zh_en_jobs_with_their_reason_and_gpu_hours(built_paper):
    """`python -m pipeline plan` after the Zh-En keys edit: the fetch of zh-en with the two keys that changed, only Zh-En
    trainings, each group's GPU-hours on the GPU model asked for (A100 here) and the total, before anything runs."""
    from pipeline.config import load_params
    from pipeline.cost import Estimator, load_measurements
    ws, shared, papers = built_paper
    new = copy.deepcopy(shared)
    new["paths"]["manual"].update(ZH_EN_KEYS)
    write_params(ws, new, papers)
    try:
        said = run([sys.executable, "-m", "pipeline", "plan", f"results/paper/{TABLE}.tsv", "--config", "scale=paper",
                    "gpu_model=A100"], ws).stdout
    finally:
        write_params(ws, shared, papers)
    lines = said.splitlines()
    assert "paper scale: what runs and why, GPU-hours on A100 (time limits assume it)" in lines, said
    keys = "; ".join(f"manual.{key}: (none) -> {path}" for key, path in sorted(ZH_EN_KEYS.items()))
    assert f"  fetch (zh-en): params changed: {keys}" in lines, said
    trains = [line for line in lines if line.startswith("  train")]
    assert trains and all("an input is rebuilt" in line for line in trains), said
    planned = re.findall(r"^  train(?: x\d+)? \((.*)\): .* \[([\d,.]+) GPU-h\]$", said, re.M)
    shown = [exp for names, _ in planned for exp in names.split(", ") if not exp.startswith("+")]
    assert shown and all(exp.startswith("zhen-") for exp in shown), said
    estimator = Estimator(load_params(ws / "params.yaml", scale="paper"), load_measurements(), "A100")
    experiments = {job.wildcards["exp"] for job in edited(ws, shared, papers, lambda s, p: s["paths"]["manual"].update(
        ZH_EN_KEYS), scale="paper")[1] if job.rule == "train"}
    train_hours = sum(estimator.run(exp).gpu_hours for exp in experiments)
    assert sum(float(hours.replace(",", "")) for _, hours in planned) == pytest.approx(train_hours, abs=0.05 * len(planned))
    assert re.search(rf"^\d+ jobs: {len(experiments)} training runs, \d+ on GPUs; [\d,.]+ GPU-h on A100 "
                     rf"\({train_hours:,.1f} training, ", said, re.M), said


@pytest.mark.parametrize("mode", ["portable", "portable-fixed"])
def test_the_cpu_code_path_retrains_nothing_on_gpus(built_paper, mode):
    """cpu_math is a param of the model jobs that compute on the CPU only: at paper scale, where they run on GPUs, its
    edit plans nothing (portable-fixed's kernel is in no GPU run's code either)."""
    ws, shared, papers = built_paper
    roots, jobs = edited(ws, shared, papers, lambda s, p: set_key(s, "cpu_math", mode), scale="paper")
    assert roots == {} and jobs == []


def test_the_gpu_model_changes_time_limits_and_retrains_nothing(built_paper):
    """gpu_model sizes the training jobs' time limits (a resource, not a param): on a V100 every run asks 8x the
    H200's minutes (at most two days a job), and nothing is planned."""
    from pipeline.config import load_params
    ws, shared, papers = built_paper
    roots, jobs = edited(ws, shared, papers, lambda s, p: set_key(s, "gpu_model", "V100"), scale="paper")
    assert roots == {} and jobs == []
    v100 = run(["snakemake", "-n", "--forceall", "--cores", "1", "--config", "scale=paper", "gpu_model=V100", "--",
                f"results/paper/{TABLE}.tsv"], ws).stdout
    h200 = run(["snakemake", "-n", "--forceall", "--cores", "1", "--config", "scale=paper", "--",
                f"results/paper/{TABLE}.tsv"], ws).stdout
    minutes = [{job.wildcards["exp"]: int(job.resources["runtime"]) for job in planned_jobs(text)
                if job.rule == "train"} for text in (h200, v100)]
    paper = load_params(ws / "params.yaml", scale="paper")
    on = {gpu: replace(paper, gpu_model=gpu) for gpu in ("H200", "V100")}
    assert minutes[0].keys() == minutes[1].keys() and len(minutes[0]) == 12
    assert minutes == [{exp: min(on[gpu].train_minutes(exp), 2880) for exp in minutes[0]} for gpu in on]
    h200, v100 = ({exp: on[gpu].train_minutes(exp) for exp in minutes[0]} for gpu in on)
    assert all(8 * h200[exp] - 8 < v100[exp] <= 8 * h200[exp] for exp in minutes[0])   # 8x, rounded up
