"""dl4mt's conditional-GRU decoder (werlen2018 A.3) and werlen2018's variants: the mean and self-attentive residual
connections (sec. 4, eq. 8-13, A.3.1), the Memory RNN (5.1, A.3.2) and the Self-attentive RNN (5.2, A.3.3).

The first target input y_0 is a zero vector, not an embedding (dl4mt shifts the target embeddings right and puts
zeros first), so that d_1 = 0 in the residual variants.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from pipeline.models.additive_attention import AdditiveAttention
from pipeline.models.cgru_decoder_options import CGRUDecoderOptions
from pipeline.models.conditional_gru import ConditionalGRU
from pipeline.models.layers import Dropout, masked_mean
from pipeline.models.seq2seq import Decoder, register_decoder

NEG = torch.finfo(torch.float32).min


class PreviousWordSummary(nn.Module):
    """d_t, the self-attentive summary of the previous target words y_0..y_{t-1} (eq. 10-13)."""

    def __init__(self, embed_dim: int, hidden_dim: int, scope: bool):
        super().__init__()
        self.word_proj = nn.Linear(embed_dim, embed_dim)  # W_y (+ b, dl4mt's b_prev)
        self.state_proj = nn.Linear(hidden_dim, embed_dim, bias=False) if scope else None  # W_s (eq. 12)
        self.score = nn.Linear(embed_dim, 1, bias=False)  # v

    def weights(self, y: Tensor, s: Tensor | None = None) -> Tensor:
        """y [B,T,e] (y_0 first), s [B,T,h] (content+scope) -> alpha [B,T,T]: row p weighs y_0..y_p, so that
        position p (predicting y_{p+1}) summarises every word before the one it predicts."""
        keys = self.word_proj(y)  # [B,T,e]
        if self.state_proj is None:
            scores = self.score(torch.tanh(keys)).squeeze(-1).unsqueeze(1).expand(-1, y.size(1), -1)  # eq. 13
        else:
            scores = self.score(torch.tanh(keys.unsqueeze(1) + self.state_proj(s).unsqueeze(2))).squeeze(-1)  # eq. 12
        t = y.size(1)
        future = torch.ones(t, t, dtype=torch.bool, device=y.device).triu(1)
        return torch.softmax(scores.float().masked_fill(future, NEG), dim=-1).to(y.dtype)  # eq. 11

    def forward(self, y: Tensor, s: Tensor | None = None) -> Tensor:
        """y [B,T,e], s [B,T,h] -> d [B,T,e], d at position p = sum_{i <= p} alpha_pi y_i (eq. 10)."""
        return self.weights(y, s) @ y

    def step(self, keys: Tensor, y: Tensor, s: Tensor) -> Tensor:
        """One position: keys [B,t,e] = W_y y_i + b of y_0..y_{t-1}, y [B,t,e], s [B,h] -> d_t [B,e]."""
        pre = keys if self.state_proj is None else keys + self.state_proj(s).unsqueeze(1)
        alpha = torch.softmax(self.score(torch.tanh(pre)).squeeze(-1).float(), dim=-1).to(y.dtype)
        return torch.bmm(alpha.unsqueeze(1), y).squeeze(1)


@register_decoder("cgru")
class CGRUDecoder(Decoder):
    """Embedded targets [B,T,e] + memory {"enc" [B,S,c], "enc_pad"} -> readout features [B,T,e].

    s_0 = tanh(W_init mean(H)) over the non-padding positions (A.3); s_t = cGRU(y_{t-1}, s_{t-1}, H) (A.3);
    readout tanh(W_st s_t + W_r r_t + W_ct c_t [+ W_mt s~_t]) -> dropout, r_t = E[y_{t-1}] or d_t (eq. 8).
    """

    def __init__(self, options: CGRUDecoderOptions, memory_dims):
        super().__init__(options, memory_dims)
        o, context = options, memory_dims["enc"]
        self.init_state = nn.Linear(context, o.hidden)
        self.cell = ConditionalGRU(o.embed, o.hidden, context, o.attention_dim or context)
        self.readout_state = nn.Linear(o.hidden, o.embed)  # W_st
        self.readout_words = nn.Linear(o.embed, o.embed)  # W_yt (previous word) or W_dt (summary d_t)
        self.readout_context = nn.Linear(context, o.embed)  # W_ct
        self.summary = (PreviousWordSummary(o.embed, o.hidden, o.summary_score == "content_scope")
                        if o.summary == "attention" else None)
        # Memory RNN / Self-attentive RNN: e_ti = v^T tanh(W_m s_i + W_s s) over s_0..s_{t-1} (A.3.2-3); s_0 is
        # included so that the first step has a state to attend (our choice)
        self.state_attention = (AdditiveAttention(o.hidden, o.hidden, o.hidden)
                                if o.state_attention != "none" else None)
        self.readout_memory = nn.Linear(o.hidden, o.embed) if o.state_attention == "self" else None  # W_mt
        self.drop = Dropout(o.dropout)

    @staticmethod
    def _zero_first(y: Tensor, position: int = 0) -> Tensor:
        """y [B,T,e] with the input at absolute position 0 (BOS) replaced by the zero vector y_0."""
        return y * (torch.arange(position, position + y.size(1), device=y.device) > 0).to(y.dtype)[None, :, None]

    def _readout(self, s: Tensor, words: Tensor, c: Tensor, s_mem: Tensor | None) -> Tensor:
        out = self.readout_state(s) + self.readout_words(words) + self.readout_context(c)
        if self.readout_memory is not None:
            out = out + self.readout_memory(s_mem)
        return self.drop(torch.tanh(out))

    def _words(self, y: Tensor, s: Tensor) -> Tensor:
        """r_t for every position: y [B,T,e] (y_0 = 0), s [B,T,h] -> [B,T,e]."""
        o = self.options
        if o.summary == "mean":  # eq. 9 over y_0..y_{t-1} (the set the attention weighs; y_0 = 0 counts)
            count = torch.arange(1, y.size(1) + 1, device=y.device, dtype=y.dtype)[None, :, None]
            return y.cumsum(1) / count
        if o.summary == "attention":
            return self.summary(y, s)
        return y

    def _recur(self, gates_t: Tensor, s: Tensor, past: dict[str, Tensor], keys: Tensor,
               memory: dict[str, Tensor]) -> tuple[Tensor, Tensor, Tensor | None]:
        """One decoder step: gates_t [B,3h] (GRU_1's input projections), s_{t-1} [B,h], past {"past": s_0..s_{t-1}
        [B,t,h], "past_keys": their projections} (state attention only; extended in place) -> s_t, c_t and s~_t
        (Self-attentive RNN, else None)."""
        s_in = s
        if self.options.state_attention == "memory":  # A.3.2: the recurrence reads s~_t, queried by s_{t-1}
            s_in = self._attend_states(s, past)
        s, c, _ = self.cell(gates_t, s_in, keys, memory["enc"], memory["enc_pad"])
        s_mem = None
        if self.options.state_attention == "self":  # A.3.3: s~_t over s_0..s_{t-1}, queried by s_t
            s_mem = self._attend_states(s, past)
        if self.state_attention is not None:
            past["past"] = torch.cat([past["past"], s.unsqueeze(1)], 1)
            past["past_keys"] = torch.cat([past["past_keys"], self.state_attention.project_keys(s).unsqueeze(1)], 1)
        return s, c, s_mem

    def _attend_states(self, query: Tensor, past: dict[str, Tensor]) -> Tensor:
        """s~ = sum_i alpha_i s_i over the previous states: query [B,h] -> [B,h]."""
        no_pad = torch.zeros(past["past"].shape[:2], dtype=torch.bool, device=query.device)
        return self.state_attention(query, past["past_keys"], past["past"], no_pad)[0]

    def _start(self, memory: dict[str, Tensor]) -> tuple[Tensor, dict[str, Tensor]]:
        """s_0 and the previous-state memory holding it (state attention)."""
        s0 = torch.tanh(self.init_state(masked_mean(memory["enc"], memory["enc_pad"])))
        if self.state_attention is None:
            return s0, {}
        return s0, {"past": s0.unsqueeze(1), "past_keys": self.state_attention.project_keys(s0).unsqueeze(1)}

    def forward(self, y: Tensor, memory: dict[str, Tensor]) -> Tensor:
        y = self._zero_first(y)
        keys, gates = self.cell.attention.project_keys(memory["enc"]), self.cell.input_gates(y)
        s, past = self._start(memory)
        states, contexts, summaries = [], [], []
        for t in range(y.size(1)):
            s, c, s_mem = self._recur(gates[:, t], s, past, keys, memory)
            states.append(s)
            contexts.append(c)
            summaries.append(s_mem)
        s_all, c_all = torch.stack(states, 1), torch.stack(contexts, 1)
        s_mem = torch.stack(summaries, 1) if self.readout_memory is not None else None
        return self._readout(s_all, self._words(y, s_all), c_all, s_mem)

    def step(self, y: Tensor, position: int, memory: dict[str, Tensor],
             state: dict[str, Tensor] | None) -> tuple[Tensor, dict[str, Tensor]]:
        y = self._zero_first(y, position)  # [B,1,e]
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
        words, o = y[:, 0], self.options
        if o.summary == "mean":
            state["word_sum"] = words if "word_sum" not in state else state["word_sum"] + words
            words = state["word_sum"] / (position + 1)
        elif o.summary == "attention":
            key = self.summary.word_proj(y)
            state["words"] = y if "words" not in state else torch.cat([state["words"], y], 1)
            state["word_keys"] = key if "word_keys" not in state else torch.cat([state["word_keys"], key], 1)
            words = self.summary.step(state["word_keys"], state["words"], s)
        return self._readout(s, words, c, s_mem), state
