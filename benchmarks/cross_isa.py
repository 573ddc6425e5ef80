#!/usr/bin/env python
"""Same bits on another processor? Trains one tiny system on the CPU and decodes its test set under several pinnings
of the code paths of torch's CPU math libraries (ATen's vector kernels, MKL, oneDNN), and hashes single ops under
each; run it on two machines, then compare the two reports.

    python benchmarks/cross_isa.py --data artifacts/tiny/data/en-de/bpe --out DIR [--steps 300] [--jobs 2]
    python benchmarks/cross_isa.py --compare DIR_A/cross_isa.json DIR_B/cross_isa.json
    python benchmarks/cross_isa.py --compare-probes A/cross_isa_probe.json B/cross_isa_probe.json   # single ops
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.cpu_math import PORTABLE, PORTABLE_FIXED  # noqa: E402

EXP = "ende-base"
# name -> environment; every one runs on one thread
PINNINGS = {
    "native": {},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_CBWR": "AVX2"},
    "portable": PORTABLE,  # params.yaml's cpu_math: portable
    "portable-fixed": PORTABLE_FIXED,  # cpu_math: portable-fixed (pipeline/fixed_gemm.py's products)
    "portable-scalar": {**PORTABLE, "ATEN_CPU_CAPABILITY": "default"},
}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def probe() -> dict:
    """sha256 of the outputs of the ops a tiny training and search use, on seeded inputs."""
    import torch
    import torch.nn.functional as F

    from pipeline import cpu_math

    cpu_math.start()   # under portable-fixed: the fixed-order products (pipeline/fixed_gemm.py), as a job's
    torch.set_num_threads(1)
    torch.manual_seed(0)  # the modules' initialisation and dropout
    gen = torch.Generator().manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=gen)

    def h(t):
        return sha(t.detach().contiguous().numpy().tobytes())

    a, b, bias = randn(257, 193), randn(193, 131), randn(131)
    q, k = randn(8, 37, 16), randn(8, 41, 16)
    x = randn(37, 64)
    ln = torch.nn.LayerNorm(64)
    gru = torch.nn.GRUCell(64, 64)
    ops = {
        "mm": a @ b, "addmm": torch.addmm(bias, a, b), "bmm": torch.bmm(q, k.transpose(1, 2)),
        "softmax": F.softmax(a, -1), "log_softmax": F.log_softmax(a, -1), "layer_norm": ln(x),
        "exp": a.exp(), "tanh": a.tanh(), "sigmoid": a.sigmoid(), "relu": F.relu(a), "sum": a.sum(-1),
        "dropout": F.dropout(a, 0.1, training=True), "gru_cell": gru(x),
    }
    w = torch.nn.Parameter(randn(300, 64))
    idx = torch.randint(0, 300, (50, 7), generator=gen)
    target = torch.randint(0, 131, (257,), generator=gen)
    logits = torch.nn.Parameter(a @ b)
    loss = F.cross_entropy(logits, target, label_smoothing=0.1) + F.embedding(idx, w).pow(2).mean()
    loss.backward()
    ops.update(ce_grad=logits.grad, embedding_grad=w.grad)
    for impl in ("single", "foreach", "fused"):  # torch.optim.Adam's three implementations
        params = [torch.nn.Parameter(w.detach().clone()), torch.nn.Parameter(logits.detach().clone())]
        for p, g in zip(params, (w.grad, logits.grad)):
            p.grad = g.clone()
        flags = {"foreach": impl == "foreach", "fused": True if impl == "fused" else None}
        opt = torch.optim.Adam(params, lr=1e-3, betas=(0.9, 0.98), eps=1e-9, **flags)
        for _ in range(3):
            opt.step()
        ops.update({f"adam_{impl}_w": params[0], f"adam_{impl}_logits": params[1]})
    for name, g in (("w", w.grad), ("logits", logits.grad)):  # Adam's first update, op by op
        m = torch.zeros_like(g).lerp_(g, 0.1)
        v = torch.zeros_like(g).mul_(0.98).addcmul_(g, g, value=0.02)
        root = v.sqrt()
        denom = (root / (1 - 0.98) ** 0.5).add_(1e-9)
        ops.update({f"lerp_{name}": m, f"addcmul_{name}": v, f"sqrt_{name}": root, f"div_{name}": denom,
                    f"addcdiv_{name}": w.detach().clone().addcdiv_(m, denom, value=-1e-3 / 0.1)
                    if name == "w" else logits.detach().clone().addcdiv_(m, denom, value=-1e-2),
                    f"foreach_sqrt_{name}": torch._foreach_sqrt([v])[0]})
    special = torch.cat([torch.zeros(40), torch.full((40,), 1e-40), randn(4000).abs() * 1e-6, randn(4000) * 30])
    for fn in ("sqrt", "rsqrt", "exp", "log", "tanh", "sigmoid", "reciprocal"):
        ops[f"{fn}_special"] = getattr(special.abs() + (1e-30 if fn in ("log", "reciprocal") else 0), fn)()
    x2 = torch.nn.Parameter(randn(37, 64))
    (F.dropout(F.relu(ln(x2)), 0.1).softmax(-1).log().sum() + torch.linalg.vector_norm(x2)).backward()
    ops.update(ln_softmax_grad=x2.grad, norm=torch.linalg.vector_norm(a), mean=a.mean(), var=a.var(-1))
    steps = range(1, 801)  # Adam's bias corrections and the warmup's square roots, in Python floats (libm)
    ops["python_pow"] = torch.tensor([0.98 ** s for s in steps] + [(1 - 0.98 ** s) ** 0.5 for s in steps]
                                     + [__import__("math").sqrt(s / 150) for s in steps], dtype=torch.float64)
    ops.update(sin=a.sin(), cos=a.cos(), sin64=a.double().sin(), cos64=a.double().cos())

    def onednn_mm(x, y):   # x @ y by oneDNN's own GEMM: a candidate portable GEMM (docs/performance.md (m))
        return torch._C._nn.mkldnn_linear(x.to_mkldnn(), y.t().contiguous().to_mkldnn()).to_dense()

    ffn = randn(3000, 96), randn(96, 384)          # a tiny Big's feed-forward layer over a 3,000-token batch
    long_k = randn(384, 3000), randn(3000, 96)      # its weight gradient: the batch's tokens summed over
    ops.update(onednn_mm=onednn_mm(a, b), onednn_mm_ffn=onednn_mm(*ffn), onednn_mm_long_k=onednn_mm(*long_k),
               mm_ffn=ffn[0] @ ffn[1], mm_long_k=long_k[0] @ long_k[1])
    from pipeline.models.registry import build_model  # one forward and backward of the tiny ende-base model

    torch.manual_seed(1)
    model = build_model(spec_of(1)[0]["model"], 500, 600)
    src, tgt = torch.randint(4, 500, (16, 21), generator=gen), torch.randint(4, 600, (16, 19), generator=gen)
    out = model(src, tgt)
    (out.float() * randn(*out.shape)).sum().backward()
    ops.update(model_out=out, **{f"grad:{name}": p.grad for name, p in model.named_parameters()
                                 if p.grad is not None})
    return {name: h(t) for name, t in ops.items()}


def cpu() -> dict:
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "?")
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), [])
    return {"model": model, "avx512f": "avx512f" in flags, "amx_tile": "amx_tile" in flags,
            "machine": platform.machine()}


def spec_of(steps: int) -> tuple[dict, dict]:
    """The tiny ende-base training spec (its recipe cut to `steps` updates) and its decoding spec."""
    from pipeline.config import parse_params, read_paper_files
    import yaml

    params = parse_params(yaml.safe_load((ROOT / "params.yaml").read_text()), scale="tiny",
                          papers=read_paper_files(ROOT))
    exp = params.experiments[EXP]
    recipe = dict(params.recipes[exp.recipe].train)
    recipe.update(max_steps=steps, checkpoint_every=steps, valid_every=steps)
    train = {"experiment": EXP, "model": params.model_spec(EXP), "recipe": recipe, "seed": params.seed_of(EXP),
             "init": None}
    return train, params.decoding_of(EXP)


def call(cmd: list[str], env: dict) -> str:
    """Run one step; its stderr's end on failure."""
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd[:4])} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


