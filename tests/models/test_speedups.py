"""The GPU speed-ups (pipeline/speedups.py) compute the same function as the portable path: checked here on the CPU
by turning them on for it (speedups.only(..., cpu=True)); by default the CPU never takes one."""
import pytest
import torch

from pipeline import speedups
from pipeline.errors import PipelineError
from pipeline.loss import smoothed_loss
from model_variants import V_SRC, V_TGT, batch, make

torch.set_num_threads(1)


def test_settings_parse_names_and_refuse_unknown_ones():
    every = frozenset(speedups.SPEEDUPS)
    assert speedups.parse("") == speedups.parse("default") == {"no_sync", "native_dropout", "static_search"}
    assert speedups.parse("all") == every and speedups.parse("none") == frozenset()
    assert speedups.parse("-no_sync, +compile") == {"native_dropout", "static_search", "compile"}
    assert speedups.parse("no_sync") == {"no_sync"}
    with pytest.raises(PipelineError, match="unknown speed-up.*compiled.*expected"):
        speedups.parse("-compiled")
    with pytest.raises(PipelineError, match="not both"):
        speedups.parse("no_sync,-compile")


def test_the_cpu_takes_no_speed_up_by_default():
    cpu = torch.zeros(1)
    assert not any(speedups.enabled(name, cpu) for name in speedups.SPEEDUPS)
    assert speedups.enabled("compile", torch.device("cuda", 0)) == ("compile" in speedups.parse(
        __import__("os").environ.get(speedups.ENV)))


def _loss_and_grads(model, src, tgt, target):
    model.zero_grad(set_to_none=True)
    features = model.features(src, tgt)
    loss, nll, n = smoothed_loss(features.reshape(-1, features.size(-1)), model.output_layer, target.reshape(-1), 0.1)
    loss.backward()
    return loss.detach(), nll, int(n), {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("names", [{"fused_qkv"}, {"no_sync"}, {"native_dropout"}, {"bf16_residual"},
                                   {"fused_qkv", "no_sync", "bf16_residual"}])
def test_training_speed_ups_compute_the_same_loss_and_gradients(names):
    """float64 and no dropout: fused projections and the masked loss may only reorder sums."""
    model = make("transformer", dropout=0.0, attention_dropout=0.0).double().train()
    src, tgt = batch()
    target = torch.cat([tgt[:, 1:], torch.zeros(tgt.size(0), 1, dtype=torch.long)], 1)  # PAD rows included
    reference = _loss_and_grads(model, src, tgt, target)
    with speedups.only(names, cpu=True):
        fast = _loss_and_grads(model, src, tgt, target)
    assert fast[2] == reference[2] == int(target.ne(0).sum())
    for a, b in zip(fast[:2], reference[:2]):
        assert a.item() == pytest.approx(b.item(), rel=1e-12)
    assert fast[3].keys() == reference[3].keys()
    for key, grad in reference[3].items():
        assert torch.allclose(fast[3][key], grad, rtol=1e-10, atol=1e-12), key


def test_native_dropout_keeps_expectations():
    from pipeline.models.layers import Dropout
    drop = Dropout(0.25).train()
    x = torch.ones(200_000)
    with speedups.only({"native_dropout"}, cpu=True):
        y = drop(x)
    assert torch.unique(y).tolist() == [0.0, pytest.approx(1 / 0.75)]
    assert y.eq(0).float().mean().item() == pytest.approx(0.25, abs=0.005)


def test_bf16_residual_returns_bfloat16_under_autocast_only():
    from pipeline.models.layers import LayerNorm
    norm, x = LayerNorm(8), torch.randn(3, 8)
    with speedups.only({"bf16_residual"}, cpu=True):
        assert norm(x).dtype == torch.float32
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = norm(x)
    assert out.dtype == torch.bfloat16
    assert torch.allclose(out.float(), torch.nn.functional.layer_norm(x, (8,)), atol=0.02)


@pytest.mark.slow
def test_compiled_layers_compute_the_same_function():
    """torch.compile of the Transformer layers (dynamic shapes): the same outputs and gradients, two batch shapes
    through one compilation."""
    model = make("transformer", dropout=0.0, attention_dropout=0.0).train()
    for seed in (1, 2):
        src, tgt = batch(seed=seed)
        if seed == 2:
            src, tgt = src[:2], tgt[:2, :5]
        target = torch.cat([tgt[:, 1:], torch.zeros(tgt.size(0), 1, dtype=torch.long)], 1)
        reference = _loss_and_grads(model, src, tgt, target)
        with speedups.only({"compile"}, cpu=True):
            fast = _loss_and_grads(model, src, tgt, target)
        assert fast[0].item() == pytest.approx(reference[0].item(), rel=1e-5)
        for key, grad in reference[3].items():
            assert torch.allclose(fast[3][key], grad, rtol=1e-4, atol=1e-6), key
    assert "_compiled_twin" in model.encoder.layers[0].__dict__
    assert "_compiled_twin" not in str(model.state_dict().keys())


def test_fused_projections_leave_beam_search_unchanged():
    """float32 hypotheses and scores of the same model with and without the incremental fused projections."""
    from pipeline.beam_search import beam_search_nbest
    from model_variants import sources
    model = make("transformer")
    src = sources(V_SRC)
    reference = beam_search_nbest(model, src, nbest=2, beam=3)
    with speedups.only({"fused_qkv", "no_sync"}, cpu=True):
        fast = beam_search_nbest(model, src, nbest=2, beam=3)
    assert [[h for _, h in hyps] for hyps in fast] == [[h for _, h in hyps] for hyps in reference]
    assert [s for hyps in fast for s, _ in hyps] == pytest.approx([s for hyps in reference for s, _ in hyps], rel=1e-5)


@pytest.mark.parametrize("length,nbest", [("penalty", 1), ("normalize", 3), ("none", 2)])
def test_static_search_finds_the_eager_search_hypotheses(length, nbest):
    """float32 on the CPU (no graph there): the same n-best lists, scores to rounding, sentences of different
    lengths finishing at different steps."""
    from pipeline import static_search
    from pipeline.beam_search import beam_search_nbest
    from model_variants import sources
    model = make("transformer")
    assert static_search.supports(model) and not static_search.supports(make("relpos"))
    src = sources(V_SRC, lengths=(4, 2, 6, 5), seed=4)
    reference = beam_search_nbest(model, src, nbest=nbest, beam=4, length=length, max_len_a=1.5, max_len_b=3)
    with speedups.only({"static_search"}, cpu=True):
        fast = beam_search_nbest(model, src, nbest=nbest, beam=4, length=length, max_len_a=1.5, max_len_b=3)
    assert [[h for _, h in hyps] for hyps in fast] == [[h for _, h in hyps] for hyps in reference]
    assert [s for hyps in fast for s, _ in hyps] == pytest.approx([s for hyps in reference for s, _ in hyps], rel=1e-5)
