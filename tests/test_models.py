"""Invariants of every model variant (Transformer, hao2019 recurrence models, RelPos, DiSAN, multi-column):
incremental = full pass, causality, padding,
the decoder integration equations, warm start, option validation and exact parameter counts."""
import pytest
import torch

from pipeline.errors import PipelineError
from pipeline.models import ARCHITECTURES, build_model, count_parameters, init_from
from pipeline.models.layers import MultiHeadAttention
from pipeline.models.recurrence import GatedDecoderLayer, StackDecoderLayer
from pipeline.models.transformer import DecoderLayer

torch.set_num_threads(1)

SMALL = dict(d_model=16, ffn_dim=24, heads=2, enc_layers=2, dec_layers=2, dropout=0.1, attention_dropout=0.1)
VARIANTS = {
    "transformer": ("transformer", {}),
    "transformer-shared": ("transformer", {"share_embeddings": True}),
    "transformer-tied": ("transformer", {"tie_output": True}),
    "biarn-stack-top": ("recurrence", {}),
    "biarn-gated-top": ("recurrence", {"integration": "gated"}),
    "biarn2-stack-all": ("recurrence", {"rec_layers": 2, "integrate_into": "all", "rec_steps": 3}),
    "biarnJ2-gated-all": ("recurrence", {"rec_steps": 0, "rec_layers": 2, "integration": "gated",
                                         "integrate_into": "all"}),
    "birnn-stack-top": ("recurrence", {"rec_type": "birnn"}),
    "birnn2-gated-all": ("recurrence", {"rec_type": "birnn", "rec_layers": 2, "integration": "gated",
                                        "integrate_into": "all"}),
    # hao2019 Table 4's related approaches (tests/test_related_models.py checks what defines them)
    "relpos": ("transformer", {"rel_pos_k": 4}),
    "disan": ("transformer", {"disan": True}),
    "relpos-disan": ("transformer", {"rel_pos_k": 4, "disan": True}),
    "multicolumn": ("multicolumn", {"rnn_layers": 2}),
    "biarn-relpos": ("recurrence", {"rel_pos_k": 4, "rec_steps": 3}),
    # zeng2021 (tests/test_ran.py checks what defines them)
    "ran-e": ("transformer", {"enc_self_attn": "ran", "ran_max_len": 16, "ran_attention_dropout": 0.1}),
    "ran-d": ("transformer", {"dec_self_attn": "ran", "ran_max_len": 16}),
    "ran-all": ("transformer", {"enc_self_attn": "ran", "dec_self_attn": "ran", "ran_max_len": 16}),
    "hcsa": ("transformer", {"enc_self_attn": "hcsa", "dec_self_attn": "hcsa"}),
    "synr": ("transformer", {"enc_self_attn": "synr", "dec_self_attn": "synr", "ran_max_len": 16}),
}
V_SRC, V_TGT = 11, 13
SRC_LENS, TGT_LENS = [5, 3, 7], [4, 6, 2]


def make(name, seed=0, **override):
    """A seeded small model of a variant, in eval mode."""
    arch, extra = VARIANTS[name]
    torch.manual_seed(seed)
    v_src = V_TGT if extra.get("share_embeddings") else V_SRC
    return build_model(arch, {**SMALL, **extra, **override}, v_src, V_TGT).eval()


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
        x, pad = model.embed(model.src_embed, src), src.eq(0)
        h = x
        for i, layer in enumerate(model.rec_encoder.layers):
            r, _ = layer.rec(h, pad)
            c = layer.rec_norm(r + h if i > 0 else r)  # eq. 7, no residual in the bottom layer
            expected = layer.ffn_norm(c + layer.ffn(c))  # eq. 8
            out, _ = layer(h, pad)
            assert (out - expected).abs().max().item() < 1e-6
            h = out
        assert (model.encode(src)["rec"] - h).abs().max().item() < 1e-6


def _sublayers(layer, x, memory):
    """C and D of eq. 4-5, computed from the layer's modules."""
    c = layer.self_norm(x + layer.self_attn(x, x, causal=True))
    d = layer.cross_norm(c + layer.cross_attn(c, memory["enc"], memory["enc_pad"]))
    return c, d


