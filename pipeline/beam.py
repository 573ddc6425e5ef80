"""What both beam searches share (pipeline.beam_search's eager one, pipeline.static_search's fixed-shape one): output
length limits, the step's log-probabilities, length treatments and the ranking of a step's candidates."""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import Tensor

from pipeline.data.vocab import BOS, EOS, PAD
from pipeline.decoding import LENGTH_MODES
from pipeline.errors import PipelineError

if TYPE_CHECKING:
    from pipeline.models import Seq2Seq

Scored = tuple[float, list[int]]  # (score, tokens without BOS/EOS)


def max_lengths(model: Seq2Seq, src: Tensor, a: float, b: int) -> Tensor:
    """Longest output per sentence [B] (tokens, EOS excluded): floor(a * source length + b), capped by the model."""
    src_len = src.ne(PAD).sum(1).double()
    limit = torch.floor(a * src_len + b).long().clamp(min=0)
    if model.max_output_len is not None:
        limit = limit.clamp(max=model.max_output_len)
    return limit


def log_probs(logits: Tensor, force_eos: Tensor) -> Tensor:
    """logits [N,V] -> log-probabilities [N,V]; PAD and BOS never generated; rows with force_eos [N] may only end.

    A forced EOS keeps its model log-probability (not renormalised; fairseq's convention)."""
    lp = torch.log_softmax(logits.float(), dim=-1)
    lp[:, PAD] = float("-inf")
    lp[:, BOS] = float("-inf")
    eos = lp[:, EOS].clone()
    lp = lp.masked_fill(force_eos.unsqueeze(1), float("-inf"))  # not lp[force_eos]: no host-device sync
    lp[:, EOS] = torch.where(force_eos, eos, lp[:, EOS])
    return lp


def length_penalty_factor(length: int, alpha: float) -> float:
    """GNMT length penalty ((5 + |Y|) / 6)^alpha, |Y| counting the EOS (our choice of normalisation)."""
    return ((5.0 + length) / 6.0) ** alpha


def length_divisor(length: str, n_tokens: int, alpha: float) -> float:
    """What a finished hypothesis's log-probability is divided by; n_tokens counts its EOS.

    "penalty": GNMT's ((5 + n) / 6)^alpha. "normalize": n, as dl4mt-tutorial (session2/translate.py: score /
    len(sample)) and Nematus (nematus/translate.py: score / len(sample) ** normalization_alpha, alpha 1 here) do,
    their samples ending in the EOS (gen_sample appends it). "none": 1 (raw log-probability). alpha: penalty only.
    """
    if length == "penalty":
        return length_penalty_factor(n_tokens, alpha)
    if length == "normalize":
        return float(n_tokens)
    if length == "none":
        return 1.0
    raise PipelineError(f"decoding option 'length': got {length!r}; expected one of {', '.join(LENGTH_MODES)}")


def next_beams(top: Tensor, from_beam: Tensor, token: Tensor, beam: int) -> tuple[Tensor, Tensor, Tensor]:
    """The best `beam` candidates that do not end: scores, source beams, tokens, each [N,beam] (-inf: empty slot)."""
    width = top.size(1)
    alive = token.ne(EOS) & torch.isfinite(top)  # [N,2K]
    rank = torch.arange(width, device=top.device).unsqueeze(0)
    pick = torch.where(alive, rank, rank + width).argsort(dim=1)[:, :beam]  # first K alive, in score order
    scores = top.gather(1, pick).masked_fill(~alive.gather(1, pick), float("-inf"))
    return scores, from_beam.gather(1, pick), token.gather(1, pick)


def collect_finished(finished: list[list[Scored]], active: Tensor, tokens: Tensor, top: Tensor, from_beam: Tensor,
                      token: Tensor, divisor: float) -> Tensor:
    """Add every EOS among a sentence's first K ranked candidates (top [m,2K]) to its finished hypotheses, scored
    log p / divisor; tokens [m*K,t] are the live prefixes (BOS first). Returns the count added per sentence [m]."""
    k = tokens.size(0) // active.numel()
    ends = token[:, :k].eq(EOS) & torch.isfinite(top[:, :k])  # [m,K]
    where = ends.nonzero()  # [F,2]: (sentence row, rank)
    if where.numel():
        i, r = where[:, 0], where[:, 1]
        hyps = tokens[i * k + from_beam[i, r], 1:].tolist()
        for sentence, log_p, hyp in zip(active[i].tolist(), top[i, r].tolist(), hyps):
            finished[sentence].append((log_p / divisor, hyp))
    return ends.sum(1)
