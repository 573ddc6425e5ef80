"""decoding_speed: row structure, token counts equal to the decoded outputs, determinism, input checks.

No timing assertions: speed targets belong to benchmark scripts, not tests."""
import pytest
import torch

from pipeline.data.batching import encode_source, pad
from pipeline.errors import PipelineError
from pipeline.papers.zeng2021.speed import decoding_speed
from pipeline.models import build_model
from pipeline.search import beam_search

torch.set_num_threads(1)

VOCAB = 12
SMALL = dict(d_model=16, ffn_dim=24, heads=2, enc_layers=1, dec_layers=1, dropout=0.1)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return build_model({"encoder": "transformer", "decoder": "transformer", **SMALL}, VOCAB, VOCAB)


@pytest.fixture(scope="module")
def sources():
    g = torch.Generator().manual_seed(5)
    return [torch.randint(4, VOCAB, (n,), generator=g).tolist() for n in (3, 7, 1, 5, 4)]


def decoded_tokens(model, sources, beam):
    """Output tokens of per-sentence beam search (the reference count)."""
    return sum(len(beam_search(model, pad([encode_source(s)]), beam=beam, max_len_b=4)[0]) for s in sources)


def test_rows_structure_and_token_counts(model, sources):
    rows = decoding_speed(model, sources, batch_sizes=[2, 5], beams=[1, 3], repeats=2, max_len_b=4)
    assert [(r["batch_size"], r["beam"]) for r in rows] == [(2, 1), (2, 3), (5, 1), (5, 3)]
    expected = {beam: decoded_tokens(model, sources, beam) for beam in (1, 3)}
    assert all(0 < n <= len(sources) * (1.2 * 8 + 4) for n in expected.values())
    for row in rows:
        assert set(row) == {"batch_size", "beam", "tokens_per_s", "sentences_per_s", "runs", "threads"}
        assert row["threads"] == torch.get_num_threads() == 1
        assert len(row["runs"]) == 2
        for run in row["runs"]:
            assert run["sentences"] == len(sources) and run["tokens"] == expected[row["beam"]]
            assert run["seconds"] > 0
        rates = sorted(r["tokens"] / r["seconds"] for r in row["runs"])
        assert row["tokens_per_s"] == pytest.approx(sum(rates) / 2)  # median of two runs
        assert row["sentences_per_s"] == pytest.approx(row["tokens_per_s"] * len(sources) / expected[row["beam"]])


def test_token_counts_are_deterministic(model, sources):
    first = decoding_speed(model, sources, batch_sizes=[3], beams=[2], repeats=3, max_len_b=4)
    second = decoding_speed(model, sources, batch_sizes=[3], beams=[2], repeats=1, max_len_b=4)
    counts = [r["tokens"] for r in first[0]["runs"] + second[0]["runs"]]
    assert len(set(counts)) == 1 and counts[0] == decoded_tokens(model, sources, 2)
    assert model.training  # beam search restores the caller's mode


@pytest.mark.parametrize("kwargs, message", [
    (dict(batch_sizes=[], beams=[1]), r"batch_sizes = \[\]; expected a non-empty list of positive integers"),
    (dict(batch_sizes=[2], beams=[0]), r"beams = \[0\]; expected"),
    (dict(batch_sizes=[2], beams=[1], repeats=0), r"repeats = 0; expected a positive integer"),
])
def test_bad_settings_are_rejected(model, sources, kwargs, message):
    with pytest.raises(PipelineError, match=message):
        decoding_speed(model, sources, **kwargs)


def test_empty_sources_are_rejected(model):
    with pytest.raises(PipelineError, match="src_ids is empty"):
        decoding_speed(model, [], batch_sizes=[1], beams=[1])


def test_bfloat16_precision_times_the_model_in_bfloat16(model, sources):
    """decoding_speed runs the search at the given precision (the model's training precision)."""
    seen = []
    hook = model.output_proj.register_forward_hook(lambda m, args, out: seen.append(out.dtype))
    try:
        decoding_speed(model, sources, batch_sizes=[3], beams=[2], repeats=1, max_len_b=4, precision="bfloat16")
    finally:
        hook.remove()
    assert seen and set(seen) == {torch.bfloat16}
