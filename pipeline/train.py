"""One trainer for every model family: it builds what a recipe (pipeline/recipe.py) names -- Adam, Adadelta or SGD;
inverse-sqrt, constant or halving schedules; token or sentence batches; per-token or per-sentence loss; stop by
updates or epochs; keep the last, best or averaged weights; float32 or bfloat16 autocast -- with label smoothing,
gradient clipping, atomic checkpoints and bitwise-exact resume, DDP (gloo on CPU, nccl on GPU), learning curves
(dvclive TSVs) and tqdm."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import random
import shutil
import socket
import sys
import time
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
import torch.distributed as dist

from pipeline.checkpoint import average_checkpoints, load_file, model_record, save_atomic
from pipeline.data.batching import encode_source, make_batch, pad, sentence_batches, token_batches
from pipeline.errors import PipelineError
from pipeline.fileio import atomic_open
from pipeline.loss import smoothed_loss
from pipeline.models.registry import count_parameters, init_from
from pipeline.precision import autocast, resolve
from pipeline.recipe import Recipe

__all__ = ["Recipe", "fit", "build_optimizer", "build_scheduler", "build_batches", "lr_at", "seed_everything",
           "within_length"]

STATE_FORMAT = "nmt-repro-train-state/2"
# Recipe keys that may change between a checkpoint and its resumption: cadence and how long to train, unless the
# schedule depends on them (resumable_keys).
RESUMABLE_CHANGES = ("checkpoint_every", "valid_every", "log_every", "max_steps", "max_epochs")
META_KEYS = ("model", "src_vocab_size", "tgt_vocab_size")
COMPLETE = "COMPLETE"  # marker in run_dir: the run finished and wrote its outputs
SNAPSHOTS = "average"  # run_dir subfolder of the checkpoints kept for keep: average


def resumable_keys(recipe: Recipe) -> tuple[str, ...]:
    """RESUMABLE_CHANGES minus the keys this recipe's schedule depends on."""
    fixed = {"halve_last_epochs": ("max_epochs",), "halve_on_plateau": ("valid_every",)}.get(recipe.schedule, ())
    return tuple(k for k in RESUMABLE_CHANGES if k not in fixed)


# --------------------------------------------------------------------------------------------- builders
def build_optimizer(params, recipe: Recipe) -> torch.optim.Optimizer:
    """The optimizer a recipe names, at lr = recipe.lr (the scheduler sets each update's rate)."""
    if recipe.optimizer == "adam":
        return torch.optim.Adam(params, lr=recipe.lr, betas=recipe.adam_betas, eps=recipe.adam_eps,
                                foreach=True)  # one fused loop over the parameters (CPU default: one per tensor)
    if recipe.optimizer == "adadelta":  # the dl4mt-style RNN recipes: rho 0.95, eps 1e-6, lr 1.0
        return torch.optim.Adadelta(params, lr=recipe.lr, rho=recipe.adadelta_rho, eps=recipe.adadelta_eps)
    if recipe.optimizer == "sgd":
        return torch.optim.SGD(params, lr=recipe.lr, momentum=recipe.sgd_momentum)
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


def build_batches(src_lens: Sequence[int], tgt_lens: Sequence[int], recipe: Recipe, *, epoch: int,
                  shuffle: bool = True) -> list[list[int]]:
    """One epoch's batches (index lists) by recipe.batch_unit: batch_size padded tokens or batch_size pairs."""
    make = token_batches if recipe.batch_unit == "tokens" else sentence_batches
    return make(src_lens, tgt_lens, recipe.batch_size, seed=recipe.seed, epoch=epoch, shuffle=shuffle)


def loss_denominator(recipe: Recipe, batch: Sequence[int], tgt_side) -> int:
    """What a global batch's summed loss is divided by: its target tokens (+ EOS) or its sentence pairs (dl4mt)."""
    if recipe.loss_norm == "sentences":
        return len(batch)
    return sum(len(tgt_side[i]) + 1 for i in batch)


def validation_bleu(hyps: Sequence[Sequence[int]], refs: Sequence[Sequence[int]]) -> float:
    """sacrebleu corpus BLEU of id sequences written as space-joined id strings, tokenize="none" (our choice:
    validation BLEU on the training units (subword ids), no detokenisation; exp smoothing, sacrebleu's default)."""
    from sacrebleu.metrics import BLEU

    def text(ids):
        return " ".join(str(i) for i in ids)

    return BLEU(tokenize="none", force=True).corpus_score([text(h) for h in hyps], [[text(r) for r in refs]]).score


