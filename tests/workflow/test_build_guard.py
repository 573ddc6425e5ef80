"""One build per workspace (pipeline/build_guard.py), with a real Snakemake: a second run beside a live one is refused
at once; the lock a Snakemake killed by SIGKILL leaves is removed by the next run; a parent killed by SIGKILL stops the
whole build, which releases Snakemake's lock."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from workspace import ROOT, env, wait_for

SNAKEFILE = 'rule slow:\n    output: "done.txt"\n    shell: "sleep 120 && touch {output}"\n'
SNAKEMAKE = ["snakemake", "--cores", "1", "--quiet", "all"]


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "Snakefile").write_text(SNAKEFILE, encoding="utf-8")
    return ws


def _guard(ws: Path, *cmd: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pipeline.build_guard", *cmd], cwd=ws,
                            env={**env(), "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kwargs)


def _guarded(ws: Path, *cmd: str) -> subprocess.CompletedProcess:
    proc = _guard(ws, *cmd)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _locks(ws: Path) -> list[Path]:
    return sorted((ws / ".snakemake/locks").glob("*.lock"))


def _snakemake_pids(ws: Path) -> list[int]:
    from pipeline.build_guard import running_snakemakes
    return running_snakemakes(ws)


def test_a_second_run_beside_a_live_one_is_refused_at_once_naming_it(tmp_path):
    ws = _workspace(tmp_path)
    first = _guard(ws, *SNAKEMAKE)
    try:
        assert wait_for(lambda: _locks(ws), 60)   # Snakemake is running its job
        started = time.monotonic()
        second = _guarded(ws, "true")
        assert time.monotonic() - started < 15
        assert second.returncode == 2 and second.stderr.count("\n") == 1, second.stderr
        assert second.stderr.startswith(f"error: another make run is building in this workspace (pid {first.pid} on ")
        assert first.poll() is None   # untouched
    finally:
        first.send_signal(signal.SIGINT)   # stops its whole tree: Snakemake releases its lock
        assert first.wait(timeout=120) != 0
    assert not _locks(ws) and not _snakemake_pids(ws)


def test_the_lock_a_killed_snakemake_left_is_removed_by_the_next_run(tmp_path):
    ws = _workspace(tmp_path)
    smk = subprocess.Popen(SNAKEMAKE, cwd=ws, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    try:
        assert wait_for(lambda: _locks(ws), 60)
        # a Snakemake started by hand is building: the guard names it and leaves its lock alone
        busy = _guarded(ws, "true")
        assert busy.returncode == 2 and busy.stderr.count("\n") == 1, busy.stderr
        assert f"a Snakemake (pid {smk.pid}) is building in this workspace" in busy.stderr
        assert _locks(ws)
    finally:
        os.killpg(smk.pid, signal.SIGKILL)   # Snakemake and its job, with no chance to release the lock
        smk.wait()
    assert _locks(ws)
    after = _guarded(ws, "true")
    assert after.returncode == 0, after.stderr
    assert after.stderr.startswith("removed the Snakemake lock a stopped build left") and not _locks(ws)


def test_a_parent_killed_by_sigkill_stops_the_whole_build(tmp_path):
    ws = _workspace(tmp_path)
    # make's place: a shell whose child is the guard; SIGKILL of the shell (the parent) alone
    parent = subprocess.Popen(["bash", "-c", f"{sys.executable} -m pipeline.build_guard {' '.join(SNAKEMAKE)}; :"],
                              cwd=ws, env={**env(), "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    assert wait_for(lambda: _locks(ws) and _snakemake_pids(ws), 60)
    parent.kill()
    parent.wait()
    assert wait_for(lambda: not _snakemake_pids(ws) and not _locks(ws), 90)   # stopped, lock released
    assert not (ws / "done.txt").exists()
    again = _guarded(ws, "true")
    assert (again.returncode, again.stderr) == (0, "")
