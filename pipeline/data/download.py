"""Resumable, verified, atomic HTTP(S) downloads and archive member extraction."""
from __future__ import annotations

import fnmatch
import gzip
import hashlib
import http.client
import logging
import os
import re
import shutil
import socket
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
import zlib
from pathlib import Path

from tqdm import tqdm

from pipeline.errors import PipelineError
from pipeline.fileio import atomic_path
from pipeline.locks import holder_lock

log = logging.getLogger(__name__)

CHUNK = 1 << 20
USER_AGENT = "nmt-repro-downloader/0.1"
TRANSIENT_HTTP = {408, 425, 429, 500, 502, 503, 504}


class TransientError(Exception):
    """A failure worth retrying (connection drop, timeout, 5xx, short body)."""


def file_digest(path: Path, algorithm: str) -> str:
    """Hex digest of a file, read in chunks."""
    digest = hashlib.new(algorithm)
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def git_blob_id(path: Path) -> str:
    """Git's object id of a file's bytes (`git hash-object`): sha1 of b"blob <size>\\0" and the bytes."""
    digest = hashlib.sha1(b"blob %d\0" % path.stat().st_size)
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _checksum(path: Path, kind: str) -> str:
    """A file's checksum of one kind: 'git_blob', or a hashlib algorithm name."""
    return git_blob_id(path) if kind == "git_blob" else file_digest(path, kind)


def _expected_sums(sha256: str | None, md5: str | None, git_blob: str | None = None) -> dict[str, str]:
    """The checksums to verify, lower-cased, by kind (a hashlib algorithm name, or 'git_blob')."""
    sums = {}
    if sha256:
        sums["sha256"] = sha256.lower()
    if md5:
        sums["md5"] = md5.lower()
    if git_blob:
        sums["git_blob"] = git_blob.lower()
    return sums


def _mismatches(path: Path, sums: dict[str, str]) -> list[tuple[str, str, str]]:
    """(kind, expected, actual) for every checksum `path` fails."""
    bad = []
    for algorithm, expected in sums.items():
        actual = _checksum(path, algorithm)
        if actual != expected:
            bad.append((algorithm, expected, actual))
    return bad


def _content_range_start(header: str | None) -> int | None:
    """First byte offset of a `Content-Range: bytes a-b/n` header, or None."""
    match = re.match(r"\s*bytes\s+(\d+)-\d+/(\d+|\*)", header or "")
    return int(match.group(1)) if match else None


def _fetch_once(url: str, part: Path, timeout: float, progress: bool) -> None:
    """One request: continue `part` with a Range request, or restart it when the server ignores Range."""
    offset = part.stat().st_size if part.exists() else 0
    headers = {"User-Agent": USER_AGENT}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    request = urllib.request.Request(url, headers=headers)
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as err:
        if err.code == 416 and offset:
            # Our part is not a prefix the server can continue: restart clean.
            part.unlink()
            raise TransientError(f"HTTP 416 for a resume at byte {offset}; restarting from 0") from None
        if err.code in TRANSIENT_HTTP:
            raise TransientError(f"HTTP {err.code} {err.reason}") from None
        raise PipelineError(f"download of {url} failed: HTTP {err.code} {err.reason}; expected HTTP 200") from None
    except (urllib.error.URLError, ConnectionError, socket.timeout, http.client.HTTPException, OSError) as err:
        raise TransientError(f"{type(err).__name__}: {err}") from None
    with response:
        status = getattr(response, "status", 200)
        if status == 206 and _content_range_start(response.headers.get("Content-Range")) != offset:
            part.unlink(missing_ok=True)  # a range we did not ask for: restart clean
            raise TransientError(f"unexpected Content-Range {response.headers.get('Content-Range')!r}")
        if offset and status == 206:
            mode = "ab"
        else:
            if offset:
                log.info("server ignored the Range request for %s; restarting from byte 0", url)
            offset, mode = 0, "wb"
        length = response.headers.get("Content-Length")
        expected = int(length) if length and length.isdigit() else None
        received = 0
        bar = tqdm(total=None if expected is None else offset + expected, initial=offset, unit="B",
                   unit_scale=True, unit_divisor=1024, desc=part.name[: -len(".part")], disable=not progress,
                   leave=False)
        try:
            with open(part, mode) as out:
                while True:
                    try:
                        block = response.read(CHUNK)
                    except (ConnectionError, socket.timeout, http.client.HTTPException, OSError) as err:
                        raise TransientError(f"{type(err).__name__} after {offset + received} bytes") from None
                    if not block:
                        break
                    out.write(block)
                    received += len(block)
                    bar.update(len(block))
        finally:
            bar.close()
    if expected is not None and received < expected:
        # http.client returns a short body without error when the peer closes early.
        raise TransientError(f"connection closed after {received} of {expected} bytes")


