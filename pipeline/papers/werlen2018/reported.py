"""werlen2018's numbers as printed (Tables 1-6).

Tables 1-4 are ReportedTables (Cell.bleu holds each BLEU); the significance marks of Table 3 ("*" p < 0.05, "**"
p < 0.01 against the NMT baseline) live in WERLEN2018_TABLE3_MARKS; Table 5's percentages and Table 6's sizes and
perplexities are plain numbers.
"""
from __future__ import annotations

from pipeline.errors import PipelineError
from pipeline.report.reported import NA, Cell, ReportedTable, Row

# Our five NMT systems (grid "w" of params/werlen2018.yaml): (row id, label as printed, what it is)
WERLEN2018_SYSTEMS = (
    ("baseline", "NMT baseline", "dl4mt's attention model (BiGRU encoder, conditional GRU decoder)"),
    ("memory", "+ Memory RNN", "the recurrence reads an attention summary of the previous states (A.3.2)"),
    ("self-rnn", "+ Self-attentive RNN", "the readout adds an attention summary of the previous states (A.3.3)"),
    ("mean", "+ Mean residual connections", "the readout reads the mean of the previous words (eq. 9)"),
    ("self-attentive", "+ Self-attentive residual connections",
     "the readout reads an attention summary of the previous words, content score (eq. 10-13)"),
)
LABELS = {row_id: label for row_id, label, _ in WERLEN2018_SYSTEMS}


