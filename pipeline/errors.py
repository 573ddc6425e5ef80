"""The one error type the CLI turns into a clear message (no traceback) and a non-zero exit."""


class PipelineError(Exception):
    """Bad input or configuration; the message names the file, line or key and what was expected."""
