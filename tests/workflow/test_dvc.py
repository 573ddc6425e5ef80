"""DVC on the toy project: repro, push to a local remote, fresh clone, pull, sync, then nothing to do.

Also: dvc.yaml is generated from the params files and up to date; a table's stage depends on exactly its own
corpora and systems (a dry run in a fresh clone lists just those); editing one system (dvc exp run -S) reruns
only that system and what depends on it; editing a file a stage uses makes exactly the stages using it stale, in
DVC and in Snakemake; each scale keeps its own records; a soak of interrupted rebuilds after `make run` loses and
trains nothing twice.
"""
import copy
import json
import os
import re
import signal
import subprocess

import pytest
import torch
import yaml

from workspace import (ROOT, TABLE, TOY_HAO2019, TOY_PAPER_STAGES, TOY_SHARED, add_toy_paper, env, make_workspace,
                       project_params, run, trainer_step, wait_for, write_params)

# TOY_HAO2019 with two combined systems (reranking, GMBR) and an analysis (BLEU by length), so that editing a step's
# module can be seen to make exactly the stages that run it stale
TOY_WITH_STEPS = copy.deepcopy(TOY_HAO2019)
TOY_WITH_STEPS["combinations"] = {
    "ende-rerank": {"method": "rerank", "nbest": "ende-base", "scorer": "ende-base-biarn", "settings": {"n": 2}},
    "ende-gmbr": {"method": "gmbr", "systems": ["ende-base", "ende-base-biarn"],
                  "settings": {"n": 2, "tune_sentences": 20, "trials": 5}},
}
TOY_WITH_STEPS["figures"] = {"hao2019-length": {
    "cells": {"base": {"en-de": "ende-base"}, "biarn": {"en-de": "ende-rerank"}, "base-cont": {"en-de": "ende-gmbr"}},
    "analyses": {"length": {"bins": [[0, 6], [6, None]]}}}}

pytestmark = pytest.mark.slow


def stages_run(output: str) -> set[str]:
    return {line.split("'")[1] for line in output.splitlines() if line.startswith("Running stage '")}


def stale(ws) -> set[str]:
    """Stage names `dvc status` reports as changed."""
    return set(re.findall(r"^(\S+@\S+):", run(["dvc", "status"], ws).stdout, flags=re.M))


def rerun_by_snakemake(ws, targets=(TABLE, "results/tiny/hao2019/length.tsv"), downstream: bool = False) -> set[str]:
    """The stages (`<kind>-<item>@tiny`) of the jobs a Snakemake dry run reruns because their params changed (and,
    with `downstream`, because a job before them reruns: Snakemake names no other reason for those)."""
    dry = run(["snakemake", "--profile", "workflows/profiles/local", "-n", *targets], ws).stdout
    stages = set()
    causes = ("Params have changed", "Input files updated by another job") if downstream else ("Params have changed",)
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", dry):
        rule = re.match(r"(?:local)?rule (\w+):", block)
        if not rule or not any(cause in block for cause in causes):
            continue
        wildcards = dict(re.findall(r"(\w+)=([\w.-]+)", (re.findall(r"wildcards: (.*)", block) or [""])[0]))
        if "table" in wildcards or "paper" in wildcards:   # significance, analyses; the table and figure rules
            table = wildcards.get("table") or f"{wildcards['paper']}-{wildcards['output']}"
            stages.add(f"{'figure' if table == 'hao2019-length' else 'table'}-{table}@tiny")
        elif rule[1] == "train":
            stages.add(f"train-{wildcards['exp']}@tiny")
        else:   # decoding, scoring, combinations
            stages.add(f"eval-{wildcards.get('combo', wildcards.get('system'))}@tiny")
    return stages


def test_project_dvc_yaml_is_generated_from_the_params():
    proc = run(["python", "-m", "pipeline", "dvc-yaml", "--check"], ROOT)
    assert "up to date" in proc.stdout


