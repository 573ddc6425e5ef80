"""The papers, one subpackage each (pipeline/papers/<paper>/); importing this package imports them all, so that
every paper's steps, metrics, tests and analysis kinds register (pipeline/steps: load_steps). A paper's layouts
register from the modules its package names in LAYOUT_MODULES (pipeline/report/layouts.py: load_papers)."""
from __future__ import annotations

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__, prefix=f"{__name__}."):
    if _module.ispkg:
        importlib.import_module(_module.name)
