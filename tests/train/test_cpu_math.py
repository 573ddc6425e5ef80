"""The CPU code path jobs compute on (pipeline/cpu_math.py): what each mode sets, what a process reports, and the
parts of the arithmetic kept off MKL's processor-dependent functions (benchmarks/cross_isa.py measures the rest)."""
import json
import math
import os
import subprocess
import sys

import pytest
import torch

from pipeline import cpu_math
from pipeline.models.layers import SinusoidalPositions
from pipeline.recipe import Recipe
from pipeline.train.builders import build_optimizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_modes_set_their_variables_without_overriding_the_users():
    assert cpu_math.environment("portable") == {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE",
                                                "ONEDNN_MAX_CPU_ISA": "AVX2"}
    assert cpu_math.environment("portable-fixed") == {**cpu_math.environment("portable"), "PIPELINE_GEMM": "fixed"}
    assert cpu_math.environment("native") == {}
    with pytest.raises(ValueError, match="cpu_math: expected one of portable, portable-fixed, native, got 'fast'"):
        cpu_math.environment("fast")
    env = {"MKL_CBWR": "AUTO"}
    cpu_math.apply("portable", env)
    assert env == {"MKL_CBWR": "AUTO", "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}


def _code_path(extra: dict) -> str:
    env = {k: v for k, v in os.environ.items() if k not in cpu_math.PORTABLE_FIXED}
    env.update(extra, PYTHONPATH=ROOT, OMP_NUM_THREADS="1")
    code = ("import json, torch; from pipeline.cpu_math import code_path, start; start(); "
            "print(json.dumps(code_path()))")
    return json.loads(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                     check=True).stdout)


@pytest.mark.skipif(torch.backends.cpu.get_cpu_capability() == "DEFAULT", reason="a CPU without AVX2")
def test_a_process_reports_the_code_path_it_runs_on():
    portable = _code_path(cpu_math.PORTABLE)
    assert portable == f"torch {torch.__version__}, ATen AVX2, MKL_CBWR=COMPATIBLE, oneDNN <= AVX2, 1 thread"
    fixed = _code_path(cpu_math.PORTABLE_FIXED)
    assert fixed == (f"torch {torch.__version__}, ATen AVX2, GEMM fixed-order FMA, MKL_CBWR=COMPATIBLE, "
                     f"oneDNN <= AVX2, 1 thread")
    scalar = _code_path({**cpu_math.PORTABLE, "ATEN_CPU_CAPABILITY": "default"})
    assert scalar.startswith(f"torch {torch.__version__}, ATen DEFAULT, MKL_CBWR=COMPATIBLE")
    assert ", MKL_CBWR=AUTO, oneDNN <= ALL, 1 thread" in _code_path({})


def test_sinusoid_table_is_the_float64_one_rounded_once():
    """float32 sin and cos go through MKL, whose last bit differs between processors; the table does not."""
    table = SinusoidalPositions(8, 50).table
    expected = [[math.sin(p * math.exp(i * -2.0 * math.log(10000.0) / 8)) for i in range(4)]
                + [math.cos(p * math.exp(i * -2.0 * math.log(10000.0) / 8)) for i in range(4)] for p in range(50)]
    assert torch.equal(table, torch.tensor(expected, dtype=torch.float64).float())


def test_adam_takes_the_fused_update_whose_square_root_is_exact():
    """The per-tensor and foreach updates take MKL's square root, whose last bit differs between processors (and is
    not always the correctly rounded one: it is not for a sixth of these values on an AMD EPYC); the fused update
    takes the processor's own, exact one."""
    recipe = Recipe.from_dict({"lr": 0.1, "batch_size": 8, "max_steps": 1, "optimizer": "adam",
                               "adam_betas": [0.9, 0.98], "adam_eps": 1e-9}, where="recipe")
    grad = torch.rand(10_000, generator=torch.Generator().manual_seed(0)) * 10
    param = torch.nn.Parameter(torch.zeros(10_000))
    param.grad = grad.clone()
    optimizer = build_optimizer([param], recipe)
    assert optimizer.defaults["fused"] is True and optimizer.defaults["foreach"] is not True
    optimizer.step()
    # one step: m = 0.1 g, v = 0.02 g^2, update = lr (m / 0.1) / (sqrt(v / 0.02) + eps) = lr (to rounding)
    assert torch.allclose(param.detach(), torch.full_like(param, -0.1), rtol=1e-5, atol=0)
