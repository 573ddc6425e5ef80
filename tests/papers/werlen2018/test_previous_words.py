"""werlen2018 sec. 8.1-8.2: the decoders' attention to previous words (checked by rebuilding the forward pass from
it), Figure 2's relative positions, Algorithm 1's trees, the right-branching baseline and ParsEval scores, the
Penn-Treebank reader, and the analysis entry point, on seeded small cgru models and hand-made matrices."""
import numpy as np
import pytest
import torch

from pipeline.data.batching import make_batch
from pipeline.errors import PipelineError
from pipeline.papers.werlen2018.previous_words import (binary_parse_tree, bracketing_scores, parse_ptb, previous_word_analysis,
                                              previous_word_attention, read_parses, relative_position_counts,
                                              relative_position_shares, render, right_branching, spans, word_matrix)
from pipeline.models import build_model

torch.set_num_threads(1)

RNN = {"encoder": "birnn", "decoder": "cgru", "embed": 6, "hidden": 5, "dropout": 0.0}
VARIANTS = {
    "mean": {"summary": "mean"},
    "attention-content": {"summary": "attention"},
    "attention-scope": {"summary": "attention", "summary_score": "content_scope"},
    "memory": {"state_attention": "memory"},
    "self": {"state_attention": "self"},
}
SRC = [[5, 6, 7, 4], [8, 5]]
TGT = [[4, 8, 3, 9, 10], [6, 7]]


def model(**options):
    torch.manual_seed(0)
    return build_model({**RNN, **options}, 11, 12).eval()


def forward_pieces(m, src_ids, tgt_ids):
    """One teacher-forced pass: y (y_0 = 0) [B,T,e], the states s_0..s_T [B,T+1,h], every step's cGRU input state
    [B,T,h] and context [B,T,c], the decoder's features [B,T,e], and the weights under test [B,T,T]."""
    src, tgt_in, _ = make_batch(src_ids, tgt_ids)
    d, seen = m.decoder, []
    handle = d.cell.register_forward_hook(lambda module, args, out: seen.append((args[1], out[0], out[1])))
    try:
        with torch.no_grad():
            memory = m.encode(src)
            enc, pad = memory["enc"], memory["enc_pad"]
            mean = (enc * (~pad)[:, :, None]).sum(1) / (~pad).sum(1, keepdim=True)
            s0 = torch.tanh(d.init_state(mean))  # s_0 = tanh(W_init mean(H)) (A.3)
            features = d(m.tgt_embed(tgt_in), memory)
    finally:
        handle.remove()
    with torch.no_grad():
        weights = d.previous_word_weights(m.tgt_embed(tgt_in), memory)
    y = m.tgt_embed(tgt_in).detach()
    y[:, 0] = 0
    states = torch.stack([s0] + [s for _, s, _ in seen], 1)
    s_in = torch.stack([a for a, _, _ in seen], 1)
    contexts = torch.stack([c for _, _, c in seen], 1)
    return y, states, s_in, contexts, features, weights


def rebuild(m, y, states, s_in, contexts, weights):
    """The features the decoder must output if `weights` are the ones it uses: r_t = d_t = sum_i w_pi y_i (eq. 8-10)
    for a summary; + W_mt sum_i w_pi s_i for the Self-attentive RNN (A.3.3); the Memory RNN's weights act on the
    recurrence (checked on s_in instead)."""
    d, o = m.decoder, m.decoder.options
    s = states[:, 1:]
    words = weights @ y if o.summary != "previous" else y
    out = d.readout_state(s) + d.readout_words(words) + d.readout_context(contexts)
    if o.state_attention == "self":
        out = out + d.readout_memory(weights @ states[:, :-1])
    return torch.tanh(out)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_weights_are_causal_distributions_that_reproduce_the_forward_pass(variant):
    m = model(**VARIANTS[variant])
    y, states, s_in, contexts, features, weights = forward_pieces(m, SRC, TGT)
    b, t = y.shape[:2]
    assert weights.shape == (b, t, t)
    assert torch.allclose(weights.sum(-1), torch.ones(b, t), atol=1e-6)
    assert weights.triu(1).eq(0).all() and weights.ge(0).all()
    if variant == "memory":  # A.3.2: the cGRU reads s~_t = sum_{i < t} alpha_ti s_i instead of s_{t-1}
        assert torch.allclose(s_in, weights @ states[:, :-1], atol=1e-6)
        uniform = torch.ones(t, t).tril() / torch.arange(1, t + 1)[:, None]
        assert not torch.allclose(s_in, uniform @ states[:, :-1], atol=1e-4)  # the check can fail
    else:
        assert torch.allclose(features, rebuild(m, y, states, s_in, contexts, weights), atol=1e-6)
        if variant != "mean":
            uniform = (torch.ones(t, t).tril() / torch.arange(1, t + 1)[:, None]).expand(b, t, t)
            assert not torch.allclose(features, rebuild(m, y, states, s_in, contexts, uniform), atol=1e-4)


