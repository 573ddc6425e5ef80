"""zhang2018's models by hand: the RNNsearch decoder (eq. 2-5), the maxout readout of RNNsearch*, the relation layer
(CNN eq. 7 with BatchNorm over the real positions, graph propagation eq. 8-9, MLP eq. 10), the RNMT encoder's order
(eq. 11-12), padding that never reaches a real position, and the paper-scale parameter counts against sec. 5.3's
"only 4.1M parameters more". The invariants every model keeps run on these variants in tests/models/test_models.py."""
import pytest
import torch
from by_hand import attention_by_hand, gru_by_hand
from torch import nn

from pipeline.errors import PipelineError
from pipeline.models import build_model, count_parameters, validate_model
from pipeline.models.cgru_decoder import activate_readout
from pipeline.models.relation_encoder import GraphPropagation, MaskedBatchNorm, RelationLayer, reverse_padded

torch.set_num_threads(1)

RNN = {"encoder": "birnn", "embed": 6, "hidden": 5, "dropout": 0.0}
RNMT = {"encoder": "rnmt", "decoder": "cgru", "readout": "maxout", "embed": 8, "hidden": 8, "dropout": 0.0,
        "rn_widths": [1, 3], "rn_channels": [3, 4], "rn_hidden": 5}


def lrelu(x):
    return torch.where(x > 0, x, 0.1 * x)