def download(url: str, dest: Path, *, sha256: str | None = None, md5: str | None = None, git_blob: str | None = None,
             retries: int = 3, timeout: float = 60, progress: bool = True, backoff: float = 1.0) -> Path:
    """Download `url` to `dest`: resume `dest.part`, retry with backoff, verify, then rename onto `dest`.

    Checksums: sha256, md5, and git_blob (the file's git object id, as GitHub lists a repository's files); each
    one given must match. An existing `dest` that passes its checksums is reused without any request. With no checksum
    the file is unverified and a warning says so. One process at a time downloads a file (`dest.lock`): another
    that wants it waits, then reuses it (three of zeng2021's directions share archives).
    """
    dest = Path(dest)
    sums = _expected_sums(sha256, md5, git_blob)
    if _reusable(dest, sums, url):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with _download_lock(dest):
        if _reusable(dest, sums, url):  # another process downloaded it while this one waited
            return dest
        part = dest.with_name(dest.name + ".part")
        for attempt in range(retries + 1):
            try:
                _fetch_once(url, part, timeout, progress)
                break
            except TransientError as err:
                if attempt == retries:
                    kept = f"; the partial file {part} is kept so a rerun resumes" if part.exists() else ""
                    raise PipelineError(f"download of {url} failed after {retries + 1} attempts: {err}{kept}") \
                        from None
                delay = backoff * 2 ** attempt
                log.warning("download of %s: %s; retry %d/%d in %.1fs", url, err, attempt + 1, retries, delay)
                time.sleep(delay)
        bad = _mismatches(part, sums)
        if bad:
            part.unlink()
            detail = "; ".join(f"{alg} expected {exp}, got {act}" for alg, exp, act in bad)
            raise PipelineError(f"checksum mismatch for {url}: {detail}; the partial file was deleted, rerun to "
                                "retry")
        if not sums:
            log.warning("UNVERIFIED download: no checksum is known for %s (saved as %s)", url, dest)
        os.replace(part, dest)
    return dest


def _reusable(dest: Path, sums: dict[str, str], url: str) -> bool:
    """Whether `dest` is there and passes its checksums (one that fails is deleted)."""
    if not dest.exists():
        return False
    if not sums:
        log.info("reusing %s without verification: no checksum is known for %s", dest, url)
        return True
    if not _mismatches(dest, sums):
        return True
    log.warning("%s does not match its checksum; downloading %s again", dest, url)
    dest.unlink()
    return False


def _download_lock(dest: Path):
    """Hold `dest.lock` while downloading `dest`, waiting for another holder (pipeline.locks); the lock file stays,
    empty (removing it would race a waiter)."""
    return holder_lock(dest.with_name(dest.name + ".lock"),
                       lambda holder: log.warning("waiting for %s's download of %s", holder, dest),
                       "two downloads of this file at once")


