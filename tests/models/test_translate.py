"""Batched translation: input order restored, same output as per-sentence beam search, search settings passed
through; n-best lists (translate_nbest) and their file format (pipeline.fileio write_nbest / read_nbest)."""
import os

import pytest
import torch
import torch.nn.functional as F

from model_variants import damage, save_model, save_vocab
from pipeline.data.batch_plan import token_batches
from pipeline.data.batching import encode_source, make_batch, pad
from pipeline.data.synthetic import synthetic_pairs
from pipeline.data.vocab import PAD, Vocab
from pipeline.errors import PipelineError
from pipeline.fileio import read_lines, read_nbest, write_nbest
from pipeline.beam_search import beam_search, beam_search_nbest
from pipeline.translate import length_sorted_chunks, translate_lines, translate_nbest

torch.set_num_threads(1)


def make_model(vocab_size):
    """The one place that builds a model: a small transformer."""
    from pipeline.models import build_model
    options = dict(d_model=64, ffn_dim=128, heads=4, enc_layers=1, dec_layers=1, dropout=0.0)
    return build_model({"encoder": "transformer", "decoder": "transformer", **options}, vocab_size, vocab_size)


@pytest.fixture(scope="module")
def copy_model():
    """A small transformer trained briefly on the copy task (outputs track inputs) and its vocabulary."""
    pairs = synthetic_pairs("copy", 1500, seed=1)
    vocab = Vocab.build([s for s, _ in pairs])
    src, tgt = [vocab.encode(s) for s, _ in pairs], [vocab.encode(t) for _, t in pairs]
    torch.manual_seed(1)
    model = make_model(len(vocab)).train()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.98))
    step, epoch = 0, 0
    while step < 200:
        for batch in token_batches([len(s) for s in src], [len(t) for t in tgt], 800, seed=1, epoch=epoch):
            step += 1
            for group in opt.param_groups:
                group["lr"] = 3e-3 * min(1.0, step / 40)
            x, y_in, y_out = make_batch([src[i] for i in batch], [tgt[i] for i in batch])
            opt.zero_grad()
            F.cross_entropy(model(x, y_in).flatten(0, 1), y_out.flatten(), ignore_index=PAD).backward()
            opt.step()
            if step == 200:
                break
        epoch += 1
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
    reference = _one_by_one(model, vocab, lines, beam=4, length="penalty", alpha=0.6, max_len_a=1.2, max_len_b=10)
    for batch_size in (1, 4, 64):
        assert translate_lines(model, vocab, vocab, lines, batch_size=batch_size, progress=False) == reference
    # the model copies, so restored order shows up as outputs equal to their own inputs
    copied = sum(hyp == line for hyp, line in zip(reference, lines) if line and "unknownword" not in line)
    assert copied >= 0.5 * (len(lines) - 2), copied  # a shuffled order would match almost none


@pytest.mark.parametrize("length, alpha", [("penalty", 1.0), ("normalize", 0.6), ("none", 0.6)])
def test_search_settings_are_passed_through(copy_model, length, alpha):
    model, vocab = copy_model
    lines = _lines()
    settings = dict(beam=2, length=length, alpha=alpha, max_len_a=0.0, max_len_b=2)
    reference = _one_by_one(model, vocab, lines, **settings)
    got = translate_lines(model, vocab, vocab, lines, batch_size=5, progress=False, **settings)
    assert got == reference
    assert all(len(hyp.split()) <= 2 for hyp in got) and any(len(line.split()) > 2 for line in lines)


def test_model_mode_is_restored_and_empty_input_is_empty(copy_model):
    model, vocab = copy_model
    model.train()
    try:
        assert translate_lines(model, vocab, vocab, [], progress=False) == []
        assert translate_lines(model, vocab, vocab, ["w1 w2"], progress=False)
        assert model.training
    finally:
        model.eval()
    with pytest.raises(PipelineError, match="batch_size"):
        translate_lines(model, vocab, vocab, ["w1"], batch_size=0, progress=False)


def test_chunks_group_by_length_and_cover_every_index():
    lengths = [3, 9, 1, 9, 4, 7, 2]
    chunks = length_sorted_chunks(lengths, 3)
    assert chunks == [[1, 3, 5], [4, 0, 6], [2]]
    assert sorted(i for c in chunks for i in c) == list(range(len(lengths)))


