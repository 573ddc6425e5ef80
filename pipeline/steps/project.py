"""Steps about the project itself: check the params files, list targets, plan a build, write dvc.yaml, compare a
rebuilt table, describe an experiment, render a report page."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline.cost import MEASUREMENTS
from pipeline.errors import PipelineError
from pipeline.fileio import atomic_open
from pipeline.scales import SCALES
from pipeline.steps import register_step, rule_steps
from pipeline.steps.arguments import arg


@dataclass
class CheckConfigArgs:
    params: str = arg("params.yaml", help="params.yaml (the papers' files are read from params/ beside it)")
    scale: str | None = arg(None, choices=SCALES, help="check this scale (default: params.yaml's)")


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
    scale: str | None = arg(None, choices=SCALES, help="at this scale (default: params.yaml's)")
    stage_of: str | None = arg(None, help="print instead the dvc.yaml stage that builds this target")


@register_step("targets", TargetsArgs, help="print the table and figure targets the params files define")
def targets(args: TargetsArgs) -> None:
    from pipeline.config import load_params
    from pipeline.dvcgen import stage_name
    tables = load_params(args.params, scale=args.scale).tables.values()
    if args.stage_of is not None:
        found = [stage_name("figure" if t.figure else "table", t.name) for t in tables if t.target == args.stage_of]
        if not found:
            raise PipelineError(f"targets --stage-of {args.stage_of}: no table or figure of the params files builds "
                                f"it; expected one of `python -m pipeline targets`")
        print(found[0])
        return
    for table in tables:
        if args.paper is None or table.paper == args.paper:
            print(table.target)


@dataclass
class PlanArgs:
    targets: list[str] = arg([], positional=True, help="tables or figures, results/<scale>/<paper>/<name>.tsv (default: "
                                                       "every one of the scale)")
    config: list[str] = arg([], help="Snakemake's --config values, e.g. scale=paper gpu_model=A100")
    dry_run: str | None = arg(None, help="read this `snakemake -n` printout (- : standard input) instead of running one")
    params: str = arg("params.yaml")
    step_times: str = arg(str(MEASUREMENTS), help="step times measured on a GPU (JSON), for the GPU-hours")


@register_step("plan", PlanArgs, help="say what a build will run and why, and the GPU-hours it will spend, before it "
                                      "starts (from a dry run)")
def plan(args: PlanArgs) -> None:
    import subprocess
    import sys

    from pipeline.config import load_params
    from pipeline.cost import Estimator, load_measurements
    from pipeline.dry_run import planned_jobs
    from pipeline.planning import plan_lines, systems_line, total_line

    config = dict(item.partition("=")[::2] for item in args.config)
    params = load_params(args.params, scale=config.get("scale"))
    tables = {t.target: t for t in params.tables.values()}
    unknown = [t for t in args.targets if t not in tables]
    if unknown:
        raise PipelineError(f"{', '.join(unknown)}: not a table or figure at scale {params.scale}; expected one of "
                            f"`python -m pipeline targets --scale {params.scale}`")
    if args.dry_run is None:
        dry = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--config", *args.config,
                              "--", *(args.targets or sorted(tables))], capture_output=True, text=True)
        if dry.returncode != 0:
            raise PipelineError(f"the dry run of the targets failed:\n{dry.stderr[-3000:]}{dry.stdout[-3000:]}")
        text = dry.stdout
    else:
        text = sys.stdin.read() if args.dry_run == "-" else Path(args.dry_run).read_text(encoding="utf-8")
    jobs = planned_jobs(text)
    for target in args.targets:
        table = tables[target]
        print(systems_line(target, [m for system in table.systems() for m in params.members(system)], jobs))
    if not jobs:
        print("nothing to run: every output is up to date")
        return
    hours, gpu = None, config.get("gpu_model", params.gpu_model)
    label = f"{gpu} (time limits assume it)"
    if params.scale == "smoke":  # a few hundred updates on the embedded corpora: at most the jobs' limits
        gpu = label = "the GPUs asked, at most for their time limits"

        def hours(job) -> float:
            return job.gpu_hours_asked
    elif any(job.gpus > 0 for job in jobs):
        estimator = Estimator(params, load_measurements(args.step_times), gpu)

        def hours(job) -> float:
            if job.gpus == 0:
                return 0.0
            return estimator.run(job.wildcards["exp"]).gpu_hours if job.rule == "train" else \
                estimator.step_hours(job.rule)
    print(f"{params.scale} scale: what runs and why" + (f", GPU-hours on {label}" if hours else ""))
    print("\n".join(plan_lines(jobs, hours)))
    print(total_line(jobs, hours, gpu))


@dataclass
class CostArgs:
    targets: list[str] = arg([], positional=True, help="tables or figures (default: every one of the scale)")
    scale: str = arg("paper", choices=SCALES)
    params: str = arg("params.yaml")
    step_times: str = arg(str(MEASUREMENTS), help="step times measured on a GPU (JSON, the GPU named)")
    gpu: str | None = arg(None, help="the GPU model to estimate for (default: params.yaml's gpu_model): the measured "
                                     "one or one the step times scale to (H200, H100, A100, V100)")
    runs: bool = arg(False, help="also one line per training run")


@register_step("cost", CostArgs, help="GPU-hours of each paper's build, from step times measured on a GPU")
def cost(args: CostArgs) -> None:
    import os
    import subprocess
    import sys

    from dataclasses import replace

    from pipeline.config import load_params
    from pipeline.cost import HEADER, MARGIN, Estimator, costs_by_paper, load_measurements
    from pipeline.dry_run import planned_jobs

    params = load_params(args.params, scale=args.scale)
    measurements = load_measurements(args.step_times)
    gpu = args.gpu or params.gpu_model
    if gpu not in measurements.gpu_models:
        raise PipelineError(f"--gpu: expected one of {', '.join(measurements.gpu_models)} (the GPU models of "
                            f"{os.path.relpath(args.step_times)}), got {gpu!r}")
    params = replace(params, gpu_model=gpu)   # the time limits the dry run plans: for this GPU
    tables = {t.target for t in params.tables.values()}
    unknown = [t for t in args.targets if t not in tables]
    if unknown:
        raise PipelineError(f"{', '.join(unknown)}: not a table or figure at scale {args.scale}; expected one of "
                            f"`python -m pipeline targets --scale {args.scale}`")
    estimator = Estimator(params, measurements)
    dry = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--forceall", "--cores", "1", "--config",
                          f"scale={args.scale}", f"gpu_model={gpu}", "--", *(args.targets or sorted(tables))],
                         capture_output=True, text=True)
    if dry.returncode != 0:
        raise PipelineError(f"the dry run of the targets failed:\n{dry.stderr[-3000:]}{dry.stdout[-3000:]}")
    threads = {rule: step.resources[params.scale].threads for rule, step in rule_steps().items()}
    rows, runs = costs_by_paper(estimator, planned_jobs(dry.stdout), threads)
    model = measurements.gpu_models[gpu]
    scaled = "measured" if gpu in measurements.gpu else \
        f"scaled from {measurements.gpu} x {model['time_factor']:g}, not measured ({model['basis']})"
    print(f"{args.scale} scale; GPU {gpu}: {scaled}; step times of {os.path.relpath(args.step_times)}, each run in "
          f"its layout (a recipe's batch over its GPUs); every job counted (snakemake -n --forceall); time limits: "
          f"{MARGIN:g} x the estimate; CPU-h: the cores the GPU jobs hold (the CPU-only jobs' time is not estimated)")
    for r in runs if args.runs else ():
        print(f"  {r.experiment}: {r.family}, {r.gpus} GPU(s) x {r.per_rank} an update, {r.updates:,} updates, "
              f"{r.target_tokens / 1e9:.2f}G target tokens, {r.gpu_hours:.1f} GPU-h = {r.wall_hours:.1f} h; time "
              f"limit {r.asked_minutes / 60:.1f} h (needs {r.needed_minutes / 60:.1f} h)")
    print("\t".join(HEADER))
    for row in rows:
        print("\t".join(f"{v:,.0f}" if isinstance(v, float) else str(v) for v in row))
    for r in runs:
        if r.asked_minutes < r.needed_minutes and args.scale != "smoke":   # smoke: SMOKE_MINUTES (pipeline/scales.py)
            print(f"warning: {r.experiment}'s jobs ask {r.asked_minutes} min in all (the train rule's runtime x its "
                  f"slices), under {MARGIN:g} x its estimate on {gpu} ({r.needed_minutes} min)", file=sys.stderr)


@dataclass
class DvcYamlArgs:
    params: str = arg("params.yaml")
    output: str = arg("dvc.yaml")
    check: bool = arg(False, help="only check that the file is up to date")


@register_step("dvc-yaml", DvcYamlArgs, help="write dvc.yaml (one stage per corpus, system, table and figure)")
def dvc_yaml(args: DvcYamlArgs) -> None:
    from pipeline.config import load_params
    from pipeline.dvcgen import dvc_yaml as generate
    text = generate(*(load_params(args.params, scale=scale) for scale in SCALES))
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
    scale: str | None = arg(None, choices=SCALES)
    vocab: int | None = arg(None, help="vocabulary size per side (default: the corpus's vocab_size, else its BPE "
                                       "merges)")


@register_step("describe", DescribeArgs, help="an experiment's model and parameter count at a scale")
def describe(args: DescribeArgs) -> None:
    from pipeline.config import load_params
    from pipeline.cost import approximate_parameters

    params = load_params(args.params, scale=args.scale)
    if args.experiment not in params.experiments:
        raise PipelineError(f"unknown experiment '{args.experiment}'; defined: {', '.join(params.experiments)}")
    exp = params.experiments[args.experiment]
    corpus = params.corpora[exp.corpus]  # our approximation when no vocabulary is built yet: its cap, else the merges
    vocab = args.vocab or corpus.vocab_size or corpus.bpe_merges

    def count(name: str) -> int:
        return approximate_parameters(params, name, vocab)

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
