"""Trainer: LR schedule, label smoothing, recipe validation, copy task per architecture, kill/resume."""
import dataclasses
import json
import math
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import sacrebleu
import torch
import torch.nn.functional as F

from pipeline.checkpoint import load_model, save_atomic
from pipeline.data.synthetic import synthetic_pairs
from pipeline.data.vocab import Vocab
from pipeline.errors import PipelineError
from pipeline.models.registry import ARCHITECTURES, build_model, count_parameters, init_from
from pipeline.train import Recipe, _truncate_curves, fit, lr_at, seed_everything, smoothed_loss
from pipeline.translate import translate_lines

torch.set_num_threads(1)


# ------------------------------------------------------------------------------------------ schedule
def test_lr_schedule_exact_values():
    r = Recipe(lr=1e-3, warmup=4, max_steps=100, batch_tokens=10)
    assert lr_at(1, r) == pytest.approx(2.5e-4, rel=1e-12)
    assert lr_at(2, r) == pytest.approx(5e-4, rel=1e-12)
    assert lr_at(4, r) == pytest.approx(1e-3, rel=1e-12)      # peak at the end of warmup
    assert lr_at(16, r) == pytest.approx(5e-4, rel=1e-12)     # sqrt(4/16) = 1/2
    assert lr_at(100, r) == pytest.approx(2e-4, rel=1e-12)    # sqrt(4/100) = 1/5
    with pytest.raises(ValueError):
        lr_at(0, r)


def test_lr_schedule_is_vaswani_eq3_with_its_peak_as_lr():
    d, w = 512, 4000
    r = Recipe(lr=d ** -0.5 * w ** -0.5, warmup=w, max_steps=10, batch_tokens=10)
    for step in (1, 10, 3999, 4000, 4001, 100_000):
        vaswani = d ** -0.5 * min(step ** -0.5, step * w ** -1.5)
        assert lr_at(step, r) == pytest.approx(vaswani, rel=1e-12)


def test_constant_and_no_warmup_schedules():
    const = Recipe(lr=3e-4, warmup=10, max_steps=10, batch_tokens=10, lr_schedule="constant")
    assert [lr_at(s, const) for s in (1, 5, 500)] == [3e-4] * 3
    no_warmup = Recipe(lr=1.0, warmup=0, max_steps=10, batch_tokens=10)
    assert lr_at(1, no_warmup) == 1.0 and lr_at(4, no_warmup) == 0.5


# ---------------------------------------------------------------------------------------------- loss
def _hand_smoothed(logits, targets, eps):
    """Smoothed cross entropy by hand: 1-eps on gold, eps/(V-1) elsewhere; PAD (0) rows skipped."""
    total, nll, n = 0.0, 0.0, 0
    for row, gold in zip(logits, targets):
        if gold == 0:
            continue
        log_z = math.log(sum(math.exp(x) for x in row))
        logp = [x - log_z for x in row]
        q = [(1 - eps) if v == gold else eps / (len(row) - 1) for v in range(len(row))]
        total += -sum(qv * lp for qv, lp in zip(q, logp))
        nll += -logp[gold]
        n += 1
    return total, nll, n


def test_label_smoothing_equals_hand_computation():
    logits = [[1.0, 2.0, 0.5, -1.0], [0.0, 0.0, 3.0, 1.0], [2.0, 1.0, 1.0, 1.0], [0.3, -0.2, 0.1, 0.4]]
    targets = [2, 3, 0, 1]
    loss, nll, n = smoothed_loss(torch.tensor(logits, dtype=torch.float64), torch.tensor(targets), 0.1)
    want_loss, want_nll, want_n = _hand_smoothed(logits, targets, 0.1)
    assert n == want_n == 3
    assert loss.item() == pytest.approx(want_loss, rel=1e-6)
    assert nll.item() == pytest.approx(want_nll, rel=1e-6)
    assert loss.item() != pytest.approx(nll.item(), rel=1e-3)   # smoothing changes the value


def test_no_smoothing_is_cross_entropy_ignoring_pad():
    torch.manual_seed(0)
    logits, target = torch.randn(7, 5), torch.tensor([1, 4, 0, 2, 0, 3, 3])
    loss, nll, n = smoothed_loss(logits, target, 0.0)
    ref = F.cross_entropy(logits, target, ignore_index=0, reduction="sum")
    assert n == 5 and torch.allclose(loss, ref) and torch.allclose(nll, ref)


