# Per table or figure: significance of proposed rows against their baselines, the analyses the table asks for, then
# the paper's layout. What a table derives lives in artifacts/<scale>/tables/<name>/ (its DVC stage's output).
import os

from pipeline.analyses import table_jobs
from pipeline.report.page import display_name
from pipeline.steps.tables import table_facts


def table_of(wildcards):
    """The table or figure behind results/<scale>/<paper>/<output>.*: <paper>-<output> in params/<paper>.yaml."""
    return f"{wildcards.paper}-{wildcards.output}"


def significance_inputs(wildcards):
    spec = P.tables[wildcards.table]
    row, col = spec.tested_at(wildcards.system, wildcards.split)
    metric, _ = spec.tested()
    return {"system": PATHS.score(wildcards.system, wildcards.split, metric),
            "baseline": PATHS.score(spec.baseline(row, col), wildcards.split, metric)}


rule significance:
    input:
        unpack(significance_inputs),
    output:
        PATHS.significance("{table}", "{system}", "{split}"),
    wildcard_constraints:
        system=r"[^./]+",
        split=r"test[^./]*",
    params:
        code=step_code("significance"),
        settings=lambda wc: q({k: getattr(P.tables[wc.table].significance, k) for k in ("test", "n_samples", "seed")}),
        field=lambda wc: P.tables[wc.table].tested()[1],
    threads: threads_of("significance")
    resources:
        **job_resources("significance"),
    log:
        PATHS.log("significance", "{table}", "{system}.{split}"),
    shell:
        "python -m pipeline significance --baseline {input.baseline} --system {input.system} "
        "--settings {params.settings} --field '{params.field}' --output {output} > {log} 2>&1"


def analysis_files(table, system, column):
    """kind -> the result file of a cell's analyses: its system's, its column's or the table's."""
    item = {"system": system, "column": column, "table": "all"}
    return {analysis.kind: PATHS.analysis(table, analysis.kind, item[analysis.per])
            for analysis, _ in table_jobs(P, PATHS, P.tables[table]) if analysis.part_of is None}


def cell_files(table):
    """row -> column -> the files behind one cell: score files per metric, run summary, significance, analyses."""
    spec = P.tables[table]
    cells = {}
    for row, by_col in spec.cells.items():
        for col, system in by_col.items():
            split = spec.test_sets[col]
            cell = {"system": system,
                    "scores": {m: PATHS.score(system, split, m) for m in spec.metrics()},
                    "train": [PATHS.train_summary(m) for m in P.members(system)],
                    "analyses": analysis_files(table, system, col)}
            baseline = spec.baseline(row, col)
            if baseline is not None:
                cell["significance"] = PATHS.significance(table, system, split)
                cell["baseline"] = {"system": baseline,
                                    "scores": {m: PATHS.score(baseline, split, m) for m in spec.metrics()},
                                    "train": [PATHS.train_summary(m) for m in P.members(baseline)]}
            cells.setdefault(row, {})[col] = cell
    return cells


def table_spec(table):
    """What the generic table step reads (cells' files) and the facts its footer states (pipeline/steps/tables.py)."""
    spec = P.tables[table]
    return {"layout": spec.layout, "values": dict(spec.values), "cells": cell_files(table),
            "facts": table_facts(P, table)}


def table_inputs(wildcards):
    files = set()

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key != "system":
                    walk(value)
        elif isinstance(node, list):
            files.update(node)
        else:
            files.add(node)

    walk(cell_files(table_of(wildcards)))
    return sorted(files)


TABLE_OUTPUTS = alternatives(t.output for t in P.tables.values() if not t.figure)
FIGURE_OUTPUTS = alternatives(t.output for t in P.tables.values() if t.figure)


rule table:
    input:
        table_inputs,
    output:
        tsv=f"{RESULTS}/{{paper}}/{{output}}.tsv",
        md=f"{RESULTS}/{{paper}}/{{output}}.md",
        cells=PATHS.cells("{paper}-{output}"),
    wildcard_constraints:
        output=TABLE_OUTPUTS,
    params:
        code=lambda wc: table_code(table_of(wc)),
        spec=lambda wc: q(table_spec(table_of(wc))),
    threads: threads_of("table")
    resources:
        **job_resources("table"),
    log:
        PATHS.log("table", "{paper}-{output}"),
    shell:
        "python -m pipeline table --spec {params.spec} --output {output.tsv} --markdown {output.md} "
        "--cells {output.cells} > {log} 2>&1"


rule figure:
    input:
        table_inputs,
    output:
        tsv=f"{RESULTS}/{{paper}}/{{output}}.tsv",
        png=f"{RESULTS}/{{paper}}/{{output}}.png",
        cells=PATHS.cells("{paper}-{output}"),
    wildcard_constraints:
        output=FIGURE_OUTPUTS,
    params:
        code=lambda wc: table_code(table_of(wc)),
        spec=lambda wc: q(table_spec(table_of(wc))),
    threads: threads_of("table")
    resources:
        **job_resources("table"),
    log:
        PATHS.log("figure", "{paper}-{output}"),
    shell:
        "python -m pipeline table --spec {params.spec} --output {output.tsv} --figure {output.png} "
        "--cells {output.cells} > {log} 2>&1"


def other_scale(wildcards):
    raise WorkflowError(f"results/{wildcards.scale}/{wildcards.paper}/{wildcards.output}.tsv is built at scale "
                        f"{wildcards.scale}, and this run's scale is {P.scale} (params.yaml 'scale'): add "
                        f"--config scale={wildcards.scale}")


rule other_scale:  # a target of the other scale fails while the DAG is built, saying how to ask for it
    input:
        other_scale,
    output:
        "results/{scale}/{paper}/{output}.tsv",
    wildcard_constraints:
        scale=alternatives(set(SCALES) - {P.scale}),
    shell:
        "false"


# Snakemake's report (`make report`): one self-contained HTML page per table and figure, read from results/ as it
# stands (a fresh clone's committed files need no rebuild), flagged for the report and grouped by paper.
def page(table):
    """The report page of a table or figure (params entry)."""
    return PATHS.report_page(table.paper, table.output)


rule report_page:
    input:
        tsv=f"{RESULTS}/{{paper}}/{{output}}.tsv",
        rendering=lambda wc: P.tables[table_of(wc)].rendering,
        code="pipeline/report/page.py",  # a change of the page's layout renders every page again
    output:
        report(PATHS.report_page("{paper}", "{output}"), caption="../report/page.rst", category="{paper}",
               subcategory=lambda wc: "Figures" if P.tables[table_of(wc)].figure else "Tables",
               labels=lambda wc: {"name": display_name(wc.output)}),
    wildcard_constraints:
        output=alternatives(t.output for t in P.tables.values()),
    params:
        name=lambda wc: f"{wc.paper} {display_name(wc.output)}",
    threads: threads_of("report-page")
    resources:
        **job_resources("report-page"),
    log:
        PATHS.log("report_page", "{paper}-{output}"),
    shell:
        "python -m pipeline report-page --tsv {input.tsv} --rendering {input.rendering} --name {params.name:q} "
        "--output {output} > {log} 2>&1"


rule report_pages:  # the tables and figures results/ holds (workflows/report.sh names the others)
    input:
        [page(table) for table in P.tables.values() if os.path.exists(table.target)],
