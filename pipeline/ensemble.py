"""An ensemble of translation models behind the Seq2Seq interface: every step averages the members'
log-probabilities, so beam search and greedy decoding serve it unchanged.

Shu and Nakayama (2016, section 5.1) decode with an ensemble of two models but do not say how their predictions
combine; averaging log-probabilities is our choice (Nematus's Theano decoder adds them, which ranks as their
mean would).
The average is returned as logits and search applies log_softmax to it, so unlike Nematus each step's distribution
is renormalised (a normalised geometric mean of the members' distributions).
"""
from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor, nn

from pipeline.errors import PipelineError
from pipeline.models.seq2seq import SHARED, Seq2Seq

Tensors = dict[str, Tensor]


def _merge(parts: Sequence[Tensors | None]) -> Tensors:
    """Member dicts -> one flat dict, keys prefixed "<member>/" (after SHARED for shared entries)."""
    out = {}
    for i, part in enumerate(parts):
        for key, value in (part or {}).items():
            out[f"{SHARED}{i}/{key[len(SHARED):]}" if key.startswith(SHARED) else f"{i}/{key}"] = value
    return out


def _split(tensors: Tensors, n: int) -> list[Tensors]:
    """Inverse of _merge: one dict per member."""
    parts: list[Tensors] = [{} for _ in range(n)]
    for key, value in tensors.items():
        shared = key.startswith(SHARED)
        member, _, name = key[len(SHARED):].partition("/") if shared else key.partition("/")
        parts[int(member)][SHARED + name if shared else name] = value
    return parts


class Ensemble(Seq2Seq):
    """N models sharing one target vocabulary, decoded as one: log-probabilities averaged at every step."""

    def __init__(self, models: Sequence[Seq2Seq]):
        super().__init__()
        if len(models) == 0:
            raise PipelineError("Ensemble: got no models; expected at least one")
        self.members = nn.ModuleList(models)
        self.training = all(m.training for m in models)  # the members' mode, so search restores theirs

    @staticmethod
    def _least(limits) -> int | None:
        """The smallest limit; None (no limit) when no member has one."""
        limits = [n for n in limits if n is not None]
        return min(limits) if limits else None

    @property
    def max_input_len(self) -> int | None:
        return self._least(getattr(m, "max_input_len", None) for m in self.members)

    @property
    def max_output_len(self) -> int | None:
        return self._least(getattr(m, "max_output_len", None) for m in self.members)

    def _average(self, log_probs: list[Tensor]) -> Tensor:
        """Mean of the members' log-probabilities [...,V]; different vocabularies are an error."""
        for i, lp in enumerate(log_probs[1:], start=1):
            if lp.shape != log_probs[0].shape:
                raise PipelineError(f"Ensemble: member {i} scores {lp.size(-1)} target words, member 0 "
                                    f"{log_probs[0].size(-1)}; expected members sharing one target vocabulary")
        return torch.stack(log_probs).mean(0)

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """src [B,S], tgt_in [B,T] -> averaged log-probabilities [B,T,V] (as logits)."""
        return self._average([torch.log_softmax(m(src, tgt_in).float(), dim=-1) for m in self.members])

    def encode(self, src: Tensor) -> Tensors:
        """src [B,S] -> every member's memory, keys prefixed by the member's index."""
        return _merge([m.encode(src) for m in self.members])

    def decode_step(self, prev_tokens: Tensor, memory: Tensors, state: Tensors | None) -> tuple[Tensor, Tensors]:
        """prev_tokens [B,t] -> averaged log-probabilities [B,V] (as logits) and every member's new state."""
        n = len(self.members)
        memories = _split(memory, n)
        states = [None] * n if state is None else _split(state, n)
        log_probs, new_states = [], []
        for member, mem, st in zip(self.members, memories, states):
            logits, st = member.decode_step(prev_tokens, mem, st)
            log_probs.append(torch.log_softmax(logits.float(), dim=-1))
            new_states.append(st)
        memory.update(_merge(memories))  # what the members cached in their memory (Seq2Seq.decode_step)
        return self._average(log_probs), _merge(new_states)

    def reorder_state(self, state: Tensors | None, order: Tensor) -> Tensors | None:
        """Each member reorders its own entries (order [N])."""
        if state is None:
            return None
        parts = _split(state, len(self.members))
        return _merge([m.reorder_state(part, order) for m, part in zip(self.members, parts)])

    def reorder_memory(self, memory: Tensors, order: Tensor) -> Tensors:
        """Each member reorders its own entries (order [N])."""
        parts = _split(memory, len(self.members))
        return _merge([m.reorder_memory(part, order) for m, part in zip(self.members, parts)])
