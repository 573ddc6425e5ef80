"""shu2016's four decoders by hand: attention queried by layer 1's h_{t-1} (eq. 4-6), h_t = LSTM([e_{t-1}; c_t])
(eq. 7 / 11), h'_t = LSTM(h_t) with no context (eq. 12, our choice), o_t = W_o h_t + b_o (eq. 8), W_o h'_t + b_o
(stacked) or W_o (h_t + h'_t) + b_o (residual, eq. 13); stacked and residual differ only in that sum; the options;
and the paper-scale parameter counts against 4.1's "same number of overall parameters". The invariants every model
keeps (incremental = full pass, causality, padding, gradients; the copy task) run on these variants in
tests/models/test_models.py and tests/models/test_copy_task.py."""
import pytest
import torch
from by_hand import attention_by_hand
from torch import nn

from pipeline.errors import PipelineError
from pipeline.models import build_model, count_parameters, validate_model

torch.set_num_threads(1)

SMALL = {"encoder": "birnn", "cell": "lstm", "decoder": "lstm_attention", "embed": 6, "hidden": 5,
         "attention_dim": 4, "output_bias": True}
DECODERS = {  # shu2016 4.1
    "baseline": {},
    "enlarged": {"dec_hidden": 7},
    "stacked": {"layers": 2},
    "residual": {"layers": 2, "residual": True},
}


def model(name, seed=0, **options):
    """A small model of one of the four decoders, its biases random (they are zero after initialisation)."""
    torch.manual_seed(seed)
    m = build_model({**SMALL, **DECODERS[name], **options}, 9, 11).eval()
    with torch.no_grad():
        for p in m.parameters():
            if p.dim() == 1:
                p.uniform_(-0.5, 0.5)
        m.decoder.attention.query_proj.weight.mul_(10)  # a peaked, query-dependent attention, so the query matters
        m.decoder.attention.score.weight.mul_(10)
    return m


def copy_cell(cell):
    """A fresh torch.nn.LSTMCell holding the weights of `cell`."""
    fresh = nn.LSTMCell(cell.input_size, cell.hidden_size)
    fresh.load_state_dict(cell.state_dict())
    return fresh


SRC, TGT = torch.tensor([[5, 6, 7, 8, 2]]), torch.tensor([[1, 4, 9, 3]])


def by_hand(m):
    """Per target position: (h_t, h'_t or None, o_t) of one unpadded sentence, from torch.nn.LSTMCell copies."""
    d, o = m.decoder, m.decoder.options
    enc = m.encode(SRC)["enc"][0]  # hbar [S,c]
    no_pad = torch.zeros(enc.size(0), dtype=torch.bool)
    cells = [copy_cell(cell) for cell in d.cells]
    h = [torch.tanh(init.weight @ enc.mean(0) + init.bias)[None] for init in d.init_states]  # h_0 (our choice)
    c = [torch.zeros_like(x) for x in h]  # c_0 = 0
    e = m.tgt_embed(TGT)[0]  # e_0 = the BOS embedding
    steps = []
    for t in range(TGT.size(1)):
        context, _ = attention_by_hand(d.attention, h[0][0], enc, no_pad)  # eq. 4-6, queried by layer 1's h_{t-1}
        h[0], c[0] = cells[0](torch.cat([e[t], context])[None], (h[0], c[0]))  # eq. 7 / 11
        if o.layers == 2:
            h[1], c[1] = cells[1](h[0], (h[1], c[1]))  # eq. 12: h'_t = f(h_t, h'_{t-1}), no context
        top = h[0] + h[1] if o.residual else h[-1]  # eq. 13 | Figure 1(b) | eq. 8
        steps.append((h[0][0], h[1][0] if o.layers == 2 else None, m.output_proj.weight @ top[0] + m.output_proj.bias))
    return steps


@pytest.mark.parametrize("name", DECODERS)
def test_outputs_follow_eq_7_8_and_11_13_by_hand(name):
    m = model(name)
    with torch.no_grad():
        logits = m(SRC, TGT)[0]
        expected = torch.stack([o for _, _, o in by_hand(m)])
    assert logits.shape == (4, 11)
    torch.testing.assert_close(logits, expected, rtol=0, atol=1e-5)


