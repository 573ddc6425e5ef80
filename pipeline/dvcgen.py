"""dvc.yaml from the params files: one stage per corpus, trained system, evaluated system, table and figure.

Each stage runs Snakemake for exactly its own rules and target, and depends on exactly what its target reads:
its corpora and systems (artifact folders) and the package modules its steps import (an import closure of
pipeline.* found by reading the code, so a stage's code dependencies cannot drift). The paper's own modules
are a dependency of its tables only. pipeline/cli.py, the thin layer every step goes through, is left out so
that editing one step's command line does not make every stage stale (our choice).

DVC's templating cannot interpolate a list, so stages of one group whose dependency lists differ in length take
numbered slots (a00, a01, ...; p0, p1, ...) and a stage with fewer repeats its last entry (DVC accepts repeats).
"""
from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

import yaml

from pipeline.config import Params

PACKAGE = Path(__file__).resolve().parent
REPO = PACKAGE.parent
SMK = "snakemake --profile workflows/profiles/local --quiet rules"
ART = "${paths.artifacts}/${scale}"
CORPUS_CODE = ("pipeline.data.registry", "pipeline.data.tokenize", "pipeline.data.clean", "pipeline.data.subword",
               "pipeline.data.vocab")
TRAIN_CODE = ("pipeline.train", "pipeline.recipe", "pipeline.checkpoint", "pipeline.models.registry",
              "pipeline.data.vocab", "pipeline.data.batching")
EVAL_CODE = ("pipeline.translate", "pipeline.search", "pipeline.ensemble", "pipeline.checkpoint",
             "pipeline.evaluate.metrics", "pipeline.evaluate.metric_text", "pipeline.data.tokenize",
             "pipeline.data.subword", "pipeline.data.vocab", "pipeline.external", "pipeline.rerank",
             "pipeline.combination")
EVAL_RULES = "translate score scores nbest_decode external_hyp external_nbest rerank gmbr_tune gmbr length_switch"
TABLE_CODE = ("pipeline.report.cells", "pipeline.report.layouts", "pipeline.report.table", "pipeline.report.figures")
ANALYSIS_CODE = {"length": ("pipeline.evaluate.length",), "attention": ("pipeline.evaluate.attention",),
                 "patterns": ("pipeline.evaluate.attention",), "speed": ("pipeline.evaluate.speed",),
                 "probing": ("pipeline.evaluate.probing", "pipeline.data.tokenize", "pipeline.data.subword"),
                 "previous_words": ("pipeline.evaluate.previous_words",),
                 "perplexity": ("pipeline.evaluate.perplexity",), "ranking": ("pipeline.evaluate.ranking",),
                 "alignment": ("pipeline.evaluate.alignment", "pipeline.evaluate.source_attention"),
                 "curves": ("pipeline.evaluate.curves",)}
SIGNIFICANCE_CODE = ("pipeline.evaluate.significance", "pipeline.evaluate.metrics")
TABLE_RULES = ("significance analysis_length analysis_attention analysis_patterns analysis_speed "
               "analysis_probing_data analysis_probing analysis_previous_words analysis_perplexity analysis_ranking "
               "analysis_alignment analysis_curves table figure")


# ------------------------------------------------------------------------------------------- code closure
def _module_file(name: str) -> Path | None:
    """pipeline.a.b -> pipeline/a/b.py or pipeline/a/b/__init__.py (None if neither exists)."""
    base = REPO.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


@lru_cache(maxsize=None)
def _imports(path: Path) -> tuple[str, ...]:
    """The pipeline.* modules a file imports anywhere (top level or inside functions)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[0] == "pipeline"]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "pipeline":
            found.append(node.module)
            found += [f"{node.module}.{alias.name}" for alias in node.names]  # `from pkg import module`
    return tuple(found)


def code_closure(roots) -> list[str]:
    """Repository-relative files of the modules `roots` import, transitively, with their packages' __init__."""
    seen: set[Path] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            path = _module_file(".".join(parts[:i]))
            if path is not None and path not in seen:
                seen.add(path)
                todo += _imports(path)
    return sorted(str(p.relative_to(REPO)) for p in seen)


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