def test_dry_run_of_one_table_in_a_fresh_clone_lists_only_its_own_stages(tmp_path):
    clone = tmp_path / "clone"
    run(["git", "clone", "-q", str(ROOT), str(clone)], tmp_path)
    for path in ("params.yaml", "params", "dvc.yaml", "pipeline", "workflows"):  # the working tree, uncommitted too
        run(["rm", "-rf", path], clone)
        run(["cp", "-r", str(ROOT / path), str(clone / path)], tmp_path)
    dry = run(["dvc", "repro", "--dry", "table-hao2019-table3"], clone)
    expected = {"corpus-zh-en@tiny", "corpus-en-de@tiny", "table-hao2019-table3@tiny"}
    for system in ("zhen-base", "ende-base", "zhen-big", "ende-big"):
        for suffix in ("", "-cont", "-biarn"):
            expected |= {f"train-{system}{suffix}@tiny", f"eval-{system}{suffix}@tiny"}
    assert stages_run(dry.stdout) == expected


def test_repro_push_clone_pull_sync_then_nothing_to_do(tmp_path):
    ws = make_workspace(tmp_path / "ws", papers={"hao2019": TOY_WITH_STEPS}, git=True)
    remote = tmp_path / "remote"
    run(["dvc", "remote", "add", "-d", "local", str(remote)], ws)
    run(["git", "add", "-A"], ws)
    run(["git", "commit", "-qm", "toy project"], ws)

    first = run(["dvc", "repro"], ws)
    assert {"corpus-zh-en@tiny", "train-ende-base@tiny", "train-ende-base-biarn@tiny", "eval-ende-base-biarn@tiny",
            "table-hao2019-table3@tiny"} <= stages_run(first.stdout)
    assert (ws / TABLE).exists()
    assert "Data and pipelines are up to date" in run(["dvc", "status"], ws).stdout
    assert not stages_run(run(["dvc", "repro"], ws).stdout)      # a second repro does nothing

    plots = json.loads(run(["dvc", "plots", "show", "--json"], ws).stdout)   # learning curves
    assert not plots.get("errors"), plots.get("errors")
    for exp, recipe in (("zhen-base", "toy"), ("ende-base-biarn", "toy-finetune")):
        curve = plots["data"][f"artifacts/tiny/curves/{exp}/train/loss.tsv"][0]["content"]["data"]["values"]
        assert int(curve[-1]["step"]) == TOY_HAO2019["recipes"][recipe]["max_steps"]
    metrics = json.loads(run(["dvc", "metrics", "show", "--json"], ws).stdout)  # every system's scores
    shown = {path: data for found in metrics.values() for path, data in found["data"].items()}
    score = json.loads((ws / "artifacts/tiny/eval/ende-base/test.sacrebleu.json").read_text())["score"]
    assert shown["artifacts/tiny/eval/ende-base/scores.json"]["data"]["test"]["sacrebleu"] == round(score, 4)

    # editing a file a stage uses makes exactly the stages that use it stale
    layout = ws / "pipeline/papers/hao2019/layouts.py"   # both tables' layouts are defined there
    layout.write_text(layout.read_text() + "\n# edited\n")
    assert stale(ws) == {"table-hao2019-table3@tiny", "figure-hao2019-length@tiny"}
    assert rerun_by_snakemake(ws) == {"table-hao2019-table3@tiny", "figure-hao2019-length@tiny"}
    run(["git", "checkout", "--", "pipeline/papers/hao2019/layouts.py"], ws)
    decoded = {f"eval-{s}@tiny" for s in ("zhen-base", "ende-base", "zhen-base-biarn", "ende-base-biarn")}
    combined = {"eval-ende-rerank@tiny", "eval-ende-gmbr@tiny"}  # they decode their inputs' n-best lists
    for module, expected in (("pipeline/translate.py", decoded | combined),   # decoding only, not the trainer
                             ("pipeline/rerank.py", {"eval-ende-rerank@tiny"}),    # a step's own code ...
                             ("pipeline/steps/rerank.py", {"eval-ende-rerank@tiny"}),
                             ("pipeline/gmbr.py", {"eval-ende-gmbr@tiny"}),
                             ("pipeline/steps/gmbr.py", {"eval-ende-gmbr@tiny"}),
                             ("pipeline/steps/analysis.py", {"figure-hao2019-length@tiny"}),  # ... an analysis kind's
                             ("pipeline/evaluate/significance.py", {"table-hao2019-table3@tiny"}),
                             ("pipeline/models/recurrence.py",   # a model: the systems built from it
                              {f"{stage}-{system}@tiny" for stage in ("train", "eval")
                               for system in ("zhen-base-biarn", "ende-base-biarn")} | combined)):
        path = ws / module
        path.write_text(path.read_text() + "\n# edited\n")
        assert stale(ws) == expected, module
        # Snakemake reruns the jobs of the same stages (the code's hashes are params); a model's: its trainings, and
        # the decodings after them
        trained = {stage for stage in expected if stage.startswith("train-")}
        assert rerun_by_snakemake(ws) == (trained or expected), module
        assert expected <= rerun_by_snakemake(ws, downstream=True), module
        run(["git", "checkout", "--", module], ws)
    assert not stale(ws)

    run(["dvc", "push"], ws)
    run(["git", "add", "-A"], ws)
    run(["git", "commit", "-qm", "results"], ws)

    clone = tmp_path / "clone"
    run(["git", "clone", "-q", str(ws), str(clone)], tmp_path)
    run(["dvc", "pull"], clone)
    assert (clone / "artifacts/tiny/models/zhen-base-biarn/model.pt").exists()
    assert (clone / TABLE).read_text() == (ws / TABLE).read_text()
    sync = run(["bash", "workflows/sync_after_pull.sh"], clone)
    assert "up to date" in sync.stdout
    dry = run(["snakemake", "--profile", "workflows/profiles/local", "-n", TABLE], clone)
    assert "Nothing to be done" in dry.stdout + dry.stderr
    assert "Data and pipelines are up to date" in run(["dvc", "status"], clone).stdout


