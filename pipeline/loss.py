"""The training loss: label-smoothed cross entropy of the output layer's logits, computed in row chunks together
with its gradient, so that the [N,V] logits are never held whole (our implementation; tests check it against
autograd through nn.Linear and log_softmax)."""
from __future__ import annotations

import torch
from torch import Tensor, nn

from pipeline import speedups
from pipeline.data.vocab import PAD

# Logits per chunk: 2^19 float32 values (2 MB, one core's L2 cache on the machines we measured; 64 to 256 rows
# at V = 3124 ran a tiny step 1.25x faster than the whole [N,V] at once). GPUs take far larger chunks.
CPU_CHUNK_ELEMENTS = 2 ** 19
GPU_CHUNK_ELEMENTS = 2 ** 26


def chunk_rows(vocab_size: int, device: torch.device) -> int:
    """Rows of logits computed at once for a vocabulary of `vocab_size` on `device`."""
    budget = CPU_CHUNK_ELEMENTS if device.type == "cpu" else GPU_CHUNK_ELEMENTS
    return max(1, budget // vocab_size)


def _product_dtype(features: Tensor, weight: Tensor) -> torch.dtype:
    """The autocast dtype if autocast is on for the features' device (the matrix products run in it, as
    nn.Linear's would), else the inputs' common dtype."""
    device = features.device.type
    if torch.is_autocast_enabled(device):
        return torch.get_autocast_dtype(device)
    return torch.promote_types(features.dtype, weight.dtype)


class _ChunkedSmoothedCrossEntropy(torch.autograd.Function):
    """(loss, nll) sums of features [N,d] through weight [V,d] (+ bias [V]); the gradient of `loss` is computed
    chunk by chunk in forward and scaled in backward (`nll` is for reporting: not differentiable)."""

    @staticmethod
    def forward(ctx, features, weight, bias, target, smoothing: float, rows: int, with_grad: bool):
        dtype = _product_dtype(features, weight)
        exact = torch.promote_types(dtype, torch.float32)  # log-probabilities: float32 at least
        with torch.autocast(features.device.type, enabled=False):
            # no_sync (GPUs): every row, padding rows weighted 0, instead of selecting the others (nonzero waits for
            # the device); the same sums
            masked = speedups.enabled("no_sync", features)
            if masked:
                keep = None
                inputs, gold = features.to(dtype), target.unsqueeze(1)
                weight_rows = (target != PAD).unsqueeze(1)
            else:
                keep = (target != PAD).nonzero().squeeze(1)
                inputs, gold = features.index_select(0, keep).to(dtype), target.index_select(0, keep).unsqueeze(1)
            w = weight.to(dtype)
            b = None if bias is None else bias.to(dtype)
            off = smoothing / (w.size(0) - 1) if smoothing > 0 else 0.0  # q_v of every non-gold word
            on = 1.0 - smoothing - off  # q_gold beyond `off`
            sums = torch.zeros(2, dtype=torch.float64, device=features.device)  # smoothed loss, nll
            if with_grad:
                grad_in = torch.empty_like(inputs)
                grad_w = torch.zeros_like(w, dtype=exact)
                grad_b = None if b is None else torch.zeros_like(b, dtype=exact)
            for start in range(0, inputs.size(0), rows):
                x, g = inputs[start:start + rows], gold[start:start + rows]
                logits = x @ w.t() if b is None else torch.addmm(b, x, w.t())  # [c,V]
                lprobs = torch.log_softmax(logits, dim=-1, dtype=exact)
                if masked:
                    w_rows = weight_rows[start:start + rows].to(exact)
                    gold_sum, all_sum = (lprobs.gather(-1, g) * w_rows).sum(), (lprobs.sum(-1, True) * w_rows).sum()
                else:
                    gold_sum, all_sum = lprobs.gather(-1, g).sum(), lprobs.sum()
                # loss = -sum_v q_v log p_v = -(on * log p_gold + off * sum_v log p_v); nll = -log p_gold
                sums += torch.stack([-(on * gold_sum + off * all_sum), -gold_sum]).double()
                if with_grad:  # d loss / d logits = softmax - q
                    grad = lprobs.exp_()
                    if off:
                        grad.sub_(off)
                    grad.scatter_add_(-1, g, grad.new_full(g.shape, -on))
                    if masked:
                        grad.masked_fill_(~weight_rows[start:start + rows], 0.0)
                    grad = grad.to(dtype)
                    torch.mm(grad, w, out=grad_in[start:start + rows])
                    grad_w += grad.t() @ x
                    if grad_b is not None:
                        grad_b += grad.sum(0)
            if with_grad:
                grad_features = (grad_in.to(features.dtype) if masked else
                                 torch.zeros_like(features).index_copy_(0, keep, grad_in.to(features.dtype)))
                ctx.save_for_backward(grad_features, grad_w.to(weight.dtype),
                                      grad_b.to(bias.dtype) if grad_b is not None else None)
        loss, nll = sums.to(exact).unbind()
        ctx.mark_non_differentiable(nll)
        return loss, nll

    @staticmethod
    def backward(ctx, grad_loss, grad_nll):
        grad_features, grad_w, grad_b = ctx.saved_tensors
        return (grad_features * grad_loss, grad_w * grad_loss, None if grad_b is None else grad_b * grad_loss,
                None, None, None, None)


def smoothed_loss(features: Tensor, output_layer: nn.Linear, target: Tensor, smoothing: float,
                  rows: int | None = None) -> tuple[Tensor, Tensor, int]:
    """Label-smoothed cross entropy of output_layer(features) summed over non-PAD targets: features [N,d],
    target [N] -> (loss, nll, n); only `loss` is differentiable.

    The smoothed target puts 1 - eps on the gold token and eps / (V - 1) on every other token (THUMT's
    smoothing, Szegedy et al. 2016); loss = -sum_v q_v log p_v. nll is the plain -log p(gold) sum. Logits are
    computed `rows` at a time (default: chunk_rows) in the autocast dtype if autocast is on; log-probabilities
    and sums in float32 (or wider) whatever the products' precision.
    """
    weight, bias = output_layer.weight, output_layer.bias
    if rows is None:
        rows = chunk_rows(weight.size(0), features.device)
    with_grad = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (features, weight, bias))
    loss, nll = _ChunkedSmoothedCrossEntropy.apply(features, weight, bias, target, smoothing, rows, with_grad)
    return loss, nll, n_targets(target)


def n_targets(target: Tensor):
    """Non-PAD targets: an int, or (no_sync speed-up, GPUs) a 0-d tensor that leaves the device unwaited."""
    count = (target != PAD).sum()
    return count if speedups.enabled("no_sync", target) else int(count)
