"""The RNN decoders' compiled steps (speed-up "compile", pipeline/models/step_compile.py): on by default for CUDA
tensors only, so the CPU path never compiles; forced on here for the CPU, each family's teacher-forced loss and
gradients equal the eager ones, without graph breaks or a recompile for other batch shapes; a failing compile (the
backward's too, compiled with the forward) falls back to eager with one warning line. And the loops' restructuring (one unbind instead of a slice per
step, the context weight sliced once) leaves the eager CPU path bit for bit as it was (reference loops below)."""
import pytest
import torch
import torch.nn.functional as F
from model_variants import V_SRC, V_TGT, batch, make

from pipeline import speedups
from pipeline.models import step_compile
from pipeline.models.conditional_gru import gru_step
from pipeline.models.lstm_attention_decoder import lstm_step
from pipeline.models.previous_word_summary import zero_first

torch.set_num_threads(1)

# one per step function: dl4mt's (and RNMT's) conditional GRU, RNNsearch, shu2016's residual LSTM; and werlen2018's
# Self-attentive RNN (a state memory growing each step: two more graphs, 30 s on 2 cores, so slow)
FAMILIES = ["dl4mt", "rnnsearch", "shu-residual", pytest.param("self-attentive-rnn", marks=pytest.mark.slow)]


@pytest.fixture
def fresh_compile():
    """No compiled step or dynamo cache left from another test, before or after."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    def clear():
        step_compile.reset()
        torch._dynamo.reset()
        counters.clear()
    clear()
    yield
    clear()


@pytest.fixture
def compile_on_cpu(monkeypatch, fresh_compile):
    """Speed-up "compile" on for CPU tensors too (the others as they are)."""
    enabled = speedups.enabled
    monkeypatch.setattr(speedups, "enabled", lambda name, t=None: name == "compile" or enabled(name, t))


def loss_and_grads(model, src, tgt, seed=7):
    """Teacher-forced loss (dropout on) and the gradient of every parameter: (loss, logits, [grads])."""
    model.train().zero_grad(set_to_none=True)
    torch.manual_seed(seed)
    logits = model(src, tgt)
    loss = F.cross_entropy(logits.view(-1, V_TGT), tgt.roll(-1, 1).view(-1))
    loss.backward()
    return loss.detach(), logits.detach(), [p.grad.clone() for p in model.parameters()]


def sized_batch(sentences, src_len, tgt_len, seed):
    """A padded batch (one source and one target shorter than the rest); sizes with sentences x length > 32, where
    inductor's CPU-only decomposition of small matrix products would add a size guard (CUDA has none)."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, V_SRC, (sentences, src_len), generator=g)
    tgt = torch.randint(4, V_TGT, (sentences, tgt_len), generator=g)
    src[1, src_len - 3:], tgt[2, tgt_len - 2:] = 0, 0
    return src, tgt


