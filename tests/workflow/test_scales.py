"""A table's path names its scale (results/<scale>/<paper>/): beside the committed tiny tables of a fresh clone, the
README's paper-scale command plans each paper's whole build, and a target of the other scale stops the run at once.
Every step that runs a model asks for one GPU at paper scale; at tiny scale no job asks for one and none sees one."""
import re
import shutil

import pytest
import yaml

from pipeline.dry_run import planned_jobs
from workspace import ROOT, make_workspace, paper_targets, project_params, run

pytestmark = pytest.mark.slow
PAPERS = ("hao2019", "shu2016", "werlen2018", "zeng2021", "zhang2018")
# the rules whose step runs a model: beam search, rescoring and the analyses that run it (zeng2021's `patterns`
# only reads its weights: the CPU)
MODEL_RULES = {"train", "translate", "nbest_decode", "rerank", "analysis_attention", "analysis_previous_words",
               "analysis_perplexity", "analysis_alignment", "analysis_speed", "analysis_probing"}


def job_counts(dry_run_output: str) -> dict[str, int]:
    """rule -> jobs of a dry run's "Job stats" table."""
    stats = dry_run_output.split("Job stats:", 1)[1].split("Reasons:", 1)[0]
    return {rule: int(n) for rule, n in re.findall(r"^(\w+)\s+(\d+)$", stats, flags=re.M) if rule != "total"}


def jobs(dry_run_output: str) -> list[tuple[str, int, str]]:
    """(rule, GPUs asked, shell command) of every job a `snakemake -n -p` printed."""
    return [(job.rule, int(job.resources.get("gpu", 0)), job.shell) for job in planned_jobs(dry_run_output)]


@pytest.fixture(scope="module")
def fresh_clone(tmp_path_factory):
    """The project's files and params with the committed results/ beside them, as a fresh clone has them."""
    shared, papers = project_params()
    ws = make_workspace(tmp_path_factory.mktemp("clone") / "ws", shared, papers)
    shutil.copytree(ROOT / "results", ws / "results")
    return ws


PAPER_COMMAND = ["snakemake", "-n", "-p", "--cores", "16", "--config", "scale=paper", "--"]


@pytest.fixture(scope="module")
def paper_dry_run(fresh_clone):
    """The README's paper-scale commands as one dry run of every paper's targets (-p: the shell commands)."""
    return run([*PAPER_COMMAND, *[t for paper in PAPERS for t in paper_targets(paper, "paper")]], fresh_clone).stdout


def test_the_paper_command_plans_every_papers_whole_build_in_a_fresh_clone(fresh_clone, paper_dry_run):
    targets = [t for paper in PAPERS for t in paper_targets(paper, "paper")]
    assert all((fresh_clone / target).exists() for paper in PAPERS for target in paper_targets(paper))
    planned = job_counts(paper_dry_run)
    whole = job_counts(run(["snakemake", "-n", "--forceall", *PAPER_COMMAND[2:], *targets], fresh_clone).stdout)
    assert planned == whole    # nothing the committed tiny tables hold counts as built at paper scale
    assert planned["table"] + planned["figure"] == len(targets) == 35 and planned["train"] > 100


def test_every_model_step_asks_for_a_gpu_at_paper_scale_and_sees_it(paper_dry_run):
    seen = set()
    for rule, gpus, shell in jobs(paper_dry_run):
        if rule in MODEL_RULES:
            seen.add(rule)
            assert gpus >= 1 and "CUDA_VISIBLE_DEVICES" not in shell, (rule, gpus)
        else:
            assert gpus == 0, rule   # preprocessing, scoring, tables: CPU jobs
    assert seen == MODEL_RULES    # the five papers use every kind of model step


def test_no_job_asks_for_or_sees_a_gpu_at_tiny_scale(fresh_clone):
    targets = [t for paper in PAPERS for t in paper_targets(paper)]
    planned = jobs(run(["snakemake", "-n", "-p", "--forceall", "--cores", "2", "--", *targets], fresh_clone).stdout)
    assert {rule for rule, _, _ in planned} >= MODEL_RULES
    assert all(gpus == 0 for _, gpus, _ in planned)
    for rule, _, shell in planned:
        if rule in MODEL_RULES:
            # hidden: the CPU on any machine (after the train rule's trap, which keeps its shell past Slurm's SIGTERM)
            assert shell.removeprefix("trap '' TERM USR1; ").startswith("CUDA_VISIBLE_DEVICES= "), (rule, shell)


def test_the_committed_tiny_tables_satisfy_a_tiny_build(fresh_clone):
    targets = [t for paper in PAPERS for t in paper_targets(paper)]
    assert "Nothing to be done" in run(["snakemake", "-n", "--cores", "2", "--", *targets], fresh_clone).stdout


def test_a_target_of_the_other_scale_stops_the_run_saying_how_to_build_it(fresh_clone):
    proc = run(["snakemake", "-n", "--cores", "2", "--", "results/paper/hao2019/table3.tsv"], fresh_clone, check=False)
    assert proc.returncode != 0
    assert "results/paper/hao2019/table3.tsv is built at scale paper" in proc.stderr + proc.stdout
    assert "--config scale=paper" in proc.stderr + proc.stdout


def test_the_slurm_profile_keeps_each_job_on_one_node_and_keeps_going():
    """A job's GPUs on one node (torchrun --standalone); a failed job (a licensed corpus not supplied) stops only the
    jobs that need its outputs, not the rest of the build, and its log is shown with the failure."""
    profile = yaml.safe_load((ROOT / "workflows/profiles/slurm/config.yaml").read_text(encoding="utf-8"))
    assert profile["default-resources"]["nodes"] == 1 and profile["keep-going"] is True
    assert profile["show-failed-logs"] is True