# ------------------------------------------------------------------------------------------ randomness
def seed_everything(seed: int) -> None:
    """Seed python, numpy and torch (call before building the model so its init is reproducible)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def get_rng_state() -> dict:
    """This process's python/numpy/torch(/cuda) generator states, in types torch.load(weights_only) accepts."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    state = {"python": random.getstate(), "torch": torch.get_rng_state(),
             "numpy": (kind, torch.from_numpy(keys.astype(np.int64)), int(pos), int(has_gauss), float(cached))}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state()
    return state


def set_rng_state(state: dict) -> None:
    """Restore what get_rng_state captured."""
    random.setstate(state["python"])
    torch.set_rng_state(state["torch"].cpu())
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"].cpu())


def fingerprint(*corpora) -> str:
    """sha256 of id sequences (train and valid), so a resume never continues on different data."""
    digest = hashlib.sha256()
    for corpus in corpora:
        for side in corpus:
            digest.update(len(side).to_bytes(8, "little"))
            for seq in side:
                digest.update(len(seq).to_bytes(4, "little"))
                digest.update(array("q", seq).tobytes())
    return digest.hexdigest()


# ------------------------------------------------------------------------------------------ distributed
class Dist:
    """Rank, world size and device; explicit gradient all-reduce over torch.distributed.

    Our choice: one flat all-reduce of the summed gradients instead of the DDP module wrapper -- the same
    arithmetic, but a rank whose share of a batch is empty and parameters unused in a step need no special
    casing. Each rank's loss is divided by the *global* batch's token or sentence count (loss_denominator), so the
    summed gradient equals the single-process gradient of the whole batch.
    """

    def __init__(self):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        local = int(os.environ.get("LOCAL_RANK", str(self.rank)))
        cuda = torch.cuda.is_available()
        self.device = torch.device("cuda", local % max(torch.cuda.device_count(), 1)) if cuda else torch.device("cpu")
        self.owns_group = False
        if self.world > 1 and not dist.is_initialized():
            if cuda:
                torch.cuda.set_device(self.device)
            dist.init_process_group("nccl" if cuda else "gloo")
            self.owns_group = True

    @property
    def main(self) -> bool:
        return self.rank == 0

    def share(self, batch: list[int]) -> list[int]:
        """This rank's disjoint part of a global batch (round robin)."""
        return batch[self.rank :: self.world]

    def broadcast_model(self, model: torch.nn.Module) -> None:
        """Give every rank rank 0's parameters and buffers."""
        if self.world > 1:
            for tensor in list(model.parameters()) + list(model.buffers()):
                dist.broadcast(tensor.data, src=0)

    def reduce_step(self, params: list[torch.nn.Parameter], stats: list[float]) -> list[float]:
        """Sum gradients and `stats` over ranks; a parameter unused on every rank keeps grad None."""
        if self.world == 1:
            return stats
        grads = [p.grad.reshape(-1) if p.grad is not None else p.new_zeros(p.numel()) for p in params]
        used = [float(p.grad is not None) for p in params]
        flat = torch.cat(grads + [torch.tensor(used + stats, device=self.device, dtype=grads[0].dtype)])
        dist.all_reduce(flat)
        offset = 0
        for p in params:
            n = p.numel()
            p.grad = flat[offset : offset + n].view_as(p).clone()
            offset += n
        tail = flat[offset:].tolist()
        for p, u in zip(params, tail[: len(params)]):
            if u == 0:
                p.grad = None
        return tail[len(params) :]

    def all_sum(self, values: list[float]) -> list[float]:
        """Sum a few floats over ranks (float64)."""
        if self.world == 1:
            return values
        t = torch.tensor(values, dtype=torch.float64, device=self.device)
        dist.all_reduce(t)
        return t.tolist()

    def gather(self, obj) -> list:
        """Every rank's `obj`, in rank order."""
        if self.world == 1:
            return [obj]
        out = [None] * self.world
        dist.all_gather_object(out, obj)
        return out

    def barrier(self) -> None:
        if self.world > 1:
            dist.barrier()

    def close(self) -> None:
        if self.owns_group:
            dist.destroy_process_group()


