"""Systems beyond trained ones in the params files: outside systems whose outputs the user supplies (`external:`),
combinations of other systems (`combinations:` rerank | gmbr | length), and an experiment's own seed."""
import copy

import pytest

from pipeline.config import parse_params
from pipeline.errors import PipelineError

CORPUS = {"src": "en", "tgt": "ja", "source": "l10n-en-ja", "max_len": 50, "bpe_merges": 0, "bpe_sides": [],
          "joint_bpe": False}
MODEL = {"encoder": "birnn", "decoder": "rnnsearch", "embed": 8, "hidden": 8}
RECIPE = {"lr": 0.001, "batch_size": 8, "max_steps": 10}
PAPER = {
    "corpora": {"c": CORPUS, "other": {**CORPUS, "source": "l10n-en-zh", "tgt": "zh"}},
    "models": {"m": MODEL},
    "recipes": {"r": RECIPE},
    "experiments": {"a": {"corpus": "c", "model": "m", "recipe": "r"},
                    "b": {"corpus": "c", "model": "m", "recipe": "r", "seed": 7},
                    "z": {"corpus": "other", "model": "m", "recipe": "r"}},
    "ensembles": {"ab": {"members": ["a", "b"]}},
    "external": {"smt": {"corpus": "c", "manual": "smt_outputs", "description": "a phrase-based system"}},
    "combinations": {
        "rerank": {"method": "rerank", "nbest": {"tiny": "a", "paper": "smt"}, "scorer": "ab"},
        "mbr": {"method": "gmbr", "systems": ["ab", "smt"], "settings": {"n": {"tiny": 4, "paper": 20}}},
        "switch": {"method": "length", "short": "ab", "long": "rerank", "settings": {"threshold": 40}},
    },
    "tables": {"p-table1": {"cells": {"r": {"test": "switch"}, "s": {"test": "smt"}}, "values": {"bleu": "multi-bleu"}}},
}


def parse(paper=None, scale="tiny"):
    return parse_params({"scale": scale}, papers={"p": ("params/p.yaml", copy.deepcopy(paper or PAPER))})


def test_combinations_resolve_per_scale_with_defaults_corpus_and_members():
    tiny, paper = parse(), parse(scale="paper")
    assert tiny.combinations["rerank"].inputs == {"nbest": "a", "scorer": "ab"}
    assert paper.combinations["rerank"].inputs == {"nbest": "smt", "scorer": "ab"}
    assert tiny.combinations["rerank"].settings == {"n": 20, "length": "normalize"}
    assert tiny.combinations["mbr"].settings == {"n": 4, "tune_split": "valid", "tune_sentences": 500,
                                                 "metric": "multi-bleu", "trials": 200, "seed": 1}
    assert paper.combinations["mbr"].settings["n"] == 20
    assert {name: c.corpus for name, c in tiny.combinations.items()} == {"rerank": "c", "mbr": "c", "switch": "c"}
    # the trained experiments behind each system, each once, in the order the inputs name them
    assert tiny.members("switch") == ["a", "b"] and tiny.members("smt") == []
    assert paper.members("rerank") == ["a", "b"] and tiny.members("ab") == ["a", "b"]
    assert set(tiny.systems) == {"a", "b", "z", "ab", "smt", "rerank", "mbr", "switch"}
    assert set(tiny.decoded) == {"a", "b", "z", "ab"}
    assert tiny.tables["p-table1"].systems() == ["smt", "switch"]


def test_an_experiment_may_have_its_own_seed():
    params = parse_params({"scale": "tiny", "seed": 3}, papers={"p": ("params/p.yaml", copy.deepcopy(PAPER))})
    assert params.seed_of("a") == 3 and params.seed_of("b") == 7


def _broken(path, value):
    paper = copy.deepcopy(PAPER)
    node = paper
    for key in path[:-1]:
        node = node[key]
    if value is None:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return paper


@pytest.mark.parametrize("path, value, words", [
    (("combinations", "rerank", "method"), "vote", ["combinations.rerank", "method", "rerank, gmbr, length"]),
    (("combinations", "rerank", "scorer"), "smt", ["combinations.rerank", "scorer", "smt is of kind external",
                                                  "experiment or ensemble"]),
    (("combinations", "rerank", "nbest"), "switch", ["nbest", "switch is of kind combination"]),
    (("combinations", "rerank", "nbest"), "nope", ["combinations.rerank", "nbest", "unknown system 'nope'"]),
    (("combinations", "mbr", "systems"), "ab", ["combinations.mbr", "systems", "non-empty list"]),
    (("combinations", "mbr", "settings"), {"metric": "bleu4"}, ["settings.metric", "bleu4"]),
    (("combinations", "mbr", "settings"), {"n": 0}, ["settings.n", ">= 1"]),
    (("combinations", "mbr", "settings"), {"beam": 4}, ["settings.beam", "unknown setting"]),
    (("combinations", "switch", "long"), "z", ["combinations.switch", "systems of one corpus", "c, other"]),
    (("combinations", "switch", "short"), None, ["combinations.switch", "short: missing"]),
    (("combinations", "switch", "extra"), 1, ["combinations.switch", "extra: unknown key"]),
    (("external", "smt", "manual"), None, ["external.smt.manual", "missing required key"]),
    (("experiments", "b", "seed"), "seven", ["experiments.b.seed", "expected int"]),
])
def test_errors_name_the_file_and_key(path, value, words):
    with pytest.raises(PipelineError) as info:
        parse(_broken(path, value))
    assert "params/p.yaml" in str(info.value)
    assert all(w in str(info.value) for w in words), str(info.value)


def test_a_cycle_of_combinations_is_named():
    paper = copy.deepcopy(PAPER)
    paper["combinations"]["loop"] = {"method": "length", "short": "switch", "long": "ab"}
    paper["combinations"]["switch"]["long"] = "loop"
    with pytest.raises(PipelineError) as info:
        parse(paper)
    assert "reads itself through" in str(info.value) and "no cycle" in str(info.value)


def test_a_system_name_is_claimed_once():
    paper = copy.deepcopy(PAPER)
    paper["external"]["a"] = paper["external"]["smt"]
    with pytest.raises(PipelineError) as info:
        parse(paper)
    assert "external.a" in str(info.value) and "already defined" in str(info.value)


def test_bpe_merges_may_be_zero_only_without_bpe():
    paper = _broken(("corpora", "c", "bpe_sides"), ["tgt"])
    with pytest.raises(PipelineError) as info:
        parse(paper)
    assert "corpora.c.bpe_merges" in str(info.value) and "0 only with bpe_sides: []" in str(info.value)