def test_residual_output_is_w_o_of_h_plus_h_prime():
    """Eq. 13: o_t = W_o (h_t + h'_t) + b_o, h and h' from the model's own layer states and by hand."""
    m = model("residual")
    with torch.no_grad():
        states = m.decoder.layer_states(m.tgt_embed(TGT), m.encode(SRC))
        steps = by_hand(m)
        torch.testing.assert_close(states["h0"][0], torch.stack([h for h, _, _ in steps]), rtol=0, atol=1e-6)
        torch.testing.assert_close(states["h1"][0], torch.stack([h2 for _, h2, _ in steps]), rtol=0, atol=1e-6)
        expected = (states["h0"] + states["h1"]) @ m.output_proj.weight.T + m.output_proj.bias
        torch.testing.assert_close(m(SRC, TGT), expected, rtol=0, atol=1e-6)
        assert (states["h0"] - states["h1"]).abs().max() > 1e-2  # two different layers


def test_stacked_and_residual_differ_only_in_the_sum():
    """The same seed gives the same parameters (residual stacking adds none, sec. 3) and the same layer states; the
    outputs differ by exactly W_o h_t."""
    stacked, residual = model("stacked"), model("residual")
    assert stacked.state_dict().keys() == residual.state_dict().keys()
    assert all(torch.equal(p, residual.state_dict()[k]) for k, p in stacked.state_dict().items())
    assert count_parameters(stacked) == count_parameters(residual)
    with torch.no_grad():
        memory, y = stacked.encode(SRC), stacked.tgt_embed(TGT)
        states = stacked.decoder.layer_states(y, memory)
        for key, value in residual.decoder.layer_states(y, memory).items():
            assert torch.equal(value, states[key])
        difference = residual(SRC, TGT) - stacked(SRC, TGT)
    torch.testing.assert_close(difference, states["h0"] @ stacked.output_proj.weight.T, rtol=0, atol=1e-6)
    assert difference.abs().max() > 1e-2


def test_layer_2_reads_h_t_only():
    """Our choice (the paper does not say where the context enters layer 2; eq. 12 and the author's nmtlab code
    give none): layer 2 is an LSTM over layer 1's states alone, from h'_0 = tanh(W_init' mean(hbar)), c'_0 = 0."""
    m = model("stacked")
    d = m.decoder
    assert d.cells[0].input_size == 6 + 10 and d.cells[1].input_size == 5  # [e; c] vs h_t
    lstm = nn.LSTM(5, 5, batch_first=True)
    cell = d.cells[1]
    lstm.load_state_dict({"weight_ih_l0": cell.weight_ih, "weight_hh_l0": cell.weight_hh, "bias_ih_l0": cell.bias_ih,
                          "bias_hh_l0": cell.bias_hh})
    with torch.no_grad():
        memory = m.encode(SRC)
        states = d.layer_states(m.tgt_embed(TGT), memory)
        h0 = torch.tanh(d.init_states[1](memory["enc"][0].mean(0)))[None, None]
        top, _ = lstm(states["h0"], (h0, torch.zeros_like(h0)))
    torch.testing.assert_close(states["h1"], top, rtol=0, atol=1e-6)


def test_attention_is_queried_by_layer_1_once_per_step():
    """source_attention() is the attention of eq. 4-6: one call per target position, with layer 1's h_{t-1}."""
    m = model("residual")
    attention, queries = m.decoder.source_attention(), []
    assert attention is m.decoder.attention
    attention.register_forward_hook(lambda _m, args, _out: queries.append(args[0]))
    with torch.no_grad():
        m(SRC, TGT)
        states = m.decoder.layer_states(m.tgt_embed(TGT), m.encode(SRC))
    assert len(queries) == 2 * TGT.size(1)
    torch.testing.assert_close(torch.stack(queries[1:TGT.size(1)], 1), states["h0"][:, :-1], rtol=0, atol=0)


def test_incremental_state_is_h_and_c_per_layer_and_reorders():
    m = model("residual")
    src = torch.cat([SRC, SRC.flip(1)])
    with torch.no_grad():
        memory = m.encode(src)
        _, state = m.decode_step(TGT.expand(2, -1)[:, :1], memory, None)
        assert {k: tuple(v.shape) for k, v in state.items()} == {k: (2, 5) for k in ("h0", "c0", "h1", "c1")}
        swapped = m.reorder_state(state, torch.tensor([1, 0, 0]))
    assert all(torch.equal(swapped[k], state[k][[1, 0, 0]]) for k in state)


# ---- options ----------------------------------------------------------------------------------------------------

