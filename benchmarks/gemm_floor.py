#!/usr/bin/env python
"""How fast the side-by-side run could be on this machine: the float32 matrix products of our training updates and of
our beam search over the test set (counted by torch.profiler), the rate of a large product on the same threads (the
machine's practical peak), and so the fastest that any code doing those products could train and decode here, and
its ratio to the peer's measured speed. Run after nmt_speed.py has trained and saved the model in --work.

    python benchmarks/gemm_floor.py --work /tmp/side_by_side/ours-1 --peer /tmp/side_by_side/peer-1.txt
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def peak_gflops(size: int = 2048, repeats: int = 5) -> float:
    """GFLOP/s of the best of `repeats` float32 size^3 products (after one to warm up)."""
    import torch

    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b
    best = float("inf")
    for _ in range(repeats):
        began = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - began)
    return 2 * size ** 3 / best / 1e9


def products(run) -> tuple[float, float, float]:
    """(GFLOP of the matrix products, their seconds, all operators' seconds) of run() under torch.profiler."""
    from profile_update import GEMMS
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], with_flops=True) as prof:
        run()
    events = prof.key_averages()
    gemm = [e for e in events if e.key in GEMMS]
    return (sum(e.flops for e in gemm) / 1e9, sum(e.self_cpu_time_total for e in gemm) / 1e6,
            sum(e.self_cpu_time_total for e in events) / 1e6)


def training(work: Path, updates: int, seed: int) -> dict[str, float]:
    """The products of `updates` updates of our trainer on the work dir's corpus (after 3 unprofiled ones)."""
    import torch

    from nmt_speed import encoded, make_recipe, model_spec
    from pipeline.data.token_store import Pairs
    from pipeline.data.vocab import Vocab
    from pipeline.models.registry import build_model
    from pipeline.train.distributed import Dist
    from pipeline.train.trainer import Trainer

    vocabs = {side: Vocab.load(work / f"vocab.{side}") for side in ("src", "tgt")}
    pairs = {split: Pairs.of(encoded(work, split), split) for split in ("train", "valid")}
    spec, recipe = model_spec(), make_recipe(updates + 3, seed, "float32")
    torch.manual_seed(seed)
    model = build_model(spec, len(vocabs["src"]), len(vocabs["tgt"]))
    with tempfile.TemporaryDirectory() as run_dir:
        trainer = Trainer(model, pairs["train"], pairs["valid"], recipe, Path(run_dir),
                          {"model": spec, "precision": "float32"}, Dist(), False, {})
        batches = iter(trainer._batches(0))
        tokens = 0

        def update(count: bool = True) -> None:
            nonlocal tokens
            batch = next(batches)
            tokens += count * (int(pairs["train"].tgt_lengths[batch].sum()) + len(batch))
            trainer.train_step(batch)
            trainer.state.step += 1

        for _ in range(3):
            update(count=False)
        gflop, gemm_s, ops_s = products(lambda: [update() for _ in range(updates)])
    return {"gflop_per_update": gflop / updates, "tokens_per_update": tokens / updates, "gemm_s": gemm_s,
            "ops_s": ops_s}


def decoding(work: Path) -> dict[str, float]:
    """The products of beam-4 decoding of the test set in batches of 64 (nmt_speed.py's, at the model's training
    precision), after one unprofiled pass."""
    from nmt_speed import test_translation

    run, refs = test_translation(work, beam=4, gen_batch=64)
    run()
    gflop, gemm_s, ops_s = products(run)
    return {"gflop": gflop, "sentences": len(refs), "gemm_s": gemm_s, "ops_s": ops_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="an nmt_speed.py --work directory, trained")
    parser.add_argument("--peer", type=Path, help="the peer's key=value lines (side_by_side.sh's peer-SEED.txt)")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--updates", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
    import torch

    torch.set_num_threads(args.threads)
    peer = dict(line.strip().split("=", 1) for line in open(args.peer) if "=" in line) if args.peer else {}
    peak = peak_gflops()
    train, decode = training(args.work, args.updates, args.seed), decoding(args.work)
    train_floor = peak / (train["gflop_per_update"] / train["tokens_per_update"])  # target tokens/s
    decode_floor = decode["sentences"] / (decode["gflop"] / peak)  # sentences/s
    lines = [("threads", args.threads), ("peak_gflops", f"{peak:.1f}"),
             ("train_gemm_gflop_per_update", f"{train['gflop_per_update']:.2f}"),
             ("train_target_tokens_per_update", f"{train['tokens_per_update']:.0f}"),
             ("train_gemm_share", f"{train['gemm_s'] / train['ops_s']:.3f}"),
             ("train_gemm_gflops", f"{train['gflop_per_update'] * args.updates / train['gemm_s']:.1f}"),
             ("train_floor_tokens_per_s", f"{train_floor:.0f}"),
             ("decode_gemm_gflop", f"{decode['gflop']:.1f}"),
             ("decode_gemm_share", f"{decode['gemm_s'] / decode['ops_s']:.3f}"),
             ("decode_gemm_gflops", f"{decode['gflop'] / decode['gemm_s']:.1f}"),
             ("decode_floor_sent_per_s", f"{decode_floor:.0f}")]
    if peer:
        lines += [("peer_train_tokens_per_s", peer["train_tokens_per_s"]),
                  ("train_ratio_bound", f"{train_floor / float(peer['train_tokens_per_s']):.2f}"),
                  ("peer_decode_sent_per_s", peer["decode_sent_per_s"]),
                  ("decode_ratio_bound", f"{decode_floor / float(peer['decode_sent_per_s']):.2f}")]
    for key, value in lines:
        print(f"{key}={value}")


if __name__ == "__main__":
    main()
