"""The length switch (shu2016 5.1): per sentence one system's output below a source length, else another's (the
rule `length_switch`)."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Sequence

from pipeline.errors import PipelineError
from pipeline.fileio import read_lines, write_lines
from pipeline.steps import register_step
from pipeline.steps.arguments import arg


def length_heuristic(source_lengths: Sequence[int], short: Sequence[str], long: Sequence[str],
                     threshold: int = 40) -> list[str]:
    """Per sentence `short`'s output if the source has fewer than `threshold` words, else `long`'s."""
    if not len(source_lengths) == len(short) == len(long):
        raise PipelineError(f"length heuristic: {len(source_lengths)} sources, {len(short)} and {len(long)} "
                            "outputs; expected one of each per sentence")
    return [s if n < threshold else t for n, s, t in zip(source_lengths, short, long)]


@dataclass
class LengthSwitchArgs:
    source: str = arg(help="the tokenised source side")
    short: str = arg(help="the translations taken below the threshold")
    long: str = arg(help="the translations taken from the threshold on")
    output: str = arg()
    threshold: int = arg(help="source words (whitespace tokens)")


@register_step("length-switch", LengthSwitchArgs, rules=("length_switch",), stage="eval",
               help="per sentence one system's output below a source length, else another's")
def length_switch(args: LengthSwitchArgs) -> None:
    lengths = [len(line.split()) for line in read_lines(args.source)]
    out = length_heuristic(lengths, read_lines(args.short), read_lines(args.long), threshold=args.threshold)
    write_lines(args.output, out)
    print(f"{sum(n < args.threshold for n in lengths)} of {len(lengths)} sentences below {args.threshold} source "
          f"words took {args.short}", file=sys.stderr)