@pytest.mark.parametrize("variant", ["attention-content", "attention-scope", "memory", "self"])
def test_weights_follow_the_scoring_equations_by_hand(variant):
    """eq. 11-13 (v^T tanh(W_y y_i + b [+ W_s s_t])) over y_0..y_p; A.3.2-3 (v^T tanh(W_m s_i + b + W_s q) + c)
    over s_0..s_p, with q = s_{t-1} = s_p (memory) or s_t = s_{p+1} (self)."""
    m = model(**VARIANTS[variant])
    y, states, _, _, _, weights = forward_pieces(m, SRC, TGT)
    d = m.decoder
    for b in range(y.size(0)):
        for p in range(y.size(1)):
            with torch.no_grad():
                if variant.startswith("attention"):
                    pre = y[b, :p + 1] @ d.summary.word_proj.weight.T + d.summary.word_proj.bias
                    if variant == "attention-scope":
                        pre = pre + d.summary.state_proj.weight @ states[b, p + 1]
                    scores = torch.tanh(pre) @ d.summary.score.weight[0]
                else:
                    att, query = d.state_attention, states[b, p if variant == "memory" else p + 1]
                    pre = states[b, :p + 1] @ att.key_proj.weight.T + att.key_proj.bias + att.query_proj.weight @ query
                    scores = torch.tanh(pre) @ att.score.weight[0] + att.score.bias
            assert torch.allclose(weights[b, p, :p + 1], torch.softmax(scores, 0), atol=1e-6)


def test_mean_is_uniform_and_the_baseline_has_none():
    weights = forward_pieces(model(summary="mean"), SRC[:1], TGT[:1])[-1]
    assert torch.allclose(weights[0, 3], torch.tensor([0.25, 0.25, 0.25, 0.25, 0.0, 0.0]))
    assert torch.allclose(weights[0, 0], torch.tensor([1.0, 0, 0, 0, 0, 0]))
    m = model()
    src, tgt_in, _ = make_batch(SRC, TGT)
    assert m.decoder.previous_word_weights(m.tgt_embed(tgt_in), m.encode(src)) is None
    assert previous_word_attention(m, SRC, TGT) is None


def test_previous_word_attention_cuts_padding_keeps_order_and_mode():
    m = model(summary="attention", summary_score="content_scope").train()
    src = SRC + [[4], [9, 9, 9, 9, 9, 9]]
    tgt = TGT + [[5, 5, 5], []]
    batched = previous_word_attention(m, src, tgt, batch_size=3)
    assert m.training  # the previous mode comes back
    assert [w.shape for w in batched] == [(6, 6), (3, 3), (4, 4), (1, 1)]
    for k in range(len(src)):
        alone = forward_pieces(m.eval(), [src[k]], [tgt[k]])[-1][0].double().numpy()
        assert np.allclose(batched[k], alone, atol=1e-6)
    assert batched[3].tolist() == [[1.0]]


def test_previous_word_attention_rejects_models_without_a_cgru_decoder():
    torch.manual_seed(0)
    transformer = build_model({"encoder": "transformer", "decoder": "transformer", "d_model": 8, "ffn_dim": 8,
                               "heads": 2, "enc_layers": 1, "dec_layers": 1}, 11, 12)
    with pytest.raises(PipelineError, match="previous_word_weights"):
        previous_word_attention(transformer, SRC, TGT)
    with pytest.raises(PipelineError, match="'tgt_ids' has 1"):
        previous_word_attention(model(summary="mean"), SRC, TGT[:1])


# ------------------------------------------------------------------------------------------ Figure 2
HAND = np.array([[1.0, 0.0, 0.0, 0.0],  # the first word: sees y_0 only, not counted
                 [0.2, 0.8, 0.0, 0.0],  # word 1 maximal: 1 back
                 [0.1, 0.6, 0.3, 0.0],  # word 1: 2 back
                 [0.7, 0.1, 0.05, 0.15]])  # y_0 is not a word: word 3, 1 back


