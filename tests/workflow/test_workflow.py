"""End to end on toy corpora: Snakemake with the local executor builds hao2019 Table 3 from nothing, every cell
traced to its score file; `make run`'s script rebuilds and compares; a toy paper is added by new files only."""
import json
import re
import textwrap

import pytest
import yaml

from workspace import TABLE, TOY_CORPUS, TOY_MODEL, TOY_RECIPE, TOY_SHARED, make_workspace, read_table, run

pytestmark = pytest.mark.slow
PROFILE = ["--profile", "workflows/profiles/local"]
MARKS = r"[⇑↑]"


def test_local_snakemake_builds_table_every_cell_traced_then_nothing_to_do(tmp_path):
    ws = make_workspace(tmp_path / "ws", shared={**TOY_SHARED, "cpu_math": "portable"})  # the project's tiny default
    run(["snakemake", *PROFILE, TABLE], ws)
    art = ws / "artifacts/tiny"

    rows = [row for row in read_table(ws / TABLE) if row["System"] == "this work"]
    base = next(i for i, row in enumerate(rows) if row["Architecture"] == "Transformer-Base")
    biarn = next(i for i, row in enumerate(rows) if i > base and row["Architecture"] == "+ 1-Layer BiARN")
    ours = {"base": rows[base], "base+biarn": rows[biarn]}
    systems = {"base": {"Zh-En": "zhen-base", "En-De": "ende-base"},
               "base+biarn": {"Zh-En": "zhen-base-biarn", "En-De": "ende-base-biarn"}}
    for row, by_pair in systems.items():
        for pair, system in by_pair.items():
            cell = ours[row][f"{pair} BLEU (ours)"]
            score = json.loads((art / f"eval/{system}/test.sacrebleu.json").read_text())
            assert re.sub(MARKS, "", cell) == f"{score['score']:.2f}", (row, pair)
            summary = json.loads((art / f"models/{system}/train.json").read_text())
            if row == "base":
                assert not re.search(MARKS, cell)
                assert ours[row][f"{pair} #Para. (ours)"] in (f"{summary['n_params'] / 1e3:.1f}K",
                                                              f"{summary['n_params'] / 1e6:.1f}M")
                continue
            baseline = systems["base"][pair]
            base_summary = json.loads((art / f"models/{baseline}/train.json").read_text())
            added = summary["n_params"] - base_summary["n_params"]
            assert ours[row][f"{pair} #Para. (ours)"] in (f"+{added / 1e3:.1f}K", f"+{added / 1e6:.1f}M")
            sig = json.loads((art / f"tables/hao2019-table3/significance/{system}.test.json").read_text())
            base_score = json.loads((art / f"eval/{baseline}/test.sacrebleu.json").read_text())["score"]
            assert sig["baseline_score"] == pytest.approx(base_score) and sig["system"] == system
            assert sig["delta"] == pytest.approx(score["score"] - base_score)
            expected = "⇑" if sig["p_value"] < 0.01 and sig["delta"] > 0 else (
                "↑" if sig["p_value"] < 0.05 and sig["delta"] > 0 else "")
            assert re.sub(r"[\d.]", "", cell) == expected, (cell, sig)
    # the footer's signature is the score files'
    footer = [line for line in (ws / TABLE).read_text().splitlines() if line.startswith("#")]
    signature = json.loads((art / "eval/ende-base/test.sacrebleu.json").read_text())["signature"]
    assert any(signature in line for line in footer), footer
    assert any("scale: tiny" in line for line in footer)
    assert footer[-2] == f"# precision (training and decoding): {summary['precision']}"  # the runs' precision
    # the code path every job ran on (pipeline/cpu_math.py), set by the Snakefile for every job
    assert re.fullmatch(r"torch \S+, ATen AVX2, MKL_CBWR=COMPATIBLE, oneDNN <= AVX2, 1 thread", summary["cpu_math"])
    assert footer[-1] == f"# training computed with: {summary['cpu_math']}"
    assert (ws / "results/tiny/hao2019/table3.md").read_text().count("|") > 20

    # a second run has nothing to do
    dry = run(["snakemake", *PROFILE, "-n", TABLE], ws)
    assert "Nothing to be done" in dry.stdout + dry.stderr

    # an edit of a model's code retrains exactly the systems built from it, from scratch (their old runs set aside)
    def weights():
        return {s: (art / f"models/{s}/model.pt").read_bytes()
                for by_pair in systems.values() for s in by_pair.values()}

    before = weights()
    module = ws / "pipeline/models/recurrence.py"
    line = "h = torch.tanh(self.init_proj(masked_mean(h_in, pad)))"
    module.write_text(module.read_text().replace(line, f"{line} * 0.5"))
    run(["snakemake", *PROFILE, TABLE], ws)
    after = weights()
    assert {s for s in before if before[s] != after[s]} == {"zhen-base-biarn", "ende-base-biarn"}
    for system in ("zhen-base-biarn", "ende-base-biarn"):
        assert json.loads((art / f"models/{system}/train.json").read_text())["resumed_from_step"] == 0
    assert sorted(p.name for p in (art / "runs").glob("*.set-aside")) == ["ende-base-biarn.set-aside",
                                                                          "zhen-base-biarn.set-aside"]
    # a forced rerun trains again from scratch: the same bits (deterministic), not the old weights written back
    run(["snakemake", *PROFILE, "--forcerun", "artifacts/tiny/models/ende-base/model.pt", "--", TABLE], ws)
    summary = json.loads((art / "models/ende-base/train.json").read_text())
    assert summary["resumed_from_step"] == 0 and summary["steps"] == TOY_RECIPE["max_steps"]
    assert len(list((art / "runs/ende-base.set-aside").iterdir())) == 1
    assert weights() == after


