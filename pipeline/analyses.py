"""The analysis kinds a table or figure may ask for besides scores, each declared once (torch-free declarations).

A table names them under `analyses:` with their settings. `register_analysis` declares a kind: its settings
dataclass (pipeline/settings.py), which files one job reads (`inputs(job)`), what else it needs to know
(`context(job)`), the function that computes it (run(task) -> a JSON-able result), the modules its results depend
on, and whether it runs once per cell system, per table column or per table. Each kind becomes the step `<kind>`
(underscores as hyphens) called by the Snakemake rule `analysis_<kind>` (workflows/rules/analyses.smk, generated
from this registry) that writes artifacts/<scale>/tables/<table>/<kind>/<item>.json; the table step hands it to the
layout as the cell value `<kind>`. Papers declare their own kinds in pipeline/papers/<paper>/.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from pipeline.errors import PipelineError
from pipeline.settings import from_mapping, to_mapping
from pipeline.registry import Registry, unknown
from pipeline.steps import DEFAULT_RESOURCES, Resources, load_steps, register_step
from pipeline.steps.arguments import arg, json_arg

PER = ("system", "column", "table")
RESERVED = ("significance", "cells")  # folders of a table's artifacts that are not analyses


@dataclass(frozen=True)
class Job:
    """One analysis job as the rules see it: the params, the artifact paths (pipeline/paths.py), the table, the
    settings it reads (`kind`: the kind's own, or those of the kind it is part of) and its item: a cell system,
    a column or the whole table ("all"), as `per` says."""
    params: Any
    paths: Any
    table: Any
    item: str
    kind: str
    per: str = "system"

    @property
    def settings(self) -> dict:
        return self.table.analyses[self.kind]

    def corpus(self):
        """The corpus of the item: its system's, or the column's first system's."""
        if self.per == "column":
            return self.params.corpus_of(next(iter(self.table.column(self.item).values())))
        return self.params.corpus_of(self.item)

    def split(self) -> str:
        """The test set of the item: its column's, or the column where its system is tested."""
        return self.table.test_sets[self.item] if self.per == "column" else self.table.test_set_of(self.item)

    def test_data(self) -> dict:
        """A trained model and the item's subword test set with the vocabularies."""
        corpus, split = self.corpus().name, self.split()
        return {"model": self.paths.model(self.item), "src": self.paths.data(corpus, "bpe", f"{split}.src"),
                "tgt": self.paths.data(corpus, "bpe", f"{split}.tgt"),
                "src_vocab": self.paths.data(corpus, "bpe", "vocab.src"),
                "tgt_vocab": self.paths.data(corpus, "bpe", "vocab.tgt")}


@dataclass(frozen=True)
class Task:
    """What a kind's run function gets: its input files, checked settings, context and output paths."""
    inputs: dict
    settings: Any
    context: dict
    outputs: dict  # "result" (the JSON the function's return value is written to) and the kind's extra outputs


@dataclass(frozen=True)
class Analysis:
    """A declared analysis kind (see the module docstring)."""
    kind: str
    settings: type
    inputs: Callable[[Job], Mapping[str, Any]]
    run: Callable[[Task], dict]
    code: tuple[str, ...] = ()
    per: str = "system"
    context: Callable[[Job], dict] = lambda job: {}
    extra_outputs: Mapping[str, str] = field(default_factory=dict)  # name -> file suffix beside <item> ("/": a folder)
    part_of: str | None = None  # a kind run as part of another (its settings): not named in a table
    resources: Mapping[str, Resources] = field(default_factory=lambda: dict(DEFAULT_RESOURCES))
    downloads: bool = False  # fetches files: a local rule, run where the submit host's internet is

    @property
    def step(self) -> str:
        return self.kind.replace("_", "-")

    @property
    def rule(self) -> str:
        return f"analysis_{self.kind}"

    @property
    def modules(self) -> tuple[str, ...]:
        return (self.run.__module__,) + tuple(self.code)

    def check(self, raw: Mapping[str, Any] | None) -> dict:
        """The settings of a table's analysis with defaults filled in; a bad key or value -> PipelineError."""
        return to_mapping(from_mapping(self.settings, raw))


# declared by the shared step modules and every paper's package (load_steps imports both); the same function
# declared again (its module imported twice) replaces itself
ANALYSES: Registry = Registry("analysis kind", discover=load_steps,
                              same=lambda old, new: (old.run.__module__, old.run.__qualname__)
                              == (new.run.__module__, new.run.__qualname__))


@dataclass
class AnalysisArgs:
    settings: str = arg(help="JSON: the table's settings of this analysis")
    inputs: str = arg(help="JSON: name -> input file (or list of files)")
    output: str = arg(help="the result (JSON)")
    context: str = arg("{}", help="JSON: what else the analysis needs to know (languages, splits, ...)")
    extra: str = arg("{}", help="JSON: name -> path of the analysis's other outputs")


def register_analysis(kind: str, settings: type, *, inputs: Callable, code: tuple[str, ...] = (), per: str = "system",
                      context: Callable | None = None, extra_outputs: Mapping[str, str] | None = None,
                      part_of: str | None = None, resources: Mapping[str, Resources] | None = None,
                      downloads: bool = False, help: str = "") -> Callable:
    """Decorator: declare run(task) -> dict as the analysis `kind` and its step (see the module docstring)."""
    if per not in PER:
        raise PipelineError(f"analysis {kind!r}: per {per!r}; expected one of {', '.join(PER)}")
    if kind in RESERVED or not kind.replace("_", "").isalnum():
        raise PipelineError(f"analysis {kind!r}: expected a name of letters, digits and '_', not one of "
                            f"{', '.join(RESERVED)}")

    def register(run: Callable) -> Callable:
        analysis = Analysis(kind, settings, inputs, run, tuple(code), per, context or (lambda job: {}),
                            dict(extra_outputs or {}), part_of, dict(resources or DEFAULT_RESOURCES), downloads)

        def step(args: AnalysisArgs) -> None:
            from pipeline.fileio import write_json
            task = Task(json_arg(args.inputs, "--inputs"), from_mapping(settings, json_arg(args.settings, "--settings")),
                        json_arg(args.context, "--context"), {"result": args.output, **json_arg(args.extra, "--extra")})
            write_json(args.output, run(task))

        step.__module__, step.__qualname__ = run.__module__, run.__qualname__
        register_step(analysis.step, AnalysisArgs, rules=(analysis.rule,), stage="table", code=tuple(code),
                      resources=analysis.resources, help=help or (run.__doc__ or kind).splitlines()[0])(step)
        ANALYSES.add(kind, analysis)
        return run

    return register


def analyses() -> dict[str, Analysis]:
    """Every declared kind: the shared ones and every paper's."""
    return ANALYSES.every()


def get_analysis(kind: str) -> Analysis:
    known = {k: a for k, a in analyses().items() if a.part_of is None}
    if kind not in known:
        raise PipelineError(unknown("analysis kind", kind, known))
    return known[kind]


def items(table, analysis: Analysis) -> list[str]:
    """The items an analysis kind runs on in a table: its cell systems, its columns or the table itself ("all")."""
    if analysis.per == "system":
        return table.systems()
    if analysis.per == "column":
        return sorted(table.test_sets)
    return ["all"]


def table_jobs(params, paths, table) -> list[tuple[Analysis, Job]]:
    """Every analysis job of a table: the kinds it names and the kinds run as part of them, one job per item."""
    named = set(table.analyses)
    kinds = [a for a in analyses().values() if a.kind in named or a.part_of in named]
    return [(a, job(params, paths, table, a, item)) for a in kinds for item in items(table, a)]


def job(params, paths, table, analysis: Analysis, item: str) -> Job:
    """The job of one analysis kind on one item of a table."""
    return Job(params, paths, table, item, analysis.part_of or analysis.kind, analysis.per)


def check_settings(kind: str, settings: Mapping[str, Any] | None) -> dict:
    """The settings of a table's analysis `kind` checked, with defaults filled in (PipelineError naming the key)."""
    return get_analysis(kind).check(settings)
