"""One trainer for every architecture: token batches, Adam + warmup/inverse-sqrt, label smoothing,
atomic checkpoints with bitwise-exact resume, DDP (gloo on CPU, nccl on GPU), dvclive curves, tqdm."""
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

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

from pipeline.checkpoint import load_file, model_record, save_atomic
from pipeline.data.batching import make_batch, token_batches
from pipeline.data.vocab import PAD
from pipeline.errors import PipelineError
from pipeline.fileio import atomic_open
from pipeline.models.registry import count_parameters, init_from

STATE_FORMAT = "nmt-repro-train-state/1"
SCHEDULES = ("inverse_sqrt", "constant")
# Recipe keys that may change between a checkpoint and its resumption: cadence only, and max_steps
# (raising it continues a finished run; no schedule here depends on it).
RESUMABLE_CHANGES = ("checkpoint_every", "valid_every", "log_every", "max_steps")
META_KEYS = ("arch", "options", "src_vocab_size", "tgt_vocab_size")


# ----------------------------------------------------------------------------------------------- recipe
@dataclass
class Recipe:
    """Optimisation settings of one training run (THUMT-style defaults, IMPLEMENTATION-NOTES hao2019)."""

    lr: float
    warmup: int
    max_steps: int
    batch_tokens: int
    label_smoothing: float = 0.1
    adam_betas: tuple = (0.9, 0.98)
    adam_eps: float = 1e-9
    clip_norm: float = 0.0
    seed: int = 1
    checkpoint_every: int = 100
    valid_every: int = 100
    log_every: int = 10
    lr_schedule: str = "inverse_sqrt"

    def __post_init__(self):
        self.adam_betas = tuple(self.adam_betas) if isinstance(self.adam_betas, (list, tuple)) else self.adam_betas
        for field in dataclasses.fields(self):
            _check_type(f"recipe.{field.name}", getattr(self, field.name), field.type)
        checks = {
            "lr": self.lr > 0, "warmup": self.warmup >= 0, "max_steps": self.max_steps >= 1,
            "batch_tokens": self.batch_tokens >= 1, "label_smoothing": 0 <= self.label_smoothing < 1,
            "adam_betas": len(self.adam_betas) == 2 and all(0 <= b < 1 for b in self.adam_betas),
            "adam_eps": self.adam_eps > 0, "clip_norm": self.clip_norm >= 0,
            "checkpoint_every": self.checkpoint_every >= 1, "valid_every": self.valid_every >= 1,
            "log_every": self.log_every >= 1, "lr_schedule": self.lr_schedule in SCHEDULES,
        }
        for key, ok in checks.items():
            if not ok:
                raise PipelineError(f"recipe.{key}: invalid value {getattr(self, key)!r}; expected "
                                    f"{_EXPECTED[key]}")

    @classmethod
    def from_dict(cls, values: dict, where: str = "recipe") -> "Recipe":
        """Build from a config mapping; an unknown or missing key -> PipelineError naming it."""
        if not isinstance(values, dict):
            raise PipelineError(f"{where}: expected a mapping of recipe keys, got {type(values).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        for key in values:
            if key not in known:
                raise PipelineError(f"{where}.{key}: unknown recipe key; expected one of {sorted(known)}")
        required = [f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING]
        for key in required:
            if key not in values:
                raise PipelineError(f"{where}.{key}: missing; required recipe keys are {required}")
        return cls(**values)

    def to_dict(self) -> dict:
        """Plain JSON-able mapping (betas as a list)."""
        out = dataclasses.asdict(self)
        out["adam_betas"] = list(self.adam_betas)
        return out


_EXPECTED = {
    "lr": "a number > 0", "warmup": "an integer >= 0", "max_steps": "an integer >= 1",
    "batch_tokens": "an integer >= 1", "label_smoothing": "a number in [0, 1)",
    "adam_betas": "two numbers in [0, 1)", "adam_eps": "a number > 0", "clip_norm": "a number >= 0 (0 = off)",
    "checkpoint_every": "an integer >= 1", "valid_every": "an integer >= 1", "log_every": "an integer >= 1",
    "lr_schedule": f"one of {SCHEDULES}",
}


def _check_type(key: str, value, annotation) -> None:
    """Reject bools/strings where numbers are expected (YAML reads '1e-3' as a string)."""
    expected = {"float": (int, float), "int": (int,), "tuple": (tuple,), "str": (str,)}[str(annotation)]
    ok = isinstance(value, expected) and not isinstance(value, bool)
    if ok and key.endswith("adam_betas"):
        ok = all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in value)
    if not ok:
        hint = " (write floats with a dot, e.g. 1.0e-3, so YAML reads a number)" if isinstance(value, str) else ""
        raise PipelineError(f"{key}: got {value!r} ({type(value).__name__}); expected {_EXPECTED[key.split('.')[-1]]}"
                            f"{hint}")