def test_run_script_rebuilds_and_compares_then_retrains_nothing(tmp_path):
    ws = make_workspace(tmp_path / "ws")
    committed = ws / TABLE
    committed.parent.mkdir(parents=True)
    committed.write_text("System\tArchitecture\nsomething\telse\n", encoding="utf-8")   # a stale committed table
    first = run(["bash", "workflows/run.sh", TABLE], ws, timeout=1200)
    log = first.stdout + first.stderr
    assert re.search(r"^train\s+4$", log, flags=re.M), log       # it trained, though a table existed
    systems = "ende-base, ende-base-biarn, zhen-base, zhen-base-biarn"
    assert f"{TABLE}: 4 trained systems, 0 done, 4 to train ({systems}); 4 to decode and score" in first.stdout
    assert re.search(r"^  train x4 \(.*\): missing output$", first.stdout, re.M), first.stdout   # what runs and why
    assert re.search(r"^ende-base: step \d+/60 ", log, flags=re.M), log   # the trainers' progress on the terminal
    assert "DIFFERS from the committed table" in first.stdout
    second = run(["bash", "workflows/run.sh", TABLE], ws)
    log = second.stdout + second.stderr
    assert not re.search(r"^train\s+\d", log, flags=re.M), log   # retrains nothing
    assert re.search(r"^table\s+1$", log, flags=re.M), log
    assert "identical to the committed table" in second.stdout
    assert f"{TABLE}: 4 trained systems, 4 done ({systems}), 0 to train; 0 to decode and score" in second.stdout
    assert re.search(r"^  table \(\w+\): forced$", second.stdout, re.M), second.stdout


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
SHARED = ["Snakefile", "params.yaml", "params", "pipeline", "workflows"]


def test_a_toy_paper_is_added_by_new_files_only(tmp_path):
    """A paper with its own metric, significance test and analysis kind: new files, no shared file edited."""
    ws = make_workspace(tmp_path / "ws", git=True)
    run(["git", "add", "-A"], ws)
    run(["git", "commit", "-qm", "the project"], ws)
    paper = {
        "corpora": {"t-copy": {"src": "src", "tgt": "tgt", "source": "toy-copy", "joint_bpe": True, **TOY_CORPUS}},
        "models": {"t-small": dict(TOY_MODEL)},
        "recipes": {"t-recipe": dict(TOY_RECIPE)},
        "experiments": {"t-a": {"corpus": "t-copy", "model": "t-small", "recipe": "t-recipe"},
                        "t-b": {"corpus": "t-copy", "model": "t-small", "recipe": "t-recipe",
                                "options": {"dropout": 0.1}}},
        "tables": {"toy2026-table1": {"cells": {"a": {"copy": "t-a"}, "b": {"copy": "t-b"}},
                                      "values": {"em": "exact-match"},
                                      "significance": {"value": "em", "baselines": {"b": "a"}, "test": "wins"},
                                      "analyses": {"hyp_words": {"sentences": 50}}}},
    }
    (ws / "params/toy2026.yaml").write_text(yaml.safe_dump(paper, sort_keys=False), encoding="utf-8")
    package = ws / "pipeline/papers/toy2026"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent(TOY_PAPER), encoding="utf-8")
    added = ["?? params/toy2026.yaml", "?? pipeline/papers/toy2026/"]
    assert run(["git", "status", "--porcelain", "--", *SHARED], ws).stdout.splitlines() == added

    run(["snakemake", *PROFILE, "results/tiny/toy2026/table1.tsv"], ws)
    rows = read_table(ws / "results/tiny/toy2026/table1.tsv")
    assert [r["Row"] for r in rows] == ["a", "b"]
    art = ws / "artifacts/tiny"
    score = json.loads((art / "eval/t-b/test.exact-match.json").read_text())
    hyps = (art / "eval/t-b/test.hyp").read_text(encoding="utf-8").splitlines()
    refs = (art / "data/t-copy/raw/test.tgt").read_text(encoding="utf-8").splitlines()
    assert score["score"] == pytest.approx(100 * sum(h == r for h, r in zip(hyps, refs)) / len(refs))
    assert rows[1]["EM"] == f"{score['score']:.2f}"
    sig = json.loads((art / "tables/toy2026-table1/significance/t-b.test.json").read_text())
    assert sig["test"] == "wins" and rows[1]["wins"] == f"{sig['p_value']:.3f}"
    words = sum(len(h.split()) for h in hyps[:50]) / len(hyps[:50])
    assert rows[1]["words"] == f"{words:.3f}"
    assert run(["git", "status", "--porcelain", "--", *SHARED], ws).stdout.splitlines() == added  # still none edited

    # dvc.yaml, generated, names the toy paper's code among its stages' dependencies and runs its analysis rule
    run(["python", "-m", "pipeline", "dvc-yaml"], ws)
    stages = yaml.safe_load((ws / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    assert "pipeline/papers/toy2026/__init__.py" in stages["table"]["foreach"]["toy2026-table1"].values()
    assert "pipeline/papers/toy2026/__init__.py" in stages["eval"]["foreach"]["t-b"].values()
    assert "analysis_hyp_words" in stages["table"]["do"]["cmd"]
