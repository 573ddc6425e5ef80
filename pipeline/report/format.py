"""Helpers every paper's layouts share: labels, number formats, checks of the cells and facts, footer texts."""
from __future__ import annotations

import math
from typing import Callable

from pipeline.errors import PipelineError
from pipeline.report.marks import significance_mark

# Significance fields of a cell whose row has a baseline (pipeline/report/cells.py), besides its values.
SIGNIFICANCE_FIELDS = ("p_value", "delta", "baseline")
TEST_NAMES = {"paired_bootstrap": "paired bootstrap resampling", "approximate_randomization":
              "approximate randomization", "paired_t_test": "paired t-test", "sign_test": "sign test",
              "collins_sign_test": "the sign test of Collins et al. (2005)"}


def pair_label(pair: str) -> str:
    """'zh-en' -> 'Zh-En'."""
    return "-".join(part.capitalize() for part in pair.split("-"))


def format_params(params: int | None, baseline_params: int | None = None) -> str:
    """'107.9M', or '+9.4M' relative to the baseline as papers print proposed rows.

    Our choice: magnitudes below 0.1M are shown in K ('+31.5K') so tiny-scale models stay readable.
    """
    if params is None:
        return ""
    value = params if baseline_params is None else params - baseline_params
    sign = "" if baseline_params is None else "+"
    if abs(value) < 100_000:
        return f"{value / 1e3:{sign}.1f}K"
    return f"{value / 1e6:{sign}.1f}M"


def decimal(value: float | None) -> str:
    """Two decimals, empty for None."""
    return "" if value is None else f"{value:.2f}"


def check_number(value, where: str, kind: type, optional: bool):
    """Check one value's type (int also accepted where float is expected); returns it."""
    if value is None and optional:
        return None
    accepted = (int, float) if kind is float else (int,)
    if isinstance(value, bool) or not isinstance(value, accepted):
        raise PipelineError(f"{where}: expected {kind.__name__}{' or None' if optional else ''}, got {value!r}")
    return value


def check_score(value, where: str, optional: bool = False) -> float | None:
    """A finite score in % (0..100), or None where allowed."""
    value = check_number(value, where, float, optional)
    if value is not None and not (math.isfinite(value) and 0.0 <= value <= 100.0):
        raise PipelineError(f"{where}: expected a score in 0..100, got {value!r}")
    return value


