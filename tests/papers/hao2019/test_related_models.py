"""hao2019 Table 4's related approaches: relative positions (Shaw et al.), DiSAN masks (Shen et al.) and the
multi-column RNN encoder (Chen et al.): the spine's invariants, their defining properties, warm start, validation
and exact parameter counts."""
import math

import pytest
import torch
from model_variants import MC, R, SMALL, T, V_SRC, V_TGT, assert_option_error, batch, transformer_formula

from pipeline.models import build_model, count_parameters, init_from, validate_model
from pipeline.models.layers import MultiHeadAttention, RelativePositions
from pipeline.models.multicolumn import MultiColumnEncoder

torch.set_num_threads(1)

K = 4  # clipping distance of the small models: shorter than the longest source (7) and target (6)
VARIANTS = {
    "relpos": {**T, "rel_pos_k": K},
    "disan": {**T, "disan": True},
    "relpos-disan": {**T, "rel_pos_k": K, "disan": True},
    "multicolumn": {**MC, "rnn_layers": 2},
    "biarn-relpos": {**R, "rel_pos_k": K, "rec_steps": 3},
}


def make(name, seed=0, **override):
    """A seeded small model of a variant, in eval mode."""
    torch.manual_seed(seed)
    return build_model({**SMALL, **VARIANTS[name], **override}, V_SRC, V_TGT).eval()


def baseline(seed=1):
    torch.manual_seed(seed)
    return build_model({**SMALL, **T}, V_SRC, V_TGT).eval()



@pytest.mark.parametrize("name", VARIANTS)
def test_the_option_changes_the_model(name):
    """Same seed, same weights where shared: the option alone changes the logits (the invariants themselves,
    incremental = full pass, causality and padding, run for these variants in tests/models/test_models.py)."""
    src, tgt = batch()
    with torch.no_grad():
        assert (make(name)(src, tgt) - baseline(seed=0)(src, tgt)).abs().max().item() > 1e-3


# ---- relative positions --------------------------------------------------------------------------------------------

def rel_attention(k=3, causal=False, seed=0):
    torch.manual_seed(seed)
    return MultiHeadAttention(8, 2, rel_pos_k=k, rel_pos_causal=causal).eval()


def shaw_reference(attn, x, causal=False):
    """Shaw et al. eq. 3-4 with explicit edge vectors a^K_ij, a^V_ij: x [1,n,8] -> [1,n,8]."""
    n, h, dh = x.size(1), attn.heads, attn.d_head
    q = attn.q_proj(x)[0].view(n, h, dh)
    k = attn.k_proj(x)[0].view(n, h, dh)
    v = attn.v_proj(x)[0].view(n, h, dh)
    pos = torch.arange(n)
    a_k, a_v = attn.rel_pos.edges(pos, pos)  # [n,n,h,dh]
    out = torch.zeros(n, h, dh)
    for i in range(n):
        for head in range(h):
            keys = range(i + 1) if causal else range(n)
            e = torch.stack([q[i, head] @ (k[j, head] + a_k[i, j, head]) for j in keys]) / math.sqrt(dh)  # eq. 4
            alpha = torch.softmax(e, 0)
            out[i, head] = sum(alpha[j] * (v[j, head] + a_v[i, j, head]) for j in keys)  # eq. 3
    return attn.out_proj(out.reshape(1, n, h * dh))


