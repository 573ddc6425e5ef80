"""GPU speed-ups that leave the mathematics unchanged, each one switchable so that one benchmark run measures every
A/B on the same GPU (benchmarks/gpu.py --ablate).

Every speed-up applies to CUDA tensors only: the CPU code path, whose tiny builds are committed bit for bit, never
takes one. DEFAULT are on unless PIPELINE_SPEEDUPS says otherwise: "all", "none", "name,name" (exactly those), or
"-name,+name" (the default less or plus some); `configure` does the same in a process (the benchmark). The default is
what one H200 measured faster (docs/performance.md (k)): fused_qkv made a Base update 7% slower, bf16_residual and
compile gave nothing measurable (Big: -2% compiled), so they are there to measure, off until they pay.
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
DEFAULT = frozenset({"no_sync", "native_dropout", "static_search"})
ENV = "PIPELINE_SPEEDUPS"


def parse(text: str | None) -> frozenset[str]:
    """The speed-ups a PIPELINE_SPEEDUPS value leaves on: "" or "default" DEFAULT, "all" every one, "none" none,
    "a,b" only a and b, "-a,+b" DEFAULT without a and with b."""
    text = (text or "").strip()
    if text in ("", "default"):
        return DEFAULT
    if text in ("all", "none"):
        return frozenset(SPEEDUPS) if text == "all" else frozenset()
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n.lstrip("-+") for n in names if n.lstrip("-+") not in SPEEDUPS]
    if unknown:
        raise PipelineError(f"{ENV}: unknown speed-up(s) {', '.join(unknown)}; expected 'default', 'all', 'none' or "
                            f"names (each optionally with a leading '-' or '+') of: {', '.join(SPEEDUPS)}")
    signed = [n[0] in "-+" for n in names]
    if all(signed):
        return (DEFAULT - {n[1:] for n in names if n[0] == "-"}) | {n[1:] for n in names if n[0] == "+"}
    if any(signed):
        raise PipelineError(f"{ENV}: expected either names to keep or '-name'/'+name' changes, not both: {text!r}")
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
