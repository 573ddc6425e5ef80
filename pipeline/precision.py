"""Arithmetic precision of training and decoding: float32, or bfloat16 autocast (weights, optimiser state and the
loss stay float32; matrix products run in bfloat16). "auto" takes bfloat16 where the device computes it natively."""
from __future__ import annotations

import contextlib
from functools import lru_cache
from pathlib import Path

import torch

from pipeline.errors import PipelineError
from pipeline.recipe import PRECISIONS as CHOICES

PRECISIONS = ("float32", "bfloat16")  # what "auto" resolves to
_CPU_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


@lru_cache(maxsize=1)
def cpu_has_bf16() -> bool:
    """Whether this CPU has bfloat16 instructions (avx512_bf16 or amx_bf16 in /proc/cpuinfo)."""
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8").split()
    except OSError:
        return False
    return any(flag in flags for flag in _CPU_BF16_FLAGS)


def resolve(choice: str, device: torch.device | str) -> str:
    """The precision `choice` means on `device`: "auto" -> bfloat16 on a CUDA device that supports it or a CPU
    with bfloat16 instructions, else float32; an explicit choice is kept."""
    if choice not in CHOICES:
        raise PipelineError(f"recipe.precision: expected one of {', '.join(CHOICES)}, got {choice!r}")
    if choice != "auto":
        return choice
    device = torch.device(device)
    if device.type == "cuda":
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float32"
    return "bfloat16" if device.type == "cpu" and cpu_has_bf16() else "float32"


def autocast(precision: str, device: torch.device | str):
    """Context running the block at `precision` (a resolved one) on `device`'s type."""
    if precision not in PRECISIONS:
        raise PipelineError(f"precision: expected one of {', '.join(PRECISIONS)} (resolved), got {precision!r}")
    if precision == "float32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=torch.device(device).type, dtype=torch.bfloat16)
