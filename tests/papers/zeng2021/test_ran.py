"""zeng2021: RAN (eq. 3-4), its ablations (fixed A_0, plain transition, no positions) and the HC-SA / Syn-R
baselines: attention rows, the transition by hand, cached decoding, the length limit and parameter accounting."""
import pytest
import torch

from pipeline.errors import PipelineError
from pipeline.models import build_model, count_parameters
from pipeline.models.ran import GaussianPatterns, PatternAttention, RecurrentPatterns
from pipeline.beam_search import beam_search

torch.set_num_threads(1)

T = {"encoder": "transformer", "decoder": "transformer"}
SMALL = dict(T, d_model=16, ffn_dim=24, heads=2, enc_layers=2, dec_layers=3, dropout=0.0, ran_max_len=8)
V = 13


def make(seed=0, **options):
    """A seeded small transformer with the given self-attention options, in eval mode."""
    torch.manual_seed(seed)
    return build_model({**SMALL, **options}, V, V).eval()


def src_tgt():
    """src [2,6] (second row padded after 3) and tgt_in [2,5] (BOS first)."""
    g = torch.Generator().manual_seed(3)
    src = torch.randint(4, V, (2, 6), generator=g)
    src[1, 3:] = 0
    tgt = torch.randint(4, V, (2, 5), generator=g)
    tgt[:, 0] = 1
    return src, tgt


# ---- attention rows ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["ran", "synr", "hcsa"])
def test_rows_sum_to_one_and_ignore_padding_and_the_future(kind):
    model = make(enc_self_attn=kind, dec_self_attn=kind)
    x = torch.randn(2, 6, 16, generator=torch.Generator().manual_seed(1))
    pad = torch.tensor([[False] * 6, [False] * 3 + [True] * 3])
    enc_attn, dec_attn = model.encoder.layers[1].self_attn, model.decoder.layers[2].self_attn
    assert isinstance(enc_attn, PatternAttention) and isinstance(dec_attn, PatternAttention)
    with torch.no_grad():
        w = enc_attn.attention_weights(x, x, pad)  # [B,h,T,S]
        causal = dec_attn.attention_weights(x, x, causal=True)
    assert w.shape == (2, 2, 6, 6)
    assert torch.allclose(w.sum(-1), torch.ones(2, 2, 6), atol=1e-6)
    assert w[1, :, :, 3:].abs().max().item() == 0.0 and w[1, :, :, :3].min().item() > 0.0
    assert w[0].min().item() > 0.0  # no padding in row 0: every key gets weight
    future = torch.ones(6, 6, dtype=torch.bool).triu(1)
    assert causal[:, :, future].abs().max().item() == 0.0 and causal[:, :, ~future].min().item() > 0.0
    assert torch.allclose(causal.sum(-1), torch.ones(2, 2, 6), atol=1e-6)
    assert (w[0, 0] - w[0, 1]).abs().max().item() > 1e-3  # heads differ


def test_ran_rows_are_softmax_of_the_recurrent_matrices():
    model = make(enc_self_attn="ran")
    x = torch.randn(1, 5, 16)
    with torch.no_grad():
        a = model.encoder.patterns.tables()  # [L,h,M,M]
        for i, layer in enumerate(model.encoder.layers):
            expected = torch.softmax(a[i][:, :5, :5], dim=-1)  # A[:T, :S], no padding
            assert torch.allclose(layer.self_attn.attention_weights(x, x)[0], expected, atol=1e-6)
    assert not hasattr(model.encoder.layers[0].self_attn, "q_proj")  # no query/key projections


