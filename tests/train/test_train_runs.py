"""Trainer runs: outputs and curves, the restart policy of finished runs, refused and continued resumes,
fine-tuning, checkpoint file errors."""
import dataclasses
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pipeline.checkpoint import load_model, save_atomic
from pipeline.data.synthetic import synthetic_pairs
from pipeline.data.vocab import Vocab
from pipeline.errors import PipelineError
from pipeline.models.registry import build_model, count_parameters, init_from
from pipeline.recipe import Recipe
from pipeline.train import CurveLog, fit, seed_everything
from train_helpers import TOY_RECIPE, Aligned, equal_weights, read_curve, toy_fit


def _model(spec: dict, vocab_size: int):
    """The one place this file builds a registry model: spec = {"encoder": kind, "decoder": kind, **options}."""
    return build_model(spec, vocab_size, vocab_size)



# ------------------------------------------------------------------------------- restart policy, curves
def _set_aside(root: Path) -> list[Path]:
    return sorted((root / "run.set-aside").iterdir()) if (root / "run.set-aside").exists() else []


def test_a_finished_run_asked_for_again_is_set_aside_and_trained_from_scratch(toy, tmp_path):
    # `dvc repro --force` / `snakemake --forcerun train` delete the outputs and call the trainer again: it must train,
    # not write the finished run's weights back (it reloaded them before)
    first, model = toy_fit(toy, tmp_path, max_steps=6)
    assert (tmp_path / "run" / "COMPLETE").is_file() and first["resumed_from_step"] == 0
    again, model2 = toy_fit(toy, tmp_path, max_steps=6, log_every=2)
    assert again["resumed_from_step"] == 0 and again["steps"] == 6 and again["wall_time_s"] > 0
    assert equal_weights(model.state_dict(), model2.state_dict())   # deterministic: the same weights, trained again
    (old,) = _set_aside(tmp_path)    # the finished run is kept aside, not deleted
    assert (old / "COMPLETE").is_file() and (old / "last.pt").is_file()
    assert (tmp_path / "run" / "COMPLETE").is_file()


def test_a_retry_of_the_job_that_finished_a_run_writes_its_outputs_again_without_training(toy, tmp_path):
    # Slurm stopped a job at its time limit after its run had written its outputs and COMPLETE; Snakemake removed
    # the outputs of the failed job and retried it: the retry finishes the run from its checkpoint (it trained it
    # from scratch again before, a whole run lost at paper scale)
    toy_fit(toy, tmp_path, max_steps=6)
    written = {path: (tmp_path / path).read_bytes() for path in ("out/model.pt", "curves/valid/nll.tsv")}
    for outputs in ("out", "curves"):
        shutil.rmtree(tmp_path / outputs)
    again = fit(Aligned(toy["V"]), toy["train"], toy["valid"], Recipe(**{**TOY_RECIPE, "max_steps": 6}),
                run_dir=tmp_path / "run", out_dir=tmp_path / "out", curves_dir=tmp_path / "curves", meta=toy["meta"],
                progress=False, retry=True)
    assert (again["resumed_from_step"], again["steps"]) == (6, 6) and not _set_aside(tmp_path)
    assert {path: (tmp_path / path).read_bytes() for path in written} == written
    assert (tmp_path / "run" / "COMPLETE").is_file()


def test_a_finished_run_of_another_recipe_or_code_is_set_aside_and_trained_afresh(toy, tmp_path, capfd):
    toy_fit(toy, tmp_path / "a", max_steps=6, meta={"code": {"pipeline/models/x.py": "1", "pipeline/y.py": "1"}})
    (tmp_path / "a" / "run" / "stray.txt").write_text("from the old run")
    summary, model = toy_fit(toy, tmp_path / "a", max_steps=6, lr=4.0,
                             meta={"code": {"pipeline/models/x.py": "1", "pipeline/y.py": "1"}})
    assert summary["resumed_from_step"] == 0 and summary["steps"] == 6
    assert not (tmp_path / "a" / "run" / "stray.txt").exists() and (tmp_path / "a" / "run" / "COMPLETE").is_file()
    assert [p.name for p in _set_aside(tmp_path / "a")[0].iterdir() if p.suffix == ".txt"] == ["stray.txt"]
    assert "recipe.lr: checkpoint 8.0, now 4.0" in capfd.readouterr().err
    _, fresh = toy_fit(toy, tmp_path / "b", max_steps=6, lr=4.0)
    assert equal_weights(model.state_dict(), fresh.state_dict())
    # an edit of the code that defines the weights (the file's hash in the run key): trained afresh, saying which
    changed, _ = toy_fit(toy, tmp_path / "a", max_steps=6, lr=4.0,
                         meta={"code": {"pipeline/models/x.py": "2", "pipeline/y.py": "1"}})
    assert changed["resumed_from_step"] == 0 and len(_set_aside(tmp_path / "a")) == 2
    assert "code changed: pipeline/models/x.py;" in capfd.readouterr().err
    # a finished run past a lowered max_steps cannot continue either: afresh
    lowered, _ = toy_fit(toy, tmp_path / "a", max_steps=3, lr=4.0)
    assert lowered["resumed_from_step"] == 0 and lowered["steps"] == 3


