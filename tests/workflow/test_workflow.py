"""End to end on toy corpora: Snakemake with the local executor builds hao2019 Table 3 from nothing, every cell
traced to its score file; `make run`'s script rebuilds and compares; a toy paper is added by new files only."""
import json
import re

import pytest
import yaml

from workspace import (TABLE, TOY_PAPER_STAGES, TOY_RECIPE, TOY_SHARED, add_toy_paper, make_workspace, read_table, run,
                       stage_texts)

pytestmark = pytest.mark.slow
PROFILE = ["--profile", "workflows/profiles/local"]
MARKS = r"[⇑↑]"


def test_local_snakemake_builds_table_every_cell_traced_then_nothing_to_do(tmp_path):
    ws = make_workspace(tmp_path / "ws", shared={**TOY_SHARED, "cpu_math": "portable-fixed"})  # the project's tiny default
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
    assert re.fullmatch(r"torch \S+, ATen AVX2, GEMM fixed-order FMA, MKL_CBWR=COMPATIBLE, oneDNN <= AVX2, 1 thread",
                        summary["cpu_math"])
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


SHARED = ["Snakefile", "params.yaml", "params", "pipeline", "workflows"]


def test_a_toy_paper_is_added_by_new_files_only(tmp_path):
    """A paper with its own metric, significance test and analysis kind: new files, no shared file edited."""
    ws = make_workspace(tmp_path / "ws", git=True)
    run(["git", "add", "-A"], ws)
    run(["git", "commit", "-qm", "the project"], ws)
    before = stage_texts(ws / "dvc.yaml")
    add_toy_paper(ws)
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

    # dvc.yaml, generated, names the toy paper's code among its new stages' dependencies and runs its analysis rule;
    # every stage it had before is byte-identical
    run(["python", "-m", "pipeline", "dvc-yaml"], ws)
    after = stage_texts(ws / "dvc.yaml")
    assert {name: after[name] for name in before} == before
    assert set(after) - set(before) == TOY_PAPER_STAGES
    stages = yaml.safe_load((ws / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    assert "pipeline/papers/toy2026/__init__.py" in stages["table-toy2026-table1"]["do"]["deps"]
    assert "pipeline/papers/toy2026/__init__.py" in stages["eval-t-b"]["do"]["deps"]
    assert "--allowed-rules analysis_hyp_words figure significance table -- " in stages["table-toy2026-table1"]["do"]["cmd"]


def test_portable_jobs_without_the_fixed_order_products_train_and_decode_bitwise_again(tmp_path):
    """cpu_math: portable (MKL's COMPATIBLE branch takes the products; no compiler needed) reaches every model job
    through the Snakefile's environment: the trainer records it in its code path (the run key and the tables'
    footers), and a forced retraining and decode give the same bytes."""
    from pipeline.paths import Paths

    ws = make_workspace(tmp_path / "ws", shared={**TOY_SHARED, "cpu_math": "portable"})
    paths = Paths("artifacts/tiny")
    model, hyp = paths.model("ende-base"), paths.hyp("ende-base", "test")
    run(["snakemake", *PROFILE, "--", model, hyp], ws)
    summary = json.loads((ws / model).with_name("train.json").read_text())
    assert re.fullmatch(r"torch \S+, ATen AVX2, MKL_CBWR=COMPATIBLE, oneDNN <= AVX2, 1 thread", summary["cpu_math"])
    first = (ws / model).read_bytes(), (ws / hyp).read_bytes()
    run(["snakemake", *PROFILE, "--forcerun", model, "--", hyp], ws)
    assert json.loads((ws / model).with_name("train.json").read_text())["resumed_from_step"] == 0
    assert ((ws / model).read_bytes(), (ws / hyp).read_bytes()) == first