def test_exp_run_with_one_edit_reruns_only_its_stages(tmp_path):
    ws = make_workspace(tmp_path / "ws", git=True)
    run(["git", "add", "-A"], ws)
    run(["git", "commit", "-qm", "toy project"], ws)
    run(["dvc", "repro"], ws)
    run(["git", "add", "-A"], ws)
    run(["git", "commit", "-qm", "results"], ws)

    assert "up to date" in run(["dvc", "status"], ws).stdout
    # a new paper (its own metric, significance test and analysis kind) adds stages and leaves every other one as it
    # was: `dvc status` lists only the new ones
    add_toy_paper(ws)
    run(["python", "-m", "pipeline", "dvc-yaml"], ws)
    assert stale(ws) == {f"{stage}@tiny" for stage in TOY_PAPER_STAGES}
    run(["git", "checkout", "--", "dvc.yaml"], ws)
    run(["git", "clean", "-fdq", "--", "params", "pipeline"], ws)
    exp = run(["dvc", "exp", "run", "-S", "params/hao2019.yaml:experiments.ende-base.recipe=toy-finetune"], ws)
    ran = stages_run(exp.stdout)
    assert {"train-ende-base@tiny", "train-ende-base-biarn@tiny", "table-hao2019-table3@tiny"} <= ran
    assert not ran & {f"{stage}@tiny" for stage in ("train-zhen-base", "train-zhen-base-biarn", "corpus-zh-en",
                                                      "corpus-en-de")}, ran

    # an edit of a model's code: `dvc repro` retrains the systems built from it, from scratch, to new weights
    model = ws / "artifacts/tiny/models/ende-base-biarn/model.pt"
    before = model.read_bytes()
    module = ws / "pipeline/models/recurrence.py"
    line = "h = torch.tanh(self.init_proj(masked_mean(h_in, pad)))"
    module.write_text(module.read_text().replace(line, f"{line} * 0.5"))
    repro = run(["dvc", "repro", "train-ende-base-biarn"], ws)
    assert stages_run(repro.stdout) == {"train-ende-base-biarn@tiny"}
    assert model.read_bytes() != before
    assert json.loads((model.parent / "train.json").read_text())["resumed_from_step"] == 0
    assert (ws / "artifacts/tiny/runs/ende-base-biarn.set-aside").is_dir()


