"""pipeline/code_facts.py: the files each step, model and layout runs, kept between Snakemake starts, are what reading
and importing the code finds, are read back without torch or matplotlib, and are found again after any edit under
pipeline/."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from pipeline.code_deps import code_files
from pipeline.code_facts import KEEP, CodeFacts, sources_digest
from pipeline.config import load_params
from pipeline.models.registry import model_code
from pipeline.report.layouts import load_papers
from pipeline.steps import load_steps, step_files
from pipeline.steps.training import weights_files
from workspace import ROOT, env, every_model_spec


def every_model_and_layout():
    """The model spec of every encoder-decoder pair at every scale (workspace.every_model_spec) and every layout."""
    layouts = {table.layout for scale in ("tiny", "paper")
               for table in load_params(ROOT / "params.yaml", scale=scale).tables.values()}
    return every_model_spec(), sorted(layouts)


ASK = """
import json, sys
from pipeline.code_deps import _tree
from pipeline.code_facts import CodeFacts
facts, (steps, specs, layouts) = CodeFacts(sys.argv[1]), json.loads(sys.argv[2])
answer = {"steps": [facts.step_files(step) for step in steps],
          "models": [facts.model_files(spec) for spec in specs],
          "weights": [facts.weights_files(spec, fixed) for spec in specs for fixed in (True, False)],
          "layouts": [facts.layout_files(layout) for layout in layouts]}
print(json.dumps({"answer": answer, "heavy": sorted({"torch", "matplotlib"} & set(sys.modules)),
                  "parsed": _tree.cache_info().currsize}))
"""


def ask(kept, steps, specs, layouts) -> dict:
    """What a fresh process's CodeFacts(kept) answers, which of torch and matplotlib it imported for it, and how many
    files it parsed."""
    proc = subprocess.run([sys.executable, "-c", ASK, str(kept), json.dumps([steps, specs, layouts])], cwd=ROOT,
                          env=env(), capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def test_kept_facts_are_what_importing_finds_and_read_back_without_torch_or_matplotlib(tmp_path):
    steps, (specs, layouts) = sorted(load_steps()), every_model_and_layout()
    assert len(specs) >= 8 and len(layouts) >= 20
    kept = tmp_path / "cache"
    first = ask(kept, steps, specs, layouts)
    assert first["answer"] == {"steps": [step_files([step]) for step in steps],
                               "models": [sorted(model_code(spec)) for spec in specs],
                               "weights": [sorted(weights_files(spec, fixed)) for spec in specs
                                           for fixed in (True, False)],
                               "layouts": [code_files([load_papers()[layout].function]) for layout in layouts]}
    assert first["heavy"] == ["matplotlib", "torch"] and first["parsed"] > 100   # finding them imports and parses
    models, weights = first["answer"]["models"], first["answer"]["weights"]
    assert all(set(model) < set(whole) for model, whole in zip(models, weights[::2]))
    assert ask(kept, steps, specs, layouts) == {"answer": first["answer"], "heavy": [], "parsed": 0}


def test_a_foreign_or_broken_file_is_found_again_and_rewritten(tmp_path):
    path = CodeFacts(tmp_path).path
    assert path == tmp_path / f"code-facts-{sources_digest()[:16]}.json"
    calls = []

    def find():
        calls.append(1)
        return ["pipeline/b.py", "pipeline/a.py"]

    for text in (json.dumps({"sources": "another digest", "facts": {"k": ["pipeline/old.py"]}}),
                 json.dumps(["not", "ours"]), "{broken"):
        path.write_text(text)
        assert CodeFacts(tmp_path).files("k", find) == ["pipeline/a.py", "pipeline/b.py"]
        assert json.loads(path.read_text()) == {"sources": sources_digest(),
                                                "facts": {"k": ["pipeline/a.py", "pipeline/b.py"]}}
    assert len(calls) == 3
    kept = CodeFacts(tmp_path).files("k", lambda: pytest.fail("found again although kept"))
    assert kept == ["pipeline/a.py", "pipeline/b.py"]


def test_two_processes_keep_what_each_found(tmp_path):
    first, second = CodeFacts(tmp_path), CodeFacts(tmp_path)   # both start before either writes
    first.files("one", lambda: ["pipeline/one.py"])
    second.files("two", lambda: ["pipeline/two.py"])
    assert json.loads(first.path.read_text())["facts"] == {"one": ["pipeline/one.py"], "two": ["pipeline/two.py"]}


def test_the_cache_keeps_the_most_recent_source_states(tmp_path):
    older = [tmp_path / f"code-facts-{i:016x}.json" for i in range(KEEP + 5)]
    for age, path in enumerate(older, start=1):
        path.write_text("{}")
        os.utime(path, (1e9 - age, 1e9 - age))   # older[0] the most recent of them
    (tmp_path / "fixed_gemm-abc.so").write_text("")   # the kernels' cache beside it is not touched
    facts = CodeFacts(tmp_path)
    facts.files("k", lambda: ["pipeline/k.py"])
    assert sorted(tmp_path.glob("code-facts-*.json")) == sorted([facts.path, *older[:KEEP - 1]])
    assert (tmp_path / "fixed_gemm-abc.so").exists()


def test_a_cache_it_cannot_write_only_costs_the_finding(tmp_path):
    (tmp_path / "a-file").write_text("")
    facts = CodeFacts(tmp_path / "a-file")   # a folder under a file: not writable, even by root
    assert facts.files("k", lambda: ["pipeline/k.py"]) == ["pipeline/k.py"]
    assert (tmp_path / "a-file").read_text() == "" and sorted(tmp_path.iterdir()) == [tmp_path / "a-file"]


def test_any_source_edit_under_the_package_changes_the_digest(tmp_path):
    copy = tmp_path / "pipeline"
    shutil.copytree(ROOT / "pipeline", copy, ignore=shutil.ignore_patterns("__pycache__"))
    digests = [sources_digest(copy)]
    assert digests[0] == sources_digest()           # the names are relative to the package: a clone's is the same
    (copy / "notes.txt").write_text("not a source")
    digests.append(sources_digest(copy))
    with open(copy / "models" / "transformer.py", "a") as handle:
        handle.write("\n")
    digests.append(sources_digest(copy))
    (copy / "models" / "transformer.py").rename(copy / "models" / "transformer2.py")
    digests.append(sources_digest(copy))
    (copy / "new_kernel.c").write_text("int f(void) { return 0; }\n")
    digests.append(sources_digest(copy))
    assert digests[0] == digests[1] and len(set(digests[1:])) == 4
