"""A toy copy of the project (same Snakefile, rules, package) with tiny params.yaml and params/<paper>.yaml files.

The toy params keep every real part (synthetic corpora through fetch/tokenize/BPE, real training, beam search,
sacreBLEU, bootstrap, the real table layout) but train for seconds.
"""
from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

TOY_MODEL = {"encoder": "transformer", "decoder": "transformer", "d_model": 32, "ffn_dim": 64, "heads": 2,
             "enc_layers": 1, "dec_layers": 1, "dropout": 0.0, "tie_output": True}
TOY_RESOURCES = {"gpu": 0, "runtime": 10, "mem_mb": 1000, "cpus": 1}
TOY_RECIPE = {"optimizer": "adam", "lr": 0.003, "warmup": 20, "max_steps": 60, "batch_size": 600,
              "label_smoothing": 0.1, "checkpoint_every": 20, "valid_every": 20, "resources": dict(TOY_RESOURCES)}
TOY_FINETUNE = {**TOY_RECIPE, "lr": 0.002, "warmup": 10, "max_steps": 30, "checkpoint_every": 10, "valid_every": 10,
                "resources": dict(TOY_RESOURCES)}  # its own dict: a test may change one recipe's resources
TOY_CORPUS = {"max_len": 30, "bpe_merges": 30, "valid_size": 40, "test_size": 60}

TOY_SHARED = {
    "scale": "tiny",
    "seed": 1,
    "precision": "auto",  # DVC's train stages track it, so params.yaml must name it (as the project's does)
    # MKL's fastest path; tests/workflow/test_workflow.py builds with the project's tiny default (portable-fixed) and
    # with portable (about 1.9x the CPU time on an AMD EPYC)
    "cpu_math": "native",
    "paths": {"artifacts": "artifacts", "downloads": "artifacts/downloads", "manual": {}},
    "decoding": {"beam": 2, "length": "penalty", "length_penalty": 0.6, "batch_size": 30, "max_len_a": 1.2,
                 "max_len_b": 5},
    "significance": {"test": "paired_bootstrap", "n_samples": 100, "seed": 12345},
}
TOY_HAO2019 = {
    "corpora": {
        "zh-en": {"src": "zh", "tgt": "en", "source": "toy-reorder", "joint_bpe": False, **TOY_CORPUS},
        "en-de": {"src": "en", "tgt": "de", "source": "toy-copy", "joint_bpe": True, **TOY_CORPUS},
    },
    "models": {
        "toy": dict(TOY_MODEL),
        "toy-biarn": {**TOY_MODEL, "encoder": "recurrence", "decoder": "recurrence", "rec_type": "biarn",
                      "rec_layers": 1, "rec_steps": 4, "integration": "stack", "integrate_into": "top"},
    },
    "recipes": {"toy": dict(TOY_RECIPE), "toy-finetune": dict(TOY_FINETUNE)},
    "experiments": {
        "zhen-base": {"corpus": "zh-en", "model": "toy", "recipe": "toy"},
        "ende-base": {"corpus": "en-de", "model": "toy", "recipe": "toy"},
        "zhen-base-biarn": {"corpus": "zh-en", "model": "toy-biarn", "recipe": "toy-finetune", "init": "zhen-base"},
        "ende-base-biarn": {"corpus": "en-de", "model": "toy-biarn", "recipe": "toy-finetune", "init": "ende-base"},
    },
    "tables": {
        "hao2019-table3": {
            "cells": {"base": {"zh-en": "zhen-base", "en-de": "ende-base"},
                      "base+biarn": {"zh-en": "zhen-base-biarn", "en-de": "ende-base-biarn"}},
            "values": {"bleu": "sacrebleu", "params": "train.n_params"},
            "significance": {"value": "bleu", "baselines": {"base+biarn": "base"}},
        }
    },
}
TABLE = "results/tiny/hao2019/table3.tsv"
PROJECT_FILES = ("Snakefile", "workflows", "pipeline", "slurm", ".dvcignore",
                 "benchmarks/results/gpu_step_times.json")   # the GPU models and step times the time limits read


