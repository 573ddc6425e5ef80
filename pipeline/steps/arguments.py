"""A step's command-line options from its argument dataclass (fairseq-style: one declaration, one parser).

Each field is an option `--field-name` (underscores become hyphens): str, int and float take one value (required
without a default), bool is a flag, list[str] takes one or more values (`arg(append=True)`: the option repeated,
e.g. `--model a.pt --model b.pt`). `arg(positional=True)` makes a positional argument (a list: one or more; zero
or more with a default). Help texts and choices come from `arg(...)`.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import typing
from typing import Any

from pipeline.errors import PipelineError

MISSING = dataclasses.MISSING


def arg(default: Any = MISSING, *, help: str | None = None, choices: tuple | None = None, append: bool = False,
        positional: bool = False) -> Any:
    """A dataclass field carrying its command-line metadata."""
    meta = {"help": help, "choices": choices, "append": append, "positional": positional}
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda: list(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def _base(hint) -> tuple[type, bool]:
    """(element type, is a list) of an annotation such as int, str | None or list[str]."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    origin = typing.get_origin(hint)
    if origin is list:
        return args[0], True
    if args and origin is not None:  # X | None
        return _base(args[0])
    return hint, False


def add_arguments(parser: argparse.ArgumentParser, cls: type) -> None:
    """One option per field of the dataclass `cls`."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        meta = dict(f.metadata)
        kind, many = _base(hints[f.name])
        has_default = f.default is not MISSING or f.default_factory is not MISSING
        default = f.default if f.default is not MISSING else (f.default_factory() if has_default else None)
        options: dict[str, Any] = {"help": meta.get("help")}
        if meta.get("choices"):
            options["choices"] = meta["choices"]
        if meta.get("positional"):
            if many:
                options["nargs"] = "*" if has_default else "+"
            parser.add_argument(f.name, type=kind, **options)
            continue
        flag = "--" + f.name.replace("_", "-")
        if kind is bool:
            parser.add_argument(flag, dest=f.name, action="store_true", **options)
            continue
        if many:
            options.update(action="append", type=kind) if meta.get("append") else options.update(
                nargs="+" if not has_default else "*", type=kind)
        else:
            options["type"] = kind
        if has_default:
            options["default"] = default
        else:
            options["required"] = True
        parser.add_argument(flag, dest=f.name, **options)


def from_namespace(cls: type, namespace: argparse.Namespace):
    """The dataclass `cls` from parsed options."""
    return cls(**{f.name: getattr(namespace, f.name) for f in dataclasses.fields(cls)})


def json_arg(text: str, option: str):
    """The JSON value of option `option` (e.g. "--spec"); invalid JSON -> PipelineError with its line and column."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        near = text[max(0, err.pos - 20):err.pos + 20]
        raise PipelineError(f"{option}: not valid JSON at line {err.lineno}, column {err.colno}: {err.msg} "
                            f"(near {near!r}); expected a JSON value") from None
