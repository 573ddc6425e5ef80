"""The significance step: a paired test of a system against its baseline from their score files' per-sentence
statistics (the rule `significance`, part of a table's stage)."""
from __future__ import annotations

from dataclasses import dataclass

from pipeline.errors import PipelineError
from pipeline.fileio import read_json, write_json
from pipeline.steps import register_step
from pipeline.steps.arguments import arg, json_arg


@dataclass
class SignificanceArgs:
    baseline: str = arg(help="score JSON (with per-sentence statistics)")
    system: str = arg(help="score JSON (with per-sentence statistics)")
    output: str = arg()
    settings: str = arg(help="JSON: test, n_samples, seed")
    field: str = arg("", help="the metric's field tested (default: its score)")


@register_step("significance", SignificanceArgs, rules=("significance",), stage="table",
               help="a paired significance test of a system against its baseline")
def significance(args: SignificanceArgs) -> None:
    from pipeline.evaluate.metrics import get_metric
    from pipeline.evaluate.significance import run_test
    baseline, system = read_json(args.baseline), read_json(args.system)
    if baseline["metric"] != system["metric"]:
        raise PipelineError(f"{args.system} is scored by {system['metric']}, {args.baseline} by "
                            f"{baseline['metric']}; expected the same metric")
    settings = json_arg(args.settings, "--settings")
    result = run_test(settings.pop("test"), get_metric(system["metric"]), baseline["stats"], system["stats"],
                      field=args.field or None, **settings)
    result.update({"system": system.get("system"), "baseline": baseline.get("system"), "metric": system["metric"]})
    write_json(args.output, result)
    print(f"{result['system']} vs {result['baseline']}: p = {result['p_value']:.4f} (delta {result['delta']:+.2f})")
