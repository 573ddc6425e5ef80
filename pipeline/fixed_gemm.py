"""A float32 matrix product whose bits are the same on every x86-64 processor with AVX2 (cpu_math: portable-fixed).

MKL's products differ in their last bits between processors on every branch but COMPATIBLE, which is 2.5-3.6x
slower than its AVX2 branch (docs/performance.md (h), (m)). fixed_gemm.c computes each element as one chain of
fused multiply-adds in the order of k, which IEEE 754 rounds the same way everywhere, at about the speed of MKL's
AVX2 branch for the tiny models' shapes, or faster in AVX-512's wider vectors where the processor has them (the
same chains, so the same bits: docs/performance.md (u)). fixed_gemm_aten.cpp makes it torch's CPU kernel of
aten::mm, addmm, bmm and baddbmm once use() has run, so that every float32 product of the process takes it, those
of autograd's backward too; other dtypes go on to torch's own kernels. Both are compiled on first use with the machine's
compilers ($CC, $CXX; default cc, c++) into a cache keyed by the sources, flags and torch version.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from pipeline.errors import PipelineError

KERNEL = Path(__file__).with_suffix(".c")
REGISTRATION = Path(__file__).with_name("fixed_gemm_aten.cpp")
# fixed: the kernel's FMAs are explicit; -ffp-contract=off keeps the compiler from fusing anything else
KERNEL_FLAGS = ("-O2", "-mavx2", "-mfma", "-ffp-contract=off", "-fPIC")
_state: dict = {}


def cache_dir() -> Path:
    """Where builds of the pipeline's own code are kept between runs: $XDG_CACHE_HOME/nmt-repro or ~/.cache/nmt-repro
    (this kernel; pipeline/code_facts.py's answers)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nmt-repro"


def _commands(out: Path) -> list[list[str]]:
    """The compiler commands that build the library at `out` (kernel object, registration object, link)."""
    import torch
    from torch.utils.cpp_extension import include_paths, library_paths

    cc, cxx = os.environ.get("CC", "cc"), os.environ.get("CXX", "c++")
    lib = library_paths()[0]
    abi = f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}"
    return [[cc, *KERNEL_FLAGS, "-c", str(KERNEL), "-o", f"{out}.kernel.o"],
            [cxx, "-O2", "-std=c++20", "-fPIC", abi, *(f"-I{p}" for p in include_paths()), "-c", str(REGISTRATION),
             "-o", f"{out}.aten.o"],
            [cxx, "-shared", f"{out}.kernel.o", f"{out}.aten.o", "-o", str(out), f"-L{lib}", f"-Wl,-rpath,{lib}",
             "-ltorch", "-ltorch_cpu", "-lc10"]]


def library_path() -> Path:
    """The compiled library of these sources, flags and torch, built first where it is missing (into a temporary
    name renamed into place, so that jobs starting together never load half a file)."""
    import torch

    key = hashlib.sha256(KERNEL.read_bytes() + REGISTRATION.read_bytes()
                         + " ".join([*KERNEL_FLAGS, torch.__version__]).encode()).hexdigest()[:16]
    path = cache_dir() / f"fixed_gemm-{key}.so"
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".build-") as build:
        tmp = Path(build) / path.name
        for command in _commands(tmp):
            try:
                done = subprocess.run(command, capture_output=True, text=True)
            except FileNotFoundError:
                raise PipelineError(f"cpu_math portable-fixed computes its matrix products with {KERNEL.name}, built "
                                    f"with a C and C++ compiler, and there is none ({command[0]}): install them "
                                    f"(Debian: apt install gcc g++), set CC and CXX, or set cpu_math: portable in "
                                    f"params.yaml (no compiler; other bits than the committed tables')") from None
            if done.returncode != 0:
                errors = [line for line in done.stderr.splitlines() if "error" in line] or done.stderr.splitlines()
                raise PipelineError(f"{command[0]} could not build {path.name} from {KERNEL.name} and "
                                    f"{REGISTRATION.name}: {(errors or ['no message'])[0].strip()}")
        os.replace(tmp, path)
    return path


