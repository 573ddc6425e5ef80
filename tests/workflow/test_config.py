"""params.yaml and params/<paper>.yaml validation: every error names the file, the key and what was expected."""
import copy
from dataclasses import replace

import pytest

from pipeline.config import load_params, parse_params
from pipeline.errors import PipelineError
from workspace import ROOT, TOY_HAO2019, TOY_SHARED, project_params


def parse(shared, papers, scale=None):
    return parse_params(shared, source="params.yaml", scale=scale,
                        papers={name: (f"params/{name}.yaml", data) for name, data in papers.items()})


def test_project_params_resolve_per_scale():
    tiny = load_params(ROOT / "params.yaml")
    paper = load_params(ROOT / "params.yaml", scale="paper")
    assert tiny.scale == "tiny" and tiny.root == "artifacts/tiny" and paper.root == "artifacts/paper"
    assert set(tiny.files) >= {"hao2019", "zeng2021"}
    assert paper.models["transformer-base"].spec["d_model"] == 512
    assert paper.models["transformer-big"].spec["ffn_dim"] == 4096
    assert tiny.models["transformer-base"].spec["d_model"] == 64
    assert paper.corpora["en-de"].source == "wmt14-en-de" and tiny.corpora["en-de"].source == "l10n-en-de"
    assert paper.recipes["base"].resources.gpu == 8 and tiny.recipes["base"].resources.gpu == 0
    assert tiny.experiments["zhen-base-biarn"].init == "zhen-base"
    assert tiny.tables["hao2019-table3"].target == "results/tiny/hao2019/table3.tsv"
    assert tiny.tables["hao2019-length"].target == "results/tiny/hao2019/length.tsv"
    # zeng2021's grid: direction x system, each system merging both entries
    assert paper.decoding_of("z-zh-en-transf")["length_penalty"] == 1.0  # zeng2021 3.1: 1.0 for Zh-En
    assert paper.decoding_of("z-en-de-transf")["length_penalty"] == 0.6
    assert paper.model_spec("z-en-fr-ran-all")["ran_attention_dropout"] == 0.0
    assert paper.model_spec("z-en-fr-ran-all")["enc_self_attn"] == "ran"
    assert paper.model_spec("z-zh-en-ran-e")["share_embeddings"] is False
    assert paper.corpora["z-en-de"].joint_vocab and not paper.corpora["z-zh-en"].joint_vocab
    table1 = paper.tables["zeng2021-table1"]
    assert table1.cells["ran-all"]["en-de"] == "z-en-de-ran-all" and len(table1.systems()) == 60
    assert table1.baseline("ran-all", "zh-en") == "z-zh-en-transf"
    assert paper.tables["zeng2021-fig3"].analyses["speed"]["sentences"] == 3003
    assert paper.tables["zeng2021-fig6"].analyses["patterns"]["size"] == 80
    # DVC tracks exactly the grid entries a system is built from
    assert ("params/zeng2021.yaml", "grids.z.systems.ran-all") in paper.experiments["z-en-de-ran-all"].params_keys
    assert ("params/zeng2021.yaml", "grids.z.directions.en-de") in paper.experiments["z-en-de-ran-all"].params_keys


def test_scores_of_a_system_follow_its_tables():
    p = load_params(ROOT / "params.yaml")
    assert p.scores_of("z-en-de-transf") == [("test", "multi-bleu"), ("test", "sacrebleu")]
    assert ("test", "rouge") in p.scores_of("z-summ-transf")
    assert p.scores_of("zhen-base") == [("test", "sacrebleu")]


