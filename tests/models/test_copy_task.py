"""Every model variant the tables use learns the copy task (NLL < 0.5, beam-search BLEU >= 75), and every registered
encoder and decoder kind has such a variant."""
import pytest
import sacrebleu
import torch
import torch.nn.functional as F
from model_variants import MC, R, RNMT, RNN, SHU, T, train_copy

from pipeline.data.batching import encode_source, make_batch, pad
from pipeline.data.synthetic import synthetic_pairs
from pipeline.data.vocab import PAD, Vocab
from pipeline.models import DECODERS, ENCODERS, build_model
from pipeline.beam_search import beam_search

torch.set_num_threads(1)

COPY = dict(d_model=64, ffn_dim=128, heads=4, enc_layers=2, dec_layers=2, dropout=0.0)
SHU_COPY = dict(SHU, cell="gru", embed=128, hidden=128, attention_dim=128, output_bias=True)
COPY_REC = dict(COPY, **R, rec_type="biarn", rec_steps=8, integration="stack", integrate_into="top")
# Every model variant the tables use. A newly registered encoder or decoder kind fails
# test_every_encoder_and_decoder_kind_has_a_copy_task_variant until it gets an entry.
COPY_VARIANTS = {
    "transformer": dict(COPY, **T),
    "transformer-shared": dict(COPY, **T, share_embeddings=True),
    "transformer-relpos": dict(COPY, **T, rel_pos_k=4),
    "transformer-disan": dict(COPY, **T, disan=True),
    "recurrence": dict(COPY_REC),
    "recurrence-birnn": dict(COPY_REC, rec_type="birnn"),
    "recurrence-gated-all": dict(COPY_REC, integration="gated", integrate_into="all"),
    "recurrence-stack-all-tJ": dict(COPY_REC, integrate_into="all", rec_steps=0),
    "multicolumn": dict(COPY, **MC, rnn_layers=2),
    "ran-all": dict(COPY, **T, enc_self_attn="ran", dec_self_attn="ran", ran_max_len=64),
    "hcsa": dict(COPY, **T, enc_self_attn="hcsa", dec_self_attn="hcsa"),
    "synr": dict(COPY, **T, enc_self_attn="synr", dec_self_attn="synr", ran_max_len=64),
    "dl4mt": dict(RNN, embed=64, hidden=64, dropout=0.0),
    "attentive-residual": dict(RNN, embed=64, hidden=64, dropout=0.0, summary="attention"),
    "rnnsearch": dict(RNN, decoder="rnnsearch", embed=64, hidden=64, dropout=0.0),
    "rnmt": dict(RNMT, embed=64, hidden=64, dropout=0.0, rn_widths=[1, 3], rn_channels=[32, 32], rn_hidden=32),
    # shu2016 at 128 units with b_o (eq. 8, 13) and a GRU encoder: at 64 units, or with the paper's LSTM encoder (as
    # dl4mt's), 250 steps leave the stacked decoder above NLL 0.5 (its slow training is the paper's own finding)
    "shu-baseline": dict(SHU_COPY),
    "shu-enlarged": dict(SHU_COPY, dec_hidden=180),
    "shu-stacked": dict(SHU_COPY, layers=2),
    "shu-residual": dict(SHU_COPY, layers=2, residual=True),
}


# no source to copy: tests/papers/werlen2018/test_lstm_lm.py
LANGUAGE_MODEL_KINDS = {"encoder": {"none"}, "decoder": {"lstm"}}


def test_every_encoder_and_decoder_kind_has_a_copy_task_variant():
    assert {spec["encoder"] for spec in COPY_VARIANTS.values()} | LANGUAGE_MODEL_KINDS["encoder"] == set(ENCODERS)
    assert {spec["decoder"] for spec in COPY_VARIANTS.values()} | LANGUAGE_MODEL_KINDS["decoder"] == set(DECODERS)


@pytest.fixture(scope="module")
def copy_data():
    """Copy-task train and test pairs (different seeds) as ids of one shared vocabulary."""
    train, test = synthetic_pairs("copy", 2000, seed=1), synthetic_pairs("copy", 100, seed=3)
    vocab = Vocab.build([s for s, _ in train])
    return [vocab.encode(s) for s, _ in train], [vocab.encode(s) for s, _ in test], vocab

@torch.no_grad()
def nll(model, ids):
    """Mean token NLL of teacher-forced copies."""
    src, tgt_in, tgt_out = make_batch(ids, ids)
    return F.cross_entropy(model(src, tgt_in).flatten(0, 1), tgt_out.flatten(), ignore_index=PAD).item()

@pytest.mark.parametrize("variant", sorted(COPY_VARIANTS))
def test_every_variant_learns_the_copy_task(variant, copy_data):
    train, test, vocab = copy_data
    torch.manual_seed(1)
    model = train_copy(build_model(COPY_VARIANTS[variant], len(vocab), len(vocab)), train)
    assert nll(model, test) < 0.5
    with torch.no_grad():
        hyps = beam_search(model, pad([encode_source(x) for x in test]), beam=4)
    bleu = sacrebleu.corpus_bleu([vocab.decode(h) for h in hyps], [[vocab.decode(x) for x in test]]).score
    # 75: every variant passes 90 on an Intel Xeon (AVX-512); from the same seed rnnsearch reaches 87.6 on an AMD
    # EPYC with AVX2 and 81.1 on one with AVX-512 (Zen 4), the float sums ordered by another vector unit (the tests
    # compute on each processor's native path). A model that has not learnt to copy scores below 30.
    assert bleu >= 75, f"{variant}: copy-task BLEU {bleu:.1f}"
