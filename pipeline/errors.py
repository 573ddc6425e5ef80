"""The error types the CLI turns into one clear line (no traceback) and a non-zero exit."""


class PipelineError(Exception):
    """Bad input or configuration; the message names the file, line or key and what was expected."""


class Stopped(Exception):
    """A run stopped at a signal after writing its checkpoint (pipeline.train.stopping); a rerun resumes it. The
    message is its one line."""

    # EX_TEMPFAIL (sysexits.h), "try again later": Snakemake retries a failed job while retries are left (the
    # train rule has one per time slice), and the status says that the stop was asked for, not a fault
    exit_status = 75


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
