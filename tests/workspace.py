"""A toy copy of the project (same Snakefile, rules, dvc.yaml, package) with a tiny params.yaml.

The toy params keep every real part (synthetic corpora through fetch/tokenize/BPE, real training,
beam search, sacreBLEU, bootstrap, the real table layout) but train for seconds.
"""
from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

_TOY_MODEL = {"d_model": 32, "ffn_dim": 64, "heads": 2, "enc_layers": 1, "dec_layers": 1, "dropout": 0.0,
              "tie_output": True}
_TOY_RESOURCES = {"gpu": 0, "runtime": 10, "mem_mb": 1000, "cpus": 1}

TOY_PARAMS = {
    "scale": "tiny",
    "seed": 1,
    "paths": {"artifacts": "artifacts", "downloads": "artifacts/downloads", "manual": {}},
    "corpora": {
        "zh-en": {"src": "zh", "tgt": "en", "source": "toy-reorder", "max_len": 30, "bpe_merges": 30,
                  "joint_bpe": False, "valid_size": 40, "test_size": 60},
        "en-de": {"src": "en", "tgt": "de", "source": "toy-copy", "max_len": 30, "bpe_merges": 30,
                  "joint_bpe": True, "valid_size": 40, "test_size": 60},
    },
    "models": {
        "toy": {"arch": "transformer", **_TOY_MODEL},
        "toy-biarn": {"arch": "recurrence", **_TOY_MODEL, "rec_type": "biarn", "rec_layers": 1, "rec_steps": 4,
                      "integration": "stack", "integrate_into": "top"},
    },
    "recipes": {
        "toy": {"lr": 0.003, "warmup": 20, "max_steps": 60, "batch_tokens": 600, "checkpoint_every": 20,
                "valid_every": 20, "resources": dict(_TOY_RESOURCES)},
        "toy-finetune": {"lr": 0.002, "warmup": 10, "max_steps": 30, "batch_tokens": 600, "checkpoint_every": 10,
                         "valid_every": 10, "resources": dict(_TOY_RESOURCES)},
    },
    "decoding": {"beam": 2, "length_penalty": 0.6, "batch_size": 30, "max_len_a": 1.2, "max_len_b": 5},
    "significance": {"n_samples": 100, "seed": 12345},
    "experiments": {
        "zhen-base": {"corpus": "zh-en", "model": "toy", "recipe": "toy"},
        "ende-base": {"corpus": "en-de", "model": "toy", "recipe": "toy"},
    },
    "finetunes": {
        "zhen-base-biarn": {"corpus": "zh-en", "model": "toy-biarn", "recipe": "toy-finetune", "init": "zhen-base"},
        "ende-base-biarn": {"corpus": "en-de", "model": "toy-biarn", "recipe": "toy-finetune", "init": "ende-base"},
    },
    "tables": {
        "hao2019-table3": {
            "paper": "hao2019", "output": "table3",
            "cells": {"base": {"zh-en": "zhen-base", "en-de": "ende-base"},
                      "base+biarn": {"zh-en": "zhen-base-biarn", "en-de": "ende-base-biarn"}},
            "baselines": {"base+biarn": "base"},
        }
    },
    "figures": {},
    "probing": {"corpus": "en-de", "max_per_task": 300, "seed": 1, "epochs": 20, "hidden": 0, "lr": 0.01},
}
TABLE = "results/hao2019/table3.tsv"
PROJECT_FILES = ("Snakefile", "dvc.yaml", "workflows", "pipeline", "slurm", ".dvcignore")


def toy_project_params() -> dict:
    """The project's own params.yaml with every corpus, model and recipe shrunk to toy size (same tables)."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    toy_corpus = {"max_len": 30, "bpe_merges": 30, "valid_size": 40, "test_size": 60}
    for name, corpus in params["corpora"].items():
        corpus.update(toy_corpus, source="toy-reorder" if corpus["src"] == "zh" else "toy-copy")
    for model in params["models"].values():
        model.update({k: v for k, v in _TOY_MODEL.items() if k in model})
        if "rnn_layers" in model:
            model["rnn_layers"] = 2
    for name, recipe in params["recipes"].items():
        recipe.update(TOY_PARAMS["recipes"]["toy-finetune" if name == "finetune" else "toy"])
    params["decoding"] = dict(TOY_PARAMS["decoding"])
    params["significance"] = dict(TOY_PARAMS["significance"])
    params["probing"] = dict(TOY_PARAMS["probing"])
    return params


def toy_params(**changes) -> dict:
    """A deep copy of TOY_PARAMS with top-level keys replaced."""
    params = copy.deepcopy(TOY_PARAMS)
    params.update(changes)
    return params


def make_workspace(path: Path, params: dict | None = None, git: bool = False) -> Path:
    """Copy the project files into `path` and write the toy params.yaml; optionally a git + DVC repo."""
    path.mkdir(parents=True, exist_ok=True)
    for name in PROJECT_FILES:
        source = ROOT / name
        if source.is_symlink():
            os.symlink(os.readlink(source), path / name)
        elif source.is_dir():
            shutil.copytree(source, path / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, path / name)
    (path / "params.yaml").write_text(yaml.safe_dump(params or TOY_PARAMS, sort_keys=False), encoding="utf-8")
    (path / ".gitignore").write_text((ROOT / ".gitignore").read_text(encoding="utf-8"), encoding="utf-8")
    if git:
        run(["git", "init", "-q"], path)
        run(["git", "config", "user.email", "test@example.invalid"], path)
        run(["git", "config", "user.name", "test"], path)
        run(["dvc", "init", "-q"], path)
        run(["dvc", "config", "core.analytics", "false"], path)
    return path


def env() -> dict:
    """The environment the tools run in: this venv first on PATH, single-threaded torch."""
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "OMP_NUM_THREADS": "1"}


def run(cmd: list[str], cwd: Path, check: bool = True, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run a command in the workspace; on failure show its output in the assertion message."""
    proc = subprocess.run(cmd, cwd=cwd, env=env(), capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({proc.returncode}) in {cwd}:\n"
                             f"--- stdout\n{proc.stdout[-6000:]}\n--- stderr\n{proc.stderr[-6000:]}")
    return proc


def read_table(path: Path) -> list[dict]:
    """The data rows of a TSV table (comment lines skipped) as dicts keyed by the header."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"))) for line in lines[1:]]
