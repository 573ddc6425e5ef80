"""Beam search and greedy decoding over the incremental interface: beam 1 = greedy, beam beats greedy where it
should, exhaustive search on a tiny vocabulary for every length treatment, n-best lists, state reordering under
pruning, batching, length limits, and ensembles (pipeline.ensemble) decoded by the same search."""
import functools
import itertools
import math

import pytest
import torch
from model_variants import Recompute, sources

from pipeline.data.vocab import BOS, EOS
from pipeline.ensemble import Ensemble
from pipeline.errors import PipelineError
from pipeline.models.layers import PENDING_ORDER
from pipeline.models.seq2seq import SHARED, Seq2Seq, index_batch
from pipeline.beam import length_divisor, length_penalty_factor
from pipeline.beam_search import beam_search, beam_search_nbest
from pipeline.search import greedy

torch.set_num_threads(1)

SMALL = dict(d_model=16, ffn_dim=24, heads=2, enc_layers=2, dec_layers=2, dropout=0.1)
T = {"encoder": "transformer", "decoder": "transformer"}
R = {"encoder": "recurrence", "decoder": "recurrence"}
ARCHS = {"transformer": T, "biarn-stack-top": {**R, "rec_steps": 3},
         "birnn-gated-all": {**R, "rec_type": "birnn", "integration": "gated", "integrate_into": "all"}}
A, B = 4, 5  # the two real words of the tiny vocabulary (PAD BOS EOS UNK a b)
MODES = [("penalty", 0.0), ("penalty", 0.6), ("normalize", 0.6), ("none", 0.6)]  # alpha only counts for penalty


def make(name, vocab, seed=0):
    """The one place that builds a model."""
    from pipeline.models import build_model
    torch.manual_seed(seed)
    return build_model({**SMALL, **ARCHS[name]}, vocab, vocab).eval()


def first_model(name, wanted, vocab=13, seeds=range(10)):
    """The model of the first seed for which wanted(model) holds (a random model with a property the test needs)."""
    for seed in seeds:
        model = make(name, vocab=vocab, seed=seed)
        if wanted(model):
            return model
    raise AssertionError(f"{name}: no seed in {seeds} gives a model with the property the test needs")


class TableModel(Seq2Seq):
    """Next-token probabilities read from a table per source (src[:, 0]) and prefix; unlisted prefixes end.

    The prefix is carried in the state (a base-V code), never re-read from prev_tokens, so a search that does
    not reorder the state gets the wrong distributions. The memory also holds a SHARED entry (no batch dimension)
    that must reach decode_step untouched."""

    V = 6

    def __init__(self, tables):
        super().__init__()
        self.tables = tables  # {source id: {prefix tuple: {token: probability}}}

    def _logits(self, source: int, prefix: tuple) -> torch.Tensor:
        probs = self.tables[source].get(prefix, {EOS: 1.0})
        rest = [t for t in (EOS, 3, A, B) if t not in probs]
        mass = (1.0 - sum(probs.values())) / len(rest) if rest else 0.0
        row = torch.full((self.V,), float("-inf"))
        for t in (EOS, 3, A, B):
            p = probs.get(t, mass)
            row[t] = math.log(p) if p > 0 else float("-inf")
        return row

    def encode(self, src):
        return {"source": src[:, 0].clone(), f"{SHARED}table": torch.zeros(7, 3)}

    def decode_step(self, prev_tokens, memory, state):
        assert memory[f"{SHARED}table"].shape == (7, 3)  # never indexed by hypothesis
        code = torch.zeros(prev_tokens.size(0), dtype=torch.long) if state is None else state["code"]
        code = code * self.V + prev_tokens[:, -1]
        rows = []
        for source, c in zip(memory["source"].tolist(), code.tolist()):
            digits = []
            while c:
                c, d = divmod(c, self.V)
                digits.append(d)
            rows.append(self._logits(source, tuple(reversed(digits))[1:]))  # drop the BOS digit
        return torch.stack(rows), {"code": code}

    def forward(self, src, tgt_in):
        memory, state, out = self.encode(src), None, []
        for t in range(1, tgt_in.size(1) + 1):
            logits, state = self.decode_step(tgt_in[:, :t], memory, state)
            out.append(logits)
        return torch.stack(out, dim=1)