def lr_at(step: int, recipe: Recipe) -> float:
    """Learning rate of update number `step` (1-based).

    inverse_sqrt: lr * min(step / warmup, sqrt(warmup / step)) -- linear warmup to `lr` at step `warmup`,
    then decay ~ step^-0.5. This is Vaswani et al. (2017, eq. 3) d^-0.5 * min(step^-0.5, step * warmup^-1.5)
    with its peak d^-0.5 * warmup^-0.5 written as `lr` (THUMT's linear_warmup_rsqrt_decay). warmup = 0 means
    lr * step^-0.5 (our choice). constant: lr.
    """
    if step < 1:
        raise ValueError(f"step counts from 1, got {step}")
    if recipe.lr_schedule == "constant":
        return recipe.lr
    if recipe.warmup == 0:
        return recipe.lr / math.sqrt(step)
    return recipe.lr * min(step / recipe.warmup, math.sqrt(recipe.warmup / step))


# ------------------------------------------------------------------------------------------------- loss
def smoothed_loss(logits: torch.Tensor, target: torch.Tensor, smoothing: float
                  ) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Label-smoothed cross entropy summed over non-PAD targets: logits [N,V], target [N] -> (loss, nll, n).

    The smoothed target puts 1 - eps on the gold token and eps / (V - 1) on every other token (THUMT's
    smoothing, Szegedy et al. 2016); loss = -sum_v q_v log p_v. nll is the plain -log p(gold) sum.
    """
    lprobs = F.log_softmax(logits.float(), dim=-1)
    keep = target != PAD
    nll = -lprobs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    if smoothing > 0:
        others = -lprobs.sum(-1) - nll
        loss = (1 - smoothing) * nll + smoothing / (lprobs.size(-1) - 1) * others
    else:
        loss = nll
    return loss[keep].sum(), nll[keep].sum(), int(keep.sum())


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
    casing. Each rank's loss is divided by the *global* token count, so the summed gradient equals the
    single-process gradient of the whole batch.
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

    def close(self) -> None:
        if self.owns_group:
            dist.destroy_process_group()


# ---------------------------------------------------------------------------------------------- logging
class CurveLog:
    """dvclive learning curves in run_dir/dvclive (resume-safe) plus a tqdm bar; rank 0 only."""

    def __init__(self, run_dir: Path, resume_step: int, max_steps: int, progress: bool):
        from tqdm import tqdm

        self.dir = run_dir / "dvclive"
        if resume_step > 0:
            _truncate_curves(self.dir, resume_step)
        self.live = _local_live(self.dir, resume=resume_step > 0)
        self.bar = tqdm(total=max_steps, initial=resume_step, disable=not progress, desc="train",
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

    def copy_to(self, target: Path) -> None:
        """Replace `target` with a copy of the curves (copy to a temp dir, then rename)."""
        tmp = target.with_name(f".{target.name}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(self.dir, tmp)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)


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
    best_valid: float = math.inf
    window: list = dataclasses.field(default_factory=lambda: [0.0, 0.0, 0.0, 0])  # loss, nll, tokens, steps
    last_train: tuple = (math.nan, math.nan)     # per-token loss, nll of the last logged window
    last_valid: tuple = (math.nan, math.nan)     # per-token loss, nll at the last validation
    valid_step: int = 0
    tokens: float = 0.0           # target tokens trained on, all ranks
    elapsed: float = 0.0          # seconds spent training, summed over resumptions


class Trainer:
    """Runs the loop of fit(); see fit() for the contract."""

    def __init__(self, model, train, valid, recipe: Recipe, run_dir: Path, meta: dict, dist_: Dist,
                 progress: bool):
        self.dropped_too_long: dict = {}  # set by fit (within_length)
        self.recipe, self.run_dir, self.meta, self.dist = recipe, Path(run_dir), meta, dist_
        self.model = model.to(dist_.device)
        self.train_src, self.train_tgt = train
        self.valid_src, self.valid_tgt = valid
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.Adam(self.params, lr=recipe.lr, betas=recipe.adam_betas, eps=recipe.adam_eps)
        self.state = Progress()
        self.run_key = {"meta": _plain(meta), "data": fingerprint(train, valid),
                        "recipe": {k: v for k, v in recipe.to_dict().items() if k not in RESUMABLE_CHANGES}}
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
            if init_state is not None:
                self.fresh_params = list(init_from(self.model, init_state))
            self.dist.broadcast_model(self.model)
            torch.manual_seed(self.recipe.seed + 100_003 * self.dist.rank)  # dropout differs per rank
            random.seed(self.recipe.seed)
            np.random.seed(self.recipe.seed % 2**32)
        self.log = CurveLog(self.run_dir, self.state.step, self.recipe.max_steps,
                            self.progress) if self.dist.main else None

    def _resume(self, ckpt: dict, path: Path) -> None:
        """Load weights, optimizer, progress and RNG states; refuse a checkpoint of a different run."""
        if ckpt.get("format") != STATE_FORMAT:
            raise PipelineError(f"{path}: not a training state of format {STATE_FORMAT}")
        diffs = _differences(ckpt["run_key"], self.run_key)
        if diffs:
            raise PipelineError(f"{path}: written by a different run ({'; '.join(diffs)}); expected the same model, "
                                f"recipe and data. Delete {self.run_dir} to start this run from scratch")
        if ckpt["progress"]["step"] > self.recipe.max_steps:
            raise PipelineError(f"{path}: already at step {ckpt['progress']['step']}, beyond recipe.max_steps "
                                f"{self.recipe.max_steps}; expected max_steps >= the checkpoint's step")
        self.model.load_state_dict(ckpt["model"])
        self.optimizer.load_state_dict(ckpt["optimizer"])
        self.state = Progress(**ckpt["progress"])
        self.resumed_from = self.state.step
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
            batches = token_batches([len(s) for s in self.train_src], [len(t) for t in self.train_tgt],
                                    self.recipe.batch_tokens, seed=self.recipe.seed, epoch=epoch)
            self._epoch_batches = (epoch, batches)
        return self._epoch_batches[1]

    def _forward_sums(self, indices: list[int], src_side, tgt_side):
        """(loss sum, nll sum, tokens) of this rank's share of a batch; tensors keep their graph."""
        src, tgt_in, tgt_out = (t.to(self.dist.device) for t in
                                make_batch([src_side[i] for i in indices], [tgt_side[i] for i in indices]))
        logits = self.model(src, tgt_in)
        return smoothed_loss(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1), self.recipe.label_smoothing)

    def train_step(self, batch: list[int]) -> tuple[float, float, int]:
        """One optimizer update on a global batch; returns its summed (loss, nll, tokens) over all ranks."""
        self.model.train()
        total_tokens = sum(len(self.train_tgt[i]) + 1 for i in batch)
        share = self.dist.share(batch)
        loss_sum = nll_sum = 0.0
        if share:
            loss, nll, _ = self._forward_sums(share, self.train_src, self.train_tgt)
            (loss / total_tokens).backward()
            loss_sum, nll_sum = loss.item(), nll.item()
        loss_sum, nll_sum = self.dist.reduce_step(self.params, [loss_sum, nll_sum])
        if not math.isfinite(loss_sum):
            raise FloatingPointError(f"training loss is {loss_sum} at step {self.state.step + 1}; "
                                     f"expected a finite loss (lower recipe.lr or check the data); "
                                     f"{self.run_dir / 'last.pt'} holds the last good state")
        if self.recipe.clip_norm > 0:
            torch.nn.utils.clip_grad_norm_(self.params, self.recipe.clip_norm)
        lr = lr_at(self.state.step + 1, self.recipe)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return loss_sum, nll_sum, total_tokens

    @torch.no_grad()
    def validate(self) -> tuple[float, float]:
        """Per-token (smoothed loss, nll) on the validation set, summed over ranks."""
        self.model.eval()
        sums = [0.0, 0.0, 0.0]
        for batch in token_batches([len(s) for s in self.valid_src], [len(t) for t in self.valid_tgt],
                                   self.recipe.batch_tokens, seed=0, epoch=0, shuffle=False):
            share = self.dist.share(batch)
            if share:
                loss, nll, n = self._forward_sums(share, self.valid_src, self.valid_tgt)
                sums = [sums[0] + loss.item(), sums[1] + nll.item(), sums[2] + n]
        loss, nll, n = self.dist.all_sum(sums)
        return loss / n, nll / n

    # ---- bookkeeping
    def _record(self) -> dict:
        return model_record(self.model, self.meta, self.state.step)

    def save_state(self) -> None:
        """Atomically write run_dir/last.pt (rank 0), with every rank's random state."""
        rngs = self.dist.gather(get_rng_state())
        if self.dist.main:
            save_atomic({
                "format": STATE_FORMAT, "run_key": self.run_key,
                "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                "scheduler": {"name": self.recipe.lr_schedule, "step": self.state.step},
                "progress": dataclasses.asdict(self.state), "rng": rngs, "world_size": self.dist.world,
            }, self.run_dir / "last.pt")

    def _validate_and_keep_best(self) -> None:
        loss, nll = self.validate()
        self.state.last_valid, self.state.valid_step = (loss, nll), self.state.step
        if nll < self.state.best_valid:
            self.state.best_valid = nll
            if self.dist.main:
                save_atomic({**self._record(), "valid_nll": nll}, self.run_dir / "best.pt")
        if self.log:
            self.log.log(self.state.step, {"valid/loss": loss, "valid/nll": nll, "valid/ppl": math.exp(min(nll, 50))})
            rate = self.state.tokens / self.state.elapsed if self.state.elapsed else 0.0
            self.log.note(f"step {self.state.step}/{self.recipe.max_steps}: train loss {self.state.last_train[0]:.3f}, "
                          f"valid loss {loss:.3f} (ppl {math.exp(min(nll, 50)):.1f}), {rate:.0f} tokens/s")

    def _log_window(self, lr: float) -> None:
        loss, nll, tokens, steps = self.state.window
        rate = tokens / max(self._window_seconds, 1e-9)
        self._window_seconds = 0.0
        self.state.last_train = (loss / tokens, nll / tokens)
        self.state.window = [0.0, 0.0, 0.0, 0]
        if self.log:
            self.log.log(self.state.step, {"train/loss": loss / tokens, "train/nll": nll / tokens, "train/lr": lr},
                         bar={"loss": f"{loss / tokens:.3f}", "lr": f"{lr:.2e}", "tok/s": f"{rate:.0f}"})

    # ---- the loop
    def run(self) -> None:
        """Train until max_steps; validate, log and checkpoint on their cadences and at the end."""
        r, s = self.recipe, self.state
        while s.step < r.max_steps:
            batches = self._batches(s.epoch)
            while s.position < len(batches) and s.step < r.max_steps:
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
                    self._log_window(lr_at(s.step, r))
                if s.step % r.valid_every == 0:
                    self._validate_and_keep_best()
                if s.step % r.checkpoint_every == 0:
                    self.save_state()
            if s.position >= len(batches):
                s.epoch, s.position = s.epoch + 1, 0
        if s.window[3]:
            self._log_window(lr_at(s.step, r))
        if s.valid_step != s.step:
            self._validate_and_keep_best()
        self.save_state()

    def finish(self, out_dir: Path) -> dict:
        """Write out_dir/model.pt, out_dir/train.json and out_dir/dvclive (rank 0); return the summary."""
        s = self.state
        summary = {
            "steps": s.step, "epochs": s.epoch + s.position / max(len(self._batches(s.epoch)), 1),
            "wall_time_s": s.elapsed, "tokens": s.tokens,
            "tokens_per_s": s.tokens / s.elapsed if s.elapsed else 0.0,
            "steps_per_s": s.step / s.elapsed if s.elapsed else 0.0,
            "final_train_loss": s.last_train[0], "final_train_nll": s.last_train[1],
            "final_valid_loss": s.last_valid[0], "final_valid_nll": s.last_valid[1],
            "best_valid_nll": s.best_valid, "n_params": count_parameters(self.model),
            "world_size": self.dist.world, "device": self.dist.device.type, "resumed_from_step": self.resumed_from,
            "fresh_parameters": self.fresh_params, "recipe": self.recipe.to_dict(),
            "environment": run_environment(), "dropped_too_long": self.dropped_too_long,
        }
        if self.dist.main:
            out_dir = Path(out_dir)
            save_atomic(self._record(), out_dir / "model.pt")
            with atomic_open(out_dir / "train.json") as handle:
                json.dump(_plain(summary), handle, indent=2, sort_keys=True)
                handle.write("\n")
            self.log.close()
            self.log.copy_to(out_dir / "dvclive")
        return summary


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