def stages(p: Params) -> dict:
    """The `stages:` mapping of dvc.yaml."""
    out = {}
    corpus_code = code_closure(CORPUS_CODE)
    out["corpus"] = _group(
        {name: {"file": p.files[c.paper]} for name, c in p.corpora.items()},
        {"cmd": f"{SMK} --allowed-rules fetch tokenize learn_truecaser truecase clean learn_bpe apply_bpe vocab "
                f"corpus -- "
                f"{ART}/data/${{key}}/ready",
         "deps": corpus_code, "params": ["scale", "seed", {"${item.file}": ["corpora.${key}"]}],
         "outs": [f"{ART}/data/${{key}}"]})

    train_keys = max(len(e.params_keys) for e in p.experiments.values())
    items = {}
    for name, exp in p.experiments.items():
        files, keys = _keys(exp.params_keys)
        start = [f"models/{exp.init}"] if exp.init else [f"data/{exp.corpus}"]  # the baseline fine-tuned, if any
        items[name] = {"corpus": exp.corpus, "start": start[0], **_slots("f", files, train_keys),
                       **_slots("k", keys, train_keys)}
    out["train"] = _group(items, {
        "cmd": f"{SMK} --allowed-rules train -- {ART}/models/${{key}}/model.pt",
        "deps": [f"{ART}/data/${{item.corpus}}", f"{ART}/${{item.start}}"] + code_closure(TRAIN_CODE),
        "params": ["seed", "precision"] + _param_lines(train_keys),
        "outs": [f"{ART}/models/${{key}}", f"{ART}/curves/${{key}}"]})

    systems = _evaluated(p)
    reads = {name: _system_artifacts(p, name) for name in systems}
    width = max(map(len, reads.values()))
    eval_keys = max(len(s.params_keys) for s in systems.values())
    items = {}
    for name, system in systems.items():
        files, keys = _keys(system.params_keys)
        wanted = " ".join(f"{split}.{metric}" for split, metric in p.scores_of(name))
        items[name] = {"corpus": system.corpus, "scores": wanted, **_slots("m", reads[name], width),
                       **_slots("f", files, eval_keys), **_slots("k", keys, eval_keys)}
    out["eval"] = _group(items, {
        "cmd": f"{SMK} --allowed-rules {EVAL_RULES} -- {ART}/eval/${{key}}/scores.json  "
               f"# scores: ${{item.scores}}",
        "deps": [f"{ART}/data/${{item.corpus}}"] + _dep_lines("m", width, True) + code_closure(EVAL_CODE),
        "params": ["decoding"] + _param_lines(eval_keys),
        "outs": [f"{ART}/eval/${{key}}"]})

    for group, figure in (("table", False), ("figure", True)):
        tables = {name: t for name, t in p.tables.items() if t.figure == figure}
        if not tables:
            continue
        deps = {name: _table_artifacts(p, t) for name, t in tables.items()}
        code = {name: _table_code(t) for name, t in tables.items()}
        a_width, c_width = max(map(len, deps.values())), max(map(len, code.values()))
        items = {name: {"file": p.files[t.paper], "paper": t.paper, "output": t.output,
                        **_slots("a", deps[name], a_width), **_slots("c", code[name], c_width)}
                 for name, t in tables.items()}
        rendering = "png" if figure else "md"
        out[group] = _group(items, {
            "cmd": f"{SMK} --allowed-rules {TABLE_RULES} -- results/${{item.paper}}/${{item.output}}.tsv",
            "deps": _dep_lines("a", a_width, True) + _dep_lines("c", c_width, False),
            "params": ["significance", {"${item.file}": [f"{'figures' if figure else 'tables'}.${{key}}"]}],
            "outs": [f"{ART}/tables/${{key}}",
                     {"results/${item.paper}/${item.output}.tsv": {"cache": False}},
                     {f"results/${{item.paper}}/${{item.output}}.{rendering}": {"cache": False}}]})
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


def _table_artifacts(p: Params, table) -> list[str]:
    """The artifact folders a table reads: its systems' scores and run summaries, and corpora its analyses read."""
    found = []
    for system in table.systems():
        found.append(f"eval/{system}")
        found += [f"models/{m}" for m in p.members(system)]
    if table.analyses.keys() - {"patterns", "curves"}:
        found += sorted({f"data/{p.corpus_of(s).name}" for s in table.systems()})
    if "curves" in table.analyses:
        found += [f"curves/{m}" for s in table.systems() for m in p.members(s)]
    if "probing" in table.analyses:
        found.append(f"data/{table.analyses['probing']['corpus']}")
    return sorted(set(found))


def _table_code(table) -> list[str]:
    roots = list(TABLE_CODE) + [f"pipeline.papers.{table.paper}"]
    if table.significance is not None:
        roots += SIGNIFICANCE_CODE
    for kind in table.analyses:
        roots += ANALYSIS_CODE[kind]
    return code_closure(roots)


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
