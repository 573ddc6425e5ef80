"""Data steps in bounded chunks of lines on several processes (pipeline/data/chunks.py): the output is byte for byte
the single-process one on a 10k-line sample, chunks come back in order, and only a few are read ahead."""
import random
import time

import pytest

from pipeline.cli import main
from pipeline.data.chunks import CHUNK_LINES, chunked, map_chunks
from pipeline.data.subword import learn_bpe
from pipeline.data.truecase import learn_truecaser
from pipeline.fileio import iter_lines, read_lines
from sentences import corpus

HANZI = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后"


def chinese(n: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(HANZI) for _ in range(rng.randint(4, 30))) + rng.choice("。，？") for _ in range(n)]


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """10k English and Chinese lines (five chunks each), and the English side tokenised in one process."""
    path = tmp_path_factory.mktemp("sample")
    (path / "text.en").write_text("\n".join(corpus(seed=5, n=10_000)) + "\n", encoding="utf-8")
    (path / "text.zh").write_text("\n".join(chinese(10_000)) + "\n", encoding="utf-8")
    return path


def _step(*argv: str) -> None:
    assert main(list(argv)) == 0, argv


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_tokenising_on_two_processes_writes_the_one_process_bytes(sample, tmp_path, lang):
    assert len(read_lines(sample / f"text.{lang}")) > 4 * CHUNK_LINES
    for workers in ("1", "2"):
        _step("tokenize", "--lang", lang, "--input", str(sample / f"text.{lang}"), "--output",
              str(tmp_path / f"tok.{workers}"), "--workers", workers)
    one, two = (tmp_path / "tok.1").read_bytes(), (tmp_path / "tok.2").read_bytes()
    assert one == two and one.count(b"\n") == 10_000
    assert one != (sample / f"text.{lang}").read_bytes()   # it did tokenise


def test_segmenting_and_truecasing_on_two_processes_write_the_one_process_bytes(sample, tmp_path):
    _step("tokenize", "--lang", "en", "--input", str(sample / "text.en"), "--output", str(tmp_path / "tok"))
    learn_bpe({"en": tmp_path / "tok"}, tmp_path / "codes", 30, joint=False)   # words left split
    learn_truecaser(iter_lines(tmp_path / "tok"), tmp_path / "tc.model")
    for workers in ("1", "2"):
        _step("apply-bpe", "--codes-dir", str(tmp_path / "codes"), "--side", "en", "--input", str(tmp_path / "tok"),
              "--output", str(tmp_path / f"bpe.{workers}"), "--workers", workers)
        _step("truecase", "--model", str(tmp_path / "tc.model"), "--input", str(tmp_path / "tok"), "--output",
              str(tmp_path / f"tc.{workers}"), "--workers", workers)
    assert (tmp_path / "bpe.1").read_bytes() == (tmp_path / "bpe.2").read_bytes()
    assert b"@@ " in (tmp_path / "bpe.1").read_bytes()
    assert (tmp_path / "tc.1").read_bytes() == (tmp_path / "tc.2").read_bytes()
    assert (tmp_path / "tc.1").read_bytes() != (tmp_path / "tok").read_bytes()   # it did truecase


def _slow_first(chunk: list[str]) -> list[str]:
    """Upper-cased, the first chunk last to finish."""
    if chunk[0] == "0":
        time.sleep(0.5)
    return [line.upper() + "x" for line in chunk]


def test_chunks_come_back_in_order_with_a_few_read_ahead():
    pulled = []

    def chunks():
        for i in range(40):
            pulled.append(i)
            yield [str(i), "a"]

    results = map_chunks(_slow_first, chunks(), workers=2)
    first = next(results)
    assert first == ["0x", "Ax"] and len(pulled) <= 4   # 2 x workers chunks in flight, not the whole input
    assert [first, *results] == [[f"{i}x", "Ax"] for i in range(40)]
    assert list(chunked(map(str, range(5)), 2)) == [["0", "1"], ["2", "3"], ["4"]]
