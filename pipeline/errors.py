"""The one error type the CLI turns into a clear message (no traceback) and a non-zero exit."""


class PipelineError(Exception):
    """Bad input or configuration; the message names the file, line or key and what was expected."""


def refused(check) -> int | None:
    """Run check(); where it raises a PipelineError, print its one line to stderr and return exit status 2 (a
    command wrapper's refusal before it starts anything), else None."""
    import sys
    try:
        check()
    except PipelineError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return None
