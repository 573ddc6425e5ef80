"""DDP under torchrun with gloo on CPU: identical weights on every rank, equal to one process (per-token and
per-sentence loss), and a killed 2-rank run resumes to bitwise identical weights."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

torch.set_num_threads(1)

# One script for both launches: under torchrun every rank trains; alone (argv[3] = initial weights) one process
# starts from rank 0's initial weights. The model is built by build() only.
# adam_eps 1e-4 (not 1e-9): attention key biases have an exactly zero gradient (softmax shift invariance), so
# their computed gradients are float noise whose sign depends on summation order; with a tiny eps Adam turns
# that noise into full-size lr steps. A larger eps keeps the comparison about the DDP arithmetic.
SCRIPT = textwrap.dedent("""
    import json, os, sys
    from pathlib import Path
    import torch
    torch.set_num_threads(1)
    from pipeline.data.synthetic import synthetic_pairs
    from pipeline.data.vocab import Vocab
    from pipeline.errors import Stopped
    from pipeline.models.registry import build_model
    from pipeline.recipe import Recipe
    from pipeline.train import fit, seed_everything


    def build(spec, vocab_size):
        return build_model(spec, vocab_size, vocab_size)


    root, case, rank = Path(sys.argv[1]), json.loads(sys.argv[2]), int(os.environ.get("RANK", "0"))
    pairs = synthetic_pairs("copy", 120, seed=1)
    vocab = Vocab.build([s for s, _ in pairs])
    data = ([vocab.encode(s) for s, _ in pairs], [vocab.encode(t) for _, t in pairs])
    spec = {"encoder": "transformer", "decoder": "transformer", "d_model": 32, "ffn_dim": 64, "heads": 4,
            "enc_layers": 1, "dec_layers": 1, "dropout": case.get("dropout", 0.0)}
    seed_everything(100 + rank)  # a different init per rank: fit must start every rank from rank 0's weights
    model = build(spec, len(vocab))
    if len(sys.argv) > 3:
        model.load_state_dict(torch.load(sys.argv[3], weights_only=True))
    elif rank == 0:
        torch.save(model.state_dict(), root / "init.pt")
    recipe = Recipe.from_dict({"lr": 1e-3, "warmup": 2, "max_steps": 6, "batch_size": 160, "checkpoint_every": 3,
                               "valid_every": 3, "log_every": 1, "seed": 3, "adam_eps": 1e-4, **case["recipe"]})
    meta = {"model": spec, "src_vocab_size": len(vocab), "tgt_vocab_size": len(vocab)}
    try:
        fit(model, data, (data[0][:20], data[1][:20]), recipe, run_dir=root / "run", out_dir=root / f"out{rank}",
            curves_dir=root / "curves", meta=meta, progress=False)
    except Stopped as stop:  # as the command line does (pipeline/cli.py)
        print(f"rank {rank}: {stop}", file=sys.stderr)
        sys.exit(stop.exit_status)
    torch.save(model.state_dict(), root / f"final{rank}.pt")
