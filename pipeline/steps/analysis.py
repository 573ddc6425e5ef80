"""The analysis kinds more than one paper uses (pipeline/analyses.py); a paper's own kinds live in
pipeline/papers/<paper>/."""
from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.analyses import Job, Task, register_analysis
from pipeline.errors import PipelineError
from pipeline.fileio import read_json, read_lines
from pipeline.settings import require


@dataclass(frozen=True)
class LengthSettings:
    """BLEU by source (and target) length in tokenised words; bins [lo, hi] with hi null for the open last one;
    `metric`: a registered metric whose score file's per-sentence stats are summed per bin (all references, its
    casing and tokenisation), "" for sacreBLEU against the first reference."""
    bins: list
    by: list = field(default_factory=lambda: ["source"])
    metric: str = ""

    def check(self) -> None:
        require(bool(self.by) and all(b in ("source", "target") for b in self.by), "by",
                "a list of 'source' and/or 'target'", self.by)
        from pipeline.evaluate.length import check_bins
        check_bins([tuple(b) if isinstance(b, list) else b for b in self.bins])
        if self.metric:
            from pipeline.evaluate.metrics import get_metric
            get_metric(self.metric)


def length_inputs(job: Job) -> dict:
    corpus, split = job.corpus(), job.split()
    files = {"src": job.paths.data(corpus.name, "tok", f"{split}.src"),
             "tgt": job.paths.data(corpus.name, "tok", f"{split}.tgt"),
             "raw": job.paths.data(corpus.name, "raw"), "hyp": job.paths.hyp(job.item, split)}
    metric = job.settings.get("metric")
    return {**files, "scores": job.paths.score(job.item, split, metric)} if metric else files


@register_analysis("length", LengthSettings, inputs=length_inputs, code=("pipeline.evaluate.length",),
                   context=lambda job: {"lang": job.corpus().tgt, "split": job.split()})
def length_bins(task: Task) -> dict:
    """BLEU by source and/or target length bins."""
    from pipeline.evaluate.length import bleu_by_length, score_by_length
    settings, files = task.settings, task.inputs
    bins = [tuple(b) for b in settings.bins]
    by = {"source": files["src"], "target": files["tgt"]}
    if settings.metric:  # the score file's per-sentence stats, summed per bin
        from pipeline.evaluate.metrics import get_metric
        scores = read_json(files["scores"])
        if scores.get("metric") != settings.metric:
            raise PipelineError(f"length: {files['scores']} holds metric {scores.get('metric')!r}; expected the "
                                f"score file of {settings.metric!r}")
        metric = get_metric(settings.metric)
        return {kind: score_by_length(read_lines(by[kind]), scores["stats"], metric, bins=bins) for kind in settings.by}
    from pipeline.evaluate.bleu import target_tokenizer  # sacreBLEU against the first reference
    lang = task.context["lang"]
    hyps, refs = read_lines(files["hyp"]), read_lines(f"{files['raw']}/{task.context['split']}.{lang}")
    return {kind: bleu_by_length(read_lines(by[kind]), hyps, refs, tokenize=target_tokenizer(lang),
                                 bins=bins) for kind in settings.by}
