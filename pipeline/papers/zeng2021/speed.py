"""Decoding speed of batched beam search (target tokens per second by batch size and beam; Zeng et al. 2021, Figure 3).

A paper-scale measurement (3003 sentences, 4 batch sizes x 4 beams, 4 passes each) takes about an hour on one GPU:
with a `cells` file, each finished (batch size, beam) cell is kept there as it ends (rewritten atomically), a
stopped job (Slurm's SIGTERM at its time limit: one line, exit status 75 so that Snakemake retries)
leaves its finished cells behind, and the retry measures only the others. A kept cell is reused only if it was
measured under the same settings (checkpoint, device, precision, threads, sentences, repeats, search settings);
others are ignored with one line and measured again.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import platform
import signal
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import torch

from pipeline.data.batching import encode_source, pad
from pipeline.errors import PipelineError, Stopped
from pipeline.fileio import write_lines
from pipeline.precision import autocast
from pipeline.beam_search import beam_search
from pipeline.translate import fit_sources, length_sorted_chunks

CELLS_FORMAT = "nmt-repro-speed-cells/1"  # one JSON line per finished cell: {"format", "key", "row"}


def _positive_ints(name: str, values) -> list[int]:
    """`values` as a non-empty list of positive ints; otherwise PipelineError naming `name`."""
    values = list(values)
    if not values or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in values):
        raise PipelineError(f"decoding_speed: {name} = {values!r}; expected a non-empty list of positive integers")
    return values


def _sync(device: torch.device) -> None:
    """Wait for queued GPU work so wall time covers it (no-op on CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _decode_all(model, batches: list[torch.Tensor], beam: int, **search) -> tuple[float, int, int]:
    """One pass over prepared batches src [B,S]: (seconds, output tokens without EOS, sentences)."""
    device = batches[0].device
    _sync(device)
    start = time.perf_counter()
    tokens = sentences = 0
    for src in batches:
        hyps = beam_search(model, src, beam=beam, **search)
        tokens += sum(len(h) for h in hyps)
        sentences += len(hyps)
    _sync(device)
    return time.perf_counter() - start, tokens, sentences


def _measure(model, batches: list[torch.Tensor], batch_size: int, beam: int, repeats: int, search: dict) -> dict:
    """One cell: an untimed warm-up pass, then `repeats` timed passes (decoding_speed's row)."""
    _decode_all(model, batches, beam, **search)  # warm-up
    runs = [dict(zip(("seconds", "tokens", "sentences"), _decode_all(model, batches, beam, **search)))
            for _ in range(repeats)]
    return {
        "batch_size": batch_size, "beam": beam,
        "tokens_per_s": statistics.median(r["tokens"] / r["seconds"] for r in runs),
        "sentences_per_s": statistics.median(r["sentences"] / r["seconds"] for r in runs),
        "runs": runs, "threads": torch.get_num_threads(),
    }


def device_name(device: torch.device) -> str:
    """What the timing depends on besides the settings: the GPU's name, or the CPU's model name."""
    if device.type == "cuda":
        return f"cuda: {torch.cuda.get_device_name(device)}"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return f"cpu: {line.partition(':')[2].strip()}"
    return f"cpu: {platform.processor() or platform.machine()}"


def _differences(key: dict, wanted: dict) -> list[str]:
    """The settings in which a kept cell's key differs from the wanted one (batch size and beam aside)."""
    names = (set(key) | set(wanted)) - {"batch_size", "beam"}
    return sorted(name for name in names if key.get(name) != wanted.get(name))


class _Cells:
    """The kept cells of one measurement: read once, rewritten whole (atomically) after each new cell."""

    def __init__(self, path: str | Path | None, identity: dict, wanted: set[tuple[int, int]]):
        self.path, self.identity, self.lines, self.rows = Path(path) if path else None, identity, [], {}
        if self.path is None or not self.path.is_file():
            return
        ignored, differ = 0, set()
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
                key, row = record["key"], record["row"]
                cell = (key["batch_size"], key["beam"])
                if record.get("format") != CELLS_FORMAT:
                    raise KeyError("format")
            except (ValueError, KeyError, TypeError):
                ignored += 1
                differ.add("unreadable")
                continue
            found = _differences(key, identity)
            if found or cell not in wanted or cell in self.rows:
                ignored += 1
                differ.update(found or ["not asked for"])
                continue
            self.rows[cell] = row
            self.lines.append(line)
        if ignored:
            print(f"note: {self.path}: {ignored} kept cell(s) measured under other settings "
                  f"({', '.join(sorted(differ))}) ignored; they are measured again", file=sys.stderr)

    def keep(self, row: dict) -> None:
        if self.path is None:
            return
        key = {**self.identity, "batch_size": row["batch_size"], "beam": row["beam"]}
        self.lines.append(json.dumps({"format": CELLS_FORMAT, "key": key, "row": row}, sort_keys=True))
        write_lines(self.path, self.lines)

    def done(self) -> None:
        """All cells measured (the caller writes the result): nothing is left to resume, and a later run (other
        code, say) must not reuse these."""
        if self.path is not None:
            self.path.unlink(missing_ok=True)


@contextlib.contextmanager
def _stop_on_sigterm(stopped: Callable[[], str]):
    """SIGTERM (Slurm's time limit) raises Stopped(stopped()) in the main thread: one line and exit status 75, as a
    stopped trainer, so that Snakemake retries; the handler before is restored on the way out."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_sigterm(signum, frame):
        raise Stopped(stopped())

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def decoding_speed(model, src_ids: list[list[int]], *, batch_sizes, beams, repeats: int = 3,
                   max_len_a: float = 1.2, max_len_b: int = 10, length: str = "penalty", alpha: float = 0.6,
                   precision: str = "float32", cells: str | Path | None = None, model_id: str | None = None,
                   on_cell: Callable[[dict], None] | None = None) -> list[dict]:
    """Target tokens per second of batched beam search for every (batch size, beam), batch sizes outermost.

    src_ids are source ids without EOS (Vocab.encode output); EOS is appended and sentences are batched
    by length as in pipeline.translate. Each setting gets one untimed warm-up pass, then `repeats` timed
    passes; tokens_per_s / sentences_per_s are the median over the passes (our choice: the paper averages
    3 runs; every run is kept in "runs"). Output tokens exclude EOS. Rows: {"batch_size", "beam",
    "tokens_per_s", "sentences_per_s", "runs": [{"seconds", "tokens", "sentences"}], "threads"}. precision: as
    pipeline.translate (the model's training precision).

    cells: a file that keeps each finished cell for a later attempt (see the module docstring; removed once every
    cell is measured); model_id (the checkpoint's checksum) is then required: cells of another model are not
    reused. on_cell(row) is called after each newly measured cell is kept (not for reused ones).
    """
    batch_sizes, beams = _positive_ints("batch_sizes", batch_sizes), _positive_ints("beams", beams)
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise PipelineError(f"decoding_speed: repeats = {repeats!r}; expected a positive integer")
    if not src_ids:
        raise PipelineError("decoding_speed: src_ids is empty; expected at least one source sentence")
    if cells is not None and not model_id:
        raise PipelineError("decoding_speed: a cells file needs model_id (the checkpoint's checksum); expected one "
                            "so that cells of another model are never reused")
    device = next(model.parameters()).device
    encoded = fit_sources([encode_source(ids) for ids in src_ids], model.max_input_len)
    search = dict(max_len_a=max_len_a, max_len_b=max_len_b, length=length, alpha=alpha)
    identity = {"model": model_id, "device": device_name(device), "precision": precision,
                "threads": torch.get_num_threads(), "torch": torch.__version__, "repeats": repeats, "search": search,
                "sources": hashlib.sha256(json.dumps(encoded).encode("ascii")).hexdigest()}
    order = [(batch_size, beam) for batch_size in batch_sizes for beam in beams]
    kept = _Cells(cells, identity, set(order))
    if kept.rows:
        print(f"resuming: {len(kept.rows)} of {len(order)} cells measured by an earlier attempt", file=sys.stderr)
    rows = dict(kept.rows)

    def stopped() -> str:
        return (f"decoding_speed: stopped by SIGTERM (a time limit?) after {len(rows)} of {len(order)} cells; the "
                f"finished ones are kept in {cells}, where a rerun resumes")

    with _stop_on_sigterm(stopped) if cells is not None else contextlib.nullcontext(), autocast(precision, device):
        for batch_size in batch_sizes:
            if all((batch_size, beam) in rows for beam in beams):
                continue
            batches = [pad([encoded[i] for i in chunk]).to(device)
                       for chunk in length_sorted_chunks([len(x) for x in encoded], batch_size)]
            for beam in beams:
                if (batch_size, beam) in rows:
                    continue
                row = _measure(model, batches, batch_size, beam, repeats, search)
                kept.keep(row)
                rows[batch_size, beam] = row
                if on_cell is not None:
                    on_cell(row)
    kept.done()
    return [rows[cell] for cell in order]
