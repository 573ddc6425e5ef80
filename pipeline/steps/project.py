"""Steps about the project itself: check the params files, list targets, plan a build, write dvc.yaml, compare a
rebuilt table, describe an experiment, render a report page."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.fileio import atomic_open
from pipeline.steps import register_step
from pipeline.steps.arguments import arg


@dataclass
class CheckConfigArgs:
    params: str = arg("params.yaml", help="params.yaml (the papers' files are read from params/ beside it)")
    scale: str | None = arg(None, choices=("tiny", "paper"), help="check this scale (default: params.yaml's)")


@register_step("check-config", CheckConfigArgs, help="validate params.yaml and the papers' params files")
def check_config(args: CheckConfigArgs) -> None:
    from pipeline.config import load_params
    params = load_params(args.params, scale=args.scale)
    print(f"{args.params} + {len(params.files)} paper file(s): OK (scale {params.scale}; "
          f"{len(params.corpora)} corpora, "
          f"{len(params.models)} models, {len(params.systems)} systems, {len(params.tables)} tables and figures)")


@dataclass
class TargetsArgs:
    params: str = arg("params.yaml")
    paper: str | None = arg(None, help="only this paper's")
    scale: str | None = arg(None, choices=("tiny", "paper"), help="at this scale (default: params.yaml's)")


@register_step("targets", TargetsArgs, help="print the table and figure targets the params files define")
def targets(args: TargetsArgs) -> None:
    from pipeline.config import load_params
    for table in load_params(args.params, scale=args.scale).tables.values():
        if args.paper is None or table.paper == args.paper:
            print(table.target)


@dataclass
class PlanArgs:
    target: str = arg(help="a table or figure, results/<scale>/<paper>/<name>.tsv")
    dry_run: str = arg("-", help="the output of `snakemake -n` for it (- : standard input)")
    params: str = arg("params.yaml")


@register_step("plan", PlanArgs, help="say which systems of a table are trained and which remain (from a dry run)")
def plan(args: PlanArgs) -> None:
    import re
    import sys

    from pipeline.config import load_params
    params = load_params(args.params)
    table = next((t for t in params.tables.values() if t.target == args.target), None)
    if table is None:
        raise PipelineError(f"{args.target}: not a table or figure of the params files; expected one of "
                            f"`python -m pipeline targets`")
    text = sys.stdin.read() if args.dry_run == "-" else Path(args.dry_run).read_text(encoding="utf-8")
    jobs = set()  # (rule, first wildcard's value) of each job block
    for block in re.split(r"\n\s*\n", text):
        rule, wildcard = re.search(r"^(?:local)?rule (\w+):", block, re.M), re.search(r"^ +wildcards: \w+=([^,\n]+)",
                                                                                   block, re.M)
        if rule and wildcard:
            jobs.add((rule.group(1), wildcard.group(1)))
    to_train = sorted(value for rule, value in jobs if rule == "train")
    to_score = sorted(value for rule, value in jobs if rule == "score")
    needed = sorted({m for system in table.systems() for m in params.members(system)} | set(to_train))
    done = [name for name in needed if name not in to_train]
    print(f"{args.target}: {len(needed)} trained systems, {len(done)} done"
          + (f" ({', '.join(done)})" if done else "")
          + f", {len(to_train)} to train" + (f" ({', '.join(to_train)})" if to_train else "")
          + f"; {len(to_score)} to decode and score")


@dataclass
class DvcYamlArgs:
    params: str = arg("params.yaml")
    output: str = arg("dvc.yaml")
    check: bool = arg(False, help="only check that the file is up to date")


@register_step("dvc-yaml", DvcYamlArgs, help="write dvc.yaml (one stage per corpus, system, table and figure)")
def dvc_yaml(args: DvcYamlArgs) -> None:
    from pipeline.config import load_params
    from pipeline.dvcgen import dvc_yaml as generate
    text = generate(load_params(args.params))
    if args.check:
        current = Path(args.output).read_text(encoding="utf-8") if Path(args.output).exists() else ""
        if current != text:
            raise PipelineError(f"{args.output} is out of date with the params files; regenerate it with "
                                f"`python -m pipeline dvc-yaml`")
        print(f"{args.output}: up to date")
        return
    with atomic_open(args.output) as handle:
        handle.write(text)


@dataclass
class CompareArgs:
    committed: str = arg(help="the committed table (.tsv)")
    rebuilt: str = arg(help="the rebuilt table (.tsv)")
    strict: bool = arg(False, help="exit non-zero when they differ")


@register_step("compare", CompareArgs, help="compare a rebuilt table with the committed one, cell by cell")
def compare(args: CompareArgs) -> None:
    from pipeline.report.compare import compare_tables
    same, lines = compare_tables(Path(args.committed), Path(args.rebuilt))
    print("\n".join(lines))
    if not same and args.strict:
        raise PipelineError(f"{args.rebuilt} differs from {args.committed}")


@dataclass
class DescribeArgs:
    experiment: str = arg(positional=True, help="an experiment's name")
    params: str = arg("params.yaml")
    scale: str | None = arg(None, choices=("tiny", "paper"))
    vocab: int | None = arg(None, help="vocabulary size per side (default: the corpus's vocab_size, else its BPE "
                                       "merges)")


@register_step("describe", DescribeArgs, help="an experiment's model and parameter count at a scale")
def describe(args: DescribeArgs) -> None:
    import torch

    from pipeline.config import load_params
    from pipeline.models.registry import build_model, count_parameters

    params = load_params(args.params, scale=args.scale)
    if args.experiment not in params.experiments:
        raise PipelineError(f"unknown experiment '{args.experiment}'; defined: {', '.join(params.experiments)}")
    exp = params.experiments[args.experiment]
    corpus = params.corpora[exp.corpus]  # our approximation when no vocabulary is built yet: its cap, else the merges
    vocab = args.vocab or corpus.vocab_size or corpus.bpe_merges

    def count(name: str) -> int:
        with torch.device("meta"):  # shapes only: paper-size models cost no memory
            return count_parameters(build_model(params.model_spec(name), vocab, vocab))

    total = count(exp.name)
    line = (f"{exp.name} ({params.scale}): {params.model_spec(exp.name)}\n"
            f"  parameters: {total:,} with {vocab:,}-token vocabularies")
    if exp.init:
        line += f"\n  added over {exp.init}: {total - count(exp.init):,}"
    print(line)


@dataclass
class ReportPageArgs:
    tsv: str = arg(help="results/<scale>/<paper>/<output>.tsv")
    rendering: str = arg(help="its .md (a table) or .png (a figure)")
    name: str = arg(help="the page's title where the .md gives none (a figure)")
    output: str = arg()


@register_step("report-page", ReportPageArgs, rules=("report_page",),
               help="a table or figure of results/ as one HTML page for Snakemake's report")
def report_page(args: ReportPageArgs) -> None:
    from pipeline.report.page import write_page
    write_page(args.tsv, args.rendering, args.name, args.output)