def test_hcsa_is_a_fixed_gaussian_around_the_given_centres():
    enc = GaussianPatterns(4, (-1, 1))
    pos = torch.arange(5)
    logits = enc.logits(0, pos, pos)
    assert logits.shape == (4, 5, 5)
    assert logits[0, 2].argmax().item() == 1 and logits[1, 2].argmax().item() == 3  # i-1, i+1 interleaved
    assert logits[2, 2].argmax().item() == 1 and logits[3, 2].argmax().item() == 3
    assert logits[1, 2, 4].item() == pytest.approx(-0.5)  # -(4-3)^2 / (2 * 1.0^2)
    dec = GaussianPatterns(2, (-1, 0))
    assert dec.logits(0, pos, pos)[1, 3].argmax().item() == 3 and dec.logits(0, pos, pos)[0, 3].argmax() == 2
    model = make(enc_self_attn="hcsa", dec_self_attn="hcsa")
    assert sum(p.numel() for p in model.encoder.patterns.parameters()) == 0  # not learnt
    weights = model.encoder.layers[0].self_attn.attention_weights(torch.zeros(1, 5, 16), torch.zeros(1, 5, 16))
    gauss = torch.exp(torch.tensor([-0.5, 0.0, -0.5, -2.0, -4.5]))  # head 0 (centre i-1) at query 2
    assert torch.allclose(weights[0, 0, 2], gauss / gauss.sum(), atol=1e-6)


# ---- transition (eq. 3-4) ------------------------------------------------------------------------------------------

def test_transition_follows_eq_3_4_by_hand_for_two_layers():
    torch.manual_seed(0)
    patterns = RecurrentPatterns(heads=2, max_len=4, layers=2)
    with torch.no_grad():
        patterns.transition.bias.normal_()
        patterns.norm.weight.uniform_(0.5, 1.5)
        patterns.norm.bias.normal_()
        w, b = patterns.transition.weight, patterns.transition.bias
        gamma, beta = patterns.norm.weight, patterns.norm.bias
        a = patterns.initial.clone()
        for layer_tables in patterns.tables():
            for k in range(2):  # every head, every row i: a vector over the M keys
                for i in range(4):
                    z = torch.tanh(w @ a[k, i] + b)  # eq. 3, inner part
                    mean = z.mean()
                    var = ((z - mean) ** 2).mean()
                    ln = (z - mean) / torch.sqrt(var + 1e-5) * gamma + beta
                    expected = a[k, i] + ln  # eq. 4
                    assert torch.allclose(layer_tables[k, i], expected, atol=1e-5)
            a = layer_tables
        assert (patterns.tables()[1] - patterns.tables()[0]).abs().max().item() > 1e-2


def test_transition_is_shared_across_heads_and_layers():
    model = make(enc_self_attn="ran", dec_self_attn="ran")
    names = [n for n, _ in model.named_parameters() if "patterns" in n]
    assert sorted(names) == sorted(f"{side}.patterns.{p}" for side in ("encoder", "decoder") for p in (
        "initial", "transition.weight", "transition.bias", "norm.weight", "norm.bias"))
    enc = model.encoder.patterns
    assert enc.initial.shape == (2, 8, 8) and enc.transition.weight.shape == (8, 8)
    assert model.encoder.patterns.transition is not model.decoder.patterns.transition  # one module per side
    calls = []
    model.encoder.patterns.transition.register_forward_hook(lambda _m, inputs, _o: calls.append(inputs[0].shape))
    with torch.no_grad():
        model.encode(src_tgt()[0])
    assert calls == [(2, 8, 8)] * 2  # one call per layer, all heads at once


def test_plain_transition_drops_ln_and_residual():
    ln_res = make(enc_self_attn="ran")
    plain = make(enc_self_attn="ran", ran_transition="plain")
    assert plain.encoder.patterns.norm is None
    assert count_parameters(ln_res) - count_parameters(plain) == 2 * 8  # LN weight and bias over M
    with torch.no_grad():
        p = plain.encoder.patterns
        expected = torch.tanh(p.transition(torch.tanh(p.transition(p.initial))))
        assert torch.allclose(p.tables()[1], expected, atol=1e-6)
        p.load_state_dict({k: v for k, v in ln_res.encoder.patterns.state_dict().items() if "norm" not in k})
        assert (p.tables() - ln_res.encoder.patterns.tables()).abs().max().item() > 1e-2


def test_fixed_initial_matrices_get_no_gradient_but_the_transition_does():
    model = make(enc_self_attn="ran", dec_self_attn="ran", ran_fixed=True).train()
    initial = model.encoder.patterns.initial.detach().clone()
    src, tgt = src_tgt()
    model(src, tgt).logsumexp(-1).sum().backward()
    for side in (model.encoder.patterns, model.decoder.patterns):
        assert not side.initial.requires_grad and side.initial.grad is None
        assert side.transition.weight.grad.abs().sum() > 0
    assert torch.equal(model.encoder.patterns.initial, initial)
    trained = make(enc_self_attn="ran").train()
    trained(src, tgt).logsumexp(-1).sum().backward()
    assert trained.encoder.patterns.initial.grad.abs().sum() > 0


