"""pipeline.job_tree: a stage's command and everything it started stop with the process that ran it (DVC), however
that process ends; the command's exit status passes through."""
import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time

import pytest

# stands in for Snakemake: starts a grandchild (a trainer), writes both pids, then waits
TREE = textwrap.dedent("""
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    open(sys.argv[1], "w").write(f"{__import__('os').getpid()} {child.pid}")
    time.sleep(300)
""")


# a grandchild that ignores SIGINT (as one interrupted while Python starts does: site.py reports it and goes on)
STUBBORN = textwrap.dedent("""
    import os, signal, subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import signal, sys, time; signal.signal(signal.SIGINT, signal.SIG_IGN); "
                              "open(sys.argv[1], 'w').write('ready'); time.sleep(300)", sys.argv[1] + ".ready"])
    while not os.path.exists(sys.argv[1] + ".ready"):
        time.sleep(0.01)
    open(sys.argv[1], "w").write(f"{os.getpid()} {child.pid}")
    time.sleep(300)
""")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as handle:   # a zombie waiting for its parent's wait() is gone too
        return handle.read().split(")")[-1].split()[0] != "Z"


def _started(pids_file, proc, within: float = 60.0) -> list[int]:
    deadline = time.monotonic() + within  # generous: the suite's end-to-end builds share the cores
    while time.monotonic() < deadline:
        if pids_file.exists() and pids_file.read_text().count(" ") == 1:
            return [int(p) for p in pids_file.read_text().split()]
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError(f"the job tree did not start within {within:.0f} s")


def _gone(pids: list[int], within: float = 20.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(_alive(pid) for pid in pids):
            return True
        time.sleep(0.1)
    return False


@pytest.fixture(autouse=True)
def _short_grace(monkeypatch):
    """3 s between the stop signals (JOB_TREE_GRACE_S, inherited by every job tree started here): a process that
    SIGINT reaches while Python starts survives it (site.py reports the KeyboardInterrupt and goes on), so a
    stop can take the grace before SIGTERM; the checks below wait longer than that."""
    monkeypatch.setenv("JOB_TREE_GRACE_S", "3")


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # what a shell does to a command it starts in the background


@pytest.mark.parametrize("shell", [None, "/bin/sh"])
@pytest.mark.parametrize("background", [False, True])
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_killing_the_process_that_ran_the_stage_stops_the_whole_tree(tmp_path, how, background, shell):
    pids_file = tmp_path / "pids"
    command = [sys.executable, "-m", "pipeline.job_tree", sys.executable, "-c", TREE, str(pids_file)]
    if shell:   # as DVC runs a dvc.yaml command, `$SHELL -c CMD` (/bin/sh where SHELL is unset), CMD as dvcgen writes it
        command = [shell, "-c", f"exec {shlex.join(command)}"]
    # the stand-in for DVC: runs the stage command as its child and waits for it
    dvc = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; subprocess.run(sys.argv[1:])", *command],
                           start_new_session=True, preexec_fn=_ignore_sigint if background else None)
    try:
        pids = _started(pids_file, dvc)
        os.kill(dvc.pid, how)
        dvc.wait()
        assert _gone(pids), "the stage's command or its job outlived DVC"
    finally:
        for pid in _started(pids_file, dvc) if pids_file.exists() else []:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_an_interrupt_stops_the_tree_and_the_status_passes_through(tmp_path):
    pids_file = tmp_path / "pids"
    tree = subprocess.Popen([sys.executable, "-m", "pipeline.job_tree", sys.executable, "-c", TREE, str(pids_file)])
    pids = _started(pids_file, tree)
    tree.send_signal(signal.SIGINT)
    assert tree.wait(timeout=60) == 128 + signal.SIGINT
    assert _gone(pids)
    ok = subprocess.run([sys.executable, "-m", "pipeline.job_tree", "sh", "-c", "exit 3"])
    assert ok.returncode == 3
    usage = subprocess.run([sys.executable, "-m", "pipeline.job_tree"], capture_output=True, text=True)
    assert usage.returncode == 1 and "usage: python -m pipeline.job_tree COMMAND" in usage.stderr


def test_a_member_that_outlives_the_command_is_stopped_too(tmp_path):
    pids_file = tmp_path / "pids"
    tree = subprocess.Popen([sys.executable, "-m", "pipeline.job_tree", sys.executable, "-c", STUBBORN, str(pids_file)])
    pids = _started(pids_file, tree)
    tree.send_signal(signal.SIGINT)
    assert tree.wait(timeout=60) == 128 + signal.SIGINT   # the command ends at SIGINT, its child only at SIGTERM
    assert not any(_alive(pid) for pid in pids)


def test_every_dvc_stage_command_execs_its_job_tree():
    """dvc.yaml's commands start with `exec`: /bin/sh (dash) would otherwise stay between DVC and the job tree and
    outlive a killed DVC, and the job tree, its parent alive, would build on."""
    import yaml
    from pathlib import Path
    stages = yaml.safe_load((Path(__file__).parents[2] / "dvc.yaml").read_text())["stages"]
    commands = {name: stage["do"]["cmd"] for name, stage in stages.items()}
    assert commands and not [name for name, cmd in commands.items()
                             if not cmd.startswith("exec python -m pipeline.dvc_stage ")]
