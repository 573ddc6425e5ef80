"""Beam search and greedy decoding over the incremental interface: beam 1 = greedy, beam beats greedy where it
should, exhaustive search on a tiny vocabulary, state reordering under pruning, batching, length limits."""
import functools
import itertools
import math

import pytest
import torch

from pipeline.data.vocab import BOS, EOS
from pipeline.errors import PipelineError
from pipeline.models import Seq2Seq, build_model
from pipeline.search import beam_search, greedy, length_penalty_factor

torch.set_num_threads(1)

SMALL = dict(d_model=16, ffn_dim=24, heads=2, enc_layers=2, dec_layers=2, dropout=0.1)
ARCHS = {"transformer": ("transformer", {}), "biarn-stack-top": ("recurrence", {"rec_steps": 3}),
         "birnn-gated-all": ("recurrence", {"rec_type": "birnn", "integration": "gated", "integrate_into": "all"})}
A, B = 4, 5  # the two real words of the tiny vocabulary (PAD BOS EOS UNK a b)


def make(name, vocab, seed=0):
    arch, extra = ARCHS[name]
    torch.manual_seed(seed)
    return build_model(arch, {**SMALL, **extra}, vocab, vocab).eval()


def sources(vocab, lengths=(4, 2, 6), seed=3):
    """Right-padded sources [3,6], EOS last."""
    g = torch.Generator().manual_seed(seed)
    src = torch.zeros(len(lengths), max(lengths), dtype=torch.long)
    for i, n in enumerate(lengths):
        src[i, :n - 1] = torch.randint(4, vocab, (n - 1,), generator=g)
        src[i, n - 1] = EOS
    return src


class TableModel(Seq2Seq):
    """Next-token probabilities read from a table per source (src[:, 0]) and prefix; unlisted prefixes end.

    The prefix is carried in the state (a base-V code), never re-read from prev_tokens, so a search that does
    not reorder the state gets the wrong distributions."""

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
        return {"source": src[:, 0].clone()}

    def decode_step(self, prev_tokens, memory, state):
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
    assert beam_search(model, src, beam=4, length_penalty=1.0) == [[]]
    assert beam_search(model, src, beam=4, length_penalty=2.0) == [[A]]


def sequence_log_prob(model, src, hyp):
    """log p(hyp + EOS | src) by the full forward pass: src [S] -> float."""
    tokens = torch.tensor([[BOS] + hyp + [EOS]])
    with torch.no_grad():
        lp = torch.log_softmax(model(src.unsqueeze(0), tokens[:, :-1]).float(), -1)[0]
    return lp.gather(1, tokens[0, 1:, None]).sum().item()


def exhaustive(model, src, max_len, alpha):
    """The best hypothesis over every sequence of at most max_len words from {UNK, a, b}."""
    best, best_score = None, -math.inf
    for n in range(max_len + 1):
        for hyp in itertools.product((3, A, B), repeat=n):
            score = sequence_log_prob(model, src, list(hyp)) / length_penalty_factor(n + 1, alpha)
            if score > best_score:
                best, best_score = list(hyp), score
    return best


@functools.lru_cache(maxsize=None)
def half_trained(name):
    """A tiny-vocabulary model after 40 full-batch Adam steps on copying every 1-3 word sequence over {UNK, a, b}:
    peaked, context-dependent distributions (random ones make the empty hypothesis win everywhere)."""
    seqs = [list(s) for n in (1, 2, 3) for s in itertools.product((3, A, B), repeat=n)]
    src = torch.zeros(len(seqs), 4, dtype=torch.long)
    tgt = torch.zeros(len(seqs), 5, dtype=torch.long)
    for i, s in enumerate(seqs):
        src[i, :len(s) + 1] = torch.tensor(s + [EOS])
        tgt[i, :len(s) + 2] = torch.tensor([BOS] + s + [EOS])
    model = make(name, vocab=6).train()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(40):
        opt.zero_grad()
        logits = model(src, tgt[:, :-1])
        torch.nn.functional.cross_entropy(logits.reshape(-1, 6), tgt[:, 1:].reshape(-1), ignore_index=0).backward()
        opt.step()
    return model.eval()


@pytest.mark.parametrize("name", ARCHS)
@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_wide_beam_equals_exhaustive_search(name, alpha):
    """With 40 beams nothing is pruned (1+3+9+27 hypotheses), so beam search must return the exhaustive best:
    this checks scores, EOS handling, length penalty and the reordering of state and memory (3 sentences)."""
    model = half_trained(name)
    src = sources(6, lengths=(4, 2, 3))
    found = beam_search(model, src, beam=40, max_len_a=0.0, max_len_b=3, length_penalty=alpha)
    expected = [exhaustive(model, src[i], 3, alpha) for i in range(3)]
    assert found == expected
    assert max(len(h) for h in expected) >= 2


@pytest.mark.parametrize("name", ARCHS)
def test_beam_one_equals_greedy(name):
    model = make(name, vocab=13)
    src = sources(13)
    out = greedy(model, src, max_len_a=1.0, max_len_b=4)
    assert beam_search(model, src, beam=1, max_len_a=1.0, max_len_b=4) == out
    assert max(len(h) for h in out) >= 3


class Recompute(Seq2Seq):
    """A wrapper without incremental state: every step reruns the wrapped model's full forward pass."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def encode(self, src):
        return {"src": src}

    def decode_step(self, prev_tokens, memory, state):
        return self.model(memory["src"], prev_tokens)[:, -1], {}


@pytest.mark.parametrize("name", ARCHS)
def test_pruned_beam_search_with_cached_state_equals_recomputation(name):
    """Beam 3 over 13 words prunes and reorders every step; the cached-state search must match a stateless one."""
    model = make(name, vocab=13, seed=4)
    src = sources(13)
    kwargs = dict(beam=3, max_len_a=1.0, max_len_b=5, length_penalty=0.6)
    cached = beam_search(model, src, **kwargs)
    assert cached == beam_search(Recompute(model), src, **kwargs)
    assert cached != greedy(model, src, max_len_a=1.0, max_len_b=5)  # the search really differs from greedy


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


def test_search_restores_training_mode_and_rejects_bad_beam():
    model = make("transformer", vocab=13).train()
    src = sources(13)
    beam_search(model, src, beam=2, max_len_b=3)
    greedy(model, src, max_len_b=3)
    assert model.training
    with pytest.raises(PipelineError, match="beam"):
        beam_search(model, src, beam=0)
