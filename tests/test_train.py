"""Trainer: what a recipe names (optimizers, schedules, batch units, loss normalisation, stopping, kept weights),
recipe validation, the restart policy and curves, fine-tuning, and bitwise-exact resume after a kill."""
import dataclasses
import json
import math
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from pipeline.checkpoint import average_checkpoints, load_model, save_atomic
from pipeline.data.batching import encode_source, pad
from pipeline.data.synthetic import synthetic_pairs
from pipeline.data.vocab import BOS, EOS, PAD, Vocab
from pipeline.errors import PipelineError
from pipeline.models.registry import build_model, count_parameters, init_from
from pipeline.precision import resolve
from pipeline.recipe import Recipe
from pipeline.search import greedy
from pipeline.train import (CurveLog, _truncate_curves, build_optimizer, build_scheduler, fit, lr_at, seed_everything,
                            validation_bleu)

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parent.parent


def _model(spec: dict, vocab_size: int):
    """The one place this file builds a registry model: spec = {"encoder": kind, "decoder": kind, **options}."""
    return build_model(spec, vocab_size, vocab_size)


def _load(path):
    return torch.load(path, map_location="cpu", weights_only=True)


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


# ------------------------------------------------------------------------------ a toy model, fast runs
class Aligned(torch.nn.Module):
    """Toy Seq2Seq: logits[b, t] = prev[tgt_in[b, t]] + aligned[src[b, t]] (the source token at the same position;
    PAD past the source), the features themselves (a fixed identity output layer). Learns the copy task in a few
    updates; greedy search runs on it."""

    max_input_len = None
    max_output_len = None

    def __init__(self, vocab_size: int, seed: int = 0):
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        self.prev = torch.nn.Parameter(0.1 * torch.randn(vocab_size, vocab_size, generator=gen))
        self.aligned = torch.nn.Parameter(0.1 * torch.randn(vocab_size, vocab_size, generator=gen))
        self.output_layer = torch.nn.Linear(vocab_size, vocab_size, bias=False).requires_grad_(False)
        torch.nn.init.eye_(self.output_layer.weight)

    @staticmethod
    def _src_at(src, positions):
        return F.pad(src, (0, max(0, positions - src.size(1))), value=PAD)[:, :positions]

    def features(self, src, tgt_in):
        """src [B,S], tgt_in [B,T] -> logits [B,T,V]."""
        return self.prev[tgt_in] + self.aligned[self._src_at(src, tgt_in.size(1))]

    forward = features

    def encode(self, src):
        return {"src": src}

    def decode_step(self, prev_tokens, memory, state):
        """prev_tokens [B,t] -> logits [B,V] of position t."""
        t = prev_tokens.size(1)
        return self.prev[prev_tokens[:, -1]] + self.aligned[self._src_at(memory["src"], t)[:, t - 1]], state


@pytest.fixture(scope="module")
def toy():
    """Copy-task training pairs and a validation set with 40% of the target tokens replaced (so that the
    validation NLL first falls, then rises as the model grows confident)."""
    pairs = synthetic_pairs("copy", 200, seed=1)
    vocab = Vocab.build([s for s, _ in pairs])
    rng = random.Random(0)

    def noisy(ids):
        return [i if rng.random() < 0.6 else rng.randrange(4, len(vocab)) for i in ids]

    valid_pairs = synthetic_pairs("copy", 40, seed=2)
    return {"train": ([vocab.encode(s) for s, _ in pairs], [vocab.encode(t) for _, t in pairs]),
            "valid": ([vocab.encode(s) for s, _ in valid_pairs], [noisy(vocab.encode(t)) for _, t in valid_pairs]),
            "V": len(vocab), "meta": {"model": {"encoder": "toy", "decoder": "toy"}, "src_vocab_size": len(vocab),
                                      "tgt_vocab_size": len(vocab)}}


TOY_RECIPE = dict(lr=8.0, batch_size=20, batch_unit="sentences", optimizer="sgd", schedule="constant", max_steps=30,
                  valid_every=3, checkpoint_every=3, log_every=3)


def _toy_fit(toy, root: Path, **recipe):
    """fit the Aligned model (seed 0) with TOY_RECIPE updated by `recipe`; returns (summary, model)."""
    model = Aligned(toy["V"])
    summary = fit(model, toy["train"], toy["valid"], Recipe(**{**TOY_RECIPE, **recipe}), run_dir=root / "run",
                  out_dir=root / "out", curves_dir=root / "curves", meta=toy["meta"], progress=False)
    return summary, model