def check_keys(entry, where: str, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> None:
    """A dict holding every `required` key and nothing outside required + optional."""
    expected = ", ".join(required) + (f" (optionally {', '.join(optional)})" if optional else "")
    if not isinstance(entry, dict):
        raise PipelineError(f"{where}: expected a dict with keys {expected}, got {entry!r}"[:400])
    for key in required:
        if key not in entry:
            raise PipelineError(f"{where}.{key}: missing; expected keys {expected}")
    for key in entry:
        if key not in required and key not in optional:
            raise PipelineError(f"{where}.{key}: unknown key; expected keys {expected}")


def check_cells(cells, rows: tuple[str, ...], columns: tuple[str, ...], check_cell: Callable) -> None:
    """Row ids and columns of cells[row][column]; check_cell(cell, where, column) checks each cell."""
    if not isinstance(cells, dict):
        raise PipelineError(f"cells: expected a dict row -> column -> cell, got {type(cells).__name__}")
    for row, by_col in cells.items():
        if row not in rows:
            raise PipelineError(f"cells.{row}: unknown row; expected one of {', '.join(rows)}")
        if not isinstance(by_col, dict):
            raise PipelineError(f"cells.{row}: expected a dict column -> cell, got {by_col!r}"[:400])
        for col, cell in by_col.items():
            if col not in columns:
                raise PipelineError(f"cells.{row}.{col}: unknown column; expected one of {', '.join(columns)}")
            check_cell(cell, f"cells.{row}.{col}", col)


def source_bins(cell, where: str, column: str = "") -> list[dict]:
    """The source-length bins of a cell's length analysis ({"source": [...], ...} or the list itself), checked."""
    check_keys(cell, where, ("length",), ("system",))
    bins, at = cell["length"], f"{where}.length"
    if isinstance(bins, dict):
        check_keys(bins, at, ("source",), ("target",))
        bins, at = bins["source"], f"{at}.source"
    if not isinstance(bins, list) or not bins:
        raise PipelineError(f"{at}: expected a non-empty list of {{'bin', 'bleu', 'n'}} dicts, got {bins!r}"[:400])
    for i, item in enumerate(bins):
        item_at = f"{at}[{i}]"
        if not isinstance(item, dict) or set(item) != {"bin", "bleu", "n"}:
            raise PipelineError(f"{item_at}: expected a dict with keys 'bin', 'bleu', 'n', got {item!r}")
        if not isinstance(item["bin"], str) or not item["bin"]:
            raise PipelineError(f"{item_at}.bin: expected a label like '(0, 15]', got {item['bin']!r}")
        n = check_number(item["n"], f"{item_at}.n", int, optional=False)
        if n < 0:
            raise PipelineError(f"{item_at}.n: expected a sentence count >= 0, got {n!r}")
        check_number(item["bleu"], f"{item_at}.bleu", float, optional=n == 0)
        if n == 0 and item["bleu"] is not None:
            raise PipelineError(f"{item_at}.bleu: expected None for an empty bin, got {item['bleu']!r}")
    return bins


def check_significance(cell: dict, where: str) -> None:
    """p_value in [0, 1], delta a number and baseline a dict, all three or none; system a string if given."""
    if "system" in cell and (not isinstance(cell["system"], str) or not cell["system"]):
        raise PipelineError(f"{where}.system: expected the system's name, got {cell['system']!r}")
    given = [key for key in SIGNIFICANCE_FIELDS if key in cell]
    if not given:
        return
    for key in SIGNIFICANCE_FIELDS:
        if key not in cell:
            raise PipelineError(f"{where}.{key}: missing; expected {', '.join(SIGNIFICANCE_FIELDS)} together "
                                f"(the row has a baseline)")
    p = check_number(cell["p_value"], f"{where}.p_value", float, optional=False)
    if not 0.0 <= p <= 1.0:
        raise PipelineError(f"{where}.p_value: expected a probability in [0, 1], got {p!r}")
    check_number(cell["delta"], f"{where}.delta", float, optional=False)
    if not isinstance(cell["baseline"], dict):
        raise PipelineError(f"{where}.baseline: expected a dict value name -> the baseline's value, "
                            f"got {cell['baseline']!r}")


def mark(cell: dict | None, thresholds: list[tuple[float, str]]) -> str:
    """The significance mark of a cell against its baseline (direction-aware), '' without a test."""
    if cell is None or cell.get("p_value") is None:
        return ""
    return significance_mark(cell["p_value"], cell["delta"], thresholds)


# ------------------------------------------------------------------ facts (pipeline/report/cells.py)
def check_facts(facts, required: tuple[str, ...]) -> None:
    """Required keys present; the per-column ones are dicts column -> text."""
    if not isinstance(facts, dict):
        raise PipelineError(f"facts: expected a dict with keys {', '.join(required)}, got {facts!r}"[:400])
    for key in required:
        if key not in facts:
            raise PipelineError(f"facts.{key}: missing; expected keys {', '.join(required)}")
    for key in ("corpora", "corpus_descriptions", "test_sets"):
        value = facts.get(key, {})
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise PipelineError(f"facts.{key}: expected a dict column -> text, got {value!r}"[:400])
    signatures = facts.get("signatures", {})
    if not isinstance(signatures, dict) or not all(isinstance(v, dict) for v in signatures.values()):
        raise PipelineError(f"facts.signatures: expected a dict value name -> column -> signature, "
                            f"got {signatures!r}"[:400])
    for key in ("scale", "device"):
        if key in facts and (not isinstance(facts[key], str)):
            raise PipelineError(f"facts.{key}: expected a string, got {facts[key]!r}")
    sig = facts.get("significance")
    if sig is not None and (not isinstance(sig, dict) or not {"value", "test", "n_samples", "seed"} <= set(sig)):
        raise PipelineError(f"facts.significance: expected None or a dict with value, test, n_samples, seed, "
                            f"got {sig!r}")


def per_column(values: dict, columns: tuple[str, ...], label: Callable = pair_label, collapse: bool = False) -> str:
    """'Zh-En: a; En-De: b' for the given columns in order (one value if collapse and all equal); 'n/a' if none."""
    shown = {col: values[col] for col in columns if col in values}
    if not shown:
        return "n/a"
    if collapse and len(set(shown.values())) == 1:
        return str(next(iter(shown.values())))
    return "; ".join(f"{label(col)}: {value}" for col, value in shown.items())


def splits_text(facts: dict, columns: tuple[str, ...], label: Callable = pair_label) -> str:
    """'En-De: the test split of l10n-en-de; ...'."""
    corpora = facts.get("corpora", {})
    texts = {col: f"the {split} split of {corpora.get(col, 'its corpus')}" for col, split in facts["test_sets"].items()}
    return per_column(texts, columns, label)


def signature_text(facts: dict, value: str, columns: tuple[str, ...], label: Callable = pair_label) -> str:
    """The metric signature of a value per column (once if the same everywhere); 'no results yet' without any."""
    by_col = facts.get("signatures", {}).get(value, {})
    return per_column(by_col, columns, label, collapse=True) if any(c in by_col for c in columns) else \
        "no results yet"


def standin_lines(facts: dict, columns: tuple[str, ...], label: Callable = pair_label) -> list[str]:
    """A note and one line per stand-in corpus (registry name 'standin-...') with its registry description."""
    descriptions = facts.get("corpus_descriptions", {})
    standins = [f"STAND-IN ({label(col)}): {facts['corpora'][col]}: {descriptions.get(col, 'no description')}"
                for col in columns if facts.get("corpora", {}).get(col, "").startswith("standin-")]
    if not standins:
        return []
    return ["STAND-IN: ours are not on the paper's data but on the stand-ins below; compare how the models rank, "
            "not absolute scores", *standins]


def training_words(scale: str, models: str = "") -> str:
    """How a scale on the embedded data trains, in a footer's words: small models (`models`) and short training at
    tiny; the paper's models and a few hundred updates at smoke (pipeline/scales.py)."""
    if scale == "tiny":
        return f"small models{f' ({models})' if models else ''} and short training"
    return "the paper's models and a few hundred updates"


def is_standin(facts: dict, columns: tuple[str, ...]) -> bool:
    """True if any of the columns' corpora is a stand-in."""
    return any(facts.get("corpora", {}).get(col, "").startswith("standin-") for col in columns)


RESAMPLING_TESTS = ("paired_bootstrap", "approximate_randomization")  # the tests that use n_samples and seed


def stat_test_text(facts: dict) -> str:
    """'paired bootstrap resampling, 1000 samples, seed 12345' ('paired t-test': no samples) from
    facts['significance']."""
    sig = facts["significance"]
    name = TEST_NAMES.get(sig["test"], str(sig["test"]).replace("_", " "))
    return f"{name}, {sig['n_samples']} samples, seed {sig['seed']}" if sig["test"] in RESAMPLING_TESTS else name


def analysis(facts: dict, kind: str, keys: tuple[str, ...] = ()) -> dict:
    """facts['analyses'][kind] holding `keys`, or a PipelineError naming what is missing."""
    settings = facts.get("analyses", {}).get(kind)
    if not isinstance(settings, dict):
        raise PipelineError(f"facts.analyses.{kind}: missing; expected the table's {kind} settings")
    for key in keys:
        if key not in settings:
            raise PipelineError(f"facts.analyses.{kind}.{key}: missing; expected settings {', '.join(keys)}")
    return settings