def test_repro_at_paper_scale_refuses_the_local_profile_in_one_line(tmp_path):
    """Every stage's command names the local profile: at a scale with GPU jobs it stops before Snakemake starts,
    naming the cluster route (Snakemake with the Slurm profile, then `dvc commit -f -d`); at tiny scale it runs."""
    shared, papers = project_params()
    ws = make_workspace(tmp_path / "ws", {**shared, "scale": "paper"}, papers, git=True)
    proc = run(["dvc", "repro", "table-hao2019-table3"], ws, check=False)
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("error: dvc repro runs")]
    assert proc.returncode != 0 and len(lines) == 1, proc.stdout + proc.stderr
    assert "scale paper has GPU jobs (training on up to 8 GPUs" in lines[0]
    assert lines[0].endswith("`snakemake <targets> --profile slurm --config scale=paper`, then record its outputs "
                             "with `dvc commit -f -d <stage>`")
    assert not (ws / "artifacts").exists() and not (ws / ".snakemake").exists()   # no Snakemake, no job
    stage = run(["python", "-m", "pipeline.dvc_stage", "snakemake", "-n", "--profile", "workflows/profiles/local",
                 "--config", "scale=tiny", "--", "artifacts/tiny/data/zh-en/ready"], ws, check=False)
    assert stage.returncode == 2 and stage.stderr.count("\n") == 1   # params.yaml's scale, as DVC's stages read it
    write_params(ws, shared, papers)   # scale: tiny
    assert stages_run(run(["dvc", "repro", "--dry", "corpus-zh-en"], ws).stdout) == {"corpus-zh-en@tiny"}
    stage = run(["python", "-m", "pipeline.dvc_stage", "snakemake", "-n", "--profile", "workflows/profiles/local",
                 "--", "artifacts/tiny/data/zh-en/ready"], ws)
    assert "corpus" in stage.stdout   # the stage's Snakemake ran (a dry run here)


def test_each_scale_keeps_its_own_records(tmp_path):
    """A stage's name carries the scale (`corpus-en-de@tiny`): a build at another scale recorded with `dvc commit`
    adds its own entry to dvc.lock and leaves the other scale's intact, the other way round too."""
    ws = make_workspace(tmp_path / "ws", git=True)
    run(["git", "add", "-A"], ws)
    run(["git", "commit", "-qm", "toy project"], ws)
    run(["dvc", "repro", "corpus-en-de"], ws)
    tiny = _lock(ws)["corpus-en-de@tiny"]
    # make sync tells stages never run through DVC from those that differ from their record
    sync = run(["bash", "workflows/sync_after_pull.sh"], ws, check=False)
    assert sync.returncode == 1 and sync.stderr.count("\n") == 1, sync.stderr
    assert re.match(r"sync_after_pull: \d+ stage\(s\) never run through DVC \(corpus-zh-en@tiny, ", sync.stderr)
    assert "differ from dvc.lock" not in sync.stderr
    vocab = ws / "artifacts/tiny/data/en-de/bpe/vocab.src"
    vocab.write_text(vocab.read_text() + "x\n")
    assert "1 stage(s) differ from dvc.lock (corpus-en-de@tiny): run `dvc pull`" in run(
        ["bash", "workflows/sync_after_pull.sh"], ws, check=False).stderr
    run(["dvc", "checkout", "-f", "corpus-en-de"], ws)
    shared, papers = copy.deepcopy(TOY_SHARED), {"hao2019": TOY_HAO2019}
    write_params(ws, {**shared, "scale": "paper"}, papers)   # the toy corpus, prepared at paper scale
    run(["snakemake", "--profile", "workflows/profiles/local", "artifacts/paper/data/en-de/ready"], ws)
    run(["dvc", "commit", "-f", "corpus-en-de"], ws)
    lock = _lock(ws)
    assert lock["corpus-en-de@tiny"] == tiny
    assert lock["corpus-en-de@paper"]["outs"][0]["path"] == "artifacts/paper/data/en-de"
    paper = lock["corpus-en-de@paper"]
    assert "up to date" in run(["dvc", "status", "corpus-en-de"], ws).stdout
    write_params(ws, shared, papers)   # back to tiny: its record still matches, and a commit there keeps paper's
    assert "up to date" in run(["dvc", "status", "corpus-en-de"], ws).stdout
    run(["dvc", "commit", "-f", "corpus-en-de"], ws)
    assert _lock(ws)["corpus-en-de@paper"] == paper and _lock(ws)["corpus-en-de@tiny"] == tiny


def _lock(ws) -> dict:
    return yaml.safe_load((ws / "dvc.lock").read_text(encoding="utf-8"))["stages"]


