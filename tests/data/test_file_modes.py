"""Written files follow the user's umask (pipeline/fileio.py atomic_path and every writer built on it), so the group
reads the tables and models on a shared file system; mkstemp alone would leave them 0600."""
import os
import stat

import pytest

from pipeline.checkpoint import save_atomic
from pipeline.data.truecase import learn_truecaser
from pipeline.fileio import atomic_path, current_umask, write_json, write_lines
from pipeline.report.figures import grouped_bars, save_figure


@pytest.fixture(params=[(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)], ids=["022", "027", "077"])
def umask(request):
    """(umask, the mode a written file must have) with the process's umask set to it for the test."""
    mask, mode = request.param
    old = os.umask(mask)
    try:
        yield mask, mode
    finally:
        os.umask(old)


def mode_of(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_current_umask_reads_without_changing_it(umask):
    mask, _ = umask
    assert current_umask() == mask
    assert current_umask() == mask  # still set


def test_written_files_follow_the_umask(tmp_path, umask):
    _, mode = umask
    with atomic_path(tmp_path / "raw.bin") as tmp:
        assert mode_of(tmp) == mode  # set on the temporary file, before the rename
        with open(tmp, "wb") as handle:  # as torch.save and savefig write the path: the mode stays
            handle.write(b"\x00\x01")
    write_lines(tmp_path / "table.tsv", ["a\tb"])
    write_json(tmp_path / "scores.json", {"score": 1.0})
    save_atomic({"weights": {}}, tmp_path / "model.pt")
    save_figure(grouped_bars(["en-de"], {"ours": [27.3]}, title="t", xlabel="pair"), tmp_path / "figure.png")
    learn_truecaser(["The house .", "He saw the house ."], tmp_path / "tc" / "model.en")  # sacremoses' own rename
    names = ["raw.bin", "table.tsv", "scores.json", "model.pt", "figure.png", "tc/model.en"]
    assert {name: oct(mode_of(tmp_path / name)) for name in names} == {name: oct(mode) for name in names}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names[:-1] + ["tc"])  # no temporary file left


def test_a_rewritten_file_takes_the_umask_of_its_writer(tmp_path, umask):
    """Replacing a file written under another umask gives the new file the current umask's mode."""
    _, mode = umask
    path = tmp_path / "table.tsv"
    path.write_text("old\n")
    os.chmod(path, 0o600)
    write_lines(path, ["new"])
    assert (oct(mode_of(path)), path.read_text()) == (oct(mode), "new\n")
