"""End to end on toy corpora: Snakemake with the local executor builds hao2019 Table 3 from nothing, every cell
traced to its score file; `make run`'s script rebuilds and compares; a toy paper is added by new files only."""
import json
import re
import textwrap

import pytest

from workspace import TABLE, TOY_CORPUS, TOY_MODEL, TOY_RECIPE, make_workspace, read_table, run

pytestmark = pytest.mark.slow
PROFILE = ["--profile", "workflows/profiles/local"]
MARKS = r"[⇑↑]"


def test_local_snakemake_builds_table_every_cell_traced_then_nothing_to_do(tmp_path):
    ws = make_workspace(tmp_path / "ws")
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
    assert footer[-1] == f"# precision (training and decoding): {summary['precision']}"  # the runs' precision
    assert (ws / "results/hao2019/table3.md").read_text().count("|") > 20

    # a second run has nothing to do
    dry = run(["snakemake", *PROFILE, "-n", TABLE], ws)
    assert "Nothing to be done" in dry.stdout + dry.stderr


def test_run_script_rebuilds_and_compares_then_retrains_nothing(tmp_path):
    ws = make_workspace(tmp_path / "ws")
    committed = ws / TABLE
    committed.parent.mkdir(parents=True)
    committed.write_text("System\tArchitecture\nsomething\telse\n", encoding="utf-8")   # a stale committed table
    first = run(["bash", "workflows/run.sh", TABLE], ws, timeout=1200)
    log = first.stdout + first.stderr
    assert re.search(r"^train\s+4$", log, flags=re.M), log       # it trained, though a table existed
    assert "DIFFERS from the committed table" in first.stdout
    second = run(["bash", "workflows/run.sh", TABLE], ws)
    log = second.stdout + second.stderr
    assert not re.search(r"^train\s+\d", log, flags=re.M), log   # retrains nothing
    assert re.search(r"^table\s+1$", log, flags=re.M), log
    assert "identical to the committed table" in second.stdout


TOY_PAPER_LAYOUT = '''
"""toy2026: a paper added by new files only (this module and params/toy2026.yaml)."""
from pipeline.report.layouts import register_layout
from pipeline.report.table import Table


@register_layout("toy2026-table1")
def table1(cells, facts):
    rows = [[row, col, f"{cell['bleu']:.2f}", f"{cell.get('p_value', 1.0):.3f}"]
            for row, by_col in cells.items() for col, cell in by_col.items()]
    return Table(title="toy2026 Table 1", columns=["Row", "Column", "BLEU", "p"], rows=rows,
                 footer=[f"scale: {facts['scale']}", f"test: {facts['significance']['test']}"])
'''


def test_a_toy_paper_is_added_by_new_files_only(tmp_path):
    paper = {
        "corpora": {"t-copy": {"src": "src", "tgt": "tgt", "source": "toy-copy", "joint_bpe": True, **TOY_CORPUS}},
        "models": {"t-small": dict(TOY_MODEL)},
        "recipes": {"t-recipe": dict(TOY_RECIPE)},
        "experiments": {"t-a": {"corpus": "t-copy", "model": "t-small", "recipe": "t-recipe"},
                        "t-b": {"corpus": "t-copy", "model": "t-small", "recipe": "t-recipe",
                                "options": {"dropout": 0.1}}},
        "tables": {"toy2026-table1": {"cells": {"a": {"copy": "t-a"}, "b": {"copy": "t-b"}},
                                      "values": {"bleu": "sacrebleu"},
                                      "significance": {"value": "bleu", "baselines": {"b": "a"},
                                                       "test": "approximate_randomization"}}},
    }
    ws = make_workspace(tmp_path / "ws", papers={"toy2026": paper})
    package = ws / "pipeline/papers/toy2026"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent(TOY_PAPER_LAYOUT), encoding="utf-8")
    run(["snakemake", *PROFILE, "results/toy2026/table1.tsv"], ws)
    rows = read_table(ws / "results/toy2026/table1.tsv")
    assert [r["Row"] for r in rows] == ["a", "b"]
    score = json.loads((ws / "artifacts/tiny/eval/t-b/test.sacrebleu.json").read_text())["score"]
    assert rows[1]["BLEU"] == f"{score:.2f}"
    sig = json.loads((ws / "artifacts/tiny/tables/toy2026-table1/significance/t-b.test.json").read_text())
    assert sig["test"] == "approximate_randomization" and rows[1]["p"] == f"{sig['p_value']:.3f}"
