"""zhang2018's analysis kind (pipeline/analyses.py): Table 4's alignment error rate of the attention's argmax
links against gold alignments and Figure 4's word attention of chosen sentences."""
from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.analyses import Task, register_analysis
from pipeline.errors import PipelineError
from pipeline.fileio import read_lines
from pipeline.settings import positive_ints, require, require_positive
from pipeline.steps import MODEL_RESOURCES


@dataclass(frozen=True)
class AlignmentSettings:
    """Alignment error rate of the attention's argmax links (teacher-forced on the references) against the gold
    links <split>.links of the corpus's raw directory (the first `sentences` pairs), and the word attention of the
    `shown` sentences (1-based)."""
    sentences: int = 1_000_000
    batch_size: int = 50
    shown: list = field(default_factory=lambda: [1, 2])

    def check(self) -> None:
        require_positive(self, "sentences", "batch_size")
        require(positive_ints(self.shown), "shown", "a list of 1-based sentence numbers", self.shown)


@register_analysis("alignment", AlignmentSettings,
                   inputs=lambda job: {**job.test_data(), "raw": job.paths.data(job.corpus().name, "raw")},
                   context=lambda job: {"split": job.split()}, code=("pipeline.evaluate.test_data",),
                   resources=MODEL_RESOURCES,
                   help="alignment error rate of the attention's argmax links against gold alignments "
                        "(teacher-forced on the references), and the word attention of chosen sentences")
def alignment(task: Task) -> dict:
    """Alignment error rate of the attention's argmax links against gold alignments, and chosen sentences."""
    from pipeline.evaluate.test_data import load_test
    from pipeline.papers.zhang2018.alignment import alignment_analysis, read_gold
    from pipeline.papers.zhang2018.source_attention import source_attention
    s, files = task.settings, task.inputs
    gold_path = f"{files['raw']}/{task.context['split']}.links"
    model, _, src_ids, tgt_ids = load_test(files, s.sentences)
    src_lines, tgt_lines = read_lines(files["src"])[:len(src_ids)], read_lines(files["tgt"])[:len(tgt_ids)]
    gold = read_gold(read_lines(gold_path)[:s.sentences], gold_path)
    if len(gold) != len(src_ids):
        raise PipelineError(f"{gold_path}: {len(gold)} gold lines for {len(src_ids)} test pairs used; expected one "
                            "per test pair (a model with a length limit may have dropped pairs)")
    matrices = source_attention(model, src_ids, tgt_ids, batch_size=s.batch_size)
    return alignment_analysis(matrices, src_lines, tgt_lines, gold, shown=s.shown, where=gold_path)
