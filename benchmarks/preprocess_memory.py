"""Peak memory and throughput of every preprocessing step, and of training's start-up, on a generated parallel
corpus.

Generates --pairs sentence pairs of about 30 tokens a side (Zipf-distributed made-up words, so BPE has work),
then runs each data step as `python -m pipeline <step>` the way the rules do (tokenize and apply-bpe with
--workers), binarizes both sides into token stores and trains one update of a small Transformer on them (the
start-up: mapping the stores, their lengths, the batches, the data fingerprint). It prints, per step, its peak
resident memory (the step's process and the workers it waited for) and lines per second per core. Memory that
stays flat while --pairs grows is what the streaming steps and the memory-mapped stores promise:

    python benchmarks/preprocess_memory.py --pairs 5000000 --workers 8    # the paper-scale check
    python benchmarks/preprocess_memory.py --quick                         # 20,000 pairs, a smoke test

Training's start-up alone, at sizes past what the text steps can generate here (token stores of random ids written
directly, ~30 tokens a side, 0.5% of pairs longer than RAN's positions so the length filter works too), prints its
peak and the bytes it grows by per pair:

    python benchmarks/preprocess_memory.py --startup 1000000 10000000 40000000
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def generate(path: Path, pairs: int, seed: int = 1) -> None:
    """en/de sides of made-up words (5-55 tokens, mean 30), capitalised, with commas and full stops."""
    rng = random.Random(seed)
    letters = "etaoinshrdlcumwfgypbvkjxqz"
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 11))) for _ in range(50_000)]
    cumulative = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(words))))
    for lang in ("en", "de"):
        with open(path / f"train.{lang}", "w", encoding="utf-8") as out:
            for _ in range(pairs):
                line = rng.choices(words, cum_weights=cumulative, k=rng.randint(5, 55))
                line[0] = line[0].capitalize()
                out.write(" ".join(line).replace(" a ", ", a ") + ".\n")


def run_step(argv: list[str], lines: int, workers: int) -> dict:
    """Run one step; its wall time, peak memory (MB) and lines per second per core."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "pipeline", *argv], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
                                 "CUDA_VISIBLE_DEVICES": ""})  # training on the CPU, one thread
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{argv[0]} failed (status {status})")
    return {"step": argv[0], "seconds": round(seconds, 2), "peak_mb": round(usage.ru_maxrss / 1024, 1),
            "lines_per_s_per_core": round(lines / seconds / workers)}


# one update of a small Transformer (its start-up is what is measured; the model is beside the point)
TRAIN_SPEC = {"experiment": "startup", "init": None, "seed": 1,
              "model": {"encoder": "transformer", "decoder": "transformer", "d_model": 64, "heads": 4, "ffn_dim": 128,
                        "enc_layers": 1, "dec_layers": 1, "dropout": 0.1},
              "recipe": {"batch_size": 4096, "lr": 0.001, "warmup": 1, "max_steps": 1, "checkpoint_every": 1,
                         "valid_every": 1, "precision": "float32"}}


# the same start-up through a RAN model: its 64 positions drop the over-long pairs (the index and its subset)
RAN_SPEC = {**TRAIN_SPEC, "model": {**TRAIN_SPEC["model"], "enc_self_attn": "ran", "dec_self_attn": "ran",
                                    "ran_max_len": 64}}
VOCAB = 8_000


def write_random_store(prefix: Path, pairs: int, rng) -> None:
    """A token store (pipeline.data.token_store's format) of `pairs` random sentences, a million at a time."""
    from pipeline.data.token_store import ID_DTYPE, OFFSET_DTYPE, store_files
    ids_path, offsets_path = store_files(prefix)
    total = 0
    with open(ids_path, "wb") as ids, open(offsets_path, "wb") as offsets:
        offsets.write(np.zeros(1, OFFSET_DTYPE).tobytes())
        for start in range(0, pairs, 1 << 20):
            lengths = rng.integers(5, 56, min(1 << 20, pairs - start))
            lengths[rng.random(len(lengths)) < 0.005] = 70
            ends = total + np.cumsum(lengths, dtype=OFFSET_DTYPE)
            ids.write(rng.integers(4, VOCAB, int(ends[-1]) - total, dtype=ID_DTYPE).tobytes())
            offsets.write(ends.tobytes())
            total = int(ends[-1])