# ---------------------------------------------------------------------------------------------- logging
class CurveLog:
    """dvclive learning curves in run_dir/dvclive (resume-safe) plus a tqdm bar; rank 0 only."""

    def __init__(self, run_dir: Path, resume_step: int, total_steps: int, progress: bool):
        from tqdm import tqdm

        self.dir = run_dir / "dvclive"
        if resume_step > 0:
            _truncate_curves(self.dir, resume_step)
        self.live = _local_live(self.dir, resume=resume_step > 0)
        self.bar = tqdm(total=total_steps, initial=resume_step, disable=not progress, desc="train",
                        dynamic_ncols=True, file=sys.stderr)

    def log(self, step: int, values: dict, bar: dict | None = None) -> None:
        """Append `values` (name -> float) at `step` to the curves and refresh the summary."""
        self.live.step = step
        for name, value in values.items():
            self.live.log_metric(name, float(value))
        self.live.make_summary()
        if bar:
            self.bar.set_postfix(bar, refresh=False)

    def advance(self) -> None:
        self.bar.update(1)

    def note(self, text: str) -> None:
        """One line for the job log (above the bar when there is one)."""
        self.bar.write(text, file=sys.stderr)

    def close(self) -> None:
        self.bar.close()

    def publish(self, curves_dir: Path) -> None:
        """Replace curves_dir with the curve files (train/*.tsv, valid/*.tsv): copy to a temp dir, then rename."""
        curves_dir = Path(curves_dir)
        tmp = curves_dir.with_name(f".{curves_dir.name}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(self.dir / "plots" / "metrics", tmp)
        shutil.rmtree(curves_dir, ignore_errors=True)
        os.replace(tmp, curves_dir)


def _local_live(live_dir: Path, resume: bool):
    """A dvclive Live that only writes files: no DVC repo lookup (which would `dvc init` a bare git
    checkout and stage files), no dvc.yaml, no experiment saving. The curves are Snakemake outputs."""
    from dvclive import Live

    class LocalLive(Live):
        def _init_dvc(self):
            self._dvc_file = self._init_dvc_file()

    return LocalLive(dir=str(live_dir), resume=resume, save_dvc_exp=False, dvcyaml=None)


def _truncate_curves(live_dir: Path, step: int) -> None:
    """Prepare curves for resuming at `step`: drop rows logged after it (or cut short by a kill) and an
    unreadable summary (dvclive rewrites it at the next log)."""
    for tsv in sorted((live_dir / "plots" / "metrics").rglob("*.tsv")) if live_dir.exists() else []:
        lines = tsv.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
        if not lines or not lines[0].endswith("\n"):
            tsv.unlink()
            continue
        header = lines[0].rstrip("\r\n").split("\t")
        kept = [lines[0]] + [ln for ln in lines[1:] if _row_step(ln, header) <= step]
        with atomic_open(tsv) as handle:
            handle.writelines(kept)
    summary = live_dir / "metrics.json"
    try:
        json.loads(summary.read_text(encoding="utf-8"))
    except FileNotFoundError:
        pass
    except ValueError:
        summary.unlink()


def _row_step(line: str, header: list[str]) -> float:
    """Step of a complete TSV row; +inf for a row cut short by a kill (so it is dropped)."""
    fields = line.rstrip("\r\n").split("\t")
    if not line.endswith("\n") or len(fields) != len(header) or "step" not in header:
        return math.inf
    try:
        return int(fields[header.index("step")])
    except ValueError:
        return math.inf


# ---------------------------------------------------------------------------------------------- trainer
@dataclass
class Progress:
    """Where training is and what it has accumulated; saved in every checkpoint."""

    step: int = 0
    epoch: int = 0
    position: int = 0            # batches of `epoch` already consumed
    lr: float = math.nan         # rate of the last update
    best_valid: float = math.inf  # lowest validation NLL so far (best.pt) and its step
    best_step: int = 0
    best_bleu: float = -math.inf  # highest validation BLEU so far (best_bleu.pt, keep: best_bleu) and its step
    best_bleu_step: int = 0
    snapshots: list = dataclasses.field(default_factory=list)  # steps of the checkpoints kept for keep: average
    window: list = dataclasses.field(default_factory=lambda: [0.0, 0.0, 0.0, 0])  # loss, nll, tokens, steps
    last_train: tuple = (math.nan, math.nan)     # per-token loss, nll of the last logged window
    last_valid: tuple = (math.nan, math.nan)     # per-token loss, nll at the last validation
    valid_step: int = 0
    tokens: float = 0.0           # target tokens trained on, all ranks
    elapsed: float = 0.0          # seconds spent training, summed over resumptions


def run_key(meta: dict, recipe: Recipe, train, valid) -> dict:
    """What identifies a run: model/meta, data fingerprint, the recipe but for its resumable keys."""
    skip = resumable_keys(recipe)
    return {"meta": _plain(meta), "data": fingerprint(train, valid),
            "recipe": {k: v for k, v in _plain(recipe.to_dict()).items() if k not in skip}}


def _beyond(progress: dict, recipe: Recipe) -> str | None:
    """Why a checkpoint's progress is past the recipe's stopping point, or None."""
    if recipe.max_steps and progress["step"] > recipe.max_steps:
        return (f"already at step {progress['step']}, beyond recipe.max_steps {recipe.max_steps}; expected "
                f"max_steps >= the checkpoint's step")
    if recipe.max_epochs and (progress["epoch"], progress["position"]) > (recipe.max_epochs, 0):
        return (f"already in epoch {progress['epoch'] + 1}, beyond recipe.max_epochs {recipe.max_epochs}; "
                f"expected max_epochs >= the checkpoint's epochs")
    return None


class Trainer:
    """Runs the loop of fit(); see fit() for the contract."""

    def __init__(self, model, train, valid, recipe: Recipe, run_dir: Path, meta: dict, dist_: Dist,
                 progress: bool, key: dict):
        self.dropped_too_long: dict = {}  # set by fit (within_length)
        self.recipe, self.run_dir, self.meta, self.dist = recipe, Path(run_dir), meta, dist_
        self.precision = meta["precision"]
        self.model = model.to(dist_.device)
        self.train_src, self.train_tgt = train
        self.valid_src, self.valid_tgt = valid
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = build_optimizer(self.params, recipe)
        self.scheduler = build_scheduler(recipe)
        self.state = Progress()
        self.run_key = key
        self.progress = progress
        self.resumed_from = 0
        self.fresh_params: list[str] = []
        self.log: CurveLog | None = None
        self._window_seconds = 0.0
        self._epoch_batches: tuple[int, list[list[int]]] | None = None

    # ---- start / resume
    def start(self, init_state: dict | None) -> None:
        """Resume from run_dir/last.pt if it exists, else start fresh (optionally from a baseline)."""
        last = self.run_dir / "last.pt"
        if last.exists():
            self._resume(load_file(last, self.dist.device), last)
        else:
            if self.dist.main:  # leftovers of an attempt killed before its first checkpoint
                for stale in ("dvclive", SNAPSHOTS, "best.pt", "best_bleu.pt"):
                    path = self.run_dir / stale
                    if path.is_dir():
                        shutil.rmtree(path)
                    else:
                        path.unlink(missing_ok=True)
            if init_state is not None:
                self.fresh_params = list(init_from(self.model, init_state))
            self.dist.broadcast_model(self.model)
            torch.manual_seed(self.recipe.seed + 100_003 * self.dist.rank)  # dropout differs per rank
            random.seed(self.recipe.seed)
            np.random.seed(self.recipe.seed % 2**32)
        r = self.recipe
        total = r.max_steps or r.max_epochs * len(self._batches(0))
        self.log = CurveLog(self.run_dir, self.state.step, total, self.progress) if self.dist.main else None

    def _resume(self, ckpt: dict, path: Path) -> None:
        """Load weights, optimizer, scheduler, progress and RNG states; refuse a checkpoint of a different run."""
        if ckpt.get("format") != STATE_FORMAT:
            raise PipelineError(f"{path}: not a training state of format {STATE_FORMAT}; delete {self.run_dir} "
                                "to start this run from scratch")
        diffs = _differences(ckpt["run_key"], self.run_key)
        if diffs:
            raise PipelineError(f"{path}: written by a different run ({'; '.join(diffs)}); expected the same model, "
                                f"recipe and data. Delete {self.run_dir} to start this run from scratch")
        beyond = _beyond(ckpt["progress"], self.recipe)
        if beyond:
            raise PipelineError(f"{path}: {beyond}")
        self.model.load_state_dict(ckpt["weights"])
        self.optimizer.load_state_dict(ckpt["optimizer"])
        self.scheduler.load_state_dict(ckpt["scheduler"])
        self.state = Progress(**ckpt["progress"])
        self.fresh_params = list(ckpt["fresh_parameters"])
        self.resumed_from = self.state.step
        if self.dist.main:  # snapshots written after this checkpoint by the killed attempt
            for path_ in sorted((self.run_dir / SNAPSHOTS).glob("*.pt")):
                if path_.name not in {_snapshot_name(s) for s in self.state.snapshots}:
                    path_.unlink()
        rngs = ckpt["rng"]
        if len(rngs) == self.dist.world:
            set_rng_state(rngs[self.dist.rank])
        else:  # different world size: arithmetic is the same, dropout masks are not (not bitwise)
            print(f"warning: {path} was written by {len(rngs)} processes, now {self.dist.world}; "
                  "random states reseeded, resume is not bitwise exact", file=sys.stderr)
            torch.manual_seed(self.recipe.seed + 100_003 * self.dist.rank + self.state.step)

    # ---- one update
    def _batches(self, epoch: int) -> list[list[int]]:
        if self._epoch_batches is None or self._epoch_batches[0] != epoch:
            batches = build_batches([len(s) for s in self.train_src], [len(t) for t in self.train_tgt],
                                    self.recipe, epoch=epoch)
            self._epoch_batches = (epoch, batches)
        return self._epoch_batches[1]

    def _forward_sums(self, indices: list[int], src_side, tgt_side):
        """(loss sum, nll sum, tokens) of this rank's share of a batch; tensors keep their graph."""
        src, tgt_in, tgt_out = (t.to(self.dist.device) for t in
                                make_batch([src_side[i] for i in indices], [tgt_side[i] for i in indices]))
        with autocast(self.precision, self.dist.device):
            features = self.model.features(src, tgt_in)
            return smoothed_loss(features.reshape(-1, features.size(-1)), self.model.output_layer,
                                 tgt_out.reshape(-1), self.recipe.label_smoothing)

    def train_step(self, batch: list[int]) -> tuple[float, float, int]:
        """One optimizer update on a global batch; returns its summed (loss, nll, tokens) over all ranks.

        Every rank divides its share's summed loss by the global batch's denominator (loss_norm: target tokens or
        sentence pairs), so the all-reduced gradient is the single-process gradient of the whole batch."""
        self.model.train()
        total_tokens = sum(len(self.train_tgt[i]) + 1 for i in batch)
        denominator = loss_denominator(self.recipe, batch, self.train_tgt)
        share = self.dist.share(batch)
        loss_sum = nll_sum = 0.0
        if share:
            loss, nll, _ = self._forward_sums(share, self.train_src, self.train_tgt)
            (loss / denominator).backward()
            loss_sum, nll_sum = loss.item(), nll.item()
        loss_sum, nll_sum = self.dist.reduce_step(self.params, [loss_sum, nll_sum])
        if not math.isfinite(loss_sum):
            raise FloatingPointError(f"training loss is {loss_sum} at step {self.state.step + 1}; "
                                     f"expected a finite loss (lower recipe.lr or check the data); "
                                     f"{self.run_dir / 'last.pt'} holds the last good state")
        if self.recipe.clip_norm > 0:
            torch.nn.utils.clip_grad_norm_(self.params, self.recipe.clip_norm)
        lr = self.scheduler.rate(self.state.step + 1, self.state.epoch)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.state.lr = lr
        return loss_sum, nll_sum, total_tokens

    def _valid_batches(self) -> list[list[int]]:
        return build_batches([len(s) for s in self.valid_src], [len(t) for t in self.valid_tgt], self.recipe,
                             epoch=0, shuffle=False)

    @torch.no_grad()
    def validate(self) -> tuple[float, float]:
        """Per-token (smoothed loss, nll) on the validation set, summed over ranks."""
        self.model.eval()
        sums = [0.0, 0.0, 0.0]
        for batch in self._valid_batches():
            share = self.dist.share(batch)
            if share:
                loss, nll, n = self._forward_sums(share, self.valid_src, self.valid_tgt)
                sums = [sums[0] + loss.item(), sums[1] + nll.item(), sums[2] + n]
        loss, nll, n = self.dist.all_sum(sums)
        return loss / n, nll / n

    def validate_bleu(self) -> float:
        """BLEU of greedy translations of the validation set (validation_bleu); each rank decodes its share."""
        from pipeline.search import greedy

        hyps: dict[int, list[int]] = {}
        for batch in self._valid_batches():
            share = self.dist.share(batch)
            if share:
                src = pad([encode_source(self.valid_src[i]) for i in share]).to(self.dist.device)
                with autocast(self.precision, self.dist.device):
                    hyps.update(zip(share, greedy(self.model, src)))
        merged = {i: h for part in self.dist.gather(hyps) for i, h in part.items()}
        return validation_bleu([merged[i] for i in range(len(self.valid_src))], self.valid_tgt)

    # ---- bookkeeping
    def _record(self, kept: dict | None = None, step: int | None = None) -> dict:
        return model_record(self.model, self.meta, self.state.step if step is None else step, kept)

    def save_state(self) -> None:
        """Atomically write run_dir/last.pt (rank 0), with every rank's random state; for keep: average also
        the weights of this checkpoint (run_dir/average/, the last average_last kept)."""
        s = self.state
        rngs = self.dist.gather(get_rng_state())
        if self.recipe.keep == "average" and s.snapshots[-1:] != [s.step]:
            s.snapshots = (s.snapshots + [s.step])[-self.recipe.average_last:]
            if self.dist.main:
                save_atomic(self._record(), self.run_dir / SNAPSHOTS / _snapshot_name(s.step))
        if self.dist.main:
            save_atomic({
                "format": STATE_FORMAT, "run_key": self.run_key,
                "weights": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(), "fresh_parameters": list(self.fresh_params),
                "progress": dataclasses.asdict(s), "rng": rngs, "world_size": self.dist.world,
            }, self.run_dir / "last.pt")
            keep = {_snapshot_name(step) for step in s.snapshots}
            for path in sorted((self.run_dir / SNAPSHOTS).glob("*.pt")):
                if path.name not in keep:
                    path.unlink()

    def _validate_and_keep_best(self) -> None:
        s = self.state
        loss, nll = self.validate()
        s.last_valid, s.valid_step = (loss, nll), s.step
        self.scheduler.validated(nll)
        values = {"valid/loss": loss, "valid/nll": nll, "valid/ppl": math.exp(min(nll, 50))}
        if nll < s.best_valid:
            s.best_valid, s.best_step = nll, s.step
            if self.dist.main:
                save_atomic({**self._record(), "valid_nll": nll}, self.run_dir / "best.pt")
        if self.recipe.keep == "best_bleu":
            bleu = values["valid/bleu"] = self.validate_bleu()
            if bleu > s.best_bleu:
                s.best_bleu, s.best_bleu_step = bleu, s.step
                if self.dist.main:
                    save_atomic({**self._record(), "valid_bleu": bleu}, self.run_dir / "best_bleu.pt")
        if self.log:
            self.log.log(s.step, values)
            rate = s.tokens / s.elapsed if s.elapsed else 0.0
            bleu = f", BLEU {values['valid/bleu']:.2f}" if "valid/bleu" in values else ""
            self.log.note(f"step {s.step} (epoch {s.epoch + 1}): train loss {s.last_train[0]:.3f}, valid loss "
                          f"{loss:.3f} (ppl {math.exp(min(nll, 50)):.1f}{bleu}), {rate:.0f} tokens/s")

    def _log_window(self) -> None:
        s = self.state
        loss, nll, tokens, steps = s.window
        rate = tokens / max(self._window_seconds, 1e-9)
        self._window_seconds = 0.0
        s.last_train = (loss / tokens, nll / tokens)
        s.window = [0.0, 0.0, 0.0, 0]
        if self.log:
            self.log.log(s.step, {"train/loss": loss / tokens, "train/nll": nll / tokens, "train/lr": s.lr},
                         bar={"loss": f"{loss / tokens:.3f}", "lr": f"{s.lr:.2e}", "tok/s": f"{rate:.0f}"})

    # ---- the loop
    def done(self) -> bool:
        """Whether the recipe's max_steps updates or max_epochs epochs are complete."""
        r, s = self.recipe, self.state
        return bool(r.max_steps and s.step >= r.max_steps) or bool(r.max_epochs and s.epoch >= r.max_epochs)

    def run(self) -> None:
        """Train until max_steps or max_epochs; validate, log and checkpoint on their cadences and at the end."""
        r, s = self.recipe, self.state
        while not self.done():
            batches = self._batches(s.epoch)
            while s.position < len(batches) and not (r.max_steps and s.step >= r.max_steps):
                began = time.perf_counter()
                loss, nll, tokens = self.train_step(batches[s.position])
                s.position += 1
                s.step += 1
                seconds = time.perf_counter() - began
                s.elapsed += seconds
                self._window_seconds += seconds
                s.tokens += tokens
                s.window = [s.window[0] + loss, s.window[1] + nll, s.window[2] + tokens, s.window[3] + 1]
                if self.log:
                    self.log.advance()
                if s.step % r.log_every == 0:
                    self._log_window()
                if s.step % r.valid_every == 0:
                    self._validate_and_keep_best()
                if s.step % r.checkpoint_every == 0:
                    self.save_state()
            if s.position >= len(batches):
                s.epoch, s.position = s.epoch + 1, 0
        if s.window[3]:
            self._log_window()
        if s.valid_step != s.step:
            self._validate_and_keep_best()
        self.save_state()

    def kept(self) -> tuple[dict, dict | None]:
        """Which weights the recipe keeps ({"rule", "step"/"steps", ...}) and, unless the last, those weights
        (rank 0 reads them from run_dir; None elsewhere)."""
        r, s = self.recipe, self.state
        if r.keep == "last":
            return {"rule": "last", "step": s.step}, None
        if r.keep == "average":
            info = {"rule": "average", "steps": list(s.snapshots), "step": s.snapshots[-1]}
            paths = [self.run_dir / SNAPSHOTS / _snapshot_name(step) for step in s.snapshots]
            return info, average_checkpoints(paths) if self.dist.main else None
        name, step, info = {
            "best_loss": ("best.pt", s.best_step, {"valid_nll": s.best_valid}),
            "best_bleu": ("best_bleu.pt", s.best_bleu_step, {"valid_bleu": s.best_bleu}),
        }[r.keep]
        info = {"rule": r.keep, "step": step, **info}
        if not self.dist.main:
            return info, None
        record = load_file(self.run_dir / name)
        if record.get("step") != step:
            raise PipelineError(f"{self.run_dir / name}: holds step {record.get('step')}, but the best validation "
                                f"was at step {step} (a killed run resumed with a lower max_steps?); expected "
                                f"that step's weights. Delete {self.run_dir} to train afresh")
        return info, record["weights"]

    def finish(self, out_dir: Path, curves_dir: Path) -> dict:
        """Keep the recipe's weights (in the model too), write out_dir/{model.pt,train.json}, the curves to
        curves_dir and run_dir/COMPLETE (rank 0); return the summary."""
        s = self.state
        kept, weights = self.kept()
        if self.recipe.keep != "last":
            if weights is not None:
                self.model.load_state_dict(weights)
            self.dist.broadcast_model(self.model)
        summary = {
            "steps": s.step, "epochs": s.epoch + s.position / max(len(self._batches(s.epoch)), 1),
            "wall_time_s": s.elapsed, "tokens": s.tokens,
            "tokens_per_s": s.tokens / s.elapsed if s.elapsed else 0.0,
            "steps_per_s": s.step / s.elapsed if s.elapsed else 0.0,
            "final_train_loss": s.last_train[0], "final_train_nll": s.last_train[1],
            "final_valid_loss": s.last_valid[0], "final_valid_nll": s.last_valid[1],
            "best_valid_nll": s.best_valid, "kept": kept, "n_params": count_parameters(self.model),
            "world_size": self.dist.world, "device": self.dist.device.type, "precision": self.precision,
            "resumed_from_step": self.resumed_from,
            "fresh_parameters": self.fresh_params, "recipe": self.recipe.to_dict(),
            "environment": run_environment(), "dropped_too_long": self.dropped_too_long,
        }
        if self.recipe.keep == "best_bleu":
            summary["best_valid_bleu"] = s.best_bleu
        if self.dist.main:
            out_dir = Path(out_dir)
            save_atomic(self._record(_plain(kept), kept["step"]), out_dir / "model.pt")
            with atomic_open(out_dir / "train.json") as handle:
                json.dump(_plain(summary), handle, indent=2, sort_keys=True)
                handle.write("\n")
            self.log.close()
            self.log.publish(curves_dir)
            (self.run_dir / COMPLETE).touch()
        return summary


def _snapshot_name(step: int) -> str:
    return f"step-{step:09d}.pt"


def run_environment() -> dict:
    """Where the run finished: host, Slurm job and the GPUs it was given (provenance for train.json)."""
    return {"host": socket.gethostname(), "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}


def _plain(obj):
    """JSON round trip (tuples -> lists, non-finite floats kept) for comparison and train.json."""
    return json.loads(json.dumps(obj, sort_keys=True, default=str))


def _differences(old: dict, new: dict) -> list[str]:
    """Human-readable list of keys whose values differ between two run keys."""
    out = []
    for part in ("meta", "recipe"):
        a, b = old.get(part, {}), new.get(part, {})
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                out.append(f"{part}.{key}: checkpoint {a.get(key)!r}, now {b.get(key)!r}")
    if old.get("data") != new.get("data"):
        out.append("training/validation data differ (fingerprint)")
    return out


def restart_policy(run_dir: Path, key: dict, recipe: Recipe) -> str | None:
    """Delete a run_dir marked COMPLETE that cannot continue into this run (its run key differs, or it is past
    the recipe's max_steps / max_epochs); return why, or None when it is kept (to resume or continue).

    A kept COMPLETE marker is removed: until this fit finishes, the run is incomplete again (a changed run key
    is then refused, not silently discarded). A run_dir without the marker is left to the resume checks."""
    marker = Path(run_dir) / COMPLETE
    if not marker.exists():
        return None
    why = None
    try:
        ckpt = load_file(Path(run_dir) / "last.pt")
    except PipelineError as err:
        why = str(err)
    else:
        if ckpt.get("format") != STATE_FORMAT:
            why = f"training state format {ckpt.get('format')!r}, expected {STATE_FORMAT}"
        else:
            why = "; ".join(_differences(ckpt["run_key"], key)) or _beyond(ckpt["progress"], recipe)
    if why:
        shutil.rmtree(run_dir)
        return why
    marker.unlink()
    return None


def fit(model, train: tuple[list[list[int]], list[list[int]]], valid: tuple[list[list[int]], list[list[int]]],
        recipe: Recipe, *, run_dir: Path, out_dir: Path, curves_dir: Path, meta: dict,
        init_state: dict | None = None, progress: bool = True) -> dict:
    """Train `model` on id sequences (no BOS/EOS) as `recipe` says; write out_dir/{model.pt,train.json} and the
    learning curves to curves_dir (train/{loss,nll,lr}.tsv, valid/{loss,nll,ppl}.tsv, valid/bleu.tsv with keep:
    best_bleu).

    meta must hold model (the spec {"encoder", "decoder", **options}), src_vocab_size, tgt_vocab_size (to rebuild
    the model) and may hold anything else identifying the run. model.pt holds the kept weights (recipe.keep;
    train.json "kept" says which step(s)), and `model` holds them on return. Checkpoints go to run_dir (last.pt,
    best.pt, best_bleu.pt, average/); an existing run_dir/last.pt is resumed (bitwise exact on the same world size
    and device), one written by a different model/recipe/data is refused with a PipelineError -- unless the run
    was COMPLETE, then run_dir is deleted and the run starts afresh (restart_policy). init_state: weights to start
    from (fine-tuning; train.json lists the parameters left fresh). recipe.precision is resolved for the device
    (pipeline.precision) and kept as meta["precision"]: part of the run key, in train.json and in model.pt, whose
    decoding follows it. Under torchrun (WORLD_SIZE > 1) every rank
    calls fit; rank 0 writes files. Returns the summary written to train.json.
    """
    _check_inputs(train, valid, meta, recipe)
    limit = getattr(model, "max_input_len", None)
    (train, n_train), (valid, n_valid) = within_length(train, limit), within_length(valid, limit)
    run_dir = Path(run_dir)
    dist_ = Dist()
    meta = {**meta, "precision": resolve(recipe.precision, dist_.device)}  # in the run key and the model file
    try:
        key = run_key(meta, recipe, train, valid)
        if dist_.main:
            why = restart_policy(run_dir, key, recipe)
            if why:
                print(f"{run_dir}: finished run deleted, training afresh ({why})", file=sys.stderr)
        dist_.barrier()
        trainer = Trainer(model, train, valid, recipe, run_dir, meta, dist_, progress, key)
        trainer.dropped_too_long = {"train": n_train, "valid": n_valid, "limit": limit}
        trainer.start(init_state)
        try:
            trainer.run()
            summary = trainer.finish(Path(out_dir), Path(curves_dir))
            dist_.barrier()  # every rank done before gloo is torn down (a rank aborted at teardown once without)
            return summary
        finally:
            if trainer.log:
                trainer.log.close()
    finally:
        dist_.close()


def within_length(pairs: tuple[list[list[int]], list[list[int]]], limit: int | None
                  ) -> tuple[tuple[list[list[int]], list[list[int]]], int]:
    """The pairs whose source + EOS and BOS + target fit `limit` positions, and how many were dropped.

    RAN (Zeng et al. 2021, 3.1) removes sentences longer than its 256x256 attention matrices; BPE can lengthen a
    sentence that passed the word-count filter, so the trainer drops those too instead of crashing (None: no
    limit).
    """
    src, tgt = pairs
    if limit is None:
        return pairs, 0
    keep = [i for i in range(len(src)) if len(src[i]) + 1 <= limit and len(tgt[i]) + 1 <= limit]
    if not keep:
        raise PipelineError(f"no sentence pair fits the model's {limit} positions; expected shorter sentences")
    return ([src[i] for i in keep], [tgt[i] for i in keep]), len(src) - len(keep)


def _check_inputs(train, valid, meta: dict, recipe: Recipe) -> None:
    """Clear errors for malformed arguments before any work starts."""
    if not isinstance(recipe, Recipe):
        raise PipelineError(f"fit: recipe must be a pipeline.recipe.Recipe, got {type(recipe).__name__}")
    for name, (src, tgt) in (("train", train), ("valid", valid)):
        if len(src) != len(tgt):
            raise PipelineError(f"{name}: {len(src)} source but {len(tgt)} target sequences; expected equal counts")
        if not src:
            raise PipelineError(f"{name}: no sentence pairs; expected a non-empty corpus")
    missing = [k for k in META_KEYS if k not in meta]
    if missing:
        raise PipelineError(f"meta: missing key(s) {missing}; expected {list(META_KEYS)} to rebuild the model")
