"""Invariants of every model variant (Transformer, hao2019 recurrence models, RelPos, DiSAN, multi-column, zeng2021's
patterns): incremental = full pass, causality, padding, the copy task learnt; the encoder/decoder composition and its
specs; hao2019's equations by hand (ARN eq. 12-13, recurrence layers eq. 7-8, integration eq. 14-19); warm start,
option validation and exact parameter counts."""
import dataclasses
import math
import subprocess
import sys

import pytest
import sacrebleu
import torch
import torch.nn.functional as F
from torch import nn

from pipeline.data.batching import encode_source, make_batch, pad, token_batches
from pipeline.data.synthetic import synthetic_pairs
from pipeline.data.vocab import PAD, Vocab
from pipeline.errors import PipelineError
from pipeline.models import DECODERS, ENCODERS, build_model, count_parameters, init_from, validate_model
from pipeline.models.layers import MultiHeadAttention
from pipeline.models.recurrence import ARN, GatedDecoderLayer, StackDecoderLayer
from pipeline.models.transformer import DecoderLayer
from pipeline.search import beam_search

torch.set_num_threads(1)

T = {"encoder": "transformer", "decoder": "transformer"}
R = {"encoder": "recurrence", "decoder": "recurrence"}
MC = {"encoder": "multicolumn", "decoder": "transformer"}
RNN = {"encoder": "birnn", "decoder": "cgru"}
RNMT = {"encoder": "rnmt", "decoder": "cgru", "readout": "maxout"}
SHU = {"encoder": "birnn", "decoder": "lstm_attention", "cell": "lstm"}
SMALL = dict(d_model=16, ffn_dim=24, heads=2, enc_layers=2, dec_layers=2, dropout=0.1, attention_dropout=0.1)
SMALL_RNN = dict(embed=12, hidden=10, dropout=0.1)
VARIANTS = {
    "transformer": dict(T),  # three untied tables (the default)
    "transformer-shared": {**T, "share_embeddings": True},
    "transformer-tied": {**T, "tie_output": True},
    "biarn-stack-top": dict(R),
    "biarn-gated-top": {**R, "integration": "gated"},
    "biarn2-stack-all": {**R, "rec_layers": 2, "integrate_into": "all", "rec_steps": 3},
    "biarnJ2-gated-all": {**R, "rec_steps": 0, "rec_layers": 2, "integration": "gated", "integrate_into": "all"},
    "birnn-stack-top": {**R, "rec_type": "birnn"},
    "birnn2-gated-all": {**R, "rec_type": "birnn", "rec_layers": 2, "integration": "gated", "integrate_into": "all"},
    # hao2019 Table 4's related approaches (tests/test_related_models.py checks what defines them)
    "relpos": {**T, "rel_pos_k": 4},
    "disan": {**T, "disan": True},
    "relpos-disan": {**T, "rel_pos_k": 4, "disan": True},
    "multicolumn": {**MC, "rnn_layers": 2},
    "biarn-relpos": {**R, "rel_pos_k": 4, "rec_steps": 3},
    # zeng2021 (tests/test_ran.py checks what defines them)
    "ran-e": {**T, "enc_self_attn": "ran", "ran_max_len": 16, "ran_attention_dropout": 0.1},
    "ran-d": {**T, "dec_self_attn": "ran", "ran_max_len": 16},
    "ran-all": {**T, "enc_self_attn": "ran", "dec_self_attn": "ran", "ran_max_len": 16},
    "hcsa": {**T, "enc_self_attn": "hcsa", "dec_self_attn": "hcsa"},
    "synr": {**T, "enc_self_attn": "synr", "dec_self_attn": "synr", "ran_max_len": 16},
    # the RNN encoder-decoders: dl4mt and werlen2018's decoders (tests/test_werlen2018_models.py: their equations)
    "dl4mt": dict(RNN),
    "dl4mt-lstm-encoder": {**RNN, "cell": "lstm"},
    "mean-residual": {**RNN, "summary": "mean"},
    "attentive-residual": {**RNN, "summary": "attention"},
    "attentive-residual-scope": {**RNN, "summary": "attention", "summary_score": "content_scope"},
    "memory-rnn": {**RNN, "state_attention": "memory"},
    "self-attentive-rnn": {**RNN, "state_attention": "self", "attention_dim": 7},
    # zhang2018's RNNsearch, RNNsearch* (cgru, maxout readout) and RNMT (tests/test_zhang2018_models.py: equations)
    "rnnsearch": {**RNN, "decoder": "rnnsearch"},
    "rnnsearch-star": {**RNN, "readout": "maxout"},
    "rnmt": {**RNMT, "hidden": 12, "rn_widths": [1, 3], "rn_channels": [4, 6], "rn_hidden": 8},
    "rnmt-rnnsearch-tanh": {**RNMT, "decoder": "rnnsearch", "readout": "tanh", "hidden": 12, "rn_widths": [3],
                            "rn_channels": [5], "rn_hidden": 6, "rn_gp_layers": 1, "rn_mlp_layers": 1},
    # shu2016's four decoders (tests/test_shu2016_models.py: eq. 7-8, 11-13 by hand); an LSTM encoder as the paper's
    "shu-baseline": {**SHU, "attention_dim": 7},
    "shu-enlarged": {**SHU, "attention_dim": 7, "dec_hidden": 14},
    "shu-stacked": {**SHU, "attention_dim": 7, "layers": 2},
    "shu-residual": {**SHU, "attention_dim": 7, "layers": 2, "residual": True, "output_bias": True},
}
V_SRC, V_TGT = 11, 13
SRC_LENS, TGT_LENS = [5, 3, 7], [4, 6, 2]