def startup(sizes: list[int], output: str | None) -> None:
    """Peak memory of training's start-up and one update at each corpus size, and its growth per pair."""
    from pipeline.data.vocab import SPECIALS
    results = []
    for pairs in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            d, rng = Path(tmp), np.random.default_rng(pairs)
            (d / "vocab").write_text("".join(f"{t}\n" for t in [*SPECIALS, *(f"t{i}" for i in range(VOCAB - 4))]))
            for split, count in (("train", pairs), ("valid", 200)):
                for side in ("src", "tgt"):
                    write_random_store(d / f"{split}.{side}", count, rng)
            stores = [a for split in ("train", "valid") for side in ("src", "tgt")
                      for a in (f"--{split}-{side}", str(d / f"{split}.{side}"))]
            result = run_step(["train", "--spec", json.dumps(RAN_SPEC), *stores, "--src-vocab", str(d / "vocab"),
                               "--tgt-vocab", str(d / "vocab"), "--run-dir", str(d / "run"), "--out-dir",
                               str(d / "model"), "--curves-dir", str(d / "curves"), "--no-progress"], pairs, 1)
        results.append({"pairs": pairs, "peak_mb": result["peak_mb"], "seconds": result["seconds"]})
        if len(results) > 1:
            first = results[0]
            results[-1]["bytes_per_pair"] = round((result["peak_mb"] - first["peak_mb"]) * 2**20
                                                  / (pairs - first["pairs"]), 1)
        print(" ".join(f"{k}={v}" for k, v in results[-1].items()), flush=True)
    if output:
        Path(output).write_text(json.dumps({"step": "train (start-up and one update)", "model": RAN_SPEC["model"],
                                            "sizes": results}, indent=2) + "\n", encoding="utf-8")


def head(src: Path, dst: Path, lines: int) -> None:
    with open(src, encoding="utf-8") as inp, open(dst, "w", encoding="utf-8") as out:
        out.writelines(itertools.islice(inp, lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=5_000_000)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--merges", type=int, default=32_000)
    parser.add_argument("--quick", action="store_true", help="20,000 pairs, 2,000 merges")
    parser.add_argument("--output", help="also write the results here (JSON)")
    parser.add_argument("--startup", type=int, nargs="+", metavar="PAIRS",
                        help="only training's start-up, on random token stores of these sizes")
    args = parser.parse_args()
    if args.startup:
        return startup(args.startup, args.output)
    if args.quick:
        args.pairs, args.merges = 20_000, 2_000
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        generate(d, args.pairs)
        w = str(args.workers)
        steps = [
            (["tokenize", "--lang", "en", "--input", str(d / "train.en"), "--output", str(d / "tok.en"),
              "--workers", w], args.pairs, args.workers),
            (["tokenize", "--lang", "de", "--input", str(d / "train.de"), "--output", str(d / "tok.de"),
              "--workers", w], args.pairs, args.workers),
            (["clean", "--src-in", str(d / "tok.en"), "--tgt-in", str(d / "tok.de"), "--src-out", str(d / "c.en"),
              "--tgt-out", str(d / "c.de"), "--report", str(d / "clean.json"), "--max-len", "80"], args.pairs, 1),
            (["learn-bpe", "--langs", "en", "de", "--inputs", str(d / "c.en"), str(d / "c.de"), "--codes-dir",
              str(d / "codes"), "--merges", str(args.merges), "--joint"], 2 * args.pairs, 1),
        ]
        for lang in ("en", "de"):
            steps += [
                (["apply-bpe", "--codes-dir", str(d / "codes"), "--side", lang, "--input", str(d / f"c.{lang}"),
                  "--output", str(d / f"bpe.{lang}"), "--workers", w], args.pairs, args.workers),
                (["vocab", "--inputs", str(d / f"bpe.{lang}"), "--output", str(d / f"vocab.{lang}")], args.pairs, 1),
                (["binarize", "--input", str(d / f"bpe.{lang}"), "--vocab", str(d / f"vocab.{lang}"), "--output",
                  str(d / "bin" / f"train.{lang}")], args.pairs, 1),
            ]
        results = []
        for argv, lines, workers in steps:
            results.append(run_step(argv, lines, workers))
            print(" ".join(f"{k}={v}" for k, v in results[-1].items()), flush=True)
        for lang in ("en", "de"):  # a small validation set of the first lines
            head(d / f"bpe.{lang}", d / f"valid.{lang}", 200)
            run_step(["binarize", "--input", str(d / f"valid.{lang}"), "--vocab", str(d / f"vocab.{lang}"),
                      "--output", str(d / "bin" / f"valid.{lang}")], 200, 1)
        stores = [a for split in ("train", "valid") for side, lang in (("src", "en"), ("tgt", "de"))
                  for a in (f"--{split}-{side}", str(d / "bin" / f"{split}.{lang}"))]
        results.append(run_step(["train", "--spec", json.dumps(TRAIN_SPEC), *stores, "--src-vocab", str(d / "vocab.en"),
                                 "--tgt-vocab", str(d / "vocab.de"), "--run-dir", str(d / "run"), "--out-dir",
                                 str(d / "model"), "--curves-dir", str(d / "curves"), "--no-progress"],
                                args.pairs, 1))
        results[-1]["step"] = "train (start-up and one update)"
        print(" ".join(f"{k}={v}" for k, v in results[-1].items()), flush=True)
    summary = {"pairs": args.pairs, "workers": args.workers, "merges": args.merges, "steps": results,
               "max_peak_mb": max(r["peak_mb"] for r in results)}
    print(f"pairs={args.pairs} workers={args.workers} max_peak_mb={summary['max_peak_mb']}")
    if args.output:
        Path(args.output).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
