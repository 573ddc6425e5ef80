#!/usr/bin/env python
"""Where a tiny training update's time goes: torch.profiler over the updates of one experiment's real trainer.

Builds the experiment's model, recipe and token stores as the train step does (its corpus must be built:
`snakemake --profile workflows/profiles/local -- artifacts/tiny/data/<corpus>/ready`), runs SKIP updates unprofiled,
then UPDATES under torch.profiler, and prints the time per update split into the matrix products (by shape class:
the output projection over the vocabulary apart), softmax and loss, the optimizer, and the rest (elementwise,
autograd, Python); then the top operators by self CPU time. The CPU code path is params.yaml's `cpu_math` at the
scale (portable: the same bits on every x86-64 with AVX2), set before torch loads, as the rules set it.

    python benchmarks/profile_update.py [--experiment ende-big] [--updates 20] [--skip 5] [--threads 1]
                                        [--gemm-width 256]   # portable-fixed's AVX2 kernel where AVX-512 is the default
"""
from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GEMMS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")
LOSS = ("softmax", "log_softmax", "nll_loss", "cross_entropy", "logsumexp", "_softmax")


def category(name: str, shapes: list, vocab: int) -> str:
    """An operator's share of an update: 'output projection', 'other matrix products', 'softmax and loss',
    'optimizer' or 'rest'."""
    if name in GEMMS:
        dims = [d for shape in shapes for d in (shape or [])]
        return "output projection (GEMM over the vocabulary)" if vocab in dims else "other matrix products"
    if any(key in name for key in LOSS):
        return "softmax and loss"
    if "_foreach_" in name or "adam" in name.lower() or name.startswith("Optimizer."):
        return "optimizer"
    return "rest (elementwise, norms, autograd, copies)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiment", default="ende-big")
    parser.add_argument("--updates", type=int, default=20)
    parser.add_argument("--skip", type=int, default=5, help="updates before profiling (allocations, warm caches)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--cpu-math", choices=("portable", "portable-fixed", "native"),
                        help="default: params.yaml's at its scale")
    parser.add_argument("--gemm-width", type=int, choices=(256, 512), default=512,
                        help="portable-fixed's widest vectors (the same bits at either)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    os.chdir(ROOT)

    from pipeline import cpu_math
    from pipeline.config import load_params
    from pipeline.paths import Paths

    params = load_params("params.yaml")
    mode = args.cpu_math or params.cpu_math
    if "PROFILE_UPDATE_CHILD" not in os.environ:   # the math libraries read the variables when they load
        env = {k: v for k, v in os.environ.items() if k not in cpu_math.PORTABLE_FIXED}
        os.execve(sys.executable, [sys.executable, *sys.argv], {**env, **cpu_math.environment(mode),
                                                                "PROFILE_UPDATE_CHILD": "1",
                                                                "OMP_NUM_THREADS": str(args.threads)})

    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    from pipeline.data.token_store import Pairs, TokenArray
    from pipeline.data.vocab import Vocab
    from pipeline.models.registry import build_model
    from pipeline.precision import resolve
    from pipeline.recipe import Recipe
    from pipeline.train.distributed import Dist
    from pipeline.train.trainer import Trainer

    torch.set_num_threads(args.threads)
    cpu_math.start()
    if mode == "portable-fixed":
        from pipeline import fixed_gemm
        print(f"gemm_width={fixed_gemm.set_width(args.gemm_width)}")
    exp = params.experiments[args.experiment]
    data = functools.partial(Paths(params.root).data, exp.corpus)   # the train rule's inputs
    stores = {f"{split}.{side}": TokenArray.open(data("bin", f"{split}.{side}"))
              for split in ("train", "valid") for side in ("src", "tgt")}
    src_vocab, tgt_vocab = (Vocab.load(data("bpe", f"vocab.{side}")) for side in ("src", "tgt"))
    spec = params.model_spec(exp.name)
    recipe = Recipe.from_dict({**params.recipes[exp.recipe].train, "seed": params.seed_of(exp.name)},
                              where=f"recipe of {exp.name}")
    torch.manual_seed(recipe.seed)
    model = build_model(spec, len(src_vocab), len(tgt_vocab))
    dist_ = Dist()
    with tempfile.TemporaryDirectory() as run_dir:
        trainer = Trainer(model, Pairs(stores["train.src"], stores["train.tgt"]),
                          Pairs(stores["valid.src"], stores["valid.tgt"]), recipe, Path(run_dir),
                          {"experiment": exp.name, "model": spec, "precision": resolve(recipe.precision, dist_.device)},
                          dist_, False, {})
        batches = iter(trainer._batches(0))

        def update():
            trainer.train_step(next(batches))
            trainer.state.step += 1

        for _ in range(args.skip):
            update()
        began = time.perf_counter()
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            for _ in range(args.updates):
                with record_function("update"):
                    update()
        wall = (time.perf_counter() - began) / args.updates

    shares: dict[str, float] = defaultdict(float)
    for event in prof.key_averages(group_by_input_shape=True):
        if event.key == "update":
            continue
        shares[category(event.key, event.input_shapes, len(tgt_vocab))] += event.self_cpu_time_total
    total = sum(shares.values())
    print(f"experiment={exp.name} params={sum(p.numel() for p in model.parameters())} "
          f"tgt_vocab={len(tgt_vocab)} batch={recipe.batch_size} {recipe.batch_unit} threads={args.threads} "
          f"cpu_math={mode} ({cpu_math.code_path()})")
    print(f"ms_per_update={wall * 1000:.1f} (profiled: {total / 1000 / args.updates:.1f} ms of operators)")
    for name, us in sorted(shares.items(), key=lambda kv: -kv[1]):
        print(f"  {us / total:6.1%}  {us / 1000 / args.updates:8.1f} ms  {name}")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.top))


if __name__ == "__main__":
    main()
