"""What makes training and decoding fast: bfloat16 autocast chosen in the recipe, the cheap dropout masks, the fused
attention kernel (GPUs) and the fused-q/k/v Xavier initialisation; checked on values."""
import math

import pytest
import torch

from pipeline.errors import PipelineError
from pipeline.models import build_model
from pipeline.models.layers import Dropout, MultiHeadAttention
from pipeline.precision import autocast, cpu_has_bf16, resolve
from pipeline.recipe import Recipe

torch.set_num_threads(1)


# ------------------------------------------------------------------------------------------- precision
def test_resolve_keeps_an_explicit_choice_and_auto_follows_the_cpu():
    assert resolve("float32", "cpu") == "float32"
    assert resolve("bfloat16", "cpu") == "bfloat16"
    assert resolve("auto", "cpu") == ("bfloat16" if cpu_has_bf16() else "float32")
    with pytest.raises(PipelineError, match="recipe.precision: expected one of auto, float32, bfloat16, got 'fp16'"):
        resolve("fp16", "cpu")


def test_recipe_names_a_bad_precision():
    with pytest.raises(PipelineError, match=r"recipe of x.precision: invalid value 'half'; expected one of auto, "):
        Recipe.from_dict({"lr": 1.0, "batch_size": 8, "max_steps": 1, "precision": "half"}, where="recipe of x")


def test_bfloat16_autocast_runs_matrix_products_in_bfloat16_and_float32_does_not():
    layer = torch.nn.Linear(8, 8)
    x = torch.randn(2, 8)
    with autocast("bfloat16", "cpu"):
        assert layer(x).dtype == torch.bfloat16
    with autocast("float32", "cpu"):
        assert layer(x).dtype == torch.float32
    with pytest.raises(PipelineError, match="resolved"):
        autocast("auto", "cpu")


# ------------------------------------------------------------------------------------------- dropout
def test_dropout_zeroes_at_rate_p_and_scales_the_rest_exactly():
    torch.manual_seed(0)
    x = torch.ones(1_000_000)
    y = Dropout(0.1).train()(x)
    cut = round(0.1 * 65536)  # p rounded to a multiple of 2^-16
    kept = y != 0
    assert abs((~kept).float().mean().item() - cut / 65536) < 0.002
    assert torch.all(y[kept] == 65536 / (65536 - cut))
    assert abs(y.mean().item() - 1.0) < 0.003  # expectation kept


def test_dropout_gradient_is_the_mask_times_the_scale_and_eval_is_identity():
    torch.manual_seed(1)
    x = torch.randn(3, 5, 7, requires_grad=True)
    drop = Dropout(0.3).train()
    y = drop(x)
    y.sum().backward()
    scale = 65536 / (65536 - round(0.3 * 65536))
    assert torch.equal(x.grad, (y != 0).float() * scale)
    assert torch.allclose(y, x.detach() * x.grad)
    assert drop.eval()(x) is x
    assert torch.equal(Dropout(1.0).train()(x), torch.zeros_like(x))


def test_dropout_masks_follow_the_seed():
    x = torch.ones(4, 100)
    masks = []
    for seed in (5, 5, 6):
        torch.manual_seed(seed)
        masks.append(Dropout(0.5).train()(x))
    assert torch.equal(masks[0], masks[1]) and not torch.equal(masks[0], masks[2])


# ------------------------------------------------------------------------------------------- attention
@pytest.mark.parametrize("causal", [False, True])
def test_fused_kernel_equals_the_plain_attention(causal):
    """The GPU path (F.scaled_dot_product_attention) computes eq. 3 as the plain path does (checked on CPU)."""
    torch.manual_seed(2)
    attn = MultiHeadAttention(16, 4).eval()
    x = torch.randn(3, 6, 16)
    pad = torch.tensor([[False] * 6, [False] * 4 + [True] * 2, [False] * 2 + [True] * 4])
    pad_arg = None if causal else pad
    plain = attn(x, x, pad_arg, causal=causal)
    q, k, v = (attn._split(proj(x)) for proj in (attn.q_proj, attn.k_proj, attn.v_proj))
    fused = attn.out_proj(attn._fused(q, k, v, pad_arg, causal).transpose(1, 2).reshape(3, 6, 16))
    assert torch.allclose(plain, fused, atol=1e-6)
    both = attn._fused(q, k, v, pad, True)  # padding and the future masked together
    weights = attn.attention_weights(x, x, pad, causal=True)
    assert torch.allclose(both, weights @ v, atol=1e-6)


def test_qkv_projections_have_the_variance_of_one_fused_xavier_matrix():
    torch.manual_seed(3)
    model = build_model({"encoder": "transformer", "decoder": "transformer", "d_model": 64, "ffn_dim": 128,
                         "heads": 4, "enc_layers": 1, "dec_layers": 1}, 50, 50)
    attn = model.encoder.layers[0].self_attn
    fused_bound = math.sqrt(6 / (64 + 3 * 64))  # Xavier-uniform bound of one [64, 192] matrix
    for proj in (attn.q_proj, attn.k_proj, attn.v_proj):
        w = proj.weight
        assert w.abs().max() <= fused_bound and w.abs().max() > 0.95 * fused_bound
        assert abs(w.var().item() - fused_bound ** 2 / 3) < 0.1 * fused_bound ** 2 / 3
    out_bound = math.sqrt(6 / (64 + 64))  # the output projection keeps gain 1
    assert attn.out_proj.weight.abs().max() > 0.95 * out_bound
