"""Training on memory-mapped token stores (pipeline.data.token_store) is bitwise training on the same id lists."""
import torch

from pipeline.data import token_store
from pipeline.data.token_store import Pairs, TokenArray
from pipeline.recipe import Recipe
from pipeline.train import fit
from train_helpers import TOY_RECIPE, Aligned, equal_weights


def test_training_on_stores_is_bitwise_training_on_id_lists(toy, tmp_path):
    for split in ("train", "valid"):
        for side, seqs in zip(("src", "tgt"), toy[split]):
            token_store.write_store(seqs, list, tmp_path / "bin" / f"{split}.{side}")
    stores = {split: Pairs(TokenArray.open(tmp_path / "bin" / f"{split}.src"),
                           TokenArray.open(tmp_path / "bin" / f"{split}.tgt")) for split in ("train", "valid")}
    weights = []
    for name, (train, valid) in (("lists", (toy["train"], toy["valid"])),
                                 ("stores", (stores["train"], stores["valid"]))):
        model = Aligned(toy["V"])
        summary = fit(model, train, valid, Recipe(**{**TOY_RECIPE, "max_steps": 12}), run_dir=tmp_path / name / "run",
                      out_dir=tmp_path / name / "out", curves_dir=tmp_path / name / "curves", meta=toy["meta"],
                      progress=False)
        weights.append({k: v.clone() for k, v in model.state_dict().items()})
        assert summary["steps"] == 12
    assert equal_weights(*weights)
    assert not torch.equal(weights[0]["prev"], Aligned(toy["V"]).prev)  # it trained