def test_defaults_are_the_baseline_and_dec_hidden_sizes_the_decoder_alone():
    spec = validate_model({"encoder": "birnn", "decoder": "lstm_attention", "cell": "lstm", "embed": 620,
                           "hidden": 1000, "dec_hidden": 1400})
    dec = spec.decoder_options
    assert (dec.layers, dec.residual, dec.attention_dim, dec.dropout) == (1, False, 1000, 0.0)
    assert dec.units == dec.output_dim == 1400 and spec.encoder_options.hidden == 1000
    assert validate_model({"encoder": "birnn", "decoder": "lstm_attention"}).decoder_options.units == 1000


@pytest.mark.parametrize("options,words", [
    ({"residual": True}, ["'residual'", "layers is 2"]),
    ({"layers": 3}, ["'layers'", "1 or 2"]),
    ({"layers": 0}, ["'layers'", "1 or 2"]),
    ({"dec_hidden": -1}, ["'dec_hidden'", ">= 0"]),
    ({"residual": 1}, ["'residual'", "bool"]),
])
def test_option_errors_name_the_key(options, words):
    with pytest.raises(PipelineError) as info:
        validate_model({**SMALL, **options})
    assert all(w in str(info.value) for w in words), str(info.value)


# ---- paper-scale parameter counts (sec. 4.1) ------------------------------------------------------------------
# All RNNs have 1000 units (the BiLSTM encoder 1000 per direction, context 2000); embeddings 620 and attention 1000
# (Bahdanau et al. A.2; our choice, unstated); En vocabulary 200K words + our 4 specials; Ja is split into characters
# with no limit and no size given: our choice 6,000 characters + 4 specials. Three untied tables, b_o (eq. 8, 13).

E, H, C, A = 620, 1000, 2000, 1000
V_EN, V_JA = 200_000 + 4, 6_000 + 4
PAPER = {"encoder": "birnn", "cell": "lstm", "decoder": "lstm_attention", "embed": E, "hidden": H, "attention_dim": A,
         "output_bias": True}
PAPER_DECODERS = {"baseline": {}, "enlarged": {"dec_hidden": 1400}, "stacked": {"layers": 2},
                  "residual": {"layers": 2, "residual": True}}
COUNTS = {"baseline": 166_201_965, "enlarged": 177_839_165, "stacked": 176_210_965, "residual": 176_210_965}


def linear(n_in, n_out, bias=True):
    return n_in * n_out + (n_out if bias else 0)


def lstm(n_in, h):
    return 4 * h * (n_in + h) + 8 * h  # torch's LSTM: two bias vectors


def formula(n=H, layers=1):
    """Embeddings, BiLSTM, then the decoder: h_0 maps, attention (W_a split in query and key parts, v_a), the LSTM
    layers, W_o and b_o."""
    embeddings = V_EN * E + V_JA * E
    attention = linear(n, A, bias=False) + linear(C, A) + linear(A, 1)
    decoder = layers * linear(C, n) + attention + lstm(E + C, n) + (layers - 1) * lstm(n, n)
    return embeddings + 2 * lstm(E, H) + decoder + linear(n, V_JA)


def paper_count(name):
    with torch.device("meta"):  # paper scale without allocating memory
        return count_parameters(build_model({**PAPER, **PAPER_DECODERS[name]}, V_EN, V_JA))


@pytest.mark.parametrize("name", COUNTS)
def test_paper_scale_parameter_counts(name):
    expected = {"baseline": formula(), "enlarged": formula(n=1400), "stacked": formula(layers=2),
                "residual": formula(layers=2)}[name]
    assert paper_count(name) == expected == COUNTS[name]


def test_the_three_variations_have_about_the_same_budget():
    """4.1 designs the enlarged, stacked and residual decoders to keep the same number of parameters: ours are within
    1% (enlarged +1,628,200 over stacked, 0.9%; its W_o grows with the Ja vocabulary); residual stacking adds none
    (sec. 3). The baseline has 10.0M fewer (5.7% below stacked): the second layer's 8,008,000 and its h_0 map."""
    counts = {name: paper_count(name) for name in COUNTS}
    assert counts["residual"] == counts["stacked"]
    assert counts["enlarged"] - counts["stacked"] == 1_628_200
    assert abs(counts["enlarged"] - counts["stacked"]) / counts["stacked"] < 0.01
    assert counts["stacked"] - counts["baseline"] == lstm(H, H) + linear(C, H) == 10_009_000
    assert 0.05 < 1 - counts["baseline"] / counts["stacked"] < 0.06
