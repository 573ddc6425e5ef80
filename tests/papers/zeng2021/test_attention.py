"""zeng2021 sec. 4.1-4.3 attention analyses: entropy (eq. 5), histograms, layer-pair JS and RAN pattern weights,
checked against hand computations on seeded small models."""
import math

import pytest
import torch

from pipeline.data.vocab import BOS, EOS
from pipeline.errors import PipelineError
from pipeline.papers.zeng2021.attention import attention_statistics, pattern_weights
from pipeline.models import build_model
from pipeline.models.ran import using

torch.set_num_threads(1)

SMALL = dict(d_model=16, ffn_dim=24, heads=2, enc_layers=2, dec_layers=3, dropout=0.0, ran_max_len=12)
V = 13
SRC = [[4, 5, 6], [7, 8, 9, 10, 11, 12, 4], [5, 5]]
TGT = [[6, 7], [8, 9, 10, 11, 12], [4, 9, 9]]


def make(seed=0, **options):
    """A seeded small transformer with the given options (train mode: the analysis must switch to eval)."""
    torch.manual_seed(seed)
    return build_model({"encoder": "transformer", "decoder": "transformer", **SMALL, **options}, V, V)


def layer_weights(model, src, tgt):
    """Hand pass over one sentence: per side, every layer's self-attention weights [h,T,S] as nested lists."""
    model.eval()
    s = torch.tensor([src + [EOS]])
    t = torch.tensor([[BOS] + tgt])
    out = {"enc": [], "dec": []}
    with torch.no_grad():
        h = model.encoder.embed(model.src_embed(s))
        with using(model.encoder.patterns):
            for layer in model.encoder.layers:
                out["enc"].append(layer.self_attn.attention_weights(h, h)[0].double().tolist())
                h = layer(h, s.eq(0))
        memory = {"enc": h, "enc_pad": s.eq(0)}
        h = model.decoder.embed(model.tgt_embed(t))
        with using(model.decoder.patterns):
            for layer in model.decoder.layers:
                out["dec"].append(layer.self_attn.attention_weights(h, h, causal=True)[0].double().tolist())
                h = layer(h, memory)
    return out


def entropy(row):
    """Eq. 5 by hand."""
    return -sum(p * math.log(p) for p in row if p > 0)


def js(p, q):
    """Jensen-Shannon divergence by hand (natural log)."""
    m = [(a + b) / 2 for a, b in zip(p, q)]
    kl = lambda x: sum(a * math.log(a / c) for a, c in zip(x, m) if a > 0)  # noqa: E731
    return (kl(p) + kl(q)) / 2


def head_mean(w):
    """[h][T][S] -> [T][S]."""
    return [[sum(w[k][i][j] for k in range(len(w))) / len(w) for j in range(len(w[0][0]))]
            for i in range(len(w[0]))]


def test_entropy_equals_eq5_by_hand():
    model = make(seed=1)
    stats = attention_statistics(model, [SRC[1]], [TGT[1]])
    hand = layer_weights(model, SRC[1], TGT[1])
    for side in ("enc", "dec"):
        for layer, w in enumerate(hand[side]):
            per_head = [sum(entropy(row) for row in head) / len(head) for head in w]  # timesteps, then heads
            assert stats[side]["entropy"][layer] == pytest.approx(sum(per_head) / len(per_head), abs=1e-5)
    assert stats["dec"]["entropy"][0] > 0.1 and stats["enc"]["entropy"][0] > 0.1
    assert stats["n_sentences"] == 1 and stats["bins"] == 20


def test_js_equals_hand_computation_and_is_a_divergence_matrix():
    model = make(seed=2)
    stats = attention_statistics(model, [SRC[0]], [TGT[1]])
    hand = layer_weights(model, SRC[0], TGT[1])
    for side in ("enc", "dec"):
        p, q = head_mean(hand[side][0]), head_mean(hand[side][1])
        expected = sum(js(a, b) for a, b in zip(p, q)) / len(p)
        assert stats[side]["js"][0][1] == pytest.approx(expected, abs=1e-6)
        assert expected > 1e-4
        m = stats[side]["js"]
        n = len(m)
        assert n == (2 if side == "enc" else 3)
        for i in range(n):
            assert m[i][i] == 0.0
            for j in range(n):
                assert m[i][j] == m[j][i] and 0.0 <= m[i][j] <= math.log(2)


def test_padding_is_ignored_when_batched_with_longer_sentences():
    model = make(seed=3)
    alone = [attention_statistics(model, [s], [t]) for s, t in zip(SRC, TGT)]
    batched = attention_statistics(model, SRC, TGT, batch_size=3)
    separate = attention_statistics(model, SRC, TGT, batch_size=1)
    for side in ("enc", "dec"):
        for key in ("entropy", "js"):
            assert torch.allclose(torch.tensor(batched[side][key]), torch.tensor(separate[side][key]), atol=1e-6)
        assert batched[side]["histogram"] == separate[side]["histogram"]
        summed = torch.tensor([s[side]["histogram"]["counts"] for s in alone]).sum(0)
        assert summed.tolist() == batched[side]["histogram"]["counts"]
    # the pooled entropy is the row-weighted mean of the per-sentence ones
    rows = [len(s) + 1 for s in SRC]
    pooled = sum(r * a["enc"]["entropy"][1] for r, a in zip(rows, alone)) / sum(rows)
    assert batched["enc"]["entropy"][1] == pytest.approx(pooled, abs=1e-6)


