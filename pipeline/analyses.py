"""The analyses a table or figure may ask for besides scores, each with its settings schema (torch-free).

A table names them under `analyses:` with their settings; the rule `analysis_<kind>` computes one JSON file per
cell system (artifacts/<scale>/tables/<table>/<kind>/<system>.json; per column for the PER_COLUMN kinds:
<kind>/<column>.json) and the table step hands it to the layout as the cell value `<kind>`.
"""
from __future__ import annotations

from pipeline.errors import PipelineError

# kind -> setting -> (type, default); a default of None means required
ANALYSES: dict[str, dict[str, tuple[type, object]]] = {
    # BLEU by source (and target) length in tokenised words; bins [lo, hi] with hi null for the open last one;
    # `metric`: a registered metric whose score file's per-sentence stats are summed per bin (all references, its
    # casing and tokenisation), "" for sacreBLEU against the first reference
    "length": {"by": (list, ["source"]), "bins": (list, None), "metric": (str, "")},
    # probing classifiers on the mean of the top encoder layer; tasks from SentEval (paper) or built from text
    "probing": {"corpus": (str, None), "max_per_task": (int, 6000), "seed": (int, 1), "epochs": (int, 100),
                "hidden": (int, 0), "lr": (float, 0.01)},
    # self-attention entropy, weight histograms and Jensen-Shannon divergence from teacher-forced passes
    "attention": {"sentences": (int, 400), "bins": (int, 20)},
    # the learnt input-independent attention weights (RAN / Syn-R), the top-left size x size corner
    "patterns": {"size": (int, 80)},
    # decoding speed by batch size and beam: median of `repeats` timed passes over the first `sentences`
    "speed": {"sentences": (int, 200), "batch_sizes": (list, [100]), "beams": (list, [4]), "repeats": (int, 3)},
    # attention over the previous target words (teacher-forced on the first `sentences` references): the relative
    # position of the most attended word, one sentence's matrix (`sentence`, 1-based) and binary trees from it
    # (`trees` sentences from there); `parses`: a file of gold trees of those references, "" for none
    "previous_words": {"sentences": (int, 400), "sentence": (int, 1), "trees": (int, 3), "max_distance": (int, 50),
                       "parses": (str, "")},
    # perplexity of the test references (teacher-forced, every target token and EOS)
    "perplexity": {"sentences": (int, 1_000_000), "batch_size": (int, 50)},
    # human ranking of a column's systems: blind sheets of `sentences` seeded test sentences (the key kept apart);
    # `sheets`: a directory of filled-in sheets <column>*.tsv to tally, "" for none yet
    "ranking": {"sentences": (int, 50), "seed": (int, 1), "sheets": (str, "")},
    # alignment error rate of the attention's argmax links (teacher-forced on the references) against the gold links
    # <split>.links of the corpus's raw directory (the first `sentences` pairs), and the word attention of the
    # `shown` sentences (1-based)
    "alignment": {"sentences": (int, 1_000_000), "batch_size": (int, 50), "shown": (list, [1, 2])},
    # a learning curve of the run (pipeline/evaluate/curves.py: CURVES) over its first `epochs` epochs (0: all)
    "curves": {"curve": (str, "valid/nll"), "epochs": (int, 0)},
}
# Kinds computed once per table column (over the column's systems) instead of once per system.
PER_COLUMN = frozenset({"ranking"})


def check_settings(kind: str, settings: dict) -> dict:
    """The settings of an analysis with defaults filled in; a bad key or value -> PipelineError naming it."""
    schema = ANALYSES[kind]
    for key in settings:
        if key not in schema:
            raise PipelineError(f"{key}: unknown setting; expected one of {', '.join(schema)}")
    out = {}
    for key, (kind_, default) in schema.items():
        if key not in settings:
            if default is None:
                raise PipelineError(f"{key}: missing required setting")
            out[key] = default
            continue
        value = settings[key]
        if kind_ is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind_) or isinstance(value, bool):
            raise PipelineError(f"{key}: expected {kind_.__name__}, got {value!r}")
        out[key] = value
    _check_values(kind, out)
    return out


def _check_values(kind: str, s: dict) -> None:
    positive = [k for k, (t, _) in ANALYSES[kind].items() if t is int and k not in ("hidden", "epochs")]
    for key in positive:
        if s[key] < 1:
            raise PipelineError(f"{key}: expected an integer >= 1, got {s[key]!r}")
    if kind == "length":
        if not s["by"] or any(b not in ("source", "target") for b in s["by"]):
            raise PipelineError(f"by: expected a list of 'source' and/or 'target', got {s['by']!r}")
        from pipeline.evaluate.length import check_bins
        check_bins([tuple(b) if isinstance(b, list) else b for b in s["bins"]])
        if s["metric"]:
            from pipeline.evaluate.metrics import get_metric
            get_metric(s["metric"])
    if kind == "speed":
        for key in ("batch_sizes", "beams"):
            if not s[key] or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in s[key]):
                raise PipelineError(f"{key}: expected a non-empty list of positive integers, got {s[key]!r}")
    if kind == "alignment" and any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in s["shown"]):
        raise PipelineError(f"shown: expected a list of 1-based sentence numbers, got {s['shown']!r}")
    if kind == "curves":
        from pipeline.evaluate.curves import CURVES
        if s["curve"] not in CURVES:
            raise PipelineError(f"curve: expected one of {', '.join(CURVES)}, got {s['curve']!r}")
        if s["epochs"] < 0:
            raise PipelineError(f"epochs: expected an integer >= 0 (0: the whole run), got {s['epochs']!r}")
    if kind == "probing" and s["hidden"] < 0:
        raise PipelineError(f"hidden: expected an integer >= 0 (0: a linear probe), got {s['hidden']!r}")