# Source 7: greedy takes a (0.55) then ends (0.36): 0.198; beam finds b then end: 0.45 * 0.95 = 0.4275.
# Source 8: greedy is already optimal (b a).
TABLES = {7: {(): {A: 0.55, B: 0.45}, (A,): {EOS: 0.36, A: 0.34, B: 0.30}, (B,): {EOS: 0.95}},
          8: {(): {B: 0.9}, (B,): {A: 0.9}, (B, A): {EOS: 0.99}}}


def test_beam_beats_greedy_where_greedy_is_suboptimal():
    model = TableModel(TABLES)
    src = torch.tensor([[7, EOS], [8, EOS], [7, EOS]])
    assert greedy(model, src) == [[A], [B, A], [A]]
    assert beam_search(model, src, beam=2) == [[B], [B, A], [B]]
    assert beam_search(model, src, beam=1) == [[A], [B, A], [A]]


def test_length_penalty_counts_the_eos():
    """Empty: log p = -1 -> -1 / lp(1) = -1. [a]: log p = -1.18 -> -1.18 / lp(2) = -1.011 with alpha 1, so the
    empty hypothesis wins; were the EOS not counted, [a] would (-1.18 / lp(1) > -1 / lp(0) = -1.2)."""
    assert length_penalty_factor(1, 0.6) == 1.0 and length_penalty_factor(7, 1.0) == 2.0
    table = {9: {(): {EOS: math.exp(-1.0), A: 0.5}, (A,): {EOS: math.exp(-1.18) / 0.5}}}
    model = TableModel(table)
    src = torch.tensor([[9, EOS]])
    assert beam_search(model, src, beam=4, alpha=1.0) == [[]]
    assert beam_search(model, src, beam=4, alpha=2.0) == [[A]]


def test_length_divisors():
    assert length_divisor("penalty", 7, 1.0) == 2.0 and length_divisor("penalty", 3, 0.0) == 1.0
    assert length_divisor("normalize", 4, 0.6) == 4.0  # alpha plays no part
    assert length_divisor("none", 4, 0.6) == 1.0
    with pytest.raises(PipelineError, match="'length'.*penalty, normalize, none"):
        length_divisor("average", 4, 0.6)


# Source 10, at most 3 words: [a] has log p = ln 0.6 = -0.51, [b b b] ln 0.4 + 2 ln 0.98 + ln 0.99 = -0.97.
# Raw log p prefers the short one; per token (EOS counted: 2 vs 4) the long one (-0.242 > -0.255).
SHORT_LONG = {10: {(): {A: 0.6, B: 0.4}, (A,): {EOS: 1.0}, (B,): {B: 0.98, EOS: 0.02},
                   (B, B): {B: 0.98, EOS: 0.02}, (B, B, B): {EOS: 0.99}}}
LOG_P = {(A,): math.log(0.6), (B,): math.log(0.4) + math.log(0.02),
         (B, B): math.log(0.4) + math.log(0.98) + math.log(0.02),
         (B, B, B): math.log(0.4) + 2 * math.log(0.98) + math.log(0.99)}