@pytest.mark.parametrize("mutate, where, expected", [
    (lambda s, p: p["hao2019"]["experiments"]["zhen-base"].update(model="tyo"),
     "params/hao2019.yaml: experiments.zhen-base.model", "did you mean toy"),
    (lambda s, p: p["hao2019"]["recipes"]["toy"].update(warmpu=10), "params/hao2019.yaml: recipes.toy.warmpu",
     "unknown"),
    (lambda s, p: p["hao2019"]["recipes"]["toy"].update(clip_nrom=1.0), "params/hao2019.yaml: recipes.toy.clip_nrom",
     "unknown key; did you mean 'clip_norm'? (expected one of: adadelta_eps, "),
    (lambda s, p: s.update(sclae="tiny"), "params.yaml: sclae", "did you mean 'scale'"),
    (lambda s, p: s["decoding"].update(length="short"), "params.yaml: decoding.length", "penalty, normalize, none"),
    (lambda s, p: s.update(precision="half"), "params.yaml: precision", "auto, float32, bfloat16"),
    (lambda s, p: s["significance"].update(test="coin_flip"), "params.yaml: significance.test",
     "unknown significance test"),
    (lambda s, p: p["hao2019"]["corpora"]["zh-en"].update(bpe_merges="many"),
     "params/hao2019.yaml: corpora.zh-en.bpe_merges", "expected int"),
    (lambda s, p: p["hao2019"]["corpora"]["zh-en"].update(max_len={"tiny": 5}),
     "params/hao2019.yaml: corpora.zh-en.max_len.paper", "missing required key"),
    (lambda s, p: p["hao2019"]["corpora"]["en-de"].update(source="wmt99-en-de"),
     "params/hao2019.yaml: corpora.en-de.source", "unknown registry corpus"),
    (lambda s, p: p["hao2019"]["experiments"]["zhen-base-biarn"].update(init="zhen-nope"),
     "params/hao2019.yaml: experiments.zhen-base-biarn.init", "unknown experiment"),
    (lambda s, p: p["hao2019"]["models"]["toy"].update(d_modle=64), "params/hao2019.yaml: models.toy", "d_modle"),
    (lambda s, p: p["hao2019"]["tables"]["hao2019-table3"]["cells"]["base"].update({"zh-en": "zhen-bse"}),
     "params/hao2019.yaml: tables.hao2019-table3.cells.base.zh-en", "unknown system"),
    (lambda s, p: p["hao2019"]["tables"]["hao2019-table3"]["values"].update(bleu="sacrebelu"),
     "params/hao2019.yaml: tables.hao2019-table3.values.bleu", "unknown value source"),
    (lambda s, p: p["hao2019"]["tables"]["hao2019-table3"]["values"].update(params="train.n_parmas"),
     "params/hao2019.yaml: tables.hao2019-table3.values.params", "unknown run summary field"),
    (lambda s, p: p["hao2019"]["tables"]["hao2019-table3"]["significance"].update(value="params"),
     "params/hao2019.yaml: tables.hao2019-table3.significance.value", "scored by a metric"),
    (lambda s, p: p["hao2019"]["tables"]["hao2019-table3"]["significance"]["baselines"].update({"base": "bsae"}),
     "params/hao2019.yaml: tables.hao2019-table3.significance.baselines.base", "unknown table row"),
    (lambda s, p: p["hao2019"]["tables"]["hao2019-table3"].update(analyses={"sped": {}}),
     "params/hao2019.yaml: tables.hao2019-table3.analyses.sped", "unknown analysis"),
    (lambda s, p: p["hao2019"]["tables"]["hao2019-table3"].update(analyses={"speed": {"beams": [4, 0]}}),
     "params/hao2019.yaml: tables.hao2019-table3.analyses.speed", "positive integers"),
    (lambda s, p: p["hao2019"]["tables"]["hao2019-table3"].update(test_sets="test-nt99"),
     "params/hao2019.yaml: tables.hao2019-table3.test_sets", "unknown test set 'test-nt99'"),
    (lambda s, p: p["hao2019"]["tables"].update({"table9": p["hao2019"]["tables"]["hao2019-table3"]}),
     "params/hao2019.yaml: tables.table9", "expected a name 'hao2019-<file stem>'"),
    (lambda s, p: p["hao2019"]["experiments"]["zhen-base"].update(decoding={"length_penalty": "long"}),
     "params/hao2019.yaml: experiments.zhen-base.decoding.length_penalty", "expected float"),
    (lambda s, p: p["hao2019"]["experiments"]["zhen-base"].update(decoding={"length_penalty": -1}),
     "params/hao2019.yaml: experiments.zhen-base.decoding.length_penalty",
     "length_penalty: expected a finite number >= 0 (GNMT's alpha; 0: no penalty), got -1.0"),
    (lambda s, p: s.update(cpu_math="fast"), "params.yaml: cpu_math", "expected one of portable, portable-fixed, native, got 'fast'"),
    (lambda s, p: s.update(max_job_minutes=0), "params.yaml: max_job_minutes",
     "expected a positive number of minutes, got 0"),
    (lambda s, p: s.update(gpu_model="B200"), "params.yaml: gpu_model",
     "expected one of H200, H100, A100, V100 (the GPU models of benchmarks/results/gpu_step_times.json), got 'B200'"),
    (lambda s, p: s["decoding"].update(length_penalty=float("inf")), "params.yaml: decoding.length_penalty",
     "expected a finite number >= 0 (GNMT's alpha; 0: no penalty), got inf"),
    (lambda s, p: s["decoding"].update(max_len_a=-0.5), "params.yaml: decoding.max_len_a",
     "max_len_a: expected a finite number >= 0 (the output length limit is max_len_a * source length + max_len_b), "
     "got -0.5"),
    (lambda s, p: p["hao2019"]["experiments"]["zhen-base"].update(decoding={"max_len_b": -1}),
     "params/hao2019.yaml: experiments.zhen-base.decoding.max_len_b",
     "max_len_b: expected an integer >= 0 (the output length limit is max_len_a * source length + max_len_b), got -1"),
    (lambda s, p: p.update(other={"experiments": {"zhen-base": p["hao2019"]["experiments"]["zhen-base"]}}),
     "params/other.yaml: experiments.zhen-base", "already defined at params/hao2019.yaml"),
])
def test_bad_params_name_the_file_and_key(mutate, where, expected):
    shared, papers = copy.deepcopy(TOY_SHARED), {"hao2019": copy.deepcopy(TOY_HAO2019)}
    mutate(shared, papers)
    with pytest.raises(PipelineError) as err:
        parse(shared, papers)
    message = str(err.value)
    assert where in message
    assert expected in message


