"""DVC on the toy project: repro, push to a local remote, fresh clone, pull, sync, then nothing to do.

Also: an edit of one experiment (dvc exp run -S) reruns only that system and what depends on it.
"""
import json

import pytest

from workspace import TABLE, TOY_PARAMS, make_workspace, run

pytestmark = pytest.mark.slow


def stages_run(output: str) -> set[str]:
    return {line.split("'")[1] for line in output.splitlines() if line.startswith("Running stage '")}


def test_repro_push_clone_pull_sync_then_nothing_to_do(tmp_path):
    ws = make_workspace(tmp_path / "ws", git=True)
    remote = tmp_path / "remote"
    run(["dvc", "remote", "add", "-d", "local", str(remote)], ws)
    run(["git", "add", "-A"], ws)
    run(["git", "commit", "-qm", "toy project"], ws)

    first = run(["dvc", "repro"], ws)
    assert {"corpus@zh-en", "train@ende-base", "finetune@ende-base-biarn", "table@hao2019-table3"} <= stages_run(
        first.stdout)
    assert (ws / TABLE).exists()
    assert "Data and pipelines are up to date" in run(["dvc", "status"], ws).stdout
    assert not stages_run(run(["dvc", "repro"], ws).stdout)      # a second repro does nothing

    plots = json.loads(run(["dvc", "plots", "show", "--json"], ws).stdout)   # dvclive learning curves
    assert not plots.get("errors"), plots.get("errors")
    for exp, recipe in (("zhen-base", "toy"), ("ende-base-biarn", "toy-finetune")):
        curve = plots["data"][f"artifacts/tiny/curves/{exp}/train/loss.tsv"][0]["content"]["data"]["values"]
        assert int(curve[-1]["step"]) == TOY_PARAMS["recipes"][recipe]["max_steps"]

    run(["dvc", "push"], ws)
    run(["git", "add", "-A"], ws)
    run(["git", "commit", "-qm", "results"], ws)

    clone = tmp_path / "clone"
    run(["git", "clone", "-q", str(ws), str(clone)], tmp_path)
    run(["dvc", "pull"], clone)
    assert (clone / "artifacts/tiny/models/zhen-base-biarn/model.pt").exists()
    assert (clone / TABLE).read_text() == (ws / TABLE).read_text()
    sync = run(["bash", "workflows/sync_after_pull.sh"], clone)
    assert "up to date" in sync.stdout
    dry = run(["snakemake", "--profile", "workflows/profiles/local", "-n", TABLE], clone)
    assert "Nothing to be done" in dry.stdout + dry.stderr
    assert "Data and pipelines are up to date" in run(["dvc", "status"], clone).stdout


def test_exp_run_with_one_edit_reruns_only_its_stages(tmp_path):
    ws = make_workspace(tmp_path / "ws", git=True)
    run(["git", "add", "-A"], ws)
    run(["git", "commit", "-qm", "toy project"], ws)
    run(["dvc", "repro"], ws)
    run(["git", "add", "-A"], ws)
    run(["git", "commit", "-qm", "results"], ws)

    status = run(["dvc", "status"], ws)
    assert "up to date" in status.stdout
    exp = run(["dvc", "exp", "run", "-S", "experiments.ende-base.recipe=toy-finetune"], ws)
    ran = stages_run(exp.stdout)
    assert {"train@ende-base", "finetune@ende-base-biarn", "table@hao2019-table3"} <= ran
    assert not ran & {"train@zhen-base", "finetune@zhen-base-biarn", "corpus@zh-en", "corpus@en-de"}, ran
