"""The RNNsearch decoder of Bahdanau et al. (2015) as zhang2018 sec. 2.1 writes it (eq. 2-5): one GRU whose input is
the previous target word and the attention a_j, which is queried by the previous state s_{j-1}.

e_ij = v^T tanh(W_a s_{j-1} + U_a h_i)                      (eq. 2)
a_j = sum_i softmax_i(e_ij) h_i over the real source words   (eq. 3)
s_j = GRU([E y_{j-1}; a_j], s_{j-1})                         (eq. 4, g = a GRU on the concatenation; Bahdanau A.2.2)
p(y_j | y_<j, x) ~ exp(W_v f(s_j, E y_{j-1}, a_j))           (eq. 5, f = maxout or tanh over W_s s + W_y E y + W_c a)

As the cgru decoder: s_0 = tanh(W_init mean(H)), y_0 is a zero vector rather than the BOS embedding (dl4mt's
convention, kept so that RNNsearch and RNNsearch* differ only in eq. 4 vs eq. 13; our choice, the released code
embeds BOS), dropout on the readout only.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pipeline.models.additive_attention import AdditiveAttention
from pipeline.models.cgru_decoder import activate_readout, initial_state, readout_units
from pipeline.models.conditional_gru import gru_step
from pipeline.models.layers import Dropout
from pipeline.models.previous_word_summary import zero_first
from pipeline.models.rnnsearch_decoder_options import RNNsearchDecoderOptions
from pipeline.models.seq2seq import Decoder, register_decoder
from pipeline.models.step_compile import BATCH, SEQUENCE, step_function

STEP_DIMS = (BATCH, BATCH, SEQUENCE, SEQUENCE, SEQUENCE, ())  # _step's batch and source-length dimensions


@register_decoder("rnnsearch")
class RNNsearchDecoder(Decoder):
    """Embedded targets [B,T,e] + memory {"enc" [B,S,c], "enc_pad"} -> readout features [B,T,e]."""

    def __init__(self, options: RNNsearchDecoderOptions, memory_dims):
        super().__init__(options, memory_dims)
        o, context = options, memory_dims["enc"]
        self.init_state = nn.Linear(context, o.hidden)  # s_0 = tanh(W_init mean(H))
        self.attention = AdditiveAttention(o.hidden, context, o.attention_dim or context)  # eq. 2-3
        self.gru = nn.GRUCell(o.embed + context, o.hidden)  # eq. 4: input [E y_{j-1}; a_j]
        units = readout_units(o.embed, o.readout)
        self.readout_state = nn.Linear(o.hidden, units)  # W_s s_j      (eq. 5)
        self.readout_words = nn.Linear(o.embed, units)  # W_y E y_{j-1}
        self.readout_context = nn.Linear(context, units)  # W_c a_j
        self.drop = Dropout(o.dropout)

    def source_attention(self) -> nn.Module:
        """a_j's attention (eq. 2-3), queried by s_{j-1}: one call per step."""
        return self.attention

    def word_gates(self, y: Tensor) -> Tensor:
        """The GRU's input projections of the words, every step at once: y [B,T,e] -> W_y y + b_ih [B,T,3h]."""
        return F.linear(y, self.gru.weight_ih[:, :self.options.embed], self.gru.bias_ih)

    def recur(self, word_gates_t: Tensor, s_prev: Tensor, keys: Tensor,
              memory: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
        """One step: word_gates_t [B,3h] (word_gates at step j), s_{j-1} [B,h], keys [B,S,a] (projected) -> s_j [B,h]
        and a_j [B,c]."""
        return self._step(word_gates_t, s_prev, keys, memory["enc"], memory["enc_pad"], self.context_weight())

    def context_weight(self) -> Tensor:
        """The GRU's input weight on a_j, W[:, e:] of W [E y; a] (eq. 4): [3h,c]."""
        return self.gru.weight_ih[:, self.options.embed:]

    def _step(self, word_gates_t: Tensor, s_prev: Tensor, keys: Tensor, enc: Tensor, pad: Tensor,
              context_weight: Tensor) -> tuple[Tensor, Tensor]:
        """recur as a function of tensors (what speed-up "compile" compiles), context_weight = context_weight()."""
        a, _ = self.attention(s_prev, keys, enc, pad)  # eq. 2-3, queried by s_{j-1}
        gates = word_gates_t + F.linear(a, context_weight)  # W [E y; a] + b
        return gru_step(gates, s_prev, self.gru), a  # eq. 4

    def readout(self, s: Tensor, y: Tensor, a: Tensor) -> Tensor:
        """f(s_j, E y_{j-1}, a_j) of eq. 5, then dropout: s [...,h], y [...,e], a [...,c] -> [...,e]."""
        pre = self.readout_state(s) + self.readout_words(y) + self.readout_context(a)
        return self.drop(activate_readout(pre, self.options.readout))

    def forward(self, y: Tensor, memory: dict[str, Tensor]) -> Tensor:
        y = zero_first(y)
        keys, gates = self.attention.project_keys(memory["enc"]), self.word_gates(y)
        s = initial_state(self.init_state, memory)
        states, contexts = [], []
        # sliced once (not once a step: one backward node); the step compiled on CUDA (speed-up "compile")
        context_weight, step = self.context_weight(), step_function(RNNsearchDecoder._step, self, y, STEP_DIMS)
        for gates_j in gates.unbind(1):  # one backward node for all steps, not one full-size gradient per step
            s, a = step(gates_j, s, keys, memory["enc"], memory["enc_pad"], context_weight)
            states.append(s)
            contexts.append(a)
        return self.readout(torch.stack(states, 1), y, torch.stack(contexts, 1))

    def step(self, y: Tensor, position: int, memory: dict[str, Tensor],
             state: dict[str, Tensor] | None) -> tuple[Tensor, dict[str, Tensor]]:
        y = zero_first(y, position)[:, 0]  # [B,e]
        if "rnnsearch.keys" not in memory:  # U_a h_i, fixed for the whole search
            memory["rnnsearch.keys"] = self.attention.project_keys(memory["enc"])
        s_prev = initial_state(self.init_state, memory) if state is None else state["s"]
        s, a = self.recur(self.word_gates(y), s_prev, memory["rnnsearch.keys"], memory)
        return self.readout(s, y, a), {"s": s}
