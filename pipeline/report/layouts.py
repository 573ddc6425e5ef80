"""The layout registry: each paper's package registers its layouts by table name; build() runs one.

A layout is fn(cells, facts) (pipeline/report/cells.py): a table layout returns a Table, a figure layout
(registered with figure=True) a (Table, Figure) pair. Papers live in pipeline/papers/<paper>/ and register on import.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable

from matplotlib.figure import Figure

from pipeline.errors import PipelineError
from pipeline.report.table import Table

SMOKE_LINE = ("smoke scale: a check that the paper scale's models, recipes and code paths build this on GPUs, trained "
              "for a few hundred updates on the embedded corpora; its numbers are no result (docs/paper-scale.md)")


@dataclass(frozen=True)
class Layout:
    """A registered layout: its function and whether it also draws a figure."""

    function: Callable
    figure: bool = False


LAYOUTS: dict[str, Layout] = {}


def register_layout(name: str, figure: bool = False) -> Callable:
    """Decorator: register fn(cells, facts) as the layout of table `name` (figure=True: it returns (Table, Figure))."""
    if not isinstance(name, str) or not name:
        raise PipelineError(f"register_layout: expected a table name such as 'paper-table1', got {name!r}")

    def register(function: Callable) -> Callable:
        known = LAYOUTS.get(name)
        where = f"{function.__module__}.{function.__qualname__}"
        if known is not None and f"{known.function.__module__}.{known.function.__qualname__}" != where:
            raise PipelineError(f"layout {name!r}: registered by {known.function.__module__}."
                                f"{known.function.__qualname__} and by {where}; expected one layout per name")
        LAYOUTS[name] = Layout(function, figure)
        return function

    return register


def load_papers() -> dict[str, Layout]:
    """Import every paper's layout modules (its package's LAYOUT_MODULES), so that all layouts register; returns
    LAYOUTS."""
    papers = importlib.import_module("pipeline.papers")
    for module in pkgutil.iter_modules(papers.__path__, prefix=f"{papers.__name__}."):
        package = importlib.import_module(module.name)
        for name in getattr(package, "LAYOUT_MODULES", ()):
            importlib.import_module(f"{module.name}.{name}")
    return LAYOUTS


def build(name: str, cells: dict, facts: dict) -> tuple[Table, Figure | None]:
    """Run the layout `name`: (table, figure), figure None for a table layout; unknown name -> PipelineError.
    Every table's footer ends with the precision its systems were trained and decoded at (facts["precision"]) and
    what they were computed with (facts["compute"]: torch, and on the CPU its code path and threads); at smoke scale,
    after a line saying its numbers are no result (SMOKE_LINE)."""
    load_papers()
    if name not in LAYOUTS:
        raise PipelineError(f"layout {name!r}: unknown; known layouts: {', '.join(sorted(LAYOUTS)) or 'none'}")
    layout = LAYOUTS[name]
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
