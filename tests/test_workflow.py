"""End to end on a toy corpus: Snakemake with the local executor builds hao2019 Table 3 from nothing."""
import json
import re

import pytest

from workspace import TABLE, make_workspace, read_table, run

pytestmark = pytest.mark.slow
PROFILE = ["--profile", "workflows/profiles/local"]


def ours(rows: list[dict], column: str) -> list[str]:
    return [row[column] for row in rows if row[column]]


def test_local_snakemake_builds_table_then_has_nothing_to_do(tmp_path):
    ws = make_workspace(tmp_path / "ws")
    run(["snakemake", *PROFILE, TABLE], ws)

    rows = read_table(ws / TABLE)
    for pair in ("Zh-En", "En-De"):
        bleu = ours(rows, f"{pair} BLEU (ours)")
        assert len(bleu) == 2, rows                        # base and base+biarn filled, big rows empty
        for value in bleu:
            assert 0.0 <= float(re.sub(r"[⇑↑]", "", value)) <= 100.0
        params = ours(rows, f"{pair} #Para. (ours)")
        assert len(params) == 2 and params[1].startswith("+")  # the proposed row: added parameters
    # the paper's numbers stay beside ours
    assert any(row["En-De BLEU (paper)"] == "28.21⇑" for row in rows)

    # the table is built from score files: the BLEU cell is the score JSON's number
    score = json.loads((ws / "artifacts/tiny/eval/ende-base/test.json").read_text())
    assert f"{score['score']:.2f}" == re.sub(r"[⇑↑]", "", ours(rows, "En-De BLEU (ours)")[0])
    assert "case:mixed" in score["signature"]
    sig = json.loads((ws / "artifacts/tiny/tables/hao2019-table3/significance/ende-base-biarn.json").read_text())
    assert 0.0 <= sig["p_value"] <= 1.0
    footer = (ws / TABLE).read_text().splitlines()
    assert any(line.startswith("#") and "scale: tiny" in line for line in footer)
    assert (ws / "results/hao2019/table3.md").read_text().count("|") > 20

    # a second run has nothing to do
    dry = run(["snakemake", *PROFILE, "-n", TABLE], ws)
    assert "Nothing to be done" in dry.stdout + dry.stderr

    # editing one experiment reruns that system and what depends on it, nothing else
    dry = run(["snakemake", *PROFILE, "-n", "--config",
               "experiments={'ende-base': {'corpus': 'en-de', 'model': 'toy', 'recipe': 'toy-finetune'}}", "--", TABLE], ws)
    jobs = re.findall(r"exp=([\w-]+)", dry.stdout)
    assert "ende-base" in jobs and "ende-base-biarn" in jobs
    assert "zhen-base" not in jobs and "zhen-base-biarn" not in jobs
