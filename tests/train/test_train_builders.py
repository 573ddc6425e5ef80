"""Trainer builders: learning-rate schedules, optimizers, loss normalisation and stopping by epochs, by hand and
in toy runs."""
import dataclasses
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pipeline.data.vocab import BOS, EOS, PAD
from pipeline.recipe import Recipe
from pipeline.train import build_optimizer, build_scheduler, fit, lr_at
from train_helpers import Aligned, read_curve, toy_fit

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------------------------------ schedules
def test_lr_schedule_exact_values():
    r = Recipe(lr=1e-3, warmup=4, max_steps=100, batch_size=10)
    assert lr_at(1, r) == pytest.approx(2.5e-4, rel=1e-12)
    assert lr_at(2, r) == pytest.approx(5e-4, rel=1e-12)
    assert lr_at(4, r) == pytest.approx(1e-3, rel=1e-12)      # peak at the end of warmup
    assert lr_at(16, r) == pytest.approx(5e-4, rel=1e-12)     # sqrt(4/16) = 1/2
    assert lr_at(100, r) == pytest.approx(2e-4, rel=1e-12)    # sqrt(4/100) = 1/5
    assert build_scheduler(r).rate(16, 7) == lr_at(16, r)     # the scheduler object is lr_at
    with pytest.raises(ValueError):
        lr_at(0, r)


def test_lr_schedule_is_vaswani_eq3_with_its_peak_as_lr():
    d, w = 512, 4000
    r = Recipe(lr=d ** -0.5 * w ** -0.5, warmup=w, max_steps=10, batch_size=10)
    for step in (1, 10, 3999, 4000, 4001, 100_000):
        vaswani = d ** -0.5 * min(step ** -0.5, step * w ** -1.5)
        assert lr_at(step, r) == pytest.approx(vaswani, rel=1e-12)


def test_constant_and_no_warmup_schedules():
    const = build_scheduler(Recipe(lr=3e-4, warmup=10, max_steps=10, batch_size=10, schedule="constant"))
    assert [const.rate(s, e) for s, e in ((1, 0), (5, 1), (500, 9))] == [3e-4] * 3
    no_warmup = Recipe(lr=1.0, warmup=0, max_steps=10, batch_size=10)
    assert lr_at(1, no_warmup) == 1.0 and lr_at(4, no_warmup) == 0.5


def test_halve_last_epochs_halves_at_the_start_of_each_of_the_last_k_epochs():
    # shu2016: 6 epochs, lr halved at the start of each of the last 3 -> epochs 1-3 lr, 4 lr/2, 5 lr/4, 6 lr/8
    sched = build_scheduler(Recipe(lr=1e-4, batch_size=64, batch_unit="sentences", max_epochs=6,
                                   schedule="halve_last_epochs", halve_epochs=3))
    by_epoch = [sched.rate(100 * epoch + 1, epoch) for epoch in range(6)]   # epoch counts from 0
    assert by_epoch == [1e-4, 1e-4, 1e-4, 5e-5, 2.5e-5, 1.25e-5]
    assert sched.rate(1, 3) == sched.rate(10_000, 3) == 5e-5                   # the epoch decides, not the step
    one = build_scheduler(Recipe(lr=1.0, batch_size=8, max_epochs=2, schedule="halve_last_epochs", halve_epochs=1))
    assert [one.rate(1, 0), one.rate(2, 1)] == [1.0, 0.5]


def test_halve_on_plateau_halves_after_patience_validations_without_improvement():
    recipe = Recipe(lr=2.0, batch_size=8, max_steps=10, schedule="halve_on_plateau", plateau_patience=2)
    sched = build_scheduler(recipe)
    nlls = [5.0, 4.0, 4.5, 4.2, 3.9, 3.9, 4.1, 4.0, 3.0]
    # best 5, best 4, 1 bad, 2 bad -> halve, best 3.9, equal = 1 bad, 2 bad -> halve, 1 bad, best 3.0
    want = [2.0, 2.0, 2.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5]
    rates = []
    for nll in nlls:
        sched.validated(nll)
        rates.append(sched.rate(1, 0))
    assert rates == want
    patient = build_scheduler(dataclasses.replace(recipe, plateau_patience=3))
    rates = []
    for nll in nlls:
        patient.validated(nll)
        rates.append(patient.rate(1, 0))
    assert rates == [2.0] * 7 + [1.0] * 2  # 3.9, 4.1, 4.0: three in a row without a lower NLL than 3.9
    # the state goes into the checkpoint: a restored scheduler continues identically
    first = build_scheduler(recipe)
    for nll in nlls[:6]:
        first.validated(nll)
    second = build_scheduler(recipe)
    second.load_state_dict(json.loads(json.dumps(first.state_dict())))
    for nll in nlls[6:]:
        first.validated(nll)
        second.validated(nll)
        assert first.rate(1, 0) == second.rate(1, 0)
    assert second.rate(1, 0) == 0.5



