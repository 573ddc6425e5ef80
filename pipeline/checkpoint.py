"""Checkpoint files that carry their own checksum, and rebuilding a model from one.

File format (model.pt, the trainer's last.pt, best.pt, best_bleu.pt, snapshots): the bytes torch.save writes into
a file object, a zip archive whose records sit under the root folder "archive" (torch names it after the file name
when saving to a path; for a file object it is fixed, so identical content gives identical bytes), with the zip
comment (the End Of Central Directory record's last field, which torch leaves empty) set to

    nmt-repro-sha256:<64 hex digits>

the SHA-256 of the archive as torch wrote it, i.e. of the file without its last 81 bytes (the comment) and with the
EOCD's 2-byte comment length (the last 2 bytes left) zeroed. The file stays a zip archive torch.load reads as it is.
load_file recomputes the checksum (streamed, in blocks) before unpickling anything; a damaged, truncated or foreign file (any torch file
without the comment: another program's, or ours from before checksums) or one that is no torch file at all is a
one-line PipelineError naming the file.
"""
from __future__ import annotations

import errno
import hashlib
import os
import shutil
from pathlib import Path
from typing import Sequence

import torch

from pipeline.errors import PipelineError
from pipeline.fileio import atomic_open
from pipeline.models.registry import build_model, count_parameters

MODEL_FORMAT = "nmt-repro-model/2"
# "model" is the model spec {"encoder": kind, "decoder": kind, **options}; "weights" the state dict
MODEL_KEYS = ("format", "model", "src_vocab_size", "tgt_vocab_size", "step", "n_params", "meta", "weights")

CHECKSUM_PREFIX = b"nmt-repro-sha256:"
COMMENT_LEN = len(CHECKSUM_PREFIX) + 64
EOCD_SIG, EOCD_LEN = b"PK\x05\x06", 22  # End Of Central Directory: signature ... comment length (2 bytes, LE)
WRITTEN_BY = "written by this pipeline (pipeline.checkpoint.save_atomic)"


def save_atomic(obj, path: Path) -> None:
    """torch.save `obj` into a temp file beside `path`, add its checksum as the zip comment (see the module
    docstring), fsync and rename it onto `path`; streamed: the file is never held in memory whole."""
    with atomic_open(path, "w+b") as handle:
        try:
            torch.save(obj, handle)  # to a file object: the archive's root is "archive", whatever the file's name
        except RuntimeError as err:  # torch's writer failed ("unexpected pos"): the OS error under it, named
            failed = _write_error(err, Path(path))
            if failed is None:
                raise
            raise failed from None
        end = handle.tell()
        handle.seek(end - EOCD_LEN)
        tail = handle.read(EOCD_LEN)
        if tail[:4] != EOCD_SIG or tail[-2:] != b"\0\0":  # torch's writer changed: say so
            raise PipelineError("torch.save wrote no zip archive with an empty comment; expected one to add a "
                                "checksum to")
        digest = _sha256(handle, end)
        handle.seek(end - 2)
        handle.write(COMMENT_LEN.to_bytes(2, "little") + CHECKSUM_PREFIX + digest.encode("ascii"))


def _write_error(err: RuntimeError, path: Path) -> OSError | None:
    """The OSError torch's archive writer met under `err`, naming `path`: the one its file object raised, else
    ENOSPC where the writer failed with under WRITE_SLACK bytes free; None for another error."""
    cause = err
    while cause is not None and not isinstance(cause, OSError):
        cause = cause.__cause__ or cause.__context__
    if cause is not None:
        return OSError(cause.errno, cause.strerror, str(path))
    writer = any(mark in str(err) for mark in ("PytorchStreamWriter", "inline_container", "unexpected pos"))
    if writer and shutil.disk_usage(path.parent).free < WRITE_SLACK:
        return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    return None


WRITE_SLACK = 1 << 20  # free bytes below which a failed archive write is taken for a full disk


def _sha256(handle, size: int, zeroed_tail: bool = False) -> str:
    """SHA-256 of the first `size` bytes of an open file (its last 2 counted as zeros if zeroed_tail)."""
    digest, handle_at, chunk = hashlib.sha256(), 0, 1 << 22
    handle.seek(0)
    body = size - 2 if zeroed_tail else size
    while handle_at < body:
        block = handle.read(min(chunk, body - handle_at))
        if not block:
            break
        digest.update(block)
        handle_at += len(block)
    if zeroed_tail:
        digest.update(b"\0\0")
    return digest.hexdigest()


