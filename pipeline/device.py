"""The device a step runs its model on: the job's GPU when it was given one, else the CPU.

A Slurm job asking for a GPU sees it (CUDA_VISIBLE_DEVICES); the rules hide every GPU from a job that asks for
none (workflows/rules/common.smk hide_gpus), so a tiny build stays on the CPU code path on a machine with GPUs too.
The trainer picks its device the same way (pipeline/train/distributed.py, one GPU per rank), but a training job given
GPUs that torch cannot use stops at once, naming the CUDA wheel (require_given_gpus): it would hold them for its
whole time limit, computing on the CPU.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path


def use_gpu() -> None:
    """Set up this process's GPU work: attention never takes cuDNN's kernel (our choice). torch 2.11 prefers it on an
    H100/H200, and it builds an execution plan for every new shape, which bucketed batches and a growing decoder
    cache meet at almost every step (the first of three same-sized Transformers searched 4x slower than the third,
    which found the plans made: docs/performance.md (j)); the memory-efficient and flash kernels take the same
    masks."""
    import torch

    torch.backends.cuda.enable_cudnn_sdp(False)


def use_cpu() -> None:
    """Set up this process's CPU work: the code path params.yaml's cpu_math asks for (pipeline.cpu_math.start: the
    fixed-order matrix products on the portable path)."""
    from pipeline import cpu_math

    cpu_math.start()


# torch's CUDA builds come from PyTorch's own wheel index, one per CUDA version (its "Get started" page names the
# address; cu130 matches a driver of CUDA 13, the benchmarks' H200; an older driver takes cu128, cu126, ...)
CUDA_INDEX = "<PyTorch's cu130 wheel index>"
OLDER_CUDA_INDEX = "<PyTorch's cu<version> wheel index>"
GIVEN_GPUS = "PIPELINE_GPUS"  # the GPUs a job asked for, set by the train rule (workflows/rules/train.smk launcher)
# "1": a job given GPUs that torch cannot use computes on the CPU instead of stopping: for a cluster whose GPUs are
# stand-ins (tests/cluster/start-slurm.sh's fake GPUs, where tests/workflow/test_slurm.py trains on the CPU)
ALLOW_CPU = "PIPELINE_ALLOW_CPU"


def given_gpus() -> int:
    """How many GPUs this job was given: the rule's count (PIPELINE_GPUS), else the devices CUDA_VISIBLE_DEVICES lists
    (Slurm's for a GPU job; empty where the rules hide them from a job that asks for none)."""
    declared = os.environ.get(GIVEN_GPUS, "").strip()
    if declared:
        return int(declared)
    listed = [d for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip() not in ("", "-1")]
    return 0 if listed == ["NoDevFiles"] else len(listed)


def cuda_wheel_command(index: str = CUDA_INDEX) -> str:
    """The pip command that puts the CUDA build of this torch version into the running Python's environment."""
    import torch

    return f"{sys.executable} -m pip install torch=={torch.__version__.split('+')[0]} --index-url {index}"


def require_given_gpus() -> None:
    """Stop a job that was given GPUs (given_gpus) where torch sees none, rather than let it hold them and compute on
    the CPU for its whole time limit: a PipelineError of one line naming the CUDA wheel to install (a CPU build, as
    `make venv` installs) or the driver (a CUDA build that finds no GPU). PIPELINE_ALLOW_CPU=1 lets it go on."""
    import torch

    given = given_gpus()
    if given == 0 or torch.cuda.is_available() or os.environ.get(ALLOW_CPU) == "1":
        return
    from pipeline.errors import PipelineError

    listed = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    what = f"GPU{'s' if ',' in listed else ''} {listed} (CUDA_VISIBLE_DEVICES)" if listed else f"{given} GPU(s)"
    if torch.version.cuda is None:
        raise PipelineError(f"this job was given {what} but torch {torch.__version__} is a CPU-only build: install the "
                            f"CUDA wheel ({cuda_wheel_command()}) and run the job again")
    raise PipelineError(f"this job was given {what} but torch {torch.__version__} (CUDA {torch.version.cuda}) sees no "
                        f"GPU: check the node's NVIDIA driver (nvidia-smi); an older driver needs the wheel of its "
                        f"CUDA version ({cuda_wheel_command(OLDER_CUDA_INDEX)})")


def job_device():
    """The job's first GPU where torch sees one (set up by use_gpu), else the CPU, with a warning when the job was
    given a GPU that torch cannot use (a CPU build of torch, or no driver)."""
    import torch

    if torch.cuda.is_available():
        use_gpu()
        return torch.device("cuda", 0)
    given = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    if given:
        print(f"warning: the job was given GPU {given} (CUDA_VISIBLE_DEVICES) but torch {torch.__version__} sees "
              f"none: running on the CPU", file=sys.stderr)
    use_cpu()
    return torch.device("cpu")


def load_model_for_job(path: Path | str, device=None):
    """pipeline.checkpoint.load_model's (model, info), read on the CPU, the model moved to `device` (default: the
    job's, job_device)."""
    from pipeline.checkpoint import load_model

    model, info = load_model(Path(path), "cpu")
    if device is None:
        device = job_device()   # sets up the CPU itself where it picks it
    elif str(device) == "cpu":
        use_cpu()
    return model.to(device), info


def main(argv: list[str]) -> int:
    """`python -m pipeline.device COMMAND...`: run COMMAND (torchrun, for a job on several GPUs) in place of this
    process once require_given_gpus passes; else one line and exit status 2, before torchrun starts any rank (each
    rank would print the line, and torchrun its failure report)."""
    from pipeline.errors import refused

    if not argv:
        print("usage: python -m pipeline.device COMMAND [ARG...]", file=sys.stderr)
        return 2
    status = refused(require_given_gpus)
    if status is not None:
        return status
    sys.stdout.flush()
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