@pytest.mark.parametrize("length, alpha, order", [
    ("none", 0.6, [(A,), (B, B, B), (B,), (B, B)]),
    ("normalize", 0.6, [(B, B, B), (A,), (B, B), (B,)]),
    ("penalty", 1.0, [(A,), (B, B, B), (B, B), (B,)]),  # GNMT alpha 1 still favours the short one here
])
def test_length_treatment_ranks_the_nbest_list_with_exact_scores(length, alpha, order):
    """Every finished hypothesis of the table (4) in the n-best list, ranked and scored as the mode says."""
    model = TableModel(SHORT_LONG)
    src = torch.tensor([[10, 3, EOS]])
    kwargs = dict(beam=4, max_len_a=0.0, max_len_b=3, length=length, alpha=alpha)
    nbest = beam_search_nbest(model, src, nbest=4, **kwargs)[0]
    assert [tuple(h) for _, h in nbest] == order
    divisor = {"none": lambda n: 1.0, "normalize": lambda n: n, "penalty": lambda n: ((5 + n) / 6) ** alpha}[length]
    expected = [LOG_P[h] / divisor(len(h) + 1) for h in order]  # + 1: the EOS
    assert [s for s, _ in nbest] == pytest.approx(expected, rel=1e-6)
    assert beam_search(model, src, **kwargs) == [list(order[0])]
    assert beam_search_nbest(model, src, nbest=2, **kwargs)[0] == nbest[:2]


def sequence_log_prob(models, src, hyp):
    """log p(hyp + EOS | src) by full forward passes: src [S] -> float. Several models: each step's distribution
    is the renormalised mean of their log-probabilities (what beam search does with an Ensemble)."""
    tokens = torch.tensor([[BOS] + hyp + [EOS]])
    with torch.no_grad():
        lps = [torch.log_softmax(m(src.unsqueeze(0), tokens[:, :-1]).float(), -1)[0] for m in models]
        lp = lps[0] if len(lps) == 1 else torch.log_softmax(torch.stack(lps).mean(0), -1)
    return lp.gather(1, tokens[0, 1:, None]).sum().item()


def exhaustive(models, src, max_len, length, alpha):
    """The best hypothesis over every sequence of at most max_len words from {UNK, a, b}."""
    best, best_score = None, -math.inf
    for n in range(max_len + 1):
        for hyp in itertools.product((3, A, B), repeat=n):
            score = sequence_log_prob(models, src, list(hyp)) / length_divisor(length, n + 1, alpha)
            if score > best_score:
                best, best_score = list(hyp), score
    return best


@functools.lru_cache(maxsize=None)
def half_trained(name, seed=0):
    """A tiny-vocabulary model after 40 full-batch Adam steps on copying every 1-3 word sequence over {UNK, a, b}:
    peaked, context-dependent distributions (random ones make the empty hypothesis win everywhere)."""
    seqs = [list(s) for n in (1, 2, 3) for s in itertools.product((3, A, B), repeat=n)]
    src = torch.zeros(len(seqs), 4, dtype=torch.long)
    tgt = torch.zeros(len(seqs), 5, dtype=torch.long)
    for i, s in enumerate(seqs):
        src[i, :len(s) + 1] = torch.tensor(s + [EOS])
        tgt[i, :len(s) + 2] = torch.tensor([BOS] + s + [EOS])
    model = make(name, vocab=6, seed=seed).train()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(40):
        opt.zero_grad()
        logits = model(src, tgt[:, :-1])
        torch.nn.functional.cross_entropy(logits.reshape(-1, 6), tgt[:, 1:].reshape(-1), ignore_index=0).backward()
        opt.step()
    return model.eval()


@pytest.mark.parametrize("name", [*ARCHS, "ensemble"])
@pytest.mark.parametrize("length, alpha", MODES)
def test_wide_beam_equals_exhaustive_search(name, length, alpha):
    """With 40 beams nothing is pruned (1+3+9+27 hypotheses), so beam search must return the exhaustive best:
    this checks scores, EOS handling, the length treatment and the reordering of state and memory (3 sentences).
    "ensemble": a transformer and a recurrence model, scored by hand from the members' own forward passes."""
    members = [half_trained("transformer"), half_trained("biarn-stack-top")] if name == "ensemble" \
        else [half_trained(name)]
    model = Ensemble(members) if name == "ensemble" else members[0]
    src = sources(6, lengths=(4, 2, 3))
    found = beam_search(model, src, beam=40, max_len_a=0.0, max_len_b=3, length=length, alpha=alpha)
    expected = [exhaustive(members, src[i], 3, length, alpha) for i in range(3)]
    assert found == expected
    assert max(len(h) for h in expected) >= 2


