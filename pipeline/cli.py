"""`python -m pipeline <step> ...`: the thin commands every Snakemake rule calls.

The command line is derived from the step registry (pipeline/steps/): one subcommand per registered step, its
options from the step's argument dataclass. The steps read their inputs, call package functions and write their
outputs atomically; none knows any paper: what differs between papers comes in as arguments or from the papers'
own registered modules.
"""
from __future__ import annotations

import argparse
import sys

from pipeline.errors import PipelineError, Stopped, os_error_line
from pipeline.steps import load_steps
from pipeline.steps.arguments import add_arguments, from_namespace


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pipeline", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="step", required=True, metavar="STEP")
    for name, step in sorted(load_steps().items()):
        sub = subparsers.add_parser(name, help=step.help, description=step.help)
        add_arguments(sub, step.args)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    step = load_steps()[args.step]
    try:
        step.run(from_namespace(step.args, args))
    except PipelineError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except Stopped as err:  # a run stopped at a signal, its checkpoint written: a retry resumes it
        print(err, file=sys.stderr)
        return err.exit_status
    except FileNotFoundError as err:  # a missing input file: one line naming it, not a traceback
        print(f"error: {err.filename or err}: no such file; expected it as an input of `{args.step}`",
              file=sys.stderr)
        return 2
    except OSError as err:  # a full disk, a read-only folder, a path under a file: one line saying what to do
        print(os_error_line(err, args.step), file=sys.stderr)
        return 2
    return 0