def run_pinning(name: str, pins: dict, data: Path, out: Path, train: dict, decoding: dict) -> dict:
    """Train, decode and probe under one pinning (a fresh process each, so the pins apply from torch's import)."""
    env = {k: v for k, v in os.environ.items() if k not in {*PORTABLE_FIXED, "MKL_ENABLE_INSTRUCTIONS"}}
    env.update(pins, OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="",  # the CPU, also where a GPU is at hand
                PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])))
    work = out / name
    py = [sys.executable, "-m", "pipeline"]
    vocab = ["--src-vocab", str(data / "vocab.src"), "--tgt-vocab", str(data / "vocab.tgt")]
    stores = []
    for split in ("train", "valid"):
        for side in ("src", "tgt"):  # the token stores training reads (pipeline/data/token_store.py)
            call(py + ["binarize", "--input", str(data / f"{split}.{side}"), "--vocab", str(data / f"vocab.{side}"),
                       "--output", str(work / "bin" / f"{split}.{side}")], env)
            stores += [f"--{split}-{side}", str(work / "bin" / f"{split}.{side}")]
    started = time.perf_counter()
    call(py + ["train", "--spec", json.dumps(train), *vocab, *stores,
               "--run-dir", str(work / "run"), "--out-dir", str(work / "model"),
               "--curves-dir", str(work / "curves"), "--no-progress"], env)
    trained = time.perf_counter()
    model, hyp = work / "model" / "model.pt", work / "test.hyp"
    call(py + ["translate", "--spec", json.dumps(decoding), "--model", str(model), *vocab,
               "--input", str(data / "test.src"), "--output", str(hyp), "--lang", "de", "--no-progress"], env)
    decoded = time.perf_counter()
    probed = call([sys.executable, __file__, "--probe"], env)
    return {"pins": pins, **json.loads(probed), "model_sha": sha(model.read_bytes()),
            "hyp_sha": sha(hyp.read_bytes()), "train_s": round(trained - started, 1),
            "decode_s": round(decoded - trained, 1)}


