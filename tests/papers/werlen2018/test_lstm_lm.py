"""werlen2018 7.3's language models: the "none" encoder (no source) and the "lstm" decoder (Daniluk et al. 2016's
LSTM LM, with the mean or self-attentive residual connections of eq. 8-13) behind the encoder-decoder interface:
the invariants every model keeps, the equations by hand, perplexity, learning, and the paper-scale parameter count."""
import math

import pytest
import torch
import torch.nn.functional as F
from model_variants import TGT_LENS, V_SRC, V_TGT, assert_causal, batch, train_copy

from pipeline.data.vocab import BOS, EOS
from pipeline.errors import PipelineError
from pipeline.papers.werlen2018.perplexity import perplexity
from pipeline.models import build_model, count_parameters
from pipeline.models.previous_word_summary import zero_first
from pipeline.beam_search import beam_search
from pipeline.search import greedy

torch.set_num_threads(1)

LM = {"encoder": "none", "decoder": "lstm", "embed": 6, "hidden": 5, "dropout": 0.1}
VARIANTS = {
    "lstm": {},
    "lstm-2layers": {"layers": 2},
    "mean-residual": {"summary": "mean"},
    "attentive-residual": {"summary": "attention"},
    "attentive-residual-scope": {"summary": "attention", "summary_score": "content_scope"},
    "attentive-residual-2layers-tied": {"summary": "attention", "layers": 2, "embed": 5, "tie_output": True},
}


def make(name, seed=0, **override):
    """A seeded small language model of a variant, in eval mode."""
    torch.manual_seed(seed)
    return build_model({**LM, **VARIANTS[name], **override}, V_SRC, V_TGT).eval()


def steps(model, src, tgt):
    """Logits [B,T,V] of decode_step over every prefix, and the last state."""
    memory, state, out = model.encode(src), None, []
    for t in range(1, tgt.size(1) + 1):
        logits, state = model.decode_step(tgt[:, :t], memory, state)
        out.append(logits)
    return torch.stack(out, 1), state


# ---- the interface's invariants -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", VARIANTS)
def test_incremental_decoding_equals_full_forward(name):
    model = make(name)
    src, tgt = batch()
    with torch.no_grad():
        full = model(src, tgt)
        inc, state = steps(model, src, tgt)
    assert inc.shape == full.shape == (3, tgt.size(1), V_TGT)
    assert (inc - full).abs().max().item() < 1e-5
    assert (full[:, 1:] - full[:, :1]).abs().max().item() > 1e-3  # positions really differ
    layers, summary = model.decoder.options.layers, model.decoder.options.summary
    expected = {"h", "c"} | {"none": set(), "mean": {"word_sum"}, "attention": {"words", "word_keys"}}[summary]
    assert set(state) == expected and state["h"].shape == state["c"].shape == (3, layers, 5)  # flat, batch-first
    assert model.encode(src) == {}  # the memory is empty


@pytest.mark.parametrize("name", ["lstm-2layers", "attentive-residual", "mean-residual"])
def test_state_follows_the_default_reorder(name):
    """Beam search reorders the state with index_select on dim 0: stepping reordered rows equals reordering."""
    model = make(name)
    src, tgt = batch()
    order = torch.tensor([2, 0, 0, 1])
    with torch.no_grad():
        memory, state = model.encode(src), None
        for t in range(1, 3):
            _, state = model.decode_step(tgt[:, :t], memory, state)
        state = model.reorder_state(state, order)
        logits, _ = model.decode_step(tgt[order, :3], model.reorder_memory(memory, order), state)
    assert (logits - model(src[order], tgt[order, :3])[:, 2]).abs().max().item() < 1e-5


@pytest.mark.parametrize("name", VARIANTS)
def test_causality(name):
    model = make(name)
    assert_causal(model, *batch())


@pytest.mark.parametrize("name", VARIANTS)
def test_padding_invariance(name):
    model = make(name)
    src, tgt = batch()
    with torch.no_grad():
        logits = model(src, tgt)
        for i, t in enumerate(TGT_LENS):
            alone = model(src[i:i + 1], tgt[i:i + 1, :t])[0]
            assert (alone - logits[i, :t]).abs().max().item() < 1e-5


@pytest.mark.parametrize("name", VARIANTS)
def test_the_source_has_no_influence(name):
    model = make(name)
    src, tgt = batch()
    other = torch.tensor([[9, 2, 0, 0], [4, 5, 6, 2], [2, 0, 0, 0]])  # other words, other lengths
    with torch.no_grad():
        assert torch.equal(model(src, tgt), model(other, tgt))
        assert torch.equal(steps(model, src, tgt)[0], steps(model, other, tgt)[0])


