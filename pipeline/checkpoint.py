"""Atomic checkpoint files and rebuilding a model from one."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import torch

from pipeline.errors import PipelineError
from pipeline.fileio import atomic_path
from pipeline.models.registry import build_model, count_parameters

MODEL_FORMAT = "nmt-repro-model/2"
# "model" is the model spec {"encoder": kind, "decoder": kind, **options}; "weights" the state dict
MODEL_KEYS = ("format", "model", "src_vocab_size", "tgt_vocab_size", "step", "n_params", "meta", "weights")


def save_atomic(obj, path: Path) -> None:
    """torch.save `obj` to a temp file beside `path`, fsync it, then rename it onto `path`."""
    with atomic_path(path) as tmp:
        torch.save(obj, tmp)
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())


def load_file(path: Path, device="cpu") -> dict:
    """Load a checkpoint dict written by save_atomic; unreadable file -> PipelineError naming it."""
    path = Path(path)
    if not path.is_file():
        raise PipelineError(f"{path}: checkpoint not found; expected a file written by the trainer")
    try:
        obj = torch.load(path, map_location=device, weights_only=True)
    except Exception as err:  # torch raises many types for truncated/foreign files
        raise PipelineError(f"{path}: not a readable checkpoint ({type(err).__name__}: {err})") from None
    if not isinstance(obj, dict):
        raise PipelineError(f"{path}: expected a checkpoint dict, found {type(obj).__name__}")
    return obj


def model_record(model, meta: dict, step: int, kept: dict | None = None) -> dict:
    """Everything load_model needs: weights, model spec, vocab sizes, step, n_params, meta (and which weights)."""
    record = {
        "format": MODEL_FORMAT,
        "model": dict(meta["model"]),
        "src_vocab_size": int(meta["src_vocab_size"]),
        "tgt_vocab_size": int(meta["tgt_vocab_size"]),
        "step": int(step),
        "n_params": int(count_parameters(model)),
        "meta": meta,
        "weights": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
    }
    if kept is not None:
        record["kept"] = kept
    return record


def load_model(path: Path, device="cpu"):
    """Rebuild the model saved at `path` via build_model, load its weights, eval(); returns (model, info).

    info is the record without the weights (model spec, vocab sizes, step, n_params, meta, kept).
    """
    record = load_file(path, device)
    missing = [k for k in MODEL_KEYS if k not in record]
    if missing or record.get("format") != MODEL_FORMAT:
        raise PipelineError(f"{path}: not a model file of format {MODEL_FORMAT} (missing keys: {missing}, "
                            f"format {record.get('format')!r})")
    model = build_model(record["model"], record["src_vocab_size"], record["tgt_vocab_size"])
    try:
        model.load_state_dict(record["weights"])
    except RuntimeError as err:
        raise PipelineError(f"{path}: weights do not fit model {record['model']!r}: {err}") from None
    model.to(device).eval()
    info = {k: v for k, v in record.items() if k != "weights"}
    return model, info


def trained_precision(info: dict) -> str:
    """The precision a model was trained at (load_model's info; float32 for files from before precisions)."""
    return info["meta"].get("precision", "float32")


def average_checkpoints(paths: Sequence[Path]) -> dict[str, torch.Tensor]:
    """Element-wise mean of the "weights" of several checkpoint files (model records or training states).

    Floating tensors are summed in float64, divided by len(paths) and cast back to their dtype; other tensors
    (integer buffers such as BatchNorm's num_batches_tracked) are taken from the last file (our choice).
    """
    if not paths:
        raise PipelineError("average_checkpoints: no checkpoint files given; expected at least one")
    states = []
    for path in paths:
        record = load_file(path)
        if not isinstance(record.get("weights"), dict):
            raise PipelineError(f"{path}: no 'weights' entry; expected a model file or training state")
        states.append(record["weights"])
    first, last = states[0], states[-1]
    for path, state in zip(paths, states):
        if state.keys() != first.keys() or any(state[k].shape != first[k].shape for k in first):
            raise PipelineError(f"{path}: weights differ in names or shapes from {paths[0]}; expected checkpoints "
                                "of one model")
    out = {}
    for key, value in last.items():
        if value.is_floating_point():
            total = sum(state[key].to(torch.float64) for state in states)
            out[key] = (total / len(states)).to(value.dtype)
        else:
            out[key] = value.clone()
    return out
