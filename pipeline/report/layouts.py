"""The layout registry: each paper's package registers its layouts by table name; build() runs one.

A layout is fn(cells, facts) (pipeline/report/cells.py): a table layout returns a Table, a figure layout
(registered with figure=True) a (Table, Figure) pair. Papers live in pipeline/papers/<paper>/ and register on import
(pipeline.registry: load_plugins imports them).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from matplotlib.figure import Figure

from pipeline.errors import PipelineError
from pipeline.registry import Registry, load_plugins
from pipeline.report.table import Table

SMOKE_LINE = ("smoke scale: a check that the paper scale's models, recipes and code paths build this on GPUs, trained "
              "for a few hundred updates on the embedded corpora; its numbers are no result (docs/paper-scale.md)")


@dataclass(frozen=True)
class Layout:
    """A registered layout: its function and whether it also draws a figure."""

    function: Callable
    figure: bool = False


def _where(function: Callable) -> str:
    return f"{function.__module__}.{function.__qualname__}"


def load_papers() -> dict[str, Layout]:
    """Import every paper's layout modules (its package's LAYOUT_MODULES: pipeline.registry.load_plugins), so that
    all layouts register; returns LAYOUTS."""
    load_plugins(layouts=True)
    return LAYOUTS


# the same function registered again (its module imported twice) replaces itself
LAYOUTS: Registry = Registry("layout", same=lambda old, new: _where(old.function) == _where(new.function),
                             discover=load_papers)


def register_layout(name: str, figure: bool = False) -> Callable:
    """Decorator: register fn(cells, facts) as the layout of table `name` (figure=True: it returns (Table, Figure))."""
    if not isinstance(name, str) or not name:
        raise PipelineError(f"register_layout: expected a table name such as 'paper-table1', got {name!r}")

    def register(function: Callable) -> Callable:
        known = LAYOUTS.get(name)
        where = f"by {_where(known.function)} and by {_where(function)}" if known else ""
        LAYOUTS.add(name, Layout(function, figure), where)
        return function

    return register


def build(name: str, cells: dict, facts: dict) -> tuple[Table, Figure | None]:
    """Run the layout `name`: (table, figure), figure None for a table layout; unknown name -> PipelineError.
    Every table's footer ends with the precision its systems were trained and decoded at (facts["precision"]) and
    what they were computed with (facts["compute"]: torch, and on the CPU its code path and threads); at smoke scale,
    after a line saying its numbers are no result (SMOKE_LINE)."""
    load_papers()
    layout = LAYOUTS.lookup(name, plugins=False)
    result = layout.function(cells, facts)
    if layout.figure:
        if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], Table)
                and isinstance(result[1], Figure)):
            raise PipelineError(f"layout {name!r}: expected a (Table, Figure) pair from a figure layout, "
                                f"got {type(result).__name__}")
        table, figure = result
    elif isinstance(result, Table):
        table, figure = result, None
    else:
        raise PipelineError(f"layout {name!r}: expected a Table from a table layout (figure=False), "
                            f"got {type(result).__name__}")
    if facts.get("scale") == "smoke":
        table.footer.append(SMOKE_LINE)
    if facts.get("precision"):
        table.footer.append(f"precision (training and decoding): {facts['precision']}")
    if facts.get("compute"):  # what the bits depend on (pipeline/cpu_math.py)
        table.footer.append(f"training computed with: {facts['compute']}")
    return table, figure