def test_recipe_precision_defaults_to_the_shared_one_per_scale():
    tiny = load_params(ROOT / "params.yaml")
    paper = load_params(ROOT / "params.yaml", scale="paper")
    assert tiny.recipes["base"].train["precision"] == "float32"
    assert paper.recipes["base"].train["precision"] == "auto"
    papers = {"hao2019": copy.deepcopy(TOY_HAO2019)}
    papers["hao2019"]["recipes"]["toy"]["precision"] = "bfloat16"  # a recipe's own setting wins
    assert parse({**TOY_SHARED, "precision": "float32"}, papers).recipes["toy"].train["precision"] == "bfloat16"


def test_cpu_math_is_portable_at_tiny_scale_only():
    assert load_params(ROOT / "params.yaml").cpu_math == "portable-fixed"  # tables rebuild bit for bit on any x86-64 CPU
    assert load_params(ROOT / "params.yaml", scale="paper").cpu_math == "native"
    assert parse({k: v for k, v in TOY_SHARED.items() if k != "cpu_math"}, {}).cpu_math == "native"


def test_a_training_run_longer_than_a_job_takes_several_time_slices():
    paper = load_params(ROOT / "params.yaml", scale="paper")
    assert paper.max_job_minutes == 2880 and paper.gpu_model == "H200"    # two days: what most partitions accept
    assert paper.train_slices("rn-en-de-rnmt") == 1 and paper.train_slices("ende-base") == 1   # on an H200
    on_v100 = replace(paper, gpu_model="V100")   # 8x the H200's time: zhang2018's RNN runs take 8 jobs of 2 days
    h200 = paper.train_minutes("rn-en-de-rnmt")   # 47.6 h: one job of under two days
    assert h200 <= 2880 and 8 * h200 - 8 < on_v100.train_minutes("rn-en-de-rnmt") <= 8 * h200   # rounded up
    assert on_v100.train_slices("rn-en-de-rnmt") == 8 and on_v100.train_slices("ende-base") == 1
    assert load_params(ROOT / "params.yaml").train_slices("ende-base") == 1
    papers = {"hao2019": copy.deepcopy(TOY_HAO2019)}   # a run without GPUs: its recipe's runtime
    papers["hao2019"]["recipes"]["toy"]["resources"]["runtime"] = 61
    toy = parse({**TOY_SHARED, "max_job_minutes": 20}, papers)
    assert toy.train_minutes("zhen-base") == 61 and toy.train_slices("zhen-base") == 4   # 61 = 20+20+20+1


def test_wrong_scale_is_named():
    with pytest.raises(PipelineError, match="scale: expected one of tiny, smoke, paper, got 'huge'"):
        parse({**TOY_SHARED, "scale": "huge"}, {})


def test_invalid_yaml_names_the_file(tmp_path):
    (tmp_path / "params").mkdir()
    (tmp_path / "params.yaml").write_text("scale: tiny\n", encoding="utf-8")
    bad = tmp_path / "params" / "broken.yaml"
    bad.write_text("corpora: [tiny\n", encoding="utf-8")
    with pytest.raises(PipelineError, match=f"{bad}: not valid YAML"):
        load_params(tmp_path / "params.yaml")


def test_toy_params_are_valid():
    params = parse(copy.deepcopy(TOY_SHARED), {"hao2019": copy.deepcopy(TOY_HAO2019)})
    assert params.corpora["en-de"].source == "toy-copy"
    assert params.tables["hao2019-table3"].systems() == sorted(
        ["zhen-base", "ende-base", "zhen-base-biarn", "ende-base-biarn"])
    assert params.tables["hao2019-table3"].baseline("base+biarn", "en-de") == "ende-base"


def test_project_params_are_checked_without_torch():
    """Validating params must stay cheap: Snakemake does it at every start (no torch import)."""
    import subprocess
    import sys
    code = ("import sys; from pipeline.config import load_params; load_params('params.yaml'); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_every_project_value_is_tracked_by_a_grid_or_experiment_key():
    shared, papers = project_params()
    p = parse(shared, papers)
    for name, exp in p.experiments.items():
        files = {f for f, _ in exp.params_keys}
        assert files <= {f"params/{paper}.yaml" for paper in papers}, name
        keys = [k for _, k in exp.params_keys]
        assert f"models.{exp.model}" in keys and f"recipes.{exp.recipe}" in keys, name
