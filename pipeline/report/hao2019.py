"""hao2019 tables and figures: the paper's rows and numbers beside ours (Tables 1-5, Figure 5, BLEU by length)."""
from __future__ import annotations

from typing import Callable

from matplotlib.figure import Figure

from pipeline.errors import PipelineError
from pipeline.evaluate.length import LENGTH_BINS, bin_label
from pipeline.report.figures import grouped_bars, steps_figure
from pipeline.report.reported import (HAO2019_FIG5, HAO2019_TABLE1, HAO2019_TABLE2, HAO2019_TABLE3, HAO2019_TABLE4,
                                      HAO2019_TABLE5, PROBING_GROUPS, PROBING_TASKS, Cell)
from pipeline.report.table import Table, run_layout

OUR_ROWS = ("base", "base+biarn", "big", "big+biarn")
ENTRY_KEYS = {"bleu", "params", "p_value", "baseline_params", "steps_per_s", "probing"}
FOOTER_KEYS = ("scale", "corpora", "test_sets", "bleu_signature", "significance")
# Every footer key some hao2019 layout reads; one footer dict may carry them all (each layout shows its own).
ALL_FOOTER_KEYS = FOOTER_KEYS + ("device", "probing")


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


def _check_probing(value, where: str) -> None:
    """A dict task -> accuracy in % (0..100), tasks among PROBING_TASKS."""
    if not isinstance(value, dict):
        raise PipelineError(f"{where}: expected a dict task -> accuracy (%) or None, got {value!r}")
    for task, accuracy in value.items():
        if task not in PROBING_TASKS:
            raise PipelineError(f"{where}.{task}: unknown probing task; expected one of {', '.join(PROBING_TASKS)}")
        _number(accuracy, f"{where}.{task}", float, optional=False)
        if not 0.0 <= accuracy <= 100.0:
            raise PipelineError(f"{where}.{task}: expected an accuracy in % (0..100), got {accuracy!r}")


def _check_ours(ours: dict, rows: tuple[str, ...] = OUR_ROWS, pairs: tuple[str, ...] = HAO2019_TABLE3.pairs,
                required: str = "bleu") -> None:
    """Row ids, pairs and entry keys/types of `ours`, with the offending key path in the message.

    required: the entry key the layout needs ("bleu", or "probing" for Table 5, where bleu may be None).
    """
    if not isinstance(ours, dict):
        raise PipelineError(f"ours: expected a dict row_id -> pair -> entry, got {type(ours).__name__}")
    for row_id, by_pair in ours.items():
        if row_id not in rows:
            raise PipelineError(f"ours.{row_id}: unknown row; expected one of {', '.join(rows)}")
        if not isinstance(by_pair, dict):
            raise PipelineError(f"ours.{row_id}: expected a dict pair -> entry")
        for pair, entry in by_pair.items():
            where = f"ours.{row_id}.{pair}"
            if pair not in pairs:
                raise PipelineError(f"{where}: unknown pair; expected one of {', '.join(pairs)}")
            if not isinstance(entry, dict) or required not in entry or set(entry) - ENTRY_KEYS:
                others = ", ".join(repr(k) for k in sorted(ENTRY_KEYS - {required}))
                raise PipelineError(f"{where}: expected a dict with {required!r} and optionally {others}, "
                                    f"got {entry!r}")
            _number(entry.get("bleu"), f"{where}.bleu", float, optional=required != "bleu")
            _number(entry.get("params"), f"{where}.params", int, optional=True)
            _number(entry.get("baseline_params"), f"{where}.baseline_params", int, optional=True)
            p = _number(entry.get("p_value"), f"{where}.p_value", float, optional=True)
            if p is not None and not 0.0 <= p <= 1.0:
                raise PipelineError(f"{where}.p_value: expected a probability in [0, 1], got {p!r}")
            speed = _number(entry.get("steps_per_s"), f"{where}.steps_per_s", float, optional=True)
            if speed is not None and speed <= 0:
                raise PipelineError(f"{where}.steps_per_s: expected a positive rate, got {speed!r}")
            if entry.get("probing") is not None or required == "probing":
                _check_probing(entry.get("probing"), f"{where}.probing")


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