def _rows(columns: tuple[str, ...], printed: dict[str, str], group: str = "this work",
          params: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> tuple[Row, ...]:
    """Rows from 'value value ...' strings per row id ('–' = not printed), in `columns` order."""
    rows = []
    for row_id, text in printed.items():
        values = text.split()
        if len(values) != len(columns):
            raise PipelineError(f"werlen2018 row {row_id}: {len(values)} values; expected {len(columns)}")
        size = (params or {}).get(row_id)
        cells = {col: NA if v == "–" else Cell(params=size, bleu=v) for col, v in zip(columns, values)}
        label = (labels or LABELS).get(row_id, row_id)
        rows.append(Row(row_id, group, label, label, cells))
    return tuple(rows)


# Table 1: multi-bleu on tokenised (truecased) text, En-Zh and Es-En; |Θ| per model; the SMT row (Moses) as printed.
WERLEN2018_TABLE1 = ReportedTable(
    paper="werlen2018", table="table1", description="BLEU (multi-bleu) on tokenized text; |Θ| per model",
    pairs=("en-zh", "es-en"),
    rows=_rows(("en-zh", "es-en"), {"smt": "21.6 25.2"}, group="existing", labels={"smt": "SMT baseline"})
    + _rows(("en-zh", "es-en"), {"baseline": "22.6 25.4", "memory": "22.5 25.5", "self-rnn": "22.0 25.1",
                                 "mean": "23.6 25.7", "self-attentive": "24.0 26.3"},
            params={"baseline": "108.7M", "memory": "109.7M", "self-rnn": "110.2M", "mean": "108.7M",
                    "self-attentive": "108.9M"}),
)

# Table 2: multi-bleu on tokenised text, En-De newstest2014 and 2015, with the systems the paper cites.
WERLEN2018_TABLE2 = ReportedTable(
    paper="werlen2018", table="table2", description="BLEU (multi-bleu) on tokenized text, En-De NT14 and NT15",
    pairs=("nt14", "nt15"),
    rows=_rows(("nt14", "nt15"), {"luong2015": "20.9 –", "zhang2017": "22.57 –", "yang2017": "22.1 25.0",
                                  "zhang2016": "– 25.49"}, group="existing",
               labels={"luong2015": "NMT (unk. word repl.) (Luong et al., 2015)",
                       "zhang2017": "Context-aware NMT (Zhang et al., 2017)",
                       "yang2017": "Recurrent attention NMT (Yang et al., 2017)",
                       "zhang2016": "Variational NMT (Zhang et al., 2016a)"})
    + _rows(("nt14", "nt15"), {"baseline": "22.3 24.8", "memory": "22.6 24.9", "self-rnn": "22.0 24.3",
                               "mean": "22.9 24.9", "self-attentive": "23.2 25.5"}),
)

# Table 3: NIST BLEU (mteval-v13a) on detokenised, detruecased text, En-De newstest2014-2016.
WERLEN2018_TABLE3 = ReportedTable(
    paper="werlen2018", table="table3", description="NIST BLEU on detokenized and detruecased text, En-De NT14-16",
    pairs=("nt14", "nt15", "nt16"),
    rows=_rows(("nt14", "nt15", "nt16"), {"winning-wmt": "20.1 24.4 34.2", "sennrich2016": "– 22.8 –",
                                          "nadejde2017": "– – 29.0"}, group="existing",
               labels={"winning-wmt": "Winning WMT (UEDIN-SYNTAX 2014, 2015; UEDIN-NMT 2016)",
                       "sennrich2016": "NMT (BPE) (Sennrich et al., 2016b)",
                       "nadejde2017": "Syntax NMT (Nadejde et al., 2017)"})
    + _rows(("nt14", "nt15", "nt16"), {"baseline": "21.0 24.4 28.8", "mean": "21.4 24.7 29.6",
                                       "self-attentive": "21.7 25.0 29.7"}),
)
# The paper marks whole rows: "+ Mean residual connections*", "+ Self-attentive residual connections**".
WERLEN2018_TABLE3_MARKS = {"mean": "*", "self-attentive": "**"}
WERLEN2018_MARKS = [(0.01, "**"), (0.05, "*")]  # the caption's thresholds

# Table 4: the two scores of the self-attentive residual connections (eq. 12 and 13), multi-bleu.
WERLEN2018_TABLE4 = ReportedTable(
    paper="werlen2018", table="table4", description="BLEU for the two scoring functions of the proposed decoder",
    pairs=("en-zh", "es-en"),
    rows=_rows(("en-zh", "es-en"), {"content-scope": "23.1 25.6", "content": "24.0 26.3"},
               labels={"content-scope": "Content+Scope", "content": "Content"}),
)

# Table 5: human ranking of 50 sentences per pair, % of sentences where the first system ranked higher (>), equal
# (=) or lower (<) than the second. As printed: the En-De "Mean vs. Baseline" row sums to 110.
WERLEN2018_TABLE5_PAIRS = (("mean", "baseline"), ("self-attentive", "baseline"), ("self-attentive", "mean"))
WERLEN2018_TABLE5 = {  # (first, second) -> direction -> (>, =, <)
    ("mean", "baseline"): {"en-zh": (26, 56, 18), "es-en": (20, 64, 16), "en-de": (28, 58, 24)},
    ("self-attentive", "baseline"): {"en-zh": (28, 60, 12), "es-en": (28, 56, 16), "en-de": (32, 54, 14)},
    ("self-attentive", "mean"): {"en-zh": (24, 62, 14), "es-en": (28, 58, 14), "en-de": (32, 56, 12)},
}

# Table 6: language modelling on Daniluk et al. (2016)'s Wikipedia corpus; d = hidden size, 47M parameters each.
WERLEN2018_TABLE6 = (  # (row id, system as printed, d, perplexity, ours: whether we train it)
    ("lstm", "LSTM (Daniluk et al., 2016)", 300, "85.2", True),
    ("lstm-attention", "LSTM + Attention (Daniluk et al., 2016)", 296, "82.0", False),
    ("lstm-4gram", "LSTM + 4-gram (Daniluk et al., 2016)", 968, "75.9", False),
    ("mean", "LSTM + Mean residual connections", 296, "80.2", True),
    ("self-attentive", "LSTM + Self-attentive residual connections", 296, "80.4", True),
)
WERLEN2018_TABLE6_PARAMS = "47M"  # the caption: "The number of parameter for all models is 47M."
