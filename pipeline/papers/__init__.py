"""The papers, one subpackage each (pipeline/papers/<paper>/): the plug-ins. Importing this package imports them all
(pipeline.registry: load_plugins), so that every paper's steps, metrics, tests and analysis kinds register
(pipeline/steps: load_steps imports this package). A paper's layouts register from the modules its package names in
LAYOUT_MODULES (load_plugins(layouts=True), which pipeline/report/layouts.py calls)."""
from __future__ import annotations

from pipeline.registry import load_plugins

load_plugins()