def fit(model, train: tuple[list[list[int]], list[list[int]]], valid: tuple[list[list[int]], list[list[int]]],
        recipe: Recipe, *, run_dir: Path, out_dir: Path, meta: dict, init_state: dict | None = None,
        progress: bool = True) -> dict:
    """Train `model` on id sequences (no BOS/EOS) and write out_dir/{model.pt,train.json,dvclive}.

    meta must hold arch, options, src_vocab_size, tgt_vocab_size (to rebuild the model) and may hold
    anything else identifying the run. Checkpoints go to run_dir (last.pt, best.pt); an existing
    run_dir/last.pt is resumed (bitwise exact on the same world size and device), and one written by a
    different model/recipe/data is refused with a PipelineError. Under torchrun (WORLD_SIZE > 1) every
    rank calls fit; rank 0 writes files. Returns the summary written to train.json.
    """
    _check_inputs(train, valid, meta, recipe)
    limit = getattr(model, "max_input_len", None)
    (train, n_train), (valid, n_valid) = within_length(train, limit), within_length(valid, limit)
    dist_ = Dist()
    try:
        trainer = Trainer(model, train, valid, recipe, Path(run_dir), meta, dist_, progress)
        trainer.dropped_too_long = {"train": n_train, "valid": n_valid, "limit": limit}
        trainer.start(init_state)
        try:
            trainer.run()
            return trainer.finish(Path(out_dir))
        finally:
            if trainer.log:
                trainer.log.close()
    finally:
        dist_.close()


def within_length(pairs: tuple[list[list[int]], list[list[int]]], limit: int | None
                  ) -> tuple[tuple[list[list[int]], list[list[int]]], int]:
    """The pairs whose source + EOS and BOS + target fit `limit` positions, and how many were dropped.

    zeng2021 3.1 removes sentences longer than its 256x256 attention matrices; BPE can lengthen a sentence
    that passed the word-count filter, so the trainer drops those too instead of crashing (None: no limit).
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
        raise PipelineError(f"fit: recipe must be a Recipe, got {type(recipe).__name__}")
    for name, (src, tgt) in (("train", train), ("valid", valid)):
        if len(src) != len(tgt):
            raise PipelineError(f"{name}: {len(src)} source but {len(tgt)} target sequences; expected equal counts")
        if not src:
            raise PipelineError(f"{name}: no sentence pairs; expected a non-empty corpus")
    missing = [k for k in META_KEYS if k not in meta]
    if missing:
        raise PipelineError(f"meta: missing key(s) {missing}; expected {list(META_KEYS)} to rebuild the model")
