"""The papers, one subpackage each (pipeline/papers/<paper>/); importing this package imports them all, so that
every paper's layouts register (pipeline/report/layouts.py)."""
from __future__ import annotations

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__, prefix=f"{__name__}."):
    if _module.ispkg:
        importlib.import_module(_module.name)
