"""zeng2021 Figures 3, 6 and 8: decoding speed, RAN-ALL's learnt attention patterns, BLEU by sentence length (ours
only: the paper prints no numbers on them)."""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from pipeline.errors import PipelineError
from pipeline.evaluate.length import bin_label
from pipeline.papers.zeng2021.layouts import (EN_DE, LABELS, PAPER, SIDES, cell_of, check_count, check_matrix,
                                              check_nonneg, check_positive_int, footer)
from pipeline.report.figures import bar_panels, heatmap_grid, line_panels
from pipeline.report.format import analysis, check_cells, check_keys, check_score
from pipeline.report.layouts import register_layout
from pipeline.report.table import Table

FIG3_ROWS = ("transf", "ran-all")
FIG3_BEAM, FIG3_BATCH = 4, 100  # the paper's fixed beam (varying batch) and fixed batch (varying beam)
FIG8_ROWS = ("transf", "ran-e", "ran-d", "ran-all")


# ------------------------------------------------------------------ Figure 3 (decoding speed)
def _check_speed(cell, where: str, pair: str) -> None:
    """{"speed": {"rows": [{"batch_size", "beam", "tokens_per_s", ...}, ...], "sentences", "device"}}:
    distinct settings, rates >= 0."""
    check_keys(cell, where, ("speed",), ("system",))
    check_keys(cell["speed"], f"{where}.speed", ("rows",), ("sentences", "device"))
    speed = cell["speed"]["rows"]
    if not isinstance(speed, list) or not speed:
        raise PipelineError(f"{where}.speed.rows: expected a non-empty list of {{'batch_size', 'beam', "
                            f"'tokens_per_s'}} dicts, got {speed!r}")
    if "sentences" in cell["speed"]:
        check_positive_int(cell["speed"]["sentences"], f"{where}.speed.sentences")
    seen = set()
    for i, item in enumerate(speed):
        at = f"{where}.speed.rows[{i}]"
        if not isinstance(item, dict):
            raise PipelineError(f"{at}: expected a dict with 'batch_size', 'beam', 'tokens_per_s', got {item!r}")
        for key in ("batch_size", "beam", "tokens_per_s"):
            if key not in item:
                raise PipelineError(f"{at}.{key}: missing")
        setting = (check_positive_int(item["batch_size"], f"{at}.batch_size"),
                   check_positive_int(item["beam"], f"{at}.beam"))
        check_nonneg(item["tokens_per_s"], f"{at}.tokens_per_s")  # 0: the system wrote only empty outputs
        if setting in seen:
            raise PipelineError(f"{at}: batch size {setting[0]}, beam {setting[1]} appears twice; expected "
                                f"one rate per setting")
        seen.add(setting)
    if not any(b == FIG3_BATCH or k == FIG3_BEAM for b, k in seen):
        raise PipelineError(f"{where}.speed.rows: no setting at beam {FIG3_BEAM} or batch size {FIG3_BATCH}; expected "
                            f"the paper's settings (batch sizes at beam {FIG3_BEAM}, beams at batch size "
                            f"{FIG3_BATCH})")


def _speed_text(facts: dict, found: dict[str, dict]) -> list[str]:
    """How the speed was measured: the settings, and the sentences and device of each measurement."""
    s = analysis(facts, "speed", ("sentences", "repeats"))
    measured = "; ".join(f"{LABELS[row]} {speed.get('sentences', '?')} sentences on {speed.get('device', '?')}"
                         for row, speed in found.items()) or "none yet"
    return [f"speed: one CPU thread, alone on the machine; the first {s['sentences']} test sentences; median of "
            f"{s['repeats']} timed passes after one warm-up pass",
            f"measured: {measured}"]