def project_params() -> tuple[dict, dict[str, dict]]:
    """The project's own params.yaml and params/<paper>.yaml mappings."""
    shared = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    papers = {path.stem: yaml.safe_load(path.read_text(encoding="utf-8"))
              for path in sorted((ROOT / "params").glob("*.yaml"))}
    return shared, papers


def every_model_spec() -> list[dict]:
    """The model spec of one experiment per encoder-decoder pair of params.yaml, over both scales."""
    from pipeline.config import load_params

    specs = {}
    for scale in ("tiny", "paper"):
        params = load_params(ROOT / "params.yaml", scale=scale)
        for exp in params.experiments:
            spec = params.model_spec(exp)
            specs[(spec["encoder"], spec["decoder"])] = spec
    return list(specs.values())


def paper_targets(paper: str, scale: str = "tiny") -> list[str]:
    """results/<scale>/<paper>/<file>.tsv of every table and figure the project's params/<paper>.yaml defines."""
    _, papers = project_params()
    specs = {**papers[paper]["tables"], **papers[paper].get("figures", {})}
    return sorted(f"results/{scale}/{paper}/{name.removeprefix(paper + '-')}.tsv" for name in specs)


def toy_project_params() -> tuple[dict, dict[str, dict]]:
    """The project's own params with every corpus, model and recipe shrunk to toy size (same systems and tables)."""
    shared, papers = project_params()
    shared.update(decoding=dict(TOY_SHARED["decoding"]), significance=dict(TOY_SHARED["significance"]))
    for paper in papers.values():
        for corpus in paper.get("corpora", {}).values():
            corpus.update(TOY_CORPUS, source="toy-reorder" if corpus["src"] == "zh" else "toy-copy")
        for model in paper.get("models", {}).values():
            model.update({k: v for k, v in TOY_MODEL.items() if k in model and k not in ("encoder", "decoder")})
            if "rnn_layers" in model:
                model["rnn_layers"] = 2
        for name, recipe in paper.get("recipes", {}).items():
            recipe.clear()
            recipe.update(copy.deepcopy(TOY_FINETUNE if name == "finetune" else TOY_RECIPE))
        for table in {**paper.get("tables", {}), **paper.get("figures", {})}.values():
            probing = table.get("analyses", {}).get("probing")
            if probing:
                probing.update(max_per_task=300, epochs=20)
    return shared, papers


def toy_zhang2018_params() -> tuple[dict, dict]:
    """The project's zhang2018 params on toy corpora, smaller still; the alignment corpus stays the reorder grammar."""
    shared, papers = toy_project_params()
    zhang = papers["zhang2018"]
    zhang["corpora"]["rn-reorder"]["source"] = "toy-reorder"
    for model in zhang["models"].values():
        model.update(embed=16, hidden=16, dropout=0.0)
        if model.get("encoder") == "rnmt":
            model.update(rn_channels=[4] * len(model["rn_widths"]), rn_hidden=8)
    zhang["figures"]["zhang2018-fig3"]["analyses"]["length"]["bins"] = [[0, 5], [5, 8], [8, None]]
    return shared, {"zhang2018": zhang}


def toy_params(**changes) -> dict:
    """A deep copy of TOY_SHARED with top-level keys replaced."""
    return {**copy.deepcopy(TOY_SHARED), **changes}


def write_params(path: Path, shared: dict, papers: dict[str, dict]) -> None:
    """params.yaml and params/<paper>.yaml (any paper file there before is removed)."""
    (path / "params.yaml").write_text(yaml.safe_dump(shared, sort_keys=False), encoding="utf-8")
    shutil.rmtree(path / "params", ignore_errors=True)
    (path / "params").mkdir()
    for paper, data in papers.items():
        (path / "params" / f"{paper}.yaml").write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True),
                                                       encoding="utf-8")