def test_stack_top_follows_eq_18_19_with_query_d():
    model = make("biarn-stack-top")
    src, _ = batch()
    top = model.decoder_layers[-1]
    assert isinstance(top, StackDecoderLayer)
    assert type(model.decoder_layers[0]) is DecoderLayer  # top only (short-cut)
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
    top = model.decoder_layers[-1]
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
    for layer in model.decoder_layers:
        if isinstance(layer, GatedDecoderLayer):
            layer.gate.register_forward_hook(lambda _m, _i, out: gates.append(torch.sigmoid(out)))  # eq. 17
    logits = model(src, tgt)
    torch.nn.functional.cross_entropy(logits.view(-1, V_TGT), tgt.roll(-1, 1).view(-1)).backward()
    lam = torch.cat([g.flatten() for g in gates])
    assert gates and 0.0 < lam.min().item() and lam.max().item() < 1.0
    assert 0.05 < lam.std().item() or lam.numel() == 1  # element-wise, not one constant
    grads = {part: sum(p.grad.abs().sum().item() for n, p in model.named_parameters() if n.startswith(part))
             for part in ("encoder_layers.", "rec_encoder.")}
    assert grads["encoder_layers."] > 0 and grads["rec_encoder."] > 0, grads


def test_integrate_into_all_puts_recurrence_attention_in_every_layer():
    model = make("biarn2-stack-all")
    assert all(isinstance(layer, StackDecoderLayer) for layer in model.decoder_layers)
    assert all(isinstance(layer, GatedDecoderLayer) for layer in make("birnn2-gated-all").decoder_layers)


def _is_new(name):
    return name.startswith("rec_encoder.") or any(f".{k}." in name for k in ("rec_attn", "rec_norm", "gate"))


@pytest.mark.parametrize("name", ["biarn-stack-top", "birnn2-gated-all"])
def test_init_from_copies_the_baseline_and_reports_only_new_parameters(name):
    baseline = make("transformer", seed=1)
    model = make(name, seed=2)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    fresh = init_from(model, baseline.state_dict())
    base = dict(baseline.named_parameters())
    new = [n for n, _ in model.named_parameters() if _is_new(n)]
    assert fresh == new and any(n.startswith("rec_encoder.") for n in fresh)
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