def report(args) -> None:
    train, decoding = spec_of(args.steps)
    args.out.mkdir(parents=True, exist_ok=True)
    names = list(PINNINGS)[:2] if args.quick else list(PINNINGS)
    with ThreadPoolExecutor(args.jobs) as pool:
        futures = {n: pool.submit(run_pinning, n, PINNINGS[n], args.data, args.out, train, decoding) for n in names}
        results = {n: f.result() for n, f in futures.items()}
    import torch

    found = {"cpu": cpu(), "torch": torch.__version__, "steps": args.steps, "pinnings": results}
    (args.out / "cross_isa.json").write_text(json.dumps(found, indent=1) + "\n")
    print(json.dumps(found["cpu"]), found["torch"])
    for name, r in results.items():
        print(f"{name:16} capability {r['capability']:8} model {r['model_sha']} hyp {r['hyp_sha']} "
              f"train {r['train_s']:6.1f} s  decode {r['decode_s']:5.1f} s")


def compare(a_path: Path, b_path: Path) -> None:
    """Per pinning: are the trained model and its hypotheses the same bytes on both machines, and which ops differ."""
    a, b = (json.loads(Path(p).read_text()) for p in (a_path, b_path))
    print(f"A: {a['cpu']['model']} (torch {a['torch']})\nB: {b['cpu']['model']} (torch {b['torch']})")
    for name in [n for n in a["pinnings"] if n in b["pinnings"]]:
        ra, rb = a["pinnings"][name], b["pinnings"][name]
        same = ra["model_sha"] == rb["model_sha"] and ra["hyp_sha"] == rb["hyp_sha"]
        ops = [k for k in ra if k not in {"pins", "train_s", "decode_s", "capability", "model_sha", "hyp_sha"}
               and ra[k] != rb.get(k)]
        print(f"{name:16} model and hypotheses {'IDENTICAL' if same else 'differ'}; "
              f"{len(ops)} of {len(ra) - 6} ops differ{': ' + ', '.join(ops[:12]) if ops else ''}"
              f"{' ...' if len(ops) > 12 else ''}; train {ra['train_s']} s vs {rb['train_s']} s")


def compare_probes(a_path: Path, b_path: Path) -> None:
    """Two --probe outputs (two processors, the same pinning): which single ops differ."""
    a, b = (json.loads(Path(p).read_text()) for p in (a_path, b_path))
    ops = [k for k in a if k != "capability" and a[k] != b.get(k)]
    print(f"{len(ops)} of {len(a) - 1} ops differ{': ' + ', '.join(ops) if ops else ''}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT / "artifacts/tiny/data/en-de/bpe")
    parser.add_argument("--out", type=Path, default=Path("cross_isa"))
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="two pinnings only")
    parser.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--compare", nargs=2, type=Path, metavar="JSON")
    parser.add_argument("--compare-probes", nargs=2, type=Path, metavar="JSON", help="two --probe outputs")
    args = parser.parse_args()
    if args.probe:
        import torch

        print(json.dumps({"capability": torch.backends.cpu.get_cpu_capability(), **probe()}))
    elif args.compare:
        compare(*args.compare)
    elif args.compare_probes:
        compare_probes(*args.compare_probes)
    else:
        report(args)


if __name__ == "__main__":
    main()
