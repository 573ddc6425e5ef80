"""Atomic checkpoint files and rebuilding a model from one."""
from __future__ import annotations

import os
from pathlib import Path

import torch

from pipeline.errors import PipelineError
from pipeline.fileio import atomic_path
from pipeline.models.registry import build_model, count_parameters

MODEL_FORMAT = "nmt-repro-model/1"
MODEL_KEYS = ("format", "arch", "options", "src_vocab_size", "tgt_vocab_size", "step", "n_params", "meta", "model")


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


def model_record(model, meta: dict, step: int) -> dict:
    """Everything load_model needs: final weights, arch, options, vocab sizes, step, n_params, meta."""
    return {
        "format": MODEL_FORMAT,
        "arch": meta["arch"],
        "options": dict(meta["options"]),
        "src_vocab_size": int(meta["src_vocab_size"]),
        "tgt_vocab_size": int(meta["tgt_vocab_size"]),
        "step": int(step),
        "n_params": int(count_parameters(model)),
        "meta": meta,
        "model": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
    }


def load_model(path: Path, device="cpu"):
    """Rebuild the model saved at `path` via build_model, load its weights, eval(); returns (model, info).

    info is the record without the weights (arch, options, vocab sizes, step, n_params, meta).
    """
    record = load_file(path, device)
    missing = [k for k in MODEL_KEYS if k not in record]
    if missing or record.get("format") != MODEL_FORMAT:
        raise PipelineError(f"{path}: not a model file of format {MODEL_FORMAT} (missing keys: {missing}, "
                            f"format {record.get('format')!r})")
    model = build_model(record["arch"], record["options"], record["src_vocab_size"], record["tgt_vocab_size"])
    try:
        model.load_state_dict(record["model"])
    except RuntimeError as err:
        raise PipelineError(f"{path}: weights do not fit arch {record['arch']!r} with its options: {err}") from None
    model.to(device).eval()
    info = {k: v for k, v in record.items() if k != "model"}
    return model, info
