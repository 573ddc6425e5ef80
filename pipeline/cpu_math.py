"""The code path of torch's CPU math libraries, chosen per scale by params.yaml's `cpu_math`.

portable: the same bits on every x86-64 processor with AVX2 (ATen's AVX2 kernels, MKL's COMPATIBLE branch, oneDNN
up to AVX2), measured by benchmarks/cross_isa.py on an AMD EPYC and an Intel Xeon with AVX-512 and AMX; training
takes about 1.9 times as long on the AMD EPYC and 2.5 times on the Xeon (docs/performance.md (h)). portable-fixed:
the same, with the float32 matrix products of pipeline/fixed_gemm.py (one FMA chain per element, in k order: the
same bits on every x86-64 processor with AVX2 and FMA, by IEEE 754), at about the native path's speed
(docs/performance.md (n)); the tiny default, on which the committed tables are built. native: each processor's
fastest path, whose bits differ between processors. The libraries read these variables when they load, so they
are set in the environment of every job (workflows/rules/common.smk), never inside a running process; a job that
computes on the CPU then calls start().
"""
from __future__ import annotations

import os

MODES = ("portable", "portable-fixed", "native")
GEMM = "PIPELINE_GEMM"   # "fixed": start() makes pipeline/fixed_gemm.py's products torch's
PORTABLE = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "AVX2"}
PORTABLE_FIXED = {**PORTABLE, GEMM: "fixed"}


def environment(mode: str) -> dict[str, str]:
    """The variables a mode sets (none for native)."""
    if mode not in MODES:
        raise ValueError(f"cpu_math: expected one of {', '.join(MODES)}, got {mode!r}")
    return {"portable": dict(PORTABLE), "portable-fixed": dict(PORTABLE_FIXED), "native": {}}[mode]


def apply(mode: str, env=os.environ) -> None:
    """Set a mode's variables in `env` where the user has not set them already."""
    for name, value in environment(mode).items():
        env.setdefault(name, value)


def fixed_products(gpus: int = 0, env=os.environ) -> bool:
    """Whether a job given `gpus` GPUs computes with pipeline/fixed_gemm.py's products: on the CPU (none), where its
    environment asks for them (portable-fixed's PIPELINE_GEMM=fixed, which jobs inherit from Snakemake's)."""
    return not gpus and env.get(GEMM) == "fixed"


def start() -> None:
    """Set up a job that computes on the CPU: the fixed-order matrix products where its environment asks for them
    (fixed_products)."""
    if fixed_products():
        from pipeline import fixed_gemm

        fixed_gemm.use()


def code_path() -> str:
    """What this process computes with on the CPU, e.g. 'torch 2.13.0+cpu, ATen AVX2, GEMM fixed-order FMA,
    MKL_CBWR=COMPATIBLE, oneDNN <= AVX2, 1 thread': in the run key of CPU runs, in train.json and in the tables'
    footers."""
    import torch

    from pipeline import fixed_gemm

    threads = torch.get_num_threads()
    gemm = "GEMM fixed-order FMA, " if fixed_gemm.active() else ""
    return (f"torch {torch.__version__}, ATen {torch.backends.cpu.get_cpu_capability()}, {gemm}"
            f"MKL_CBWR={os.environ.get('MKL_CBWR', 'AUTO')}, oneDNN <= {os.environ.get('ONEDNN_MAX_CPU_ISA', 'ALL')}, "
            f"{threads} thread{'s' if threads != 1 else ''}")