@pytest.mark.parametrize("name", ARCHS)
def test_nbest_scores_are_sorted_recomputable_and_led_by_the_beam_search_output(name):
    model = make(name, vocab=13, seed=6)
    src = sources(13)
    kwargs = dict(beam=4, max_len_a=1.0, max_len_b=4, length="normalize")
    nbest = beam_search_nbest(model, src, nbest=4, **kwargs)
    assert [hyps[0][1] for hyps in nbest] == beam_search(model, src, **kwargs)
    for i, hyps in enumerate(nbest):
        scores = [s for s, _ in hyps]
        assert len(hyps) == 4 and scores == sorted(scores, reverse=True)
        assert len({tuple(h) for _, h in hyps}) == 4  # distinct hypotheses
        n = int(src[i].ne(0).sum())
        for score, hyp in hyps:
            assert score == pytest.approx(sequence_log_prob([model], src[i, :n], hyp) / (len(hyp) + 1), abs=1e-4)


@pytest.mark.parametrize("name", ARCHS)
def test_beam_one_equals_greedy(name):
    src = sources(13)
    # a random model that writes more than a word or two before EOS
    model = first_model(name, lambda m: max(len(h) for h in greedy(m, src, max_len_a=1.0, max_len_b=4)) >= 3)
    out = greedy(model, src, max_len_a=1.0, max_len_b=4)
    assert beam_search(model, src, beam=1, max_len_a=1.0, max_len_b=4) == out


@pytest.mark.parametrize("name", ARCHS)
def test_pruned_beam_search_with_cached_state_equals_recomputation(name):
    """Beam 3 over 13 words prunes and reorders every step; the cached-state search must match a stateless one."""
    src = sources(13)
    kwargs = dict(beam=3, max_len_a=1.0, max_len_b=5, alpha=0.6)
    # a random model on which the search really differs from greedy
    model = first_model(name, lambda m: beam_search(m, src, **kwargs) != greedy(m, src, max_len_a=1.0, max_len_b=5))
    assert beam_search(model, src, **kwargs) == beam_search(Recompute(model), src, **kwargs)


class RowCounter(Seq2Seq):
    """The wrapped model, recording the rows of every decoder step and of the memory each step reads."""

    def __init__(self, model):
        super().__init__()
        self.model, self.rows = model, []

    def encode(self, src):
        return self.model.encode(src)

    def decode_step(self, prev_tokens, memory, state):
        self.rows.append((prev_tokens.size(0), memory["enc"].size(0)))
        return self.model.decode_step(prev_tokens, memory, state)

    def reorder_state(self, state, order):
        return self.model.reorder_state(state, order)


@pytest.mark.parametrize("name", ARCHS)
def test_first_step_runs_once_per_sentence_then_once_per_beam(name):
    """Every beam of a sentence starts from BOS: step 1 (and the projections of memory it caches) runs on one row per
    sentence, later steps on K rows per live sentence; the hypotheses are those of the cached-state search checked
    against recomputation above."""
    model = make(name, vocab=13, seed=5)
    src = sources(13, lengths=(4, 2, 6, 3))
    counter = RowCounter(model)
    assert beam_search(counter, src, beam=3, max_len_b=4) == beam_search(Recompute(model), src, beam=3, max_len_b=4)
    assert counter.rows[0] == (4, 4)
    assert counter.rows[1] == (12, 12)
    assert all(rows % 3 == 0 and rows == memory for rows, memory in counter.rows[1:])


