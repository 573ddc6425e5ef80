#!/usr/bin/env python
"""Interrupted trainings, resumed: SIGKILLs of a tiny training job at random points, each followed by a plain
Snakemake run; then interrupts of `dvc repro` of the trained stage after a recipe change (Ctrl-C to its terminal's
process group, or SIGKILL of the `dvc` process alone), each followed by a plain `dvc repro`. Prints, per trial,
where it was stopped, how long the job tree took to end, where the rerun started, whether the final model is
bitwise the uninterrupted one and whether the previous model stayed in DVC's cache.

    python benchmarks/interrupts.py [--trials 5] [--seed 0] [--steps 400]
"""
from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import yaml  # noqa: E402

from workspace import TOY_HAO2019, env, make_workspace, run, trainer_step, wait_for  # noqa: E402

EXP = "ende-base"
MODEL = f"artifacts/tiny/models/{EXP}/model.pt"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def processes(ws: Path, *words: str, python: bool = False) -> list[int]:
    """Live processes whose command line holds every word and that run in the workspace (python: only Python
    interpreters, not the shells that started them)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            status = (entry / "stat").read_text().split(")")[-1].split()[0]
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if python and not Path(cmd.split(" ")[0]).name.startswith("python"):
            continue
        if status != "Z" and cwd == str(ws) and all(word in cmd for word in words):
            found.append(int(entry.name))
    return found


def trainer(ws: Path) -> int:
    (pid,) = processes(ws, "-m pipeline train", python=True)
    return pid


def summary(ws: Path) -> dict:
    return json.loads((ws / f"artifacts/tiny/models/{EXP}/train.json").read_text())


def interrupted(ws: Path, cmd: list[str], target: int, stop) -> tuple[str, float]:
    """Start cmd, wait until the trainer's last checkpoint is at step `target` or later, stop it with `stop(proc)`;
    return (where, how long the job tree took to end)."""
    proc = subprocess.Popen(cmd, cwd=ws, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    if not wait_for(lambda: processes(ws, "-m pipeline train", python=True), 300):
        raise SystemExit(f"no trainer started by {' '.join(cmd)}")
    if not wait_for(lambda: trainer_step(ws, EXP) >= target, 600):
        raise SystemExit(f"the trainer of {' '.join(cmd)} never reached step {target}")
    at = trainer_step(ws, EXP)
    stop(proc)
    t0 = time.monotonic()
    ended = wait_for(lambda: not processes(ws, "pipeline", "train") and not processes(ws, "snakemake"), 120)
    proc.wait(timeout=120)
    return f"after checkpoint step {at}", (time.monotonic() - t0) if ended else float("inf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=400, help="training steps of the toy system")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    every = max(args.steps // 20, 1)

    def target() -> int:
        """A random step to stop after: between the first and the last checkpoint."""
        return rng.randrange(every, args.steps - every)

    paper = copy.deepcopy(TOY_HAO2019)
    paper["recipes"]["toy"].update(max_steps=args.steps, checkpoint_every=every)
    root = Path(tempfile.mkdtemp(prefix="interrupts-"))
    ws = make_workspace(root / "ws", papers={"hao2019": paper}, git=True)
    run(["git", "add", "-A"], ws)
    run(["git", "commit", "-qm", "toy project"], ws)
    smk = ["snakemake", "--profile", "workflows/profiles/local"]
    started = time.monotonic()
    run(["dvc", "repro", f"train-{EXP}"], ws, timeout=3600)
    reference = sha(ws / MODEL)
    run(["git", "add", "-A"], ws)
    run(["git", "commit", "-qm", "trained"], ws)
    print(f"reference: {EXP}, {args.steps} steps, model {reference}, "
          f"dvc repro {time.monotonic() - started:.0f} s (corpus and training)")

    same = 0
    for trial in range(1, args.trials + 1):
        how, _ = interrupted(ws, smk + ["--forcerun", MODEL, "--", MODEL], target(),
                             lambda proc: os.kill(trainer(ws), signal.SIGKILL))
        run(smk + ["--", MODEL], ws, timeout=3600)
        final, info = sha(ws / MODEL), summary(ws)
        same += final == reference
        print(f"sigkill trial={trial} killed={how} "
              f"resumed_from_step={info['resumed_from_step']} identical={final == reference}")
    print(f"sigkill_identical={same}/{args.trials}")

    # DVC: each trial changes the recipe (a stage to rerun), interrupts `dvc repro`, reruns it; its reference is
    # the same stage trained uninterrupted afterwards (`dvc repro --force`: from scratch)
    same = kept = resumed = 0
    params_file = ws / "params/hao2019.yaml"
    for trial in range(1, args.trials + 1):
        outs = yaml.safe_load((ws / "dvc.lock").read_text())["stages"][f"train-{EXP}@tiny"]["outs"]
        previous = next(o["md5"] for o in outs if o["path"].endswith(f"models/{EXP}"))
        params = yaml.safe_load(params_file.read_text())
        params["recipes"]["toy"]["lr"] = round(0.003 + 0.0001 * trial, 6)
        params_file.write_text(yaml.safe_dump(params, sort_keys=False))
        ctrl_c = trial % 2 == 1
        stop = ((lambda proc: os.killpg(proc.pid, signal.SIGINT)) if ctrl_c
                else (lambda proc: os.kill(proc.pid, signal.SIGKILL)))
        how, stopped_in = interrupted(ws, ["dvc", "repro", f"train-{EXP}"], target(), stop)
        cached = (ws / ".dvc/cache/files/md5" / previous[:2] / previous[2:]).exists()
        run(["dvc", "repro", f"train-{EXP}"], ws, timeout=3600)
        final, info = sha(ws / MODEL), summary(ws)
        run(["dvc", "repro", "--force", f"train-{EXP}"], ws, timeout=3600)
        reference = sha(ws / MODEL)
        same += final == reference
        kept += cached
        resumed += info["resumed_from_step"] > 0
        print(f"dvc trial={trial} interrupt={'ctrl-c' if ctrl_c else 'sigkill-dvc'} stopped={how} "
              f"tree_ended_in_s={stopped_in:.1f} previous_model_in_cache={cached} "
              f"rerun_resumed_from_step={info['resumed_from_step']} identical_to_uninterrupted={final == reference}")
    print(f"dvc_identical={same}/{args.trials} dvc_resumed={resumed}/{args.trials} "
          f"previous_model_kept={kept}/{args.trials}")
    shutil.rmtree(root)


if __name__ == "__main__":
    main()
