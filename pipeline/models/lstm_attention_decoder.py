"""shu2016's decoders (sec. 2.1 and 3, Figure 1): Bahdanau attention over the BiLSTM states, one or two LSTM layers,
and a softmax layer on the top state (baseline, enlarged, stacked) or on the sum of the two layers' states (residual).

a_t(i) = softmax_i score(hbar_i, h_{t-1}), score = v_a^T tanh(W_a [hbar_i; h_{t-1}])   (eq. 4-5)
c_t = sum_i a_t(i) hbar_i                                                             (eq. 6)
h_t = LSTM([e_{t-1}; c_t], h_{t-1})                                                   (eq. 7 = eq. 11)
h'_t = LSTM(h_t, h'_{t-1})                                                            (eq. 12, layer 2)
o_t = W_o h_t + b_o (eq. 8) | W_o h'_t + b_o (stacked, Figure 1b) | W_o (h_t + h'_t) + b_o (residual, eq. 13)

W_o, b_o are the model's output projection (model option output_bias: true for b_o); the decoder's features are the
vector W_o reads. Our choices where the paper is silent: the attention is queried by layer 1's h_{t-1} (eq. 11 names
layer 1's state h_t), and the context enters layer 1 only (eq. 12 as written; the author's later nmtlab code);
AdditiveAttention adds a bias to W_a [hbar; h] and to the score (as the other RNN decoders); h_0 of each layer =
tanh(W_init mean(hbar)) (dl4mt's s_0; nmtlab also initialises each layer from the encoder), c_0 = 0; e_0 is the BOS
embedding; dropout only on the output layer's input.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pipeline.models.additive_attention import AdditiveAttention
from pipeline.models.layers import Dropout, masked_mean
from pipeline.models.lstm_attention_decoder_options import LSTMAttentionDecoderOptions
from pipeline.models.seq2seq import Decoder, register_decoder
from pipeline.models.step_compile import BATCH, SEQUENCE, step_function

STEP_DIMS = (BATCH, BATCH, SEQUENCE, SEQUENCE, SEQUENCE, ())  # _step's batch and source-length dimensions


def lstm_step(input_gates: Tensor, h: Tensor, c: Tensor, cell: nn.LSTMCell) -> tuple[Tensor, Tensor]:
    """One nn.LSTMCell update from precomputed input projections: input_gates [B,4h] = W_ih x + b_ih, h, c [B,h]
    -> new h, c [B,h] (torch's gate order i, f, g, o)."""
    i, f, g, o = (input_gates + F.linear(h, cell.weight_hh, cell.bias_hh)).chunk(4, dim=-1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


@register_decoder("lstm_attention")
class LSTMAttentionDecoder(Decoder):
    """Embedded targets [B,T,e] + memory {"enc" [B,S,c], "enc_pad"} -> features [B,T,n] (the input of W_o), n =
    options.units.

    State (incremental decoding): "h0", "c0" (layer 1) and "h1", "c1" (layer 2), each [B,n].
    """

    def __init__(self, options: LSTMAttentionDecoderOptions, memory_dims):
        super().__init__(options, memory_dims)
        o, context, n = options, memory_dims["enc"], options.units
        self.init_states = nn.ModuleList(nn.Linear(context, n) for _ in range(o.layers))  # h_0 (our choice)
        self.attention = AdditiveAttention(n, context, o.attention_dim or context)  # eq. 4-6
        self.cells = nn.ModuleList([nn.LSTMCell(o.embed + context, n)]  # eq. 7 / 11: input [e_{t-1}; c_t]
                                   + [nn.LSTMCell(n, n) for _ in range(o.layers - 1)])  # eq. 12: input h_t
        self.drop = Dropout(o.dropout)

    def source_attention(self) -> nn.Module:
        """c_t's attention (eq. 4-6), queried by layer 1's h_{t-1}: one call per step."""
        return self.attention

    def initial_state(self, memory: dict[str, Tensor]) -> dict[str, Tensor]:
        """h_0 = tanh(W_init^l mean(hbar)) over the real source words, c_0 = 0, for each layer l: {"h<l>", "c<l>"}."""
        mean = masked_mean(memory["enc"], memory["enc_pad"])
        state = {}
        for layer, init in enumerate(self.init_states):
            state[f"h{layer}"] = torch.tanh(init(mean))
            state[f"c{layer}"] = torch.zeros_like(state[f"h{layer}"])
        return state

    def word_gates(self, y: Tensor) -> Tensor:
        """Layer 1's input projection of the words, every step at once: y [B,T,e] -> W e + b_ih [B,T,4h]."""
        return F.linear(y, self.cells[0].weight_ih[:, :self.options.embed], self.cells[0].bias_ih)

    def recur(self, word_gates_t: Tensor, state: dict[str, Tensor], keys: Tensor,
              memory: dict[str, Tensor]) -> dict[str, Tensor]:
        """One step: word_gates_t [B,4h], the state at t-1, keys [B,S,a] (projected) -> the state at t."""
        names = [f"{x}{layer}" for layer in range(self.options.layers) for x in "hc"]
        new = self._step(word_gates_t, tuple(state[k] for k in names), keys, memory["enc"], memory["enc_pad"],
                         self.context_weight())
        return dict(zip(names, new))

    def context_weight(self) -> Tensor:
        """Layer 1's input weight on c_t, W[:, e:] of W [e_{t-1}; c_t] (eq. 7 / 11): [4h,c]."""
        return self.cells[0].weight_ih[:, self.options.embed:]

    def _step(self, word_gates_t: Tensor, state: tuple[Tensor, ...], keys: Tensor, enc: Tensor, pad: Tensor,
              context_weight: Tensor) -> tuple[Tensor, ...]:
        """recur as a function of tensors (what speed-up "compile" compiles): state (h0, c0[, h1, c1]) at t-1 ->
        the same at t; context_weight = context_weight()."""
        c_t, _ = self.attention(state[0], keys, enc, pad)  # eq. 4-6, query h_{t-1}
        gates = word_gates_t + F.linear(c_t, context_weight)
        h, c = lstm_step(gates, state[0], state[1], self.cells[0])  # eq. 7 / 11
        if self.options.layers == 2:  # eq. 12: h'_t = f(h_t, h'_{t-1}), no context (our choice)
            return (h, c, *self.cells[1](h, (state[2], state[3])))
        return h, c

    def output(self, states: dict[str, Tensor]) -> Tensor:
        """The vector W_o reads, then dropout: h_t (eq. 8), h'_t (stacked) or h_t + h'_t (residual, eq. 13);
        states "h0", "h1" [...,h] -> [...,h]."""
        if self.options.residual:
            top = states["h0"] + states["h1"]  # eq. 13
        else:
            top = states[f"h{self.options.layers - 1}"]  # eq. 8; Figure 1(b)
        return self.drop(top)

    def layer_states(self, y: Tensor, memory: dict[str, Tensor]) -> dict[str, Tensor]:
        """Teacher-forced states of every layer: y [B,T,e] -> {"h0", "c0"[, "h1", "c1"]: [B,T,h]}."""
        keys, gates = self.attention.project_keys(memory["enc"]), self.word_gates(y)
        first = self.initial_state(memory)
        names = list(first)  # h0, c0[, h1, c1]
        state, steps = tuple(first.values()), []
        # sliced once (not once a step: one backward node); the step compiled on CUDA (speed-up "compile")
        context_weight, step = self.context_weight(), step_function(LSTMAttentionDecoder._step, self, y, STEP_DIMS)
        for gates_t in gates.unbind(1):  # one backward node for all steps, not one full-size gradient per step
            state = step(gates_t, state, keys, memory["enc"], memory["enc_pad"], context_weight)
            steps.append(state)
        return {key: torch.stack([s[i] for s in steps], 1) for i, key in enumerate(names)}

    def forward(self, y: Tensor, memory: dict[str, Tensor]) -> Tensor:
        return self.output(self.layer_states(y, memory))

    def step(self, y: Tensor, position: int, memory: dict[str, Tensor],
             state: dict[str, Tensor] | None) -> tuple[Tensor, dict[str, Tensor]]:
        if "lstm_attention.keys" not in memory:  # W_a hbar_i + b, fixed for the whole search
            memory["lstm_attention.keys"] = self.attention.project_keys(memory["enc"])
        state = self.initial_state(memory) if state is None else state
        state = self.recur(self.word_gates(y[:, 0]), state, memory["lstm_attention.keys"], memory)
        return self.output(state), state