@pytest.mark.parametrize("name", VARIANTS)
def test_every_parameter_but_the_unused_source_table_gets_a_gradient(name):
    model = make(name).train()
    src, tgt = batch()
    F.cross_entropy(model(src, tgt).flatten(0, 1), tgt.roll(-1, 1).flatten()).backward()
    dead = [n for n, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert dead == ["src_embed.weight"] and model.src_embed.weight.shape == (V_SRC, 1)


def test_dropout_acts_in_training_only():
    model = make("lstm-2layers", dropout=0.5)
    src, tgt = batch()
    with torch.no_grad():
        assert torch.equal(model(src, tgt), model(src, tgt))
        model.train()
        assert (model(src, tgt) - model(src, tgt)).abs().max().item() > 1e-3


def test_the_none_encoder_pairs_only_with_decoders_that_read_no_memory():
    with pytest.raises(PipelineError, match="decoder 'cgru' reads memory entry 'enc', which encoder 'none'"):
        build_model({"encoder": "none", "decoder": "cgru"}, V_SRC, V_TGT)
    with pytest.raises(PipelineError, match="encoder 'birnn' writes memory entry 'enc', which decoder 'lstm' never"):
        build_model({"encoder": "birnn", "decoder": "lstm"}, V_SRC, V_TGT)
    with pytest.raises(PipelineError, match="'summary_score'"):
        build_model({**LM, "summary": "mean", "summary_score": "content_scope"}, V_SRC, V_TGT)
    with pytest.raises(PipelineError, match="'layers'"):
        build_model({**LM, "layers": 0}, V_SRC, V_TGT)


def test_search_generates_from_bos_alone():
    model = make("attentive-residual")
    src, _ = batch()
    with torch.no_grad():
        hyps = beam_search(model, src, beam=3, max_len_a=0, max_len_b=5)
        assert hyps[0] == hyps[1] == hyps[2]  # the source is ignored: one language, one best sentence
        assert greedy(model, src, max_len_a=0, max_len_b=5) == [greedy(model, src[:1], max_len_a=0, max_len_b=5)[0]] * 3


# ---- the equations by hand ------------------------------------------------------------------------------------------

def lstm_by_hand(x, h, c, lstm):
    """One LSTM step (torch's gate order i, f, g, o): c = f c + i g, h = o tanh(c)."""
    gates = x @ lstm.weight_ih_l0.T + lstm.bias_ih_l0 + h @ lstm.weight_hh_l0.T + lstm.bias_hh_l0
    i, f, g, o = gates.chunk(4, -1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


@pytest.mark.parametrize("summary", ["none", "mean", "attention"])
def test_decoder_by_hand_y0_zero_and_eq_8_to_13(summary):
    """y_0 = 0; h_t = LSTM(y_{t-1}, h_{t-1}) from zeros; logits W_o h_t ("none") or W_o tanh(W_h h_t + b + W_d d_t)
    with d_t = mean(y_0..y_{t-1}) (eq. 9) or sum_i alpha_i y_i, alpha = softmax(v^T tanh(W_y y_i + b)) (eq. 10-13)."""
    torch.manual_seed(0)
    model = build_model({**LM, "summary": summary}, V_SRC, V_TGT).eval()
    d = model.decoder
    tgt = torch.tensor([[BOS, 4, 8, 5, 7]])
    with torch.no_grad():
        y = model.tgt_embed(tgt)[0]
        y[0] = 0  # y_0 is the zero vector
        h, c = torch.zeros(5), torch.zeros(5)
        expected = []
        for t in range(5):
            h, c = lstm_by_hand(y[t], h, c, d.lstms[0])
            if summary == "none":
                features = h
            else:
                if summary == "mean":
                    words = y[:t + 1].sum(0) / (t + 1)
                else:
                    scores = torch.tanh(y[:t + 1] @ d.summary.word_proj.weight.T + d.summary.word_proj.bias)
                    words = torch.softmax(scores @ d.summary.score.weight[0], 0) @ y[:t + 1]
                if t == 0:
                    assert words.abs().max() == 0  # d_1 = 0
                features = torch.tanh(d.readout_state(h) + d.readout_words.weight @ words)
            expected.append(model.output_proj.weight @ features)
        logits = model(torch.tensor([[2]]), tgt)[0]
        assert torch.allclose(logits, torch.stack(expected), atol=1e-6)
        model.tgt_embed.weight[BOS] += 3.0  # the BOS embedding never enters
        assert torch.allclose(model(torch.tensor([[2]]), tgt)[0], logits, atol=1e-6)


def test_mean_summary_is_the_running_mean_of_a_hand_example():
    """Embeddings e(4) = 1, e(5) = 2, e(6) = 4 (every unit): d over y_0..y_p = 0, 1/2, 3/3, 7/4."""
    model = make("mean-residual")
    with torch.no_grad():
        model.tgt_embed.weight[4:7] = torch.tensor([[1.0], [2.0], [4.0]])
        y = model.tgt_embed(torch.tensor([[BOS, 4, 5, 6]]))
        d = model.decoder._words(zero_first(y), None)
    assert torch.equal(d[0, :, 0], torch.tensor([0.0, 0.5, 1.0, 1.75]))
    assert torch.equal(d[0], d[0, :, :1].expand(-1, 6))


# ---- perplexity ----------------------------------------------------------------------------------------------------

SENTENCES = [[4, 5, 6], [7], [], [8, 9, 10, 11, 12]]


def test_perplexity_of_a_uniform_model_is_the_vocabulary_size():
    model = make("attentive-residual")
    with torch.no_grad():
        model.output_proj.weight.zero_()  # every logit 0: p = 1 / V for every token, EOS included
    out = perplexity(model, [[]] * 4, SENTENCES, batch_size=3)
    assert out["tokens"] == 3 + 1 + 0 + 5 + 4 and out["sentences"] == 4  # every token and each EOS
    assert out["nll"] == pytest.approx(math.log(V_TGT), rel=1e-7)  # log-softmax in float32, sums in float64
    assert out["perplexity"] == pytest.approx(V_TGT, rel=1e-7)


@pytest.mark.parametrize("batch_size", [1, 2, 4])
def test_perplexity_is_the_exp_of_the_mean_token_nll(batch_size):
    model = make("mean-residual").train()  # scored in eval mode, the mode restored afterwards
    total, count = 0.0, 0
    with torch.no_grad():
        model.eval()
        for tokens in SENTENCES:
            logits = model(torch.tensor([[EOS]]), torch.tensor([[BOS] + tokens]))[0]
            total += F.cross_entropy(logits, torch.tensor(tokens + [EOS]), reduction="sum").item()
            count += len(tokens) + 1
        model.train()
    out = perplexity(model, [[5]] * 4, SENTENCES, batch_size=batch_size)
    assert model.training
    assert out["tokens"] == count and out["nll"] == pytest.approx(total / count, rel=1e-6)
    assert out["perplexity"] == pytest.approx(math.exp(total / count), rel=1e-6)


def test_perplexity_of_a_translation_model_conditions_on_the_source():
    torch.manual_seed(0)
    model = build_model({"encoder": "birnn", "decoder": "cgru", "embed": 6, "hidden": 5}, V_SRC, V_TGT)
    a = perplexity(model, [[4, 5]] * 4, SENTENCES)
    b = perplexity(model, [[9, 8, 7]] * 4, SENTENCES)
    assert a["tokens"] == b["tokens"] and abs(a["nll"] - b["nll"]) > 1e-6


@pytest.mark.parametrize("src, tgt, size, words", [
    ([], [], 1, ["'src_ids' is empty"]),
    ([[4]], [], 1, ["'tgt_ids' is empty"]),
    ([[4], [5]], [[4]], 1, ["2 sentences", "1"]),
    ([[4]], [[4]], 0, ["'batch_size'", "positive integer"]),
])
def test_perplexity_errors_name_the_argument(src, tgt, size, words):
    with pytest.raises(PipelineError) as info:
        perplexity(make("lstm"), src, tgt, batch_size=size)
    assert all(w in str(info.value) for w in words), str(info.value)


# ---- learning ------------------------------------------------------------------------------------------------------

# Five sentences: a first word w in 4..8, then w+1..w+4; only the first word is uncertain, so the best model has
# per-sentence NLL log 5 over 6 tokens (5 words + EOS): perplexity 5^(1/6) = 1.3077.
COUNTING = [list(range(w, w + 5)) for w in range(4, 9)]


@pytest.mark.parametrize("summary", ["none", "mean", "attention"])
def test_learns_a_deterministic_sequence_task(summary):
    torch.manual_seed(1)
    model = build_model({"encoder": "none", "decoder": "lstm", "embed": 16, "hidden": 32, "summary": summary}, 13, 13)
    train_copy(model, COUNTING * 8, steps=300, lr=1e-2, warmup=10, label_smoothing=0.0)  # source = target: ignored
    out = perplexity(model, [[]] * 5, COUNTING)
    assert out["tokens"] == 30 and out["perplexity"] < 1.33, out  # untrained: ~13
    with torch.no_grad():
        hyp = greedy(model, torch.full((1, 1), EOS), max_len_a=0, max_len_b=8)[0]
    assert hyp in COUNTING  # after its first word, the sentence the task determines


# ---- parameter counts ----------------------------------------------------------------------------------------------

def lm_formula(v_tgt, e, h, layers=1, summary="none", v_src=4, scope=False):
    """The unused source table (v_src x 1), target embeddings V x e, LSTMs 4h(in + h) + 8h each (torch's two bias
    vectors), the output projection V x h (no bias); the residual readout W_h (h x h + h) and W_d (h x e); the
    self-attentive summary W_y (e x e + e) and v (e), + W_s (e x h) with content+scope scores."""
    lstm = 4 * h * (e + h) + 8 * h + (layers - 1) * (4 * h * 2 * h + 8 * h)
    readout = 0 if summary == "none" else h * h + h + h * e
    attention = e * e + e + e + (e * h if scope else 0) if summary == "attention" else 0
    return v_src + v_tgt * e + lstm + v_tgt * h + readout + attention


@pytest.mark.parametrize("name", VARIANTS)
def test_small_parameter_counts(name):
    o = {**LM, **VARIANTS[name]}
    tied = o.get("tie_output", False)
    expected = lm_formula(V_TGT, o["embed"], o["hidden"], o.get("layers", 1), o.get("summary", "none"), V_SRC,
                          o.get("summary_score") == "content_scope")
    assert count_parameters(make(name)) == expected - (V_TGT * o["hidden"] if tied else 0)


# werlen2018 Table 6: 47M parameters for every model, d = 296, in Daniluk et al. (2016)'s setting. The paper prints
# no vocabulary; w-lm's 77K words at paper scale (our choice, params/werlen2018.yaml) make their d = 300 LSTM exactly
# 2 x 77,000 x 300 + 4 x 300 x 600 + 2 x 1,200 + 77,000 (output bias) = 46,999,400, i.e. 47.0M). Ours at d = 296,
# with a dummy source side (4 specials): 0.45-0.71M below 47M (no output bias, d = 296 < 300).
PAPER_LM = {"encoder": "none", "decoder": "lstm", "embed": 296, "hidden": 296}
COUNTS = [("none", 46_287_300), ("mean", 46_462_828), ("attention", 46_551_036)]


@pytest.mark.parametrize("summary, ours", COUNTS)
def test_paper_scale_parameter_counts(summary, ours):
    with torch.device("meta"):
        model = build_model({**PAPER_LM, "summary": summary}, 4, 77_000)
    assert count_parameters(model) == lm_formula(77_000, 296, 296, summary=summary) == ours
    assert abs(ours - 47e6) / 47e6 < 0.02
    with torch.device("meta"):  # Daniluk's baseline LSTM (d = 300): 47.0M once their output bias is added
        baseline = build_model({**PAPER_LM, "embed": 300, "hidden": 300}, 4, 77_000)
    assert count_parameters(baseline) - 4 + 77_000 == 46_999_400


def test_the_project_params_give_table_6s_widths_at_paper_scale():
    """The plain LSTM's row has d = 300, the residual ones d = 296 (Table 6's d column)."""
    from pipeline.config import load_params
    from workspace import ROOT
    def widths(scale):
        params = load_params(ROOT / "params.yaml", scale=scale)
        return {name: (params.model_spec(name)["embed"], params.model_spec(name)["hidden"])
                for name in ("w-lm-lstm", "w-lm-mean", "w-lm-self-attentive")}

    assert widths("paper") == {"w-lm-lstm": (300, 300), "w-lm-mean": (296, 296), "w-lm-self-attentive": (296, 296)}
    assert set(widths("tiny").values()) == {(64, 128)}   # tiny scale: one width for the three


def test_the_lm_corpus_is_words_at_paper_scale_and_bpe_at_tiny():
    """Paper scale: the 77,000 most frequent words (the vocabulary Table 6's 47M implies); tiny: 2,000 BPE merges."""
    from pipeline.config import load_params
    from workspace import ROOT
    def corpus(scale):
        c = load_params(ROOT / "params.yaml", scale=scale).corpora["w-lm"]
        return c.bpe_sides, c.bpe_merges, c.vocab_size

    assert corpus("paper") == ((), 0, 77_000)
    assert corpus("tiny") == (("src", "tgt"), 2000, 0)