# -------------------------------------------------------------------------------------------- recipe
def test_recipe_validation_names_the_key():
    base = {"lr": 1e-3, "warmup": 10, "max_steps": 20, "batch_tokens": 100}
    assert Recipe.from_dict(base).adam_betas == (0.9, 0.98)
    with pytest.raises(PipelineError, match=r"recipe\.lr_rate: unknown recipe key"):
        Recipe.from_dict({**base, "lr_rate": 1.0})
    with pytest.raises(PipelineError, match=r"recipe\.warmup: missing"):
        Recipe.from_dict({k: v for k, v in base.items() if k != "warmup"})
    with pytest.raises(PipelineError, match=r"recipe\.lr: got '1e-3' \(str\)"):
        Recipe.from_dict({**base, "lr": "1e-3"})
    with pytest.raises(PipelineError, match=r"recipe\.lr_schedule"):
        Recipe.from_dict({**base, "lr_schedule": "cosine"})
    with pytest.raises(PipelineError, match=r"recipe\.label_smoothing"):
        Recipe.from_dict({**base, "label_smoothing": 1.5})
    with pytest.raises(PipelineError, match=r"recipe\.max_steps"):
        Recipe.from_dict({**base, "max_steps": True})
    with pytest.raises(PipelineError, match=r"recipe\.adam_betas"):
        Recipe.from_dict({**base, "adam_betas": [0.9]})


# -------------------------------------------------------------------------------- real training runs
SMALL = dict(d_model=64, ffn_dim=128, heads=4, enc_layers=2, dec_layers=2)
# Every model variant the tables use: (architecture, options). A newly registered architecture fails
# test_every_architecture_has_a_copy_task_variant until it gets an entry.
REC = dict(SMALL, rec_type="biarn", rec_steps=8, integration="stack", integrate_into="top")
VARIANTS = {
    "transformer": ("transformer", dict(SMALL)),
    "transformer-relpos": ("transformer", dict(SMALL, rel_pos_k=4)),
    "transformer-disan": ("transformer", dict(SMALL, disan=True)),
    "recurrence": ("recurrence", REC),
    "recurrence-birnn": ("recurrence", dict(REC, rec_type="birnn")),
    "recurrence-gated-all": ("recurrence", dict(REC, integration="gated", integrate_into="all")),
    "recurrence-stack-all-tJ": ("recurrence", dict(REC, integrate_into="all", rec_steps=0)),
    "multicolumn": ("multicolumn", dict(SMALL, rnn_layers=2)),
    "ran-all": ("transformer", dict(SMALL, enc_self_attn="ran", dec_self_attn="ran", ran_max_len=64)),
    "hcsa": ("transformer", dict(SMALL, enc_self_attn="hcsa", dec_self_attn="hcsa")),
    "synr": ("transformer", dict(SMALL, enc_self_attn="synr", dec_self_attn="synr", ran_max_len=64)),
}


def _copy_data(n_train, n_valid=50, n_test=100):
    """Copy-task corpora (train/valid/test from different seeds) and their shared vocabulary."""
    train, valid, test = (synthetic_pairs("copy", n, seed=s) for n, s in ((n_train, 1), (n_valid, 2), (n_test, 3)))
    vocab = Vocab.build([s for s, _ in train])

    def encode(pairs):
        return [vocab.encode(s) for s, _ in pairs], [vocab.encode(t) for _, t in pairs]

    return encode(train), encode(valid), test, vocab


def _meta(arch, options, vocab):
    return {"arch": arch, "options": options, "src_vocab_size": len(vocab), "tgt_vocab_size": len(vocab)}


def test_every_architecture_has_a_copy_task_variant():
    assert {arch for arch, _ in VARIANTS.values()} == set(ARCHITECTURES)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_variant_learns_the_copy_task(variant, tmp_path):
    train, valid, test, vocab = _copy_data(2000)
    arch, options = VARIANTS[variant]
    options = dict(options, dropout=0.0)
    seed_everything(1)
    model = build_model(arch, options, len(vocab), len(vocab))
    recipe = Recipe(lr=3e-3, warmup=50, max_steps=250, batch_tokens=1000, checkpoint_every=250, valid_every=125)
    summary = fit(model, train, valid, recipe, run_dir=tmp_path / "run", out_dir=tmp_path / "out",
                  meta=_meta(arch, options, vocab), progress=False)
    assert summary["steps"] == 250 and summary["final_valid_nll"] < 0.5
    hyps = translate_lines(model, vocab, vocab, [s for s, _ in test], beam=4, progress=False)
    bleu = sacrebleu.corpus_bleu(hyps, [[t for _, t in test]]).score
    assert bleu >= 90, f"{variant}: copy-task BLEU {bleu:.1f}"


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """A short transformer run (dropout on) and its directories."""
    root = tmp_path_factory.mktemp("small")
    train, valid, _, vocab = _copy_data(200, n_valid=20)
    options = dict(SMALL, d_model=32, ffn_dim=64, dropout=0.1)
    seed_everything(1)
    model = build_model("transformer", options, len(vocab), len(vocab))
    recipe = Recipe(lr=2e-3, warmup=5, max_steps=30, batch_tokens=200, checkpoint_every=10, valid_every=10,
                    log_every=5)
    summary = fit(model, train, valid, recipe, run_dir=root / "run", out_dir=root / "out",
                  meta=_meta("transformer", options, vocab), progress=False)
    return dict(root=root, model=model, summary=summary, train=train, valid=valid, vocab=vocab,
                options=options, recipe=recipe)