def test_a_cpu_run_continues_only_on_the_code_path_it_started_on(toy, tmp_path, capfd, monkeypatch):
    # MKL's branch, ATen's kernels, oneDNN's ISA and the threads decide the bits (pipeline/cpu_math.py): a run
    # started on one path is not continued on another (another machine, or params.yaml's cpu_math changed)
    monkeypatch.setenv("MKL_CBWR", "AUTO")
    first, _ = toy_fit(toy, tmp_path, max_steps=4)
    assert ", MKL_CBWR=AUTO, " in first["cpu_math"] and first["cpu_math"].endswith(", 1 thread")
    monkeypatch.setenv("MKL_CBWR", "COMPATIBLE")
    other, _ = toy_fit(toy, tmp_path, max_steps=6)  # more steps: the same path would continue from step 4
    assert other["resumed_from_step"] == 0 and ", MKL_CBWR=COMPATIBLE, " in other["cpu_math"]
    assert "meta.cpu_math: checkpoint " in capfd.readouterr().err and len(_set_aside(tmp_path)) == 1
    more, _ = toy_fit(toy, tmp_path, max_steps=8)  # the same path: continued
    assert more["resumed_from_step"] == 6


def test_a_run_directory_is_trained_by_one_process_at_a_time(toy, tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom pipeline.train.run_dir import run_lock\n"
                               "with run_lock(sys.argv[1]):\n    print('held', flush=True)\n    time.sleep(60)",
                               str(tmp_path / "run")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(PipelineError, match=rf"run: being trained by pid {holder.pid} on .*; expected one trainer"):
            toy_fit(toy, tmp_path, max_steps=3)
        assert not (tmp_path / "out").exists() and not (tmp_path / "run").exists()   # nothing touched
    finally:
        holder.kill()
        holder.wait()
    summary, _ = toy_fit(toy, tmp_path, max_steps=3)   # the lock died with its holder
    assert summary["steps"] == 3


def test_curves_are_written_once_to_curves_dir(toy, tmp_path, monkeypatch):
    calls = []
    publish = CurveLog.publish
    monkeypatch.setattr(CurveLog, "publish", lambda self, target: (calls.append(target), publish(self, target)))
    summary, _ = toy_fit(toy, tmp_path, max_steps=7, log_every=2)
    assert calls == [tmp_path / "curves"]
    files = sorted(str(p.relative_to(tmp_path / "curves")) for p in (tmp_path / "curves").rglob("*") if p.is_file())
    assert files == ["train/loss.tsv", "train/lr.tsv", "train/nll.tsv", "valid/loss.tsv", "valid/nll.tsv",
                     "valid/ppl.tsv"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["model.pt", "train.json"]   # no out/dvclive
    assert list(read_curve(tmp_path / "curves" / "train" / "loss.tsv")) == [2, 4, 6, 7]
    assert list(read_curve(tmp_path / "curves" / "valid" / "nll.tsv")) == [3, 6, 7]
    assert summary["final_valid_nll"] == read_curve(tmp_path / "curves" / "valid" / "nll.tsv")[7]



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
    assert list(read_curve(tmp_path / "curves" / "train" / "loss.tsv")) == [5, 10, 15, 20, 25, 30, 35]


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
    assert equal_weights(model.state_dict(), resumed_model.state_dict())


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

