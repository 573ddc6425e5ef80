"""Scoring steps: a hypothesis file scored with a registered metric against every reference of its test set (the
rule `score`), and a system's scores collected into one summary for `dvc metrics` (the rule `scores`)."""
from __future__ import annotations

from dataclasses import dataclass

from pipeline.fileio import read_json, read_lines, write_json
from pipeline.steps import register_step
from pipeline.steps.arguments import arg


@dataclass
class ScoreArgs:
    metric: str = arg(help="a registered metric, e.g. sacrebleu, sacrebleu-ci, multi-bleu, rouge")
    hyp: str = arg()
    ref_dir: str = arg(help="the corpus's raw directory: <test-set>.<lang>[.1, .2, ...]")
    test_set: str = arg()
    lang: str = arg()
    system: str = arg()
    output: str = arg()
    pretokenized: bool = arg(False, help="the corpus is already tokenised (toy corpora)")
    truecaser: str = arg("", help="tokenised metrics: truecase hypotheses and references with this model (a "
                                  "truecased corpus's target side)")


@register_step("score", ScoreArgs, rules=("score",), stage="eval", code=("pipeline.evaluate.metric_text",),
               help="score a detokenised hypothesis file with a registered metric")
def score(args: ScoreArgs) -> None:
    from pipeline.evaluate.metric_text import check_script, metric_lines, read_references, segmenter_signature
    from pipeline.evaluate.metrics import get_metric
    metric = get_metric(args.metric)
    hyps = read_lines(args.hyp)
    refs = read_references(args.ref_dir, args.test_set, args.lang, args.pretokenized)
    if not args.pretokenized:  # references in the script of --lang: a hypothesis in another is the wrong file
        check_script(args.hyp, hyps, args.lang, check="--hyp")
    prepared = [metric_lines(lines, metric, args.lang, args.pretokenized, args.truecaser) for lines in [hyps] + refs]
    result = metric.score(prepared[0], prepared[1:], args.lang)
    signature = result["signature"] + segmenter_signature(metric, args.lang, args.pretokenized)
    result.update({"system": args.system, "test_set": args.test_set, "signature": signature})
    write_json(args.output, result)
    print(f"{args.system} {args.test_set}: {args.metric} {result['score']:.2f} ({result['signature']})")


@dataclass
class ScoresArgs:
    inputs: list[str] = arg(help="the system's score files")
    output: str = arg()


@register_step("scores", ScoresArgs, rules=("scores",), stage="eval",
               help="collect a system's score files into one summary (DVC metrics)")
def scores(args: ScoresArgs) -> None:
    """One small file per system: test set -> metric -> score (what `dvc metrics show` lists)."""
    summary: dict[str, dict] = {}
    for path in args.inputs:
        result = read_json(path)
        summary.setdefault(result["test_set"], {})[result["metric"]] = round(result["score"], 4)
    write_json(args.output, summary)
