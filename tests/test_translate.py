"""Batched translation: input order restored, same output as per-sentence beam search."""
import pytest
import torch

from pipeline.data.batching import encode_source, pad
from pipeline.data.synthetic import synthetic_pairs
from pipeline.data.vocab import Vocab
from pipeline.models.registry import build_model
from pipeline.search import beam_search
from pipeline.train import Recipe, fit, seed_everything
from pipeline.translate import length_sorted_chunks, translate_lines

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def copy_model(tmp_path_factory):
    """A small transformer trained briefly on the copy task (outputs track inputs) and its vocabulary."""
    root = tmp_path_factory.mktemp("translate")
    pairs = synthetic_pairs("copy", 1500, seed=1)
    vocab = Vocab.build([s for s, _ in pairs])
    data = ([vocab.encode(s) for s, _ in pairs], [vocab.encode(t) for _, t in pairs])
    options = dict(d_model=64, ffn_dim=128, heads=4, enc_layers=1, dec_layers=1, dropout=0.0)
    seed_everything(1)
    model = build_model("transformer", options, len(vocab), len(vocab))
    fit(model, data, (data[0][:20], data[1][:20]),
        Recipe(lr=3e-3, warmup=40, max_steps=200, batch_tokens=800, checkpoint_every=200, valid_every=200),
        run_dir=root / "run", out_dir=root / "out", progress=False,
        meta={"arch": "transformer", "options": options, "src_vocab_size": len(vocab), "tgt_vocab_size": len(vocab)})
    return model.eval(), vocab


def _lines():
    """Mixed lengths in no particular order, an empty line and an unknown word."""
    lines = [s for s, _ in synthetic_pairs("copy", 23, seed=9)]
    return lines[:5] + [""] + lines[5:12] + ["w1 unknownword w2"] + lines[12:]


def _one_by_one(model, vocab, lines, **kwargs):
    out = []
    for line in lines:
        src = pad([encode_source(vocab.encode(line))])
        out.append(vocab.decode(beam_search(model, src, **kwargs)[0]))
    return out


def test_batched_equals_per_sentence_beam_search_in_input_order(copy_model):
    model, vocab = copy_model
    lines = _lines()
    reference = _one_by_one(model, vocab, lines, beam=4, length_penalty=0.6, max_len_a=1.2, max_len_b=10)
    for batch_size in (1, 4, 64):
        assert translate_lines(model, vocab, vocab, lines, batch_size=batch_size, progress=False) == reference
    # the model copies, so restored order shows up as outputs equal to their own inputs
    copied = sum(hyp == line for hyp, line in zip(reference, lines) if line and "unknownword" not in line)
    assert copied >= 0.5 * (len(lines) - 2), copied  # a shuffled order would match almost none


def test_search_settings_are_passed_through(copy_model):
    model, vocab = copy_model
    lines = _lines()
    reference = _one_by_one(model, vocab, lines, beam=2, length_penalty=1.0, max_len_a=0.0, max_len_b=2)
    got = translate_lines(model, vocab, vocab, lines, beam=2, length_penalty=1.0, max_len_a=0.0, max_len_b=2,
                          batch_size=5, progress=False)
    assert got == reference
    assert all(len(hyp.split()) <= 2 for hyp in got) and any(len(line.split()) > 2 for line in lines)


def test_model_mode_is_restored_and_empty_input_is_empty(copy_model):
    model, vocab = copy_model
    model.train()
    try:
        assert translate_lines(model, vocab, vocab, [], progress=False) == []
        assert model.training
    finally:
        model.eval()


def test_chunks_group_by_length_and_cover_every_index():
    lengths = [3, 9, 1, 9, 4, 7, 2]
    chunks = length_sorted_chunks(lengths, 3)
    assert chunks == [[1, 3, 5], [4, 0, 6], [2]]
    assert sorted(i for c in chunks for i in c) == list(range(len(lengths)))
