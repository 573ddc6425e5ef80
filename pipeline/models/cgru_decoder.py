"""dl4mt's conditional-GRU decoder (werlen2018 A.3) and werlen2018's variants: the mean and self-attentive residual
connections (sec. 4, eq. 8-13, A.3.1), the Memory RNN (5.1, A.3.2) and the Self-attentive RNN (5.2, A.3.3); with the
maxout readout, zhang2018's RNNsearch* (sec. 5.2, eq. 13).

The first target input y_0 is a zero vector, not an embedding (previous_word_summary.zero_first), so that d_1 = 0 in
the residual variants.
"""
from __future__ import annotations

import functools

import torch
from torch import Tensor, nn

from pipeline.models.additive_attention import AdditiveAttention
from pipeline.models.cgru_decoder_options import CGRUDecoderOptions
from pipeline.models.conditional_gru import ConditionalGRU
from pipeline.models.layers import Dropout, masked_mean
from pipeline.models.previous_word_summary import PreviousWordSummary, summarise, summarise_step, zero_first
from pipeline.models.seq2seq import Decoder, register_decoder
from pipeline.models.step_compile import BATCH, SEQUENCE, step_function

STEP_DIMS = (BATCH, BATCH, SEQUENCE, SEQUENCE, SEQUENCE, SEQUENCE, SEQUENCE)  # _step's batch and length dimensions


def readout_units(embed: int, readout: str) -> int:
    """Size of the readout's pre-activation: embed for tanh, 2 x embed for maxout (pairs pooled to embed)."""
    return 2 * embed if readout == "maxout" else embed


def activate_readout(pre: Tensor, readout: str) -> Tensor:
    """tanh, or maxout with pool 2 over adjacent units (Bahdanau et al. 2015 A.2.2; zhang2018's RNNsearch*):
    pre [...,u] -> [...,u] (tanh) or [...,u/2] (maxout: max(pre_2k, pre_2k+1))."""
    if readout == "maxout":
        return pre.unflatten(-1, (-1, 2)).amax(-1)
    return torch.tanh(pre)


def initial_state(init_state: nn.Linear, memory: dict[str, Tensor]) -> Tensor:
    """s_0 = tanh(W_init mean(H) + b) over the non-padding source positions (dl4mt; werlen2018 A.3): [B,h]."""
    return torch.tanh(init_state(masked_mean(memory["enc"], memory["enc_pad"])))


