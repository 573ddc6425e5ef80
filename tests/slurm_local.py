"""The tests' single-node Slurm cluster (tests/cluster/start-slurm.sh): started one process at a time; up or not."""
import os
import subprocess
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent / "cluster"
START_LOCK = "/tmp/nmt-repro-slurm-start.lock"   # one process installs and starts it; the others then find it up


def start_command() -> list[str]:
    """start-slurm.sh under the start lock (util-linux flock), idempotent, about 1 s when the cluster is installed.
    The script gets no descriptor of the lock (--close): the daemons it starts would hold the lock while they run."""
    return ["flock", "--close", START_LOCK, "bash", str(SCRIPTS / "start-slurm.sh")]


def controller_up() -> bool:
    """Whether the controller start-slurm.sh starts is running (its pid file names a live slurmctld)."""
    pid_file = Path(os.environ.get("SLURM_LOCAL_DIR", "/tmp/slurm-local")) / "run/slurmctld.pid"
    try:
        return Path(f"/proc/{int(pid_file.read_text())}/comm").read_text().strip() == "slurmctld"
    except (OSError, ValueError):
        return False


def stop() -> None:
    subprocess.run(["bash", str(SCRIPTS / "stop-slurm.sh")], capture_output=True, timeout=120)
