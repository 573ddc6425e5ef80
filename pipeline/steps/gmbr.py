"""GMBR steps: the loss weights tuned on development n-best lists (the rule `gmbr_tune`), then the combination of
pooled n-best lists (the rule `gmbr`); pipeline/gmbr.py."""
from __future__ import annotations

import sys
from dataclasses import dataclass

from pipeline.fileio import read_json, read_lines, write_json, write_lines
from pipeline.steps import register_step
from pipeline.steps.arguments import arg, json_arg


@dataclass
class GmbrTuneArgs:
    nbest: list[str] = arg(help="one n-best file per system")
    ref_dir: str = arg(help="the corpus's raw directory")
    split: str = arg(help="the development split")
    lang: str = arg()
    settings: str = arg(help="JSON: the combination's settings (metric, tune_sentences, trials, seed)")
    output: str = arg()
    pretokenized: bool = arg(False, help="the corpus is already tokenised (toy corpora)")
    truecaser: str = arg("", help="tokenised metrics: the target side's truecasing model")


def metric_tokens(pooled, metric, lang: str, pretokenized: bool, truecaser: str):
    """The pooled candidates as the metric reads them, token lists per sentence."""
    from pipeline.evaluate.metric_text import metric_lines
    from pipeline.gmbr import split_like
    flat = metric_lines([text for texts in pooled for text in texts], metric, lang, pretokenized, truecaser)
    return split_like(flat, pooled)


@register_step("gmbr-tune", GmbrTuneArgs, rules=("gmbr_tune",), stage="eval",
               help="tune GMBR's loss weights on development n-best lists")
def gmbr_tune(args: GmbrTuneArgs) -> None:
    from pipeline.evaluate.metric_text import metric_lines, read_references
    from pipeline.evaluate.metrics import get_metric
    from pipeline.gmbr import pooled_candidates, tune
    settings = json_arg(args.settings, "--settings")
    metric = get_metric(settings["metric"])
    refs = read_references(args.ref_dir, args.split, args.lang, args.pretokenized)
    pooled = pooled_candidates(args.nbest, len(refs[0]), keep=settings["tune_sentences"])
    tokens = metric_tokens(pooled, metric, args.lang, args.pretokenized, args.truecaser)
    refs = [metric_lines(r[:len(pooled)], metric, args.lang, args.pretokenized, args.truecaser) for r in refs]
    result = tune(tokens, refs, metric, args.lang, trials=settings["trials"], seed=settings["seed"])
    write_json(args.output, {**result, "metric": settings["metric"], "tune_split": args.split,
                             "sentences": len(pooled), "candidates": sum(map(len, pooled))})
    theta = {name: round(value, 3) for name, value in result["theta"].items()}
    print(f"GMBR tuned on {len(pooled)} {args.split} sentences: {settings['metric']} {result['tuned_score']:.2f} (the "
          f"first system's 1-best: {result['first_candidate_score']:.2f}); theta {theta}")


@dataclass
class GmbrArgs:
    nbest: list[str] = arg(help="one n-best file per system")
    theta: str = arg(help="gmbr-tune's output")
    source: str = arg(help="the split's source side (its sentence count)")
    lang: str = arg()
    output: str = arg()
    pretokenized: bool = arg(False, help="the corpus is already tokenised (toy corpora)")
    truecaser: str = arg("", help="tokenised metrics: the target side's truecasing model")


@register_step("gmbr", GmbrArgs, rules=("gmbr",), stage="eval",
               help="GMBR system combination of pooled n-best lists")
def gmbr(args: GmbrArgs) -> None:
    from pipeline.evaluate.metrics import get_metric
    from pipeline.gmbr import combine, pooled_candidates
    tuned = read_json(args.theta)
    sentences = len(read_lines(args.source))
    pooled = pooled_candidates(args.nbest, sentences)
    picks = combine(metric_tokens(pooled, get_metric(tuned["metric"]), args.lang, args.pretokenized, args.truecaser),
                    tuned["theta"])
    write_lines(args.output, [texts[k] for texts, k in zip(pooled, picks)])
    print(f"GMBR chose among {sum(map(len, pooled))} candidates of {sentences} sentences", file=sys.stderr)