@register_decoder("cgru")
class CGRUDecoder(Decoder):
    """Embedded targets [B,T,e] + memory {"enc" [B,S,c], "enc_pad"} -> readout features [B,T,e].

    s_0 = tanh(W_init mean(H)) over the non-padding positions (A.3); s_t = cGRU(y_{t-1}, s_{t-1}, H) (A.3);
    readout tanh(W_st s_t + W_r r_t + W_ct c_t [+ W_mt s~_t]) -> dropout, r_t = E[y_{t-1}] or d_t (eq. 8); or, with
    readout "maxout", the same sum over 2 x e units max-pooled in pairs (zhang2018's RNNsearch*).
    """

    def __init__(self, options: CGRUDecoderOptions, memory_dims):
        super().__init__(options, memory_dims)
        o, context = options, memory_dims["enc"]
        self.init_state = nn.Linear(context, o.hidden)
        self.cell = ConditionalGRU(o.embed, o.hidden, context, o.attention_dim or context)
        units = readout_units(o.embed, o.readout)
        self.readout_state = nn.Linear(o.hidden, units)  # W_st
        self.readout_words = nn.Linear(o.embed, units)  # W_yt (previous word) or W_dt (summary d_t)
        self.readout_context = nn.Linear(context, units)  # W_ct
        self.summary = (PreviousWordSummary(o.embed, o.hidden, o.summary_score == "content_scope")
                        if o.summary == "attention" else None)
        # Memory RNN / Self-attentive RNN: e_ti = v^T tanh(W_m s_i + W_s s) over s_0..s_{t-1} (A.3.2-3); s_0 is
        # included so that the first step has a state to attend (our choice)
        self.state_attention = (AdditiveAttention(o.hidden, o.hidden, o.hidden)
                                if o.state_attention != "none" else None)
        self.readout_memory = nn.Linear(o.hidden, units) if o.state_attention == "self" else None  # W_mt
        self.drop = Dropout(o.dropout)

    def source_attention(self) -> nn.Module:
        """c_t's attention, queried by s'_t (A.3): one call per step."""
        return self.cell.attention

    def _readout(self, s: Tensor, words: Tensor, c: Tensor, s_mem: Tensor | None) -> Tensor:
        out = self.readout_state(s) + self.readout_words(words) + self.readout_context(c)
        if self.readout_memory is not None:
            out = out + self.readout_memory(s_mem)
        return self.drop(activate_readout(out, self.options.readout))

    def _words(self, y: Tensor, s: Tensor) -> Tensor:
        """r_t for every position: y [B,T,e] (y_0 = 0), s [B,T,h] -> [B,T,e]: E[y_{t-1}] or the summary d_t."""
        d = summarise(self.options.summary, self.summary, y, s)
        return y if d is None else d

    def _recur(self, gates_t: Tensor, s: Tensor, past: dict[str, Tensor], keys: Tensor,
               memory: dict[str, Tensor], step=None) -> tuple[Tensor, Tensor, Tensor | None]:
        """One decoder step: gates_t [B,3h] (GRU_1's input projections), s_{t-1} [B,h], past {"past": s_0..s_{t-1}
        [B,t,h], "past_keys": their projections} (state attention only; extended in place) -> s_t, c_t and s~_t
        (Self-attentive RNN, else None). step: _step bound to self, eager or compiled (step_function)."""
        step = step or functools.partial(CGRUDecoder._step, self)
        s, c, s_mem, states, state_keys = step(gates_t, s, past.get("past"), past.get("past_keys"), keys,
                                               memory["enc"], memory["enc_pad"])
        if states is not None:
            past["past"], past["past_keys"] = states, state_keys
        return s, c, s_mem

    def _step(self, gates_t: Tensor, s: Tensor, past: Tensor | None, past_keys: Tensor | None, keys: Tensor,
              enc: Tensor, pad: Tensor) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None, Tensor | None]:
        """_recur as a function of tensors (what speed-up "compile" compiles): past, past_keys [B,t,h] or None ->
        s_t, c_t, s~_t or None, and past, past_keys extended by s_t (state attention) or None."""
        s_in = s
        if self.options.state_attention == "memory":  # A.3.2: the recurrence reads s~_t, queried by s_{t-1}
            s_in = self._attend_states(s, past, past_keys)
        s, c, _ = self.cell(gates_t, s_in, keys, enc, pad)
        s_mem = None
        if self.options.state_attention == "self":  # A.3.3: s~_t over s_0..s_{t-1}, queried by s_t
            s_mem = self._attend_states(s, past, past_keys)
        if self.state_attention is not None:
            past = torch.cat([past, s.unsqueeze(1)], 1)
            past_keys = torch.cat([past_keys, self.state_attention.project_keys(s).unsqueeze(1)], 1)
        return s, c, s_mem, past, past_keys

    def _attend_states(self, query: Tensor, past: Tensor, past_keys: Tensor) -> Tensor:
        """s~ = sum_i alpha_i s_i over the previous states past [B,t,h] (keys past_keys): query [B,h] -> [B,h]."""
        no_pad = torch.zeros(past.shape[:2], dtype=torch.bool, device=query.device)
        return self.state_attention(query, past_keys, past, no_pad)[0]

    def _start(self, memory: dict[str, Tensor]) -> tuple[Tensor, dict[str, Tensor]]:
        """s_0 and the previous-state memory holding it (state attention)."""
        s0 = initial_state(self.init_state, memory)
        if self.state_attention is None:
            return s0, {}
        return s0, {"past": s0.unsqueeze(1), "past_keys": self.state_attention.project_keys(s0).unsqueeze(1)}

    def forward(self, y: Tensor, memory: dict[str, Tensor]) -> Tensor:
        y = zero_first(y)
        keys, gates = self.cell.attention.project_keys(memory["enc"]), self.cell.input_gates(y)
        s, past = self._start(memory)
        states, contexts, summaries = [], [], []
        step = step_function(CGRUDecoder._step, self, y, STEP_DIMS)  # compiled on CUDA (speed-up "compile")
        for gates_t in gates.unbind(1):  # one backward node for all steps, not one full-size gradient per step
            s, c, s_mem = self._recur(gates_t, s, past, keys, memory, step)
            states.append(s)
            contexts.append(c)
            summaries.append(s_mem)
        s_all, c_all = torch.stack(states, 1), torch.stack(contexts, 1)
        s_mem = torch.stack(summaries, 1) if self.readout_memory is not None else None
        return self._readout(s_all, self._words(y, s_all), c_all, s_mem)

    def previous_word_weights(self, y: Tensor, memory: dict[str, Tensor]) -> Tensor | None:
        """Teacher-forced attention over the previous positions, as forward uses it: y [B,T,e] (BOS + target) ->
        [B,T,T], row p (step t = p + 1, predicting y_{p+1}) a distribution over positions 0..p (y_0..y_p, or
        s_0..s_p with state attention), zero above the diagonal; None for the baseline (E[y_{t-1}], no attention)."""
        o = self.options
        if o.summary == "previous" and self.state_attention is None:
            return None
        y = zero_first(y)
        t = y.size(1)
        if o.summary == "mean":  # eq. 9 as _words computes it: 1 / (p + 1) on each of y_0..y_p
            uniform = torch.ones(t, t, dtype=y.dtype, device=y.device).tril()
            return (uniform / uniform.sum(1, keepdim=True)).expand(y.size(0), -1, -1)
        if o.summary == "attention" and o.summary_score == "content":  # eq. 11 + 13: no state needed
            return self.summary.weights(y)
        keys, gates = self.cell.attention.project_keys(memory["enc"]), self.cell.input_gates(y)
        s, past = self._start(memory)
        states, rows = [], []
        for step in range(t):
            if o.state_attention == "memory":  # A.3.2, eq. 15-17: queried by s_{t-1} over s_0..s_{t-1}
                no_pad = torch.zeros(past["past"].shape[:2], dtype=torch.bool, device=y.device)
                rows.append(self.state_attention(s, past["past_keys"], past["past"], no_pad)[1])
            s, _, _ = self._recur(gates[:, step], s, past, keys, memory)
            states.append(s)
            if o.state_attention == "self":  # A.3.3, eq. 19-21: queried by s_t over s_0..s_{t-1} (past now ends in s_t)
                no_pad = torch.zeros(past["past"].shape[0], step + 1, dtype=torch.bool, device=y.device)
                rows.append(self.state_attention(s, past["past_keys"][:, :-1], past["past"][:, :-1], no_pad)[1])
        if o.summary == "attention":  # content+scope, eq. 11-12: W_s s_t with the states s_1..s_T
            return self.summary.weights(y, torch.stack(states, 1))
        return torch.stack([nn.functional.pad(row, (0, t - row.size(1))) for row in rows], 1)

    def step(self, y: Tensor, position: int, memory: dict[str, Tensor],
             state: dict[str, Tensor] | None) -> tuple[Tensor, dict[str, Tensor]]:
        y = zero_first(y, position)  # [B,1,e]
        if "cgru.keys" not in memory:  # the encoder keys' projection, fixed for the whole search
            memory["cgru.keys"] = self.cell.attention.project_keys(memory["enc"])
        if state is None:
            s0, past = self._start(memory)
            state = {"s": s0, **past}
        state = dict(state)
        past = {k: state[k] for k in ("past", "past_keys") if k in state}
        s, c, s_mem = self._recur(self.cell.input_gates(y[:, 0]), state["s"], past, memory["cgru.keys"], memory)
        state.update(past)
        state["s"] = s
        d = summarise_step(self.options.summary, self.summary, y, position, s, state)
        words = y[:, 0] if d is None else d
        return self._readout(s, words, c, s_mem), state
