"""The README's parameter-count sentence holds for every model it names: `python -m pipeline describe` at paper scale
against the counts the papers print (their reported modules)."""
import re

import pytest

from pipeline.cli import main
from pipeline.papers.werlen2018.reported import WERLEN2018_TABLE1, WERLEN2018_TABLE6, WERLEN2018_TABLE6_PARAMS
from pipeline.papers.zhang2018.reported import ZHANG2018_EXTRA_PARAMS
from workspace import ROOT

CLAIM = "At paper scale `python -m pipeline describe` gives the papers' parameter counts within 1%"
TABLE1 = {row.row_id: row.cells["es-en"].params_millions * 1e6 for row in WERLEN2018_TABLE1.rows
          if row.cells["es-en"].params}
TABLE6 = {row_id: float(WERLEN2018_TABLE6_PARAMS[:-1]) * 1e6 for row_id, *_, ours in WERLEN2018_TABLE6 if ours}
LM_SYSTEMS = {"lstm": "w-lm-lstm", "mean": "w-lm-mean", "self-attentive": "w-lm-self-attentive"}
BEYOND_1_PERCENT = {"memory", "self-rnn"}  # one 1024 x 1024 matrix more (docs/werlen2018.md)


@pytest.fixture(scope="module")
def paragraph():
    """The README's paragraph that makes the claim."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert CLAIM in text
    return " ".join(text.split(CLAIM, 1)[1].split("\n\n", 1)[0].split())


def describe(capsys, experiment: str) -> int:
    """describe's parameter count for the project's params at paper scale."""
    assert main(["describe", "--params", str(ROOT / "params.yaml"), "--scale", "paper", experiment]) == 0
    return int(re.search(r"parameters: ([\d,]+) with", capsys.readouterr().out)[1].replace(",", ""))


def test_werlen2018_table6_language_models_are_47m_within_1_percent(capsys, paragraph):
    assert "Table 6 language models (47M)" in paragraph
    counts = {row: describe(capsys, LM_SYSTEMS[row]) for row in TABLE6}
    assert counts == {"lstm": 47_076_400, "mean": 46_616_824, "self-attentive": 46_705_032}
    assert all(abs(counts[row] / TABLE6[row] - 1) < 0.01 for row in TABLE6)


def test_werlen2018_table1_systems_within_1_percent_but_the_two_the_readme_names(capsys, paragraph):
    assert "werlen2018's Table 1 systems at Es-En's 50K vocabularies" in paragraph
    for row, paper in TABLE1.items():
        off = describe(capsys, f"w-es-en-{row}") / paper - 1
        if row in BEYOND_1_PERCENT:
            assert f"(+{100 * off:.1f}%:" in paragraph and 0.01 <= off < 0.011, row
        else:
            assert abs(off) < 0.01, row
    en_zh = [describe(capsys, f"w-en-zh-{row}") / 1e6 for row in TABLE1]
    assert f"En-Zh's 25K vocabularies ({min(en_zh):.1f}-{max(en_zh):.1f}M;" in paragraph


def test_zhang2018_claims_no_count_only_rnmts_difference(capsys, paragraph):
    """zhang2018 prints no count for RNNsearch or RNNsearch*: the README claims none; RNMT's +4.1M is stated apart."""
    assert "RNNsearch and RNNsearch*" not in paragraph and "zhang2018 prints no counts" in paragraph
    added = describe(capsys, "rn-en-de-rnmt") - describe(capsys, "rn-en-de-rnnsearch-star")
    assert f"RNMT has {ZHANG2018_EXTRA_PARAMS[1:]} parameters more than RNNsearch*: ours {added / 1e6:.2f}M" \
        in paragraph
