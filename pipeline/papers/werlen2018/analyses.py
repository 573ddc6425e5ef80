"""werlen2018's analysis kinds (pipeline/analyses.py): attention over the previous words (Figures 2-4), the
perplexity of the language models (Table 6) and the blind human-ranking sheets and their tally (Table 5)."""
from __future__ import annotations

import glob
from dataclasses import dataclass

from pipeline.analyses import Job, Task, register_analysis
from pipeline.errors import PipelineError
from pipeline.fileio import read_lines
from pipeline.settings import require_positive
from pipeline.steps import MODEL_RESOURCES


@dataclass(frozen=True)
class PreviousWordSettings:
    """Attention over the previous target words (teacher-forced on the first `sentences` references): the relative
    position of the most attended word, one sentence's matrix (`sentence`, 1-based) and binary trees from it
    (`trees` sentences from there); `parses`: a file of gold trees of those references, "" for none."""
    sentences: int = 400
    sentence: int = 1
    trees: int = 3
    max_distance: int = 50
    parses: str = ""

    def check(self) -> None:
        require_positive(self, "sentences", "sentence", "trees", "max_distance")


@register_analysis("previous_words", PreviousWordSettings, inputs=Job.test_data,
                   code=("pipeline.evaluate.test_data",), resources=MODEL_RESOURCES,
                   help="attention over the previous target words: relative positions, one sentence's matrix, binary "
                        "trees (Algorithm 1) and their bracketing scores against gold parses")
def previous_words(task: Task) -> dict:
    """Attention over the previous target words: positions, one sentence's matrix, trees and their scores."""
    import torch

    from pipeline.evaluate.test_data import load_test
    from pipeline.papers.werlen2018.previous_words import previous_word_analysis
    torch.manual_seed(0)
    s, files = task.settings, task.inputs
    model, _, src_ids, tgt_ids = load_test(files, s.sentences)
    tokens = [line.split() for line in read_lines(files["tgt"])[:s.sentences]]
    if len(tokens) != len(tgt_ids):
        raise PipelineError(f"previous-words: {len(tokens) - len(tgt_ids)} of the first {len(tokens)} pairs of "
                            f"{files['tgt']} do not fit the model's positions; expected a model without a length limit")
    parses = read_lines(s.parses)[:len(tgt_ids)] if s.parses else None
    first = s.sentence - 1
    trees = list(range(first, min(first + s.trees, len(tgt_ids))))
    return previous_word_analysis(model, src_ids, tgt_ids, tokens, first, parses, s.max_distance, trees=trees)


@dataclass(frozen=True)
class PerplexitySettings:
    """Perplexity of the test references (teacher-forced, every target token and EOS) over the first `sentences`."""
    sentences: int = 1_000_000
    batch_size: int = 50

    def check(self) -> None:
        require_positive(self, "sentences", "batch_size")


@register_analysis("perplexity", PerplexitySettings, inputs=Job.test_data, code=("pipeline.evaluate.test_data",),
                   resources=MODEL_RESOURCES,
                   help="perplexity of the test references (teacher-forced)")
def perplexity(task: Task) -> dict:
    """Perplexity of the test references (teacher-forced)."""
    from pipeline.evaluate.test_data import load_test
    from pipeline.papers.werlen2018.perplexity import perplexity as compute
    model, _, src_ids, tgt_ids = load_test(task.inputs, task.settings.sentences)
    return compute(model, src_ids, tgt_ids, batch_size=task.settings.batch_size)


@dataclass(frozen=True)
class RankingSettings:
    """Human ranking of a column's systems: blind sheets of `sentences` seeded test sentences (the key kept apart);
    `sheets`: a directory of filled-in sheets <column>*.tsv to tally, "" for none yet."""
    sentences: int = 50
    seed: int = 1
    sheets: str = ""

    def check(self) -> None:
        require_positive(self, "sentences", "seed")


def ranking_inputs(job: Job) -> dict:
    """The column's systems' test translations (row order), its corpus's raw test set, and filled-in sheets."""
    systems = job.table.column(job.item)
    sheets = job.settings["sheets"]
    return {"hyps": [job.paths.hyp(system, job.split()) for system in systems.values()],
            "raw": job.paths.data(job.corpus().name, "raw"),
            "filled": sorted(glob.glob(f"{sheets}/{job.item}*.tsv")) if sheets else []}


def ranking_context(job: Job) -> dict:
    corpus = job.corpus()
    return {"rows": list(job.table.column(job.item)), "split": job.split(), "src": corpus.src, "tgt": corpus.tgt}


@register_analysis("ranking", RankingSettings, per="column", inputs=ranking_inputs, context=ranking_context,
                   extra_outputs={"sheet": ".sheet.tsv", "key": ".key.json"},
                   help="blind human-ranking sheets of several systems' translations (the key kept apart), and the "
                        "pairwise tally of filled-in sheets")
def ranking(task: Task) -> dict:
    """Blind human-ranking sheets of a column's systems and the pairwise tally of filled-in sheets."""
    from pipeline.papers.werlen2018.ranking import build_sheet, read_sheet, tally, write_key, write_sheet
    context, files = task.context, task.inputs
    hyps = {row: read_lines(path) for row, path in zip(context["rows"], files["hyps"])}
    raw = f"{files['raw']}/{context['split']}"
    rows, key = build_sheet(read_lines(f"{raw}.{context['src']}"), read_lines(f"{raw}.{context['tgt']}"), hyps,
                            task.settings.sentences, task.settings.seed)
    sheet, key_path = task.outputs["sheet"], task.outputs["key"]
    write_sheet(rows, sheet)
    write_key(key, key_path)
    systems = list(hyps)
    pairs = [(a, b) for i, a in enumerate(systems) for b in systems[i + 1:]]
    filled = [(read_sheet(path, key), key) for path in files["filled"]]
    return {"sheet": sheet, "key": key_path, "items": len(rows), "systems": systems, "filled": list(files["filled"]),
            "tally": tally(filled, pairs) if filled else None}