def test_histogram_counts_every_visible_weight_of_every_head():
    stats = attention_statistics(make(seed=4), SRC, TGT, batch_size=2, bins=7)
    heads = SMALL["heads"]
    enc_total = heads * sum((len(s) + 1) ** 2 for s in SRC)
    dec_total = heads * sum((len(t) + 1) * (len(t) + 2) // 2 for t in TGT)
    assert [sum(c) for c in stats["enc"]["histogram"]["counts"]] == [enc_total] * 2
    assert [sum(c) for c in stats["dec"]["histogram"]["counts"]] == [dec_total] * 3
    edges = stats["dec"]["histogram"]["edges"]
    assert len(edges) == 8 and edges[0] == 0.0 and edges[-1] == 1.0
    # each BOS query sees one key with weight exactly 1: the last bin holds at least one per sentence and head
    assert all(c[-1] >= heads * len(TGT) for c in stats["dec"]["histogram"]["counts"])


@pytest.mark.parametrize("kind", ["hcsa", "ran", "synr"])
def test_pattern_models(kind):
    model = make(seed=5, enc_self_attn=kind, dec_self_attn=kind)
    stats = attention_statistics(model, SRC, TGT, batch_size=2)
    assert model.training  # the caller's mode is restored
    for side in ("enc", "dec"):
        ent = stats[side]["entropy"]
        assert all(0.0 < e < math.log(8) for e in ent)
        m = torch.tensor(stats[side]["js"])
        assert torch.equal(m, m.T) and m.diagonal().abs().max() == 0.0
        if kind == "hcsa":  # the same Gaussians in every layer
            assert m.abs().max().item() < 1e-9 and max(ent) - min(ent) < 1e-9
        else:
            assert m[0, 1].item() > 1e-4


def test_dropout_model_is_analysed_in_eval_mode():
    model = make(seed=6, dropout=0.3, attention_dropout=0.3)
    first = attention_statistics(model, SRC, TGT)
    assert first == attention_statistics(model, SRC, TGT) and model.training


def test_pattern_weights_of_ran_are_softmax_of_its_tables():
    model = make(seed=7, enc_self_attn="ran", dec_self_attn="ran")
    out = pattern_weights(model, 20)
    assert len(out["enc"]) == 2 and len(out["dec"]) == 3
    n = SMALL["ran_max_len"]  # min(20, 12)
    with torch.no_grad():
        tables = model.encoder.patterns.tables()
        expected = torch.softmax(tables[1].double(), -1).mean(0)
    assert torch.allclose(torch.tensor(out["enc"][1], dtype=torch.float64), expected, atol=1e-6)
    for side in ("enc", "dec"):
        for w in out[side]:
            w = torch.tensor(w, dtype=torch.float64)
            assert w.shape == (n, n) and torch.allclose(w.sum(-1), torch.ones(n, dtype=torch.float64), atol=1e-6)
    for w in out["dec"]:
        w = torch.tensor(w)
        lower = torch.ones(n, n, dtype=torch.bool).tril()
        assert w[~lower].abs().max().item() == 0.0 and w[lower].min().item() > 0.0
    small = pattern_weights(model, 5)
    assert torch.tensor(small["enc"][0]).shape == (5, 5)


def test_pattern_weights_none_for_dot_sides():
    assert pattern_weights(make(), 6) == {"enc": None, "dec": None}
    out = pattern_weights(make(enc_self_attn="hcsa"), 6)
    assert out["dec"] is None and len(out["enc"]) == 2
    row = [sum(math.exp(-(j - 3 - c) ** 2 / 2) / sum(math.exp(-(k - 3 - c) ** 2 / 2) for k in range(6))
               for c in (-1, 1)) / 2 for j in range(6)]  # heads centred at i-1 and i+1, std 1, averaged
    assert out["enc"][1][3] == pytest.approx(row, abs=1e-6)


@pytest.mark.parametrize("src, tgt, kwargs, name", [
    ([[4]], [[5], [6]], {}, "tgt_ids"),
    ([], [], {}, "src_ids"),
    ([[4]], [], {}, "tgt_ids"),
    ([[4]], [[5]], {"batch_size": 0}, "batch_size"),
    ([[4]], [[5]], {"bins": 0}, "bins"),
])
def test_bad_input_names_the_argument(src, tgt, kwargs, name):
    with pytest.raises(PipelineError, match=f"'{name}'"):
        attention_statistics(make(), src, tgt, **kwargs)


def test_bad_size_and_too_long_sentence():
    with pytest.raises(PipelineError, match="'size'"):
        pattern_weights(make(), 0)
    with pytest.raises(PipelineError, match="ran_max_len"):
        attention_statistics(make(enc_self_attn="ran"), [[4] * 20], [[5]])
