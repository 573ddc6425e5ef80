"""dvc.yaml from the params files and the step registry: one stage per corpus, trained system, evaluated system,
table and figure.

Each stage runs Snakemake for exactly its own rules (the rules of the registered steps of its stage group,
pipeline/steps/) and target, and depends on exactly what its target reads: its corpora and systems (artifact
folders; an analysis's from the files its declaration reads) and the code its steps run (pipeline/code_deps.py:
the steps' functions and the modules of the metrics, tests and analysis kinds it uses, by import closure, so a
stage's code dependencies cannot drift). pipeline/cli.py, the thin layer every step goes through, is left out so
that editing the command line does not make every stage stale (our choice).

DVC's templating cannot interpolate a list, so stages of one group whose dependency lists differ in length take
numbered slots (a00, a01, ...; c00, ...) and a stage with fewer repeats its last entry (DVC accepts repeats).
"""
from __future__ import annotations

import yaml

from pipeline.analyses import table_jobs
from pipeline.config import Params
from pipeline.evaluate.metrics import get_metric
from pipeline.evaluate.significance import get_test
from pipeline.paths import Paths
from pipeline.steps import load_steps, step_files
from pipeline.steps.training import weights_files

# pipeline/dvc_stage.py: the local profile at a scale without GPU jobs only (else one line: the route is Slurm, then
# `dvc commit -f`); the stage's Snakemake and its jobs stop with DVC (pipeline/job_tree.py)
SMK = "python -m pipeline.dvc_stage snakemake --profile workflows/profiles/local --quiet rules"
ART = "${paths.artifacts}/${scale}"
FOLDERS = ("data", "models", "curves", "eval")  # the artifact folders other stages write


# ------------------------------------------------------------------------------------------------- stages
def _slots(prefix: str, values: list, width: int) -> dict:
    """{prefix00: v0, ...} for `width` slots, the last value repeated (see the module docstring)."""
    values = list(values) or [""]
    return {f"{prefix}{i:02d}": values[min(i, len(values) - 1)] for i in range(width)}


def _dep_lines(prefix: str, width: int, artifact: bool) -> list[str]:
    root = f"{ART}/" if artifact else ""
    return [f"{root}${{item.{prefix}{i:02d}}}" for i in range(width)]


def _param_lines(width: int) -> list[dict]:
    return [{f"${{item.f{i:02d}}}": [f"${{item.k{i:02d}}}"]} for i in range(width)]


def _keys(pairs) -> tuple[list, list]:
    files, keys = zip(*pairs) if pairs else ((), ())
    return list(files), list(keys)


class _Flow(dict):
    """A mapping written on one line (one stage's item per line keeps dvc.yaml readable)."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Flow, lambda dumper, data: dumper.represent_mapping("tag:yaml.org,2002:map", data,
                                                                             flow_style=True))


def _group(items: dict, do: dict) -> dict:
    return {"foreach": {name: _Flow(item) for name, item in items.items()}, "do": do}


def stage_rules(stage: str) -> str:
    """The Snakemake rules a stage group's stages may run: those of its registered steps."""
    return " ".join(sorted(rule for step in load_steps().values() if step.stage == stage for rule in step.rules))