def archive_kind(path: Path | str) -> str:
    """'tar', 'zip', 'gz' or 'plain', from the file name."""
    name = str(path).lower()
    if name.endswith((".tgz", ".tar.gz", ".tar.bz2", ".tar.xz", ".tar")):
        return "tar"
    if name.endswith(".zip"):
        return "zip"
    if name.endswith(".gz"):
        return "gz"
    return "plain"


def _safe_target(dest: Path, member: str, archive: Path) -> Path:
    """dest/member, refusing absolute paths and '..' that would escape `dest`."""
    parts = Path(member).parts
    if Path(member).is_absolute() or ".." in parts:
        raise PipelineError(f"{archive}: member {member!r} escapes the extraction directory; expected a relative path")
    return dest / member


def _copy_stream(source, target: Path) -> None:
    """Copy a binary stream to `target` atomically."""
    with atomic_path(target) as tmp:
        with open(tmp, "wb") as out:
            shutil.copyfileobj(source, out, CHUNK)


def _no_match(archive: Path, member_glob: str, names: list[str]) -> PipelineError:
    """Error for a glob that matches no member, listing a few members."""
    shown = ", ".join(names[:8]) + (" ..." if len(names) > 8 else "")
    return PipelineError(f"{archive}: no member matches {member_glob!r}; members include: {shown or '(none)'}")


def _extract_tar(archive: Path, member_glob: str, dest: Path) -> list[Path]:
    """Extract matching regular files of a tar archive (any compression)."""
    out, names = [], []
    with tarfile.open(archive, "r:*") as tar:
        for info in tar:
            names.append(info.name)
            if not info.isfile() or not fnmatch.fnmatchcase(info.name, member_glob):
                continue
            target = _safe_target(dest, info.name, archive)
            if not (target.exists() and target.stat().st_size == info.size):
                _copy_stream(tar.extractfile(info), target)
            out.append(target)
    if not out:
        raise _no_match(archive, member_glob, names)
    return out


def _extract_zip(archive: Path, member_glob: str, dest: Path) -> list[Path]:
    """Extract matching files of a zip archive."""
    out = []
    with zipfile.ZipFile(archive) as zf:
        names = zf.namelist()
        for info in zf.infolist():
            if info.is_dir() or not fnmatch.fnmatchcase(info.filename, member_glob):
                continue
            target = _safe_target(dest, info.filename, archive)
            if not (target.exists() and target.stat().st_size == info.file_size):
                with zf.open(info) as source:
                    _copy_stream(source, target)
            out.append(target)
    if not out:
        raise _no_match(archive, member_glob, names)
    return out


def _extract_gz(archive: Path, member_glob: str, dest: Path) -> list[Path]:
    """Decompress a single-file .gz; its one member is the file name without '.gz'."""
    name = archive.name[: -len(".gz")]
    if not fnmatch.fnmatchcase(name, member_glob):
        raise _no_match(archive, member_glob, [name])
    target = dest / name
    with gzip.open(archive, "rb") as source:
        _copy_stream(source, target)
    return [target]


def extract(archive: Path, member_glob: str, dest: Path) -> list[Path]:
    """Extract the members of a .tgz/.tar.gz/.tar/.zip/.gz matching `member_glob` into directory `dest`.

    Each member is written atomically at dest/<member path>; tar and zip members already there
    with the right size are kept. Returns the extracted paths in archive order.
    """
    archive, dest = Path(archive), Path(dest)
    kind = archive_kind(archive)
    extractors = {"tar": _extract_tar, "zip": _extract_zip, "gz": _extract_gz}
    if kind not in extractors:
        raise PipelineError(f"{archive}: not an archive; expected .tgz, .tar.gz, .tar, .zip or .gz")
    try:
        return extractors[kind](archive, member_glob, dest)
    except (tarfile.TarError, zipfile.BadZipFile, gzip.BadGzipFile, EOFError, zlib.error) as err:
        raise PipelineError(f"{archive}: corrupt or truncated {kind} archive ({err}); delete it and rerun") from None

