"""dvc.yaml from the params files and the step registry: one stage per corpus, trained system, evaluated system,
table and figure, each written out whole.

A stage runs Snakemake for exactly its own rules (those of the registered steps, pipeline/steps/, that its item
uses) and target, and depends on exactly what its target reads: its corpora and systems (artifact folders; an
analysis's from the files its declaration reads), the params keys that define it and the code its steps run
(pipeline/code_deps.py: the steps' functions and the modules of the metrics, tests and analysis kinds it uses, by
import closure). No stage shares a command or a dependency list with another, so adding a paper, a step or an
analysis kind adds stages and leaves every other one byte-identical. A trained system's outputs are persistent: DVC
never deletes them before the stage runs (nor restores them from its run cache behind Snakemake's back); the stage
asks Snakemake for the model, which retrains only where its params, code or inputs changed (the train rule's params
carry the code's hashes), so a model that `make run` or the README's Snakemake commands built is recorded, not trained
again, and an interrupted or forced stage never destroys the only copy. pipeline/cli.py, the thin layer every step goes
through, is left out so that editing the command line does not make every stage stale (our choice).

The scale is in each stage's name: a stage is a `foreach` over the one active scale (`corpus-en-de@tiny`), so
dvc.lock keeps the records of each scale side by side and `dvc exp run -S scale=paper` names its own stages. The
stages serve every scale (pipeline/scales.py: where a stage's steps or scores differ by scale, it holds them all).
"""
from __future__ import annotations

import string
from dataclasses import dataclass, field

import yaml

from pipeline.analyses import table_jobs
from pipeline.config import Params
from pipeline.errors import PipelineError
from pipeline.evaluate.metrics import get_metric
from pipeline.evaluate.significance import get_test
from pipeline.paths import Paths
from pipeline.steps import load_steps, step_files
from pipeline.steps.training import weights_files

# pipeline/dvc_stage.py: the local profile at a scale without GPU jobs only (else one line: the route is Slurm, then
# `dvc commit -f`); the stage's Snakemake and its jobs stop with DVC (pipeline/job_tree.py). `exec`: DVC runs the
# command with `$SHELL -c`, and /bin/sh (dash, DVC's shell where SHELL is unset) would stay between DVC and the job
# tree and live on when DVC is killed, so the job tree would never learn of it
SMK = "exec python -m pipeline.dvc_stage snakemake --profile workflows/profiles/local --quiet rules"
ART = "${paths.artifacts}/${scale}"
DVC = Paths(ART)  # the artifact layout as dvc.yaml spells it
FOLDERS = ("data", "models", "curves", "eval")  # the artifact folders other stages write
NAME_CHARS = set(string.ascii_letters + string.digits + "_-")   # what DVC allows in a stage name
TRUECASING = ("learn-truecaser", "truecase")    # the corpus steps of a truecased corpus only


# ------------------------------------------------------------------------------------------------- one stage
def stage_name(kind: str, item: str) -> str:
    """`<kind>-<item>`, the name DVC suffixes with `@<scale>`; an item DVC cannot name is refused."""
    if not set(item) <= NAME_CHARS:
        raise PipelineError(f"{kind} {item!r}: a dvc.yaml stage name may hold only letters, digits, '_' and '-'")
    return f"{kind}-{item}"


def _params(pairs) -> list:
    """[{file: [key, ...]}, ...] from (file, key) pairs, each file once, keys sorted."""
    files: dict[str, set] = {}
    for file, key in pairs:
        files.setdefault(file, set()).add(key)
    return [{file: sorted(keys)} for file, keys in sorted(files.items())]