def make_workspace(path: Path, shared: dict | None = None, papers: dict[str, dict] | None = None,
                   git: bool = False) -> Path:
    """Copy the project files into `path`, write toy params (and a generated dvc.yaml); optionally git + DVC."""
    path.mkdir(parents=True, exist_ok=True)
    for name in PROJECT_FILES:
        source = ROOT / name
        if source.is_symlink():
            os.symlink(os.readlink(source), path / name)
        elif source.is_dir():
            shutil.copytree(source, path / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, path / name)
    write_params(path, copy.deepcopy(shared or TOY_SHARED), copy.deepcopy(papers or {"hao2019": TOY_HAO2019}))
    (path / ".gitignore").write_text((ROOT / ".gitignore").read_text(encoding="utf-8"), encoding="utf-8")
    run(["python", "-m", "pipeline", "dvc-yaml"], path)
    if git:
        run(["git", "init", "-q"], path)
        run(["git", "config", "user.email", "test@example.invalid"], path)
        run(["git", "config", "user.name", "test"], path)
        run(["dvc", "init", "-q"], path)
        run(["dvc", "config", "core.analytics", "false"], path)
    return path


def env() -> dict:
    """The environment the tools run in: this venv first on PATH, single-threaded torch, the workspace's package;
    SHELL /bin/sh, DVC's shell for stage commands where SHELL is unset (as in CI)."""
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "OMP_NUM_THREADS": "1",
            "SHELL": "/bin/sh"}


