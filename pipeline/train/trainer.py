"""The training loop (Trainer): start or resume, updates, validation, checkpoints and the kept weights."""
from __future__ import annotations

import dataclasses
import json
import math
import random
import shutil
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from pipeline import speedups
from pipeline.checkpoint import average_checkpoints, load_file, model_record, save_atomic
from pipeline.data.batching import encode_source, make_batch, pad
from pipeline.errors import PipelineError, Stopped
from pipeline.fileio import atomic_open
from pipeline.loss import smoothed_loss
from pipeline.models.registry import count_parameters, init_from
from pipeline.precision import autocast
from pipeline.recipe import Recipe
from pipeline.train.builders import build_batches, build_optimizer, build_scheduler, loss_denominator
from pipeline.train.curves import CurveLog
from pipeline.train.distributed import Dist
from pipeline.train.stopping import StopSignals
from pipeline.train.state import (COMPLETE, SNAPSHOTS, STATE_FORMAT, Progress, _beyond, _differences, _plain,
                                  _snapshot_name, get_rng_state, run_environment, set_rng_state)


def validation_bleu(hyps: Sequence[Sequence[int]], refs: Sequence[Sequence[int]]) -> float:
    """sacrebleu corpus BLEU of id sequences written as space-joined id strings, tokenize="none" (our choice:
    validation BLEU on the training units (subword ids), no detokenisation; exp smoothing, sacrebleu's default)."""
    from sacrebleu.metrics import BLEU

    def text(ids):
        return " ".join(str(i) for i in ids)

    return BLEU(tokenize="none", force=True).corpus_score([text(h) for h in hyps], [[text(r) for r in refs]]).score


