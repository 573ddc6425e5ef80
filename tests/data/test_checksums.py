"""Every file the registry downloads has a published checksum, except the named ones below; git blob ids verify."""
from __future__ import annotations

import re

import pytest
from sacrebleu.dataset import DATASETS

from pipeline.data.download import download, git_blob_id
from pipeline.data.generation import GENERATION_TASKS, ArchiveTask
from pipeline.data.registry import all_corpora
from pipeline.data.remote.entries import ParallelPart, RemoteFile, SacrebleuSet
from pipeline.data.remote.wmt import WMT17PP_CORPUS_EN
from pipeline.data.wheels import WHEELS
from pipeline.errors import PipelineError
from pipeline.papers.hao2019.probing import SENTEVAL_FILES, SENTEVAL_GIT_BLOBS

# Published nowhere we could read (the registry says so: RemoteFile.no_checksum, ArchiveTask.checksum_note); these
# are downloaded unverified, with a warning, and the data card records the sha256 of what was fetched.
UNPUBLISHED = {
    "wmt17pp_corpus_tc_en": "WMT17 preprocessed release (zhang2018): no checksum on statmt.org, TFDS or elsewhere",
    "wmt17pp_corpus_tc_de": "WMT17 preprocessed release (zhang2018): no checksum on statmt.org, TFDS or elsewhere",
    "cnndm": "OpenNMT's CNN/DailyMail archive (zeng2021): none published; TFDS lists the original stories instead",
    "personachat": "Dialogue-PLATO's data.tar.gz (zeng2021): none published by PaddlePaddle or found elsewhere",
}
HEX_LENGTH = {"md5": 32, "sha256": 64, "git_blob": 40}


def _part_files(part: ParallelPart) -> list[RemoteFile]:
    members = [m for _, m in part.sides + part.more_references] + ([part.links] if part.links else [])
    return [m.file for m in members if isinstance(m.file, RemoteFile)]  # ManualFile: user-supplied, not downloaded


def registered_downloads() -> dict[str, tuple[dict, str]]:
    """Every file a registered corpus or SentEval downloads: name -> ({kind: checksum(s)}, the registry's note)."""
    out: dict[str, tuple[dict, str]] = {}
    for spec in all_corpora().values():
        if spec.kind == "embedded":
            out.update({f"wheel {w.filename}": ({"sha256": w.sha256}, "") for w in WHEELS})
        elif spec.kind == "remote":
            for file in (f for p in spec.task.parts() for f in _part_files(p)):
                out[file.key] = ({"md5": file.md5, "sha256": file.sha256}, file.no_checksum)
            for _, item in spec.task.eval_sets():
                if isinstance(item, SacrebleuSet):  # sacrebleu checks its own md5s
                    out[f"sacrebleu {item.test_set}"] = ({"md5": DATASETS[item.test_set].md5}, "")
        elif spec.kind == "generation" and isinstance(GENERATION_TASKS[spec.name], ArchiveTask):
            task = GENERATION_TASKS[spec.name]
            out[task.name] = ({"md5": task.md5, "sha256": task.sha256}, task.checksum_note)
    for name in SENTEVAL_FILES.values():
        out[f"senteval {name}"] = ({"git_blob": SENTEVAL_GIT_BLOBS.get(name)}, "")
    return out


def test_every_registered_download_has_a_published_checksum_or_is_a_named_exception():
    downloads = registered_downloads()
    assert {"news_commentary_v8", "news_commentary_v11", "senteval tree_depth.txt", "sacrebleu wmt14/full",
            "europarl_v7"} <= set(downloads)
    unverified = []
    for name, (sums, note) in downloads.items():
        given = {kind: value for kind, value in sums.items() if value}
        for kind, value in given.items():
            for one in value if isinstance(value, list) else [value]:
                assert re.fullmatch(rf"[0-9a-f]{{{HEX_LENGTH[kind]}}}", one), f"{name}: {kind} {one!r}"
        if not given:
            unverified.append(name)
            assert note.startswith("no published checksum"), f"{name}: no checksum and no note saying why"
    assert sorted(unverified) == sorted(UNPUBLISHED)
    assert WMT17PP_CORPUS_EN.describe()["no_checksum"].startswith("no published checksum")


def test_every_checksum_of_a_remote_file_names_its_public_source():
    files = {f for spec in all_corpora().values() if spec.kind == "remote" for p in spec.task.parts()
             for f in _part_files(p)}
    assert files and all(f.source for f in files if f.verified), [f.key for f in files if f.verified and not f.source]
    assert all(not f.source and f.no_checksum for f in files if not f.verified)


def test_git_blob_checksum_verifies_a_download(server, tmp_path):
    server.files = {"/hello.txt": b"hello\n"}
    hello = "ce013625030ba8dba906f756967f9e9ca394464a"  # `printf 'hello\n' | git hash-object --stdin`
    dest = download(server.url("/hello.txt"), tmp_path / "hello.txt", git_blob=hello, progress=False)
    assert dest.read_bytes() == b"hello\n" and git_blob_id(dest) == hello
    assert download(server.url("/hello.txt"), dest, git_blob=hello.upper(), progress=False) == dest
    assert len(server.requests) == 1  # verified, reused
    with pytest.raises(PipelineError, match=rf"checksum mismatch for {re.escape(server.url('/hello.txt'))}: "
                                            rf"git_blob expected {'0' * 40}, got {hello}"):
        download(server.url("/hello.txt"), tmp_path / "other.txt", git_blob="0" * 40, progress=False)
    assert not (tmp_path / "other.txt").exists() and not (tmp_path / "other.txt.part").exists()


def test_git_blob_id_of_an_empty_and_a_tab_separated_file(tmp_path):
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "probe.txt").write_bytes(b"tr\tA\tone two\n")
    assert git_blob_id(tmp_path / "empty") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"  # git's empty blob
    assert git_blob_id(tmp_path / "probe.txt") == "8cfbbb8479730a70ead37d15daa0077339b31d54"  # git hash-object