@pytest.mark.parametrize("causal", [False, True])
def test_relative_attention_follows_shaw_eq_3_4(causal):
    attn = rel_attention(k=2, causal=causal)
    x = torch.randn(1, 6, 8, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = shaw_reference(attn, x, causal)
        assert (attn(x, x, causal=causal) - expected).abs().max().item() < 1e-5
        attn.rel_pos.value_table.mul_(2)  # the value edges matter
        assert (attn(x, x, causal=causal) - expected).abs().max().item() > 1e-3


@pytest.mark.parametrize("causal", [False, True])
def test_relative_attention_is_invariant_to_shifting_positions(causal):
    attn = rel_attention(causal=causal)
    x = torch.randn(2, 7, 8, generator=torch.Generator().manual_seed(2))
    pos = torch.arange(7)
    with torch.no_grad():
        at_zero = attn(x, x, causal=causal)
        for shift in (1, 5, 300):
            shifted = attn(x, x, causal=causal, position_offset=shift)
            assert (shifted - at_zero).abs().max().item() < 1e-6
            for a, b in zip(attn.rel_pos.edges(pos, pos), attn.rel_pos.edges(pos + shift, pos + shift)):
                assert torch.equal(a, b)
        attn.rel_pos.key_table.zero_()
        attn.rel_pos.value_table.zero_()
        assert (attn(x, x, causal=causal) - at_zero).abs().max().item() > 1e-3  # the edges are used


def test_distances_beyond_k_are_clipped():
    rel = RelativePositions(3, 8, 2, causal=False)
    q, keys = torch.tensor([0]), torch.arange(-9, 10)
    a_k, a_v = rel.edges(q, keys)  # [1,19,h,dh]: distances -9..9
    assert rel.rows(q, keys)[0].tolist() == [0] * 7 + [1, 2, 3, 4, 5] + [6] * 7
    for table in (a_k, a_v):
        far_left, near, far_right = table[0, :7], table[0, 6:13], table[0, 12:]
        assert all(torch.equal(e, table[0, 6]) for e in far_left)  # every distance <= -3 shares w_-3
        assert all(torch.equal(e, table[0, 12]) for e in far_right)  # every distance >= 3 shares w_3
        assert all(not torch.equal(near[i], near[j]) for i in range(7) for j in range(i))
    assert a_k.view(19, 8).equal(rel.key_table[rel.rows(q, keys)[0]])  # columns split into the two heads
    causal = RelativePositions(3, 8, 2, causal=True)
    assert causal.key_table.shape == (4, 8)
    assert causal.rows(torch.tensor([5]), torch.arange(8))[0].tolist() == [0, 0, 0, 1, 2, 3, 3, 3]


def test_sequences_differing_only_beyond_k_attend_alike():
    """Swapping two keys both beyond k from position 0 leaves its output unchanged; within k it does not."""
    attn = rel_attention(k=2)
    x = torch.randn(1, 7, 8, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        out = attn(x, x)
        far, near = x.clone(), x.clone()
        far[0, [3, 5]] = x[0, [5, 3]]
        near[0, [1, 2]] = x[0, [2, 1]]
        assert (attn(far, far)[0, 0] - out[0, 0]).abs().max().item() < 1e-6
        assert (attn(far, far)[0, 3] - out[0, 3]).abs().max().item() > 1e-3
        assert (attn(near, near)[0, 0] - out[0, 0]).abs().max().item() > 1e-3


def test_relative_tables_are_unique_per_layer_and_head():
    model = make("relpos")
    tables = [m.rel_pos for m in model.modules() if isinstance(m, MultiHeadAttention) and m.rel_pos is not None]
    assert len(tables) == 4  # encoder and decoder self-attention of both layers; not the encoder attention
    assert all(m.cross_attn.rel_pos is None for m in model.decoder.layers)
    assert [t.key_table.shape[0] for t in tables] == [2 * K + 1] * 2 + [K + 1] * 2
    assert len({t.key_table.data_ptr() for t in tables}) == 4
    a_k, _ = tables[0].edges(torch.tensor([0]), torch.tensor([1]))
    assert not torch.equal(a_k[0, 0, 0], a_k[0, 0, 1])  # heads have their own edge vectors


# ---- DiSAN ---------------------------------------------------------------------------------------------------------

def test_disan_heads_attend_only_forward_or_backward():
    model = make("disan")
    src, _ = batch()
    pad = src.eq(0)
    with torch.no_grad():
        h = model.encoder.embed(model.src_embed(src))
        for layer in model.encoder.layers:
            w = layer.self_attn.attention_weights(h, h, pad)  # [B,h,S,S]
            w = w.masked_fill(pad[:, None, :, None], 0)  # rows of padding queries are never read
            later = torch.ones(7, 7, dtype=torch.bool).triu(1)
            assert w[:, 0::2][..., later].abs().max() == 0  # forward heads: never a later key
            assert w[:, 1::2][..., later.T].abs().max() == 0  # backward heads: never an earlier key
            assert w[..., pad[:, None, None, :].expand_as(w) & ~pad[:, None, :, None]].abs().max() == 0
            real = ~pad[:, None, :, None] & ~pad[:, None, None, :]
            allowed = real & torch.stack([~later, ~later.T])[None]  # heads 0 and 1
            assert (w[allowed] > 0).all()
            h = layer(h, pad)
        plain = baseline(seed=0).encoder.layers[0].self_attn
        w = plain.attention_weights(h, h, pad)
        assert w[(real & later).expand_as(w)].min() > 0  # without the option every head looks both ways
    assert not any(layer.self_attn.directional for layer in model.decoder.layers)


@pytest.mark.parametrize("head,sees", [(0, "earlier"), (1, "later")])
def test_disan_head_output_depends_only_on_its_direction(head, sees):
    torch.manual_seed(0)
    attn = MultiHeadAttention(8, 2, directional=True).eval()
    with torch.no_grad():
        attn.out_proj.weight[:, 4 * (1 - head):4 * (2 - head)] = 0  # keep only `head`'s output
        x = torch.randn(1, 6, 8, generator=torch.Generator().manual_seed(4))
        changed = x.clone()
        changed[0, 3] += 1.0
        diff = (attn(x, x) - attn(changed, changed))[0].abs().amax(-1)
    blind = diff[:3] if sees == "earlier" else diff[4:]  # positions that cannot see position 3
    affected = diff[3:] if sees == "earlier" else diff[:4]
    assert blind.max().item() < 1e-6 and affected.min().item() > 1e-4


# ---- multi-column encoder ------------------------------------------------------------------------------------------

def test_multicolumn_memory_combines_both_columns_with_prenorm_rnn_layers():
    model = make("multicolumn")
    column = model.encoder
    assert isinstance(column, MultiColumnEncoder) and len(column.rnn.layers) == 2
    src, _ = batch()
    pad = src.eq(0)
    with torch.no_grad():
        x = column.embed(model.src_embed(src))
        san = x
        for layer in column.layers:
            san = layer(san, pad)
        h = x
        for layer in column.rnn.layers:
            r = layer.recurrence(layer.rnn_norm(h), pad)
            h = h + layer.proj(r)  # pre-norm, residual
            h = h + layer.ffn(layer.ffn_norm(h))
        rnn = column.rnn.final_norm(h)
        expected = column.combine(torch.cat([san, rnn], -1))
        assert (model.encode(src)["enc"] - expected).abs().max().item() < 1e-6
        r = column.rnn.layers[0].recurrence(x, pad)  # [B,S,2d]
        assert r.shape == (3, 7, 32) and r[pad].abs().max() == 0  # padding never enters
        prefix = column.rnn.layers[0].recurrence(x[2:, :3], pad[2:, :3])  # the first 3 of 7 tokens
        assert (prefix[0, :, :16] - r[2, :3, :16]).abs().max().item() < 1e-6  # forward GRU: left context only
        assert (prefix[0, :, 16:] - r[2, :3, 16:]).abs().max().item() > 1e-3  # backward GRU: right context


def _multicolumn_new(name):
    return name.startswith("encoder.rnn.") or name.startswith("encoder.combine.")


@pytest.mark.parametrize("name,is_new", [
    ("multicolumn", _multicolumn_new),
    ("relpos", lambda n: ".rel_pos." in n),
    ("disan", lambda n: False),
])
def test_init_from_baseline_leaves_only_the_additions_fresh(name, is_new):
    base = baseline()
    model = make(name, seed=2)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    fresh = init_from(model, base.state_dict())
    assert fresh == [n for n, _ in model.named_parameters() if is_new(n)]
    assert (len(fresh) > 0) == (name != "disan")
    base_params = dict(base.named_parameters())
    for n, p in model.named_parameters():
        assert torch.equal(p, before[n] if n in fresh else base_params[n])
    assert set(base_params) <= {n for n, _ in model.named_parameters()}  # shared parts keep the baseline's names


# ---- validation ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec,options,words", [
    (T, {"disan": True, "heads": 1}, ["'heads'", "even", "'disan'", "got 1"]),
    (T, {"disan": True, "d_model": 18, "heads": 3}, ["'heads'", "even", "'disan'", "got 3"]),
    (T, {"disan": "yes"}, ["'disan'", "expected bool"]),
    (T, {"rel_pos_k": -1}, ["'rel_pos_k'", ">= 0", "-1"]),
    (T, {"rel_pos_k": 2.0}, ["'rel_pos_k'", "expected int"]),
    (T, {"rnn_layers": 2}, ["'rnn_layers'", "encoder 'transformer'"]),
    (MC, {"rnn_layers": 0}, ["'rnn_layers'", "positive"]),
    (MC, {"rnn_layer": 2}, ["'rnn_layer'", "did you mean 'rnn_layers'"]),
    (R, {"rel_pos_k": -2}, ["'rel_pos_k'", ">= 0"]),
])
def test_option_errors_name_the_key(spec, options, words):
    assert_option_error({**SMALL, **spec, **options}, words)