def _comment_length(tail: bytes, eocd: int) -> int:
    """The comment length of the EOCD record at offset `eocd` of `tail` (its last 2 bytes)."""
    return int.from_bytes(tail[eocd + EOCD_LEN - 2:eocd + EOCD_LEN], "little")


def verify_checksum(path: Path) -> None:
    """Nothing if the file at `path` holds its checksum; else a one-line PipelineError saying what the file is:
    damaged, truncated, a torch file without our checksum, or no torch file. Reads the file once, in blocks."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        head = handle.read(4)
        handle.seek(max(0, size - EOCD_LEN - 0xFFFF))
        tail = handle.read()  # the end of the file: where a zip's end record and comment lie
        eocd = len(tail) - EOCD_LEN - COMMENT_LEN
        comment = tail[eocd + EOCD_LEN:] if eocd >= 0 else b""
        if eocd >= 0 and tail[eocd:eocd + 4] == EOCD_SIG and _comment_length(tail, eocd) == COMMENT_LEN \
                and comment.startswith(CHECKSUM_PREFIX):
            found = _sha256(handle, size - COMMENT_LEN, zeroed_tail=True)
            recorded = comment[len(CHECKSUM_PREFIX):].decode("ascii", "replace")
            if found != recorded:
                raise PipelineError(f"{path}: damaged checkpoint: the SHA-256 of its contents is {found}, its "
                                    f"checksum says {recorded}; expected the bytes it was written with (restore it "
                                    "or retrain)")
            return
    if head != b"PK\x03\x04":
        raise PipelineError(f"{path}: not a readable checkpoint: no torch file (no zip archive); expected a "
                            f"checkpoint {WRITTEN_BY}")
    end = tail.rfind(EOCD_SIG)
    if end < 0 or end + EOCD_LEN + _comment_length(tail, end) > len(tail):
        raise PipelineError(f"{path}: truncated checkpoint: its zip archive breaks off after {size} bytes (no "
                            f"end record); expected a whole checkpoint {WRITTEN_BY}: retrain to write it again")
    raise PipelineError(f"{path}: a torch file without the checksum of this pipeline's checkpoints (another "
                        f"program's, or written before checkpoints carried one); expected a checkpoint {WRITTEN_BY}: "
                        "retrain to write it")


def recorded_checksum(path: Path) -> str:
    """The SHA-256 a checkpoint written by save_atomic carries in its zip comment (read from its last bytes, not
    recomputed: load_file verifies it); a file without one -> PipelineError naming it."""
    path = Path(path)
    with open(path, "rb") as handle:
        handle.seek(max(0, path.stat().st_size - COMMENT_LEN))
        comment = handle.read()
    if len(comment) != COMMENT_LEN or not comment.startswith(CHECKSUM_PREFIX):
        raise PipelineError(f"{path}: no checksum at its end; expected a checkpoint {WRITTEN_BY}")
    return comment[len(CHECKSUM_PREFIX):].decode("ascii", "replace")


def load_file(path: Path, device="cpu") -> dict:
    """Load a checkpoint dict written by save_atomic, its checksum verified; any other file -> a one-line
    PipelineError naming it."""
    path = Path(path)
    if not path.is_file():
        raise PipelineError(f"{path}: checkpoint not found; expected a file written by the trainer")
    verify_checksum(path)
    try:
        obj = torch.load(path, map_location=device, weights_only=True)
    except Exception as err:  # a checksummed file torch cannot read: our writer and torch disagree
        reason = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise PipelineError(f"{path}: not a readable checkpoint ({type(err).__name__}: {reason})") from None
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


def check_vocab(info: dict, vocab, side: str, vocab_path, model_path) -> None:
    """A PipelineError unless `vocab` (side "src" or "tgt", read from vocab_path) has the size of the vocabulary the
    model at model_path (load_model's info) was trained with."""
    expected = info[f"{side}_vocab_size"]
    if len(vocab) != expected:
        raise PipelineError(f"{vocab_path}: {side} vocabulary of {len(vocab)} tokens, but {model_path} was trained "
                            f"with {expected}; expected the {side} vocabulary of the model's own corpus")


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