@register_layout("zeng2021-fig3", figure=True)
def fig3(cells: dict, facts: dict) -> tuple[Table, Figure]:
    """zeng2021 Figure 3: decoding tokens/s of TransF and RAN-ALL by batch size (beam 4) and beam (batch 100)."""
    check_cells(cells, FIG3_ROWS, EN_DE, _check_speed)
    found = {row: c["speed"] for row in FIG3_ROWS if (c := cell_of(cells, row))}
    rates = {row: {(s["batch_size"], s["beam"]): s["tokens_per_s"] for s in speed["rows"]}
             for row, speed in found.items()}
    settings = {key for by_setting in rates.values() for key in by_setting}
    batches = sorted(b for b, k in settings if k == FIG3_BEAM)
    beams = sorted(k for b, k in settings if b == FIG3_BATCH)
    panels = (("batch size", [(b, FIG3_BEAM) for b in batches]), ("beam", [(FIG3_BATCH, k) for k in beams]))
    rows = []
    for varying, keys in panels:
        for key in keys:
            transf, ran = (rates.get(row, {}).get(key) for row in FIG3_ROWS)
            ratio = f"{ran / transf:.3f}" if transf and ran else ""
            rows.append([varying, str(key[0]), str(key[1]),
                         "" if transf is None else f"{transf:.1f}", "" if ran is None else f"{ran:.1f}", ratio])
    first = (f"paper: {PAPER}, Figure 3 and section 3.3 print no numbers on the figure; the text reports RAN-ALL "
             f"decoding up to 23.6% faster at batch size {FIG3_BATCH} and about 1.2x across beam sizes; all numbers "
             f"here are ours")
    lines = footer(facts, first, EN_DE, extra=[
        *_speed_text(facts, found),
        "tokens/s: target tokens (without EOS) per second of batched beam search; ratio > 1: RAN-ALL faster"])
    table = Table(title="zeng2021 Figure 3: decoding speed (tokens/s) by batch size and beam (En-De), ours",
                  columns=["Varying", "Batch size", "Beam", "TransF tokens/s", "RAN-ALL tokens/s",
                           "RAN-ALL / TransF"], rows=rows, footer=lines)

    def series(keys):
        return {LABELS[row]: [rates[row].get(key) for key in keys] for row in FIG3_ROWS if row in rates}

    figure_panels = [(f"beam {FIG3_BEAM}", "batch size", [str(b) for b in batches], series(panels[0][1])),
                     (f"batch size {FIG3_BATCH}", "beam size", [str(k) for k in beams], series(panels[1][1]))]
    figure = line_panels(figure_panels, title="zeng2021 Figure 3: decoding speed (En-De), ours", ylabel="tokens/s")
    return table, figure


# ------------------------------------------------------------------ Figure 6 (RAN weights)
def _check_patterns(cell, where: str, pair: str) -> None:
    """{"patterns": {"enc": [n x n per layer] or None, "dec": ...}}: square, finite, >= 0, rows not all zero.

    None: a side with dot-product attention (no learnt pattern).
    """
    check_keys(cell, where, ("patterns",), ("system",))
    patterns = cell["patterns"]
    check_keys(patterns, f"{where}.patterns", tuple(SIDES))
    for side in SIDES:
        at = f"{where}.patterns.{side}"
        layers = patterns[side]
        if layers is None:
            continue
        if not isinstance(layers, list) or not layers:
            raise PipelineError(f"{at}: expected None or a non-empty list of n x n matrices (one per layer)")
        for k, matrix in enumerate(layers):
            n = len(matrix) if isinstance(matrix, list) else 0
            if n == 0:
                raise PipelineError(f"{at}[{k}]: expected a non-empty n x n matrix, got {matrix!r}"[:300])
            check_matrix(matrix, f"{at}[{k}]", n, n, check_nonneg)
            for i, row in enumerate(matrix):
                if sum(row) <= 0:
                    raise PipelineError(f"{at}[{k}][{i}]: all weights are 0; expected an attention row")


def pattern_stats(matrix: list[list[float]]) -> tuple[float, float, float]:
    """(mean argmax offset key - query, mean row entropy in nats, mean weight on the first token) of [n x n].

    Rows are normalised to sum 1 first (our choice: a cropped matrix's rows may not).
    """
    p = np.asarray(matrix, dtype=np.float64)
    p = p / p.sum(axis=1, keepdims=True)
    offset = float(np.mean(np.argmax(p, axis=1) - np.arange(len(p))))
    logs = np.log(np.where(p > 0, p, 1.0))  # 0 log 0 = 0
    entropy = float(np.mean(-(p * logs).sum(axis=1)))
    return offset, entropy, float(np.mean(p[:, 0]))


@register_layout("zeng2021-fig6", figure=True)
def fig6(cells: dict, facts: dict) -> tuple[Table, Figure]:
    """zeng2021 Figure 6: RAN-ALL's learned attention patterns; heatmaps of layers 1 and last per side."""
    check_cells(cells, ("ran-all",), EN_DE, _check_patterns)
    cell = cell_of(cells, "ran-all")
    rows, grid = [], []
    if cell is not None:
        for side, short in SIDES.items():
            layers = cell["patterns"][side]
            if layers is None:
                continue
            for k, matrix in enumerate(layers):
                offset, entropy, first = pattern_stats(matrix)
                rows.append([short, str(k + 1), f"{len(matrix)} x {len(matrix)}", f"{offset:.2f}",
                             f"{entropy:.3f}", f"{first:.3f}"])
            grid.append([(f"{short} L{k}", layers[k - 1]) for k in sorted({1, len(layers)})])
    size = analysis(facts, "patterns", ("size",))["size"]
    lines = footer(facts, f"paper: {PAPER}, Figure 6 (prints no numbers; the paper's matrices are 80 x 80); all "
                          f"numbers are ours, RAN-ALL trained on En-De", EN_DE, extra=[
        f"patterns: the learnt, input-independent weights, averaged over heads, of the first {size} positions "
        f"(the decoder's causal)",
        "summary per layer (our choice): rows normalised to sum 1; offset = argmax key position minus query "
        "position, entropy in nats, and the weight on the first token, each averaged over query positions"])
    table = Table(title="zeng2021 Figure 6: RAN-ALL attention patterns (En-De), ours",
                  columns=["Side", "Layer", "Size", "Mean argmax offset", "Mean row entropy",
                           "Mean weight on first token"], rows=rows, footer=lines)
    figure = heatmap_grid(grid or [[None]], title="zeng2021 Figure 6: RAN-ALL attention weights (En-De), ours",
                          xlabel="key position", ylabel="query position")
    return table, figure


