"""The generic table step: read every cell's files once and hand the paper's layout its cells and facts.

A table spec (built by the Snakemake rules from params) names, per cell, the system's score files per metric,
its run summaries, its significance result and analysis files; `values` maps each value the layout shows to its
source: "<metric>" (the score file's "score"), "<metric>.<field>" (another field of it) or "train.<field>" (the run
summary; for an ensemble the members' sum of n_params, else the first member's). Layouts never read files.
"""
from __future__ import annotations

import json
from pathlib import Path

from pipeline.errors import PipelineError


class _Files:
    """JSON files read once each; a missing or broken file -> PipelineError naming it."""

    def __init__(self):
        self.cache: dict[str, dict] = {}

    def __call__(self, path: str) -> dict:
        if path not in self.cache:
            try:
                self.cache[path] = json.loads(Path(path).read_text(encoding="utf-8"))
            except FileNotFoundError:
                raise PipelineError(f"{path}: no such file; expected it to be built before the table") from None
            except json.JSONDecodeError as err:
                raise PipelineError(f"{path}: not valid JSON ({err})") from None
        return self.cache[path]


def _value(files: _Files, cell: dict, source: str):
    """One value of a cell from its files (None where the system has no such value, e.g. an ensemble's speed)."""
    head, _, field = source.partition(".")
    if head == "train":
        runs = [files(path) for path in cell["train"]]
        if field == "n_params":
            return sum(run["n_params"] for run in runs)
        return runs[0].get(field) if len(runs) == 1 else None
    score = files(cell["scores"][head])
    key = field or "score"
    if key not in score:
        raise PipelineError(f"{cell['scores'][head]}: no field '{key}'; expected one of {', '.join(sorted(score))}")
    return score[key]


def read_cells(spec: dict) -> tuple[dict, dict]:
    """(cells[row][column] -> {value name: value, ...}, facts) from a table spec; see the module docstring."""
    files = _Files()
    values, facts = spec["values"], dict(spec["facts"])
    signatures: dict[str, dict[str, str]] = {}
    devices, precisions, computes = set(), set(), set()
    cells: dict[str, dict[str, dict]] = {}
    for row, by_col in spec["cells"].items():
        for col, cell in by_col.items():
            out = {"system": cell["system"]}
            for name, source in values.items():
                out[name] = _value(files, cell, source)
                if not source.startswith("train."):
                    signature = files(cell["scores"][source.split(".")[0]]).get("signature")
                    if signature:
                        signatures.setdefault(name, {})[col] = signature
            for path in cell["train"]:
                run = files(path)
                devices.add(f"{run['device']} x {run['world_size']} process(es)")
                precisions.add(run.get("precision", "float32"))
                computes.add(run.get("cpu_math") or f"{run['device']}, torch {run.get('torch', '?')}")
            if "significance" in cell:
                result = files(cell["significance"])
                out["p_value"], out["delta"] = result["p_value"], result["delta"]
                out["baseline"] = {name: _value(files, cell["baseline"], source) for name, source in values.items()}
            for kind, path in cell["analyses"].items():
                out[kind] = files(path)
            cells.setdefault(row, {})[col] = out
    facts["signatures"] = signatures
    facts["device"] = ", ".join(sorted(devices))
    facts["precision"] = ", ".join(sorted(precisions))
    facts["compute"] = "; ".join(sorted(computes))
    return cells, facts
