"""Shared test set-up: single-threaded torch (2-core machines), the repository root, toy workspaces."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import slurm_local

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(autouse=True, scope="session")
def _single_thread_torch():
    try:
        import torch
    except ImportError:  # pragma: no cover
        return
    torch.set_num_threads(1)


WHOLE_BUILDS = ("_targets.py", "test_dvc.py", "test_slurm.py")  # the longest end-to-end runs (minutes each)


def pytest_collection_modifyitems(config, items):
    """The end-to-end runs (marked slow) first, whole builds of tables before them: handed one at a time to the
    workers (make test runs one per core), the long ones end together instead of one running alone at the end."""
    items.sort(key=lambda item: (item.get_closest_marker("slow") is None, not item.path.name.endswith(WHOLE_BUILDS)))


def pytest_configure(config):
    """Where Slurm is installed, the main process (xdist's controller, or the only one) brings the tests' cluster up
    in the background: Snakemake's Slurm plugin asks the controller at every start, and waits 9 s while it is down."""
    if hasattr(config, "workerinput"):
        return
    config.slurm_was_up = slurm_local.controller_up()
    config.slurm_start = None
    if not config.slurm_was_up and os.geteuid() == 0 and shutil.which("scontrol") and shutil.which("slurmctld"):
        config.slurm_start = subprocess.Popen(slurm_local.start_command(), stdout=subprocess.DEVNULL,
                                              stderr=subprocess.DEVNULL)


def pytest_unconfigure(config):
    """The cluster the session started (here or in tests/workflow/test_slurm.py) stays up until every test process is
    done, and is stopped here; one that was up before the session is left up."""
    if hasattr(config, "workerinput"):
        return
    if config.slurm_start is not None:
        config.slurm_start.wait(timeout=900)
    if not config.slurm_was_up and slurm_local.controller_up():
        slurm_local.stop()


@pytest.fixture
def repo_root() -> Path:
    return ROOT


@pytest.fixture
def server():
    """A loopback HTTP server the test fills with files (tests/loopback.py)."""
    from loopback import LoopbackServer
    srv = LoopbackServer()
    srv.thread.start()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()




@pytest.fixture
def tmpfs(tmp_path):
    """mount(name, size, read_only=False): a folder under tmp_path holding a tmpfs of that size (a full disk, a
    read-only file system), unmounted after the test; skipped where mounting is not allowed (needs root)."""
    mounted = []

    def mount(name: str, size: str = "2m", read_only: bool = False) -> Path:
        if os.geteuid() != 0:
            pytest.skip("mounting a tmpfs (a real full or read-only file system) needs root")
        where = tmp_path / name
        where.mkdir()
        options = f"size={size}" + (",ro" if read_only else "")
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True,
                              text=True)
        if proc.returncode:
            pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
        mounted.append(where)
        return where

    yield mount
    for where in reversed(mounted):
        subprocess.run(["umount", str(where)], check=False)