def maxout_by_hand(pre):
    """max(pre_2k, pre_2k+1) for k = 0 .. u/2 - 1 of a vector."""
    return torch.stack([torch.max(pre[2 * k], pre[2 * k + 1]) for k in range(pre.numel() // 2)])


# ---- the readout ---------------------------------------------------------------------------------------------------

def test_maxout_pools_adjacent_pairs_and_tanh_is_the_default_of_cgru():
    pre = torch.tensor([[1.0, 5.0, -2.0, -3.0, 0.5, 0.25]])
    assert activate_readout(pre, "maxout").tolist() == [[5.0, -2.0, 0.5]]
    assert torch.equal(activate_readout(pre, "tanh"), torch.tanh(pre))
    spec = validate_model({**RNN, "decoder": "cgru"})
    assert spec.decoder_options.readout == "tanh"  # werlen2018 unchanged
    assert validate_model({**RNN, "decoder": "rnnsearch"}).decoder_options.readout == "maxout"


def model(**options):
    torch.manual_seed(0)
    return build_model({**RNN, **options}, 9, 11).eval()


def start(m, src, tgt):
    """H, its padding, s_0 = tanh(W_init mean(H)) and the target inputs with y_0 = 0, by hand (one sentence)."""
    memory = m.encode(src)
    enc = memory["enc"][0]
    s = torch.tanh(m.decoder.init_state.weight @ enc.mean(0) + m.decoder.init_state.bias)
    y = m.tgt_embed(tgt)[0]
    y[0] = 0  # y_0 is the zero vector
    return memory, enc, torch.zeros(enc.size(0), dtype=torch.bool), s, y


def readout_by_hand(d, s, y, c, readout):
    pre = (d.readout_state.weight @ s + d.readout_state.bias + d.readout_words.weight @ y + d.readout_words.bias
           + d.readout_context.weight @ c + d.readout_context.bias)
    return maxout_by_hand(pre) if readout == "maxout" else torch.tanh(pre)


@pytest.mark.parametrize("readout", ["maxout", "tanh"])
def test_rnnsearch_steps_follow_eq_2_to_5(readout):
    """a_j is queried by s_{j-1} (eq. 2-3), s_j = GRU([E y_{j-1}; a_j], s_{j-1}) (eq. 4), the readout reads s_j,
    E y_{j-1} and a_j (eq. 5): maxout over 2 x 6 units, or tanh over 6."""
    m = model(decoder="rnnsearch", readout=readout, attention_dim=4)
    d = m.decoder
    units = 12 if readout == "maxout" else 6
    assert d.readout_state.weight.shape == (units, 5) and d.readout_context.weight.shape == (units, 10)
    assert d.gru.weight_ih.shape == (15, 6 + 10)  # input [E y (6); a (2 x 5)]
    src, tgt = torch.tensor([[5, 6, 7, 2]]), torch.tensor([[1, 4, 8]])
    with torch.no_grad():
        d.attention.query_proj.weight.mul_(10)  # a query-dependent, peaked attention, so that the query matters
        d.attention.score.weight.mul_(10)
        memory, enc, no_pad, s, y = start(m, src, tgt)
        expected = []
        for j in range(3):
            a, _ = attention_by_hand(d.attention, s, enc, no_pad)  # queried by s_{j-1}
            s = gru_by_hand(torch.cat([y[j], a]), s, d.gru)
            expected.append(readout_by_hand(d, s, y[j], a, readout))
            a_new, _ = attention_by_hand(d.attention, s, enc, no_pad)  # queried by s_j instead: another context
            assert (a_new - a).abs().max() > 1e-3
        features = d(m.tgt_embed(tgt), memory)[0]
    torch.testing.assert_close(features, torch.stack(expected), rtol=0, atol=1e-6)


def test_rnnsearch_star_is_the_cgru_with_a_maxout_readout():
    """s'_j = GRU_1(E y_{j-1}, s_{j-1}); a_j queried by s'_j; s_j = GRU_2(a_j, s'_j) (eq. 13); maxout readout."""
    m = model(decoder="cgru", readout="maxout")
    d = m.decoder
    assert d.readout_words.weight.shape == (12, 6)
    src, tgt = torch.tensor([[5, 6, 2]]), torch.tensor([[1, 4, 8, 3]])
    with torch.no_grad():
        memory, enc, no_pad, s, y = start(m, src, tgt)
        expected = []
        for j in range(4):
            s_mid = gru_by_hand(y[j], s, d.cell.gru1)
            c, _ = attention_by_hand(d.cell.attention, s_mid, enc, no_pad)
            s = gru_by_hand(c, s_mid, d.cell.gru2)
            expected.append(readout_by_hand(d, s, y[j], c, "maxout"))
        features = d(m.tgt_embed(tgt), memory)[0]
        torch.testing.assert_close(features, torch.stack(expected), rtol=0, atol=1e-6)
        tanh = model(decoder="cgru")  # the same seed, the tanh readout: other sizes, other features
        assert tanh.decoder.readout_words.weight.shape == (6, 6)


# ---- the relation layer (sec. 3) -------------------------------------------------------------------------------------

def rnl(widths=(1, 3), channels=(3, 4), hidden=5, gp=4, mlp=2, dim=6):
    torch.manual_seed(0)
    layer = RelationLayer(dim, widths, channels, hidden, gp, mlp)
    with torch.no_grad():  # BatchNorm away from the identity, so that its statistics matter
        for norm in layer.norms:
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-0.5, 0.5)
            norm.running_mean.uniform_(-0.5, 0.5)
            norm.running_var.uniform_(0.5, 2.0)
    return layer


def test_cnn_layer_follows_eq_7_with_zeros_beyond_the_sentence_and_at_padding():
    """c_i = LeakyReLU(BN(W_cnn [h_{i-1}; h_i; h_{i+1}] + b_cnn)), h = 0 outside the sentence; widths side by side."""
    layer = rnl().eval()
    h = torch.randn(1, 5, 6, generator=torch.Generator().manual_seed(1))
    h[0, 3:] = 100.0  # padding
    pad = torch.tensor([[False, False, False, True, True]])
    with torch.no_grad():
        c = layer.cnn(h, pad)[0, :3]
        zero = torch.zeros(6)
        rows = []
        for i in range(3):
            parts = []
            for conv, norm in zip(layer.convs, layer.norms):
                k = conv.kernel_size[0]
                window = [h[0, i + o] if 0 <= i + o < 3 else zero for o in range(-(k // 2), k // 2 + 1)]
                pre = sum(conv.weight[:, :, t] @ window[t] for t in range(k)) + conv.bias
                bn = (pre - norm.running_mean) / torch.sqrt(norm.running_var + norm.eps) * norm.weight + norm.bias
                parts.append(lrelu(bn))
            rows.append(torch.cat(parts))
    assert c.shape == (3, 3 + 4)
    torch.testing.assert_close(c, torch.stack(rows), rtol=0, atol=1e-5)


def test_graph_propagation_one_layer_by_hand():
    """r_i = 1/3 sum_j LeakyReLU(W_gp [c_i; c_j] + b_gp) over a 3-word input (eq. 8-9, a 1-layer stand-in)."""
    torch.manual_seed(0)
    gp = GraphPropagation(channels=2, hidden=3, layers=1)
    c = torch.randn(1, 3, 2)
    with torch.no_grad():
        r = gp(c, torch.zeros(1, 3, dtype=torch.bool))[0]
        for i in range(3):
            pairs = [lrelu(gp.pair.weight @ torch.cat([c[0, i], c[0, j]]) + gp.pair.bias) for j in range(3)]
            torch.testing.assert_close(r[i], (pairs[0] + pairs[1] + pairs[2]) / 3, rtol=0, atol=1e-6)
        assert (r[0] - r[1]).abs().max() > 1e-3


def test_graph_propagation_four_layers_by_hand_and_padding_partners_are_left_out():
    """The 4-layer MLP recomputed on every explicit concatenation [c_i; c_j]; the mean is over the real j only
    (our choice), where the released code averages over the padded j too."""
    torch.manual_seed(0)
    gp = GraphPropagation(channels=3, hidden=4, layers=4)
    linears = [gp.pair] + [m for m in gp.rest if isinstance(m, nn.Linear)]
    assert [tuple(lin.weight.shape) for lin in linears] == [(4, 6), (4, 4), (4, 4), (4, 4)]
    c = torch.randn(1, 5, 3)
    c[0, 3:] = torch.randn(2, 3) * 50  # padding
    pad = torch.tensor([[False, False, False, True, True]])
    with torch.no_grad():
        r = gp(c, pad)[0]
        for i in range(3):
            outs = []
            for j in range(3):
                x = torch.cat([c[0, i], c[0, j]])
                for lin in linears:
                    x = lrelu(lin.weight @ x + lin.bias)
                outs.append(x)
            torch.testing.assert_close(r[i], torch.stack(outs).mean(0), rtol=0, atol=1e-6)
        torch.testing.assert_close(r[:3], gp(c[:, :3], pad[:, :3])[0], rtol=0, atol=1e-6)  # = the unpadded sentence
        released = gp.pairs(c)[0, :3].mean(1)  # mean over all 5 partners
        assert (released - r[:3]).abs().max() > 1e-3


def test_masked_batch_norm_is_batch_norm_over_the_real_positions():
    torch.manual_seed(0)
    norm, reference = MaskedBatchNorm(4), nn.BatchNorm1d(4)
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)
        norm.bias.uniform_(-1, 1)
    reference.load_state_dict(norm.state_dict())
    x = torch.randn(2, 5, 4) * 3 + 1
    pad = torch.tensor([[False] * 5, [False, False, True, True, True]])
    x[pad] = 1e3  # padding values that would dominate any statistic they entered
    out = norm(x, pad)
    torch.testing.assert_close(out[~pad], reference(x[~pad]), rtol=0, atol=1e-5)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        torch.testing.assert_close(getattr(norm, name), getattr(reference, name), rtol=0, atol=1e-6)
    norm.eval(), reference.eval()
    torch.testing.assert_close(norm(x, pad)[~pad], reference(x[~pad]), rtol=0, atol=1e-5)
    single = MaskedBatchNorm(4).train()  # one real position: no unbiased variance, no crash, running_var kept
    single(torch.randn(1, 3, 4), torch.tensor([[False, True, True]]))
    assert single.running_var.eq(1).all() and single.running_mean.abs().sum() > 0


@pytest.mark.parametrize("train", [True, False])
def test_relation_layer_padding_never_reaches_a_real_position(train):
    """The same two sentences, padded to 5 and to 8 positions (padding filled with large values): equal outputs at
    the real positions, in training (batch statistics) and in evaluation (running statistics)."""
    layer = rnl(widths=(3,), channels=(4,)).train(train)
    h = torch.randn(2, 8, 6, generator=torch.Generator().manual_seed(2))
    pad = torch.zeros(2, 8, dtype=torch.bool)
    pad[0, 5:], pad[1, 3:] = True, True
    h[pad] = 50.0
    with torch.no_grad():
        short, long = layer(h[:, :5], pad[:, :5]), layer(h, pad)
        for b, n in enumerate((5, 3)):
            torch.testing.assert_close(short[b, :n], long[b, :n], rtol=0, atol=1e-6)
        if not train:  # evaluation: one sentence alone gives its batch rows
            torch.testing.assert_close(layer(h[1:, :3], pad[1:, :3])[0], long[1, :3], rtol=0, atol=1e-6)
    assert int(layer.norms[0].num_batches_tracked) == (2 if train else 0)


# ---- the RNMT encoder (eq. 11-12) -----------------------------------------------------------------------------------

def test_reverse_padded_reverses_each_sentence_within_its_length():
    x = torch.arange(8.0).view(2, 4, 1)
    out = reverse_padded(x, torch.tensor([4, 2]))[..., 0]
    assert out.tolist() == [[3, 2, 1, 0], [5, 4, 6, 7]]


def test_rnmt_encoder_order_by_hand():
    """h1 = fwdGRU(e) + e; h2 = RNL(L0[e;h1]) + L0[e;h1]; h3 = bwdGRU(L1[e;h1;h2]) + ...; h4 = RNL(L2[...]) + ...;
    H = L3[e;h1;h2;h3;h4], for a sentence padded in a batch and recomputed alone with the plain torch modules."""
    torch.manual_seed(0)
    m = build_model(RNMT, 12, 12).eval()
    enc = m.encoder
    assert [type(layer).__name__ for layer in enc.layers] == ["DirectionalGRU", "RelationLayer", "DirectionalGRU",
                                                              "RelationLayer"]
    assert [lin.in_features for lin in enc.dense] == [16, 24, 32, 40]
    src = torch.tensor([[5, 6, 7, 8, 2], [9, 4, 2, 0, 0]])
    with torch.no_grad():
        memory = m.encode(src)
        e = m.src_embed(src[1:, :3])  # the second sentence alone, [1,3,8]
        no_pad = torch.zeros(1, 3, dtype=torch.bool)
        h1 = enc.layers[0].rnn(e)[0] + e
        in2 = enc.dense[0](torch.cat([e, h1], -1))
        h2 = enc.layers[1](in2, no_pad) + in2
        in3 = enc.dense[1](torch.cat([e, h1, h2], -1))
        h3 = enc.layers[2].rnn(in3.flip(1))[0].flip(1) + in3  # the backward GRU: right to left
        in4 = enc.dense[2](torch.cat([e, h1, h2, h3], -1))
        h4 = enc.layers[3](in4, no_pad) + in4
        expected = enc.dense[3](torch.cat([e, h1, h2, h3, h4], -1))[0]
    torch.testing.assert_close(memory["enc"][1, :3], expected, rtol=0, atol=1e-5)
    assert memory["enc"][1, 3:].eq(0).all() and memory["enc_pad"].equal(src.eq(0))
    assert memory["enc"].shape == (2, 5, 8)  # the decoder's context is `hidden`, not 2 x hidden


def test_rnmt_training_mode_is_independent_of_the_batch_padding():
    """With BatchNorm in training mode a sentence depends on its batch, but never on how far the batch is padded."""
    torch.manual_seed(0)
    m = build_model(RNMT, 12, 12).train()
    src = torch.tensor([[5, 6, 7, 8, 2], [9, 4, 2, 0, 0]])
    wider = torch.cat([src, torch.zeros(2, 3, dtype=torch.long)], 1)
    with torch.no_grad():
        a, b = m.encode(src)["enc"], m.encode(wider)["enc"]
    torch.testing.assert_close(a, b[:, :5], rtol=0, atol=1e-5)


# ---- options ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("options,words", [
    ({"embed": 8, "hidden": 6}, ["'embed'", "residual"]),
    ({"rn_widths": [2]}, ["'rn_widths'", "odd"]),
    ({"rn_widths": [1, 3], "rn_channels": [4]}, ["'rn_channels'", "one positive channel count per width (2)"]),
    ({"rn_widths": 3}, ["'rn_widths'", "a list of ints"]),
    ({"rn_channels": [4, "8"]}, ["'rn_channels'", "a list of ints"]),
    ({"readout": "relu"}, ["'readout'", "'tanh' | 'maxout'"]),
])
def test_rnmt_option_errors_name_the_key(options, words):
    with pytest.raises(PipelineError) as info:
        validate_model({**RNMT, **options})
    assert all(w in str(info.value) for w in words), str(info.value)


def test_list_options_become_tuples_and_round_trip():
    spec = validate_model({**RNMT, "rn_widths": [3], "rn_channels": [96]})
    assert spec.encoder_options.rn_widths == (3,) and spec.encoder_options.rn_channels == (96,)
    assert validate_model(spec.to_dict()) == spec


# ---- paper-scale parameter counts (sec. 5.2-5.3) ------------------------------------------------------------------
# emb = hidden = attention = 512, 30K vocabularies, three untied tables and an output bias (the released code ties the
# target embedding and the output layer; it does not change the difference), En-De RNL: one width-3 convolution of
# 96 channels, GP and MLP layers of 128 units.

PAPER = {"embed": 512, "hidden": 512, "attention_dim": 512, "readout": "maxout", "output_bias": True}
EN_DE = {"rn_widths": [3], "rn_channels": [96], "rn_hidden": 128}
D, V = 512, 30_000


def gru(n_in, h=D):
    return 3 * h * (n_in + h) + 6 * h  # torch's GRU: two bias vectors


def linear(n_in, n_out, bias=True):
    return n_in * n_out + (n_out if bias else 0)


def cgru_decoder(context, d=D, units=2 * D):
    attention = linear(d, d, bias=False) + linear(context, d) + linear(d, 1)
    readout = linear(d, units) + linear(d, units) + linear(context, units)
    return linear(context, d) + gru(d) + attention + gru(context) + readout


def relation_layer(widths=(3,), channels=(96,), m=128, d=D):
    cnn = sum(linear(w * d, n) + 2 * n for w, n in zip(widths, channels))  # conv + BatchNorm's gamma and beta
    return cnn + linear(2 * sum(channels), m) + 3 * linear(m, m) + linear(m, m) + linear(m, d)


EMBEDDINGS = 3 * V * D + V  # source, target, output (+ its bias)
DENSE = sum(linear(k * D, D) for k in (2, 3, 4, 5))  # W_dc of eq. 12 after each of the four layers
COUNTS = {  # name: (spec, ours exact)
    "RNNsearch": ({"encoder": "birnn", "decoder": "rnnsearch"}, 55_823_153),
    "RNNsearch*": ({"encoder": "birnn", "decoder": "cgru"}, 56_612_657),
    "RNMT": ({"encoder": "rnmt", "decoder": "cgru", **EN_DE}, 59_058_801),
}


def paper_count(name):
    spec, _ = COUNTS[name]
    with torch.device("meta"):
        return count_parameters(build_model({**PAPER, **spec}, V, V))


@pytest.mark.parametrize("name", COUNTS)
def test_paper_scale_parameter_counts(name):
    formula = {
        "RNNsearch": EMBEDDINGS + 2 * gru(D) + linear(2 * D, D) + linear(D, D, bias=False) + linear(2 * D, D)
        + linear(D, 1) + gru(D + 2 * D) + 2 * linear(D, 2 * D) + linear(2 * D, 2 * D),
        "RNNsearch*": EMBEDDINGS + 2 * gru(D) + cgru_decoder(2 * D),
        "RNMT": EMBEDDINGS + 2 * gru(D) + DENSE + 2 * relation_layer() + cgru_decoder(D),
    }[name]
    assert paper_count(name) == formula == COUNTS[name][1]


@pytest.mark.parametrize("name, experiment", [("RNNsearch", "rn-en-de-rnnsearch"),
                                              ("RNNsearch*", "rn-en-de-rnnsearch-star"), ("RNMT", "rn-en-de-rnmt")])
def test_the_project_params_build_these_models_at_paper_scale(name, experiment):
    """params/zhang2018.yaml at paper scale: 512 units everywhere, attention included (not the 1024-unit context)."""
    from pipeline.config import load_params
    from pipeline.cost import approximate_parameters
    from workspace import ROOT
    params = load_params(ROOT / "params.yaml", scale="paper")
    assert {k: params.model_spec(experiment)[k] for k in PAPER} == PAPER
    assert approximate_parameters(params, experiment, V) == COUNTS[name][1]


def test_rnmt_adds_2_4m_to_our_rnnsearch_star_against_the_papers_4_1m():
    """Sec. 5.3: RNMT has "only 4.1M parameters more" than RNNsearch* (WMT17 En-De). Ours: +2,446,144, the dense
    maps and two RNLs (+4,281,152) less what a 512-unit context saves in the decoder (-1,835,008): our RNNsearch*
    keeps eq. 1's 1024-unit BiGRU context, whereas RNMT's dense map L3 returns 512 units. Against a 512-unit
    context (the released code's RNNsearch* encoder: a forward GRU stacked under a backward one) RNMT adds 4.28M,
    4.4% above the paper's 4.1M."""
    added = paper_count("RNMT") - paper_count("RNNsearch*")
    saved = cgru_decoder(2 * D) - cgru_decoder(D)
    assert (DENSE, 2 * relation_layer(), saved) == (3_672_064, 609_088, 1_835_008)
    assert added == DENSE + 2 * relation_layer() - saved == 2_446_144
    against_512_context = added + saved
    assert against_512_context == 4_281_152 and abs(against_512_context - 4.1e6) / 4.1e6 < 0.05
