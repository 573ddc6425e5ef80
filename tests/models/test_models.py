"""Invariants of every model variant (Transformer, hao2019 recurrence models, RelPos, DiSAN, multi-column, zeng2021's
patterns, the RNN encoder-decoders): incremental = full pass, causality, padding, a gradient for every parameter; the
encoder/decoder composition and its specs; embedding tables, option validation and the Transformer's exact parameter
count. The copy task: tests/models/test_copy_task.py; hao2019's equations, warm start and counts:
tests/papers/hao2019/test_hao2019_models.py. Shared variants and helpers: tests/model_variants.py."""
import dataclasses
import subprocess
import sys

import pytest
import torch
from model_variants import (R, SMALL, SRC_LENS, T, TGT_LENS, VARIANTS, V_SRC, V_TGT, assert_causal, assert_option_error,
                            batch, make, transformer_formula)
from torch import nn

from pipeline.data.vocab import PAD
from pipeline.errors import PipelineError
from pipeline.models import ENCODERS, build_model, count_parameters, validate_model
from pipeline.models.layers import MultiHeadAttention

torch.set_num_threads(1)


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
    assert_causal(model, *batch())


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


def test_a_kind_name_is_registered_once(bag_of_words):
    from pipeline.models.options import EncoderOptions, register_encoder_options
    from pipeline.models.seq2seq import Encoder, register_encoder

    register_encoder("test-bow")(bag_of_words)   # the same class again (its module imported twice) is no clash
    with pytest.raises(PipelineError, match=r"encoder 'test-bow': registered twice \(BowEncoder and Other\); "
                                            r"expected one encoder per name"):
        register_encoder("test-bow")(type("Other", (Encoder,), {}))
    with pytest.raises(PipelineError, match=r"encoder options 'test-bow': registered twice \(BowOptions and Other\)"):
        register_encoder_options("test-bow")(dataclasses.make_dataclass("Other", [], bases=(EncoderOptions,)))
    with pytest.raises(PipelineError, match=r"unknown encoder 'test-bwo' \(did you mean 'test-bow'\?\)"):
        ENCODERS.lookup("test-bwo")

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
@pytest.mark.parametrize("shared,tied", [(False, False), (False, True), (True, False)])
def test_paper_base_transformer_parameter_count(shared, tied):
    with torch.device("meta"):  # paper scale without allocating memory
        model = build_model({**T, "share_embeddings": shared, "tie_output": tied}, 32000, 32000)
    assert count_parameters(model) == transformer_formula(512, 2048, 6, 6, 32000, 32000, shared, tied)

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
    assert_option_error({**SMALL, **spec, **options}, words)


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
