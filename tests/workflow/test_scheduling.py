"""workflows/rules/scheduling.smk: a local run's Snakemake keeps a constant number of threads while jobs wait for
cores; without it, Snakemake 9.27 starts one more re-scheduling timer chain per finished job."""
import pytest

from workspace import ROOT, run

pytestmark = pytest.mark.slow
JOBS = 12


def threads_seen_by_each_job(tmp_path, include_hook: bool) -> list[int]:
    """Run JOBS one-core jobs on one core; each records how many threads its Snakemake process has."""
    hook = f'include: "{ROOT / "workflows/rules/scheduling.smk"}"\n' if include_hook else ""
    (tmp_path / "Snakefile").write_text(hook + f"""
rule all:
    input: expand("out/{{i}}.txt", i=range({JOBS}))

rule one:
    output: "out/{{i}}.txt"
    shell: "sleep 0.3; ls /proc/$PPID/task | wc -l > {{output}}"
""")
    run(["snakemake", "--cores", "1", "--quiet"], tmp_path)
    return sorted(int((tmp_path / f"out/{i}.txt").read_text()) for i in range(JOBS))


def test_local_run_keeps_a_constant_number_of_threads(tmp_path):
    seen = threads_seen_by_each_job(tmp_path, include_hook=True)
    assert seen[-1] - seen[0] <= 1, seen


def test_without_the_hook_snakemake_adds_a_timer_thread_per_finished_job(tmp_path):
    """The Snakemake behaviour the hook removes; if this fails, Snakemake has fixed it and the hook can go."""
    seen = threads_seen_by_each_job(tmp_path, include_hook=False)
    assert seen[-1] - seen[0] >= JOBS // 2, seen  # about one per finished job; chains end once no job waits