def library() -> ctypes.CDLL:
    """The loaded library (built by library_path), once per process; its kernels are not yet torch's (use())."""
    if "lib" not in _state:
        lib = ctypes.CDLL(str(library_path()))
        i64, ptr = ctypes.c_int64, ctypes.c_void_p
        lib.fixed_gemm_batched.argtypes = [i64, i64, i64, i64, ptr, i64, i64, i64, ptr, i64, i64, i64,
                                           ptr, i64, i64, ctypes.c_int]
        lib.fixed_gemm_batched.restype = ctypes.c_int
        lib.fixed_gemm_reference.argtypes = [i64, i64, i64, ptr, ptr, ptr, ctypes.c_int]
        lib.fixed_gemm_set_width.argtypes = [ctypes.c_int]
        lib.fixed_gemm_tile_columns.argtypes = [i64, i64, i64]
        if not lib.fixed_gemm_supported():
            raise PipelineError("cpu_math portable-fixed computes its matrix products with AVX2 and FMA instructions, "
                                "which this processor lacks: set cpu_math: native in params.yaml")
        _state["lib"] = lib
    return _state["lib"]


def batched_product(a, b, out=None):
    """The kernel called directly (for tests and benchmarks): [batch, m, n] = a [batch, m, k] @ b [batch, k, n]
    (float32, any strides), added to `out` (contiguous [batch, m, n]) where given, else into a new tensor."""
    import torch

    batch, m, k = a.shape
    n = b.shape[2]
    accumulate = out is not None
    if out is None:
        out = torch.empty((batch, m, n), dtype=torch.float32)
    if batch and m and n:
        status = library().fixed_gemm_batched(batch, m, n, k, a.data_ptr(), a.stride(0), a.stride(1), a.stride(2),
                                              b.data_ptr(), b.stride(0), b.stride(1), b.stride(2),
                                              out.data_ptr(), out.stride(0), out.stride(1), int(accumulate))
        if status != 0:
            raise MemoryError(f"fixed_gemm: no memory for the packing buffers of a {m}x{k} @ {k}x{n} product")
    return out


def set_width(bits: int) -> int:
    """Compute products with vectors of at most `bits` (256: AVX2, 512: AVX-512 where the processor has it, the
    default) and return the width now in effect; for tests and benchmarks, as every width gives the same bits."""
    return library().fixed_gemm_set_width(bits)


def tile_columns(m: int, n: int, k: int) -> int:
    """The columns of the kernel tiles an [m,k] @ [k,n] product runs in: 32 (AVX-512) or 16 (AVX2); for tests."""
    return library().fixed_gemm_tile_columns(m, n, k)


def reference(a, b, c=None):
    """The definition, one element at a time in C (for tests): c + a @ b, each element one FMA chain in k order."""
    import torch

    a, b = a.contiguous(), b.contiguous()
    out = torch.zeros(a.shape[0], b.shape[1]) if c is None else c.clone().contiguous()
    library().fixed_gemm_reference(a.shape[0], b.shape[1], a.shape[1], a.data_ptr(), b.data_ptr(), out.data_ptr(),
                                   int(c is not None))
    return out


def use() -> None:
    """From here on, torch computes this process's float32 CPU matrix products with the fixed-order kernel (once;
    built and loaded now, so that a missing compiler stops the job before it starts)."""
    if not _state.get("installed"):
        library().fixed_gemm_install()
        _state["installed"] = True


def active() -> bool:
    """Whether this process's float32 CPU products are the fixed-order kernel's (use())."""
    return bool(_state.get("installed"))


if __name__ == "__main__":   # `python -m pipeline.fixed_gemm`: build the library now and print where it is
    print(library_path())
    sys.exit(0)
