"""hao2019 Table 3: the paper's rows and numbers beside ours (#Para. and BLEU per language pair)."""
from __future__ import annotations

from pipeline.errors import PipelineError
from pipeline.report.reported import HAO2019_TABLE3, Cell
from pipeline.report.table import Table

OUR_ROWS = ("base", "base+biarn", "big", "big+biarn")
ENTRY_KEYS = {"bleu", "params", "p_value", "baseline_params"}
FOOTER_KEYS = ("scale", "corpora", "test_sets", "bleu_signature", "significance")


def pair_label(pair: str) -> str:
    """'zh-en' -> 'Zh-En'."""
    return "-".join(part.capitalize() for part in pair.split("-"))


def significance_mark(p_value: float | None) -> str:
    """The paper's convention: '⇑' for p < 0.01, '↑' for p < 0.05, else nothing."""
    if p_value is None:
        return ""
    if p_value < 0.01:
        return "⇑"
    if p_value < 0.05:
        return "↑"
    return ""


def format_params(params: int | None, baseline_params: int | None = None) -> str:
    """'107.9M', or '+9.4M' relative to the baseline as the paper prints proposed rows.

    Our choice: magnitudes below 0.1M are shown in K ('+31.5K') so tiny-scale models stay readable.
    """
    if params is None:
        return ""
    value = params if baseline_params is None else params - baseline_params
    sign = "" if baseline_params is None else "+"
    if abs(value) < 100_000:
        return f"{value / 1e3:{sign}.1f}K"
    return f"{value / 1e6:{sign}.1f}M"


def _number(value, where: str, kind: type, optional: bool):
    """Check one entry value's type (int also accepted where float is expected)."""
    if value is None and optional:
        return None
    accepted = (int, float) if kind is float else (int,)
    if isinstance(value, bool) or not isinstance(value, accepted):
        raise PipelineError(f"{where}: expected {kind.__name__}{' or None' if optional else ''}, got {value!r}")
    return value


def _check_ours(ours: dict) -> None:
    """Row ids, pairs and entry keys/types of `ours`, with the offending key path in the message."""
    if not isinstance(ours, dict):
        raise PipelineError(f"ours: expected a dict row_id -> pair -> entry, got {type(ours).__name__}")
    for row_id, by_pair in ours.items():
        if row_id not in OUR_ROWS:
            raise PipelineError(f"ours.{row_id}: unknown row; expected one of {', '.join(OUR_ROWS)}")
        if not isinstance(by_pair, dict):
            raise PipelineError(f"ours.{row_id}: expected a dict pair -> entry")
        for pair, entry in by_pair.items():
            where = f"ours.{row_id}.{pair}"
            if pair not in HAO2019_TABLE3.pairs:
                raise PipelineError(f"{where}: unknown pair; expected one of {', '.join(HAO2019_TABLE3.pairs)}")
            if not isinstance(entry, dict) or "bleu" not in entry or set(entry) - ENTRY_KEYS:
                raise PipelineError(f"{where}: expected a dict with 'bleu' and optionally 'params', "
                                    f"'p_value', 'baseline_params', got {entry!r}")
            _number(entry["bleu"], f"{where}.bleu", float, optional=False)
            _number(entry.get("params"), f"{where}.params", int, optional=True)
            _number(entry.get("baseline_params"), f"{where}.baseline_params", int, optional=True)
            p = _number(entry.get("p_value"), f"{where}.p_value", float, optional=True)
            if p is not None and not 0.0 <= p <= 1.0:
                raise PipelineError(f"{where}.p_value: expected a probability in [0, 1], got {p!r}")


def _paper_cells(cell: Cell) -> tuple[str, str]:
    """(#Para., BLEU) as printed in the paper; 'n/a' where it prints n/a."""
    params = cell.params if cell.params is not None else "n/a"
    bleu = cell.bleu + cell.mark if cell.bleu is not None else "n/a"
    return params, bleu