""")


def _load(path):
    return torch.load(path, map_location="cpu", weights_only=True)


def _torchrun(script, root, case, **popen):
    return subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                             str(script), str(root), json.dumps(case)], cwd=root, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, **popen)


def _finish(proc, timeout=300):
    _, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]


@pytest.mark.parametrize("loss_norm", ["tokens", "sentences"])
def test_two_gloo_ranks_match_each_other_and_a_single_process(tmp_path, loss_norm):
    # float32: two half batches and one whole batch round differently in bfloat16; the split's arithmetic is the point
    case = {"recipe": {"loss_norm": loss_norm, "precision": "float32"}}
    if loss_norm == "sentences":  # dl4mt: batches of 9 pairs (an odd count: rank 0 gets 5, rank 1 gets 4)
        case["recipe"].update(batch_unit="sentences", batch_size=9)
    ddp, single = tmp_path / "ddp", tmp_path / "single"
    ddp.mkdir()
    single.mkdir()
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    _finish(_torchrun(script, ddp, case))
    run = subprocess.run([sys.executable, str(script), str(single), json.dumps(case), str(ddp / "init.pt")],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]

    rank0, rank1, alone = _load(ddp / "final0.pt"), _load(ddp / "final1.pt"), _load(single / "final0.pt")
    init = _load(ddp / "init.pt")
    for key in rank0:
        assert torch.equal(rank0[key], rank1[key]), key
        assert torch.allclose(rank0[key], alone[key], rtol=0, atol=1e-6), key
    assert any(not torch.equal(rank0[k], init[k]) for k in init)  # training moved the weights

    # rank 0 alone wrote the outputs; both report the same global token count
    assert (ddp / "out0" / "model.pt").is_file() and not (ddp / "out1").exists()
    report = json.loads((ddp / "out0" / "train.json").read_text())
    single_report = json.loads((single / "out0" / "train.json").read_text())
    assert report["world_size"] == 2 and report["steps"] == 6
    assert report["tokens"] == single_report["tokens"]
    assert abs(report["final_valid_loss"] - single_report["final_valid_loss"]) < 1e-5
    assert (ddp / "run" / "COMPLETE").is_file() and (ddp / "curves" / "train" / "loss.tsv").is_file()


def _logged_steps(tsv):
    rows = tsv.read_text().splitlines()[1:] if tsv.exists() else []
    return {int(row.split("\t")[0]) for row in rows if row.strip() and row.split("\t")[0].isdigit()}


def _descendants(pid: int) -> list[int]:
    """Every process below `pid` (torchrun starts its ranks in sessions of their own), from /proc."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    parents[int(entry)] = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    out, frontier = [], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        out += children
        frontier = children
    return out


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_killed_two_rank_run_resumes_to_bitwise_identical_weights(tmp_path, sig):
    """Every process of the run killed at once (SIGKILL: back to the last checkpoint), or signalled as Slurm does at
    a time limit (SIGTERM: both ranks stop at the same step after a checkpoint of it, losing nothing)."""
    # dropout on (each rank's random state is restored), sentence batches with per-sentence loss, clipping, and
    # validation BLEU (each rank decodes its share of the validation set)
    case = {"dropout": 0.1, "recipe": {"max_steps": 40, "checkpoint_every": 5, "valid_every": 7, "batch_unit":
                                       "sentences", "batch_size": 9, "loss_norm": "sentences", "clip_norm": 1.0,
                                       "keep": "best_bleu"}}
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    full, killed = tmp_path / "full", tmp_path / "killed"
    full.mkdir()
    killed.mkdir()
    _finish(_torchrun(script, full, case))

    victim = _torchrun(script, killed, case)
    curve = killed / "run" / "dvclive" / "plots" / "metrics" / "train" / "loss.tsv"
    deadline = time.time() + 120
    while time.time() < deadline and victim.poll() is None and not {s for s in _logged_steps(curve) if s > 5}:
        time.sleep(0.005)
    for pid in _descendants(victim.pid) + [victim.pid]:   # the ranks, then torchrun: all at once
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    _, said = victim.communicate(timeout=60)
    assert victim.returncode == -signal.SIGKILL if sig == signal.SIGKILL else victim.returncode != 0, said[-3000:]
    assert not (killed / "out0" / "model.pt").exists()
    killed_at = _load(killed / "run" / "last.pt")["progress"]["step"]
    assert 5 <= killed_at < 40 and len(_load(killed / "run" / "last.pt")["rng"]) == 2
    if sig == signal.SIGTERM:   # both ranks stopped at the checkpoint's step; nothing logged past it
        for rank in (0, 1):
            assert f"rank {rank}: stopped by " in said and f"at step {killed_at}/" in said, said[-3000:]
        assert max(_logged_steps(curve)) <= killed_at

    _finish(_torchrun(script, killed, case))
    report = json.loads((killed / "out0" / "train.json").read_text())
    assert report["resumed_from_step"] == killed_at and report["steps"] == 40 and report["world_size"] == 2
    assert report["kept"] == json.loads((full / "out0" / "train.json").read_text())["kept"]
    assert report["kept"]["rule"] == "best_bleu" and report["kept"]["step"] in (7, 14, 21, 28, 35, 40)
    for name in ("final0.pt", "final1.pt", "init.pt"):
        a, b = _load(full / name), _load(killed / name)
        assert all(torch.equal(a[k], b[k]) for k in a), name
    a, b = (_load(d / "out0" / "model.pt")["weights"] for d in (full, killed))
    for key in a:
        assert torch.equal(a[key], b[key]), key
    for name in ("train/loss.tsv", "train/lr.tsv", "valid/nll.tsv", "valid/bleu.tsv"):
        assert (full / "curves" / name).read_text() == (killed / "curves" / name).read_text(), name