# -------------------------------------------------------------------------------------------- optimizers
def _steps(optimizer, param, grads):
    """Apply optimizer.step() with the given gradients of a one-element parameter; the values after each step."""
    out = []
    for g in grads:
        param.grad = torch.tensor([g], dtype=torch.float64)
        optimizer.step()
        out.append(param.item())
    return out


def test_adadelta_two_updates_equal_the_hand_computation():
    recipe = Recipe(lr=0.5, batch_size=8, max_steps=2, optimizer="adadelta", adadelta_rho=0.9, adadelta_eps=1e-4)
    param = torch.nn.Parameter(torch.tensor([1.5], dtype=torch.float64))
    optimizer = build_optimizer([param], recipe)
    assert isinstance(optimizer, torch.optim.Adadelta)
    got = _steps(optimizer, param, [0.3, -0.8])
    # Zeiler (2012), with lr scaling the update (torch):
    #   E[g^2]_t  = rho E[g^2]_{t-1} + (1 - rho) g_t^2
    #   dx_t      = -sqrt(E[dx^2]_{t-1} + eps) / sqrt(E[g^2]_t + eps) * g_t
    #   E[dx^2]_t = rho E[dx^2]_{t-1} + (1 - rho) dx_t^2
    #   x_t       = x_{t-1} + lr dx_t
    rho, eps, lr = 0.9, 1e-4, 0.5
    x, eg, edx, want = 1.5, 0.0, 0.0, []
    for g in (0.3, -0.8):
        eg = rho * eg + (1 - rho) * g * g
        dx = -math.sqrt(edx + eps) / math.sqrt(eg + eps) * g
        edx = rho * edx + (1 - rho) * dx * dx
        x += lr * dx
        want.append(x)
    assert got == pytest.approx(want, rel=1e-12, abs=0)
    assert want[0] == pytest.approx(1.5 - 0.5 * math.sqrt(1e-4) / math.sqrt(0.1 * 0.09 + 1e-4) * 0.3, rel=1e-12)


def test_sgd_and_adam_follow_the_recipe():
    recipe = Recipe(lr=0.1, batch_size=8, max_steps=2, optimizer="sgd", sgd_momentum=0.9)
    param = torch.nn.Parameter(torch.tensor([2.0], dtype=torch.float64))
    got = _steps(build_optimizer([param], recipe), param, [0.5, -0.2])
    # heavy ball: v_1 = g_1, v_2 = 0.9 v_1 + g_2; x_t = x_{t-1} - lr v_t
    x1 = 2.0 - 0.1 * 0.5
    x2 = x1 - 0.1 * (0.9 * 0.5 - 0.2)
    assert got == pytest.approx([x1, x2], rel=1e-12, abs=0)
    plain = torch.nn.Parameter(torch.tensor([2.0], dtype=torch.float64))
    assert _steps(build_optimizer([plain], dataclasses.replace(recipe, sgd_momentum=0.0)), plain, [0.5]) == \
        pytest.approx([2.0 - 0.1 * 0.5], rel=1e-12, abs=0)
    adam = build_optimizer([plain], Recipe(lr=3e-4, batch_size=8, max_steps=2, adam_betas=(0.9, 0.997),
                                           adam_eps=1e-8))
    assert isinstance(adam, torch.optim.Adam)
    assert adam.defaults["betas"] == (0.9, 0.997) and adam.defaults["eps"] == 1e-8 and adam.defaults["lr"] == 3e-4


def test_the_recipes_adam_is_torchs_adam_bit_for_bit_and_its_checkpoint_state_the_same():
    recipe = Recipe(lr=1e-2, batch_size=8, max_steps=6, adam_betas=(0.9, 0.98), adam_eps=1e-8)
    torch.manual_seed(5)
    start = torch.randn(7, 3)
    ours_param, torchs_param = torch.nn.Parameter(start.clone()), torch.nn.Parameter(start.clone())
    ours = build_optimizer([ours_param], recipe)
    torchs = torch.optim.Adam([torchs_param], lr=1e-2, betas=(0.9, 0.98), eps=1e-8, fused=True)
    for step in range(6):
        if step == 3:  # a checkpoint's round trip in the middle
            ours.load_state_dict(ours.state_dict())
        grad = torch.randn(7, 3, generator=torch.Generator().manual_seed(step))
        for optimizer, param in ((ours, ours_param), (torchs, torchs_param)):
            param.grad = grad.clone()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            assert param.grad is None
    assert torch.equal(ours_param, torchs_param) and not torch.equal(ours_param, start)
    mine, theirs = ours.state_dict(), torchs.state_dict()
    assert mine["param_groups"] == theirs["param_groups"]
    assert all(torch.equal(mine["state"][0][key], theirs["state"][0][key]) for key in ("step", "exp_avg", "exp_avg_sq"))


