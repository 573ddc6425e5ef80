"""The error types the CLI turns into one clear line (no traceback) and a non-zero exit."""
import errno


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


# what to do about an OS error, by errno (os_error_line)
OS_ERROR_HINTS = {
    errno.ENOSPC: "free space on its file system (or write elsewhere) and run again",
    errno.EDQUOT: "free space within the disk quota (or write elsewhere) and run again",
    errno.EFBIG: "the file system takes no file this large; write elsewhere",
    errno.EACCES: "no permission: check the permissions of the path and its folders",
    errno.EPERM: "no permission: check the permissions of the path and its folders",
    errno.EROFS: "the file system is read-only: write elsewhere or remount it read-write",
    errno.ENOTDIR: "the path is under a file, not a folder: choose a path whose folders are folders",
    errno.EEXIST: "a file is in the way (where a folder belongs, the path is under a file): choose another path",
    errno.EISDIR: "it is a folder; expected a file path",
}


def os_error_line(err: OSError, step: str) -> str:
    """The one line an OSError of step `step` prints: the path, what failed (strerror) and what to do."""
    strerror = err.strerror or str(err)
    path = err.filename if err.filename is not None else f"(a file of `{step}`)"
    if err.filename2 is not None:
        path = f"{path} -> {err.filename2}"
    hint = OS_ERROR_HINTS.get(err.errno, f"expected `{step}` to be able to read and write its files there")
    return f"error: {path}: {strerror}; {hint}"
