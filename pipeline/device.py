"""The device a step runs its model on: the job's GPU when it was given one, else the CPU.

A Slurm job asking for a GPU sees it (CUDA_VISIBLE_DEVICES); the rules hide every GPU from a job that asks for
none (workflows/rules/common.smk gpu_env), so a tiny build stays on the CPU code path on a machine with GPUs too.
The trainer picks its device the same way (pipeline/train/distributed.py, one GPU per rank).
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
    return torch.device("cpu")


def load_model_for_job(path: Path | str, device=None):
    """pipeline.checkpoint.load_model's (model, info), read on the CPU, the model moved to `device` (default: the
    job's, job_device)."""
    from pipeline.checkpoint import load_model

    model, info = load_model(Path(path), "cpu")
    return model.to(job_device() if device is None else device), info
