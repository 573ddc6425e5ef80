"""The code a result depends on, found by reading the code: the pipeline.* modules a step's function uses,
transitively (dvc.yaml's code dependencies; pipeline/dvcgen.py).

A step depends on its own function, the module-level code of its module (imports, constants, the declarations)
and the module-level functions and classes the function refers to, then on every module those import anywhere
(top level or inside functions), with their packages' __init__ files. A module holding several steps therefore
makes each depend on what that step itself uses, not on its neighbours' imports.
"""
from __future__ import annotations

import ast
import hashlib
import inspect
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable

PACKAGE = Path(__file__).resolve().parent
REPO = PACKAGE.parent


@lru_cache(maxsize=None)
def _module_file(name: str) -> Path | None:
    """pipeline.a.b -> pipeline/a/b.py or pipeline/a/b/__init__.py (None if neither exists)."""
    base = REPO.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _imports_in(nodes: Iterable[ast.AST]) -> list[str]:
    """The pipeline.* modules imported anywhere inside `nodes`."""
    found = []
    for top in nodes:
        for node in ast.walk(top):
            if isinstance(node, ast.Import):
                found += [alias.name for alias in node.names if alias.name.split(".")[0] == "pipeline"]
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "pipeline":
                found.append(node.module)
                found += [f"{node.module}.{alias.name}" for alias in node.names]  # `from pkg import module`
    return found


@lru_cache(maxsize=None)
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def _imports(path: Path) -> tuple[str, ...]:
    """The pipeline.* modules a file imports anywhere (top level or inside functions)."""
    return tuple(_imports_in([_tree(path)]))


def closure(roots: Iterable[str]) -> set[Path]:
    """The files of the modules `roots` import, transitively, with their packages' __init__ (whose own imports are
    followed only where the package itself is imported: a paper's package imports all its modules, a module of it
    needs none of its neighbours)."""
    return set().union(*map(_closure_of, roots))


def _compiled_parts(path: Path) -> list[Path]:
    """The C and C++ sources a module compiles, named after it beside it (pipeline/fixed_gemm.py: fixed_gemm.c,
    fixed_gemm_aten.cpp)."""
    return [p for pattern in ("*.c", "*.cpp") for p in path.parent.glob(path.stem + pattern)]


@lru_cache(maxsize=None)
def _closure_of(root: str) -> frozenset[Path]:
    """closure([root]), computed once per process."""
    seen: set[Path] = set()
    followed: set[Path] = set()
    todo = [root]
    while todo:
        parts = todo.pop().split(".")
        for i in range(1, len(parts) + 1):
            path = _module_file(".".join(parts[:i]))
            if path is None:
                continue
            seen.add(path)
            seen.update(_compiled_parts(path))
            if i == len(parts) and path not in followed:
                followed.add(path)
                todo += _imports(path)
    return frozenset(seen)


@lru_cache(maxsize=None)
def function_imports(fn: Callable) -> tuple[str, ...]:
    """The pipeline.* modules a module-level function uses: its module's top-level imports, its own and those of the
    module-level functions and classes it refers to by name (transitively within the module)."""
    module = inspect.getmodule(fn)
    tree = _tree(Path(module.__file__).resolve())
    defs = {node.name: node for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    top = [node for node in tree.body if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    used, todo = set(), [fn.__qualname__.split(".")[0]]
    while todo:
        name = todo.pop()
        if name in used or name not in defs:
            continue
        used.add(name)
        todo += [node.id for node in ast.walk(defs[name]) if isinstance(node, ast.Name)]
    return tuple(_imports_in(top + [defs[name] for name in used]))


def code_files(functions: Iterable[Callable], modules: Iterable[str] = ()) -> list[str]:
    """Repository-relative files the functions (and the modules named) depend on (see the module docstring)."""
    functions = list(functions)
    roots = list(modules)
    for fn in functions:
        roots += function_imports(fn)
    files = closure(roots)
    for fn in functions:  # the function's own module file, without its neighbours' imports
        name = inspect.getmodule(fn).__name__
        parts = name.split(".")
        files |= {path for i in range(1, len(parts) + 1) if (path := _module_file(".".join(parts[:i])))}
    return sorted(str(p.relative_to(REPO)) for p in files)


@lru_cache(maxsize=None)
def _digest(name: str) -> str:
    return hashlib.sha256((REPO / name).read_bytes()).hexdigest()[:16]


def file_digests(files: Iterable[str]) -> dict[str, str]:
    """{repository-relative file: sha256 of its bytes (16 hex digits)}: the code part of a training run's key (each
    file hashed once per process, like _tree parses it once)."""
    return {name: _digest(name) for name in sorted(files)}
