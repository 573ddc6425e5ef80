"""The step registry is the one declaration of every step: the command line, the Snakemake rules and dvc.yaml's rule
lists agree with it, and a step's code dependencies are the code it runs."""
import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
import yaml

from pipeline.analyses import analyses
from pipeline.cli import build_parser
from pipeline.code_deps import code_files
from pipeline.errors import PipelineError
from pipeline.steps import STAGES, Resources, load_steps, register_step, rule_steps, step_files
from pipeline.steps.arguments import add_arguments, arg, from_namespace
from workspace import ROOT, env, every_model_spec

RULE = re.compile(r"^rule (\w+):[^\n]*\n((?:[ \t]+.*\n|\n)*)", re.M)
STEP_CALL = re.compile(r"python -m pipeline ([a-z][a-z-]*)")


def static_rules() -> dict[str, str | None]:
    """rule -> the step its shell command calls (None for a rule without one), from the rule files' text."""
    found = {}
    for path in [ROOT / "Snakefile", *sorted((ROOT / "workflows/rules").glob("*.smk"))]:
        for name, body in RULE.findall(path.read_text(encoding="utf-8")):
            calls = set(STEP_CALL.findall(body))
            assert len(calls) <= 1, (name, calls)
            found[name] = calls.pop() if calls else None
    return found


def test_every_rule_calls_the_step_that_declares_it():
    declared = rule_steps()
    for rule, step in static_rules().items():
        if step is not None:
            assert rule in declared and declared[rule].name == step, (rule, step)
    listed = subprocess.run([sys.executable, "-m", "snakemake", "--list-rules"], cwd=ROOT, env=env(),
                            capture_output=True, text=True, timeout=300, check=True).stdout.split()
    aggregates = {rule for rule, step in static_rules().items() if step is None}  # no command: all, report_pages
    assert set(listed) == set(declared) | aggregates
    assert {f"analysis_{kind}" for kind in analyses()} <= set(listed)  # generated from the registry


DOWNLOAD_CALL = re.compile(r"(?<!def )\bdownload\(")
# steps whose code imports a module that downloads, but that read what another step fetched
NO_DOWNLOAD = {"probing": "trains the probes on the tasks probing-data wrote"}


def test_every_rule_that_may_download_runs_on_the_submit_host():
    """Compute nodes need no internet: a step whose code reaches download() runs as a local rule."""
    from pathlib import Path as _Path

    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import OutputSettings, ResourceSettings

    callers = {str(path.relative_to(ROOT)) for path in (ROOT / "pipeline").rglob("*.py")
               if path.name != "download.py" and DOWNLOAD_CALL.search(path.read_text(encoding="utf-8"))}
    downloading = {rule for name, step in load_steps().items() if step.rules and name not in NO_DOWNLOAD
                   and set(step_files([name])) & callers for rule in step.rules}
    assert {"fetch", "analysis_probing_data"} <= downloading
    # the Snakefile sets the CPU code path's variables for its jobs (cpu_math.apply): not for this test process
    with SnakemakeApi(OutputSettings(quiet={"all"})) as api, mock.patch.dict(os.environ):
        workflow = api.workflow(resource_settings=ResourceSettings(), snakefile=_Path(ROOT / "Snakefile"),
                                workdir=_Path(ROOT))._workflow
        local = set(workflow._localrules)
    assert downloading <= local, downloading - local