def _our_cells(entry: dict | None) -> tuple[str, str]:
    """(#Para., BLEU) of one of our results; empty strings when we have none."""
    if entry is None:
        return "", ""
    params = format_params(entry.get("params"), entry.get("baseline_params"))
    return params, f"{entry['bleu']:.2f}{significance_mark(entry.get('p_value'))}"


def _footer_lines(footer: dict) -> list[str]:
    """The footer text: scale, corpora, test sets, BLEU signature, significance settings."""
    if not isinstance(footer, dict):
        raise PipelineError(f"footer: expected a dict with keys {', '.join(FOOTER_KEYS)}")
    for key in FOOTER_KEYS:
        if key not in footer:
            raise PipelineError(f"footer.{key}: missing; expected keys {', '.join(FOOTER_KEYS)}")
    unknown = set(footer) - set(FOOTER_KEYS)
    if unknown:
        raise PipelineError(f"footer.{sorted(unknown)[0]}: unknown key; expected {', '.join(FOOTER_KEYS)}")
    sig = footer["significance"]
    if not isinstance(sig, dict) or set(sig) != {"n_samples", "seed"}:
        raise PipelineError(f"footer.significance: expected {{'n_samples': int, 'seed': int}}, got {sig!r}")

    def per_pair(key: str, collapse: bool = False) -> str:
        """A string as is; a dict pair -> text in the table's pair order (collapsed if all equal)."""
        value = footer[key]
        if isinstance(value, str):
            return value
        if not isinstance(value, dict) or not value or set(value) - set(HAO2019_TABLE3.pairs):
            raise PipelineError(f"footer.{key}: expected a string or a dict with keys among "
                                f"{', '.join(HAO2019_TABLE3.pairs)}, got {value!r}")
        if collapse and len(set(value.values())) == 1:
            return str(next(iter(value.values())))
        return "; ".join(f"{pair_label(p)}: {value[p]}" for p in HAO2019_TABLE3.pairs if p in value)

    return [
        "paper: Hao et al. (2019), Table 3; (paper) columns as printed there, (ours) columns from this run",
        f"scale: {footer['scale']}",
        f"corpora: {per_pair('corpora')}",
        f"test sets: {per_pair('test_sets')}",
        f"BLEU (ours): {per_pair('bleu_signature', collapse=True)}",
        f"significance (ours): paired bootstrap resampling against the same-size Transformer baseline, "
        f"{sig['n_samples']} samples, seed {sig['seed']}; ⇑ p < 0.01, ↑ p < 0.05",
        "#Para.: proposed rows show the increase over their baseline, as the paper prints them",
    ]


def columns() -> list[str]:
    """System, Architecture, then per pair: #Para. (paper), #Para. (ours), BLEU (paper), BLEU (ours)."""
    cols = ["System", "Architecture"]
    for pair in HAO2019_TABLE3.pairs:
        label = pair_label(pair)
        cols += [f"{label} #Para. (paper)", f"{label} #Para. (ours)", f"{label} BLEU (paper)", f"{label} BLEU (ours)"]
    return cols


def table3(ours: dict[str, dict[str, dict]], footer: dict) -> Table:
    """hao2019 Table 3 with our numbers: ours[row_id][pair] = {"bleu", "params", "p_value", "baseline_params"}.

    row_ids: base, base+biarn, big, big+biarn; pairs: zh-en, en-de. Missing rows/pairs stay empty.
    """
    _check_ours(ours)
    rows = []
    for row in HAO2019_TABLE3.rows:
        cells = [row.system, row.architecture]
        for pair in HAO2019_TABLE3.pairs:
            paper_params, paper_bleu = _paper_cells(row.cells[pair])
            our_params, our_bleu = _our_cells(ours.get(row.row_id, {}).get(pair))
            cells += [paper_params, our_params, paper_bleu, our_bleu]
        rows.append(cells)
    return Table(title="hao2019 Table 3: #Para. and BLEU, paper vs. ours",
                 columns=columns(), rows=rows, footer=_footer_lines(footer))
