"""learn-bpe's paper-scale request covers what benchmarks/learn_bpe_scaling.py extrapolates for the largest corpora
(docs/performance.md (l)): one thread, the 40M-pair memory estimate and its time bound with 40,000 merges."""
import json

from pipeline.steps import load_steps
from workspace import ROOT


def test_learn_bpe_asks_for_the_measured_paper_scale_resources():
    fit = json.loads((ROOT / "benchmarks/results/learn_bpe_scaling.json").read_text())["fit"]
    largest = max(fit["extrapolated"], key=lambda row: row["pairs"])
    assert largest["pairs"] == 40_000_000 and largest["merges"] == 32_000
    paper = load_steps()["learn-bpe"].resources["paper"]
    assert paper.threads == 1 and paper.gpu == 0  # subword-nmt counts and merges in one process
    assert paper.mem_mb >= 1.25 * largest["peak_mb"]
    bound = largest["counting_minutes"] + largest["merge_minutes_linear_bound"] * 40_000 / 32_000  # zeng2021 En-Fr
    assert paper.runtime >= 1.5 * bound