def test_soak_make_run_then_interrupted_rebuilds_lose_and_train_nothing_twice(tmp_path):
    """In a fresh clone: `make run`'s script builds Table 3 and records it in DVC, so `dvc repro` reruns nothing; a
    forced `dvc repro` of a training stage stopped by Ctrl-C never deletes the model (persistent outputs: Snakemake,
    asked again, finds it up to date); a rebuild after a recipe change stopped at a checkpoint by SIGKILL of DVC alone
    leaves the previous model in DVC's cache and no lock, and the next `make run` resumes that checkpoint to the
    uninterrupted run's bytes."""
    from pipeline.build_guard import running_snakemakes
    paper = copy.deepcopy(TOY_HAO2019)
    # 900 updates: at ~70 per second here, the rebuild stopped at its second checkpoint is ~12 s from its end, time
    # enough for the stop to reach it on a loaded machine (a trainer that finishes first leaves nothing to resume)
    paper["recipes"]["toy"].update(max_steps=900, checkpoint_every=25, valid_every=900)
    origin = make_workspace(tmp_path / "origin", papers={"hao2019": paper}, git=True)
    run(["git", "add", "-A"], origin)
    run(["git", "commit", "-qm", "toy project"], origin)
    clone = tmp_path / "clone"
    run(["git", "clone", "-q", str(origin), str(clone)], tmp_path)
    model = clone / "artifacts/tiny/models/ende-base/model.pt"

    built = run(["bash", "workflows/run.sh", TABLE], clone, timeout=1800)
    assert "recorded in dvc.lock and DVC's cache" in built.stdout
    first, trained = model.read_bytes(), (model.parent / "train.json").read_bytes()
    assert "Data and pipelines are up to date" in run(["dvc", "status"], clone).stdout   # nothing to rerun

    forced = subprocess.Popen(["dvc", "repro", "--force", "-s", "train-ende-base"], cwd=clone, env=env(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    assert wait_for(lambda: running_snakemakes(clone) or forced.poll() is not None, 120)
    os.killpg(forced.pid, signal.SIGINT)   # Ctrl-C at its terminal
    forced.wait(timeout=120)
    assert wait_for(lambda: not running_snakemakes(clone), 120)
    assert model.read_bytes() == first and (model.parent / "train.json").read_bytes() == trained

    # a real rebuild: the recipe changes; SIGKILL of DVC alone once the trainer has written a checkpoint
    paper["recipes"]["toy"]["lr"] = 0.002
    for ws in (clone, origin):
        write_params(ws, TOY_SHARED, {"hao2019": paper})
    reference = subprocess.Popen(["snakemake", "--profile", "workflows/profiles/local",
                                  "artifacts/tiny/models/ende-base/model.pt"], cwd=origin, env=env(),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    previous = next(out["md5"] for out in _lock(clone)["train-ende-base@tiny"]["outs"]
                    if out["path"].endswith("models/ende-base"))
    rebuild = subprocess.Popen(["dvc", "repro", "train-ende-base"], cwd=clone, env=env(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    assert wait_for(lambda: trainer_step(clone, "ende-base") >= 50 or rebuild.poll() is not None, 600)
    stopped_at = trainer_step(clone, "ende-base")
    assert 50 <= stopped_at < 900, stopped_at
    rebuild.kill()
    rebuild.wait()
    assert wait_for(lambda: not running_snakemakes(clone), 120)   # the stage's job tree stopped with DVC
    assert not (clone / "artifacts/tiny/runs/ende-base/COMPLETE").exists(), "the trainer finished before its stop"
    assert not list((clone / ".snakemake/locks").glob("*.lock"))
    cache = clone / ".dvc/cache/files/md5" / previous[:2] / previous[2:]
    assert cache.exists()   # the model it replaces: `dvc checkout` restores it

    again = run(["bash", "workflows/run.sh", TABLE], clone, timeout=1800)
    assert "recorded in dvc.lock and DVC's cache" in again.stdout
    summary = json.loads((model.parent / "train.json").read_text())
    assert summary["resumed_from_step"] >= stopped_at   # nothing trained twice
    assert reference.wait(timeout=900) == 0
    a, b = (torch.load(ws / "artifacts/tiny/models/ende-base/model.pt", weights_only=True)["weights"]
            for ws in (clone, origin))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