def run(cmd: list[str], cwd: Path, check: bool = True, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run a command in the workspace; on failure show its output in the assertion message."""
    proc = subprocess.run(cmd, cwd=cwd, env=env(), capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({proc.returncode}) in {cwd}:\n"
                             f"--- stdout\n{proc.stdout[-6000:]}\n--- stderr\n{proc.stderr[-6000:]}")
    return proc


def wait_for(condition, timeout: float, step: float = 0.05):
    """condition()'s first true value within `timeout` seconds (polled every `step`), else None."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(step)
    return None


def trainer_step(ws: Path, exp: str) -> int:
    """The step of a running trainer's last checkpoint at tiny scale (0 without one, or while the run there is a
    finished one)."""
    import torch

    from pipeline.paths import Paths
    from pipeline.train.state import COMPLETE
    last = ws / Paths("artifacts/tiny").run_dir(exp) / "last.pt"
    if (last.parent / COMPLETE).exists():
        return 0
    try:
        return torch.load(last, map_location="cpu", weights_only=True)["progress"]["step"]
    except Exception:  # absent, or being replaced
        return 0


def read_table(path: Path) -> list[dict]:
    """The data rows of a TSV table (comment lines skipped) as dicts keyed by the header."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"))) for line in lines[1:]]


# ------------------------------------------------------------------------------------------------- a toy paper
TOY_PAPER = '''
"""toy2026: a paper added by new files only: its layout, a metric, a significance test and an analysis kind."""
from dataclasses import dataclass

import numpy as np

from pipeline.analyses import Task, register_analysis
from pipeline.evaluate.metrics import Metric, register_metric
from pipeline.evaluate.significance import register_test
from pipeline.fileio import read_lines
from pipeline.report.layouts import register_layout
from pipeline.report.table import Table


@register_metric("exact-match")
class ExactMatch(Metric):
    """The percentage of hypotheses equal to their first reference; stats per sentence: (equal, 1)."""

    def score(self, hyps, refs, lang):
        stats = [[float(h == r), 1.0] for h, r in zip(hyps, refs[0])]
        return {"metric": self.name, "score": self.score_from_stats(stats), "signature": "exact-match|refs:1",
                "n_sentences": len(hyps), "n_references": len(refs), "stats": stats}

    def score_from_stats(self, stats, field=None):
        stats = np.asarray(stats, dtype=float)
        return float(100.0 * stats[:, 0].sum() / stats[:, 1].sum())

    def sentence_scores(self, stats, field=None):
        return 100.0 * np.asarray(stats, dtype=float)[:, 0]


@register_test("wins")
def wins(metric, baseline, system, *, field, n_samples, seed):
    """The share of sentences the system scores higher than the baseline, as its p_value (a toy, not a test)."""
    b, s = metric.sentence_scores(baseline, field), metric.sentence_scores(system, field)
    base, ours = metric.score_from_stats(baseline, field), metric.score_from_stats(system, field)
    return {"test": "wins", "p_value": float(np.mean(s > b)), "baseline_score": base, "system_score": ours,
            "delta": ours - base, "field": field, "n_sentences": len(b), "signature": "wins"}


@dataclass(frozen=True)
class WordsSettings:
    """Mean words per hypothesis, over the first `sentences`."""
    sentences: int = 1000


@register_analysis("hyp_words", WordsSettings, inputs=lambda job: {"hyp": job.paths.hyp(job.item, job.split())})
def hyp_words(task: Task) -> dict:
    """Mean words per hypothesis."""
    lines = read_lines(task.inputs["hyp"])[:task.settings.sentences]
    return {"mean": sum(len(line.split()) for line in lines) / len(lines), "lines": len(lines)}


@register_layout("toy2026-table1")
def table1(cells, facts):
    rows = [[row, col, f"{cell['em']:.2f}", f"{cell.get('p_value', 1.0):.3f}", f"{cell['hyp_words']['mean']:.3f}"]
            for row, by_col in cells.items() for col, cell in by_col.items()]
    return Table(title="toy2026 Table 1", columns=["Row", "Column", "EM", "wins", "words"], rows=rows,
                 footer=[f"scale: {facts['scale']}", f"test: {facts['significance']['test']}"])
'''

TOY_PAPER_PARAMS = {
    "corpora": {"t-copy": {"src": "src", "tgt": "tgt", "source": "toy-copy", "joint_bpe": True, **TOY_CORPUS}},
    "models": {"t-small": dict(TOY_MODEL)},
    "recipes": {"t-recipe": dict(TOY_RECIPE)},
    "experiments": {"t-a": {"corpus": "t-copy", "model": "t-small", "recipe": "t-recipe"},
                    "t-b": {"corpus": "t-copy", "model": "t-small", "recipe": "t-recipe", "options": {"dropout": 0.1}}},
    "tables": {"toy2026-table1": {"cells": {"a": {"copy": "t-a"}, "b": {"copy": "t-b"}},
                                  "values": {"em": "exact-match"},
                                  "significance": {"value": "em", "baselines": {"b": "a"}, "test": "wins"},
                                  "analyses": {"hyp_words": {"sentences": 50}}}},
}
TOY_PAPER_STAGES = {"corpus-t-copy", "train-t-a", "train-t-b", "eval-t-a", "eval-t-b", "table-toy2026-table1"}


def add_toy_paper(ws: Path) -> None:
    """Add the paper toy2026 by new files only: params/toy2026.yaml and pipeline/papers/toy2026/ (its layout, a
    metric, a significance test and an analysis kind)."""
    (ws / "params/toy2026.yaml").write_text(yaml.safe_dump(TOY_PAPER_PARAMS, sort_keys=False), encoding="utf-8")
    package = ws / "pipeline/papers/toy2026"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent(TOY_PAPER), encoding="utf-8")


def stage_texts(dvc_yaml: Path) -> dict[str, str]:
    """dvc.yaml's text per stage: name -> its lines (a stage is a block indented under `stages:`)."""
    texts, name = {}, None
    for line in dvc_yaml.read_text(encoding="utf-8").splitlines():
        if not line.startswith(" "):
            name = None
        elif line.startswith("  ") and not line.startswith("   ") and line.rstrip().endswith(":"):
            name = line.strip()[:-1]
            texts[name] = ""
        if name is not None:
            texts[name] += line + "\n"
    return texts