def stages(p: Params) -> dict:
    """The `stages:` mapping of dvc.yaml."""
    steps = load_steps()
    out = {}
    corpus = sorted(name for name, step in steps.items() if step.stage == "corpus")
    out["corpus"] = _group(
        {name: {"file": p.files[c.paper]} for name, c in p.corpora.items()},
        {"cmd": f"{SMK} --allowed-rules {stage_rules('corpus')} -- {ART}/data/${{key}}/ready",
         "deps": step_files(corpus), "params": ["scale", "seed", {"${item.file}": ["corpora.${key}"]}],
         "outs": [f"{ART}/data/${{key}}"]})

    train_keys = max(len(e.params_keys) for e in p.experiments.values())
    trainer = step_files(["train"])
    code = {name: sorted(set(weights_files(p.model_spec(name))) - set(trainer)) for name in p.experiments}
    c_width = max(map(len, code.values()))
    items = {}
    for name, exp in p.experiments.items():
        files, keys = _keys(exp.params_keys)
        start = [f"models/{exp.init}"] if exp.init else [f"data/{exp.corpus}"]  # the baseline fine-tuned, if any
        # a model whose code the trainer's files already hold fills its slots with a trainer file (never '': DVC
        # refuses an empty dependency)
        items[name] = {"corpus": exp.corpus, "start": start[0], **_slots("c", code[name] or trainer[:1], c_width),
                       **_slots("f", files, train_keys), **_slots("k", keys, train_keys)}
    out["train"] = _group(items, {
        "cmd": f"{SMK} --allowed-rules {stage_rules('train')} -- {ART}/models/${{key}}/model.pt",
        "deps": [f"{ART}/data/${{item.corpus}}", f"{ART}/${{item.start}}"] + trainer + _dep_lines("c", c_width, False),
        "params": ["seed", "precision", "cpu_math"] + _param_lines(train_keys),
        "outs": [f"{ART}/models/${{key}}", f"{ART}/curves/${{key}}"]})

    systems = _evaluated(p)
    reads = {name: _system_artifacts(p, name) for name in systems}
    code = {name: _system_code(p, name) for name in systems}
    width, c_width = max(map(len, reads.values())), max(map(len, code.values()))
    eval_keys = max(len(s.params_keys) for s in systems.values())
    items = {}
    for name, system in systems.items():
        files, keys = _keys(system.params_keys)
        wanted = " ".join(f"{split}.{metric}" for split, metric in p.scores_of(name))
        items[name] = {"corpus": system.corpus, "scores": wanted, **_slots("m", reads[name], width),
                       **_slots("c", code[name], c_width), **_slots("f", files, eval_keys),
                       **_slots("k", keys, eval_keys)}
    out["eval"] = _group(items, {
        "cmd": f"{SMK} --allowed-rules {stage_rules('eval')} -- {ART}/eval/${{key}}/scores.json  "
               f"# scores: ${{item.scores}}",
        "deps": [f"{ART}/data/${{item.corpus}}"] + _dep_lines("m", width, True) + _dep_lines("c", c_width, False),
        "params": ["decoding", "cpu_math"] + _param_lines(eval_keys),
        "outs": [f"{ART}/eval/${{key}}"]})

    for group, figure in (("table", False), ("figure", True)):
        tables = {name: t for name, t in p.tables.items() if t.figure == figure}
        if not tables:
            continue
        deps = {name: _table_artifacts(p, t) for name, t in tables.items()}
        code = {name: _table_code(p, t) for name, t in tables.items()}
        a_width, c_width = max(map(len, deps.values())), max(map(len, code.values()))
        items = {name: {"file": p.files[t.paper], "paper": t.paper, "output": t.output,
                        **_slots("a", deps[name], a_width), **_slots("c", code[name], c_width)}
                 for name, t in tables.items()}
        rendering = "png" if figure else "md"
        out[group] = _group(items, {
            "cmd": f"{SMK} --allowed-rules {stage_rules('table')} -- "
                   f"results/${{scale}}/${{item.paper}}/${{item.output}}.tsv",
            "deps": _dep_lines("a", a_width, True) + _dep_lines("c", c_width, False),
            "params": ["significance", {"${item.file}": [f"{'figures' if figure else 'tables'}.${{key}}"]}],
            "outs": [f"{ART}/tables/${{key}}",
                     {"results/${scale}/${item.paper}/${item.output}.tsv": {"cache": False}},
                     {f"results/${{scale}}/${{item.paper}}/${{item.output}}.{rendering}": {"cache": False}}]})
    return out


