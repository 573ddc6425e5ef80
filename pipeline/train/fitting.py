"""fit(): check the inputs, drop pairs too long for the model, apply the restart policy and run a Trainer."""
from __future__ import annotations

import sys
from contextlib import ExitStack
from pathlib import Path

from pipeline.cpu_math import code_path
from pipeline.data.token_store import Pairs, positions
from pipeline.errors import PipelineError
from pipeline.precision import resolve
from pipeline.recipe import Recipe
from pipeline.train.distributed import Dist
from pipeline.train.run_dir import run_lock
from pipeline.train.state import restart_policy, run_key
from pipeline.train.stopping import StopSignals
from pipeline.train.trainer import Trainer

META_KEYS = ("model", "src_vocab_size", "tgt_vocab_size")


def fit(model, train: Pairs | tuple[list[list[int]], list[list[int]]],
        valid: Pairs | tuple[list[list[int]], list[list[int]]], recipe: Recipe, *, run_dir: Path, out_dir: Path, curves_dir: Path, meta: dict,
        init_state: dict | None = None, progress: bool = True, retry: bool = False) -> dict:
    """Train `model` on id sequences (no BOS/EOS: token stores' Pairs, or id lists) as `recipe` says; write out_dir/{model.pt,train.json} and the
    learning curves to curves_dir (train/{loss,nll,lr}.tsv, valid/{loss,nll,ppl}.tsv, valid/bleu.tsv with keep:
    best_bleu).

    meta must hold model (the spec {"encoder", "decoder", **options}), src_vocab_size, tgt_vocab_size (to rebuild
    the model) and may hold anything else identifying the run. model.pt holds the kept weights (recipe.keep;
    train.json "kept" says which step(s)), and `model` holds them on return. Checkpoints go to run_dir (last.pt,
    best.pt, best_bleu.pt, average/); an existing run_dir/last.pt is resumed (bitwise exact on the same world size
    and device), one written by a different model/recipe/code/data is refused with a PipelineError; a COMPLETE run is
    continued only when the recipe asks for more updates, else set aside and trained afresh (restart_policy); on a
    retry of the job that finished it (retry), it is finished again from its checkpoint.
    <run_dir>.lock is held while training (one trainer per run). init_state: weights to start
    from (fine-tuning; train.json lists the parameters left fresh). recipe.precision is resolved for the device
    (pipeline.precision) and kept as meta["precision"]: part of the run key, in train.json and in model.pt, whose
    decoding follows it. A SIGTERM or SIGUSR1 (Slurm's warning before a time limit, the limit itself) stops the
    run after the update in hand: a checkpoint, then pipeline.train.stopping.Stopped (exit status 75; a rerun
    resumes with nothing lost). Under torchrun (WORLD_SIZE > 1) every rank
    calls fit; rank 0 writes files. Returns the summary written to train.json.
    """
    train, valid = Pairs.of(train, "train"), Pairs.of(valid, "valid")
    _check_inputs(train, valid, meta, recipe)
    limit = getattr(model, "max_input_len", None)
    (train, n_train), (valid, n_valid) = within_length(train, limit), within_length(valid, limit)
    run_dir = Path(run_dir)
    dist_ = Dist()
    meta = {**meta, "precision": resolve(recipe.precision, dist_.device)}  # in the run key and the model file
    if dist_.device.type == "cpu":  # a CPU run resumes only on the code path it started on (pipeline.cpu_math)
        meta["cpu_math"] = code_path()
    with ExitStack() as stack:
        stack.callback(dist_.close)
        if dist_.main:
            stack.enter_context(run_lock(run_dir))
        key = run_key(meta, recipe, train, valid)
        if dist_.main:
            why = restart_policy(run_dir, key, recipe, retry)
            if why:
                print(f"{run_dir}: finished run not reused, training afresh ({why})", file=sys.stderr)
        dist_.barrier()
        signals = stack.enter_context(StopSignals())  # Slurm's warning or limit: checkpoint, then Stopped
        trainer = Trainer(model, train, valid, recipe, run_dir, meta, dist_, progress, key, signals)
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


def within_length(pairs: Pairs, limit: int | None) -> tuple[Pairs, int]:
    """The pairs whose source + EOS and BOS + target fit `limit` positions, and how many were dropped.

    RAN (Zeng et al. 2021, 3.1) removes sentences longer than its 256x256 attention matrices; BPE can lengthen a
    sentence that passed the word-count filter, so the trainer drops those too instead of crashing (None: no
    limit).
    """
    if limit is None:
        return pairs, 0
    keep = positions((pairs.src_lengths < limit) & (pairs.tgt_lengths < limit))  # length + 1 <= limit
    if not len(keep):
        raise PipelineError(f"no sentence pair fits the model's {limit} positions; expected shorter sentences")
    if len(keep) == len(pairs):
        return pairs, 0
    return pairs.select(keep), len(pairs) - len(keep)


def _check_inputs(train, valid, meta: dict, recipe: Recipe) -> None:
    """Clear errors for malformed arguments before any work starts."""
    if not isinstance(recipe, Recipe):
        raise PipelineError(f"fit: recipe must be a pipeline.recipe.Recipe, got {type(recipe).__name__}")
    for name, pairs in (("train", train), ("valid", valid)):
        if not len(pairs):
            raise PipelineError(f"{name}: no sentence pairs; expected a non-empty corpus")
    missing = [k for k in META_KEYS if k not in meta]
    if missing:
        raise PipelineError(f"meta: missing key(s) {missing}; expected {list(META_KEYS)} to rebuild the model")