# ---- decoding ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["ran", "synr"])
def test_incremental_decoding_computes_the_matrices_once(kind):
    model = make(enc_self_attn=kind, dec_self_attn=kind)
    src, tgt = src_tgt()
    calls = []
    if kind == "ran":
        model.decoder.patterns.transition.register_forward_hook(lambda *_: calls.append(1))
    else:
        original = model.decoder.patterns.tables
        model.decoder.patterns.tables = lambda: calls.append(1) or original()
    with torch.no_grad():
        full = model(src, tgt)
        assert len(calls) == (3 if kind == "ran" else 1)
        calls.clear()
        memory, state, steps = model.encode(src), None, []
        for t in range(1, 6):
            logits, state = model.decode_step(tgt[:, :t], memory, state)
            steps.append(logits)
    assert len(calls) == (3 if kind == "ran" else 1)  # layers, not layers x steps
    assert (torch.stack(steps, 1) - full).abs().max().item() < 1e-5
    cached = state["shared:dec_patterns"]
    assert cached.shape == (3, 2, 8, 8)  # no batch dimension: one copy for all hypotheses
    assert state["dec2.self.v"].shape == (2, 2, 5, 8) and "dec2.self.k" not in state


def test_beam_search_keeps_the_shared_matrices_and_matches_greedy_scores():
    model = make(enc_self_attn="ran", dec_self_attn="ran")
    src, _ = src_tgt()
    with torch.no_grad():
        memory = model.encode(src)
        state = model.decode_step(torch.ones(2, 1, dtype=torch.long), memory, None)[1]
        order = torch.tensor([1, 1, 0])
        moved = model.reorder_state(state, order)
        assert moved["shared:dec_patterns"] is state["shared:dec_patterns"]
        # the cached values take their new rows as the next step appends to them (layers.append_step)
        after = model.decode_step(torch.ones(3, 2, dtype=torch.long), model.reorder_memory(memory, order), moved)[1]
        assert torch.equal(after["dec0.self.v"][:, :, :1], state["dec0.self.v"][order])
        assert after["dec0.self.v"].shape[::2] == (3, 2) and "shared:pending_order" not in after
        hyps = beam_search(model, src, beam=3, max_len_b=4)
    assert len(hyps) == 2 and all(len(h) <= 7 for h in hyps)


def test_length_beyond_ran_max_len_names_the_option():
    model = make(enc_self_attn="ran", dec_self_attn="ran")
    assert model.max_output_len == 7
    long_src = torch.full((1, 9), 5)
    with pytest.raises(PipelineError, match="ran_max_len"):
        model.encode(long_src)
    model.encode(long_src[:, :8])  # M positions are fine
    memory = model.encode(long_src[:, :4])
    with pytest.raises(PipelineError, match="ran_max_len"):
        model.decode_step(torch.ones(1, 9, dtype=torch.long), memory, None)
    with pytest.raises(PipelineError, match="ran_max_len"):
        make(dec_self_attn="synr")(long_src[:, :4], torch.ones(1, 9, dtype=torch.long))
    assert make(enc_self_attn="hcsa", dec_self_attn="hcsa").encode(long_src)["enc"].shape == (1, 9, 16)


