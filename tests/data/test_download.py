"""Downloads against a loopback HTTP server: verify, extract, reuse, resume, checksum errors."""
from __future__ import annotations

import gzip
import hashlib
import random
import re
import threading

import pytest
from loopback import make_tgz, make_zip, sha256

from pipeline.data.download import download, extract
from pipeline.errors import PipelineError


DE = "Guten Morgen .\nDas Haus ist klein .\nÄrger über Öl\n".encode()
EN = "Good morning .\nThe house is small .\nTrouble about oil\n".encode()


def test_download_verify_extract_then_reuse_without_request(server, tmp_path):
    tgz = make_tgz({"corpus/train.de": DE, "corpus/train.en": EN, "corpus/README": b"x\n"})
    dev_gz = gzip.compress(DE, mtime=0)
    server.files = {"/c.tgz": tgz, "/dev.de.gz": dev_gz, "/c.zip": make_zip({"z/a.en": EN, "z/a.de": DE})}
    got = download(server.url("/c.tgz"), tmp_path / "dl" / "c.tgz", sha256=sha256(tgz), progress=False)
    assert got == tmp_path / "dl" / "c.tgz" and got.read_bytes() == tgz
    assert not (tmp_path / "dl" / "c.tgz.part").exists()
    files = extract(got, "corpus/train.*", tmp_path / "x")
    assert files == [tmp_path / "x/corpus/train.de", tmp_path / "x/corpus/train.en"]
    assert files[0].read_bytes() == DE and files[1].read_bytes() == EN
    assert not (tmp_path / "x/corpus/README").exists()

    gz = download(server.url("/dev.de.gz"), tmp_path / "dl" / "dev.de.gz", md5=hashlib.md5(dev_gz).hexdigest(),
                  progress=False)
    assert extract(gz, "*", tmp_path / "g") == [tmp_path / "g/dev.de"]
    assert (tmp_path / "g/dev.de").read_bytes() == DE
    zp = download(server.url("/c.zip"), tmp_path / "dl" / "c.zip", progress=False)  # no checksum: unverified
    assert extract(zp, "z/a.en", tmp_path / "z") == [tmp_path / "z/z/a.en"]
    assert (tmp_path / "z/z/a.en").read_bytes() == EN
    assert len(server.requests) == 3

    again = download(server.url("/c.tgz"), tmp_path / "dl" / "c.tgz", sha256=sha256(tgz), progress=False)
    assert again.read_bytes() == tgz
    assert len(server.requests) == 3  # reused: no request at all


def _left(folder) -> list:
    """What a failed download left: nothing but its lock file, empty (it stays; removing it would race a waiter)."""
    assert all(p.stat().st_size == 0 for p in folder.glob("*.lock"))
    return [p for p in folder.iterdir() if p.suffix != ".lock"]


def big_payload() -> bytes:
    return random.Random(7).randbytes(300_000)


def test_resume_after_dropped_connection_uses_range(server, tmp_path):
    data = big_payload()
    server.files = {"/big.bin": data}
    server.drop_after = {"/big.bin": 100_000}
    dest = download(server.url("/big.bin"), tmp_path / "big.bin", sha256=sha256(data), backoff=0, progress=False)
    assert server.requests == [("/big.bin", None), ("/big.bin", "bytes=100000-")]
    assert sha256(dest.read_bytes()) == sha256(data)
    assert not (tmp_path / "big.bin.part").exists()


def test_restart_cleanly_when_server_ignores_range(server, tmp_path):
    data = big_payload()
    server.files = {"/big.bin": data}
    server.drop_after = {"/big.bin": 123_456}
    server.ignore_range = True
    dest = download(server.url("/big.bin"), tmp_path / "big.bin", md5=hashlib.md5(data).hexdigest(), backoff=0,
                    progress=False)
    assert server.requests == [("/big.bin", None), ("/big.bin", "bytes=123456-")]
    assert dest.read_bytes() == data  # the 200 body replaced the partial file instead of being appended


