"""The chunked label-smoothed loss (pipeline.loss): hand-worked values, and values and gradients equal to autograd
through nn.Linear and log_softmax for every chunking."""
import math

import pytest
import torch
import torch.nn.functional as F

from pipeline.data.vocab import PAD
from pipeline.loss import chunk_rows, smoothed_loss

torch.set_num_threads(1)


def _hand_smoothed(logits, targets, eps):
    """Smoothed cross entropy by hand: 1-eps on gold, eps/(V-1) elsewhere; PAD (0) rows skipped."""
    total, nll, n = 0.0, 0.0, 0
    for row, gold in zip(logits, targets):
        if gold == PAD:
            continue
        log_z = math.log(sum(math.exp(x) for x in row))
        logp = [x - log_z for x in row]
        q = [(1 - eps) if v == gold else eps / (len(row) - 1) for v in range(len(row))]
        total += -sum(qv * lp for qv, lp in zip(q, logp))
        nll += -logp[gold]
        n += 1
    return total, nll, n


def _identity(size: int, dtype=torch.float64) -> torch.nn.Linear:
    """An output layer whose logits are the features."""
    layer = torch.nn.Linear(size, size, bias=False).to(dtype)
    torch.nn.init.eye_(layer.weight)
    return layer


def _layer(d: int, vocab: int, bias: bool, seed: int, dtype=torch.float64) -> torch.nn.Linear:
    torch.manual_seed(seed)
    layer = torch.nn.Linear(d, vocab, bias=bias).to(dtype)
    if bias:
        torch.nn.init.normal_(layer.bias)
    return layer


def _autograd_smoothed(features, layer, target, eps):
    """The loss through nn.Linear, log_softmax and autograd (the reference)."""
    lprobs = F.log_softmax(layer(features), dim=-1)
    keep = target != PAD
    nll = -lprobs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    loss = (1 - eps) * nll + eps / (lprobs.size(-1) - 1) * (-lprobs.sum(-1) - nll) if eps else nll
    return loss[keep].sum(), nll[keep].sum()


def test_label_smoothing_equals_hand_computation():
    logits = [[1.0, 2.0, 0.5, -1.0], [0.0, 0.0, 3.0, 1.0], [2.0, 1.0, 1.0, 1.0], [0.3, -0.2, 0.1, 0.4]]
    targets = [2, 3, 0, 1]
    loss, nll, n = smoothed_loss(torch.tensor(logits, dtype=torch.float64), _identity(4), torch.tensor(targets), 0.1)
    want_loss, want_nll, want_n = _hand_smoothed(logits, targets, 0.1)
    assert n == want_n == 3
    assert loss.item() == pytest.approx(want_loss, rel=1e-12)
    assert nll.item() == pytest.approx(want_nll, rel=1e-12)
    assert loss.item() != pytest.approx(nll.item(), rel=1e-3)   # smoothing changes the value


@pytest.mark.parametrize("eps", [0.0, 0.1])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("rows", [1, 2, 4, 100])  # one row per chunk, a short last chunk, one chunk
def test_values_and_gradients_equal_autograd(eps, bias, rows):
    layer, ref_layer = _layer(5, 7, bias, seed=3), _layer(5, 7, bias, seed=3)
    torch.manual_seed(4)
    features = (torch.randn(9, 5, dtype=torch.float64) * 2).requires_grad_()
    ref_features = features.detach().clone().requires_grad_()
    target = torch.tensor([1, 4, 0, 2, 0, 3, 3, 6, 5])
    loss, nll, n = smoothed_loss(features, layer, target, eps, rows=rows)
    ref_loss, ref_nll = _autograd_smoothed(ref_features, ref_layer, target, eps)
    (0.37 * loss).backward()
    (0.37 * ref_loss).backward()
    assert n == 7
    assert loss.item() == pytest.approx(ref_loss.item(), rel=1e-12) and nll.item() == pytest.approx(ref_nll.item(),
                                                                                                      rel=1e-12)
    assert torch.all(features.grad[target == PAD] == 0)
    assert torch.allclose(features.grad, ref_features.grad, rtol=1e-10, atol=1e-12)
    assert torch.allclose(layer.weight.grad, ref_layer.weight.grad, rtol=1e-10, atol=1e-12)
    if bias:
        assert torch.allclose(layer.bias.grad, ref_layer.bias.grad, rtol=1e-10, atol=1e-12)


def test_nll_is_for_reporting_only():
    features = torch.randn(3, 4, requires_grad=True)
    loss, nll, _ = smoothed_loss(features, _identity(4, torch.float32), torch.tensor([1, 2, 3]), 0.1)
    assert loss.requires_grad and not nll.requires_grad


def test_without_gradients_the_values_are_the_same_and_no_graph_is_kept():
    layer = _layer(6, 11, True, seed=5, dtype=torch.float32)
    torch.manual_seed(6)
    features, target = torch.randn(8, 6, requires_grad=True), torch.tensor([3, 0, 10, 2, 2, 7, 1, 9])
    with_grad = smoothed_loss(features, layer, target, 0.1, rows=3)
    with torch.no_grad():
        without = smoothed_loss(features, layer, target, 0.1, rows=3)
    assert [t.item() for t in with_grad[:2]] == [t.item() for t in without[:2]]
    assert without[0].grad_fn is None


def test_bfloat16_autocast_multiplies_in_bfloat16_and_sums_in_float32():
    layer = _layer(6, 11, False, seed=5, dtype=torch.float32)
    torch.manual_seed(7)
    features, target = torch.randn(8, 6, requires_grad=True), torch.tensor([3, 0, 10, 2, 2, 7, 1, 9])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss, nll, _ = smoothed_loss(features, layer, target, 0.1, rows=3)
    loss.backward()
    logits = (features.detach().bfloat16() @ layer.weight.detach().bfloat16().t()).float()  # what autocast computes
    ref_loss, _ = _autograd_smoothed(logits, _identity(11, torch.float32), target, 0.1)
    assert loss.dtype == torch.float32 and loss.item() == pytest.approx(ref_loss.item(), rel=1e-6)
    exact, _, _ = smoothed_loss(features.detach(), layer, target, 0.1)
    assert loss.item() != exact.item()  # the products did run in bfloat16
    assert features.grad.dtype == torch.float32 and layer.weight.grad.dtype == torch.float32


def test_no_smoothing_is_cross_entropy_ignoring_pad():
    torch.manual_seed(0)
    logits, target = torch.randn(7, 5), torch.tensor([1, 4, 0, 2, 0, 3, 3])
    loss, nll, n = smoothed_loss(logits, _identity(5, torch.float32), target, 0.0)
    ref = F.cross_entropy(logits, target, ignore_index=PAD, reduction="sum")
    assert n == 5 and torch.allclose(loss, ref) and torch.allclose(nll, ref)


def test_chunks_hold_an_l2_cache_of_logits_on_cpu():
    assert chunk_rows(3124, torch.device("cpu")) == 2 ** 19 // 3124 == 167
    assert chunk_rows(2 ** 20, torch.device("cpu")) == 1