def _evaluated(p: Params) -> dict:
    """The systems with an eval stage: an outside system only once its outputs are supplied (paths.manual), else
    `dvc repro` would stop on it."""
    return {name: s for name, s in p.systems.items() if name not in p.external or s.manual in p.manual}


def _system_artifacts(p: Params, system: str) -> list[str]:
    """The artifact folders a system's evaluation reads: its members' models, and a combination's input systems'
    evaluations (an outside system's supplied files live outside the repository: not tracked)."""
    found = [f"models/{m}" for m in p.members(system)]
    if system in p.combinations:
        found += [f"eval/{s}" for s in p.combinations[system].systems()]
    return found


def _system_code(p: Params, system: str) -> list[str]:
    """The code a system's evaluation runs: how its outputs are made (beam search, supplied files, or its
    combination's steps with the n-best lists they read), scoring and the modules of the metrics it is scored by."""
    from pipeline.derived_systems import METHODS
    if system in p.combinations:
        steps = ["translate", "external", *METHODS[p.combinations[system].method]["steps"]]
    else:
        steps = ["external" if system in p.external else "translate"]
    metrics = {type(get_metric(metric)).__module__ for _, metric in p.scores_of(system)}
    runs = step_files(steps + ["score", "scores"], sorted(metrics))
    return sorted(set(runs) | set(_model_code(p, p.members(system))))


def _model_code(p: Params, experiments) -> list[str]:
    """The files the models of these experiments are built from (their encoders' and decoders' modules)."""
    from pipeline.models.registry import model_code
    return sorted({f for name in experiments for f in model_code(p.model_spec(name))})


def _artifact_folder(paths: Paths, path: str) -> str | None:
    """models/<exp>, data/<corpus>, ... of a file under the artifacts root (None for other files)."""
    parts = path.removeprefix(paths.root + "/").split("/")
    return "/".join(parts[:2]) if path.startswith(paths.root + "/") and parts[0] in FOLDERS else None


def _table_artifacts(p: Params, table) -> list[str]:
    """The artifact folders a table reads: its systems' scores and run summaries, and what its analyses read."""
    found = []
    for system in table.systems():
        found.append(f"eval/{system}")
        found += [f"models/{m}" for m in p.members(system)]
    paths = Paths(p.root)
    for analysis, job in table_jobs(p, paths, table):
        for value in analysis.inputs(job).values():
            found += [folder for path in ([value] if isinstance(value, str) else value)
                      if (folder := _artifact_folder(paths, path))]
    return sorted(set(found))


def _table_code(p: Params, table) -> list[str]:
    """The code a table runs: the table step, its layout, its significance test and analysis kinds."""
    from pipeline.report.layouts import load_papers
    names, modules = ["table"], []
    if table.significance is not None:
        names.append("significance")
        modules += [get_test(table.significance.test).__module__,
                    type(get_metric(table.tested()[0])).__module__]
    kinds = {analysis.step for analysis, _ in table_jobs(p, Paths(p.root), table)}
    return step_files(names + sorted(kinds), modules, [load_papers()[table.layout].function])


def dvc_yaml(p: Params) -> str:
    """The whole dvc.yaml text."""
    doc = {
        "stages": stages(p),
        "metrics": [f"{ART}/eval/{name}/scores.json" for name in _evaluated(p)],
        "plots": [{f"{ART}/curves": {"x": "step"}}],
    }
    header = ("# Generated by `python -m pipeline dvc-yaml` from params.yaml and params/*.yaml: do not edit by hand\n"
              "# (a test checks that it is up to date). One stage per corpus, trained system (train@), evaluated\n"
              "# system (eval@), table and figure; each runs Snakemake for exactly its own rules and target.\n"
              "# DVC templating cannot interpolate lists: stages whose dependency lists differ in length use\n"
              "# numbered slots, a shorter list repeating its last entry (see pipeline/dvcgen.py).\n")
    return header + yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=100000, allow_unicode=True)
