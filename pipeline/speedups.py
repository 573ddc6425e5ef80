"""GPU speed-ups that leave the mathematics unchanged, each one switchable so that one benchmark run measures every
A/B on the same GPU (benchmarks/gpu.py --ablate).

Every speed-up applies to CUDA tensors only: the CPU code path, whose tiny builds are committed bit for bit, never
takes one. All are on by default; PIPELINE_SPEEDUPS turns them off ("none", or "-name,-name" to drop some), and
`configure` does the same in a process (the benchmark).
"""
from __future__ import annotations

import contextlib
import os
from typing import Iterator

from pipeline.errors import PipelineError

SPEEDUPS = {
    "no_sync": "no host-device synchronisation inside a training update (losses stay on the device until logged)",
    "fused_qkv": "one matrix product for the query, key and value projections of self-attention",
    "native_dropout": "torch's fused dropout kernel on the GPU instead of the portable 16-bit masks",
    "bf16_residual": "LayerNorm outputs in bfloat16 under bfloat16 autocast (no float32 residual stream to cast)",
    "compile": "torch.compile of the model's layers (Transformer layers, RNN steps) on bucketed shapes",
    "static_search": "Transformer beam search on fixed shapes: a preallocated key/value cache, one CUDA graph a step",
}
ENV = "PIPELINE_SPEEDUPS"


def parse(text: str | None) -> frozenset[str]:
    """The speed-ups a PIPELINE_SPEEDUPS value leaves on: "" or "all" every one, "none" none, "-a,-b" all but a
    and b, "a,b" only a and b."""
    text = (text or "").strip()
    if text in ("", "all"):
        return frozenset(SPEEDUPS)
    if text == "none":
        return frozenset()
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n.lstrip("-") for n in names if n.lstrip("-") not in SPEEDUPS]
    if unknown:
        raise PipelineError(f"{ENV}: unknown speed-up(s) {', '.join(unknown)}; expected 'all', 'none' or names "
                            f"(optionally each with a leading '-') of: {', '.join(SPEEDUPS)}")
    if all(n.startswith("-") for n in names):
        return frozenset(SPEEDUPS) - {n[1:] for n in names}
    if any(n.startswith("-") for n in names):
        raise PipelineError(f"{ENV}: expected either names to keep or '-names' to drop, not both: {text!r}")
    return frozenset(names)


_enabled: frozenset[str] | None = None
_devices = ("cuda",)  # where the speed-ups apply; tests add "cpu" (only(..., cpu=True)) to check them here


def enabled(name: str, tensor_or_device=None) -> bool:
    """Whether speed-up `name` is on (and, given a tensor or device, whether that is a CUDA one)."""
    global _enabled
    if name not in SPEEDUPS:
        raise KeyError(name)
    if _enabled is None:
        _enabled = parse(os.environ.get(ENV))
    if name not in _enabled:
        return False
    if tensor_or_device is None:
        return True
    device = getattr(tensor_or_device, "device", tensor_or_device)
    return getattr(device, "type", str(device)) in _devices


def configure(names) -> None:
    """Turn on exactly `names` (an iterable, or a PIPELINE_SPEEDUPS string) in this process."""
    global _enabled
    _enabled = parse(names) if isinstance(names, str) else frozenset(names)
    unknown = _enabled - set(SPEEDUPS)
    if unknown:
        raise PipelineError(f"unknown speed-up(s): {', '.join(sorted(unknown))}")


@contextlib.contextmanager
def only(names, cpu: bool = False) -> Iterator[None]:
    """Run the block with exactly `names` on (cpu: on the CPU too, for tests), then restore the previous setting."""
    global _enabled, _devices
    before = _enabled, _devices
    configure(names)
    _devices = ("cuda", "cpu") if cpu else ("cuda",)
    try:
        yield
    finally:
        _enabled, _devices = before
