"""hao2019's analysis kind (pipeline/analyses.py): Table 5's probing tasks on frozen encoders, with the task data
built once per table (SentEval's files at paper scale, tasks built from the corpus's text at tiny scale)."""
from __future__ import annotations

import json
from dataclasses import dataclass

from pipeline.analyses import Job, Task, register_analysis
from pipeline.scales import embedded_data
from pipeline.settings import require, require_positive
from pipeline.steps import MODEL_RESOURCES


@dataclass(frozen=True)
class ProbingSettings:
    """Probing classifiers on the mean of the top encoder layer; tasks from SentEval (paper) or built from the text
    of `corpus` (tiny): at most `max_per_task` examples, seeded; the probe trains `epochs` epochs (hidden 0: linear)
    at learning rate `lr`."""
    corpus: str
    max_per_task: int = 6000
    seed: int = 1
    epochs: int = 100
    hidden: int = 0
    lr: float = 0.01

    def check(self) -> None:
        require_positive(self, "max_per_task", "seed")
        require(self.hidden >= 0, "hidden", "an integer >= 0 (0: a linear probe)", self.hidden)


def _probing_corpus(job: Job):
    return job.params.corpora[job.table.analyses["probing"]["corpus"]]


def _tasks_dir(job: Job) -> str:
    return job.paths.table(job.table.name, "probing_data", "all.tasks")


@register_analysis("probing_data", ProbingSettings, per="table", part_of="probing",
                   inputs=lambda job: {"raw": job.paths.data(_probing_corpus(job).name, "raw")},
                   context=lambda job: {"source": "text" if embedded_data(job.params.scale) else "senteval",
                                        "lang": _probing_corpus(job).src, "cache": job.params.downloads},
                   extra_outputs={"tasks": ".tasks/"}, downloads=True,  # SentEval's files, at paper scale
                   help="probing tasks: built from text (tiny) or SentEval's files (paper)")
def probing_data(task: Task) -> dict:
    """Probing tasks: built from text (tiny) or SentEval's files (paper)."""
    from pathlib import Path

    from pipeline.fileio import read_lines
    from pipeline.papers.hao2019.probing import build_text_tasks, fetch_senteval
    out, context = Path(task.outputs["tasks"]), task.context
    if context["source"] == "senteval":
        summary = fetch_senteval(out, Path(context["cache"]))
    else:
        lang = context["lang"]
        sentences = [line for split in ("train", "valid", "test")
                     for line in read_lines(Path(task.inputs["raw"]) / f"{split}.{lang}")]
        summary = build_text_tasks(sentences, out, seed=task.settings.seed, max_per_task=task.settings.max_per_task)
    print(json.dumps(summary, ensure_ascii=False))
    return summary


def probing_inputs(job: Job) -> dict:
    corpus = job.params.corpus_of(job.item).name
    return {"model": job.paths.model(job.item), "tasks": _tasks_dir(job),
            "codes": job.paths.data(corpus, "bpe", "codes"), "src_vocab": job.paths.data(corpus, "bpe", "vocab.src")}


@register_analysis("probing", ProbingSettings, inputs=probing_inputs,
                   context=lambda job: {"lang": job.params.corpus_of(job.item).src},
                   code=("pipeline.data.tokenize", "pipeline.data.subword"), resources=MODEL_RESOURCES,
                   help="probing classifiers on a frozen encoder's sentence means")
def probing(task: Task) -> dict:
    """Probing classifiers on a frozen encoder's sentence means."""
    from pathlib import Path

    from pipeline.checkpoint import check_vocab
    from pipeline.data.subword import codes_for, load_bpe
    from pipeline.data.tokenize import tokenize_lines
    from pipeline.data.vocab import Vocab
    from pipeline.device import load_model_for_job
    from pipeline.papers.hao2019.probing import run_probing

    model, info = load_model_for_job(task.inputs["model"])  # the job's GPU if it has one
    vocab = Vocab.load(task.inputs["src_vocab"])
    check_vocab(info, vocab, "src", task.inputs["src_vocab"], task.inputs["model"])
    bpe = load_bpe(codes_for(Path(task.inputs["codes"]), "src"))

    def encode_lines(lines: list[str]) -> list[list[int]]:
        """The model's own preprocessing: tokenise, BPE, vocabulary ids."""
        return [vocab.encode(bpe.process_line(line)) for line in tokenize_lines(lines, task.context["lang"])]

    tasks = {path.stem: path for path in sorted(Path(task.inputs["tasks"]).glob("*.txt"))}
    s = task.settings
    results = run_probing(model, encode_lines, tasks, seed=s.seed, epochs=s.epochs, hidden=s.hidden, lr=s.lr)
    print(json.dumps({name: round(r["test"], 2) for name, r in results.items()}))
    return results
