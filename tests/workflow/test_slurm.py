"""The same toy table through a real Slurm cluster (slurmctld + slurmd + munge on localhost) and the slurm profile.

Needs root and Debian's slurm-wlm/munge (tests/cluster/start-slurm.sh installs them). Runs whenever CI=true.
"""
import copy
import json
import os
import shutil
import subprocess

import pytest

from workspace import ROOT, TABLE, TOY_HAO2019, make_workspace, read_table, run

pytestmark = [pytest.mark.slow, pytest.mark.slurm]
CLUSTER = ROOT / "tests" / "cluster"


@pytest.fixture(scope="module")
def slurm_cluster():
    """Start (installing if needed) the single-node cluster; stop it afterwards if we started it."""
    if os.geteuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but not root: the local Slurm cluster needs root (apt-get, daemons)")
        pytest.skip("needs root to install and start slurmctld/slurmd/munged; runs in CI (CI=true)")
    if shutil.which("apt-get") is None and shutil.which("slurmctld") is None:
        pytest.fail("neither slurmctld nor apt-get found: cannot set up the Slurm cluster")
    already = subprocess.run(["sinfo", "-h"], capture_output=True).returncode == 0 if shutil.which("sinfo") else False
    proc = subprocess.run(["bash", str(CLUSTER / "start-slurm.sh")], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    yield
    if not already:
        subprocess.run(["bash", str(CLUSTER / "stop-slurm.sh")], capture_output=True, timeout=120)


def test_slurm_profile_builds_table_with_gpu_requests(tmp_path, slurm_cluster):
    paper = copy.deepcopy(TOY_HAO2019)
    paper["recipes"]["toy"]["resources"]["gpu"] = 1   # scheduled on the cluster's (fake) GPU
    ws = make_workspace(tmp_path / "ws", papers={"hao2019": paper})
    assert (ws / "slurm").resolve() == (ws / "workflows/profiles/slurm").resolve()

    # the literal command of the README, with a hard kill as a safety net
    run(["timeout", "-s", "KILL", "1500", "snakemake", TABLE, "--profile", "slurm"], ws, timeout=1600)

    rows = read_table(ws / TABLE)
    assert len([r for r in rows if r["Zh-En BLEU (ours)"]]) == 2
    # the GPU jobs see the one Slurm gave them; a job that asked for none sees none (the rules hide them)
    for exp, gpus in (("zhen-base", "0"), ("ende-base", "0"), ("zhen-base-biarn", ""), ("ende-base-biarn", "")):
        summary = json.loads((ws / f"artifacts/tiny/models/{exp}/train.json").read_text())
        env = summary["environment"]
        assert env["slurm_job_id"], f"{exp} did not run as a Slurm job: {env}"
        assert env["cuda_visible_devices"] == gpus, (exp, env)