@pytest.mark.parametrize("name", VARIANTS)
def test_every_parameter_gets_a_gradient(name):
    """No unused parameters (DDP would refuse them)."""
    model = make(name).train()
    src, tgt = batch()
    logits = model(src, tgt)
    torch.nn.functional.cross_entropy(logits.view(-1, V_TGT), tgt.roll(-1, 1).view(-1)).backward()
    dead = [n for n, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert dead == []


def test_tying_and_sharing():
    shared, tied, plain = make("transformer-shared"), make("transformer-tied"), make("transformer")
    assert shared.src_embed is shared.tgt_embed and shared.output_proj.weight is shared.src_embed.weight
    assert tied.output_proj.weight is tied.tgt_embed.weight and tied.src_embed is not tied.tgt_embed
    assert plain.output_proj.weight is not plain.tgt_embed.weight
    assert count_parameters(plain) - count_parameters(tied) == V_TGT * 16
    assert plain.src_embed.weight[0].abs().sum() == 0  # PAD row


def test_seeded_construction_is_deterministic():
    a, b = make("biarn-stack-top", seed=3), make("biarn-stack-top", seed=3)
    assert all(torch.equal(a.state_dict()[k], b.state_dict()[k]) for k in a.state_dict())


# ---- parameter counts ----------------------------------------------------------------------------------------------

def transformer_formula(d, f, enc, dec, v_src, v_tgt, shared=False, tied=False):
    """Parameters of the post-LN Transformer: attention 4(d^2+d), FFN 2df+f+d, LayerNorm 2d; no output bias."""
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
        model = build_model("transformer", {"share_embeddings": shared, "tie_output": tied}, 32000, 32000)
    assert count_parameters(model) == transformer_formula(512, 2048, 6, 6, 32000, 32000, shared, tied)


def test_paper_base_biarn_adds_about_9_4m_parameters():
    """Table 3 reports +9.4M for the 1-layer BiARN on Base; our choices give 9,456,640 (within 1%)."""
    with torch.device("meta"):
        base = build_model("transformer", {}, 30000, 30000)
        ours = build_model("recurrence", {}, 30000, 30000)
    added = count_parameters(ours) - count_parameters(base)
    assert added == recurrence_formula(512, 2048, 6) == 9_456_640
    assert abs(added - 9.4e6) / 9.4e6 < 0.01


@pytest.mark.parametrize("name", [n for n in VARIANTS if VARIANTS[n][0] == "recurrence"
                                  and "rel_pos_k" not in VARIANTS[n][1]])  # RelPos counts: test_related_models
def test_small_recurrence_parameter_counts(name):
    _, extra = VARIANTS[name]
    model = make(name)
    expected = transformer_formula(16, 24, 2, 2, V_SRC, V_TGT) + recurrence_formula(
        16, 24, 2, extra.get("rec_type", "biarn"), extra.get("rec_layers", 1), extra.get("integration", "stack"),
        extra.get("integrate_into", "top"))
    assert count_parameters(model) == expected


# ---- validation ----------------------------------------------------------------------------------------------------

def error(arch, options, v_src=V_SRC, v_tgt=V_TGT):
    with pytest.raises(PipelineError) as info:
        build_model(arch, options, v_src, v_tgt)
    return str(info.value)


def test_unknown_architecture_lists_the_known_ones():
    message = error("transfomer", {})
    assert "transfomer" in message and all(a in message for a in ARCHITECTURES)


@pytest.mark.parametrize("arch,options,words", [
    ("transformer", {"d_modle": 16}, ["'d_modle'", "did you mean 'd_model'"]),
    ("transformer", {"rec_type": "biarn"}, ["'rec_type'", "transformer"]),
    ("transformer", {"heads": "8"}, ["'heads'", "expected int"]),
    ("transformer", {"heads": True}, ["'heads'", "expected int"]),
    ("transformer", {"dropout": "0.1"}, ["'dropout'", "expected float"]),
    ("transformer", {"share_embeddings": 1}, ["'share_embeddings'", "expected bool"]),
    ("recurrence", {"rec_type": "lstm"}, ["'rec_type'", "'biarn' | 'birnn'"]),
    ("recurrence", {"integrate_into": "bottom"}, ["'integrate_into'", "'top' | 'all'"]),
    ("recurrence", {"rec_steps": 2.0}, ["'rec_steps'", "expected int"]),
    ("transformer", {"d_model": 16, "heads": 3}, ["'heads'", "divisor of d_model=16"]),
    ("transformer", {"dropout": 1.5}, ["'dropout'", "[0, 1)"]),
    ("transformer", {"enc_layers": 0}, ["'enc_layers'", "positive"]),
    ("recurrence", {"rec_steps": -1}, ["'rec_steps'", ">= 0"]),
    ("recurrence", {"rec_layers": 0}, ["'rec_layers'", "positive"]),
])
def test_option_errors_name_the_key(arch, options, words):
    message = error(arch, {**SMALL, **options})
    assert all(w in message for w in words), message


def test_share_embeddings_needs_one_vocabulary():
    message = error("transformer", {**SMALL, "share_embeddings": True}, 11, 13)
    assert "'share_embeddings'" in message and "11" in message and "13" in message


def test_options_are_typed():
    model = build_model("recurrence", {**SMALL, "dropout": 0, "rec_steps": 4}, V_SRC, V_TGT)
    assert isinstance(model.options.dropout, float) and model.options.dropout == 0.0
    assert model.options.rec_steps == 4 and model.options.integration == "stack"


def test_too_long_sequences_name_max_positions():
    model = make("transformer", max_positions=6)
    src, tgt = batch()
    with pytest.raises(PipelineError, match="max_positions"):
        model(src, tgt)  # source of 7 positions
    memory = model.encode(src[:, :6])
    with pytest.raises(PipelineError, match="max_positions"):
        model.decode_step(torch.ones(3, 7, dtype=torch.long), memory, None)
    assert model.max_output_len == 5


def test_attention_ignores_padding_keys_exactly():
    torch.manual_seed(0)
    attn = MultiHeadAttention(8, 2).eval()
    q, k = torch.randn(1, 2, 8), torch.randn(1, 3, 8)
    padded = torch.cat([k, torch.randn(1, 2, 8) * 100], dim=1)
    pad = torch.tensor([[False, False, False, True, True]])
    assert (attn(q, k) - attn(q, padded, pad)).abs().max().item() < 1e-6
    assert (attn(q, k) - attn(q, padded)).abs().max().item() > 1e-3
