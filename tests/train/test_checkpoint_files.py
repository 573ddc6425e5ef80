"""Checkpoint files (pipeline/checkpoint.py): identical content gives identical bytes, a valid zip archive torch
reads as it is; every loader refuses a damaged, truncated, foreign or non-torch file in one line naming it."""
import re
import zipfile

import pytest
import torch

from model_variants import damage, save_model
from pipeline.checkpoint import average_checkpoints, load_file, load_model, recorded_checksum, save_atomic
from pipeline.errors import PipelineError
from train_helpers import toy_fit


def test_identical_content_saves_identical_bytes(tmp_path):
    first = save_model(tmp_path / "a" / "model.pt", seed=3)
    second = save_model(tmp_path / "b" / "other-name.pt", seed=3)
    data = first.read_bytes()
    assert data == second.read_bytes() and len(data) > 16384
    with zipfile.ZipFile(first) as archive:  # a plain zip: torch's records under "archive/", our checksum as comment
        assert {name.split("/")[0] for name in archive.namelist()} == {"archive"}
        assert archive.comment.startswith(b"nmt-repro-sha256:") and len(archive.comment) == 81
        assert archive.testzip() is None
    direct = torch.load(first, map_location="cpu", weights_only=True)  # torch reads it without us
    assert torch.equal(direct["weights"]["output_proj.weight"], load_model(first)[0].output_proj.weight)
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["model.pt"]  # no temp files left


def test_recorded_checksum_names_the_content_and_refuses_a_file_without_one(tmp_path):
    """The checkpoint identity the decoding-speed cells are keyed by: the zip comment's SHA-256, one per content."""
    first, same = save_model(tmp_path / "a.pt", seed=3), save_model(tmp_path / "b.pt", seed=3)
    other = save_model(tmp_path / "c.pt", seed=4)
    with zipfile.ZipFile(first) as archive:
        assert recorded_checksum(first) == archive.comment[len(b"nmt-repro-sha256:"):].decode()
    assert re.fullmatch("[0-9a-f]{64}", recorded_checksum(first))
    assert recorded_checksum(first) == recorded_checksum(same) != recorded_checksum(other)
    _foreign(other)
    with pytest.raises(PipelineError, match=f"{other}: no checksum at its end"):
        recorded_checksum(other)


def test_two_identical_training_runs_write_identical_model_files(toy, tmp_path):
    toy_fit(toy, tmp_path / "one", max_steps=6)
    toy_fit(toy, tmp_path / "two", max_steps=6)
    for name in ("out/model.pt", "run/best.pt"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name


def _foreign(path):
    """A model record as torch.save writes it to a path: another program's file, or ours from before checksums."""
    torch.save(torch.load(path, weights_only=True), path)


V = 600  # vocabulary sizes of the models spoilt: their tensors fill most of the file, as a real model's do
BAD_FILES = {  # how the good file at a path is spoilt -> what the one-line error says
    "damaged": (damage, "damaged checkpoint: the SHA-256 of its contents is"),
    "truncated": (lambda path: path.write_bytes(path.read_bytes()[:path.stat().st_size // 2]), "truncated checkpoint"),
    "comment cut": (lambda path: path.write_bytes(path.read_bytes()[:-10]), "truncated checkpoint"),
    "foreign": (_foreign, "a torch file without the checksum of this pipeline's checkpoints .*retrain"),
    "not torch": (lambda path: path.write_bytes(b"not a torch file\n" * 100),
                  "not a readable checkpoint: no torch file"),
}


@pytest.mark.parametrize("loader", ["load_file", "load_model", "average_checkpoints"])
@pytest.mark.parametrize("kind", BAD_FILES)
def test_bad_checkpoint_files_fail_in_one_line_naming_them(tmp_path, kind, loader):
    spoil, message = BAD_FILES[kind]
    path = save_model(tmp_path / "model.pt", V, V)
    spoil(path)
    load = {"load_file": load_file, "load_model": load_model,
            "average_checkpoints": lambda p: average_checkpoints([save_model(tmp_path / "good.pt", V, V), p])}[loader]
    with pytest.raises(PipelineError, match=f"^{re.escape(str(path))}: {message}") as caught:
        load(path)
    assert "\n" not in str(caught.value) and "expected" in str(caught.value)


def test_a_resume_from_a_damaged_last_checkpoint_fails_in_one_line(toy, tmp_path):
    toy_fit(toy, tmp_path, max_steps=6)
    last = damage(tmp_path / "run" / "last.pt")
    (tmp_path / "run" / "COMPLETE").unlink(missing_ok=True)
    with pytest.raises(PipelineError, match=f"^{re.escape(str(last))}: damaged checkpoint") as caught:
        toy_fit(toy, tmp_path, max_steps=9)
    assert "\n" not in str(caught.value)


def test_checksummed_non_dict_is_refused(tmp_path):
    save_atomic([1, 2], tmp_path / "list.pt")
    with pytest.raises(PipelineError, match="list.pt: expected a checkpoint dict, found list"):
        load_file(tmp_path / "list.pt")


def test_a_flipped_byte_in_the_stored_checksum_shows_both_whole_hashes(tmp_path):
    """Past the 16th hex digit the two hashes' prefixes were the same: the message showed no difference."""
    path = save_model(tmp_path / "model.pt", seed=3)
    found = recorded_checksum(path)
    data = bytearray(path.read_bytes())
    data[-10] = ord("0") if data[-10] != ord("0") else ord("1")   # the checksum's 55th hex digit
    path.write_bytes(bytes(data))
    recorded = recorded_checksum(path)
    assert recorded[:54] == found[:54] and recorded != found
    with pytest.raises(PipelineError) as caught:
        load_file(path)
    assert str(caught.value) == (f"{path}: damaged checkpoint: the SHA-256 of its contents is {found}, its checksum "
                                 f"says {recorded}; expected the bytes it was written with (restore it or retrain)")


def test_a_full_disk_under_the_trainer_is_one_line_naming_the_checkpoint(tmp_path, tmpfs):
    """torch's writer fails with "[enforce fail at inline_container.cc] unexpected pos" over the ENOSPC: the
    trainer's checkpoint write says which file did not fit and what to do; nothing half-written is left."""
    import subprocess

    from train_helpers import train_cli
    from workspace import ROOT, env
    run = tmpfs("run", "256k")   # the run's small files fit, its checkpoint (~1.3 MB) does not
    model = {"encoder": "transformer", "decoder": "transformer", "d_model": 64, "ffn_dim": 256, "heads": 2,
             "enc_layers": 1, "dec_layers": 1, "dropout": 0.0}
    recipe = {"lr": 0.01, "batch_size": 200, "max_steps": 2, "checkpoint_every": 2, "valid_every": 2}
    proc = subprocess.run(train_cli(tmp_path, model, recipe, run_dir=run), cwd=ROOT, env={**env(), "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=300)
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert re.fullmatch(rf"error: {re.escape(str(run))}/[a-z_]+\.pt: No space left on device; free space on its "
                        r"file system \(or write elsewhere\) and run again", lines[0]), lines[0]
    assert not [p for p in run.rglob("*") if p.suffix in (".pt", ".tmp")]   # no checkpoint, no temp file
    assert not (tmp_path / "out" / "model.pt").exists()
