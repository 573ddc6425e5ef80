"""What a recipe names: its optimizer, learning-rate schedule, batches and loss denominator."""
from __future__ import annotations

import inspect
import math
from typing import Sequence

import torch

from pipeline.data.batch_plan import BatchPlan, sentence_plan, token_plan
from pipeline.errors import PipelineError
from pipeline.recipe import Recipe


def _eager(optimizer: type[torch.optim.Optimizer]) -> type[torch.optim.Optimizer]:
    """`optimizer` with its methods called without their torch.compile markers: those import torch._dynamo on first
    use, 1.5 s of every training job's start, and nothing here runs an optimizer under torch.compile. The same code
    computes the same bits (tests/train/test_train_builders.py)."""
    plain_step = inspect.unwrap(optimizer.step)

    def step(self, closure=None):
        with torch.no_grad():  # what step's decorator does besides marking graph breaks
            return plain_step(self, closure)

    methods = {name: inspect.unwrap(getattr(optimizer, name))
               for name in ("add_param_group", "zero_grad", "state_dict", "load_state_dict")}
    return type(optimizer.__name__, (optimizer,), {**methods, "step": step, "__module__": __name__})


Adam, Adadelta, SGD = _eager(torch.optim.Adam), _eager(torch.optim.Adadelta), _eager(torch.optim.SGD)


def build_optimizer(params, recipe: Recipe) -> torch.optim.Optimizer:
    """The optimizer a recipe names, at lr = recipe.lr (the scheduler sets each update's rate)."""
    if recipe.optimizer == "adam":
        # fused: one kernel per tensor on CPU and GPU; on the CPU its square root is the processor's exact one,
        # where the per-tensor and foreach updates call MKL's, whose last bit differs between processors
        # (benchmarks/cross_isa.py)
        return Adam(params, lr=recipe.lr, betas=recipe.adam_betas, eps=recipe.adam_eps, fused=True)
    # the dl4mt-style RNN recipes (paper scale): rho 0.95, eps 1e-6, lr 1.0; on the CPU its update takes MKL's square
    # root, so unlike Adam's its bits are not the same on every processor (no tiny recipe uses it)
    if recipe.optimizer == "adadelta":
        return Adadelta(params, lr=recipe.lr, rho=recipe.adadelta_rho, eps=recipe.adadelta_eps)
    if recipe.optimizer == "sgd":
        return SGD(params, lr=recipe.lr, momentum=recipe.sgd_momentum)
    raise PipelineError(f"recipe.optimizer: got {recipe.optimizer!r}; expected adam, adadelta or sgd")


def lr_at(step: int, recipe: Recipe) -> float:
    """inverse_sqrt's rate of update number `step` (1-based).

    lr * min(step / warmup, sqrt(warmup / step)) -- linear warmup to `lr` at step `warmup`, then decay ~ step^-0.5.
    This is Vaswani et al. (2017, eq. 3) d^-0.5 * min(step^-0.5, step * warmup^-1.5) with its peak
    d^-0.5 * warmup^-0.5 written as `lr` (THUMT's linear_warmup_rsqrt_decay). warmup = 0 means lr * step^-0.5
    (our choice).
    """
    if step < 1:
        raise ValueError(f"step counts from 1, got {step}")
    if recipe.warmup == 0:
        return recipe.lr / math.sqrt(step)
    return recipe.lr * min(step / recipe.warmup, math.sqrt(recipe.warmup / step))


class Scheduler:
    """Learning rate of each update; state_dict() is saved in the checkpoint so a resumed run continues exactly."""

    def __init__(self, recipe: Recipe):
        self.recipe = recipe

    def rate(self, step: int, epoch: int) -> float:
        """Rate of update `step` (1-based), taken in epoch `epoch` (0-based)."""
        raise NotImplementedError

    def validated(self, nll: float) -> None:
        """Called after every validation with its per-token NLL."""

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


class InverseSqrt(Scheduler):
    """Linear warmup, then inverse square root decay (lr_at)."""

    def rate(self, step: int, epoch: int) -> float:
        return lr_at(step, self.recipe)


class Constant(Scheduler):
    """lr throughout."""

    def rate(self, step: int, epoch: int) -> float:
        return self.recipe.lr


class HalveLastEpochs(Scheduler):
    """lr, halved at the start of each of the last halve_epochs of max_epochs epochs (Shu and Nakayama 2016:
    6 epochs, the last 3)."""

    def rate(self, step: int, epoch: int) -> float:
        first_halved = self.recipe.max_epochs - self.recipe.halve_epochs  # 0-based
        return self.recipe.lr * 0.5 ** max(0, epoch - first_halved + 1)


class HalveOnPlateau(Scheduler):
    """lr, halved each time plateau_patience validations in a row brought no lower validation NLL."""

    def __init__(self, recipe: Recipe):
        super().__init__(recipe)
        self.factor, self.best, self.bad = 1.0, math.inf, 0

    def rate(self, step: int, epoch: int) -> float:
        return self.recipe.lr * self.factor

    def validated(self, nll: float) -> None:
        if nll < self.best:
            self.best, self.bad = nll, 0
            return
        self.bad += 1
        if self.bad >= self.recipe.plateau_patience:
            self.factor, self.bad = self.factor * 0.5, 0

    def state_dict(self) -> dict:
        return {"factor": self.factor, "best": self.best, "bad": self.bad}

    def load_state_dict(self, state: dict) -> None:
        self.factor, self.best, self.bad = float(state["factor"]), float(state["best"]), int(state["bad"])



SCHEDULERS = {"inverse_sqrt": InverseSqrt, "constant": Constant, "halve_last_epochs": HalveLastEpochs,
              "halve_on_plateau": HalveOnPlateau}


def build_scheduler(recipe: Recipe) -> Scheduler:
    """The scheduler a recipe names."""
    return SCHEDULERS[recipe.schedule](recipe)


def build_batches(src_lens: Sequence[int], tgt_lens: Sequence[int], recipe: Recipe) -> BatchPlan:
    """The batches by recipe.batch_unit (batch_size padded tokens or batch_size pairs); .epoch(recipe.seed, n) gives
    epoch n's order."""
    make = token_plan if recipe.batch_unit == "tokens" else sentence_plan
    return make(src_lens, tgt_lens, recipe.batch_size)


def loss_denominator(recipe: Recipe, batch: Sequence[int], tgt_lengths) -> int:
    """What a global batch's summed loss is divided by: its target tokens (+ EOS) or its sentence pairs (dl4mt)."""
    if recipe.loss_norm == "sentences":
        return len(batch)
    return int(tgt_lengths[batch].sum()) + len(batch)

