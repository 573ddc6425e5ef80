"""The "compile" speed-up (pipeline/speedups.py): a module's forward through torch.compile on dynamic shapes, so that
bucketed batches share one compiled kernel set; GPUs only, and eager again (with one warning) where it fails."""
from __future__ import annotations

import sys

import torch
from torch import Tensor, nn

from pipeline import speedups

_EAGER = "eager"


def compiled(module: nn.Module, like: Tensor, allowed: bool = True):
    """`module` itself, or its compiled twin (made once, kept outside the module's parameters and state) when the
    compile speed-up is on for `like`'s device and `allowed`."""
    if not allowed or not speedups.enabled("compile", like):
        return module
    twin = module.__dict__.get("_compiled_twin")
    if twin is None:
        twin = _Guarded(module)
        module.__dict__["_compiled_twin"] = twin  # a plain attribute: not a submodule, not in state_dict
    return module if twin.mode == _EAGER else twin


class _Guarded:
    """Calls the compiled module; if compiling fails, warns once and calls the module eagerly from then on."""

    def __init__(self, module: nn.Module):
        self.module = module
        from pipeline.models.step_compile import inductor_backward_now  # a backward that fails falls back too
        self.fn = torch.compile(module, dynamic=True, backend=inductor_backward_now)
        self.mode = "compiled"

    def __call__(self, *args, **kwargs):
        if self.mode == _EAGER:
            return self.module(*args, **kwargs)
        try:
            return self.fn(*args, **kwargs)
        except Exception as error:  # a compiler failure must not cost the run: same function, eager
            self.mode = _EAGER
            print(f"warning: torch.compile of {type(self.module).__name__} failed ({type(error).__name__}: "
                  f"{str(error).splitlines()[0] if str(error) else ''}); running it eagerly "
                  f"(PIPELINE_SPEEDUPS=-compile turns compiling off)", file=sys.stderr)
            return self.module(*args, **kwargs)
