"""The no_sync speed-up (pipeline/speedups.py) in the trainer: the window's losses stay on the device until logged
or checkpointed; checked on the CPU by turning it on there."""
import pytest
import torch

from pipeline import speedups
from train_helpers import read_curve, toy_fit


def test_no_sync_training_follows_the_same_curve_and_refuses_a_non_finite_loss(toy, tmp_path):
    """The window's losses stay on the device and are read when logged: the same logged values and weights."""
    plain, model_a = toy_fit(toy, tmp_path / "a")
    with speedups.only({"no_sync"}, cpu=True):
        lazy, model_b = toy_fit(toy, tmp_path / "b")
    for name in ("loss", "nll"):
        a, b = (read_curve(root / "curves" / "train" / f"{name}.tsv") for root in (tmp_path / "a", tmp_path / "b"))
        assert a.keys() == b.keys() and all(b[k] == pytest.approx(v, rel=1e-6) for k, v in a.items())
    assert lazy["steps"] == plain["steps"] == 30
    assert all(torch.allclose(p, q, rtol=1e-5, atol=1e-6) for p, q in zip(model_a.parameters(), model_b.parameters()))
    with speedups.only({"no_sync"}, cpu=True), pytest.raises(FloatingPointError, match=r"at step \d+-\d+"):
        toy_fit(toy, tmp_path / "c", lr=float("inf"))
