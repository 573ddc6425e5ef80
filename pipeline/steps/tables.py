"""The table step: a table or figure built from its cells' files and the paper's registered layout (the rules
`table` and `figure`)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.fileio import write_json
from pipeline.steps import register_step
from pipeline.steps.arguments import arg, json_arg


@dataclass
class TableArgs:
    spec: str = arg(help="JSON: layout, values, cells (row -> column -> files), facts")
    output: str = arg(help="the table (.tsv)")
    cells: str = arg(help="where to write the cells and facts the layout was given (JSON)")
    markdown: str | None = arg(None, help="the rendered table (.md); exactly one of --markdown and --figure")
    figure: str | None = arg(None, help="the figure (.png)")


def table_facts(p, table: str) -> dict:
    """The facts a table's footer states (scale, corpora, test sets, significance, analyses, combinations), from the
    params `p` (the rules `table` and `figure` pass them in --spec)."""
    from pipeline.data.registry import get_corpus
    spec = p.tables[table]
    columns = sorted({col for row in spec.cells.values() for col in row})
    corpus = {col: p.corpus_of(next(r[col] for r in spec.cells.values() if col in r)) for col in columns}
    significance = None
    if spec.significance is not None:
        significance = {k: getattr(spec.significance, k) for k in ("value", "test", "n_samples", "seed")}
    return {"table": table, "scale": p.scale, "columns": columns,
            "corpora": {col: c.source for col, c in corpus.items()},
            "corpus_descriptions": {col: get_corpus(c.source).description for col, c in corpus.items()},
            "test_sets": dict(spec.test_sets), "significance": significance, "analyses": dict(spec.analyses),
            "combinations": {name: {"method": c.method, "inputs": c.inputs, "settings": c.settings}
                             for name, c in p.combinations.items() if name in spec.systems()}}


@register_step("table", TableArgs, rules=("table", "figure"), stage="table",
               code=("pipeline.report.cells", "pipeline.report.layouts", "pipeline.report.table",
                     "pipeline.report.figures"),
               help="build a table or figure from its cells' files and the paper's layout")
def table(args: TableArgs) -> None:
    from pipeline.report.cells import read_cells
    from pipeline.report.layouts import build
    from pipeline.report.table import write_table
    if (args.markdown is None) == (args.figure is None):
        raise PipelineError("table: expected exactly one of --markdown (a table) and --figure (a figure)")
    spec = json_arg(args.spec, "--spec")
    cells, facts = read_cells(spec)
    write_json(args.cells, {"cells": cells, "facts": facts})  # what the layout was given: provenance
    built, figure = build(spec["layout"], cells, facts)
    if args.figure:
        from pipeline.report.figures import save_figure
        if figure is None:
            raise PipelineError(f"layout '{spec['layout']}' is a table, not a figure; use --markdown")
        write_table(built, args.output)
        save_figure(figure, Path(args.figure))
    else:
        write_table(built, args.output, args.markdown)
        print(built.to_markdown())
