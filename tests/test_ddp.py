"""DDP under torchrun with gloo on CPU: identical weights on every rank, equal to one process."""
import json
import subprocess
import sys
import textwrap

import torch

torch.set_num_threads(1)

# adam_eps 1e-4 (not 1e-9): attention key biases have an exactly zero gradient (softmax shift invariance), so
# their computed gradients are float noise whose sign depends on summation order; with a tiny eps Adam turns
# that noise into full-size lr steps. A larger eps keeps the comparison about the DDP arithmetic.
SCRIPT = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    import torch
    torch.set_num_threads(1)
    from pipeline.data.synthetic import synthetic_pairs
    from pipeline.data.vocab import Vocab
    from pipeline.models.registry import build_model
    from pipeline.train import Recipe, fit, seed_everything

    root, rank = Path(sys.argv[1]), int(os.environ.get("RANK", "0"))
    pairs = synthetic_pairs("copy", 120, seed=1)
    vocab = Vocab.build([s for s, _ in pairs])
    data = ([vocab.encode(s) for s, _ in pairs], [vocab.encode(t) for _, t in pairs])
    options = dict(d_model=32, ffn_dim=64, heads=4, enc_layers=1, dec_layers=1, dropout=0.0)
    seed_everything(100 + rank)  # a different init per rank: fit must start every rank from rank 0's weights
    model = build_model("transformer", options, len(vocab), len(vocab))
    if rank == 0:
        torch.save(model.state_dict(), root / "init.pt")
    recipe = Recipe(lr=1e-3, warmup=2, max_steps=6, batch_tokens=160, checkpoint_every=3, valid_every=3,
                    log_every=1, seed=3, adam_eps=1e-4)
    meta = {"arch": "transformer", "options": options, "src_vocab_size": len(vocab), "tgt_vocab_size": len(vocab)}
    out = root / f"out{rank}"
    fit(model, data, (data[0][:20], data[1][:20]), recipe, run_dir=root / "run", out_dir=out,
                  meta=meta, progress=False)
    torch.save(model.state_dict(), root / f"final{rank}.pt")
""")

SINGLE = textwrap.dedent("""
    import sys
    from pathlib import Path
    import torch
    torch.set_num_threads(1)
    from pipeline.data.synthetic import synthetic_pairs
    from pipeline.data.vocab import Vocab
    from pipeline.models.registry import build_model
    from pipeline.train import Recipe, fit

    root, init = Path(sys.argv[1]), Path(sys.argv[2])
    pairs = synthetic_pairs("copy", 120, seed=1)
    vocab = Vocab.build([s for s, _ in pairs])
    data = ([vocab.encode(s) for s, _ in pairs], [vocab.encode(t) for _, t in pairs])
    options = dict(d_model=32, ffn_dim=64, heads=4, enc_layers=1, dec_layers=1, dropout=0.0)
    model = build_model("transformer", options, len(vocab), len(vocab))
    model.load_state_dict(torch.load(init, weights_only=True))
    recipe = Recipe(lr=1e-3, warmup=2, max_steps=6, batch_tokens=160, checkpoint_every=3, valid_every=3,
                    log_every=1, seed=3, adam_eps=1e-4)
    meta = {"arch": "transformer", "options": options, "src_vocab_size": len(vocab), "tgt_vocab_size": len(vocab)}
    fit(model, data, (data[0][:20], data[1][:20]), recipe, run_dir=root / "run", out_dir=root / "out", meta=meta,
        progress=False)
    torch.save(model.state_dict(), root / "final.pt")
""")


def _load(path):
    return torch.load(path, map_location="cpu", weights_only=True)


def test_two_gloo_ranks_match_each_other_and_a_single_process(tmp_path):
    ddp, single = tmp_path / "ddp", tmp_path / "single"
    ddp.mkdir()
    single.mkdir()
    (tmp_path / "ddp.py").write_text(SCRIPT)
    (tmp_path / "single.py").write_text(SINGLE)
    run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                          str(tmp_path / "ddp.py"), str(ddp)], capture_output=True, text=True, timeout=300,
                         cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    run = subprocess.run([sys.executable, str(tmp_path / "single.py"), str(single), str(ddp / "init.pt")],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]

    rank0, rank1, alone = _load(ddp / "final0.pt"), _load(ddp / "final1.pt"), _load(single / "final.pt")
    init = _load(ddp / "init.pt")
    for key in rank0:
        assert torch.equal(rank0[key], rank1[key]), key
        assert torch.allclose(rank0[key], alone[key], rtol=0, atol=1e-6), key
    assert any(not torch.equal(rank0[k], init[k]) for k in init)  # training moved the weights

    # rank 0 alone wrote the outputs; both report the same global token count
    assert (ddp / "out0" / "model.pt").is_file() and not (ddp / "out1").exists()
    report = json.loads((ddp / "out0" / "train.json").read_text())
    single_report = json.loads((single / "out" / "train.json").read_text())
    assert report["world_size"] == 2 and report["steps"] == 6
    assert report["tokens"] == single_report["tokens"]
    assert abs(report["final_valid_loss"] - single_report["final_valid_loss"]) < 1e-5
