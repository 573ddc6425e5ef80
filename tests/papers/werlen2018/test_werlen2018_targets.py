"""Every werlen2018 table and figure dry-runs at paper scale with the project's params; Tables 3 and 5 and Figure 2
build on toy corpora, and Table 5 tallies blind sheets filled in through their keys."""
import json
import re

import pytest
import yaml

from workspace import make_workspace, paper_targets, project_params, read_table, run, toy_project_params

pytestmark = pytest.mark.slow
PROFILE = ["--profile", "workflows/profiles/local"]
DIRECTIONS = ("en-zh", "es-en", "en-de")


def test_every_werlen2018_target_dry_runs_at_paper_scale(tmp_path):
    shared, papers = project_params()
    ws = make_workspace(tmp_path / "ws", shared, papers)
    targets = paper_targets("werlen2018", "paper")
    assert len(targets) == 9  # Tables 1-6, Figures 2-4
    dry = run(["snakemake", *PROFILE, "-n", "--config", "scale=paper", "--", *targets], ws)
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", dry.stdout, flags=re.M))
    # 5 systems x 3 directions + 2 content+scope systems (Table 4) = 17 NMT models, and the 3 language models
    assert int(jobs["train"]) == 20
    # Table 3: mean and self-attentive against the baseline on each of NT14, NT15, NT16
    assert int(jobs["significance"]) == 6
    assert int(jobs["analysis_ranking"]) == 3  # Table 5: one blind sheet per direction (PER_COLUMN)
    assert int(jobs["analysis_perplexity"]) == 3  # Table 6: the three language models
    # Figures 2 and 3 each analyse memory, self-rnn and self-attentive, Figure 4 self-attentive: 3 + 3 + 1. Each
    # figure writes to its own artifacts/<scale>/tables/<figure>/previous_words/, so the same settings run per figure.
    assert int(jobs["analysis_previous_words"]) == 7
    # En-Zh, Es-En: 6 systems on test; En-De: 5 systems on NT14 and NT15 (Table 2), 3 of them on NT16 (Table 3)
    assert int(jobs["translate"]) == 6 + 6 + 5 * 2 + 3
    assert int(jobs["table"]) == 6 and int(jobs["figure"]) == 3
    assert "artifacts/paper/models/w-en-zh-content-scope/model.pt" in dry.stdout
    assert "artifacts/paper/models/w-lm-self-attentive/model.pt" in dry.stdout
    for text in ('"optimizer": "adadelta"', '"batch_unit": "sentences"', '"batch_size": 80', '"adadelta_rho": 0.95',
                 '"adadelta_eps": 1e-06', '"clip_norm": 1.0', '"max_steps": 300000', '"embed": 500',
                 '"hidden": 1024', '"dropout": 0.5', '"weight_init_scale": 0.01', '"summary_score": "content_scope"',
                 '"state_attention": "memory"', '"beam": 5, "length": "normalize"', '"test": "paired_t_test"',
                 '"batch_size": 50, "sentences": 1000000', '"seed": 1, "sentences": 50, "sheets": ""',
                 '"max_distance": 50, "parses": "", "sentence": 1, "sentences": 400, "trees": 3'):
        assert text in dry.stdout, text
    assert '"filled": []' in dry.stdout and '"filled": ["' not in dry.stdout  # no filled-in sheets yet
    # the local profile: plain processes on this machine (one GPU per model: no torchrun), no Slurm (the train jobs'
    # slurm_extra, Slurm's warning before a time limit, is a resource the local profile ignores)
    assert "torchrun" not in dry.stdout and "slurm" not in dry.stdout.lower().replace("slurm_extra", "")
    assert len(re.findall(r"OMP_NUM_THREADS=\d+ PIPELINE_GPUS=1 python -m pipeline train --spec", dry.stdout)) == 20


# ------------------------------------------------------------------ toy build
TOY_TARGETS = [f"results/tiny/werlen2018/{name}.tsv" for name in ("table3", "table5", "fig2")]