def test_training_drops_and_translation_truncates_what_does_not_fit_the_matrices(tmp_path):
    from pipeline.data.token_store import Pairs
    from pipeline.train import Recipe, fit, within_length
    from pipeline.translate import fit_sources

    model = make(enc_self_attn="ran", dec_self_attn="ran")
    assert model.max_input_len == 8
    assert make().max_input_len == make(enc_self_attn="hcsa").max_input_len == 1024
    pairs = Pairs.of(([[5] * 7, [5] * 8, [5] * 3], [[6] * 3, [6] * 3, [6] * 7]))  # + EOS / BOS: 8, 9 (too long), 8
    kept, dropped = within_length(pairs, 8)
    assert (kept.lists(), dropped) == (([[5] * 7, [5] * 3], [[6] * 3, [6] * 7]), 1)
    assert within_length(pairs, None) == (pairs, 0)
    with pytest.raises(PipelineError, match="8 positions"):
        within_length(Pairs.of(([[5] * 9], [[6]])), 8)
    assert fit_sources([[5] * 9 + [2], [5, 2]], 8) == [[5] * 7 + [2], [5, 2]]  # EOS kept
    recipe = Recipe.from_dict({"lr": 0.001, "warmup": 1, "max_steps": 2, "batch_size": 40, "seed": 1,
                               "checkpoint_every": 2, "valid_every": 2})
    spec = {**SMALL, "enc_self_attn": "ran", "dec_self_attn": "ran"}
    meta = {"model": spec, "src_vocab_size": V, "tgt_vocab_size": V}
    summary = fit(model.train(), pairs, pairs, recipe, run_dir=tmp_path / "run", out_dir=tmp_path / "out",
                  curves_dir=tmp_path / "curves", meta=meta, progress=False)
    assert summary["dropped_too_long"] == {"train": 1, "valid": 1, "limit": 8}


# ---- positions (Table 2) -------------------------------------------------------------------------------------------

def test_positions_can_be_dropped_per_side():
    src, tgt = src_tgt()
    with torch.no_grad():
        base, no_enc, no_dec = (make(seed=1, **o) for o in ({}, {"enc_positions": False}, {"dec_positions": False}))
        assert torch.equal(base.encode(src)["enc"], no_dec.encode(src)["enc"])
        assert (base.encode(src)["enc"] - no_enc.encode(src)["enc"]).abs().max().item() > 1e-3
        assert (base(src, tgt) - no_dec(src, tgt)).abs().max().item() > 1e-3
        # without encoder positions and with dot attention, permuting the source permutes the states
        perm = torch.tensor([2, 0, 1, 5, 4, 3])
        h = no_enc.encode(src[:1])["enc"]
        assert torch.allclose(no_enc.encode(src[:1, perm])["enc"], h[:, perm], atol=1e-5)
        ran = make(seed=1, enc_positions=False, enc_self_attn="ran")
        h = ran.encode(src[:1])["enc"]
        assert (ran.encode(src[:1, perm])["enc"] - h[:, perm]).abs().max().item() > 1e-3  # RAN knows order
        memory, state, steps = no_dec.encode(src), None, []
        for t in range(1, 6):
            logits, state = no_dec.decode_step(tgt[:, :t], memory, state)
            steps.append(logits)
        assert (torch.stack(steps, 1) - no_dec(src, tgt)).abs().max().item() < 1e-5


# ---- parameters and options ----------------------------------------------------------------------------------------

def test_paper_scale_ran_all_saves_the_qk_projections_minus_the_matrices():
    """zeng2021 3.1: Transformer Base, one joint 40K vocabulary shared by all three tables (En-De, En-Fr)."""
    d, heads, layers, m = 512, 8, 6, 256
    base = {**T, "share_embeddings": True}
    with torch.device("meta"):
        transf = build_model(base, 40000, 40000)
        ran_all = build_model({**base, "enc_self_attn": "ran", "dec_self_attn": "ran"}, 40000, 40000)
        ran_e = build_model({**base, "enc_self_attn": "ran"}, 40000, 40000)
    qk = 2 * (d * d + d)  # query and key projections of one self-attention layer
    per_side = heads * m * m + m * m + m + 2 * m  # A_0, W, b, LN
    expected = (layers + layers) * qk - 2 * per_side
    assert expected == 5_122_560
    assert count_parameters(transf) - count_parameters(ran_all) == expected
    assert count_parameters(transf) - count_parameters(ran_e) == layers * qk - per_side
    assert count_parameters(transf) == 44_138_496 + 40000 * d  # one table; transformer_formula in model_variants