def _check_footer(footer: dict, required: tuple[str, ...]) -> None:
    """Required keys present, no key outside ALL_FOOTER_KEYS, significance settings well-formed."""
    if not isinstance(footer, dict):
        raise PipelineError(f"footer: expected a dict with keys {', '.join(required)}")
    for key in required:
        if key not in footer:
            raise PipelineError(f"footer.{key}: missing; expected keys {', '.join(required)}")
    unknown = set(footer) - set(ALL_FOOTER_KEYS)
    if unknown:
        raise PipelineError(f"footer.{sorted(unknown)[0]}: unknown key; expected {', '.join(ALL_FOOTER_KEYS)}")
    sig = footer.get("significance")
    if "significance" in footer and (not isinstance(sig, dict) or set(sig) != {"n_samples", "seed"}):
        raise PipelineError(f"footer.significance: expected {{'n_samples': int, 'seed': int}}, got {sig!r}")
    for key in ("device", "probing"):
        if key in footer and (not isinstance(footer[key], str) or not footer[key]):
            raise PipelineError(f"footer.{key}: expected a non-empty string, got {footer[key]!r}")


def _per_pair(footer: dict, key: str, pairs: tuple[str, ...], collapse: bool = False) -> str:
    """A string as is; a dict pair -> text in `pairs` order (collapsed if all shown values are equal).

    Keys may be any of Table 3's pairs; only `pairs` are shown, and at least one of them must be there.
    """
    value = footer[key]
    if isinstance(value, str):
        return value
    if (not isinstance(value, dict) or set(value) - set(HAO2019_TABLE3.pairs)
            or not any(p in value for p in pairs)):
        raise PipelineError(f"footer.{key}: expected a string or a dict with keys among "
                            f"{', '.join(HAO2019_TABLE3.pairs)} including one of {', '.join(pairs)}, "
                            f"got {value!r}")
    shown = {p: value[p] for p in pairs if p in value}
    if collapse and len(set(shown.values())) == 1:
        return str(next(iter(shown.values())))
    return "; ".join(f"{pair_label(p)}: {v}" for p, v in shown.items())


def _significance_line(footer: dict, against: str) -> str:
    """How our marks were computed."""
    sig = footer["significance"]
    return (f"significance (ours): paired bootstrap resampling against {against}, "
            f"{sig['n_samples']} samples, seed {sig['seed']}; ⇑ p < 0.01, ↑ p < 0.05")