def test_failed_download_keeps_part_and_a_rerun_resumes(server, tmp_path):
    data = big_payload()
    server.files = {"/big.bin": data}
    server.drop_after = {"/big.bin": 50_000}
    with pytest.raises(PipelineError, match=r"failed after 1 attempts.*kept so a rerun resumes"):
        download(server.url("/big.bin"), tmp_path / "big.bin", sha256=sha256(data), retries=0, progress=False)
    assert (tmp_path / "big.bin.part").stat().st_size == 50_000
    assert not (tmp_path / "big.bin").exists()
    download(server.url("/big.bin"), tmp_path / "big.bin", sha256=sha256(data), retries=0, progress=False)
    assert server.requests[-1] == ("/big.bin", "bytes=50000-")
    assert (tmp_path / "big.bin").read_bytes() == data


def test_checksum_mismatch_names_url_and_sums_and_leaves_nothing(server, tmp_path):
    data = b"hello\n"
    server.files = {"/f.txt": data}
    wrong = "0" * 64
    url = server.url("/f.txt")
    with pytest.raises(PipelineError) as err:
        download(url, tmp_path / "f.txt", sha256=wrong, progress=False)
    message = str(err.value)
    assert url in message and wrong in message and sha256(data) in message
    assert _left(tmp_path) == []


def test_http_404_is_an_immediate_clear_error(server, tmp_path):
    url = server.url("/missing.tgz")
    with pytest.raises(PipelineError, match=re.escape(url) + ".*HTTP 404"):
        download(url, tmp_path / "m.tgz", retries=3, backoff=0, progress=False)
    assert len(server.requests) == 1
    assert _left(tmp_path) == []


def test_stale_dest_with_wrong_checksum_is_downloaded_again(server, tmp_path):
    server.files = {"/f.txt": b"fresh\n"}
    (tmp_path / "f.txt").write_bytes(b"stale\n")
    download(server.url("/f.txt"), tmp_path / "f.txt", sha256=sha256(b"fresh\n"), progress=False)
    assert (tmp_path / "f.txt").read_bytes() == b"fresh\n" and len(server.requests) == 1


def test_concurrent_downloads_of_one_file_make_one_request(server, tmp_path):
    # zeng2021's three directions share the WMT14 archives: their fetch jobs run at once
    body = big_payload()
    server.files["/shared.tgz"] = body
    server.delay = 0.5  # the first download still runs when the others ask
    dest = tmp_path / "cache" / "shared.tgz"
    got, errors = [], []

    def fetch():
        try:
            got.append(download(server.url("/shared.tgz"), dest, sha256=sha256(body), progress=False))
        except Exception as err:  # noqa: BLE001 -- reported below
            errors.append(err)

    threads = [threading.Thread(target=fetch) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == [] and got == [dest] * 3 and dest.read_bytes() == body
    assert server.requests == [("/shared.tgz", None)]  # one download; the others waited and reused it
    assert not dest.with_name("shared.tgz.part").exists()


def test_extract_errors_name_archive_and_glob(tmp_path):
    archive = tmp_path / "a.tgz"
    archive.write_bytes(make_tgz({"corpus/train.de": DE}))
    with pytest.raises(PipelineError, match=r"a\.tgz: no member matches 'corpus/train\.fr'.*corpus/train\.de"):
        extract(archive, "corpus/train.fr", tmp_path / "x")
    evil = tmp_path / "evil.tar.gz"
    evil.write_bytes(make_tgz({"../escape.txt": b"x\n"}))
    with pytest.raises(PipelineError, match="escapes the extraction directory"):
        extract(evil, "*", tmp_path / "y")
    assert not (tmp_path / "escape.txt").exists()
    broken = tmp_path / "broken.tgz"
    broken.write_bytes(make_tgz({"corpus/train.de": DE * 500})[:200])
    with pytest.raises(PipelineError, match="broken.tgz: corrupt or truncated tar archive"):
        extract(broken, "*", tmp_path / "z")