@dataclass
class Stage:
    """One stage at one scale: the steps whose rules it runs for its target, what it reads and writes."""
    steps: set
    target: str
    deps: set
    params: list
    outs: list
    scores: set = field(default_factory=set)   # an evaluation's wanted scores (named in its command)

    def merge(self, other: Stage) -> Stage:
        """The stage that serves both scales: their steps, dependencies and scores together."""
        assert (self.target, self.params, self.outs) == (other.target, other.params, other.outs), (self, other)
        return Stage(self.steps | other.steps, self.target, self.deps | other.deps, self.params, self.outs,
                     self.scores | other.scores)

    def render(self) -> dict:
        """dvc.yaml's entry: a foreach over the active scale (its name's suffix) running Snakemake for the steps'
        rules."""
        registry = load_steps()
        rules = " ".join(sorted(rule for name in self.steps for rule in registry[name].rules))
        note = f"  # scores: {' '.join(sorted(self.scores))}" if self.scores else ""
        return {"foreach": ["${scale}"],
                "do": {"cmd": f"{SMK} --allowed-rules {rules} -- {self.target}{note}", "deps": sorted(self.deps),
                       "params": self.params, "outs": self.outs}}


# ------------------------------------------------------------------------------------------------- stages
def corpus_steps(p: Params, corpus: str) -> set[str]:
    """The steps that prepare a corpus: the corpus group's, truecasing only for a truecased corpus."""
    return {name for name, step in load_steps().items() if step.stage == "corpus"
            and (p.corpora[corpus].truecase or name not in TRUECASING)}


def corpus_stage(p: Params, name: str) -> Stage:
    steps = corpus_steps(p, name)
    return Stage(steps, DVC.data(name, "ready"), set(step_files(sorted(steps))),
                 ["scale", "seed", {p.files[p.corpora[name].paper]: [f"corpora.{name}"]}], [DVC.data(name)])


def train_stage(p: Params, name: str) -> Stage:
    exp = p.experiments[name]
    baseline = [DVC.model_dir(exp.init)] if exp.init else []   # the baseline fine-tuned, if any
    deps = {DVC.data(exp.corpus), *baseline, *step_files(["train"]),
            *weights_files(p.model_spec(name), fixed_products=True)}   # every scale's (cpu_math is a param)
    return Stage({"train"}, DVC.model(name), deps, ["seed", "precision", "cpu_math", *_params(exp.params_keys)],
                 [{DVC.model_dir(name): {"persist": True}}, {DVC.curves_dir(name): {"persist": True}}])


def eval_stage(p: Params, name: str) -> Stage:
    system = p.systems[name]
    steps = system_steps(p, name)
    metrics = sorted({type(get_metric(metric)).__module__ for _, metric in p.scores_of(name)})
    deps = {DVC.data(system.corpus), *_system_artifacts(p, name), *step_files(sorted(steps), metrics),
            *_model_code(p, p.members(name))}
    return Stage(steps, DVC.scores(name), deps, ["decoding", "cpu_math", *_params(system.params_keys)],
                 [DVC.eval_dir(name)], {f"{split}.{metric}" for split, metric in p.scores_of(name)})


def table_stage(p: Params, name: str) -> Stage:
    from pipeline.report.layouts import load_papers
    table = p.tables[name]
    steps, modules = table_steps(p, name), []
    if table.significance is not None:
        modules += [get_test(table.significance.test).__module__, type(get_metric(table.tested()[0])).__module__]
    deps = {*_table_artifacts(p, table), *step_files(sorted(steps), modules, [load_papers()[table.layout].function])}
    result = f"results/${{scale}}/{table.paper}/{table.output}"
    section = "figures" if table.figure else "tables"
    return Stage(steps, f"{result}.tsv", deps, ["significance", {p.files[table.paper]: [f"{section}.{name}"]}],
                 [DVC.table(name), {f"{result}.tsv": {"cache": False}},
                  {f"{result}.{'png' if table.figure else 'md'}": {"cache": False}}])


