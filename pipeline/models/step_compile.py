"""torch.compile of the RNN decoders' per-step functions (speed-up "compile", pipeline.speedups): the teacher-forced
loops of the conditional-GRU, RNNsearch and LSTM-attention decoders call one step per target position, dozens of small
kernels each; compiled, a step's elementwise work fuses into a few kernels, forward and backward.

CUDA tensors only (the CPU path, committed bit for bit, never compiles). One compiled callable per step function, made
on first use; the batch and length dimensions its caller names are dynamic from the first call (the sizes of the
layers stay static), so that bucketed batch and source lengths share one graph. Any failure of the compiled step
(compiling its forward, or its backward, which is compiled with the forward rather than in loss.backward())
falls back to the eager function for the rest of the process, with one warning line on stderr.
"""
from __future__ import annotations

import functools
import sys
from typing import Any, Callable

import torch
from torch import Tensor, nn

from pipeline import speedups

_steps: dict[Callable, "CompiledStep"] = {}


BATCH, SEQUENCE = (0,), (0, 1)  # the dynamic dimensions of a [B,...] and a [B,L,...] argument
# calls of each grad mode whose arguments are marked: the first steps of the first batch, where a step's graphs are
# compiled (the first step's own where its state differs: the LSTM's c_0 needs no grad, a state memory of one entry)
MARKED_CALLS = 3


def step_function(fn: Callable, module: nn.Module, probe: Tensor, dims: tuple[tuple[int, ...], ...]) -> Callable:
    """fn with `module` bound as its first argument: compiled when speed-up "compile" holds for `probe` (a CUDA
    tensor), else fn itself (eager). dims: for each further argument, its dynamic dimensions (BATCH, SEQUENCE or
    (); for a tuple of tensors, those of each). Eager where a submodule has a hook (zhang2018's source attention
    reads each step's weights by one): hooks see every call as they would without the speed-up."""
    if not speedups.enabled("compile", probe) or _hooked(module):
        return functools.partial(fn, module)
    step = _steps.get(fn)
    if step is None:
        step = _steps[fn] = CompiledStep(fn)
    return functools.partial(fn, module) if step.failed else functools.partial(step, dims, module)


def _hooked(module: nn.Module) -> bool:
    """Whether `module` or a submodule has a forward (pre-)hook."""
    return any(m._forward_hooks or m._forward_pre_hooks for m in module.modules())


def reset() -> None:
    """Forget every compiled step and failure (tests)."""
    _steps.clear()


class CompiledStep:
    """fn compiled lazily (torch.compile, inductor, its backward compiled with its forward); on any error fn runs
    eagerly from then on."""

    def __init__(self, fn: Callable):
        self.fn = fn
        self.name = getattr(fn, "__qualname__", repr(fn))
        self.compiled: Callable | None = None
        self.failed = False
        self.marked = {True: 0, False: 0}  # calls that marked their dimensions, by grad mode

    def __call__(self, dims: tuple[tuple[int, ...], ...], *args: Any) -> Any:
        if self.failed:
            return self.fn(*args)
        try:
            if self.compiled is None:
                self.compiled = torch.compile(self.fn, backend=inductor_backward_now)
            mode = torch.is_grad_enabled()
            if self.marked[mode] < MARKED_CALLS:  # the first steps compile each mode's graphs; later calls need no
                self.marked[mode] += 1            # marks (and a rare recompile gets torch's automatic dynamic shapes)
                _mark_dynamic(args[1:], dims)
            return self.compiled(*args)
        except Exception as error:  # noqa: BLE001 - any failure of the compiled path: eager from here on
            self._fail(error)
            return self.fn(*args)

    def _fail(self, error: Exception) -> None:
        self.failed = True
        causes = [error]
        while len(causes) < 4 and (cause := getattr(causes[-1], "inner_exception", None) or causes[-1].__cause__):
            causes.append(cause)  # dynamo's BackendCompilerFailed holds the backend's error
        what = " <- ".join(f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:200]}" for e in causes)
        print(f"warning: torch.compile of {self.name} failed ({what}); running it eagerly (speed-up 'compile'; "
              f"PIPELINE_SPEEDUPS=-compile turns it off)", file=sys.stderr, flush=True)


def inductor_backward_now(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
    """torch.compile's inductor backend, compiling a graph's backward together with its forward (not lazily at the
    first backward, inside loss.backward(), where a failure could no longer fall back to eager)."""
    from torch._functorch import config
    from torch._inductor.compile_fx import compile_fx
    if not hasattr(config, "force_non_lazy_backward_lowering"):  # older torch: backward as torch compiles it
        return compile_fx(gm, example_inputs)
    with config.patch(force_non_lazy_backward_lowering=True):
        return compile_fx(gm, example_inputs)


def _mark_dynamic(args: tuple, dims: tuple[tuple[int, ...], ...]) -> None:
    """Mark the named dimensions of the arguments dynamic (no error where one gets specialised, as a size of 1)."""
    import torch._dynamo
    for arg, named in zip(args, dims):
        for tensor in (arg if isinstance(arg, (tuple, list)) else (arg,)):
            if isinstance(tensor, Tensor) and named:
                torch._dynamo.maybe_mark_dynamic(tensor, list(named))