def _toy_params() -> tuple[dict, dict]:
    """The project's werlen2018 params on toy corpora (toy_project_params), smaller still: 6 sentences to rank,
    previous-word attention over 20 sentences and 5 positions."""
    shared, papers = toy_project_params()
    werlen = papers["werlen2018"]
    for model in werlen["models"].values():
        model.update(embed=32, hidden=64)
    for recipe in werlen["recipes"].values():
        recipe.update(max_steps=40, checkpoint_every=20, valid_every=20)
    werlen["tables"]["werlen2018-table5"]["analyses"]["ranking"]["sentences"] = 6
    werlen["figures"]["werlen2018-fig2"]["analyses"]["previous_words"] = {
        "sentences": 20, "sentence": 1, "trees": 2, "max_distance": 5}
    return shared, {"werlen2018": werlen}


# The judge, a rule on (item number, system): ranks of (baseline, mean, self-attentive). By hand, over 6 items:
#   En-Zh: items 1, 4 (3, 2, 1); items 2, 5 (1, 1, 2); items 3, 6 (2, 2, 2):
#     mean vs. baseline 2 better, 4 equal -> 33 67 0; self-attentive vs. baseline 2 / 2 / 2 -> 33 33 33;
#     self-attentive vs. mean 2 / 2 / 2 -> 33 33 33
#   Es-En: all equal -> 0 100 0 everywhere
#   En-De: always (2, 2, 1) -> mean vs. baseline 0 100 0; self-attentive vs. either 100 0 0
SYSTEMS = ("baseline", "mean", "self-attentive")
JUDGES = {"en-zh": lambda item: [(2, 2, 2), (3, 2, 1), (1, 1, 2)][item % 3],
          "es-en": lambda item: (1, 1, 1),
          "en-de": lambda item: (2, 2, 1)}
EXPECTED5 = {"en-zh": ["33 67 0", "33 33 33", "33 33 33"], "es-en": ["0 100 0"] * 3,
             "en-de": ["0 100 0", "100 0 0", "100 0 0"]}


def fill(sheet_text: str, key: dict, judge) -> str:
    """The blind sheet with its rank column filled by `judge` through the key (letter -> system)."""
    out = []
    for line in sheet_text.splitlines():
        fields = line.split("\t")
        if not line.startswith("#") and fields[0] != "item":
            item, letter = int(fields[0]), fields[4]
            system = key["items"][str(item)]["order"]["ABC".index(letter)]
            fields[6] = str(judge(item)[SYSTEMS.index(system)])
            line = "\t".join(fields)
        out.append(line)
    return "\n".join(out) + "\n"


