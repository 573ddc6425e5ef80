"""Every paper's table and figure layouts by name (the params.yaml table name), behind one build()."""
from __future__ import annotations

from matplotlib.figure import Figure

from pipeline.errors import PipelineError
from pipeline.report import hao2019, zeng2021
from pipeline.report.table import Table

MODULES = {"hao2019": hao2019, "zeng2021": zeng2021}
LAYOUTS = {name: module for module in MODULES.values() for name in module.LAYOUTS}


def build(name: str, ours: dict, footer: dict) -> tuple[Table, Figure | None]:
    """Run the layout `name`: (table, figure), figure None for the plain tables."""
    if name not in LAYOUTS:
        raise PipelineError(f"table '{name}': no layout for it; known: {', '.join(LAYOUTS)}")
    return LAYOUTS[name].build(name, ours, footer)
