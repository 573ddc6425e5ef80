"""pipeline/fixed_gemm.py: portable-fixed's float32 matrix products are one FMA chain per element in the order of k
(fixed_gemm.c's reference, hand-worked values), whatever the shapes, strides and blocking; as torch's CPU kernel it
takes every product of a forward and backward pass and leaves other dtypes to torch."""
import os
import subprocess
import sys

import pytest
import torch

from pipeline import cpu_math, fixed_gemm
from pipeline.errors import PipelineError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = pytest.mark.skipif(not torch.backends.cpu.get_cpu_capability().startswith("AVX"),
                                reason="a CPU without AVX2")


def product(a, b, c=None):
    """fixed_gemm's batched_product of one 2-D pair."""
    out = None if c is None else c.clone().contiguous().unsqueeze(0)
    return fixed_gemm.batched_product(a.unsqueeze(0), b.unsqueeze(0), out)[0]


def test_sums_run_in_the_order_of_k_with_one_rounding_per_step():
    # float32's spacing at 1e8 is 8: 1e8 + 1 rounds to 1e8, so only the order of the terms decides these sums
    ones = torch.ones(1, 3)
    assert product(ones, torch.tensor([[1e8], [1.0], [-1e8]])).item() == 0.0
    assert product(ones, torch.tensor([[1.0], [1e8], [-1e8]])).item() == 0.0
    assert product(ones, torch.tensor([[1e8], [-1e8], [1.0]])).item() == 1.0
    # fused: (1 + 2^-12)(1 + 2^-13) - 1 = 2^-12 + 2^-13 + 2^-25 exactly; a product rounded first loses the 2^-25
    a, b = torch.tensor([[1 + 2 ** -12]]), torch.tensor([[1 + 2 ** -13]])
    assert product(a, b, torch.tensor([[-1.0]])).item() == 2 ** -12 + 2 ** -13 + 2 ** -25


@pytest.fixture(params=[256, 512])
def width(request):
    """The kernels' widest vectors for one test (the narrow 6x16 kernel, or also the 12x32 AVX-512 one)."""
    if fixed_gemm.set_width(request.param) != request.param:
        pytest.skip(f"this processor lacks AVX-512F, so the {request.param}-bit kernel cannot run here")
    yield request.param
    fixed_gemm.set_width(512)


def test_wide_tiles_take_the_large_products_where_the_processor_has_avx512(width):
    assert fixed_gemm.tile_columns(100, 100, 100) == width // 16
    assert fixed_gemm.tile_columns(21, 24, 21) == 16   # attention's small products stay in the narrow tiles
    assert fixed_gemm.tile_columns(11, 2479, 96) == 16


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (7, 5, 3), (6, 256, 16), (13, 300, 37), (100, 513, 33),
                                   (97, 20, 2100), (12, 0, 5), (1, 16, 23), (2, 23, 16), (3, 9, 40), (4, 64, 8),
                                   (5, 31, 17),  # edge tiles of 1 to 5 rows
                                   (12, 64, 64), (13, 300, 70), (100, 513, 97), (97, 64, 2100),
                                   (23, 65, 95)])  # 12x32 tiles, full and at the edges of 1 to 11 rows, 1 to 31 columns
def test_every_shape_and_layout_gives_the_reference_bits(m, k, n, width):
    g = torch.Generator().manual_seed(m * 1000 + k * 10 + n)
    a, b, c = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g), torch.randn(m, n, generator=g)
    expected, accumulated = fixed_gemm.reference(a, b), fixed_gemm.reference(a, b, c)
    for a_, b_ in [(a, b), (a.t().contiguous().t(), b), (a, b.t().contiguous().t()),
                   (torch.randn(m, 2 * k, generator=g)[:, ::2].copy_(a), b)]:
        assert torch.equal(product(a_, b_), expected)
        assert torch.equal(product(a_, b_, c), accumulated)