def system_steps(p: Params, system: str) -> set[str]:
    """The steps that make and score a system's outputs: beam search or supplied files, or its combination's
    steps with the n-best lists they read; scoring."""
    from pipeline.derived_systems import METHODS
    if system in p.combinations:
        made = ["translate", "external", *METHODS[p.combinations[system].method]["steps"]]
    else:
        made = ["external" if system in p.external else "translate"]
    return {*made, "score", "scores"}


def table_steps(p: Params, name: str) -> set[str]:
    """The steps that build a table: the table step, its significance test and its analysis kinds."""
    table = p.tables[name]
    kinds = {analysis.step for analysis, _ in table_jobs(p, Paths(p.root), table)}
    return {"table", *(["significance"] if table.significance is not None else []), *kinds}


def scale_stages(p: Params) -> dict[str, Stage]:
    """Stage name -> its stage at the params' scale: corpora, trainings, evaluations, tables, then figures."""
    out = {}
    for name in p.corpora:
        out[stage_name("corpus", name)] = corpus_stage(p, name)
    for name in p.experiments:
        out[stage_name("train", name)] = train_stage(p, name)
    for name in _evaluated(p):
        out[stage_name("eval", name)] = eval_stage(p, name)
    for figure in (False, True):
        for name, table in p.tables.items():
            if table.figure == figure:
                out[stage_name("figure" if figure else "table", name)] = table_stage(p, name)
    return out


def stages(*at_scales: Params) -> dict:
    """The `stages:` mapping of dvc.yaml for the same params at each scale: a stage whose steps, dependencies or
    scores differ between scales (e.g. a corpus truecased at one only) serves them all together, so that the file
    does not change with the active scale (a stage of one scale only would be run at every scale)."""
    merged: dict[str, Stage] = {}
    for p in at_scales:
        for name, stage in scale_stages(p).items():
            merged[name] = merged[name].merge(stage) if name in merged else stage
    return {name: stage.render() for name, stage in merged.items()}


def _evaluated(p: Params) -> dict:
    """The systems with an eval stage: an outside system only once its outputs are supplied (paths.manual), else
    `dvc repro` would stop on it."""
    return {name: s for name, s in p.systems.items() if name not in p.external or s.manual in p.manual}


def _system_artifacts(p: Params, system: str) -> list[str]:
    """The artifact folders a system's evaluation reads: its members' models, and a combination's input systems'
    evaluations (an outside system's supplied files live outside the repository: not tracked)."""
    found = [DVC.model_dir(m) for m in p.members(system)]
    if system in p.combinations:
        found += [DVC.eval_dir(s) for s in p.combinations[system].systems()]
    return found


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
        found.append(DVC.eval_dir(system))
        found += [DVC.model_dir(m) for m in p.members(system)]
    paths = Paths(p.root)
    for analysis, job in table_jobs(p, paths, table):
        for value in analysis.inputs(job).values():
            found += [DVC.under(folder) for path in ([value] if isinstance(value, str) else value)
                      if (folder := _artifact_folder(paths, path))]
    return sorted(set(found))


def dvc_yaml(*at_scales: Params) -> str:
    """The whole dvc.yaml text, from the same params at each scale (pipeline/scales.py: SCALES)."""
    doc = {
        "stages": stages(*at_scales),
        "metrics": sorted({DVC.scores(name) for p in at_scales for name in _evaluated(p)}),
        "plots": [{DVC.under("curves"): {"x": "step"}}],
    }
    header = ("# Generated by `python -m pipeline dvc-yaml` from params.yaml and params/*.yaml: do not edit by hand\n"
              "# (a test checks that it is up to date). One stage per corpus (corpus-<name>), trained system\n"
              "# (train-<exp>), evaluated system (eval-<system>), table and figure, named for the active scale\n"
              "# (`dvc repro table-hao2019-table3`, recorded as table-hao2019-table3@tiny); each runs Snakemake\n"
              "# for exactly its own rules and target and depends on exactly what it reads (pipeline/dvcgen.py).\n")
    return header + yaml.safe_dump(doc, sort_keys=False, width=100000, allow_unicode=True)