# ------------------------------------------------------------------ Figure 8 (BLEU by length)
LENGTH_KINDS = ("source", "target")


def _check_bins(bins, where: str) -> None:
    """A non-empty list of {"bin": label, "bleu": score (None iff n == 0), "n": count}."""
    if not isinstance(bins, list) or not bins:
        raise PipelineError(f"{where}: expected a non-empty list of {{'bin', 'bleu', 'n'}} dicts, got {bins!r}")
    for i, item in enumerate(bins):
        at = f"{where}[{i}]"
        check_keys(item, at, ("bin", "bleu", "n"))
        if not isinstance(item["bin"], str) or not item["bin"]:
            raise PipelineError(f"{at}.bin: expected a label like '(0, 10]', got {item['bin']!r}")
        n = check_count(item["n"], f"{at}.n")
        check_score(item["bleu"], f"{at}.bleu", optional=n == 0)
        if n == 0 and item["bleu"] is not None:
            raise PipelineError(f"{at}.bleu: expected None for an empty bin, got {item['bleu']!r}")


def _check_length(cell, where: str, pair: str) -> None:
    """{"length": {"source": BINS, "target": BINS}}."""
    check_keys(cell, where, ("length",), ("system",))
    check_keys(cell["length"], f"{where}.length", tuple(LENGTH_KINDS))
    for kind in LENGTH_KINDS:
        _check_bins(cell["length"][kind], f"{where}.length.{kind}")


@register_layout("zeng2021-fig8", figure=True)
def fig8(cells: dict, facts: dict) -> tuple[Table, Figure]:
    """zeng2021 Figure 8: BLEU per source-length and target-length bin; rows transf, ran-e, ran-d, ran-all."""
    check_cells(cells, FIG8_ROWS, EN_DE, _check_length)
    found = {row: c["length"] for row in FIG8_ROWS if (c := cell_of(cells, row))}
    rows, panels = [], []
    for kind in LENGTH_KINDS:
        first = next(iter(found), None)
        reference = found[first][kind] if first else []
        for row, length in found.items():
            if [(b["bin"], b["n"]) for b in length[kind]] != [(b["bin"], b["n"]) for b in reference]:
                raise PipelineError(f"cells.{row}.en-de.length.{kind}: bins or sentence counts differ from "
                                    f"{LABELS[first]}'s; expected the same bins of the same test set")
        labels = [b["bin"] for b in reference]
        bleu = {row: [b["bleu"] for b in length[kind]] for row, length in found.items()}
        for i, b in enumerate(reference):
            rows.append([kind, b["bin"], str(b["n"])] + [
                "" if row not in bleu else "n/a" if bleu[row][i] is None else f"{bleu[row][i]:.2f}"
                for row in FIG8_ROWS])
        panels.append((f"by {kind} length", f"length of {kind} sentence", labels,
                       {LABELS[row]: values for row, values in bleu.items()}))
    bins = analysis(facts, "length", ("bins",))["bins"]
    lines = footer(facts, f"paper: {PAPER}, Figure 8 (prints no numbers; nor its bins' bounds); all numbers are "
                          f"ours", EN_DE, extra=[
        "BLEU (ours): corpus sacreBLEU of each bin's sentences, the target language's tokenizer",
        f"bins (our choice): {', '.join(bin_label(lo, hi) for lo, hi in bins)}; sentence length in tokens of the "
        f"tokenised source or reference; n/a: no sentences in the bin"])
    table = Table(title="zeng2021 Figure 8: BLEU by source and target length (En-De), ours",
                  columns=["Length of", "Bin", "Sentences", *(LABELS[r] for r in FIG8_ROWS)], rows=rows,
                  footer=lines)
    figure = bar_panels(panels, title="zeng2021 Figure 8: BLEU by sentence length (En-De), ours")
    return table, figure