# ------------------------------------------------------------------------------------------------- n-best lists
def test_nbest_lists_are_ranked_and_led_by_the_plain_output(copy_model):
    model, vocab = copy_model
    lines = _lines()
    settings = dict(beam=5, length="normalize", alpha=0.6, max_len_a=1.2, max_len_b=10)
    nbest = translate_nbest(model, vocab, vocab, lines, nbest=4, batch_size=4, progress=False, **settings)
    assert [hyps[0][1] for hyps in nbest] == translate_lines(model, vocab, vocab, lines, progress=False, **settings)
    for line, hyps in zip(lines, nbest):
        scores = [s for s, _ in hyps]
        assert len(hyps) == 4 and scores == sorted(scores, reverse=True) and len(set(scores)) > 1
        alone = beam_search_nbest(model, pad([encode_source(vocab.encode(line))]), nbest=4, **settings)[0]
        assert [t for _, t in hyps] == [vocab.decode(h) for _, h in alone]  # batched = alone
        assert scores == pytest.approx([s for s, _ in alone], abs=1e-5)  # up to padding's float rounding


def test_nbest_file_round_trip_and_one_best(copy_model, tmp_path):
    model, vocab = copy_model
    lines = _lines()
    nbest = translate_nbest(model, vocab, vocab, lines, nbest=3, beam=3, progress=False)
    path = tmp_path / "test.nbest"
    write_nbest(path, nbest)
    assert read_nbest(path) == nbest  # scores exactly (repr)
    assert read_nbest(path, sentences=len(lines)) == nbest
    text = read_lines(path)
    assert len(text) == sum(len(h) for h in nbest) == 3 * len(lines)
    i, hyp, score = text[0].split(" ||| ")
    assert (int(i), hyp, float(score)) == (0, nbest[0][0][1], nbest[0][0][0])
    assert [hyps[0][1] for hyps in read_nbest(path)] == translate_lines(model, vocab, vocab, lines, beam=3,
                                                                        progress=False)


def test_nbest_file_keeps_any_one_line_text_and_gaps(tmp_path):
    lists = [[(-0.5, "a ||| b"), (-1.25, "")], [], [(-2.0, "x |||"), (float("-inf"), " ||| lead")],
             [(0.1 + 0.2, "ünï ||| cödé |||")]]
    path = tmp_path / "odd.nbest"
    write_nbest(path, lists)
    assert read_nbest(path) == lists
    assert read_nbest(path, sentences=6) == lists + [[], []]
    assert read_lines(path)[0] == "0 ||| a ||| b ||| -0.5"


def test_nbest_writing_is_atomic_and_reading_validates(tmp_path):
    path = tmp_path / "out.nbest"
    write_nbest(path, [[(-1.0, "kept")]])
    with pytest.raises(PipelineError, match="sentence 1 holds a line break"):
        write_nbest(path, [[(-1.0, "new")], [(-2.0, "two\nlines")]])
    assert read_nbest(path) == [[(-1.0, "kept")]] and os.listdir(tmp_path) == ["out.nbest"]
    bad = {"0 ||| no score": ":1: expected '<sentence index> ||| <hypothesis> ||| <score>'",
           "0 ||| a ||| 1.0\nx ||| b ||| 2.0": ":2: expected",
           "0 ||| a ||| high": ":1: expected",
           "-1 ||| a ||| 1.0": ":1: expected",
           "1 ||| a ||| 1.0\n0 ||| b ||| 2.0": ":2: sentence 0 after sentence 1",
           "3 ||| a ||| 1.0": ":1: sentence index 3; expected fewer than 2"}
    for content, message in bad.items():
        path.write_text(content + "\n", encoding="utf-8")
        with pytest.raises(PipelineError, match=f"{path.name}{message}".replace("|", r"\|")):
            read_nbest(path, sentences=2)


def test_bfloat16_decoding_runs_in_bfloat16_and_mostly_agrees(copy_model, monkeypatch):
    """precision="bfloat16" (a model trained at it) decodes under autocast: the model's linear layers see bfloat16;
    on the copy task the outputs stay those of float32 for most lines."""
    model, vocab = copy_model
    lines = _lines()
    seen = []
    hook = model.output_proj.register_forward_hook(lambda m, args, out: seen.append(out.dtype))
    try:
        fast = translate_lines(model, vocab, vocab, lines, beam=3, progress=False, precision="bfloat16")
        assert set(seen) == {torch.bfloat16}
        seen.clear()
        exact = translate_lines(model, vocab, vocab, lines, beam=3, progress=False)
        assert set(seen) == {torch.float32}
    finally:
        hook.remove()
    assert sum(a == b for a, b in zip(fast, exact)) >= 0.8 * len(lines)