def test_outputs_rebuild_the_model_and_report_the_run(small_run):
    out, run = small_run["root"] / "out", small_run["root"] / "run"
    model, info = load_model(out / "model.pt")
    trained = small_run["model"].state_dict()
    assert all(torch.equal(v, trained[k]) for k, v in model.state_dict().items())
    assert not model.training
    assert info["arch"] == "transformer" and info["step"] == 30
    assert info["n_params"] == count_parameters(small_run["model"])
    report = json.loads((out / "train.json").read_text())
    assert report["steps"] == 30 and report["n_params"] == info["n_params"]
    assert report["tokens"] > 0 and report["tokens_per_s"] > 0 and report["steps_per_s"] > 0
    assert math.isfinite(report["final_train_loss"]) and math.isfinite(report["final_valid_loss"])
    assert report["best_valid_nll"] <= report["final_valid_nll"]
    assert (run / "last.pt").is_file() and (run / "best.pt").is_file()
    best, best_info = load_model(run / "best.pt")
    assert best_info["step"] in (10, 20, 30)
    curve = (out / "dvclive" / "plots" / "metrics" / "train" / "loss.tsv").read_text().splitlines()
    assert curve[0] == "step\tloss" and [int(r.split("\t")[0]) for r in curve[1:]] == [5, 10, 15, 20, 25, 30]
    valid_curve = (out / "dvclive" / "plots" / "metrics" / "valid" / "nll.tsv").read_text().splitlines()
    assert [int(r.split("\t")[0]) for r in valid_curve[1:]] == [10, 20, 30]
    assert json.loads((out / "dvclive" / "metrics.json").read_text())["step"] == 30


def test_resume_refuses_a_different_recipe_or_data(small_run):
    r = small_run
    args = dict(run_dir=r["root"] / "run", out_dir=r["root"] / "out2", progress=False,
                meta=_meta("transformer", r["options"], r["vocab"]))
    model = build_model("transformer", r["options"], len(r["vocab"]), len(r["vocab"]))
    changed = dataclasses.replace(r["recipe"], lr=1e-3)
    with pytest.raises(PipelineError, match=r"recipe\.lr: checkpoint 0\.002, now 0\.001"):
        fit(model, r["train"], r["valid"], changed, **args)
    with pytest.raises(PipelineError, match="data differ"):
        fit(model, (r["train"][0][1:], r["train"][1][1:]), r["valid"], r["recipe"], **args)
    with pytest.raises(PipelineError, match="beyond recipe.max_steps"):
        fit(model, r["train"], r["valid"], dataclasses.replace(r["recipe"], max_steps=20), **args)
    assert not (r["root"] / "out2").exists()


def test_raising_max_steps_continues_a_finished_run(small_run, tmp_path):
    r = small_run
    shutil.copytree(r["root"] / "run", tmp_path / "run")
    model = build_model("transformer", r["options"], len(r["vocab"]), len(r["vocab"]))
    summary = fit(model, r["train"], r["valid"], dataclasses.replace(r["recipe"], max_steps=35),
                  run_dir=tmp_path / "run", out_dir=tmp_path / "out", progress=False,
                  meta=_meta("transformer", r["options"], r["vocab"]))
    assert summary["resumed_from_step"] == 30 and summary["steps"] == 35
    before = r["model"].state_dict()
    assert any(not torch.equal(v, before[k]) for k, v in model.state_dict().items())