def spec_of(name, **override):
    """The flat spec of a small variant."""
    rnn = VARIANTS[name]["encoder"] in ("birnn", "rnmt")
    return {**(SMALL_RNN if rnn else SMALL), **VARIANTS[name], **override}


def make(name, seed=0, **override):
    """A seeded small model of a variant, in eval mode."""
    torch.manual_seed(seed)
    v_src = V_TGT if VARIANTS[name].get("share_embeddings") else V_SRC
    return build_model(spec_of(name, **override), v_src, V_TGT).eval()


def batch(v_src=V_TGT, seed=1):
    """Right-padded src [3,7] (EOS last) and tgt_in [3,6] (BOS first) of different lengths."""
    g = torch.Generator().manual_seed(seed)
    src = torch.zeros(len(SRC_LENS), max(SRC_LENS), dtype=torch.long)
    tgt = torch.zeros(len(TGT_LENS), max(TGT_LENS), dtype=torch.long)
    for i, (s, t) in enumerate(zip(SRC_LENS, TGT_LENS)):
        src[i, :s - 1] = torch.randint(4, min(v_src, V_SRC), (s - 1,), generator=g)
        src[i, s - 1] = 2
        tgt[i, 0] = 1
        tgt[i, 1:t] = torch.randint(4, V_TGT, (t - 1,), generator=g)
    return src, tgt


# ---- the spine's invariants ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", VARIANTS)
def test_incremental_decoding_equals_full_forward(name):
    model = make(name)
    src, tgt = batch()
    with torch.no_grad():
        full = model(src, tgt)
        memory, state = model.encode(src), None
        steps = []
        for t in range(1, tgt.size(1) + 1):
            logits, state = model.decode_step(tgt[:, :t], memory, state)
            steps.append(logits)
    inc = torch.stack(steps, dim=1)
    assert inc.shape == full.shape == (3, tgt.size(1), V_TGT)
    assert (inc - full).abs().max().item() < 1e-5
    assert (full[:, 1:] - full[:, :1]).abs().max().item() > 1e-3  # positions really differ
    # what is fixed for the search (projected encoder / recurrence keys and values) is cached in memory, which
    # beam search reorders only when sentences leave; the state, reordered at every step, holds the rest
    assert not any(key.endswith((".enc.k", ".enc.v", ".rec.k", ".rec.v", ".keys")) for key in state)
    assert set(memory) - set(model.encode(src))  # the cached projections


@pytest.mark.parametrize("name", VARIANTS)
def test_causality(name):
    model = make(name)
    src, tgt = batch()
    t = 2
    changed = tgt.clone()
    changed[:, t + 1:] = (changed[:, t + 1:] + 1 - 4) % (V_TGT - 4) + 4
    with torch.no_grad():
        before, after = model(src, tgt), model(src, changed)
    assert (before[:, :t + 1] - after[:, :t + 1]).abs().max().item() < 1e-6
    assert (before[:, t + 1:] - after[:, t + 1:]).abs().max().item() > 1e-3


