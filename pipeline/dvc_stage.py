"""dvc.yaml's stage command: `python -m pipeline.dvc_stage snakemake --profile workflows/profiles/local ...`.

A stage runs its Snakemake call with the local profile, on the machine that runs DVC, as one job tree
(pipeline/job_tree.py: it stops whole with DVC). That is the tiny scale's route. A scale with GPU jobs (paper: training
on up to 8 GPUs, decoding and analyses on one; smoke: the same on one node) is built on a Slurm cluster instead, with
Snakemake and the Slurm profile, and DVC records the results afterwards (`dvc commit -f -d <stage>`); there the stage
refuses in one line, before Snakemake starts, rather than run GPU jobs on a login node. The scale is params.yaml's,
as the stage's Snakemake would read it (`dvc exp run -S scale=paper` writes it there). A Snakemake lock that a killed
build left is removed first, and a build running in the workspace refuses the stage (pipeline/build_guard.py).
"""
from __future__ import annotations

import sys
from pathlib import Path

from pipeline.errors import PipelineError, refused

def gpu_jobs(params) -> str:
    """What asks for GPUs at the params' scale, in words ("" where nothing does): the training recipes and the steps
    declared with a GPU."""
    from pipeline.steps import load_steps

    most = max((r.resources.gpu for r in params.recipes.values()), default=0)
    steps = sorted(name for name, step in load_steps().items() if step.resources[params.scale].gpu and name != "train")
    parts = ([f"training on up to {most} GPU{'s' if most > 1 else ''}"] if most else []) + (
        [f"{', '.join(steps)} on one each"] if steps else [])
    return "; ".join(parts)


def check_scale(root: str | Path = ".") -> None:
    """A PipelineError of one line where the scale in <root>/params.yaml has GPU jobs."""
    from pipeline.config import load_params

    params = load_params(Path(root) / "params.yaml")
    gpus = gpu_jobs(params)
    if gpus:
        raise PipelineError(f"dvc repro runs its stages with Snakemake's local profile on this machine, but scale "
                            f"{params.scale} has GPU jobs ({gpus}): build it on Slurm, `snakemake <targets> --profile "
                            f"slurm --config scale={params.scale}`, then record its outputs with "
                            f"`dvc commit -f -d <stage>`")


def main(argv: list[str]) -> int:
    from pipeline.build_guard import clear_stale_lock
    from pipeline.job_tree import run

    if not argv:
        print("usage: python -m pipeline.dvc_stage COMMAND [ARG...]", file=sys.stderr)
        return 1
    status = refused(check_scale) or refused(lambda: clear_stale_lock(Path.cwd()))
    return run(argv) if status is None else status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