def _curve(path: Path) -> dict:
    """step -> value of a curve TSV."""
    rows = [line.split("\t") for line in path.read_text().splitlines()[1:]]
    return {int(step): float(value) for step, value in rows}


def _equal_weights(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


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
    summary, _ = _toy_fit(toy, tmp_path, lr=0.5, batch_size=30, max_steps=0, max_epochs=3,
                          schedule="halve_last_epochs", halve_epochs=2, log_every=1, valid_every=100)
    assert summary["steps"] == 3 * 7 and summary["epochs"] == 3.0
    lr = _curve(tmp_path / "curves" / "train" / "lr.tsv")
    assert lr == {step: 0.5 * 0.5 ** ((step - 1) // 7) for step in range(1, 22)}   # 0.5 x 7, 0.25 x 7, 0.125 x 7
    assert _curve(tmp_path / "curves" / "valid" / "nll.tsv").keys() == {21}        # validated at the end only


def test_halve_on_plateau_in_a_run_follows_the_validation_curve(toy, tmp_path):
    summary, _ = _toy_fit(toy, tmp_path, schedule="halve_on_plateau", plateau_patience=2, log_every=1)
    nll = _curve(tmp_path / "curves" / "valid" / "nll.tsv")
    lr = _curve(tmp_path / "curves" / "train" / "lr.tsv")
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


# ----------------------------------------------------------------------------------------- kept weights
def _weights_at(toy, root: Path, step: int, **recipe) -> dict:
    """The weights of the same run stopped after `step` updates (keep: last)."""
    _, model = _toy_fit(toy, root, **{**recipe, "max_steps": step, "keep": "last", "average_last": 0})
    return model.state_dict()


def test_keep_best_loss_keeps_the_best_steps_weights(toy, tmp_path):
    summary, model = _toy_fit(toy, tmp_path / "a", keep="best_loss")
    nll = _curve(tmp_path / "a" / "curves" / "valid" / "nll.tsv")
    best = min(nll, key=lambda s: (nll[s], s))
    assert best not in (3, 30)  # the validation NLL falls, then rises (constructed)
    assert summary["kept"] == {"rule": "best_loss", "step": best, "valid_nll": nll[best]}
    saved = _load(tmp_path / "a" / "out" / "model.pt")
    assert saved["step"] == best and saved["kept"]["step"] == best
    want = _weights_at(toy, tmp_path / "b", best)
    assert _equal_weights(saved["weights"], want) and _equal_weights(model.state_dict(), want)
    assert not _equal_weights(want, _load(tmp_path / "a" / "run" / "last.pt")["weights"])


def test_keep_best_bleu_keeps_the_step_of_highest_validation_bleu(toy, tmp_path):
    summary, model = _toy_fit(toy, tmp_path / "a", lr=4.0, keep="best_bleu")
    bleu = _curve(tmp_path / "a" / "curves" / "valid" / "bleu.tsv")
    assert sorted(bleu) == list(range(3, 31, 3))
    best = min(bleu, key=lambda s: (-bleu[s], s))   # the first step of the highest BLEU
    assert best != 30 and bleu[3] < bleu[best]      # constructed: BLEU rises, then stays; not the last step
    assert summary["kept"] == {"rule": "best_bleu", "step": best, "valid_bleu": bleu[best]}
    assert summary["best_valid_bleu"] == bleu[best]
    want = _weights_at(toy, tmp_path / "b", best, lr=4.0)
    assert _equal_weights(_load(tmp_path / "a" / "out" / "model.pt")["weights"], want)
    # the curve is the BLEU of greedy translations of the validation set: recompute it for the kept weights
    src = pad([encode_source(s) for s in toy["valid"][0]])
    assert validation_bleu(greedy(model, src), toy["valid"][1]) == pytest.approx(bleu[best], abs=1e-9)
    assert validation_bleu([[5, 6, 7, 8]], [[5, 6, 7, 8]]) == pytest.approx(100.0)


def test_keep_average_is_the_mean_of_the_last_checkpoints(toy, tmp_path):
    # checkpoints at 4, 8, 12 and the end (14); the last 3 are averaged
    summary, model = _toy_fit(toy, tmp_path / "a", max_steps=14, checkpoint_every=4, keep="average", average_last=3)
    assert summary["kept"] == {"rule": "average", "steps": [8, 12, 14], "step": 14}
    assert sorted(p.name for p in (tmp_path / "a" / "run" / "average").iterdir()) == \
        ["step-000000008.pt", "step-000000012.pt", "step-000000014.pt"]
    parts = [_weights_at(toy, tmp_path / f"w{step}", step, max_steps=14, checkpoint_every=4) for step in (8, 12)]
    parts.append(_load(tmp_path / "a" / "run" / "last.pt")["weights"])
    saved = _load(tmp_path / "a" / "out" / "model.pt")["weights"]
    for key in saved:
        mean = (sum(p[key].double() for p in parts) / 3).float()
        assert torch.equal(saved[key], mean), key
        assert torch.allclose(saved[key], torch.stack([p[key] for p in parts]).mean(0), rtol=0, atol=1e-6)
        assert torch.equal(model.state_dict()[key], saved[key])
    assert not _equal_weights(saved, parts[-1])


def test_average_checkpoints_is_the_elementwise_mean(tmp_path):
    paths = []
    values = [([1.0, 2.0, -3.0], 7), ([2.0, 2.5, 0.0], 8), ([0.5, -1.0, 3.5], 9)]
    for k, (w, count) in enumerate(values):
        paths.append(tmp_path / f"c{k}.pt")
        save_atomic({"weights": {"w": torch.tensor(w), "h": torch.tensor([[w[0]]], dtype=torch.float64),
                                 "n": torch.tensor(count)}}, paths[-1])
    mean = average_checkpoints(paths)
    assert mean["w"].tolist() == pytest.approx([3.5 / 3, 3.5 / 3, 0.5 / 3], rel=1e-7)
    assert mean["w"].dtype == torch.float32 and mean["h"].dtype == torch.float64
    assert mean["h"].item() == pytest.approx(3.5 / 3, rel=1e-15)
    assert mean["n"].item() == 9   # integer buffers: the last checkpoint's value
    save_atomic({"weights": {"w": torch.zeros(4), "h": torch.zeros(1, 1), "n": torch.tensor(1)}}, tmp_path / "x.pt")
    with pytest.raises(PipelineError, match="x.pt: weights differ in names or shapes"):
        average_checkpoints(paths + [tmp_path / "x.pt"])
    with pytest.raises(PipelineError, match="no checkpoint files"):
        average_checkpoints([])


# ------------------------------------------------------------------------------- restart policy, curves
def test_a_finished_run_is_kept_when_nothing_changed(toy, tmp_path):
    first, model = _toy_fit(toy, tmp_path, max_steps=6)
    assert (tmp_path / "run" / "COMPLETE").is_file() and first["resumed_from_step"] == 0
    again, model2 = _toy_fit(toy, tmp_path, max_steps=6, log_every=2)   # cadence may change
    assert again["resumed_from_step"] == 6 and again["steps"] == 6
    assert _equal_weights(model.state_dict(), model2.state_dict())
    assert (tmp_path / "run" / "COMPLETE").is_file()


def test_a_finished_run_of_another_recipe_is_deleted_and_trained_afresh(toy, tmp_path):
    _toy_fit(toy, tmp_path / "a", max_steps=6)
    (tmp_path / "a" / "run" / "stray.txt").write_text("from the old run")
    summary, model = _toy_fit(toy, tmp_path / "a", max_steps=6, lr=4.0)
    assert summary["resumed_from_step"] == 0 and summary["steps"] == 6
    assert not (tmp_path / "a" / "run" / "stray.txt").exists() and (tmp_path / "a" / "run" / "COMPLETE").is_file()
    _, fresh = _toy_fit(toy, tmp_path / "b", max_steps=6, lr=4.0)
    assert _equal_weights(model.state_dict(), fresh.state_dict())
    # a finished run past a lowered max_steps cannot continue either: afresh
    lowered, _ = _toy_fit(toy, tmp_path / "a", max_steps=3, lr=4.0)
    assert lowered["resumed_from_step"] == 0 and lowered["steps"] == 3


def test_curves_are_written_once_to_curves_dir(toy, tmp_path, monkeypatch):
    calls = []
    publish = CurveLog.publish
    monkeypatch.setattr(CurveLog, "publish", lambda self, target: (calls.append(target), publish(self, target)))
    summary, _ = _toy_fit(toy, tmp_path, max_steps=7, log_every=2)
    assert calls == [tmp_path / "curves"]
    files = sorted(str(p.relative_to(tmp_path / "curves")) for p in (tmp_path / "curves").rglob("*") if p.is_file())
    assert files == ["train/loss.tsv", "train/lr.tsv", "train/nll.tsv", "valid/loss.tsv", "valid/nll.tsv",
                     "valid/ppl.tsv"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["model.pt", "train.json"]   # no out/dvclive
    assert list(_curve(tmp_path / "curves" / "train" / "loss.tsv")) == [2, 4, 6, 7]
    assert list(_curve(tmp_path / "curves" / "valid" / "nll.tsv")) == [3, 6, 7]
    assert summary["final_valid_nll"] == _curve(tmp_path / "curves" / "valid" / "nll.tsv")[7]


# -------------------------------------------------------------------------------------------- recipe
def test_recipe_validation_names_the_key():
    base = {"lr": 1e-3, "warmup": 10, "max_steps": 20, "batch_size": 100}
    recipe = Recipe.from_dict(base)
    assert recipe.adam_betas == (0.9, 0.98) and recipe.optimizer == "adam" and recipe.keep == "last"
    assert Recipe.from_dict(json.loads(json.dumps(recipe.to_dict()))) == recipe
    assert Recipe.from_dict({**base, "adam_betas": [0.9, 0.997]}).adam_betas == (0.9, 0.997)
    cases = [
        ({**base, "lr_rate": 1.0}, r"recipe\.lr_rate: unknown recipe key"),
        ({**base, "batch_tokens": 100}, r"recipe\.batch_tokens: unknown recipe key"),   # the old key
        ({k: v for k, v in base.items() if k != "batch_size"}, r"recipe\.batch_size: missing"),
        ({**base, "lr": "1e-3"}, r"recipe\.lr: got '1e-3' \(str\); expected a number > 0 \(write .*1\.0e-3"),
        ({**base, "lr": 0.0}, r"recipe\.lr: invalid value 0\.0; expected a number > 0"),
        ({**base, "schedule": "cosine"}, r"recipe\.schedule: invalid value 'cosine'; expected one of inverse_sqrt"),
        ({**base, "optimizer": "rmsprop"}, r"recipe\.optimizer: .*expected one of adam, adadelta, sgd"),
        ({**base, "batch_unit": "words"}, r"recipe\.batch_unit"),
        ({**base, "loss_norm": "batch"}, r"recipe\.loss_norm"),
        ({**base, "keep": "best"}, r"recipe\.keep"),
        ({**base, "label_smoothing": 1.5}, r"recipe\.label_smoothing"),
        ({**base, "max_steps": True}, r"recipe\.max_steps: got True \(bool\)"),
        ({**base, "clip_norm": False}, r"recipe\.clip_norm: got False \(bool\)"),
        ({**base, "batch_size": 10.0}, r"recipe\.batch_size: got 10\.0 \(float\)"),
        ({**base, "adam_betas": [0.9]}, r"recipe\.adam_betas"),
        ({**base, "max_epochs": 3}, r"recipe\.max_steps: .*exactly one of them > 0"),
        ({**base, "max_steps": 0}, r"recipe\.max_steps: .*exactly one of them > 0"),
        ({**base, "keep": "average"}, r"recipe\.average_last: got 0; expected an integer >= 2"),
        ({**base, "schedule": "halve_last_epochs"}, r"recipe\.max_epochs: .*halve_last_epochs counts epochs"),
        ({**base, "max_steps": 0, "max_epochs": 6, "schedule": "halve_last_epochs", "halve_epochs": 7},
         r"recipe\.halve_epochs: got 7"),
        ({**base, "plateau_patience": 0}, r"recipe\.plateau_patience"),
    ]
    for values, message in cases:
        with pytest.raises(PipelineError, match=message):
            Recipe.from_dict(values)
    with pytest.raises(PipelineError, match=r"recipes\.big\.lr: got '1e-3'"):
        Recipe.from_dict({**base, "lr": "1e-3"}, where="recipes.big")
    with pytest.raises(PipelineError, match=r"recipe\.sgd_momentum: invalid value 1\.5"):
        Recipe(lr=1.0, batch_size=8, max_steps=1, sgd_momentum=1.5)


def test_recipe_module_imports_without_torch():
    code = "import sys, pipeline.recipe; bad = {'torch', 'numpy'} & set(sys.modules); assert not bad, bad"
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr


# -------------------------------------------------------------------------------- real training runs
SMALL = dict(d_model=64, ffn_dim=128, heads=4, enc_layers=2, dec_layers=2)


def _copy_data(n_train, n_valid=50, n_test=100):
    """Copy-task corpora (train/valid/test from different seeds) and their shared vocabulary."""
    train, valid, test = (synthetic_pairs("copy", n, seed=s) for n, s in ((n_train, 1), (n_valid, 2), (n_test, 3)))
    vocab = Vocab.build([s for s, _ in train])

    def encode(pairs):
        return [vocab.encode(s) for s, _ in pairs], [vocab.encode(t) for _, t in pairs]

    return encode(train), encode(valid), test, vocab


def _meta(spec, vocab):
    return {"model": spec, "src_vocab_size": len(vocab), "tgt_vocab_size": len(vocab)}


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """A short transformer run (dropout on) and its directories."""
    root = tmp_path_factory.mktemp("small")
    train, valid, _, vocab = _copy_data(200, n_valid=20)
    spec = {"encoder": "transformer", "decoder": "transformer", **SMALL, "d_model": 32, "ffn_dim": 64,
            "dropout": 0.1}
    seed_everything(1)
    model = _model(spec, len(vocab))
    recipe = Recipe(lr=2e-3, warmup=5, max_steps=30, batch_size=200, label_smoothing=0.1, checkpoint_every=10,
                    valid_every=10, log_every=5)
    summary = fit(model, train, valid, recipe, run_dir=root / "run", out_dir=root / "out",
                  curves_dir=root / "curves", meta=_meta(spec, vocab), progress=False)
    return dict(root=root, model=model, summary=summary, train=train, valid=valid, vocab=vocab, spec=spec,
                recipe=recipe)


def test_outputs_rebuild_the_model_and_report_the_run(small_run):
    out, run, curves = (small_run["root"] / d for d in ("out", "run", "curves"))
    model, info = load_model(out / "model.pt")
    trained = small_run["model"].state_dict()
    assert all(torch.equal(v, trained[k]) for k, v in model.state_dict().items())
    assert not model.training
    assert info["model"] == small_run["spec"] and info["step"] == 30
    assert info["kept"] == {"rule": "last", "step": 30}
    assert info["n_params"] == count_parameters(small_run["model"])
    report = json.loads((out / "train.json").read_text())
    assert report["steps"] == 30 and report["n_params"] == info["n_params"]
    assert report["kept"] == {"rule": "last", "step": 30}
    assert report["tokens"] > 0 and report["tokens_per_s"] > 0 and report["steps_per_s"] > 0
    assert math.isfinite(report["final_train_loss"]) and math.isfinite(report["final_valid_loss"])
    assert report["best_valid_nll"] <= report["final_valid_nll"]
    assert (run / "last.pt").is_file() and (run / "best.pt").is_file() and (run / "COMPLETE").is_file()
    best, best_info = load_model(run / "best.pt")
    assert best_info["step"] in (10, 20, 30)
    curve = (curves / "train" / "loss.tsv").read_text().splitlines()
    assert curve[0] == "step\tloss" and [int(r.split("\t")[0]) for r in curve[1:]] == [5, 10, 15, 20, 25, 30]
    valid_curve = (curves / "valid" / "nll.tsv").read_text().splitlines()
    assert [int(r.split("\t")[0]) for r in valid_curve[1:]] == [10, 20, 30]
    assert not (out / "dvclive").exists()


def test_resume_refuses_a_different_recipe_or_data(small_run, tmp_path):
    r = small_run
    shutil.copytree(r["root"] / "run", tmp_path / "run")
    (tmp_path / "run" / "COMPLETE").unlink()   # an unfinished (killed) run is never silently discarded
    args = dict(run_dir=tmp_path / "run", out_dir=tmp_path / "out", curves_dir=tmp_path / "curves", progress=False,
                meta=_meta(r["spec"], r["vocab"]))
    model = _model(r["spec"], len(r["vocab"]))
    changed = dataclasses.replace(r["recipe"], lr=1e-3)
    with pytest.raises(PipelineError, match=r"recipe\.lr: checkpoint 0\.002, now 0\.001"):
        fit(model, r["train"], r["valid"], changed, **args)
    with pytest.raises(PipelineError, match=r"recipe\.optimizer: checkpoint 'adam', now 'sgd'"):
        fit(model, r["train"], r["valid"], dataclasses.replace(r["recipe"], optimizer="sgd"), **args)
    with pytest.raises(PipelineError, match="data differ"):
        fit(model, (r["train"][0][1:], r["train"][1][1:]), r["valid"], r["recipe"], **args)
    with pytest.raises(PipelineError, match="beyond recipe.max_steps"):
        fit(model, r["train"], r["valid"], dataclasses.replace(r["recipe"], max_steps=20), **args)
    assert not (tmp_path / "out").exists() and (tmp_path / "run" / "last.pt").is_file()


def test_raising_max_steps_continues_a_finished_run(small_run, tmp_path):
    r = small_run
    shutil.copytree(r["root"] / "run", tmp_path / "run")
    model = _model(r["spec"], len(r["vocab"]))
    summary = fit(model, r["train"], r["valid"], dataclasses.replace(r["recipe"], max_steps=35),
                  run_dir=tmp_path / "run", out_dir=tmp_path / "out", curves_dir=tmp_path / "curves",
                  progress=False, meta=_meta(r["spec"], r["vocab"]))
    assert summary["resumed_from_step"] == 30 and summary["steps"] == 35
    before = r["model"].state_dict()
    assert any(not torch.equal(v, before[k]) for k, v in model.state_dict().items())
    assert list(_curve(tmp_path / "curves" / "train" / "loss.tsv")) == [5, 10, 15, 20, 25, 30, 35]


def _finetune(r, root: Path, max_steps: int):
    """Fine-tune a recurrence model from the small run's transformer; returns (summary, model)."""
    spec = {"encoder": "recurrence", "decoder": "recurrence", **SMALL, "d_model": 32, "ffn_dim": 64,
            "rec_type": "biarn", "rec_steps": 4, "dropout": 0.0}
    seed_everything(5)  # the fresh parameters' initialisation
    model = _model(spec, len(r["vocab"]))
    recipe = dataclasses.replace(r["recipe"], max_steps=max_steps, lr=1e-12, schedule="constant", checkpoint_every=1)
    summary = fit(model, r["train"], r["valid"], recipe, run_dir=root / "run", out_dir=root / "out",
                  curves_dir=root / "curves", meta=_meta(spec, r["vocab"]), init_state=r["model"].state_dict(),
                  progress=False)
    return summary, model, spec


def test_fine_tuning_starts_from_the_baseline(small_run, tmp_path):
    r = small_run
    summary, model, spec = _finetune(r, tmp_path, 1)
    baseline = r["model"].state_dict()
    expected_fresh = init_from(_model(spec, len(r["vocab"])), baseline)
    assert summary["fresh_parameters"] == expected_fresh and expected_fresh
    copied = [k for k in baseline if k not in expected_fresh and k in model.state_dict()]
    assert copied
    for key in copied:  # one update with lr 1e-12 leaves the copied weights within 1e-9 of the baseline
        assert torch.allclose(model.state_dict()[key], baseline[key], atol=1e-9)


def test_a_resumed_fine_tune_reports_the_same_fresh_parameters(small_run, tmp_path):
    whole, model, _ = _finetune(small_run, tmp_path / "whole", 2)
    _finetune(small_run, tmp_path / "parts", 1)
    resumed, resumed_model, _ = _finetune(small_run, tmp_path / "parts", 2)   # resumes from the step-1 checkpoint
    assert resumed["resumed_from_step"] == 1 and resumed["steps"] == 2
    assert resumed["fresh_parameters"] == whole["fresh_parameters"] and whole["fresh_parameters"]
    assert json.loads((tmp_path / "parts" / "out" / "train.json").read_text())["fresh_parameters"] == \
        whole["fresh_parameters"]
    assert _equal_weights(model.state_dict(), resumed_model.state_dict())


def test_checkpoint_files_fail_clearly(tmp_path):
    with pytest.raises(PipelineError, match="checkpoint not found"):
        load_model(tmp_path / "missing.pt")
    broken = tmp_path / "broken.pt"
    broken.write_bytes(b"not a torch file")
    with pytest.raises(PipelineError, match="broken.pt: not a readable checkpoint"):
        load_model(broken)
    save_atomic({"format": "something else"}, tmp_path / "other.pt")
    with pytest.raises(PipelineError, match="other.pt: not a model file"):
        load_model(tmp_path / "other.pt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.pt", "other.pt"]  # no temp files left


# ------------------------------------------------------------------------------------- kill / resume
TRAIN_SCRIPT = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    import torch
    torch.set_num_threads(1)
    from pipeline.data.synthetic import synthetic_pairs
    from pipeline.data.vocab import Vocab
    from pipeline.models.registry import build_model
    from pipeline.recipe import Recipe
    from pipeline.train import fit, seed_everything


    def build(spec, vocab_size):
        return build_model(spec, vocab_size, vocab_size)


    root, case = Path(sys.argv[1]), json.loads(sys.argv[2])
    pairs = synthetic_pairs("copy", case["pairs"], seed=1)
    vocab = Vocab.build([s for s, _ in pairs])
    data = ([vocab.encode(s) for s, _ in pairs], [vocab.encode(t) for _, t in pairs])
    spec = {"encoder": "transformer", "decoder": "transformer", "d_model": 32, "ffn_dim": 64, "heads": 4,
            "enc_layers": case["layers"], "dec_layers": case["layers"], "dropout": 0.2}
    seed_everything(7)
    model = build(spec, len(vocab))
    recipe = Recipe.from_dict({"checkpoint_every": 7, "log_every": 3, "seed": 7, **case["recipe"]})
    meta = {"model": spec, "src_vocab_size": len(vocab), "tgt_vocab_size": len(vocab)}
    fit(model, data, (data[0][:30], data[1][:30]), recipe, run_dir=root / "run", out_dir=root / "out",
        curves_dir=root / "curves", meta=meta, progress=False)
""")

# every family of recipe, each killed once a step past checkpoint `kill_after` is logged (checkpoints every 7
# steps; past the first halving for halve_on_plateau, past a best BLEU for best_bleu, several snapshots for average)
KILL_CASES = {
    "adam-inverse_sqrt-tokens": dict(pairs=300, layers=2, kill_after=7, recipe=dict(
        lr=2e-3, warmup=10, max_steps=120, batch_size=150, valid_every=11, label_smoothing=0.1)),
    "adadelta-sentences-clip": dict(pairs=200, layers=1, kill_after=7, recipe=dict(
        optimizer="adadelta", lr=1.0, schedule="constant", batch_unit="sentences", batch_size=8,
        loss_norm="sentences", clip_norm=1.0, max_steps=50, valid_every=11)),
    "sgd-halve_last_epochs": dict(pairs=150, layers=1, kill_after=28, recipe=dict(
        optimizer="sgd", lr=0.3, sgd_momentum=0.9, schedule="halve_last_epochs", halve_epochs=2, max_epochs=4,
        batch_unit="sentences", batch_size=12, valid_every=11)),
    "halve_on_plateau-float32": dict(pairs=200, layers=1, kill_after=21, recipe=dict(
        lr=1e-2, schedule="halve_on_plateau", plateau_patience=1, batch_size=120, max_steps=50, valid_every=4,
        precision="float32")),
    "keep-average": dict(pairs=200, layers=1, kill_after=35, recipe=dict(
        lr=3e-3, warmup=5, batch_size=120, max_steps=60, valid_every=11, keep="average", average_last=3)),
    "keep-best_bleu": dict(pairs=200, layers=1, kill_after=28, recipe=dict(
        lr=3e-3, warmup=5, batch_size=120, max_steps=40, valid_every=6, log_every=1, keep="best_bleu")),
}


def _run_script(script, root, case, **popen):
    return subprocess.Popen([sys.executable, str(script), str(root), json.dumps(case)], cwd=root,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **popen)


def _logged_steps(tsv):
    """Steps present in a dvclive metric file (empty set if not written yet)."""
    rows = tsv.read_text().splitlines()[1:] if tsv.exists() else []
    return {int(row.split("\t")[0]) for row in rows if row.strip() and row.split("\t")[0].isdigit()}


@pytest.mark.parametrize("name", list(KILL_CASES))
def test_killed_run_resumes_to_bitwise_identical_weights(tmp_path, name):
    case = KILL_CASES[name]
    script = tmp_path / "train_copy.py"
    script.write_text(TRAIN_SCRIPT)
    (tmp_path / "full").mkdir()
    (tmp_path / "killed").mkdir()
    full = _run_script(script, tmp_path / "full", case)
    assert full.wait(timeout=300) == 0, full.stderr.read()
    report = json.loads((tmp_path / "full" / "out" / "train.json").read_text())
    steps = report["steps"]

    victim = _run_script(script, tmp_path / "killed", case)
    last = tmp_path / "killed" / "run" / "last.pt"
    curve = tmp_path / "killed" / "run" / "dvclive" / "plots" / "metrics" / "train" / "loss.tsv"
    deadline = time.time() + 120
    # kill once a step past checkpoint kill_after is logged, so the curves hold rows past it
    after = case["kill_after"]
    while time.time() < deadline and victim.poll() is None and not {s for s in _logged_steps(curve) if s > after}:
        time.sleep(0.005)
    victim.send_signal(signal.SIGKILL)
    assert victim.wait(timeout=30) == -signal.SIGKILL
    assert last.exists() and not (tmp_path / "killed" / "out" / "model.pt").exists()
    killed_at = _load(last)["progress"]["step"]
    assert after <= killed_at < steps and max(_logged_steps(curve)) > killed_at

    rerun = _run_script(script, tmp_path / "killed", case)
    assert rerun.wait(timeout=300) == 0, rerun.stderr.read()
    resumed = json.loads((tmp_path / "killed" / "out" / "train.json").read_text())
    assert resumed["resumed_from_step"] == killed_at and resumed["steps"] == steps
    assert resumed["kept"] == report["kept"] and resumed["epochs"] == report["epochs"]

    a, b = (_load(tmp_path / d / "out" / "model.pt") for d in ("full", "killed"))
    assert a["step"] == b["step"] and a["weights"].keys() == b["weights"].keys()
    for key in a["weights"]:
        assert torch.equal(a["weights"][key], b["weights"][key]), key
    names = ["train/loss.tsv", "train/lr.tsv", "valid/nll.tsv"] + (["valid/bleu.tsv"] if "bleu" in name else [])
    for curve_name in names:  # curves: no duplicated or lost steps
        curves = [(tmp_path / d / "curves" / curve_name).read_text() for d in ("full", "killed")]
        assert curves[0] == curves[1], curve_name
    best = [_load(tmp_path / d / "run" / "best.pt") for d in ("full", "killed")]
    assert best[0]["step"] == best[1]["step"] and _equal_weights(best[0]["weights"], best[1]["weights"])

    # each case exercises what it names; all but the float32 one at the machine's "auto" precision
    lr = _curve(tmp_path / "full" / "curves" / "train" / "lr.tsv")
    recipe = case["recipe"]
    assert report["precision"] == a["meta"]["precision"] == resolve(recipe.get("precision", "auto"), "cpu")
    if recipe.get("schedule") in ("halve_last_epochs", "halve_on_plateau"):
        assert min(lr.values()) < max(lr.values()) == recipe["lr"]
        assert min(step for step, rate in lr.items() if rate < recipe["lr"]) <= after   # halved before the kill
    if "max_epochs" in recipe:
        assert report["epochs"] == recipe["max_epochs"] and steps == 4 * 13   # 150 pairs / 12 = 13 batches
    if recipe.get("keep") == "average":
        assert report["kept"] == {"rule": "average", "steps": [49, 56, 60], "step": 60}
    if recipe.get("keep") == "best_bleu":
        bleu = _curve(tmp_path / "full" / "curves" / "valid" / "bleu.tsv")
        best_step = min(bleu, key=lambda s: (-bleu[s], s))
        assert report["kept"] == {"rule": "best_bleu", "step": best_step, "valid_bleu": bleu[best_step]}
        assert best_step < after < max(bleu)   # the best step is before the kill, and not the last


def test_curves_are_cut_back_to_the_resumed_step(tmp_path):
    metrics = tmp_path / "dvclive" / "plots" / "metrics" / "train"
    metrics.mkdir(parents=True)
    (metrics / "loss.tsv").write_text("step\tloss\n5\t3.1\n10\t2.9\n15\t2.7\n20\t2.")  # torn by a kill
    (metrics / "lr.tsv").write_text("step\tlr\n5\t0.1\n10\t0.2\n")
    (tmp_path / "dvclive" / "metrics.json").write_text('{"step": 15, "train": {"lo')
    _truncate_curves(tmp_path / "dvclive", 10)
    assert (metrics / "loss.tsv").read_text() == "step\tloss\n5\t3.1\n10\t2.9\n"
    assert (metrics / "lr.tsv").read_text() == "step\tlr\n5\t0.1\n10\t0.2\n"
    assert not (tmp_path / "dvclive" / "metrics.json").exists()