@pytest.mark.parametrize("name", VARIANTS)
def test_padding_invariance(name):
    model = make(name)
    src, tgt = batch()
    with torch.no_grad():
        logits, memory = model(src, tgt), model.encode(src)
        for i, (s, t) in enumerate(zip(SRC_LENS, TGT_LENS)):
            alone = model(src[i:i + 1, :s], tgt[i:i + 1, :t])[0]
            assert (alone - logits[i, :t]).abs().max().item() < 1e-5
            own = model.encode(src[i:i + 1, :s])
            assert (own["enc"][0] - memory["enc"][i, :s]).abs().max().item() < 1e-5
            if "rec" in own:
                real = ~own["rec_pad"][0]
                n = int(real.sum())
                assert real[:n].all() and n == (~memory["rec_pad"][i]).sum()
                assert (own["rec"][0, :n] - memory["rec"][i, :n]).abs().max().item() < 1e-5


@pytest.mark.parametrize("name", VARIANTS)
def test_every_parameter_gets_a_gradient(name):
    """No unused parameters (DDP would refuse them)."""
    model = make(name).train()
    src, tgt = batch()
    logits = model(src, tgt)
    torch.nn.functional.cross_entropy(logits.view(-1, V_TGT), tgt.roll(-1, 1).view(-1)).backward()
    dead = [n for n, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert dead == []


# ---- the copy task (moved from tests/test_train.py) -------------------------------------------------------------

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


LANGUAGE_MODEL_KINDS = {"encoder": {"none"}, "decoder": {"lstm"}}  # no source to copy: tests/test_lstm_lm.py


def test_every_encoder_and_decoder_kind_has_a_copy_task_variant():
    assert {spec["encoder"] for spec in COPY_VARIANTS.values()} | LANGUAGE_MODEL_KINDS["encoder"] == set(ENCODERS)
    assert {spec["decoder"] for spec in COPY_VARIANTS.values()} | LANGUAGE_MODEL_KINDS["decoder"] == set(DECODERS)


@pytest.fixture(scope="module")
def copy_data():
    """Copy-task train and test pairs (different seeds) as ids of one shared vocabulary."""
    train, test = synthetic_pairs("copy", 2000, seed=1), synthetic_pairs("copy", 100, seed=3)
    vocab = Vocab.build([s for s, _ in train])
    return [vocab.encode(s) for s, _ in train], [vocab.encode(s) for s, _ in test], vocab


def train_copy(model, ids, steps=250, lr=3e-3, warmup=50, batch_tokens=1000, label_smoothing=0.1):
    """Adam with linear warm-up then inverse square root, label-smoothed cross entropy (the trainer's defaults); a
    loop of its own so that the test checks the model, not the trainer (tests/test_train.py)."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min((s + 1) / warmup, (warmup / (s + 1)) ** 0.5))
    lengths = [len(x) for x in ids]
    step, epoch = 0, 0
    model.train()
    while step < steps:
        for chunk in token_batches(lengths, lengths, batch_tokens, seed=1, epoch=epoch):
            src, tgt_in, tgt_out = make_batch([ids[i] for i in chunk], [ids[i] for i in chunk])
            loss = F.cross_entropy(model(src, tgt_in).flatten(0, 1), tgt_out.flatten(), ignore_index=PAD,
                                   label_smoothing=label_smoothing)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            step += 1
            if step == steps:
                break
        epoch += 1
    return model.eval()


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
    assert bleu >= 90, f"{variant}: copy-task BLEU {bleu:.1f}"


# ---- the composition ----------------------------------------------------------------------------------------------

def test_model_is_embeddings_encoder_decoder_and_output_layer():
    model = make("biarn-stack-top")
    assert type(model.encoder).kind == "recurrence" and type(model.decoder).kind == "recurrence"
    assert model.encoder.outputs == ("enc", "rec")
    src, tgt = batch()
    with torch.no_grad():
        memory = model.encoder(model.src_embed(src), src.eq(PAD))
        features = model.decoder(model.tgt_embed(tgt), memory)
        assert features.shape == (3, tgt.size(1), 16)
        torch.testing.assert_close(model(src, tgt), model.output_proj(features), rtol=0, atol=0)
    assert model.spec.encoder == "recurrence" and model.spec.encoder_options.rec_steps == 8


def test_spec_options_go_to_every_part_that_declares_them():
    spec = validate_model({**R, "d_model": 32, "dropout": 0, "rec_steps": 4, "dec_layers": 3, "tie_output": True})
    enc, dec, model = spec.encoder_options, spec.decoder_options, spec.model_options
    assert enc.d_model == dec.d_model == 32 and enc.dropout == dec.dropout == 0.0
    assert isinstance(enc.dropout, float) and enc.rec_steps == 4 and dec.dec_layers == 3 and dec.integration == "stack"
    assert not hasattr(dec, "rec_steps") and not hasattr(enc, "integration") and model.tie_output
    assert spec.options == {"model": model, "encoder": enc, "decoder": dec}
    assert spec.to_dict() == {**R, "d_model": 32, "dropout": 0.0, "rec_steps": 4, "dec_layers": 3, "tie_output": True}
    assert validate_model(spec.to_dict()) == spec
    assert build_model(spec, V_SRC, V_TGT).spec == spec


def test_validation_does_not_import_torch():
    code = ("import sys; from pipeline.models.options import validate_model; "
            "validate_model({'encoder': 'recurrence', 'decoder': 'recurrence', 'rec_steps': 2}); "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.fixture
def bag_of_words():
    """A new encoder kind, registered as a new paper's files would do it (options class + module), then removed."""
    from pipeline.models.options import ENCODER_OPTIONS, EncoderOptions, register_encoder_options
    from pipeline.models.seq2seq import Encoder, register_encoder

    @register_encoder_options("test-bow")
    @dataclasses.dataclass
    class BowOptions(EncoderOptions):
        d_model: int = 512
        bow_scale: float = 1.0

        @property
        def embed_dim(self):
            return self.d_model

        @property
        def memory_dims(self):
            return {"enc": self.d_model}

    @register_encoder("test-bow")
    class BowEncoder(Encoder):
        def __init__(self, options):
            super().__init__(options)
            self.proj = nn.Linear(options.d_model, options.d_model)

        def forward(self, x, pad):
            return {"enc": self.proj(x) * self.options.bow_scale, "enc_pad": pad}

    yield BowEncoder
    ENCODER_OPTIONS.pop("test-bow")
    ENCODERS.pop("test-bow")


def test_a_new_encoder_kind_pairs_with_an_existing_decoder(bag_of_words):
    spec = {"encoder": "test-bow", "decoder": "transformer", "d_model": 16, "ffn_dim": 24, "heads": 2,
            "dec_layers": 2, "bow_scale": 2.0}
    torch.manual_seed(0)
    model = build_model(spec, V_SRC, V_TGT).eval()
    assert isinstance(model.encoder, bag_of_words) and model.encoder.options.bow_scale == 2.0
    src, tgt = batch()
    with torch.no_grad():
        memory, state, steps = model.encode(src), None, []
        for t in range(1, tgt.size(1) + 1):
            logits, state = model.decode_step(tgt[:, :t], memory, state)
            steps.append(logits)
        torch.testing.assert_close(torch.stack(steps, 1), model(src, tgt), rtol=1e-5, atol=1e-5)
    with pytest.raises(PipelineError, match="'enc_layers' for encoder 'test-bow' / decoder 'transformer'"):
        build_model({**spec, "enc_layers": 2}, V_SRC, V_TGT)  # declared by no part of this pairing
    with pytest.raises(PipelineError, match="reads memory entry 'rec', which encoder 'test-bow' does not write"):
        build_model({**spec, "decoder": "recurrence"}, V_SRC, V_TGT)


# ---- hao2019: the recurrence encoder (sec. 3.1) -------------------------------------------------------------------

def test_arn_two_steps_by_hand_follow_eq_12_13():
    """h_0 = tanh(W mean(H) + b); c_t = ATT(h_{t-1}, H) multi-head over the real words; h_t = GRU(c_t, h_{t-1})."""
    torch.manual_seed(0)
    arn = ARN(d_model=8, heads=2, attention_dropout=0.0).double().eval()
    h_in = torch.randn(2, 5, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    pad_mask = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    with torch.no_grad():
        out = arn(h_in, pad_mask, steps=2)
        att, cell = arn.attn, arn.cell
        expected = torch.zeros(2, 2, 8, dtype=torch.float64)
        for b, length in enumerate((5, 3)):
            words = h_in[b, :length]  # padding never enters
            h = torch.tanh(arn.init_proj.weight @ words.mean(0) + arn.init_proj.bias)  # h_0 (our choice)
            keys = words @ att.k_proj.weight.T + att.k_proj.bias
            values = words @ att.v_proj.weight.T + att.v_proj.bias
            for t in range(2):
                query = att.q_proj.weight @ h + att.q_proj.bias  # eq. 13: queried by h_{t-1}
                heads = []
                for k in range(2):
                    part = slice(4 * k, 4 * k + 4)
                    alpha = torch.softmax(keys[:, part] @ query[part] / math.sqrt(4), dim=0)
                    heads.append(alpha @ values[:, part])
                c = att.out_proj.weight @ torch.cat(heads) + att.out_proj.bias
                gi = cell.weight_ih @ c + cell.bias_ih  # eq. 12: f = GRU cell, input c_t (our choice)
                gh = cell.weight_hh @ h + cell.bias_hh
                r = torch.sigmoid(gi[:8] + gh[:8])
                z = torch.sigmoid(gi[8:16] + gh[8:16])
                n = torch.tanh(gi[16:] + r * gh[16:])
                h = (1 - z) * n + z * h
                expected[b, t] = h
    assert out.shape == (2, 2, 8)
    # float64 throughout, except the attention softmax, which MultiHeadAttention computes in float32
    torch.testing.assert_close(out, expected, rtol=1e-6, atol=1e-8)
    assert (out[:, 1] - out[:, 0]).abs().min().item() > 1e-4  # two different steps, every unit


def test_recurrence_encoder_reads_word_embeddings_without_positions():
    """Sec. 3.1 footnote 1 and Figure 2: positions go into the self-attention encoder only. Without them BiARN
    (attention over the words, h_0 their mean) cannot tell word order: a permuted source gives the same states."""
    model = make("biarn2-stack-all")
    src, _ = batch()
    pad_mask = src.eq(PAD)
    with torch.no_grad():
        words = model.src_embed(src) * math.sqrt(16)
        memory = model.encode(src)
        torch.testing.assert_close(memory["rec"], model.encoder.rec(words, pad_mask)[0], rtol=0, atol=0)
        with_positions = words + model.encoder.input.positions(src.size(1))
        torch.testing.assert_close(memory["enc"], model.encoder.stack(with_positions, pad_mask), rtol=0, atol=0)
        perm = torch.tensor([3, 1, 0, 2, 4, 5, 6])  # sentence 2 has 7 tokens: its first four words permuted
        permuted = model.encode(src[2:, perm])
        torch.testing.assert_close(permuted["rec"], memory["rec"][2:], rtol=1e-5, atol=1e-6)
        assert (permuted["enc"] - memory["enc"][2:, perm]).abs().max().item() > 1e-3  # the SAN sees order


def test_recurrence_state_counts():
    """ARN yields T states (or J when rec_steps = 0, padding masked); BiRNN yields J."""
    src, _ = batch()
    with torch.no_grad():
        fixed = make("biarn2-stack-all").encode(src)
        per_len = make("biarnJ2-gated-all").encode(src)
        rnn = make("birnn-stack-top").encode(src)
    assert fixed["rec"].shape == (3, 3, 16) and not fixed["rec_pad"].any()
    assert per_len["rec_pad"].equal(src.eq(0)) and rnn["rec_pad"].equal(src.eq(0))
    assert rnn["rec"].shape == (3, 7, 16)


@pytest.mark.parametrize("name", ["birnn2-gated-all", "biarnJ2-gated-all"])
def test_recurrence_layers_follow_eq_7_8_without_bottom_residual(name):
    model = make(name)
    src, _ = batch()
    with torch.no_grad():
        x, pad_mask = model.encoder.input(model.src_embed(src), positions=False), src.eq(0)
        h = x
        for i, layer in enumerate(model.encoder.rec.layers):
            r, _ = layer.rec(h, pad_mask)
            c = layer.rec_norm(r + h if i > 0 else r)  # eq. 7, no residual in the bottom layer
            expected = layer.ffn_norm(c + layer.ffn(c))  # eq. 8
            out, _ = layer(h, pad_mask)
            assert (out - expected).abs().max().item() < 1e-6
            h = out
        assert (model.encode(src)["rec"] - h).abs().max().item() < 1e-6


# ---- hao2019: integration into the decoder (sec. 3.2-3.3) ---------------------------------------------------------

def _sublayers(layer, x, memory):
    """C and D of eq. 4-5, computed from the layer's modules."""
    c = layer.self_norm(x + layer.self_attn(x, x, causal=True))
    d = layer.cross_norm(c + layer.cross_attn(c, memory["enc"], memory["enc_pad"]))
    return c, d


def test_stack_top_follows_eq_18_19_with_query_d():
    model = make("biarn-stack-top")
    src, _ = batch()
    top = model.decoder.layers[-1]
    assert isinstance(top, StackDecoderLayer)
    assert type(model.decoder.layers[0]) is DecoderLayer  # top only (short-cut)
    x = torch.randn(3, 4, 16, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        memory = model.encode(src)
        c, d = _sublayers(top, x, memory)
        out = top(x, memory)
        for query in (d, c):
            r = top.rec_norm(query + top.rec_attn(query, memory["rec"], memory["rec_pad"]))  # eq. 18
            expected = top.ffn_norm(r + top.ffn(r))  # eq. 19
            if query is d:
                assert (out - expected).abs().max().item() < 1e-6
            else:  # the same layer queried by C would be a different function
                assert (out - expected).abs().max().item() > 1e-3


def test_gated_sum_follows_eq_14_17():
    model = make("biarn-gated-top")
    src, _ = batch()
    top = model.decoder.layers[-1]
    assert isinstance(top, GatedDecoderLayer)
    x = torch.randn(3, 4, 16, generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        memory = model.encode(src)
        c, d = _sublayers(top, x, memory)
        r = top.rec_norm(c + top.rec_attn(c, memory["rec"], memory["rec_pad"]))  # eq. 14
        lam = torch.sigmoid(top.gate(torch.cat([d, r], -1)))  # eq. 17
        mix = lam * d + (1 - lam) * r  # eq. 15
        expected = top.ffn_norm(mix + top.ffn(mix))  # eq. 16
        assert (top(x, memory) - expected).abs().max().item() < 1e-6


@pytest.mark.parametrize("name", ["biarn-gated-top", "birnn2-gated-all"])
def test_gated_sum_gate_is_a_probability_and_both_encoders_learn(name):
    model = make(name).train()
    src, tgt = batch()
    gates = []
    for layer in model.decoder.layers:
        if isinstance(layer, GatedDecoderLayer):
            layer.gate.register_forward_hook(lambda _m, _i, out: gates.append(torch.sigmoid(out)))  # eq. 17
    logits = model(src, tgt)
    torch.nn.functional.cross_entropy(logits.view(-1, V_TGT), tgt.roll(-1, 1).view(-1)).backward()
    lam = torch.cat([g.flatten() for g in gates])
    assert gates and 0.0 < lam.min().item() and lam.max().item() < 1.0
    assert 0.05 < lam.std().item() or lam.numel() == 1  # element-wise, not one constant
    grads = {part: sum(p.grad.abs().sum().item() for n, p in model.named_parameters() if n.startswith(part))
             for part in ("encoder.layers.", "encoder.rec.")}
    assert grads["encoder.layers."] > 0 and grads["encoder.rec."] > 0, grads


def test_integrate_into_all_puts_recurrence_attention_in_every_layer():
    model = make("biarn2-stack-all")
    assert all(isinstance(layer, StackDecoderLayer) for layer in model.decoder.layers)
    assert all(isinstance(layer, GatedDecoderLayer) for layer in make("birnn2-gated-all").decoder.layers)


# ---- warm start ---------------------------------------------------------------------------------------------------

def _is_new(name):
    return name.startswith("encoder.rec.") or any(f".{k}." in name for k in ("rec_attn", "rec_norm", "gate"))


@pytest.mark.parametrize("name", ["biarn-stack-top", "birnn2-gated-all"])
def test_init_from_copies_the_baseline_and_reports_only_new_parameters(name):
    baseline = make("transformer", seed=1)
    model = make(name, seed=2)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    fresh = init_from(model, baseline.state_dict())
    base = dict(baseline.named_parameters())
    new = [n for n, _ in model.named_parameters() if _is_new(n)]
    assert fresh == new and any(n.startswith("encoder.rec.") for n in fresh)
    assert any(".rec_attn." in n for n in fresh)
    changed = 0
    for n, p in model.named_parameters():
        if n in fresh:
            assert torch.equal(p, before[n])
        else:
            assert torch.equal(p, base[n])
            changed += p.dim() > 1 and not torch.equal(p, before[n])
    assert changed == sum(p.dim() > 1 for p in baseline.parameters())


def test_init_from_skips_shape_mismatches():
    baseline = make("transformer", seed=1)
    model = make("transformer", seed=2, ffn_dim=32)
    fresh = init_from(model, baseline.state_dict())
    assert len(fresh) == 3 * (2 + 2)  # fc1.weight, fc1.bias, fc2.weight of every layer; fc2.bias still fits
    assert all(".ffn.fc" in n and not n.endswith("fc2.bias") for n in fresh)


# ---- embeddings ---------------------------------------------------------------------------------------------------

def test_three_tables_by_default_tying_and_sharing():
    shared, tied, plain = make("transformer-shared"), make("transformer-tied"), make("transformer")
    assert shared.src_embed is shared.tgt_embed and shared.output_proj.weight is shared.src_embed.weight
    assert tied.output_proj.weight is tied.tgt_embed.weight and tied.src_embed is not tied.tgt_embed
    assert plain.src_embed is not plain.tgt_embed and plain.output_proj.weight is not plain.tgt_embed.weight
    assert count_parameters(plain) - count_parameters(tied) == V_TGT * 16
    assert count_parameters(plain) - count_parameters(shared) == (V_SRC + 2 * V_TGT - V_TGT) * 16  # shared: V_TGT
    assert plain.src_embed.weight[0].abs().sum() == 0 and plain.tgt_embed.weight[0].abs().sum() == 0  # PAD rows


def test_seeded_construction_is_deterministic():
    a, b = make("biarn-stack-top", seed=3), make("biarn-stack-top", seed=3)
    assert all(torch.equal(a.state_dict()[k], b.state_dict()[k]) for k in a.state_dict())


# ---- parameter counts ----------------------------------------------------------------------------------------------

def transformer_formula(d, f, enc, dec, v_src, v_tgt, shared=False, tied=False):
    """Parameters of the post-LN Transformer: attention 4(d^2+d), FFN 2df+f+d, LayerNorm 2d; no output bias;
    three embedding tables unless shared (one) or tied (target = output)."""
    attn, ffn, ln = 4 * (d * d + d), 2 * d * f + f + d, 2 * d
    emb = v_src * d + (0 if shared else v_tgt * d) + (0 if shared or tied else v_tgt * d)
    return enc * (attn + ffn + 2 * ln) + dec * (2 * attn + ffn + 3 * ln) + emb


def recurrence_formula(d, f, dec, rec_type="biarn", rec_layers=1, integration="stack", into="top"):
    """Parameters added by the recurrence encoder and the decoder's recurrence attention."""
    attn, ffn, ln, gru = 4 * (d * d + d), 2 * d * f + f + d, 2 * d, 6 * d * d + 6 * d
    proj = 2 * d * d + d
    rec = 2 * (attn + gru + d * d + d) + proj if rec_type == "biarn" else 2 * gru + proj
    per_layer = attn + ln + (2 * d * d + d if integration == "gated" else 0)
    return rec_layers * (rec + 2 * ln + ffn) + (dec if into == "all" else 1) * per_layer


@pytest.mark.parametrize("shared,tied", [(False, False), (False, True), (True, False)])
def test_paper_base_transformer_parameter_count(shared, tied):
    with torch.device("meta"):  # paper scale without allocating memory
        model = build_model({**T, "share_embeddings": shared, "tie_output": tied}, 32000, 32000)
    assert count_parameters(model) == transformer_formula(512, 2048, 6, 6, 32000, 32000, shared, tied)


def test_paper_base_biarn_adds_about_9_4m_parameters():
    """Table 3 reports +9.4M for the 1-layer BiARN on Base; our choices give 9,456,640 (within 1%), whatever the
    embedding tables (untied here, as hao2019's presets)."""
    with torch.device("meta"):
        base = build_model({**T, "share_embeddings": False, "tie_output": False}, 30000, 30000)
        ours = build_model({**R, "share_embeddings": False, "tie_output": False}, 30000, 30000)
    added = count_parameters(ours) - count_parameters(base)
    assert added == recurrence_formula(512, 2048, 6) == 9_456_640
    assert abs(added - 9.4e6) / 9.4e6 < 0.01


@pytest.mark.parametrize("name", [n for n in VARIANTS if VARIANTS[n]["encoder"] == "recurrence"
                                  and "rel_pos_k" not in VARIANTS[n]])  # RelPos counts: test_related_models
def test_small_recurrence_parameter_counts(name):
    extra = VARIANTS[name]
    model = make(name)
    expected = transformer_formula(16, 24, 2, 2, V_SRC, V_TGT) + recurrence_formula(
        16, 24, 2, extra.get("rec_type", "biarn"), extra.get("rec_layers", 1), extra.get("integration", "stack"),
        extra.get("integrate_into", "top"))
    assert count_parameters(model) == expected


# ---- validation ----------------------------------------------------------------------------------------------------

def error(spec, v_src=V_SRC, v_tgt=V_TGT):
    with pytest.raises(PipelineError) as info:
        build_model(spec, v_src, v_tgt)
    return str(info.value)


@pytest.mark.parametrize("spec,words", [
    ({"encoder": "transfomer", "decoder": "transformer"},
     ["encoder 'transfomer'", "did you mean 'transformer'", "multicolumn, none, recurrence, rnmt, transformer"]),
    ({"encoder": "transformer", "decoder": "recurence"}, ["decoder 'recurence'", "did you mean 'recurrence'"]),
    ({"decoder": "transformer"}, ["missing 'encoder'", "transformer"]),
    ({"encoder": "transformer"}, ["missing 'decoder'"]),
    ({**T, "decoder": "recurrence"},
     ["decoder 'recurrence' reads memory entry 'rec'", "encoder 'transformer'", "encoders that do: recurrence"]),
    ({**R, "decoder": "transformer"}, ["encoder 'recurrence' writes memory entry 'rec'", "decoder 'transformer'"]),
])
def test_unknown_or_mismatched_kinds_are_named(spec, words):
    message = error({**SMALL, **spec})
    assert all(w in message for w in words), message


@pytest.mark.parametrize("spec,options,words", [
    (T, {"d_modle": 16}, ["'d_modle'", "did you mean 'd_model'"]),
    (T, {"rec_type": "biarn"}, ["'rec_type'", "encoder 'transformer' / decoder 'transformer'"]),
    (T, {"heads": "8"}, ["'heads'", "expected int"]),
    (T, {"heads": True}, ["'heads'", "expected int"]),
    (T, {"dropout": "0.1"}, ["'dropout'", "expected float"]),
    (T, {"share_embeddings": 1}, ["'share_embeddings'", "expected bool"]),
    (R, {"rec_type": "lstm"}, ["'rec_type'", "'biarn' | 'birnn'"]),
    (R, {"integrate_into": "bottom"}, ["'integrate_into'", "'top' | 'all'"]),
    (R, {"rec_steps": 2.0}, ["'rec_steps'", "expected int"]),
    (T, {"d_model": 16, "heads": 3}, ["'heads'", "divisor of d_model=16"]),
    (T, {"dropout": 1.5}, ["'dropout'", "[0, 1)"]),
    (T, {"enc_layers": 0}, ["'enc_layers'", "positive"]),
    (T, {"dec_layers": 0}, ["'dec_layers'", "positive"]),
    (R, {"rec_steps": -1}, ["'rec_steps'", ">= 0"]),
    (R, {"rec_layers": 0}, ["'rec_layers'", "positive"]),
])
def test_option_errors_name_the_key(spec, options, words):
    for check in (lambda: validate_model({**SMALL, **spec, **options}),
                  lambda: build_model({**SMALL, **spec, **options}, V_SRC, V_TGT)):
        with pytest.raises(PipelineError) as info:
            check()
        assert all(w in str(info.value) for w in words), str(info.value)


def test_share_embeddings_needs_one_vocabulary():
    message = error({**SMALL, **T, "share_embeddings": True}, 11, 13)
    assert "'share_embeddings'" in message and "11" in message and "13" in message


def test_too_long_sequences_name_max_positions():
    model = make("transformer", max_positions=6)
    src, tgt = batch()
    with pytest.raises(PipelineError, match="max_positions"):
        model(src, tgt)  # source of 7 positions
    memory = model.encode(src[:, :6])
    with pytest.raises(PipelineError, match="max_positions"):
        model.decode_step(torch.ones(3, 7, dtype=torch.long), memory, None)
    assert model.max_output_len == 5 and model.max_input_len == 6


def test_attention_ignores_padding_keys_exactly():
    torch.manual_seed(0)
    attn = MultiHeadAttention(8, 2).eval()
    q, k = torch.randn(1, 2, 8), torch.randn(1, 3, 8)
    padded = torch.cat([k, torch.randn(1, 2, 8) * 100], dim=1)
    pad_mask = torch.tensor([[False, False, False, True, True]])
    assert (attn(q, k) - attn(q, padded, pad_mask)).abs().max().item() < 1e-6
    assert (attn(q, k) - attn(q, padded)).abs().max().item() > 1e-3
