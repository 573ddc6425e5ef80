"""params.yaml validation: every error names the key and what was expected."""
import copy

import pytest
import yaml

from pipeline.config import load_params, parse_params
from pipeline.errors import PipelineError
from workspace import ROOT, TOY_PARAMS


def project_params() -> dict:
    return yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))


def test_project_params_resolve_per_scale():
    tiny = load_params(ROOT / "params.yaml")
    paper = load_params(ROOT / "params.yaml", scale="paper")
    assert tiny.scale == "tiny" and tiny.root == "artifacts/tiny"
    assert paper.root == "artifacts/paper"
    assert paper.models["transformer-base"].options["d_model"] == 512
    assert paper.models["transformer-big"].options["ffn_dim"] == 4096
    assert tiny.models["transformer-base"].options["d_model"] == 64
    assert paper.corpora["en-de"].source == "wmt14-en-de" and tiny.corpora["en-de"].source == "l10n-en-de"
    assert paper.recipes["base"].resources.gpu == 8 and tiny.recipes["base"].resources.gpu == 0
    assert tiny.experiments["zhen-base-biarn"].init == "zhen-base"
    assert tiny.tables["hao2019-table3"].target == "results/hao2019/table3.tsv"
    assert paper.decoding_of("z-zhen-transf")["length_penalty"] == 1.0  # zeng2021 3.1: 1.0 for Zh-En
    assert paper.decoding_of("z-ende-transf")["length_penalty"] == 0.6
    assert paper.tables["zeng2021-fig3"].analyses == ("speed",) and paper.analysis["patterns_size"] == 80


@pytest.mark.parametrize("mutate, key, expected", [
    (lambda p: p["experiments"]["zhen-base"].update(model="transformer-bsae"),
     "experiments.zhen-base.model", "did you mean transformer-base"),
    (lambda p: p["recipes"]["base"].update(warmpu=10), "recipes.base.warmpu", "did you mean 'warmup'"),
    (lambda p: p.update(sclae="tiny"), "sclae", "did you mean 'scale'"),
    (lambda p: p["corpora"]["zh-en"].update(bpe_merges="many"), "corpora.zh-en.bpe_merges", "expected int"),
    (lambda p: p["corpora"]["zh-en"].update(max_len={"tiny": 5}), "corpora.zh-en.max_len.paper",
     "missing required key"),
    (lambda p: p["corpora"]["en-de"].update(source="wmt99-en-de"), "corpora.en-de.source",
     "unknown registry corpus"),
    (lambda p: p["finetunes"]["zhen-base-biarn"].update(init="zhen-nope"), "finetunes.zhen-base-biarn.init",
     "unknown experiment"),
    (lambda p: p["models"]["transformer-base"].update(arch="lstm"), "models.transformer-base.arch",
     "unknown architecture"),
    (lambda p: p["models"]["transformer-base"].update(d_modle=64), "models.transformer-base", "d_modle"),
    (lambda p: p["tables"]["hao2019-table3"]["cells"]["base"].update({"zh-en": "zhen-bse"}),
     "tables.hao2019-table3.cells.base.zh-en", "unknown experiment"),
    (lambda p: p["figures"]["zeng2021-fig3"].update(analyses=["sped"]), "figures.zeng2021-fig3.analyses",
     "expected a list of tokenized_bleu"),
    (lambda p: p["experiments"]["z-zhen-transf"].update(decoding={"length_penalty": "long"}),
     "experiments.z-zhen-transf.decoding.length_penalty", "expected float"),
    (lambda p: p["analysis"].update(speed_beams=[4, 0]), "analysis.speed_beams", "positive integers"),
])
def test_bad_params_name_the_key(mutate, key, expected):
    params = project_params()
    mutate(params)
    with pytest.raises(PipelineError) as err:
        parse_params(params, source="params.yaml")
    message = str(err.value)
    assert f"params.yaml: {key}" in message
    assert expected in message


def test_wrong_scale_is_named():
    with pytest.raises(PipelineError, match="scale: expected one of tiny, paper, got 'huge'"):
        parse_params({**project_params(), "scale": "huge"})


def test_invalid_yaml_names_the_file(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("scale: [tiny\n", encoding="utf-8")
    with pytest.raises(PipelineError, match=f"{path}: not valid YAML"):
        load_params(path)


def test_toy_params_are_valid():
    params = parse_params(copy.deepcopy(TOY_PARAMS))
    assert params.corpora["en-de"].source == "toy-copy"
    assert params.tables["hao2019-table3"].experiments() == sorted(
        ["zhen-base", "ende-base", "zhen-base-biarn", "ende-base-biarn"])
