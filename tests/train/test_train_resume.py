"""Trainer: a run killed after a checkpoint resumes to bitwise-identical weights and curves, for every family of
recipe; curves are cut back to the resumed step."""
import json
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

from pipeline.precision import resolve
from pipeline.train import _truncate_curves
from train_helpers import equal_weights, load_pt, read_curve

TRAIN_SCRIPT = textwrap.dedent("""
    import json, sys
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
    try:
        fit(model, data, (data[0][:30], data[1][:30]), recipe, run_dir=root / "run", out_dir=root / "out",
            curves_dir=root / "curves", meta=meta, progress=False)
    except Stopped as stop:  # as the command line does (pipeline/cli.py)
        print(stop, file=sys.stderr)
        sys.exit(stop.exit_status)
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
    killed_at = load_pt(last)["progress"]["step"]
    assert after <= killed_at < steps and max(_logged_steps(curve)) > killed_at
    logged = max(step for tsv in curve.parent.parent.rglob("*.tsv") for step in _logged_steps(tsv))

    rerun = _run_script(script, tmp_path / "killed", case)
    assert rerun.wait(timeout=300) == 0, rerun.stderr.read()
    # the rerun says where it resumed and that updates the killed attempt logged past its checkpoint were lost
    said = rerun.stderr.read()
    assert (f"resuming from step {killed_at}/{steps} ({last}); the attempt before logged step {logged}: at least "
            f"{logged - killed_at} updates lost") in said, said
    resumed = json.loads((tmp_path / "killed" / "out" / "train.json").read_text())
    assert resumed["resumed_from_step"] == killed_at and resumed["steps"] == steps
    assert resumed["kept"] == report["kept"] and resumed["epochs"] == report["epochs"]

    a, b = (load_pt(tmp_path / d / "out" / "model.pt") for d in ("full", "killed"))
    assert a["step"] == b["step"] and a["weights"].keys() == b["weights"].keys()
    for key in a["weights"]:
        assert torch.equal(a["weights"][key], b["weights"][key]), key
    names = ["train/loss.tsv", "train/lr.tsv", "valid/nll.tsv"] + (["valid/bleu.tsv"] if "bleu" in name else [])
    for curve_name in names:  # curves: no duplicated or lost steps
        curves = [(tmp_path / d / "curves" / curve_name).read_text() for d in ("full", "killed")]
        assert curves[0] == curves[1], curve_name
    best = [load_pt(tmp_path / d / "run" / "best.pt") for d in ("full", "killed")]
    assert best[0]["step"] == best[1]["step"] and equal_weights(best[0]["weights"], best[1]["weights"])

    # each case exercises what it names; all but the float32 one at the machine's "auto" precision
    lr = read_curve(tmp_path / "full" / "curves" / "train" / "lr.tsv")
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
        bleu = read_curve(tmp_path / "full" / "curves" / "valid" / "bleu.tsv")
        best_step = min(bleu, key=lambda s: (-bleu[s], s))
        assert report["kept"] == {"rule": "best_bleu", "step": best_step, "valid_bleu": bleu[best_step]}
        assert best_step < after < max(bleu)   # the best step is before the kill, and not the last


@pytest.mark.parametrize("name", ["adam-inverse_sqrt-tokens", "sgd-halve_last_epochs", "keep-average"])
def test_a_run_stopped_twice_by_sigterm_loses_no_update_and_ends_bitwise_as_one_run(tmp_path, name):
    """Slurm's warning before a time limit (SIGTERM): the trainer finishes the update in hand, writes a checkpoint
    off the recipe's cadence and exits with status 75 saying so; two such stops and a last attempt end with the
    weights, curves and kept steps of one uninterrupted run."""
    case = KILL_CASES[name]
    script = tmp_path / "train_copy.py"
    script.write_text(TRAIN_SCRIPT)
    for d in ("full", "sliced"):
        (tmp_path / d).mkdir()
    full = _run_script(script, tmp_path / "full", case)
    assert full.wait(timeout=300) == 0, full.stderr.read()
    steps = json.loads((tmp_path / "full" / "out" / "train.json").read_text())["steps"]
    run = tmp_path / "sliced" / "run"
    curve = run / "dvclive" / "plots" / "metrics" / "train" / "loss.tsv"
    stops = [0]
    for _ in range(2):
        sliced = _run_script(script, tmp_path / "sliced", case)
        deadline = time.time() + 120
        while time.time() < deadline and sliced.poll() is None and max(_logged_steps(curve) | {0}) <= stops[-1]:
            time.sleep(0.005)
        sliced.send_signal(signal.SIGTERM)
        assert sliced.wait(timeout=60) == 75
        said = sliced.stderr.read().strip().splitlines()
        stopped_at = load_pt(run / "last.pt")["progress"]["step"]
        assert stops[-1] < stopped_at < steps
        assert said[-1] == (f"stopped by SIGTERM at step {stopped_at}/{steps}: checkpoint {run / 'last.pt'} holds "
                            f"every update (0 updates lost); a rerun resumes from step {stopped_at}"), said[-3:]
        assert max(_logged_steps(curve)) <= stopped_at   # nothing trained past the checkpoint
        assert not (tmp_path / "sliced" / "out" / "model.pt").exists()
        stops.append(stopped_at)
    last = _run_script(script, tmp_path / "sliced", case)
    assert last.wait(timeout=300) == 0
    said = last.stderr.read()
    assert f"resuming from step {stops[-1]}/{steps}" in said and "updates lost" not in said, said
    a, b = (load_pt(tmp_path / d / "out" / "model.pt") for d in ("full", "sliced"))
    assert a["meta"] == b["meta"] and equal_weights(a["weights"], b["weights"])
    reports = [json.loads((tmp_path / d / "out" / "train.json").read_text()) for d in ("full", "sliced")]
    assert reports[0]["kept"] == reports[1]["kept"] and reports[1]["resumed_from_step"] == stops[-1]
    for curve_name in ("train/loss.tsv", "train/lr.tsv", "valid/nll.tsv"):
        assert (tmp_path / "full" / "curves" / curve_name).read_text() == \
            (tmp_path / "sliced" / "curves" / curve_name).read_text(), curve_name


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

