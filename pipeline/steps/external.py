"""The step that brings a supplied system's translations or n-best lists into the pipeline (the rules
`external_hyp` and `external_nbest`; pipeline/external.py)."""
from __future__ import annotations

import sys
from dataclasses import dataclass

from pipeline.fileio import read_lines, write_lines, write_nbest
from pipeline.steps import register_step
from pipeline.steps.arguments import arg


@dataclass
class ExternalArgs:
    key: str = arg(help="its paths.manual key")
    system: str = arg()
    split: str = arg()
    source: str = arg(help="the split's source side (its sentence count is what the outputs must match)")
    output: str = arg()
    dir: str = arg("", help="the directory paths.manual.<key> names ('' when unset)")
    nbest: int = arg(0, help="write the first N of each n-best list (0: the 1-best file)")


@register_step("external", ExternalArgs, rules=("external_hyp", "external_nbest"), stage="eval",
               help="bring a supplied system's translations or n-best lists into the pipeline")
def external(args: ExternalArgs) -> None:
    from pipeline.external import read_hyps, read_moses_nbest, supplied_dir
    folder = supplied_dir(args.dir, args.key, args.system)
    sentences = len(read_lines(args.source))
    if args.nbest:
        write_nbest(args.output, read_moses_nbest(folder / f"{args.split}.nbest", sentences, args.nbest))
    else:
        write_lines(args.output, read_hyps(folder / f"{args.split}.hyp", sentences))
    print(f"{args.system} {args.split}: {sentences} sentences from {folder}", file=sys.stderr)