class Trainer:
    """Runs the loop of fit(); see fit() for the contract."""

    def __init__(self, model, train, valid, recipe: Recipe, run_dir: Path, meta: dict, dist_: Dist,
                 progress: bool, key: dict, signals: StopSignals | None = None):
        self.dropped_too_long: dict = {}  # set by fit (within_length)
        self.signals = signals  # a caught SIGTERM/SIGUSR1 stops the run after the update in hand (stop_if_asked)
        self._saved_step = -1  # the step of the last checkpoint written
        self.recipe, self.run_dir, self.meta, self.dist = recipe, Path(run_dir), meta, dist_
        self.precision = meta["precision"]
        self.model = model.to(dist_.device)
        self.train, self.valid = train, valid  # Pairs (pipeline.data.token_store)
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
        self._plan = build_batches(train.src_lengths, train.tgt_lengths, recipe)
        self._valid_batches = build_batches(valid.src_lengths, valid.tgt_lengths, recipe).epoch(0, 0, shuffle=False)
        self._epoch_batches: tuple[int, Sequence[list[int]]] | None = None
        # no_sync: the window's (loss, nll) sums and first step, kept on the device until logged or checkpointed
        self._pending: torch.Tensor | None = None
        self._pending_from = 0

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
        total = self.total_steps = r.max_steps or r.max_epochs * len(self._batches(0))
        self.log = (CurveLog(self.run_dir, self.state.step, total, self.progress, self.state.tokens,
                             label=self.meta.get("experiment")) if self.dist.main else None)
        if self.log and self.resumed_from:
            self.log.note(self._resume_line(total))

    def _resume_line(self, total: int) -> str:
        """`resuming from step 400/600 (runs/x/last.pt)`, and the updates an earlier attempt trained past that
        checkpoint (the furthest step its curves logged), which this attempt trains again."""
        line = f"{self.log.label}resuming from step {self.resumed_from}/{total} ({self.run_dir / 'last.pt'})"
        lost = self.log.logged_before - self.resumed_from
        if lost > 0:
            line += (f"; the attempt before logged step {self.log.logged_before}: at least {lost} updates lost "
                     f"(killed without a checkpoint), trained again")
        return line

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
    def _batches(self, epoch: int) -> Sequence[list[int]]:
        if self._epoch_batches is None or self._epoch_batches[0] != epoch:
            self._epoch_batches = (epoch, self._plan.epoch(self.recipe.seed, epoch))
        return self._epoch_batches[1]

    def _forward_sums(self, indices: list[int], pairs):
        """(loss sum, nll sum, tokens) of this rank's share of a batch; tensors keep their graph."""
        host = make_batch([pairs.source(i).tolist() for i in indices], [pairs.target(i).tolist() for i in indices])
        if self.dist.device.type == "cuda" and speedups.enabled("no_sync", self.dist.device):
            host = [t.pin_memory() for t in host]  # pinned and asynchronous: the copy does not wait
        src, tgt_in, tgt_out = (t.to(self.dist.device, non_blocking=True) for t in host)
        with autocast(self.precision, self.dist.device):
            features = self.model.features(src, tgt_in)
            return smoothed_loss(features.reshape(-1, features.size(-1)), self.model.output_layer,
                                 tgt_out.reshape(-1), self.recipe.label_smoothing)

    def train_step(self, batch: list[int]) -> tuple[float | torch.Tensor, float | torch.Tensor, int]:
        """One optimizer update on a global batch; returns its summed (loss, nll, tokens) over all ranks.

        Every rank divides its share's summed loss by the global batch's denominator (loss_norm: target tokens or
        sentence pairs), so the all-reduced gradient is the single-process gradient of the whole batch. With the
        no_sync speed-up (GPUs) loss and nll are device tensors, checked for finiteness when the window is read
        (flush_losses), not here: nothing in the update waits for the device."""
        self.model.train()
        total_tokens = int(self.train.tgt_lengths[batch].sum()) + len(batch)
        denominator = loss_denominator(self.recipe, batch, self.train.tgt_lengths)
        share = self.dist.share(batch)
        lazy = speedups.enabled("no_sync", self.dist.device)
        sums = torch.zeros(2, dtype=torch.float64, device=self.dist.device) if lazy else [0.0, 0.0]
        if share:
            loss, nll, _ = self._forward_sums(share, self.train)
            (loss / denominator).backward()
            sums = torch.stack([loss.detach(), nll.detach()]).double() if lazy else [loss.item(), nll.item()]
        loss_sum, nll_sum = self.dist.reduce_step(self.params, sums)
        if not lazy:
            self._check_finite(loss_sum, self.state.step + 1)
        if self.recipe.clip_norm > 0:
            torch.nn.utils.clip_grad_norm_(self.params, self.recipe.clip_norm)
        lr = self.scheduler.rate(self.state.step + 1, self.state.epoch)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.state.lr = lr
        return loss_sum, nll_sum, total_tokens

    def _check_finite(self, loss: float, steps) -> None:
        if not math.isfinite(loss):
            raise FloatingPointError(f"training loss is {loss} at step {steps}; "
                                     f"expected a finite loss (lower recipe.lr or check the data); "
                                     f"{self.run_dir / 'last.pt'} holds the last good state")

    def flush_losses(self) -> None:
        """Add the device-held (no_sync) loss sums to the window, refusing a non-finite one: before a window is
        logged and before a checkpoint is written, so that no state after a non-finite loss is kept."""
        if self._pending is None:
            return
        loss, nll = self._pending.tolist()
        first, self._pending = self._pending_from, None
        self._check_finite(loss, f"{first}-{self.state.step}" if first < self.state.step else first)
        s = self.state
        s.window = [s.window[0] + loss, s.window[1] + nll, s.window[2], s.window[3]]

    @torch.no_grad()
    def validate(self) -> tuple[float, float]:
        """Per-token (smoothed loss, nll) on the validation set, summed over ranks."""
        self.model.eval()
        sums = [0.0, 0.0, 0.0]
        for batch in self._valid_batches:
            share = self.dist.share(batch)
            if share:
                loss, nll, n = self._forward_sums(share, self.valid)
                sums = [sums[0] + loss.item(), sums[1] + nll.item(), sums[2] + int(n)]
        loss, nll, n = self.dist.all_sum(sums)
        return loss / n, nll / n

    def validate_bleu(self) -> float:
        """BLEU of greedy translations of the validation set (validation_bleu); each rank decodes its share."""
        from pipeline.search import greedy

        hyps: dict[int, list[int]] = {}
        for batch in self._valid_batches:
            share = self.dist.share(batch)
            if share:
                src = pad([encode_source(self.valid.source(i).tolist()) for i in share]).to(self.dist.device)
                with autocast(self.precision, self.dist.device):
                    hyps.update(zip(share, greedy(self.model, src)))
        merged = {i: h for part in self.dist.gather(hyps) for i, h in part.items()}
        return validation_bleu([merged[i] for i in range(len(self.valid))], self.valid.lists()[1])

    # ---- bookkeeping
    def _record(self, kept: dict | None = None, step: int | None = None) -> dict:
        return model_record(self.model, self.meta, self.state.step if step is None else step, kept)

    def save_state(self, snapshot: bool = True) -> None:
        """Atomically write run_dir/last.pt (rank 0), with every rank's random state; for keep: average also
        the weights of this checkpoint (run_dir/average/, the last average_last kept) unless not a `snapshot` (a
        checkpoint at a signal, off the recipe's cadence)."""
        self.flush_losses()
        s = self.state
        rngs = self.dist.gather(get_rng_state())
        self._saved_step = s.step
        if snapshot and self.recipe.keep == "average" and s.snapshots[-1:] != [s.step]:
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
            bleu = f", BLEU {values['valid/bleu']:.2f}" if "valid/bleu" in values else ""
            self.log.report(s.step, s.tokens, f"valid nll {nll:.2f} (loss {loss:.3f}, ppl {math.exp(min(nll, 50)):.1f}"
                                              f"{bleu}){self._train_loss(', ')}, epoch {s.epoch + 1}")

    def _train_loss(self, before: str = "") -> str:
        """The last logged window's training loss for a progress line; nothing before the first window."""
        loss = self.state.last_train[0]
        return "" if math.isnan(loss) else f"{before}train loss {loss:.3f}"

    def _log_window(self) -> None:
        self.flush_losses()
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
                if self.log:  # the previous step's line, if due (the last step's comes with the final validation)
                    self.log.tick(s.step, s.tokens, self._train_loss())
                began = time.perf_counter()
                loss, nll, tokens = self.train_step(batches[s.position])
                s.position += 1
                s.step += 1
                seconds = time.perf_counter() - began
                s.elapsed += seconds
                self._window_seconds += seconds
                s.tokens += tokens
                if isinstance(loss, torch.Tensor):  # no_sync: summed on the device until the window is read
                    if self._pending is None:
                        self._pending, self._pending_from = torch.stack([loss, nll]), s.step
                    else:
                        self._pending += torch.stack([loss, nll])
                    loss = nll = 0.0
                s.window = [s.window[0] + loss, s.window[1] + nll, s.window[2] + tokens, s.window[3] + 1]
                if self.log:
                    self.log.advance()
                if s.step % r.log_every == 0:
                    self._log_window()
                if s.step % r.valid_every == 0:
                    self._validate_and_keep_best()
                if s.step % r.checkpoint_every == 0:
                    self.save_state()
                self.stop_if_asked()
            if s.position >= len(batches):
                s.epoch, s.position = s.epoch + 1, 0
        if s.window[3]:
            self._log_window()
        if s.valid_step != s.step:
            self._validate_and_keep_best()
        self.save_state()

    def stop_if_asked(self) -> None:
        """After an update: if a rank caught a stop signal, checkpoint (unless this step's is written) and raise
        Stopped, every rank at the same step (under DDP the ranks agree by an all-reduce each update)."""
        caught = self.signals.name if self.signals else None
        if self.dist.world > 1:  # every rank joins the all-reduce, every update
            anyone = self.dist.all_sum([float(caught is not None)])[0] > 0
            caught = (caught or "a signal on another rank") if anyone else None
        if caught is None:
            return
        s = self.state
        if self._saved_step != s.step:
            self.save_state(snapshot=False)
        label = self.log.label if self.log else ""
        raise Stopped(f"{label}stopped by {caught} at step {s.step}/{self.total_steps}: checkpoint "
                      f"{self.run_dir / 'last.pt'} holds every update (0 updates lost); a rerun resumes from step "
                      f"{s.step}")

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
            "cpu_math": self.meta.get("cpu_math"), "torch": torch.__version__,
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