def test_options_default_off_and_typed():
    spec = validate_model({**MC, "rel_pos_k": 16, "disan": True})
    o = spec.encoder_options
    assert (o.rel_pos_k, o.disan, o.rnn_layers, o.heads) == (16, True, 6, 8)
    assert spec.decoder_options.rel_pos_k == 16 and not hasattr(spec.decoder_options, "disan")  # encoder only
    enc, dec = validate_model(T).encoder_options, validate_model(T).decoder_options
    assert (enc.rel_pos_k, enc.disan, dec.rel_pos_k) == (0, False, 0)


# ---- parameter counts ----------------------------------------------------------------------------------------------

def relpos_formula(d, k, enc, dec):
    """Key and value tables [R,d]: R = 2k+1 in the encoder, k+1 in the causal decoder self-attention."""
    return enc * 2 * (2 * k + 1) * d + dec * 2 * (k + 1) * d


def multicolumn_formula(d, f, layers):
    """Per RNN layer: LN, bidirectional GRU 2(6d^2+6d), projection 2d^2+d, LN, FFN; final LN; combination."""
    gru, ffn, ln = 2 * (6 * d * d + 6 * d), 2 * d * f + f + d, 2 * d
    return layers * (ln + gru + 2 * d * d + d + ln + ffn) + ln + 2 * d * d + d


