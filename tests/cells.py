"""What the report-layout tests hand a layout: cells and facts shaped as the generic table step makes them.

A layout gets cells[row][column] from pipeline/report/cells.py's read_cells: the system's name, its values by name
(a metric's score, "params" from the run summaries), the significance fields where the cell was tested against a
baseline (p_value, delta and the baseline's values), and each analysis's JSON by its kind. Its facts are what
workflows/rules/report.smk's table_spec states about the table (scale, corpus and test split by column, significance
and analysis settings) and what read_cells adds (signatures, device, precision).
"""
from __future__ import annotations


def cell(system: str = "sys", *, params: int | None = None, p_value: float | None = None, delta: float | None = None,
         baseline: dict | float | None = None, value: str = "bleu", **values) -> dict:
    """One cell: the system's name and `values` (scores by value name, analyses by kind), "params" where given. With
    a p_value, the significance fields: baseline, the baseline system's values (a number: its `value`), and delta,
    `value`'s difference to the baseline's unless given."""
    out = {"system": system, **values}
    if params is not None:
        out["params"] = params
    if p_value is not None:
        base = dict(baseline) if isinstance(baseline, dict) else {value: baseline}
        out.update(p_value=p_value, delta=out[value] - base[value] if delta is None else delta, baseline=base)
    return out


def bleu_cell(bleu, params: int | None = None, **significance) -> dict:
    """A cell of a table that shows BLEU (and |Θ| where given), tested on BLEU: `significance` as cell() takes it."""
    return cell(bleu=bleu, params=params, **significance)


def significance(test: str, value: str = "bleu", n_samples: int = 1000, seed: int = 12345) -> dict:
    """A table's significance settings as its facts state them."""
    return {"value": value, "test": test, "n_samples": n_samples, "seed": seed}


def facts(corpora: dict[str, str], *, scale: str = "tiny", test_sets: dict[str, str] | None = None, **more) -> dict:
    """A table's facts: its scale, the corpus and the test split of each column (the split "test" unless test_sets
    names another) and `more` as given (signatures, significance, device, analyses...). Nothing else is filled in:
    a layout's footer states what its facts hold."""
    return {"scale": scale, "corpora": dict(corpora), "test_sets": {col: "test" for col in corpora} | (test_sets or {}),
            **more}
