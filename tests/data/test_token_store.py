"""pipeline.data.token_store: the binary token store training memory-maps holds exactly the vocabulary's ids of
every line; a broken store is refused by name."""
import hashlib
import random
import subprocess
import sys

import numpy as np
import pytest

from pipeline.data import token_store
from pipeline.data.token_store import Pairs, TokenArray, binarize, store_files
from pipeline.data.vocab import UNK, Vocab
from pipeline.errors import PipelineError


def _lines(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    words = [f"w{i}@@" if i % 3 else f"w{i}" for i in range(500)] + ["Über", "数据"]
    return [" ".join(rng.choice(words) for _ in range(rng.choice([0, 1, 5, 30, 80]))) for _ in range(n)]


@pytest.fixture
def text(tmp_path):
    lines = _lines(10_000)
    path = tmp_path / "train.src"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    vocab = Vocab.build(lines[:5_000], max_size=300)  # the rest holds words outside it: <unk>
    return path, lines, vocab


def test_the_store_holds_each_lines_ids_across_chunks(text, tmp_path, monkeypatch):
    path, lines, vocab = text
    monkeypatch.setattr(token_store, "ENCODE_LINES", 777)  # many chunks, the last one short
    assert binarize(path, vocab, tmp_path / "bin" / "train.src") == 10_000
    store = TokenArray.open(tmp_path / "bin" / "train.src")
    assert len(store) == 10_000
    assert all(store[i].tolist() == vocab.encode(line) for i, line in enumerate(lines))
    assert UNK in store.ids and store.ids.dtype == np.dtype("<i4")
    assert store.lengths().tolist() == [len(line.split()) for line in lines]
    monkeypatch.setattr(token_store, "BLOCK", 999)  # the lengths read from the offsets file across blocks
    assert store.lengths().tolist() == [len(line.split()) for line in lines] and store.lengths().dtype == np.uint16
    assert isinstance(store.ids, np.memmap)  # mapped, not read in
    # the same digest whether the store is mapped from its files or built in memory
    assert store.digest() == TokenArray.from_lists([vocab.encode(line) for line in lines]).digest()


def test_the_step_writes_the_store_and_an_empty_file_makes_an_empty_store(text, tmp_path):
    path, lines, vocab = text
    vocab.save(tmp_path / "vocab.src")
    (tmp_path / "empty").write_text("")
    for source, prefix, count in ((path, "full", 10_000), (tmp_path / "empty", "none", 0)):
        done = subprocess.run([sys.executable, "-m", "pipeline", "binarize", "--input", str(source), "--vocab",
                               str(tmp_path / "vocab.src"), "--output", str(tmp_path / prefix)],
                              capture_output=True, text=True, check=True)
        assert f'"sentences": {count}' in done.stdout
        assert len(TokenArray.open(tmp_path / prefix)) == count
    assert TokenArray.open(tmp_path / "full")[3].tolist() == vocab.encode(lines[3])


def test_a_failed_write_leaves_no_store(tmp_path):
    def encode(line):
        if line == "boom":
            raise ValueError("encoding failed")
        return [4, 5]

    with pytest.raises(ValueError):
        token_store.write_store(["a b"] * 10 + ["boom"], encode, tmp_path / "s")
    assert not any(path.exists() for path in store_files(tmp_path / "s"))
    assert list(tmp_path.iterdir()) == []


def test_a_broken_store_is_refused_naming_its_file(tmp_path):
    token_store.write_store(["a b c", "d"], lambda line: [4] * len(line.split()), tmp_path / "s")
    ids, offsets = store_files(tmp_path / "s")
    assert offsets.read_bytes() == np.array([0, 3, 4], "<i8").tobytes() and ids.stat().st_size == 16
    with open(ids, "ab") as handle:
        handle.write(b"\0\0")  # half an id
    with pytest.raises(PipelineError, match=rf"{ids}: 18 bytes, not a whole number of 4-byte values"):
        TokenArray.open(tmp_path / "s")
    ids.write_bytes(np.array([4, 4, 4], "<i4").tobytes())  # one id short of the offsets
    with pytest.raises(PipelineError, match="offsets must start at 0 and end at the 3 ids"):
        TokenArray.open(tmp_path / "s")
    offsets.unlink()
    with pytest.raises(PipelineError, match=rf"{offsets}: no such file; expected a token store"):
        TokenArray.open(tmp_path / "s")


def test_pairs_select_a_subset_and_their_digest_tells_data_apart():
    src = TokenArray.from_lists([[4, 5], [6], [7, 8, 9]])
    tgt = TokenArray.from_lists([[10], [11, 12], []])
    pairs = Pairs(src, tgt)
    assert (pairs.src_lengths.tolist(), pairs.tgt_lengths.tolist()) == ([2, 1, 3], [1, 2, 0])
    subset = pairs.select(np.array([0, 2])).select(np.array([1]))
    assert subset.lists() == ([[7, 8, 9]], [[]]) and subset.src_lengths.tolist() == [3]

    def digest(p):
        hasher = hashlib.sha256()
        p.digest(hasher)
        return hasher.hexdigest()

    other = Pairs(src, TokenArray.from_lists([[10], [11, 12], [13]]))
    assert len({digest(pairs), digest(pairs.select(np.array([0, 2]))), digest(other)}) == 3
    assert digest(pairs) == digest(Pairs.of(([[4, 5], [6], [7, 8, 9]], [[10], [11, 12], []])))
    with pytest.raises(PipelineError, match="train: 2 source but 1 target sequences"):
        Pairs.of(([[4], [5]], [[6]]), "train")


def test_an_int32_index_keeps_the_run_keys_digest_and_positions_match_flatnonzero(monkeypatch):
    monkeypatch.setattr(token_store, "BLOCK", 7)  # many blocks, the last one short
    rng = np.random.default_rng(3)
    pairs = Pairs.of(([[1] * int(n) for n in rng.integers(0, 9, 100)], [[2] * int(n) for n in rng.integers(0, 9, 100)]))
    mask = (pairs.src_lengths < 5) & (pairs.tgt_lengths < 6)
    keep = token_store.positions(mask)
    assert keep.dtype == np.int32 and keep.tolist() == np.flatnonzero(mask).tolist()
    subset = pairs.select(keep)
    assert subset.index.dtype == np.int32
    # the digest hashes the index as int64 bytes (what run keys held before the index became int32)
    old = hashlib.sha256()
    old.update(len(subset).to_bytes(8, "little"))
    for part in (pairs.src.digest(), pairs.tgt.digest()):
        old.update(part.encode())
    old.update(np.flatnonzero(mask).astype(np.int64).tobytes())
    new = hashlib.sha256()
    subset.digest(new)
    assert new.hexdigest() == old.hexdigest()


def test_lengths_take_two_bytes_until_one_reaches_65535(monkeypatch):
    monkeypatch.setattr(token_store, "BLOCK", 2)
    short = TokenArray.from_lists([[5] * 3, [], [6] * 65_534])
    assert short.lengths().dtype == np.uint16 and short.lengths().tolist() == [3, 0, 65_534]
    long = TokenArray.from_lists([[5] * 3, [], [6], [7] * 65_535, [8]])  # found in the second block
    assert long.lengths().dtype == np.int32 and long.lengths().tolist() == [3, 0, 1, 65_535, 1]
