"""A table's path names its scale (results/<scale>/<paper>/): beside the committed tiny tables of a fresh clone, the
README's paper-scale command plans each paper's whole build, and a target of the other scale stops the run at once."""
import re
import shutil

import pytest

from workspace import ROOT, make_workspace, paper_targets, project_params, run

pytestmark = pytest.mark.slow
PAPERS = ("hao2019", "shu2016", "werlen2018", "zeng2021", "zhang2018")


def job_counts(dry_run_output: str) -> dict[str, int]:
    """rule -> jobs of a dry run's "Job stats" table."""
    stats = dry_run_output.split("Job stats:", 1)[1].split("Reasons:", 1)[0]
    return {rule: int(n) for rule, n in re.findall(r"^(\w+)\s+(\d+)$", stats, flags=re.M) if rule != "total"}


@pytest.fixture(scope="module")
def fresh_clone(tmp_path_factory):
    """The project's files and params with the committed results/ beside them, as a fresh clone has them."""
    shared, papers = project_params()
    ws = make_workspace(tmp_path_factory.mktemp("clone") / "ws", shared, papers)
    shutil.copytree(ROOT / "results", ws / "results")
    return ws


def test_the_paper_command_plans_every_papers_whole_build_in_a_fresh_clone(fresh_clone):
    assert all((fresh_clone / target).exists() for paper in PAPERS for target in paper_targets(paper))
    for paper in PAPERS:
        command = ["snakemake", "-n", "--cores", "16", "--config", "scale=paper", "--", *paper_targets(paper, "paper")]
        planned = job_counts(run(command, fresh_clone).stdout)
        whole = job_counts(run([*command[:2], "--forceall", *command[2:]], fresh_clone).stdout)
        assert planned == whole, paper    # nothing the committed tiny tables hold counts as built at paper scale
        assert planned["train"] > 0 and planned["table"] + planned.get("figure", 0) == len(paper_targets(paper))


def test_the_committed_tiny_tables_satisfy_a_tiny_build(fresh_clone):
    targets = [t for paper in PAPERS for t in paper_targets(paper)]
    assert "Nothing to be done" in run(["snakemake", "-n", "--cores", "2", "--", *targets], fresh_clone).stdout


def test_a_target_of_the_other_scale_stops_the_run_saying_how_to_build_it(fresh_clone):
    proc = run(["snakemake", "-n", "--cores", "2", "--", "results/paper/hao2019/table3.tsv"], fresh_clone, check=False)
    assert proc.returncode != 0
    assert "results/paper/hao2019/table3.tsv is built at scale paper" in proc.stderr + proc.stdout
    assert "--config scale=paper" in proc.stderr + proc.stdout