def test_relative_position_shares_by_hand():
    assert relative_position_counts([HAND], 3) == ([2, 1, 0], [3, 2, 1])
    assert relative_position_shares([HAND], 3) == [2 / 3, 1 / 2, 0.0]
    two = [HAND, np.array([[1.0, 0.0], [0.5, 0.5]])]  # a tie between y_0 and word 1: word 1
    assert relative_position_shares(two, 5) == [3 / 4, 1 / 2, 0.0, None, None]
    far = np.array([[1.0, 0, 0, 0], [0.5, 0.5, 0, 0], [0.2, 0.3, 0.5, 0], [0.1, 0.5, 0.2, 0.2]])  # last: 3 back
    assert relative_position_counts([far], 2) == ([2, 0], [3, 2])  # beyond max_distance: not counted
    with pytest.raises(PipelineError, match="matrix 1 has shape"):
        relative_position_counts([HAND, np.ones((2, 3))])


# ----------------------------------------------------------------------------------------- Algorithm 1
def test_algorithm1_on_a_diagonal_matrix_is_right_branching():
    assert binary_parse_tree(np.eye(4)) == (0, (1, (2, 3))) == right_branching(4)


def test_algorithm1_splits_where_the_focus_moves_to_a_new_word():
    # focus (row maxima): words 0, 0, 2, 2, 2, 5 -> phrases [w0 w1] [w2 w3 w4] [w5]
    a = np.array([[1.0, 0, 0, 0, 0, 0],
                  [0.7, 0.3, 0, 0, 0, 0],
                  [0.2, 0.1, 0.7, 0, 0, 0],
                  [0.1, 0.2, 0.5, 0.2, 0, 0],
                  [0.1, 0.1, 0.4, 0.2, 0.2, 0],
                  [0.1, 0.1, 0.1, 0.1, 0.1, 0.5]])
    words = ["w0", "w1", "w2", "w3", "w4", "w5"]
    assert binary_parse_tree(a, words) == (("w0", "w1"), (("w2", "w3", "w4"), "w5"))
    assert spans(binary_parse_tree(a, words)) == {(0, 2), (2, 5), (2, 6), (0, 6)}


def test_algorithm1_looks_only_inside_the_remaining_block():
    # row 2's maximum is word 0, but after the split at 1 only words 1..2 are visible: word 1 keeps the focus
    a = np.array([[1.0, 0, 0, 0],
                  [0.3, 0.7, 0, 0],
                  [0.5, 0.3, 0.2, 0],
                  [0.1, 0.2, 0.3, 0.4]])
    assert binary_parse_tree(a, ["a", "b", "c", "d"]) == ("a", (("b", "c"), "d"))


def test_algorithm1_uniform_rows_and_word_matrix():
    uniform = np.tril(np.ones((5, 5))) / np.arange(1, 6)[:, None]  # the mean model: ties keep the first word
    assert binary_parse_tree(word_matrix(uniform), "a b c d") == ("a", "b", "c", "d")
    assert word_matrix(HAND).tolist() == [[0.8, 0.0, 0.0], [0.6, 0.3, 0.0], [0.1, 0.05, 0.15]]
    assert binary_parse_tree(word_matrix(HAND), "x y z") == (("x", "y"), "z")
    assert binary_parse_tree([[1.0]], ["one"]) == "one"
    with pytest.raises(PipelineError, match=r"expected \(3, 3\) for 3 words"):
        binary_parse_tree(np.eye(4), ["a", "b", "c"])


def test_right_branching_spans_and_rendering():
    assert right_branching(4) == (0, (1, (2, 3)))
    assert right_branching(["The", "cat"]) == ("The", "cat") and right_branching(["one"]) == "one"
    assert spans(right_branching(4)) == {(0, 4), (1, 4), (2, 4)}
    assert spans((("a", "b"),)) == {(0, 2)} and spans("a") == set()
    assert render((("The", "cat"), ("sat", ("on", ("the", "mat"))))) == "((The cat) (sat (on (the mat))))"
    assert render(("(", "x")) == "(-LRB- x)"
    with pytest.raises(PipelineError, match="at least one word"):
        right_branching(0)


def test_bracketing_scores_by_hand():
    predicted, gold = {(0, 2), (2, 5), (2, 6), (0, 6)}, {(0, 2), (0, 6), (3, 6)}
    p, r, f = bracketing_scores(predicted, gold)
    assert (p, r) == (0.5, 2 / 3) and f == pytest.approx(4 / 7, abs=1e-12)
    p, r, f = bracketing_scores([predicted, {(0, 3)}], [gold, {(1, 3)}])  # micro: 2 of 5 predicted, of 4 gold
    assert (p, r) == (0.4, 0.5) and f == pytest.approx(4 / 9, abs=1e-12)
    assert bracketing_scores(set(), {(0, 2)}) == (None, 0.0, None)
    assert bracketing_scores({(0, 2)}, {(1, 3)}) == (0.0, 0.0, 0.0)


