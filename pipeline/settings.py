"""Typed settings from a mapping (torch-free): a frozen dataclass per kind of settings, checked field by field.

`from_mapping(cls, raw)` fills defaults, refuses unknown keys (with a "did you mean"), missing required ones and
wrong types, then runs the dataclass's own `check()` for the values. Every error names the key and what was
expected. Used for analysis kinds, decoding, combinations and significance settings.
"""
from __future__ import annotations

import dataclasses
import difflib
import typing
from typing import Any, Mapping, TypeVar

from pipeline.errors import PipelineError

T = TypeVar("T")


def _kind(hint) -> type:
    """The plain type a field annotation names: int, float, str, bool or list."""
    origin = typing.get_origin(hint) or hint
    return list if origin in (list, tuple) else origin


def _matches(value: Any, kind: type) -> tuple[bool, Any]:
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return True, float(value)
    if kind is int and isinstance(value, bool):
        return False, value
    if kind is list and isinstance(value, tuple):
        return True, list(value)
    return isinstance(value, kind), value


def from_mapping(cls: type[T], raw: Mapping[str, Any] | None) -> T:
    """An instance of the dataclass `cls` from `raw`; a bad key or value -> PipelineError naming it."""
    raw = {} if raw is None else raw
    if not isinstance(raw, Mapping):
        raise PipelineError(f"expected a mapping of settings, got {raw!r}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in raw:
        if key not in fields:
            close = difflib.get_close_matches(str(key), list(fields), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise PipelineError(f"{key}: unknown setting{hint} (expected one of {', '.join(fields)})")
    values = {}
    for name, f in fields.items():
        if name not in raw:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise PipelineError(f"{name}: missing required setting")
            continue
        ok, value = _matches(raw[name], _kind(hints[name]))
        if not ok:
            raise PipelineError(f"{name}: expected {_kind(hints[name]).__name__}, got {raw[name]!r}")
        values[name] = value
    settings = cls(**values)
    check = getattr(settings, "check", None)
    if check is not None:
        check()
    return settings


def to_mapping(settings) -> dict:
    """The JSON-able mapping of a settings dataclass (lists stay lists)."""
    return dataclasses.asdict(settings)


def require(ok: bool, key: str, expected: str, got: Any) -> None:
    """PipelineError `<key>: expected <expected>, got <got>` unless ok."""
    if not ok:
        raise PipelineError(f"{key}: expected {expected}, got {got!r}")


def positive_ints(values: Any) -> bool:
    """A non-empty list of integers >= 1."""
    return (isinstance(values, list) and bool(values)
            and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values))


def require_positive(settings, *names: str) -> None:
    """PipelineError naming the first of the settings' integer fields `names` below 1."""
    for name in names:
        require(getattr(settings, name) >= 1, name, "an integer >= 1", getattr(settings, name))