@pytest.mark.parametrize("name,added", [
    ("relpos", relpos_formula(16, K, 2, 2)),
    ("disan", 0),
    ("relpos-disan", relpos_formula(16, K, 2, 2)),
    ("multicolumn", multicolumn_formula(16, 24, 2)),
])
def test_small_parameter_counts(name, added):
    assert count_parameters(make(name)) == transformer_formula(16, 24, 2, 2, V_SRC, V_TGT) + added


@pytest.mark.parametrize("spec,added", [
    ({**T, "rel_pos_k": 16}, 307_200),
    ({**T, "disan": True}, 0),
    (MC, 35_196_416),
])
def test_paper_base_parameter_additions(spec, added):
    """Transformer-Base (d=512, 8 heads, 6+6 layers) with hao2019 5.3's settings: k=16, six RNN layers; three
    untied embedding tables on both sides of the difference (hao2019's presets)."""
    with torch.device("meta"):
        base = build_model(T, 32000, 32000)
        ours = build_model(spec, 32000, 32000)
    assert count_parameters(base) == transformer_formula(512, 2048, 6, 6, 32000, 32000)
    assert count_parameters(ours) - count_parameters(base) == added
    assert added == (relpos_formula(512, 16, 6, 6) if "rel_pos_k" in spec
                     else multicolumn_formula(512, 2048, 6) if spec["encoder"] == "multicolumn" else 0)
