"""Shared test set-up: single-threaded torch (2-core machines), the repository root, toy workspaces."""
import os
from pathlib import Path

import pytest

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