def test_translate_decodes_at_the_models_training_precision(copy_model, tmp_path):
    from pipeline.checkpoint import model_record, save_atomic
    from pipeline.steps.decoding import load_systems as _load_systems
    model, vocab = copy_model
    spec = {"encoder": "transformer", "decoder": "transformer", "d_model": 64, "ffn_dim": 128, "heads": 4,
            "enc_layers": 1, "dec_layers": 1, "dropout": 0.0}
    paths = []
    for name, precision in (("a", "bfloat16"), ("b", "bfloat16"), ("c", "float32")):
        meta = {"model": spec, "src_vocab_size": len(vocab), "tgt_vocab_size": len(vocab), "precision": precision}
        save_atomic(model_record(model, meta, 1), tmp_path / f"{name}.pt")
        paths.append(str(tmp_path / f"{name}.pt"))
    assert _load_systems(paths[:1])[1] == "bfloat16"
    assert _load_systems(paths[:2])[1] == "bfloat16"  # an ensemble of bfloat16 members
    assert _load_systems(paths)[1] == "float32"  # members that differ: the exact one



V = 600  # vocabulary sizes of the translate command's models: their tensors fill most of the file


def _translate_command(tmp_path, capsys, models, src_size=V, tgt_size=V, spec='{"beam": 2}'):
    """python -m pipeline translate of a two-line file by `models`: (exit code, stderr)."""
    from pipeline.cli import main
    (tmp_path / "in.txt").write_text("w4 w5 w6\nw7 w8\n")
    argv = ["translate", "--spec", spec, "--input", str(tmp_path / "in.txt"), "--lang", "en",
            "--src-vocab", str(save_vocab(tmp_path / f"vocab{src_size}.src", src_size)),
            "--tgt-vocab", str(save_vocab(tmp_path / f"vocab{tgt_size}.tgt", tgt_size)),
            "--output", str(tmp_path / "out.txt"), "--no-progress"]
    code = main(argv + [arg for model in models for arg in ("--model", str(model))])
    return code, capsys.readouterr().err


BAD_INPUTS = {  # case -> (write the models, the vocabulary sizes) -> the error line's start
    "damaged model": lambda d: ([damage(save_model(d / "damaged.pt", V, V))], {},
                                f"{d / 'damaged.pt'}: damaged checkpoint"),
    "text as model": lambda d: ([d / "text.pt"], {}, f"{d / 'text.pt'}: not a readable checkpoint: no torch file"),
    "smaller tgt vocabulary": lambda d: ([save_model(d / "m.pt", V, V)], {"tgt_size": V - 100},
                                         f"{d / f'vocab{V - 100}.tgt'}: tgt vocabulary of {V - 100} tokens, but "
                                         f"{d / 'm.pt'} was trained with {V}"),
    "a wider ensemble member": lambda d: ([save_model(d / "m.pt", V, V), save_model(d / "wide.pt", V + 5, V)], {},
                                          f"{d / f'vocab{V}.src'}: src vocabulary of {V} tokens, but "
                                          f"{d / 'wide.pt'} was trained with {V + 5}"),
}


def test_the_translate_command_translates_a_good_model(tmp_path, capsys):
    assert _translate_command(tmp_path, capsys, [save_model(tmp_path / "m.pt", V, V)])[0] == 0
    assert len(read_lines(tmp_path / "out.txt")) == 2


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_the_translate_command_reports_a_bad_model_or_vocabulary_in_one_line(tmp_path, capsys, case):
    """A damaged or non-torch model file, or a vocabulary of another size than the model's (any member of an
    ensemble), is one line `error: ...` and exit 2."""
    (tmp_path / "text.pt").write_text("model weights\n")
    models, sizes, start = BAD_INPUTS[case](tmp_path)
    code, err = _translate_command(tmp_path, capsys, models, **sizes)
    assert code == 2 and err.startswith(f"error: {start}") and err.count("\n") == 1, err


def test_a_spec_of_invalid_json_is_one_line_with_its_position(tmp_path, capsys):
    code, err = _translate_command(tmp_path, capsys, [save_model(tmp_path / "m.pt", V, V)],
                                   spec='{"beam": 2,\n "length": penalty}')
    assert (code, err) == (2, "error: --spec: not valid JSON at line 2, column 12: Expecting value "
                              "(near 'eam\": 2,\\n \"length\": penalty}'); expected a JSON value\n")  # 20 characters either side
    assert not (tmp_path / "out.txt").exists()