def test_small_synr_and_hcsa_parameter_counts():
    base = count_parameters(make())
    qk = 2 * (16 * 16 + 16)
    synr = count_parameters(make(enc_self_attn="synr", dec_self_attn="synr"))
    hcsa = count_parameters(make(enc_self_attn="hcsa", dec_self_attn="hcsa"))
    assert base - hcsa == 5 * qk
    assert synr - hcsa == 5 * 2 * 8 * 8  # one [h,M,M] table per layer, 2+3 layers


@pytest.mark.parametrize("options,words", [
    ({"enc_self_attn": "rand"}, ["'enc_self_attn'", "'ran'", "'synr'"]),
    ({"ran_transition": "ffn"}, ["'ran_transition'", "'ln_res' | 'plain'"]),
    ({"ran_max_len": 0}, ["'ran_max_len'", "positive"]),
    ({"ran_attention_dropout": 1.0}, ["'ran_attention_dropout'", "[0, 1)"]),
    ({"enc_positions": "no"}, ["'enc_positions'", "bool"]),
    ({"dec_self_attn": "ran", "rel_pos_k": 4}, ["'rel_pos_k'", "'dot'"]),
    ({"enc_self_attn": "hcsa", "disan": True}, ["'disan'", "enc_self_attn"]),
])
def test_option_errors_name_the_key(options, words):
    with pytest.raises(PipelineError) as info:
        build_model({**SMALL, **options}, V, V)
    assert all(w in str(info.value) for w in words), str(info.value)


def _dropouts(model):
    """Dropout probability of every attention module: {(side, layer, "self" | "cross"): p}."""
    out = {}
    for side, part in (("enc", model.encoder), ("dec", model.decoder)):
        for i, layer in enumerate(part.layers):
            out[side, i, "self"] = layer.self_attn.dropout.p
            if hasattr(layer, "cross_attn"):
                out[side, i, "cross"] = layer.cross_attn.dropout.p
    return out


@pytest.mark.parametrize("options,scope,ran,other", [
    # lemon0830/RAN passes one --attention-dropout to every attention module, self and cross, of any type
    ({"enc_self_attn": "ran"}, "all", 0.2, 0.2),  # RAN-E: the dot-product decoder too
    ({"dec_self_attn": "ran"}, "all", 0.2, 0.2),
    ({"enc_self_attn": "hcsa", "dec_self_attn": "hcsa"}, "all", 0.2, 0.2),
    ({"enc_self_attn": "ran"}, "patterns", 0.2, 0.05),  # only the pattern self-attention; others attention_dropout
    ({}, "all", None, 0.05),  # TransF: no patterns, ran_attention_dropout unused
])
def test_ran_attention_dropout_reaches_the_modules_its_scope_names(options, scope, ran, other):
    model = make(attention_dropout=0.05, ran_attention_dropout=0.2, ran_attention_dropout_scope=scope, **options)
    kinds = {"enc": model.spec.encoder_options.enc_self_attn, "dec": model.spec.decoder_options.dec_self_attn}
    for (side, _, what), p in _dropouts(model).items():
        is_pattern = what == "self" and kinds[side] != "dot"
        assert p == (ran if is_pattern else other), (side, what, p)


def test_attention_dropout_acts_on_the_cross_attention_in_training():
    src, tgt = src_tgt()
    for scope, changes in (("all", True), ("patterns", False)):
        model = make(enc_self_attn="ran", ran_attention_dropout=0.5, ran_attention_dropout_scope=scope).train()
        with torch.no_grad():
            memory = model.encode(src)  # the same memory for both calls: only the decoder's dropout differs
            torch.manual_seed(0)
            first = model.decoder(model.tgt_embed(tgt), memory)
            torch.manual_seed(1)
            second = model.decoder(model.tgt_embed(tgt), memory)
        assert ((first - second).abs().max().item() > 1e-4) == changes, scope


def test_init_from_a_baseline_leaves_only_the_patterns_fresh():
    from pipeline.models import init_from
    baseline = make(seed=1)
    model = make(seed=2, enc_self_attn="ran", dec_self_attn="ran")
    fresh = init_from(model, baseline.state_dict())
    assert fresh and all(".patterns." in n for n in fresh)
    v_proj = model.encoder.layers[0].self_attn.v_proj.weight
    assert torch.equal(v_proj, baseline.encoder.layers[0].self_attn.v_proj.weight)