def test_fine_tuning_starts_from_the_baseline(small_run, tmp_path):
    r = small_run
    options = dict(r["options"], rec_type="biarn", rec_steps=4, dropout=0.0)
    model = build_model("recurrence", options, len(r["vocab"]), len(r["vocab"]))
    baseline = r["model"].state_dict()
    expected_fresh = init_from(build_model("recurrence", options, len(r["vocab"]), len(r["vocab"])), baseline)
    recipe = dataclasses.replace(r["recipe"], max_steps=1, lr=1e-12, lr_schedule="constant")
    summary = fit(model, r["train"], r["valid"], recipe, run_dir=tmp_path / "run", out_dir=tmp_path / "out",
                  meta=_meta("recurrence", options, r["vocab"]), init_state=baseline, progress=False)
    assert summary["fresh_parameters"] == expected_fresh and expected_fresh
    copied = [k for k in baseline if k not in expected_fresh and k in model.state_dict()]
    assert copied
    for key in copied:  # one update with lr 1e-12 leaves the copied weights within 1e-9 of the baseline
        assert torch.allclose(model.state_dict()[key], baseline[key], atol=1e-9)


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
    import sys
    from pathlib import Path
    import torch
    torch.set_num_threads(1)
    from pipeline.data.synthetic import synthetic_pairs
    from pipeline.data.vocab import Vocab
    from pipeline.models.registry import build_model
    from pipeline.train import Recipe, fit, seed_everything

    root = Path(sys.argv[1])
    pairs = synthetic_pairs("copy", 300, seed=1)
    vocab = Vocab.build([s for s, _ in pairs])
    data = ([vocab.encode(s) for s, _ in pairs], [vocab.encode(t) for _, t in pairs])
    options = dict(d_model=32, ffn_dim=64, heads=4, enc_layers=2, dec_layers=2, dropout=0.2)
    seed_everything(7)
    model = build_model("transformer", options, len(vocab), len(vocab))
    recipe = Recipe(lr=2e-3, warmup=10, max_steps=120, batch_tokens=150, checkpoint_every=7, valid_every=11,
                    log_every=3, seed=7)
    meta = {"arch": "transformer", "options": options, "src_vocab_size": len(vocab), "tgt_vocab_size": len(vocab)}
    fit(model, data, (data[0][:30], data[1][:30]), recipe, run_dir=root / "run", out_dir=root / "out", meta=meta,
        progress=False)
""")


def _run_script(script, root, **popen):
    return subprocess.Popen([sys.executable, str(script), str(root)], cwd=root, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, **popen)


def _logged_steps(tsv):
    """Steps present in a dvclive metric file (empty set if not written yet)."""
    rows = tsv.read_text().splitlines()[1:] if tsv.exists() else []
    return {int(row.split("\t")[0]) for row in rows if row.strip()}


def _state(path):
    return torch.load(path, map_location="cpu", weights_only=True)


def test_killed_run_resumes_to_bitwise_identical_weights(tmp_path):
    script = tmp_path / "train_copy.py"
    script.write_text(TRAIN_SCRIPT)
    (tmp_path / "full").mkdir()
    (tmp_path / "killed").mkdir()
    full = _run_script(script, tmp_path / "full")
    assert full.wait(timeout=300) == 0, full.stderr.read()

    victim = _run_script(script, tmp_path / "killed")
    last = tmp_path / "killed" / "run" / "last.pt"
    curve = tmp_path / "killed" / "run" / "dvclive" / "plots" / "metrics" / "train" / "loss.tsv"
    deadline = time.time() + 120
    # kill once step 9 is logged: after the first checkpoint (step 7), so curves hold rows past it
    while time.time() < deadline and victim.poll() is None and not _logged_steps(curve) & {9, 12, 15}:
        time.sleep(0.01)
    victim.send_signal(signal.SIGKILL)
    assert victim.wait(timeout=30) == -signal.SIGKILL
    assert last.exists() and not (tmp_path / "killed" / "out" / "model.pt").exists()
    killed_at = _state(last)["progress"]["step"]
    assert 0 < killed_at < 120 and max(_logged_steps(curve)) > killed_at

    rerun = _run_script(script, tmp_path / "killed")
    assert rerun.wait(timeout=300) == 0, rerun.stderr.read()
    report = json.loads((tmp_path / "killed" / "out" / "train.json").read_text())
    assert report["resumed_from_step"] == killed_at and report["steps"] == 120

    a, b = (_state(tmp_path / d / "out" / "model.pt")["model"] for d in ("full", "killed"))
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key
    for name in ("train/loss.tsv", "train/lr.tsv", "valid/nll.tsv"):  # curves: no duplicated or lost steps
        curves = [(tmp_path / d / "out" / "dvclive" / "plots" / "metrics" / name).read_text()
                  for d in ("full", "killed")]
        assert curves[0] == curves[1], name
    best = [_state(tmp_path / d / "run" / "best.pt") for d in ("full", "killed")]
    assert best[0]["step"] == best[1]["step"]
    assert all(torch.equal(best[0]["model"][k], best[1]["model"][k]) for k in best[0]["model"])


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
