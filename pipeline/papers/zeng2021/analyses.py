"""zeng2021's analysis kinds (pipeline/analyses.py): the attention statistics of Figures 4, 5 and 7, the learnt
RAN patterns of Figure 6 and the decoding speed of Figure 3."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from pipeline.analyses import Job, Task, register_analysis
from pipeline.settings import positive_ints, require, require_positive
from pipeline.steps import MODEL_RESOURCES


@dataclass(frozen=True)
class AttentionSettings:
    """Self-attention entropy, weight histograms and Jensen-Shannon divergence from teacher-forced passes over the
    first `sentences` test pairs."""
    sentences: int = 400
    bins: int = 20

    def check(self) -> None:
        require_positive(self, "sentences", "bins")


@register_analysis("attention", AttentionSettings, inputs=Job.test_data, code=("pipeline.evaluate.test_data",),
                   resources=MODEL_RESOURCES,
                   help="self-attention entropy, histograms and JS divergence on the test set")
def attention(task: Task) -> dict:
    """Self-attention entropy, histograms and JS divergence on the test set."""
    import torch

    from pipeline.evaluate.test_data import load_test
    from pipeline.papers.zeng2021.attention import attention_statistics
    torch.manual_seed(0)
    model, _, src_ids, tgt_ids = load_test(task.inputs, task.settings.sentences)
    return attention_statistics(model, src_ids, tgt_ids, bins=task.settings.bins)


@dataclass(frozen=True)
class PatternSettings:
    """The learnt input-independent attention weights (RAN / Syn-R), the top-left size x size corner."""
    size: int = 80

    def check(self) -> None:
        require_positive(self, "size")


@register_analysis("patterns", PatternSettings, inputs=lambda job: {"model": job.paths.model(job.item)},
                   help="the learnt (input-independent) attention weights of a RAN / Syn-R model")
def patterns(task: Task) -> dict:
    """The learnt (input-independent) attention weights of a RAN / Syn-R model."""
    from pipeline.device import load_model_for_job
    from pipeline.papers.zeng2021.attention import pattern_weights
    return pattern_weights(load_model_for_job(task.inputs["model"])[0], task.settings.size)


@dataclass(frozen=True)
class SpeedSettings:
    """Decoding speed by batch size and beam: median of `repeats` timed passes over the first `sentences`."""
    sentences: int = 200
    batch_sizes: list = field(default_factory=lambda: [100])
    beams: list = field(default_factory=lambda: [4])
    repeats: int = 3

    def check(self) -> None:
        require_positive(self, "sentences", "repeats")
        for name in ("batch_sizes", "beams"):
            require(positive_ints(getattr(self, name)), name, "a non-empty list of positive integers",
                    getattr(self, name))


def speed_context(job: Job) -> dict:
    """The system's own decoding settings (its length treatment and limits; batch sizes and beams are measured) and
    the file that keeps the finished cells for a retry (pipeline/papers/zeng2021/speed.py)."""
    decoding = job.params.decoding_of(job.item)
    return {"decoding": {k: v for k, v in decoding.items() if k not in ("batch_size", "beam")},
            "cells": job.paths.analysis_cells(job.table.name, job.kind, job.item)}


@register_analysis("speed", SpeedSettings, inputs=Job.test_data, context=speed_context,
                   code=("pipeline.evaluate.test_data", "pipeline.decoding"),
                   resources={name: replace(r, alone=True) for name, r in MODEL_RESOURCES.items()},  # timed alone
                   help="decoding speed (target tokens/s) by batch size and beam, median of repeats")
def speed(task: Task) -> dict:
    """Decoding speed (target tokens/s) by batch size and beam, median of repeats; each finished (batch size, beam)
    cell is kept in context["cells"] (if given) for a retry after a time limit."""
    from pipeline.checkpoint import recorded_checksum, trained_precision
    from pipeline.decoding import Decoding
    from pipeline.evaluate.test_data import load_test
    from pipeline.papers.zeng2021.speed import decoding_speed
    model, info, src_ids, _ = load_test(task.inputs, task.settings.sentences, with_target=False)
    precision = trained_precision(info)
    search = Decoding(**task.context["decoding"]).search()
    model.eval()
    rows = decoding_speed(model, src_ids, batch_sizes=task.settings.batch_sizes, beams=task.settings.beams,
                          repeats=task.settings.repeats, max_len_a=search["max_len_a"], max_len_b=search["max_len_b"],
                          length=search["length"], alpha=search["alpha"], precision=precision,
                          cells=task.context.get("cells"), model_id=recorded_checksum(task.inputs["model"]))
    device = next(model.parameters()).device.type
    for row in rows:
        print(f"batch {row['batch_size']:>4} beam {row['beam']:>3}: {row['tokens_per_s']:.1f} tokens/s")
    return {"rows": rows, "sentences": len(src_ids), "device": f"{device} ({precision})"}
