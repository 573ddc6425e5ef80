"""Why a planned job runs, in a few words: Snakemake's reason line of a dry run with its params change spelt out as
the keys that changed (`recipe.lr: 0.0007 -> 0.001`, a code file's hash, a licensed key added), not as the whole
before and after values Snakemake prints."""
from __future__ import annotations

import ast
import json
import re
import shlex

_PARAMS = "Params have changed since last execution: Union of exclusive params before and now across all output: "
_LONG = 48  # characters of a value shown before it is shortened


def explain(reason: str) -> str:
    """A dry run's `reason:` text, short: each cause once, a params change as its changed keys."""
    parts = []
    for cause in _causes(reason):
        if cause.startswith("Missing output files"):
            parts.append("missing output")
        elif cause.startswith("Incomplete output files"):
            parts.append("incomplete output (an interrupted job)")
        elif cause.startswith(("Input files updated by another job", "Updated input files")):
            parts.append("an input is rebuilt" if "another job" in cause else "an input is newer")
        elif cause.startswith("Forced execution"):
            parts.append("forced")
        elif cause.startswith("Code has changed"):
            parts.append("the rule's command changed")
        elif cause.startswith("Set of input files has changed"):
            parts.append("its set of inputs changed")
        elif cause.startswith("Params have changed"):
            before, now = _param_sets(cause)
            parts.append("params changed: " + ("; ".join(params_diff(before, now)) or "(values not shown)"))
        elif cause.startswith("Software environment"):
            parts.append("software environment changed")
        else:
            parts.append(cause)
    if "missing output" in parts and "an input is rebuilt" in parts:  # never built: that its inputs are new is moot
        parts.remove("an input is rebuilt")
    return ", ".join(dict.fromkeys(parts)) or "no reason given"


def _causes(reason: str) -> list[str]:
    """The `; `-joined causes of a reason line; a params change (whose values may hold `; `) is the last cause
    Snakemake writes but one, so it is cut out first."""
    start = reason.find("Params have changed")
    if start < 0:
        return [c for c in reason.split("; ") if c]
    end = reason.find("; Software environment", start)
    end = len(reason) if end < 0 else end
    rest = (reason[:start] + reason[end + 2:]).split("; ")
    return [c for c in rest if c] + [reason[start:end]]


def _param_sets(cause: str) -> tuple[list, list]:
    """(the values only before, those only now) of Snakemake's params change (each a Python repr, joined by `,`)."""
    text = cause[len(_PARAMS):] if cause.startswith(_PARAMS) else ""
    match = re.match(r"before: (.*) now: (.*?) ?$", text, re.S)
    if not match:
        return [], []
    return _literals(match.group(1)), _literals(match.group(2))


def _literals(text: str) -> list:
    if text.strip() == "<nothing exclusive>":
        return []
    try:
        value = ast.literal_eval(f"({text},)")
    except (ValueError, SyntaxError):
        return [text]
    return [_structure(v) for v in value]


def _structure(value):
    """A param value as nested dicts where it has structure: a dict, JSON text (shell-quoted or not), or command-line
    options (`--manual '{...}' --seed 1`)."""
    if isinstance(value, dict):
        return {str(k): _structure(v) for k, v in value.items()}
    if not isinstance(value, str):
        return value
    try:
        tokens = shlex.split(value)
    except ValueError:
        tokens = [value]
    for text in (value, tokens[0] if len(tokens) == 1 else None):
        if text and text[:1] in "{[":
            try:
                return _structure(json.loads(text))
            except ValueError:
                pass
    if len(tokens) > 1 and tokens[0].startswith("--"):
        options, key = {}, None
        for token in tokens:
            if token.startswith("--"):
                key = token[2:]
                options[key] = True
            elif key is not None:
                options[key] = _structure(token) if options[key] is True else f"{options[key]} {token}"
        return options
    return value


def _flat(value, prefix: str = "") -> dict:
    if isinstance(value, dict):
        flat = {}
        for key, item in value.items():
            flat.update(_flat(item, f"{prefix}{key}."))
        return flat
    return {prefix[:-1]: value}


def _show(value) -> str:
    text = "(none)" if value is _NONE else str(value)
    return text if len(text) <= _LONG else text[:_LONG - 1] + "…"


_NONE = object()


def params_diff(before: list, now: list) -> list[str]:
    """`key: old -> new` for each changed key, pairing each new value with the old one it shares most keys with
    (params are unnamed in Snakemake's records)."""
    before = list(before)
    changes = []
    for new in now:
        new_flat = _flat(new) if isinstance(new, dict) else {"": new}
        old = max(before, key=lambda b: len(set(_flat(b)) & set(new_flat)) if isinstance(b, dict) else 0,
                  default=_NONE)
        if old is not _NONE:
            before.remove(old)
        old_flat = _flat(old) if isinstance(old, dict) else {"": old}
        for key in sorted(set(old_flat) | set(new_flat)):
            a, b = old_flat.get(key, _NONE), new_flat.get(key, _NONE)
            if a != b:
                changes.append(f"{key + ': ' if key else ''}{_show(a)} -> {_show(b)}")
    changes += [f"{_show(old)} -> (none)" for old in before]
    return changes