@pytest.mark.parametrize("name", FAMILIES)
def test_compiled_step_equals_eager(name, compile_on_cpu):
    from torch._dynamo.utils import counters
    src, tgt = sized_batch(24, 7, 6, seed=1)
    model = make(name, seed=2)
    with speedups.only("none"):
        eager = loss_and_grads(model, src, tgt)
    compiled = loss_and_grads(model, src, tgt)
    (step,) = step_compile._steps.values()
    assert step.name == f"{type(model.decoder).__name__}._step"
    assert step.compiled is not None and not step.failed
    assert dict(counters["graph_break"]) == {}
    graphs = counters["stats"]["unique_graphs"]
    assert graphs >= 1
    torch.testing.assert_close(compiled[0], eager[0], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(compiled[1], eager[1], rtol=1e-5, atol=1e-5)
    for c, e in zip(compiled[2], eager[2]):
        torch.testing.assert_close(c, e, rtol=1e-4, atol=1e-6)
    # other batch and source lengths: the same graph (dynamic shapes), still equal to eager
    src2, tgt2 = sized_batch(27, 9, 8, seed=2)
    with speedups.only("none"):
        eager2 = loss_and_grads(model, src2, tgt2)
    compiled2 = loss_and_grads(model, src2, tgt2)
    assert counters["stats"]["unique_graphs"] == graphs
    torch.testing.assert_close(compiled2[0], eager2[0], rtol=1e-5, atol=1e-6)
    for c, e in zip(compiled2[2], eager2[2]):
        torch.testing.assert_close(c, e, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name", ["dl4mt", "rnnsearch", "shu-residual"])
def test_the_cpu_path_compiles_nothing_by_default(name, monkeypatch, fresh_compile):
    def refuse(*args, **kwargs):
        raise AssertionError("torch.compile called on the CPU path")
    monkeypatch.setattr(torch, "compile", refuse)
    src, tgt = batch()
    with speedups.only("all"):
        loss_and_grads(make(name), src, tgt)
    assert step_compile._steps == {}


def test_a_hooked_step_runs_eagerly(compile_on_cpu):
    """zhang2018's source attention reads each step's weights by a forward hook: every step must call it."""
    src, tgt = batch()
    model = make("rnnsearch")
    rows = []
    handle = model.decoder.source_attention().register_forward_hook(lambda m, args, out: rows.append(out[1]))
    with torch.no_grad():
        model(src, tgt)
    handle.remove()
    assert len(rows) == tgt.size(1) and step_compile._steps == {}


def test_a_failing_compile_falls_back_to_eager_with_one_warning(monkeypatch, compile_on_cpu, capsys):
    def broken(fn, **kwargs):
        def run(*args):
            raise RuntimeError("no compiler here\nsecond line")
        return run
    monkeypatch.setattr(torch, "compile", broken)
    src, tgt = batch()
    model = make("dl4mt")
    with speedups.only("none"):
        eager = loss_and_grads(model, src, tgt)
    for _ in range(2):
        fallback = loss_and_grads(model, src, tgt)
        assert torch.equal(fallback[0], eager[0]) and all(map(torch.equal, fallback[2], eager[2]))
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: torch.compile of CGRUDecoder._step failed "
                                                   "(RuntimeError: no compiler here)")


def test_the_backward_compiles_with_the_forward_where_a_failure_can_fall_back(monkeypatch, compile_on_cpu, capsys):
    import torch._inductor.compile_fx
    from torch._functorch import config
    seen = []

    def failing(gm, example_inputs, **kwargs):
        seen.append(config.force_non_lazy_backward_lowering)
        raise RuntimeError("backward does not compile")
    monkeypatch.setattr(torch._inductor.compile_fx, "compile_fx", failing)
    src, tgt = batch()
    model = make("shu-residual")
    with speedups.only("none"):
        eager = loss_and_grads(model, src, tgt)
    fallback = loss_and_grads(model, src, tgt)  # the failure meets the forward call, not loss.backward()
    assert torch.equal(fallback[0], eager[0]) and all(map(torch.equal, fallback[2], eager[2]))
    assert seen == [True]
    assert "backward does not compile" in capsys.readouterr().err


# ---- the eager CPU path as it was before the restructuring, bit for bit --------------------------------------------

def reference_features(model, src, tgt):
    """The decoders' teacher-forced loops as written before (a slice per step, the weight sliced per step)."""
    from pipeline.models.cgru_decoder import activate_readout, initial_state
    y, memory = model.tgt_embed(tgt), model.encode(src)  # the order of model.features
    d, kind = model.decoder, type(model.decoder).__name__
    enc, pad = memory["enc"], memory["enc_pad"]
    if kind == "LSTMAttentionDecoder":
        keys, gates = d.attention.project_keys(enc), d.word_gates(y)
        state, steps = d.initial_state(memory), []
        for t in range(y.size(1)):
            c_t, _ = d.attention(state["h0"], keys, enc, pad)
            g = gates[:, t] + F.linear(c_t, d.cells[0].weight_ih[:, d.options.embed:])
            h, c = lstm_step(g, state["h0"], state["c0"], d.cells[0])
            new = {"h0": h, "c0": c}
            if d.options.layers == 2:
                new["h1"], new["c1"] = d.cells[1](h, (state["h1"], state["c1"]))
            state = new
            steps.append(state)
        return d.output({key: torch.stack([s[key] for s in steps], 1) for key in state})
    y = zero_first(y)
    if kind == "RNNsearchDecoder":
        keys, gates = d.attention.project_keys(enc), d.word_gates(y)
        s, states, contexts = initial_state(d.init_state, memory), [], []
        for j in range(y.size(1)):
            a, _ = d.attention(s, keys, enc, pad)
            s = gru_step(gates[:, j] + F.linear(a, d.gru.weight_ih[:, d.options.embed:]), s, d.gru)
            states.append(s)
            contexts.append(a)
        return d.readout(torch.stack(states, 1), y, torch.stack(contexts, 1))
    keys, gates = d.cell.attention.project_keys(enc), d.cell.input_gates(y)
    s = initial_state(d.init_state, memory)
    past = {"past": s.unsqueeze(1), "past_keys": d.state_attention.project_keys(s).unsqueeze(1)} \
        if d.state_attention is not None else {}
    states, contexts, summaries = [], [], []
    for t in range(y.size(1)):
        s_in = s
        if d.options.state_attention == "memory":
            s_in = d._attend_states(s, past["past"], past["past_keys"])
        s, c, _ = d.cell(gates[:, t], s_in, keys, enc, pad)
        s_mem = d._attend_states(s, past["past"], past["past_keys"]) if d.options.state_attention == "self" else None
        if d.state_attention is not None:
            past["past"] = torch.cat([past["past"], s.unsqueeze(1)], 1)
            past["past_keys"] = torch.cat([past["past_keys"], d.state_attention.project_keys(s).unsqueeze(1)], 1)
        states.append(s)
        contexts.append(c)
        summaries.append(s_mem)
    s_all, c_all = torch.stack(states, 1), torch.stack(contexts, 1)
    s_mem = torch.stack(summaries, 1) if d.readout_memory is not None else None
    return d._readout(s_all, d._words(y, s_all), c_all, s_mem)


def bits(t):
    """A float tensor's bit pattern (so that -0.0 and 0.0 differ)."""
    return t.contiguous().view(torch.int32 if t.dtype == torch.float32 else torch.int16)


@pytest.mark.parametrize("name", ["dl4mt", "memory-rnn", "self-attentive-rnn", "attentive-residual", "rnmt",
                                  "rnnsearch", "shu-baseline", "shu-residual"])
@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_the_eager_cpu_path_is_bitwise_what_it_was(name, precision, fresh_compile):
    src, tgt = batch()
    results = []
    for features in (lambda m: m.features(src, tgt), lambda m: reference_features(m, src, tgt)):
        model = make(name, seed=4).train()
        torch.manual_seed(9)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bfloat16"):
            out = features(model)
            logits = model.output_layer(out)
        F.cross_entropy(logits.float().view(-1, V_TGT), tgt.roll(-1, 1).view(-1)).backward()
        results.append([out.detach()] + [p.grad for p in model.parameters()])
    for new, old in zip(*results):
        assert torch.equal(bits(new), bits(old))
    assert step_compile._steps == {}