def _footer_lines(footer: dict) -> list[str]:
    """The footer text: scale, corpora, test sets, BLEU signature, significance settings."""
    _check_footer(footer, FOOTER_KEYS)
    pairs = HAO2019_TABLE3.pairs
    return [
        "paper: Hao et al. (2019), Table 3; (paper) columns as printed there, (ours) columns from this run",
        f"scale: {footer['scale']}",
        f"corpora: {_per_pair(footer, 'corpora', pairs)}",
        f"test sets: {_per_pair(footer, 'test_sets', pairs)}",
        f"BLEU (ours): {_per_pair(footer, 'bleu_signature', pairs, collapse=True)}",
        _significance_line(footer, "the same-size Transformer baseline"),
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


# ------------------------------------------------------------------ Tables 1, 2, 4, 5, Figure 5, length figure
# The paper studies its model variations on WMT14 En-De with Transformer-Base (section 5.1).
EN_DE = ("en-de",)
TABLE1_ROWS = tuple(r.row_id for r in HAO2019_TABLE1.rows)
TABLE2_ROWS = tuple(r.row_id for r in HAO2019_TABLE2.rows)
TABLE4_ROWS = tuple(r.row_id for r in HAO2019_TABLE4.rows)
TABLE5_ROWS = tuple(r.row_id for r in HAO2019_TABLE5.rows)
FIG5_ROWS = tuple(r.row_id for r in HAO2019_FIG5.rows)
LENGTH_ROWS = ("base", "biarn")
LENGTH_LABELS = {"base": "Base", "biarn": "Ours"}  # the paper's legend; Ours = 1-Layer BiARN
NEEDS_PARSED = "needs parsed data"
BLEU_FOOTER_KEYS = FOOTER_KEYS


def _entry(ours: dict, row_id: str) -> dict | None:
    """Our En-De entry for a row, None if we have none."""
    return ours.get(row_id, {}).get("en-de")


def _paper_bleu(cell: Cell) -> str:
    """BLEU as printed (with the paper's mark), 'n/a' where it prints none."""
    return "n/a" if cell.bleu is None else cell.bleu + cell.mark


def _our_bleu(entry: dict | None) -> str:
    """Our BLEU with ⇑/↑ when a p-value is given; empty without a result."""
    if entry is None or entry.get("bleu") is None:
        return ""
    return f"{entry['bleu']:.2f}{significance_mark(entry.get('p_value'))}"


def _decimal(value: float | None) -> str:
    """Two decimals like the paper, empty for None."""
    return "" if value is None else f"{value:.2f}"


def _variation_footer(footer: dict, table: str, required: tuple[str, ...] = BLEU_FOOTER_KEYS,
                      paper_line: str | None = None) -> list[str]:
    """Footer of an En-De variation table: paper reference, scale, data, BLEU signature, significance."""
    _check_footer(footer, required)
    paper_line = paper_line or (f"paper: Hao et al. (2019), {table}; (paper) columns as printed there, "
                                f"(ours) columns from this run")
    lines = [paper_line,
             f"scale: {footer['scale']}",
             f"corpora: {_per_pair(footer, 'corpora', EN_DE)}"]
    if "bleu_signature" in required:
        lines += [f"test sets: {_per_pair(footer, 'test_sets', EN_DE)}",
                  f"BLEU (ours): {_per_pair(footer, 'bleu_signature', EN_DE, collapse=True)}"]
    if "significance" in required:
        lines += [_significance_line(footer, "our Transformer-Base") +
                  " (shown only where a p-value is given; the paper marks none in this table)"]
    return lines


def table1(ours: dict[str, dict[str, dict]], footer: dict) -> Table:
    """hao2019 Table 1: recurrence encoder implementations; Speed (training steps/s) and BLEU, paper vs ours.

    rows: base, birnn-6l, biarn-6l, biarn-3l, biarn-1l; ours[row]["en-de"] needs "bleu", may give "steps_per_s".
    """
    _check_ours(ours, TABLE1_ROWS, EN_DE)
    _check_footer(footer, BLEU_FOOTER_KEYS + ("device",))
    rows = []
    for row in HAO2019_TABLE1.rows:
        cell, entry = row.cells["en-de"], _entry(ours, row.row_id)
        rows.append([row.system, row.architecture, cell.speed or "n/a",
                     _decimal(entry.get("steps_per_s")) if entry else "", _paper_bleu(cell), _our_bleu(entry)])
    lines = _variation_footer(footer, "Table 1")
    lines += [f"speed: training steps/second measured by our trainer on {footer['device']} "
              f"(the paper's on its own GPUs)",
              "recurrence encoder output fed to the top decoder layer by stack fusion, as in the paper"]
    return Table(title="hao2019 Table 1: recurrence encoder implementations (En-De), paper vs. ours",
                 columns=["Model", "Rec. Encoder", "Speed (paper)", "Speed (ours)", "BLEU (paper)", "BLEU (ours)"],
                 rows=rows, footer=lines)


def table2(ours: dict[str, dict[str, dict]], footer: dict) -> Table:
    """hao2019 Table 2: decoder integration strategies; rows base, gated-top, gated-all, stack-top, stack-all."""
    _check_ours(ours, TABLE2_ROWS, EN_DE)
    rows = [[row.system, row.architecture, row.setting, _paper_bleu(row.cells["en-de"]),
             _our_bleu(_entry(ours, row.row_id))] for row in HAO2019_TABLE2.rows]
    lines = _variation_footer(footer, "Table 2") + ["recurrence encoder: 1-Layer BiARN"]
    return Table(title="hao2019 Table 2: decoder integration strategies (En-De), paper vs. ours",
                 columns=["Model", "Integration", "to Dec.", "BLEU (paper)", "BLEU (ours)"],
                 rows=rows, footer=lines)


def table4(ours: dict[str, dict[str, dict]], footer: dict) -> Table:
    """hao2019 Table 4: re-implemented related work; rows base, relpos, disan, rnn-encoder, biarn."""
    _check_ours(ours, TABLE4_ROWS, EN_DE)
    rows = [[row.architecture, row.system, _paper_bleu(row.cells["en-de"]), _our_bleu(_entry(ours, row.row_id))]
            for row in HAO2019_TABLE4.rows]
    lines = _variation_footer(footer, "Table 4")
    lines += ["RelPos: relative positions (Shaw et al., 2018), clipping k = 16; DiSAN: directional masks "
              "(Shen et al., 2018); RNN Encoder: extra 6-layer RNN encoder, multi-column (Chen et al., 2018)"]
    return Table(title="hao2019 Table 4: comparison with re-implemented related work (En-De), paper vs. ours",
                 columns=["Model", "Reference", "BLEU (paper)", "BLEU (ours)"], rows=rows, footer=lines)


def _probing_cell(entry: dict | None, task: str) -> str:
    """Our accuracy; empty without probing results for the row, NEEDS_PARSED for a task we could not run."""
    if entry is None or entry.get("probing") is None:
        return ""
    value = entry["probing"].get(task)
    return NEEDS_PARSED if value is None else f"{value:.2f}"


def table5(ours: dict[str, dict[str, dict]], footer: dict) -> Table:
    """hao2019 Table 5: probing accuracies (%) per task, paper vs ours; rows as Table 1.

    ours[row]["en-de"]["probing"] = {task: accuracy in %}; a task missing there shows NEEDS_PARSED.
    """
    _check_ours(ours, TABLE5_ROWS, EN_DE, required="probing")
    _check_footer(footer, ("scale", "corpora", "probing"))
    columns = ["Model", "Rec. Encoder"]
    for task in PROBING_TASKS:
        columns += [f"{task} (paper)", f"{task} (ours)"]
    rows = []
    for row in HAO2019_TABLE5.rows:
        cell, entry = row.cells["en-de"], _entry(ours, row.row_id)
        cells = [row.system, row.architecture]
        for task in PROBING_TASKS:
            cells += [(cell.probing or {}).get(task, "n/a"), _probing_cell(entry, task)]
        rows.append(cells)
    groups = "; ".join(f"{name}: {', '.join(tasks)}" for name, tasks in PROBING_GROUPS)
    lines = _variation_footer(footer, "Table 5", required=("scale", "corpora"))
    lines += [f"probing: {footer['probing']}",
              f"task groups: {groups}",
              f"{NEEDS_PARSED}: the task's labelled sentences come from a parser, which this scale cannot build"]
    return Table(title="hao2019 Table 5: probing accuracy (%) of the encoders (En-De models), paper vs. ours",
                 columns=columns, rows=rows, footer=lines)


def fig5(ours: dict[str, dict[str, dict]], footer: dict) -> tuple[Table, Figure]:
    """hao2019 Figure 5: BLEU vs recurrent steps T (1, 4, 8, 16, J) of a 1-layer BiARN, with the base line.

    rows: base, steps-1, steps-4, steps-8, steps-16, steps-J.
    """
    _check_ours(ours, FIG5_ROWS, EN_DE)
    rows = [[row.architecture, _paper_bleu(row.cells["en-de"]), _our_bleu(_entry(ours, row.row_id))]
            for row in HAO2019_FIG5.rows]
    lines = _variation_footer(footer, "Figure 5 (values printed on the figure)")
    lines += ["recurrence encoder: 1-Layer BiARN, stack fusion into the top decoder layer; "
              "T = J: as many steps as source tokens"]
    table = Table(title="hao2019 Figure 5: BLEU vs recurrent steps (En-De), paper vs. ours",
                  columns=["Recurrent steps", "BLEU (paper)", "BLEU (ours)"], rows=rows, footer=lines)

    def ours_bleu(row_id):
        entry = _entry(ours, row_id)
        return None if entry is None else entry["bleu"]

    steps = HAO2019_FIG5.rows[1:]
    figure = steps_figure([r.architecture.removeprefix("T = ") for r in steps],
                          [r.cells["en-de"].bleu_value for r in steps], [ours_bleu(r.row_id) for r in steps],
                          HAO2019_FIG5.row("base").cells["en-de"].bleu_value, ours_bleu("base"),
                          title="hao2019 Figure 5: effect of recurrent steps (En-De)")
    return table, figure


def _check_bins(ours_bins: dict) -> list[str]:
    """Rows among LENGTH_ROWS, each a list of {"bin", "bleu", "n"}; all rows the same bins and counts."""
    if not isinstance(ours_bins, dict):
        raise PipelineError(f"ours_bins: expected a dict row_id -> list of bins, got {type(ours_bins).__name__}")
    labels: list[str] | None = None
    counts: list[int] | None = None
    for row_id, bins in ours_bins.items():
        where = f"ours_bins.{row_id}"
        if row_id not in LENGTH_ROWS:
            raise PipelineError(f"{where}: unknown row; expected one of {', '.join(LENGTH_ROWS)}")
        if not isinstance(bins, list) or not bins:
            raise PipelineError(f"{where}: expected a non-empty list of {{'bin', 'bleu', 'n'}} dicts")
        for i, item in enumerate(bins):
            at = f"{where}[{i}]"
            if not isinstance(item, dict) or set(item) != {"bin", "bleu", "n"}:
                raise PipelineError(f"{at}: expected a dict with keys 'bin', 'bleu', 'n', got {item!r}")
            if not isinstance(item["bin"], str) or not item["bin"]:
                raise PipelineError(f"{at}.bin: expected a label like '(0, 15]', got {item['bin']!r}")
            n = _number(item["n"], f"{at}.n", int, optional=False)
            if n < 0:
                raise PipelineError(f"{at}.n: expected a sentence count >= 0, got {n!r}")
            _number(item["bleu"], f"{at}.bleu", float, optional=n == 0)
            if n == 0 and item["bleu"] is not None:
                raise PipelineError(f"{at}.bleu: expected None for an empty bin, got {item['bleu']!r}")
        these, their_counts = [b["bin"] for b in bins], [b["n"] for b in bins]
        if labels is not None and these != labels:
            raise PipelineError(f"{where}: bins {these} differ from {labels}; expected the same bins for every row")
        if counts is not None and their_counts != counts:
            raise PipelineError(f"{where}: sentence counts {their_counts} differ from {counts}; expected the "
                                f"same test set for every row")
        labels, counts = these, their_counts
    return labels if labels is not None else [bin_label(lo, hi) for lo, hi in LENGTH_BINS]


def length_figure(ours_bins: dict[str, list[dict]], footer: dict) -> tuple[Table, Figure]:
    """BLEU by source length (hao2019 section 5.4; the paper prints no numbers): Base vs 1-layer BiARN.

    ours_bins[row_id] = bleu_by_length(...) output, row_id among base, biarn.
    """
    labels = _check_bins(ours_bins)
    _check_footer(footer, ("scale", "corpora", "test_sets", "bleu_signature"))
    bleu = {row_id: [b["bleu"] for b in ours_bins[row_id]] if row_id in ours_bins else [None] * len(labels)
            for row_id in LENGTH_ROWS}
    counts = next(([str(b["n"]) for b in bins] for bins in ours_bins.values()), [""] * len(labels))
    rows = []
    for i, label in enumerate(labels):
        base, biarn = bleu["base"][i], bleu["biarn"][i]
        present = [row_id in ours_bins for row_id in LENGTH_ROWS]
        cells = ["n/a" if ok and v is None else _decimal(v) for ok, v in zip(present, (base, biarn))]
        delta = "" if base is None or biarn is None else f"{biarn - base:+.2f}"
        rows.append([label, counts[i], *cells, delta])
    lines = _variation_footer(footer, "", required=("scale", "corpora", "test_sets", "bleu_signature"),
                              paper_line="paper: Hao et al. (2019), section 5.4, BLEU by source length; the paper "
                                         "prints no numbers for it, so all columns are ours")
    lines += ["Ours: Transformer-Base + 1-Layer BiARN (stack fusion, top decoder layer)",
              "bins: source length in whitespace tokens of the tokenised source; n/a: no sentences in the bin"]
    table = Table(title="hao2019 BLEU by source length (En-De), ours",
                  columns=["Source length", "Sentences", "BLEU Base", "BLEU Ours", "Delta BLEU"],
                  rows=rows, footer=lines)
    figure = grouped_bars(labels, {LENGTH_LABELS[r]: bleu[r] for r in LENGTH_ROWS if r in ours_bins},
                          title="hao2019: BLEU by source length (En-De), ours", xlabel="Length of source sentence")
    return table, figure


LAYOUTS: dict[str, Callable] = {
    "hao2019-table1": table1,
    "hao2019-table2": table2,
    "hao2019-table3": table3,
    "hao2019-table4": table4,
    "hao2019-table5": table5,
    "hao2019-fig5": fig5,
    "hao2019-length": length_figure,
}
FIGURE_LAYOUTS = ("hao2019-fig5", "hao2019-length")  # these return (Table, Figure)


def build(name: str, ours: dict, footer: dict) -> tuple[Table, Figure | None]:
    """Run the layout `name`; (table, figure) with figure None for the plain tables."""
    return run_layout(LAYOUTS, FIGURE_LAYOUTS, name, ours, footer)