@pytest.mark.parametrize("name", ["transformer", "biarn-stack-top"])
def test_deferred_reorder_of_the_self_attention_caches_equals_reordering_at_once(name):
    """The decoder's reorder_state leaves the self-attention caches to the next step (PENDING_ORDER, composed over
    two reorders: beam search's expansion, then its first pruning); that step must see exactly what selecting the
    rows at once (index_batch) and concatenating gives."""
    model = make(name, vocab=13, seed=3)
    src = sources(13, lengths=(4, 2, 6, 3))
    expand, prune = torch.arange(4).repeat_interleave(3), torch.tensor([2, 0, 0, 5, 4, 4, 8, 7, 6, 11, 9, 9])
    with torch.no_grad():
        memory = model.encode(src)
        logits, state = model.decode_step(torch.full((4, 1), BOS), memory, None)
        memory = model.reorder_memory(memory, expand)
        lazy = model.reorder_state(model.reorder_state(state, expand), prune)
        eager = index_batch(index_batch(state, expand), prune)
        assert PENDING_ORDER.startswith(SHARED) and PENDING_ORDER in lazy and PENDING_ORDER not in eager
        tokens = torch.full((12, 2), BOS)
        tokens[:, 1] = torch.arange(12) % 13
        lazy_logits, lazy_state = model.decode_step(tokens, memory, lazy)
        eager_logits, eager_state = model.decode_step(tokens, memory, eager)
    assert torch.equal(lazy_logits, eager_logits)
    assert lazy_state.keys() == eager_state.keys() and PENDING_ORDER not in lazy_state
    assert all(torch.equal(lazy_state[k], eager_state[k]) for k in lazy_state)
    assert lazy_state["dec0.self.k"].shape[0] == 12 and lazy_state["dec0.self.k"].shape[2] == 2


@pytest.mark.parametrize("name", ARCHS)
def test_batched_search_equals_one_sentence_at_a_time(name):
    model = make(name, vocab=13, seed=5)
    src = sources(13, lengths=(4, 2, 6, 3))
    together = beam_search(model, src, beam=4)
    alone = [beam_search(model, src[i:i + 1, :n], beam=4)[0] for i, n in enumerate((4, 2, 6, 3))]
    assert together == alone


def test_length_limit_and_forced_eos():
    words = [p for n in range(6) for p in itertools.product((3, A, B), repeat=n)]
    never_ends = {7: {prefix: {A: 0.98, EOS: 0.001} for prefix in words}}
    model = TableModel(never_ends)
    src = torch.tensor([[7, 3, EOS]])  # 3 source words: limit floor(0.5 * 3 + 1) = 2
    assert beam_search(model, src, beam=3, max_len_a=0.5, max_len_b=1) == [[A, A]]
    assert greedy(model, src, max_len_a=0.5, max_len_b=1) == [[A, A]]
    assert beam_search(model, src, beam=2, max_len_a=0.0, max_len_b=0) == [[]]


def test_a_sentence_that_cannot_end_gets_the_empty_hypothesis():
    words = [p for n in range(4) for p in itertools.product((3, A, B), repeat=n)]
    model = TableModel({7: {prefix: {A: 0.5, B: 0.5} for prefix in words}})  # EOS impossible, even when forced
    src = torch.tensor([[7, EOS], [7, EOS]])
    assert beam_search_nbest(model, src, nbest=2, beam=2, max_len_a=0.0, max_len_b=2) == [[(-math.inf, [])]] * 2
    assert beam_search(model, src, beam=2, max_len_a=0.0, max_len_b=2) == [[], []]


def test_search_restores_training_mode_and_rejects_bad_settings():
    model = TableModel(TABLES).train()
    src = torch.tensor([[7, EOS]])
    beam_search(model, src, beam=2, max_len_b=3)
    greedy(model, src, max_len_b=3)
    assert model.training
    with pytest.raises(PipelineError, match="beam"):
        beam_search(model, src, beam=0)
    with pytest.raises(PipelineError, match="nbest.*beam size 2, got 3"):
        beam_search_nbest(model, src, nbest=3, beam=2)
    with pytest.raises(PipelineError, match="'length'"):
        beam_search(model, src, length="normalise")


