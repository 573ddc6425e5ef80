"""The layer order of pipeline/'s modules: no import runs up a layer and no modules import each other in a loop.

LAYERS is the one statement of the order (docs/design.md, "Layers", says it in words). Each entry names modules: "a.b"
is the module a.b and every module under it, "a.b.*" every module under a.b but not a.b itself; the longest entry
that matches a module decides its layer, so "pipeline.steps" (the step registry, its __init__) sits low and
"pipeline.steps.*" (the steps themselves) near the top. Every module must have a layer: a new one is placed here.

What counts as an import: every `import x` and `from x import y` of a pipeline module in the file, at module level,
inside functions and under `if TYPE_CHECKING` alike (a lazy import is a dependency all the same: the code needs the
module to run, and pipeline/code_deps.py follows it), relative imports resolved, `from pkg import mod` counted as the
module. A literal `importlib.import_module("pipeline...")` counts too, except in DISCOVERY: plug-in discovery, which
imports the layers above it by name on purpose (the papers register into the registries below them).

Cycles are taken over the same imports (module and function level): an import inside a function that closes a loop
only hides it from the interpreter.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# lowest first
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ground", ("pipeline", "pipeline.errors", "pipeline.fileio", "pipeline.locks", "pipeline.registry",
                "pipeline.code_deps", "pipeline.paths", "pipeline.cpu_math", "pipeline.fixed_gemm", "pipeline.speedups",
                "pipeline.dry_run", "pipeline.reasons", "pipeline.job_tree", "pipeline.build_guard",
                "pipeline.dvc_records")),
    ("declarations", ("pipeline.recipe", "pipeline.scales", "pipeline.settings", "pipeline.decoding",
                      "pipeline.precision", "pipeline.steps", "pipeline.steps.arguments", "pipeline.analyses")),
    ("data", ("pipeline.data",)),
    ("models", ("pipeline.models", "pipeline.loss", "pipeline.checkpoint", "pipeline.device", "pipeline.ensemble")),
    ("search and training", ("pipeline.beam", "pipeline.search", "pipeline.beam_search", "pipeline.static_search",
                             "pipeline.translate", "pipeline.train")),
    ("evaluation and combination", ("pipeline.evaluate", "pipeline.rerank", "pipeline.gmbr", "pipeline.external",
                                    "pipeline.derived_systems", "pipeline.cost")),
    ("params", ("pipeline.config",)),
    ("report", ("pipeline.report",)),
    ("papers", ("pipeline.papers",)),
    ("steps", ("pipeline.steps.*", "pipeline.code_facts", "pipeline.dvcgen", "pipeline.dvc_stage",
               "pipeline.planning")),
    ("command line", ("pipeline.cli", "pipeline.__main__")),
)

# where a lower layer may import the layers above it by name: the plug-in discovery (pipeline.registry.load_plugins),
# and load_steps, which imports the step modules and the papers (pipeline/steps/__init__.py is a code dependency of
# every trained system, so it keeps its own loop until a change that retrains anyway)
DISCOVERY = ("pipeline.registry", "pipeline.steps")


@dataclass(frozen=True)
class Import:
    module: str    # the importing module
    target: str    # the imported pipeline module
    file: str      # the importing file, relative to the root
    line: int


def modules(root: Path, package: str = "pipeline") -> dict[str, Path]:
    """Module name -> file of every .py file of the package under root."""
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _target(name: str, known: dict[str, Path]) -> str | None:
    """The module an imported name lives in: the longest known module that is the name or a prefix of it."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imports(root: Path, package: str = "pipeline") -> list[Import]:
    """Every import of a package module by a package module (see the module docstring)."""
    known = modules(root, package)
    found = []
    for module, path in known.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        is_package = path.name == "__init__.py"
        names: list[tuple[str, int]] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names += [(alias.name, node.lineno) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = module.split(".") if is_package else module.split(".")[:-1]
                    base = base[:len(base) - (node.level - 1)]
                    prefix = ".".join(base + ([node.module] if node.module else []))
                else:
                    prefix = node.module or ""
                # `from pkg import mod` imports the module pkg.mod; `from mod import name` the module mod
                names += [(f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in known else prefix, node.lineno)
                          for alias in node.names]
            elif (isinstance(node, ast.Call) and module not in DISCOVERY and node.args
                  and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
                  and ((isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                       or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__")))):
                names.append((node.args[0].value, node.lineno))
        for name, line in names:
            if name != package and not name.startswith(package + "."):
                continue
            target = _target(name, known)
            if target is not None and target != module:
                found.append(Import(module, target, str(path.relative_to(root)), line))
    return found


def layer_of(module: str, layers=LAYERS) -> int | None:
    """The index in `layers` of the longest entry that matches the module (see the module docstring)."""
    best, length = None, -1
    for index, (_, entries) in enumerate(layers):
        for entry in entries:
            if entry.endswith(".*"):
                matches = module.startswith(entry[:-1])
            else:
                matches = module == entry or module.startswith(entry + ".")
            if matches and len(entry) > length:
                best, length = index, len(entry)
    return best


def upward(found: list[Import], layers=LAYERS) -> list[str]:
    """One line per import that runs up a layer: file, line and both layers."""
    out = []
    for imp in found:
        low, high = layer_of(imp.module, layers), layer_of(imp.target, layers)
        if low is not None and high is not None and high > low:
            out.append(f"{imp.file}:{imp.line}: {imp.module} (layer {layers[low][0]!r}) imports {imp.target} "
                       f"(layer {layers[high][0]!r}, above it)")
    return out


def cycles(found: list[Import]) -> list[tuple[frozenset, list[str]]]:
    """The modules that import each other in a loop: each strongly connected component of more than one module, with
    one loop through it (a -> b -> ... -> a). A module's import of its own package (an ancestor) is left out: Python
    initialises the package before any module in it anyway (pipeline.models' lazy facade and its registry)."""
    graph = defaultdict(set)
    for imp in found:
        if not imp.module.startswith(imp.target + "."):
            graph[imp.module].add(imp.target)
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def visit(node: str) -> None:   # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [(component, _loop(component, graph)) for component in components]


def _loop(component: frozenset, graph) -> list[str]:
    """A path from the component's first module back to it inside the component (breadth first)."""
    start = min(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(graph[node] & component):
            if nxt == start:
                return paths[node] + [start]
            if nxt not in paths:
                paths[nxt] = paths[node] + [nxt]
                queue.append(nxt)
    return sorted(component)


@pytest.fixture(scope="module")
def found() -> list[Import]:
    return imports(ROOT)


def test_every_module_of_pipeline_has_a_layer():
    missing = [module for module in modules(ROOT) if layer_of(module) is None]
    assert not missing, f"no layer for {', '.join(missing)}: place each in LAYERS (tests/workflow/test_layers.py)"


def test_every_layer_entry_names_a_module():
    known = modules(ROOT)
    stale = [entry for _, entries in LAYERS for entry in entries
             if not any(layer_of(m, ((None, (entry,)),)) == 0 for m in known)]
    assert not stale, f"LAYERS names no module for {', '.join(stale)}"


def test_no_import_runs_up_a_layer(found):
    lines = upward(found)
    assert not lines, "imports that run up a layer (LAYERS, lowest first):\n" + "\n".join(lines)


def test_no_import_cycle(found):
    loops = cycles(found)
    lines = [f"{' -> '.join(loop)} (all of {', '.join(sorted(component))})" for component, loop in loops]
    assert not lines, "modules that import each other in a loop:\n" + "\n".join(lines)


def test_the_checks_catch_an_upward_import_and_a_cycle(tmp_path):
    package = tmp_path / "pkg"
    (package / "top").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text("import os\n\n\ndef f():\n    from pkg.top import high\n")
    (package / "top" / "__init__.py").write_text("from . import high\n")
    (package / "top" / "high.py").write_text("from pkg import low\nfrom .other import x\n")
    (package / "top" / "other.py").write_text("import importlib\n\n\ndef g():\n"
                                               "    return importlib.import_module('pkg.top.high')\n")
    layers = (("low", ("pkg", "pkg.low")), ("top", ("pkg.top",)))
    found = imports(tmp_path, "pkg")
    assert {(i.module, i.target, i.line) for i in found} == {
        ("pkg.low", "pkg.top.high", 5), ("pkg.top", "pkg.top.high", 1), ("pkg.top.high", "pkg.low", 1),
        ("pkg.top.high", "pkg.top.other", 2), ("pkg.top.other", "pkg.top.high", 5)}
    assert upward(found, layers) == ["pkg/low.py:5: pkg.low (layer 'low') imports pkg.top.high (layer 'top', "
                                     "above it)"]
    ((component, loop),) = cycles(found)
    assert component == {"pkg.low", "pkg.top.high", "pkg.top.other"}
    assert loop == ["pkg.low", "pkg.top.high", "pkg.low"]
    assert cycles([i for i in found if i.module != "pkg.low"]) == [
        (frozenset({"pkg.top.high", "pkg.top.other"}), ["pkg.top.high", "pkg.top.other", "pkg.top.high"])]


def class_names(root: Path, package: str = "pipeline") -> dict[str, list[str]]:
    """Top-level class name -> the modules that define one of that name."""
    found = defaultdict(list)
    for module, path in modules(root, package).items():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef):
                found[node.name].append(module)
    return found


def test_one_name_per_class():
    shared = {name: where for name, where in class_names(ROOT).items() if len(where) > 1}
    assert not shared, shared


def test_a_class_name_defined_twice_is_found(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/__init__.py").write_text("")
    (tmp_path / "pkg/a.py").write_text("class Table:\n    pass\n")
    (tmp_path / "pkg/b.py").write_text("class Table:\n    pass\n\n\nclass Other:\n    pass\n")
    assert dict(class_names(tmp_path, "pkg")) == {"Table": ["pkg.a", "pkg.b"], "Other": ["pkg.b"]}
