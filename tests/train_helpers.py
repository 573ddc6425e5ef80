"""Shared by tests/train/test_train_*.py: a toy copy-task model, short runs of it on the `toy` fixture's data
(tests/train/conftest.py), readers of their outputs."""
from pathlib import Path

import torch
import torch.nn.functional as F

from pipeline.data.vocab import PAD
from pipeline.recipe import Recipe
from pipeline.train import fit

torch.set_num_threads(1)


def load_pt(path):
    return torch.load(path, map_location="cpu", weights_only=True)


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


TOY_RECIPE = dict(lr=8.0, batch_size=20, batch_unit="sentences", optimizer="sgd", schedule="constant", max_steps=30,
                  valid_every=3, checkpoint_every=3, log_every=3)


def toy_fit(toy, root: Path, meta: dict | None = None, **recipe):
    """fit the Aligned model (seed 0) with TOY_RECIPE updated by `recipe` (toy's meta updated by `meta`); returns
    (summary, model)."""
    model = Aligned(toy["V"])
    summary = fit(model, toy["train"], toy["valid"], Recipe(**{**TOY_RECIPE, **recipe}), run_dir=root / "run",
                  out_dir=root / "out", curves_dir=root / "curves", meta={**toy["meta"], **(meta or {})},
                  progress=False)
    return summary, model


def read_curve(path: Path) -> dict:
    """step -> value of a curve TSV."""
    rows = [line.split("\t") for line in path.read_text().splitlines()[1:]]
    return {int(step): float(value) for step, value in rows}


def equal_weights(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)



def train_cli(root: Path, model: dict, recipe: dict, run_dir: Path | None = None) -> list[str]:
    """`python -m pipeline train` on a tiny corpus written under `root` (vocabularies, train and valid splits), as
    the train rule runs it; run_dir: the run folder (default root/run)."""
    import json
    import sys

    from pipeline.data.token_store import binarize
    from pipeline.data.vocab import Vocab
    lines = [" ".join(f"w{(i * 7 + j) % 13}" for j in range(3 + i % 5)) for i in range(40)]
    args = ["--spec", json.dumps({"experiment": "tiny", "model": model, "recipe": recipe, "seed": 1, "init": None})]
    for side in ("src", "tgt"):
        (root / f"text.{side}").write_text("\n".join(lines) + "\n", encoding="utf-8")
        vocab = Vocab.build(lines)
        vocab.save(root / f"vocab.{side}")
        for split in ("train", "valid"):
            binarize(root / f"text.{side}", vocab, root / f"{split}.{side}")
            args += [f"--{split}-{side}", str(root / f"{split}.{side}")]
        args += [f"--{side}-vocab", str(root / f"vocab.{side}")]
    dirs = {"run": run_dir or root / "run", "out": root / "out", "curves": root / "curves"}
    for name, path in dirs.items():
        args += [f"--{name}-dir", str(path)]
    return [sys.executable, "-m", "pipeline", "train", *args, "--no-progress"]