def test_ptb_reader_and_its_errors():
    tree = "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))))"
    leaves, found = parse_ptb(tree)
    assert leaves == ["The", "cat", "sat", "on", "the", "mat"]
    assert found == {(0, 2), (2, 6), (3, 6), (4, 6), (0, 6)}
    assert parse_ptb(f"( {tree} )") == (leaves, found)  # PTB's unlabelled outer brackets
    assert parse_ptb("(ROOT (S (NP (NNS Cats)) (VP (VBP sleep))))") == (["Cats", "sleep"], {(0, 2)})
    with pytest.raises(PipelineError, match=r"parses, line 2: malformed parse \(1 unclosed"):
        read_parses(["(S (X a))", "(S (NP (DT The) (NN cat))"])
    for bad, reason in [("(S (NP a)))", "closes no bracket"), ("S a", "starts with 'S'"), ("", "empty line"),
                        ("(S a) (S b)", "text after the end"), ("(S (NP ) (VP a))", "empty constituent"),
                        ("(S (NP) (VP a))", "empty constituent")]:
        with pytest.raises(PipelineError, match=reason):
            parse_ptb(bad)


# ----------------------------------------------------------------------------------------- the analysis
def test_previous_word_analysis_collects_the_figures_and_parseval():
    m = model(summary="attention")
    tokens = ["a b c d e", "f g"]
    parses = ["(S (NP (X a) (X b)) (VP (X c) (NP (X d) (X e))))", "(S (X f) (X g))"]
    out = previous_word_analysis(m, SRC, TGT, tokens, 0, parses, 5)
    matrices = previous_word_attention(m, SRC, TGT)
    assert out["fig2"]["distance"] == [-1, -2, -3, -4, -5]
    assert out["fig2"]["shares"] == relative_position_shares(matrices, 5)
    counts = out["fig2"]["counts"]
    assert sum(out["fig2"]["fractions"]) == pytest.approx(1.0) and sum(counts) == 5 + 2  # rows 1..N per sentence
    assert out["fig3"]["rows"] == ["a", "b", "c", "d", "e", "</s>"]
    assert out["fig3"]["columns"] == ["<s>", "a", "b", "c", "d", "e"]
    assert np.allclose(out["fig3"]["matrix"], matrices[0])
    trees = [binary_parse_tree(word_matrix(w), t.split()) for w, t in zip(matrices, tokens)]
    assert out["fig4"] == [{"sentence": 0, "tree": render(trees[0])}, {"sentence": 1, "tree": render(trees[1])}]
    gold = [{(0, 2), (2, 5), (3, 5), (0, 5)}, {(0, 2)}]
    p, r, f = bracketing_scores([spans(t) for t in trees], gold)
    assert out["parseval"]["algorithm1"] == {"precision": p, "recall": r, "f1": f}
    # right branching: {(0,5),(1,5),(2,5),(3,5)} and {(0,2)}: 3 + 1 of 5 predicted, of 5 gold
    assert out["parseval"]["right_branching"] == {"precision": 0.8, "recall": 0.8, "f1": pytest.approx(0.8)}
    assert out["parseval"]["sentences"] == 2 and out["parseval"]["gold_spans"] == 5


def test_previous_word_analysis_for_the_baseline_and_bad_arguments():
    out = previous_word_analysis(model(), SRC, TGT, ["a b c d e", "f g"], 1, ["(S a b c d e)", "(S f g)"], 50)
    assert out["fig2"] is None and out["fig3"] is None and out["fig4"] is None
    assert out["parseval"]["algorithm1"] is None
    # (0,5) of 4 right-branching spans, (0,2) of 1: 2 of 5 predicted, of 2 gold
    assert out["parseval"]["right_branching"] == {"precision": 0.4, "recall": 1.0, "f1": pytest.approx(4 / 7)}
    m = model(summary="mean")
    with pytest.raises(PipelineError, match=r"parses, line 2: 3 words but target sentence 1 has 2 tokens"):
        previous_word_analysis(m, SRC, TGT, ["a b c d e", "f g"], 0, ["(S a b c d e)", "(S f g h)"], 50)
    with pytest.raises(PipelineError, match="'sentence' must be an index in"):
        previous_word_analysis(m, SRC, TGT, ["a b c d e", "f g"], 2, None, 50)
    with pytest.raises(PipelineError, match="sentence 1 has 3 target tokens but 2 ids"):
        previous_word_analysis(m, SRC, TGT, ["a b c d e", "f g h"], 0, None, 50)