@pytest.mark.parametrize("n", [40, 100])
def test_the_blocking_is_not_in_the_bits(n, width):
    """k beyond one block (256) and m beyond one block of rows (96): the same bits as the chain over all of k."""
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(200, 1000, generator=g), torch.randn(1000, n, generator=g)
    assert torch.equal(product(a, b), fixed_gemm.reference(a, b))
    assert torch.equal(product(a[:7], b), fixed_gemm.reference(a, b)[:7])   # a row's bits do not depend on m


def _in_a_process(code: str, gemm: bool) -> str:
    env = {k: v for k, v in os.environ.items() if k not in cpu_math.PORTABLE_FIXED}
    env.update(cpu_math.environment("portable-fixed" if gemm else "portable"), PYTHONPATH=ROOT, OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout


FORWARD_BACKWARD = """
import torch
from pipeline import fixed_gemm
from pipeline.device import job_device
job_device()   # a job on the CPU: makes the fixed-order products torch's where cpu_math asks for them
torch.manual_seed(0)
g = torch.Generator().manual_seed(0)
x = torch.randn(5, 7, 9, generator=g, requires_grad=True)
linear = torch.nn.Linear(9, 11)
q = linear(x)
scores = q @ q.transpose(1, 2)               # bmm
y = torch.baddbmm(scores, q, q.transpose(1, 2)).sum() + torch.addmm(q[0], x[0], linear.weight.t()).sum()
y.backward()
d = x.detach()
expected = {
    "linear": torch.stack([fixed_gemm.reference(d[i], linear.weight.detach().t(), linear.bias.detach().expand(7, 11))
                           for i in range(5)]),
    "bmm": torch.stack([fixed_gemm.reference(q[i].detach(), q[i].detach().t()) for i in range(5)]),
}
a, w, grad_out = (torch.randn(*shape, generator=g) for shape in [(30, 40), (40, 50), (30, 50)])
a.requires_grad_(), w.requires_grad_()
(torch.mm(a, w) * grad_out).sum().backward()   # backward: a.grad = grad_out w^T, w.grad = a^T grad_out
backward = (torch.equal(a.grad, fixed_gemm.reference(grad_out, w.detach().t()))
            and torch.equal(w.grad, fixed_gemm.reference(a.detach().t(), grad_out)))
print(fixed_gemm.active(), torch.equal(q.detach(), expected["linear"]), torch.equal(scores.detach(), expected["bmm"]),
      backward, x.grad.double().sum().item(), torch.mm(d[0].double(), d[0].double().t()).sum().item())
"""


def test_a_cpu_job_on_the_portable_fixed_path_takes_every_product_forward_and_backward():
    active, linear, bmm, backward, grad, float64 = _in_a_process(FORWARD_BACKWARD, gemm=True).split()
    assert (active, linear, bmm, backward) == ("True", "True", "True", "True")
    plain = _in_a_process(FORWARD_BACKWARD, gemm=False).split()
    assert plain[0] == "False"
    assert float64 == plain[5]   # float64 products are torch's own on either path
    assert abs(float(grad) - float(plain[4])) < 1e-4 * abs(float(plain[4]))   # the same gradient, to rounding


def test_the_library_is_built_once_per_source_into_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = fixed_gemm.library_path()
    assert path.parent == tmp_path / "nmt-repro" and path.name.startswith("fixed_gemm-") and path.stat().st_size
    built = path.stat().st_mtime_ns
    assert fixed_gemm.library_path() == path and path.stat().st_mtime_ns == built
    assert [p.name for p in path.parent.iterdir()] == [path.name]   # no object or temporary file left


def test_no_compiler_is_one_line_that_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    with pytest.raises(PipelineError, match=r"fixed_gemm\.c, built with a C and C\+\+ compiler, and there is none "
                                            r"\(.*no-such-cc\): install them .*cpu_math: portable in params.yaml"):
        fixed_gemm.library_path()
    assert list((tmp_path / "nmt-repro").iterdir()) == []