# ------------------------------------------------------------------------------------------------- ensembles
def assert_same_nbest(got, expected):
    """Same hypotheses in the same order; scores equal up to float rounding."""
    assert [[h for _, h in hyps] for hyps in got] == [[h for _, h in hyps] for hyps in expected]
    for g, e in zip(got, expected):
        assert [s for s, _ in g] == pytest.approx([s for s, _ in e], rel=1e-5, abs=1e-6)


def test_an_ensemble_of_a_model_with_itself_is_that_model():
    """Same hypotheses and (up to float rounding of the renormalisation) the same scores, with pruning (beam 3
    over 13 words), batching and finished sentences leaving the batch."""
    model = make("transformer", vocab=13, seed=4)
    src = sources(13, lengths=(4, 2, 6, 3))
    kwargs = dict(nbest=3, beam=3, max_len_a=1.0, max_len_b=5, length="normalize")
    assert_same_nbest(beam_search_nbest(Ensemble([model, model]), src, **kwargs),
                      beam_search_nbest(model, src, **kwargs))
    assert greedy(Ensemble([model]), src) == greedy(model, src)
    assert not model.training  # the search left the member in its own (eval) mode
    table = TableModel(TABLES)  # exact log-probabilities, SHARED memory entries
    tsrc = torch.tensor([[7, EOS], [8, EOS], [7, EOS]])
    assert_same_nbest(beam_search_nbest(Ensemble([table, table]), tsrc, nbest=2, beam=2),
                      beam_search_nbest(table, tsrc, nbest=2, beam=2))


def test_an_ensemble_of_two_models_averages_their_log_probs():
    first, second = half_trained("transformer"), half_trained("transformer", seed=1)
    ensemble = Ensemble([first, second])
    src = sources(6, lengths=(4, 2, 3))
    bos = torch.full((3, 1), BOS)
    with torch.no_grad():
        got, state = ensemble.decode_step(bos, ensemble.encode(src), None)
        hand = [torch.log_softmax(m.decode_step(bos, m.encode(src), None)[0], -1) for m in (first, second)]
    torch.testing.assert_close(got, (hand[0] + hand[1]) / 2)
    assert not torch.allclose(hand[0], hand[1])
    assert all(key.split("/")[0].removeprefix(SHARED) in ("0", "1") for key in state)  # member-prefixed state
    kwargs = dict(nbest=3, beam=3, max_len_a=0.0, max_len_b=3, length="none")
    together = [[s for s, _ in hyps] for hyps in beam_search_nbest(ensemble, src, **kwargs)]
    for member in (first, second):
        assert together != [[s for s, _ in hyps] for hyps in beam_search_nbest(member, src, **kwargs)]


class Limited(TableModel):
    max_input_len = 5
    max_output_len = 1


def test_ensemble_limits_are_the_members_minimum_and_vocabularies_must_agree():
    ensemble = Ensemble([TableModel(TABLES), Limited(TABLES)])
    assert ensemble.max_input_len == 5 and ensemble.max_output_len == 1
    assert Ensemble([TableModel(TABLES)]).max_output_len is None
    src = torch.tensor([[8, EOS]])
    assert beam_search(TableModel(TABLES), src, beam=2) == [[B, A]]
    assert len(beam_search(ensemble, src, beam=2)[0]) == 1  # cut to one word by the limited member
    assert len(greedy(ensemble, src)[0]) == 1
    memory, order = ensemble.encode(torch.tensor([[8, EOS], [7, EOS]])), torch.tensor([1, 1, 0])
    by_default = Seq2Seq.reorder_memory(ensemble, memory, order)  # batch-first index_select, SHARED kept
    by_member = ensemble.reorder_memory(memory, order)
    assert by_default.keys() == by_member.keys() == memory.keys()
    assert all(torch.equal(by_default[key], by_member[key]) for key in memory)
    with pytest.raises(PipelineError, match="at least one"):
        Ensemble([])
    with pytest.raises(PipelineError, match="member 1 scores 13 target words, member 0 6"):
        beam_search(Ensemble([half_trained("transformer"), make("transformer", vocab=13)]), sources(6), beam=2)
