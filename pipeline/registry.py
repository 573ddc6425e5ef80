"""The ground floor of every registry: a name -> entry table with one duplicate check and one message for an unknown
name, and the one plug-in discovery (fairseq's registry.py is the model).

A registry is declared where its entries are defined (`METRICS = Registry("metric")` in
pipeline/evaluate/metrics.py) and filled by a decorator that calls `add`. The papers are the plug-ins: each package
under pipeline/papers/ registers its steps, metrics, tests and analysis kinds when it is imported, its layouts when
the modules it names in LAYOUT_MODULES are (matplotlib: the table step only). `load_plugins` imports them by name,
so that no module has to import a layer above it to see them (tests/workflow/test_layers.py holds the layers).
"""
from __future__ import annotations

import difflib
import importlib
import pkgutil
from typing import Callable, TypeVar

from pipeline.errors import PipelineError

PLUGINS = "pipeline.papers"   # the package of plug-in packages, one per paper

T = TypeVar("T")


class Registry(dict):
    """name -> entry of one kind ("metric", "layout", ...): a dict, filled through `add`, read through `lookup`.

    `same(old, new)`: whether registering `new` under a name `old` already holds is the same declaration again (a
    module imported twice, e.g. as __main__ and by name), which replaces it; by default any second entry is refused.
    `discover()`: what imports the modules that register entries of this kind (default: load_plugins).
    """

    def __init__(self, kind: str, same: Callable[[object, object], bool] | None = None,
                 discover: Callable[[], None] | None = None):
        super().__init__()
        self.kind = kind
        self.same = same
        self.discover = discover or load_plugins

    def copy(self) -> "Registry":
        """A registry of the same kind holding the same entries (a test registers into it and drops it)."""
        other = Registry(self.kind, self.same, self.discover)
        other.update(self)
        return other

    def add(self, name: str, entry: T, where: str = "") -> T:
        """Register `entry` as `name`; PipelineError if another entry holds the name. `where`: what declares the
        new entry, for the message."""
        known = self.get(name)
        if name in self and not (self.same is not None and self.same(known, entry)):
            by = f" ({where})" if where else ""
            raise PipelineError(f"{self.kind} {name!r}: registered twice{by}; expected one {self.kind} per name")
        self[name] = entry
        return entry

    def lookup(self, name: str, plugins: bool = True) -> object:
        """The entry called `name`, after importing the plug-ins if it is not yet known (plugins=True); an unknown
        name is a PipelineError listing the known names and the closest ones."""
        if name not in self and plugins:
            self.discover()
        if name not in self:
            raise PipelineError(unknown(self.kind, name, self))
        return self[name]

    def every(self) -> "Registry":
        """Every entry: this registry after importing the plug-ins."""
        self.discover()
        return self


def unknown(kind: str, name: object, known) -> str:
    """The one message for a name no registry holds: the known names, and those close to it."""
    names = sorted(str(k) for k in known)
    close = difflib.get_close_matches(str(name), names, n=3)
    hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
    return f"unknown {kind} {name!r}{hint}; expected one of {', '.join(names) or 'none'}"


def load_plugins(*, layouts: bool = False) -> None:
    """Import every plug-in package under PLUGINS (its steps, metrics, tests and analysis kinds register) and, with
    `layouts`, the modules each names in LAYOUT_MODULES (its layouts and figures)."""
    root = importlib.import_module(PLUGINS)
    for info in sorted(pkgutil.iter_modules(root.__path__, prefix=f"{PLUGINS}."), key=lambda m: m.name):
        if not info.ispkg:
            continue
        package = importlib.import_module(info.name)
        for module in getattr(package, "LAYOUT_MODULES", ()) if layouts else ():
            importlib.import_module(f"{info.name}.{module}")