def test_a_training_process_does_not_import_torch_dynamo():
    # torch.optim's own methods import it on first use: 1.5 s of every training job's start
    code = ("import sys, torch\n"
            "from pipeline.recipe import Recipe\n"
            "from pipeline.train import build_optimizer\n"
            "param = torch.nn.Parameter(torch.ones(3))\n"
            "adam = build_optimizer([param], Recipe(lr=1e-3, batch_size=8, max_steps=1))\n"
            "param.grad = torch.ones(3)\n"
            "adam.step(); adam.zero_grad(); adam.load_state_dict(adam.state_dict())\n"
            "print('torch._dynamo' in sys.modules, f'{float(param[0]):.6f}')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "0.999000"]  # Adam's first update moves by lr


# ------------------------------------------------------------------------------ loss and stopping in runs
@pytest.mark.parametrize("loss_norm", ["tokens", "sentences"])
def test_loss_norm_gradient_equals_hand_computation(tmp_path, loss_norm):
    V = 13
    src = [[5, 6, 7], [8, 9], [5, 10, 11, 12]]
    tgt = [[6, 7], [9, 8, 5], [10]]
    model = Aligned(V, seed=3)
    prev0, aligned0 = model.prev.detach().double().clone(), model.aligned.detach().double().clone()
    recipe = Recipe(lr=1.0, optimizer="sgd", schedule="constant", batch_unit="sentences", batch_size=3,
                    loss_norm=loss_norm, max_steps=1, precision="float32")  # exact products, not bfloat16
    fit(model, (src, tgt), (src, tgt), recipe, run_dir=tmp_path / "run", out_dir=tmp_path / "out",
        curves_dir=tmp_path / "curves", progress=False, meta={"model": {}, "src_vocab_size": V, "tgt_vocab_size": V})
    # by hand: loss = sum over sentences and positions of -log p(gold), divided by the batch's target tokens
    # (+ EOS: 3 + 4 + 2 = 9) or its sentences (3); d loss / d logits = (softmax - onehot(gold)) / denominator
    denominator = 9 if loss_norm == "tokens" else 3
    grad_prev, grad_aligned = torch.zeros(V, V, dtype=torch.float64), torch.zeros(V, V, dtype=torch.float64)
    for x, y in zip(src, tgt):
        x_eos, y_in, y_out = x + [EOS], [BOS] + y, y + [EOS]
        for t in range(len(y_out)):
            u, a = y_in[t], (x_eos[t] if t < len(x_eos) else PAD)
            p = torch.softmax(prev0[u] + aligned0[a], dim=0)
            p[y_out[t]] -= 1.0
            grad_prev[u] += p / denominator
            grad_aligned[a] += p / denominator
    # one SGD update with lr 1: weights - gradient
    assert torch.allclose(model.prev.double(), prev0 - grad_prev, rtol=0, atol=1e-6)
    assert torch.allclose(model.aligned.double(), aligned0 - grad_aligned, rtol=0, atol=1e-6)
    other = 3 if loss_norm == "tokens" else 9  # the other normalisation is far from it
    assert not torch.allclose(model.prev.double(), prev0 - grad_prev * denominator / other, rtol=0, atol=1e-3)


def test_max_epochs_stops_after_n_epochs_and_halves_the_last_ones(toy, tmp_path):
    # 200 pairs in batches of 30 pairs: 6 full batches + 1 of 20 = 7 per epoch; 3 epochs, the last 2 halved
    summary, _ = toy_fit(toy, tmp_path, lr=0.5, batch_size=30, max_steps=0, max_epochs=3,
                          schedule="halve_last_epochs", halve_epochs=2, log_every=1, valid_every=100)
    assert summary["steps"] == 3 * 7 and summary["epochs"] == 3.0
    lr = read_curve(tmp_path / "curves" / "train" / "lr.tsv")
    assert lr == {step: 0.5 * 0.5 ** ((step - 1) // 7) for step in range(1, 22)}   # 0.5 x 7, 0.25 x 7, 0.125 x 7
    assert read_curve(tmp_path / "curves" / "valid" / "nll.tsv").keys() == {21}        # validated at the end only


def test_halve_on_plateau_in_a_run_follows_the_validation_curve(toy, tmp_path):
    summary, _ = toy_fit(toy, tmp_path, schedule="halve_on_plateau", plateau_patience=2, log_every=1)
    nll = read_curve(tmp_path / "curves" / "valid" / "nll.tsv")
    lr = read_curve(tmp_path / "curves" / "train" / "lr.tsv")
    factor, best, bad, want = 1.0, math.inf, 0, {}
    for step in range(1, 31):
        want[step] = 8.0 * factor
        if step in nll:  # validation after update `step`: the rate changes from the next update on
            if nll[step] < best:
                best, bad = nll[step], 0
            else:
                bad += 1
                if bad == 2:
                    factor, bad = factor / 2, 0
    assert lr == want
    assert min(lr.values()) < 8.0   # the validation NLL rose: the rate was halved at least once