def test_dvc_yaml_runs_each_stage_with_exactly_its_items_rules():
    """Each stage names the rules of the steps its item uses; together a group's stages name all its steps' rules."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    rules = {name: set(stage["do"]["cmd"].split("--allowed-rules", 1)[1].split(" -- ", 1)[0].split())
             for name, stage in stages.items()}
    assert rules["corpus-en-de"] == {"fetch", "clean", "tokenize", "learn_bpe", "apply_bpe", "vocab", "binarize",
                                     "corpus"}
    assert rules["corpus-w-lm"] == rules["corpus-en-de"] | {"learn_truecaser", "truecase"}   # truecased at tiny
    assert rules["train-ende-base"] == {"train"}
    assert rules["eval-ende-base"] == {"translate", "nbest_decode", "score", "scores"}
    assert rules["table-hao2019-table3"] == {"table", "figure", "significance"}
    assert rules["figure-hao2019-length"] == {"table", "figure", "analysis_length"}
    for group, stage in (("corpus", "corpus"), ("train", "train"), ("eval", "eval"), ("table", "table")):
        named = set().union(*(found for name, found in rules.items() if name.split("-", 1)[0] in (group, "figure")
                              and (group == "table" or not name.startswith("figure"))))
        assert named == {r for s in load_steps().values() if s.stage == stage for r in s.rules}, group


def test_every_step_is_a_subcommand_with_its_declared_options():
    parser = build_parser()
    subcommands = next(a for a in parser._actions if a.dest == "step").choices
    assert set(subcommands) == set(load_steps())
    for name, step in load_steps().items():
        options = {o for action in subcommands[name]._actions for o in action.option_strings}
        for field in dataclasses.fields(step.args):
            if not field.metadata.get("positional"):
                assert "--" + field.name.replace("_", "-") in options, (name, field.name)
        assert step.stage in STAGES + (None,)
        assert set(step.resources) == {"tiny", "smoke", "paper"}   # smoke: derived from paper


@dataclasses.dataclass
class _Args:
    name: str = arg(positional=True)
    count: int = arg(help="required")
    files: list[str] = arg(help="one or more")
    model: list[str] = arg(append=True)
    ratio: float | None = arg(None)
    sides: list[str] | None = arg(None)
    flag: bool = arg(False)


def test_argument_dataclass_gives_the_options_and_their_types():
    import argparse
    parser = argparse.ArgumentParser()
    add_arguments(parser, _Args)
    args = from_namespace(_Args, parser.parse_args(["x", "--count", "3", "--files", "a", "b", "--model", "m1",
                                                    "--model", "m2", "--sides", "--flag"]))
    assert args == _Args(name="x", count=3, files=["a", "b"], model=["m1", "m2"], ratio=None, sides=[], flag=True)
    assert from_namespace(_Args, parser.parse_args(["y", "--count", "1", "--files", "f", "--model", "m"])).sides is None
    with pytest.raises(SystemExit):
        parser.parse_args(["x", "--files", "a", "--model", "m"])  # --count is required


def test_a_step_name_is_declared_once():
    @dataclasses.dataclass
    class Nothing:
        pass

    with pytest.raises(PipelineError, match=r"step 'translate': registered twice \(by pipeline\.steps\.decoding and by "
                                            r"test_steps\); expected one step per name"):
        register_step("translate", Nothing, help="another translate")(lambda args: None)
    with pytest.raises(PipelineError, match="one per scale"):
        register_step("x-step", Nothing, help="x", resources={"tiny": Resources()})


def test_a_step_depends_on_its_own_function_not_its_neighbours_imports():
    steps = load_steps()
    gmbr = set(code_files([steps["gmbr-tune"].run]))
    rerank = set(code_files([steps["rerank"].run]))
    assert "pipeline/gmbr.py" in gmbr and "pipeline/rerank.py" not in gmbr
    assert "pipeline/rerank.py" in rerank and "pipeline/gmbr.py" not in rerank
    # one module declares attention, patterns and speed: each depends on its own implementation only
    speed = set(code_files([steps["speed"].run]))
    attention = set(code_files([steps["attention"].run]))
    assert "pipeline/papers/zeng2021/speed.py" in speed and "pipeline/papers/zeng2021/speed.py" not in attention
    assert "pipeline/papers/zeng2021/analyses.py" in speed & attention


def test_beam_search_is_in_what_decodes_not_in_what_trains():
    """The trainer validates by greedy decoding (pipeline.search) only: an edit to the beam search decodes every system
    again and trains none afresh (a system's run key hashes weights_files)."""
    from pipeline.steps.training import weights_files

    translate = set(step_files(["translate"]))
    assert {"pipeline/beam_search.py", "pipeline/static_search.py", "pipeline/search.py"} <= translate
    for spec in every_model_spec():
        trains = set(weights_files(spec, fixed_products=True))
        assert "pipeline/search.py" in trains, spec
        assert not trains & {"pipeline/beam_search.py", "pipeline/static_search.py", "pipeline/translate.py"}, spec


def test_the_fixed_kernel_is_in_the_weights_key_only_where_it_computes_the_products():
    """portable-fixed's kernel computes nothing where cpu_math is native (the paper scale's GPU runs): an edit to it
    trains those systems not afresh, and every CPU system of the tiny scale afresh."""
    from pipeline import cpu_math
    from pipeline.config import load_params
    from pipeline.steps.training import FIXED_KERNEL_FILES, weights_files

    for spec in every_model_spec():
        assert FIXED_KERNEL_FILES <= set(weights_files(spec, fixed_products=True)), spec
        assert not FIXED_KERNEL_FILES & set(weights_files(spec, fixed_products=False)), spec
    for scale, fixed in (("tiny", True), ("paper", False)):
        mode = load_params(ROOT / "params.yaml", scale=scale).cpu_math
        assert cpu_math.fixed_products(0, cpu_math.environment(mode)) is fixed, scale
    assert not cpu_math.fixed_products(1, cpu_math.environment("portable-fixed"))   # a GPU job's products are the GPU's


def test_paper_slugs_appear_in_shared_code_only_in_comments():
    slugs = ("hao2019", "werlen2018", "zhang2018", "zeng2021", "shu2016")
    shared = [p for p in (ROOT / "pipeline").rglob("*.py") if "papers" not in p.relative_to(ROOT).parts]
    shared += [ROOT / "Snakefile", *(ROOT / "workflows").rglob("*.smk")]
    found = []
    for path in shared:
        for token in _code_tokens(path):
            if any(slug in token.lower() for slug in slugs):
                found.append(f"{path.relative_to(ROOT)}: {token}")
    assert not found, found


def _code_tokens(path: Path) -> list[str]:
    """The names and strings of a Python (or Snakemake) file that are neither comments nor docstrings."""
    import io
    import tokenize
    text = path.read_text(encoding="utf-8")
    out, previous = [], tokenize.NEWLINE
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.STRING and previous in (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT,
                                                        tokenize.DEDENT):
            previous = tok.type  # a docstring or a bare string statement: prose
            continue
        if tok.type in (tokenize.NAME, tokenize.STRING, tokenize.FSTRING_MIDDLE if hasattr(tokenize,
                                                                                          "FSTRING_MIDDLE") else -1):
            out.append(tok.string)
        if tok.type not in (tokenize.COMMENT,):
            previous = tok.type
    return out


def test_artifact_paths_are_spelt_only_in_pipeline_paths():
    """The rules' inputs, outputs and logs and dvc.yaml's stages name artifact files through pipeline/paths.py: no
    string in the rule files or in pipeline/dvcgen.py spells a path below an artifact folder."""
    import io
    import tokenize
    folder = re.compile(r"(?:\{R\}|\bART\}?|artifacts)/|/(?:data|models|runs|curves|eval|tables|logs)/")
    spelt = []
    for path in [*sorted((ROOT / "workflows/rules").glob("*.smk")), ROOT / "pipeline/dvcgen.py"]:
        tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
        spelt += [f"{path.name}:{tok.start[0]}: {tok.string}" for tok in tokens
                  if tok.type == tokenize.STRING and folder.search(tok.string)]
    assert not spelt, "\n".join(spelt)
