"""Trainer: the weights a recipe keeps (last, best validation loss, best validation BLEU, an average of the last
checkpoints)."""
from pathlib import Path

import pytest
import torch

from pipeline.checkpoint import average_checkpoints, save_atomic
from pipeline.data.batching import encode_source, pad
from pipeline.errors import PipelineError
from pipeline.search import greedy
from pipeline.train import validation_bleu
from train_helpers import equal_weights, load_pt, read_curve, toy_fit


def _weights_at(toy, root: Path, step: int, **recipe) -> dict:
    """The weights of the same run stopped after `step` updates (keep: last)."""
    _, model = toy_fit(toy, root, **{**recipe, "max_steps": step, "keep": "last", "average_last": 0})
    return model.state_dict()


def test_keep_best_loss_keeps_the_best_steps_weights(toy, tmp_path):
    summary, model = toy_fit(toy, tmp_path / "a", keep="best_loss")
    nll = read_curve(tmp_path / "a" / "curves" / "valid" / "nll.tsv")
    best = min(nll, key=lambda s: (nll[s], s))
    assert best not in (3, 30)  # the validation NLL falls, then rises (constructed)
    assert summary["kept"] == {"rule": "best_loss", "step": best, "valid_nll": nll[best]}
    saved = load_pt(tmp_path / "a" / "out" / "model.pt")
    assert saved["step"] == best and saved["kept"]["step"] == best
    want = _weights_at(toy, tmp_path / "b", best)
    assert equal_weights(saved["weights"], want) and equal_weights(model.state_dict(), want)
    assert not equal_weights(want, load_pt(tmp_path / "a" / "run" / "last.pt")["weights"])


def test_keep_best_bleu_keeps_the_step_of_highest_validation_bleu(toy, tmp_path):
    summary, model = toy_fit(toy, tmp_path / "a", lr=4.0, keep="best_bleu")
    bleu = read_curve(tmp_path / "a" / "curves" / "valid" / "bleu.tsv")
    assert sorted(bleu) == list(range(3, 31, 3))
    best = min(bleu, key=lambda s: (-bleu[s], s))   # the first step of the highest BLEU
    assert best != 30 and bleu[3] < bleu[best]      # constructed: BLEU rises, then stays; not the last step
    assert summary["kept"] == {"rule": "best_bleu", "step": best, "valid_bleu": bleu[best]}
    assert summary["best_valid_bleu"] == bleu[best]
    want = _weights_at(toy, tmp_path / "b", best, lr=4.0)
    assert equal_weights(load_pt(tmp_path / "a" / "out" / "model.pt")["weights"], want)
    # the curve is the BLEU of greedy translations of the validation set: recompute it for the kept weights
    src = pad([encode_source(s) for s in toy["valid"][0]])
    assert validation_bleu(greedy(model, src), toy["valid"][1]) == pytest.approx(bleu[best], abs=1e-9)
    assert validation_bleu([[5, 6, 7, 8]], [[5, 6, 7, 8]]) == pytest.approx(100.0)


def test_keep_average_is_the_mean_of_the_last_checkpoints(toy, tmp_path):
    # checkpoints at 4, 8, 12 and the end (14); the last 3 are averaged
    summary, model = toy_fit(toy, tmp_path / "a", max_steps=14, checkpoint_every=4, keep="average", average_last=3)
    assert summary["kept"] == {"rule": "average", "steps": [8, 12, 14], "step": 14}
    assert sorted(p.name for p in (tmp_path / "a" / "run" / "average").iterdir()) == \
        ["step-000000008.pt", "step-000000012.pt", "step-000000014.pt"]
    parts = [_weights_at(toy, tmp_path / f"w{step}", step, max_steps=14, checkpoint_every=4) for step in (8, 12)]
    parts.append(load_pt(tmp_path / "a" / "run" / "last.pt")["weights"])
    saved = load_pt(tmp_path / "a" / "out" / "model.pt")["weights"]
    for key in saved:
        mean = (sum(p[key].double() for p in parts) / 3).float()
        assert torch.equal(saved[key], mean), key
        assert torch.allclose(saved[key], torch.stack([p[key] for p in parts]).mean(0), rtol=0, atol=1e-6)
        assert torch.equal(model.state_dict()[key], saved[key])
    assert not equal_weights(saved, parts[-1])


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