def test_tables_3_5_and_figure_2_build_on_toy_corpora(tmp_path):
    ws = make_workspace(tmp_path / "ws", *_toy_params())
    run(["snakemake", *PROFILE, "--", *TOY_TARGETS], ws, timeout=900)
    results, art = ws / "results/tiny/werlen2018", ws / "artifacts/tiny/tables"

    table3 = {row["Models"]: row for row in read_table(results / "table3.tsv")}
    ours = {}
    for label, row_id in (("NMT baseline", "baseline"), ("+ Mean residual connections*", "mean"),
                          ("+ Self-attentive residual connections**", "self-attentive")):
        for col in ("NT14", "NT15", "NT16"):
            number, mark = re.fullmatch(r"(\d+\.\d\d)(\*{0,2})", table3[label][f"{col} (ours)"]).groups()
            assert 0.0 <= float(number) <= 100.0
            ours[row_id, col] = (float(number), mark)
    assert ours["baseline", "NT14"][1] == ""  # the baseline itself is never marked
    for (row_id, col), (value, mark) in ours.items():
        if mark:  # marked only where ours beats our baseline
            assert value > ours["baseline", col][0], (row_id, col)
    assert table3["Winning WMT (UEDIN-SYNTAX 2014, 2015; UEDIN-NMT 2016)"]["NT16 (paper)"] == "34.2"
    # every test set's significance compares that test set's scores (delta = ours - baseline there)
    given = json.loads((art / "werlen2018-table3/cells.json").read_text(encoding="utf-8"))["cells"]
    for row_id in ("mean", "self-attentive"):
        for col in ("nt14", "nt15", "nt16"):
            cell = given[row_id][col]
            assert cell["delta"] == pytest.approx(cell["bleu"] - cell["baseline"]["bleu"], abs=1e-9), (row_id, col)
            assert 0.0 <= cell["p_value"] <= 1.0

    fig2 = read_table(results / "fig2.tsv")
    assert [row["relative position"] for row in fig2] == ["-1", "-2", "-3", "-4", "-5"]
    for row in fig2:
        for model in ("Memory RNN", "Self-attentive RNN", "Self-attentive residual"):
            assert 0.0 <= float(row[f"{model} (ours)"]) <= 100.0
    assert (results / "fig2.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # Table 5 before any sheet: paper only, the footer names the sheets to fill
    table5_file = results / "table5.tsv"
    assert all(row[f"{d} (ours)"] == "" for row in read_table(table5_file) for d in ("En-Zh", "Es-En", "En-De"))
    assert "# En-De (ours): not yet ranked; a native speaker fills in the blind sheet " \
           "artifacts/tiny/tables/werlen2018-table5/ranking/en-de.sheet.tsv (6 sentences" in table5_file.read_text()

    sheets = ws / "filled-sheets"
    sheets.mkdir()
    for d in DIRECTIONS:
        sheet = (art / f"werlen2018-table5/ranking/{d}.sheet.tsv").read_text(encoding="utf-8")
        key = json.loads((art / f"werlen2018-table5/ranking/{d}.key.json").read_text(encoding="utf-8"))
        assert not any(system in sheet for system in SYSTEMS)  # blind
        assert sorted(map(int, key["items"])) == [1, 2, 3, 4, 5, 6]
        (sheets / f"{d}.tsv").write_text(fill(sheet, key, JUDGES[d]), encoding="utf-8")
    params = ws / "params/werlen2018.yaml"
    werlen = yaml.safe_load(params.read_text(encoding="utf-8"))
    werlen["tables"]["werlen2018-table5"]["analyses"]["ranking"]["sheets"] = "filled-sheets"
    params.write_text(yaml.safe_dump(werlen, sort_keys=False, allow_unicode=True), encoding="utf-8")
    rerun = run(["snakemake", *PROFILE, "--", "results/tiny/werlen2018/table5.tsv"], ws, timeout=300)
    assert '"filled": ["filled-sheets/en-zh.tsv"]' in rerun.stdout + rerun.stderr
    assert not re.search(r"rule (train|translate):", rerun.stdout + rerun.stderr)  # only the tally and the table

    table5 = read_table(table5_file)
    assert [row["System"] for row in table5] == [
        "Mean residual connections vs. NMT baseline", "Self-attentive residual connections vs. NMT baseline",
        "Self-attentive residual connections vs. Mean residual connections"]
    for d, label in zip(DIRECTIONS, ("En-Zh", "Es-En", "En-De")):
        assert [row[f"{label} (ours)"] for row in table5] == EXPECTED5[d], d
    assert [row["En-De (paper)"] for row in table5] == ["28 58 24", "32 54 14", "32 56 12"]
    assert "# En-Zh (ours): 6 ranked items from 1 sheet(s): filled-sheets/en-zh.tsv" in table5_file.read_text()
    tally = json.loads((art / "werlen2018-table5/ranking/en-zh.json").read_text(encoding="utf-8"))["tally"]
    assert [(p["first"], p["second"], p["better"], p["equal"], p["worse"]) for p in tally["pairs"]] == [
        ("baseline", "mean", 0, 4, 2), ("baseline", "self-attentive", 2, 2, 2), ("mean", "self-attentive", 2, 2, 2)]
