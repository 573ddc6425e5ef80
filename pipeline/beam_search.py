"""Batched beam search (n-best lists, three length treatments) over the Seq2Seq incremental interface (any model
family, or an ensemble of them: pipeline.ensemble); the fixed-shape one of pipeline.static_search where it applies."""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import Tensor

from pipeline import static_search
from pipeline.beam import Scored, collect_finished, length_divisor, log_probs, max_lengths, next_beams
from pipeline.data.vocab import BOS
from pipeline.errors import PipelineError
from pipeline.search import inference

if TYPE_CHECKING:
    from pipeline.models import Seq2Seq


def _expand(model: Seq2Seq, logits: Tensor, tokens: Tensor, memory, state, k: int):
    """A first step's logits [n,V], tokens [n,1], memory and state (one row per sentence) -> K rows per sentence
    (sentence-major), for the beams: the same values as computing the step on K identical rows, at a K-th of the
    cost (including the projections of memory that a step caches in it)."""
    rows = torch.arange(logits.size(0), device=logits.device).repeat_interleave(k)
    return logits[rows], tokens[rows], model.reorder_memory(memory, rows), model.reorder_state(state, rows)


def beam_search_nbest(model: Seq2Seq, src: Tensor, *, nbest: int = 1, beam: int = 4, max_len_a: float = 1.2,
                      max_len_b: int = 10, length: str = "penalty", alpha: float = 0.6) -> list[list[Scored]]:
    """Up to `nbest` finished hypotheses per sentence of src [B,S], best first, as (score, tokens without BOS/EOS).

    Each step ranks the 2K best extensions of a sentence's K beams by raw log-probability; an EOS among the first
    K ranks finishes a hypothesis, scored log p / length_divisor(length, tokens + EOS, alpha); the first K others
    continue. A sentence stops once it has K finished hypotheses or reaches its length limit (EOS forced); it then
    leaves the batch (fairseq-like). Ties keep the order of finishing. A sentence where nothing could finish (every
    EOS impossible) gets [(-inf, [])].
    """
    if beam < 1:
        raise PipelineError(f"beam size must be >= 1, got {beam}")
    if not 1 <= nbest <= beam:
        raise PipelineError(f"nbest must be between 1 and the beam size {beam}, got {nbest}")
    length_divisor(length, 1, alpha)  # validates `length` before any work
    if src.size(0) == 0:
        return []
    from pipeline import speedups
    if speedups.enabled("static_search", src) and static_search.supports(model):
        with inference(model):
            return static_search.beam_search_static(model, src, nbest=nbest, beam=beam, max_len_a=max_len_a,
                                                    max_len_b=max_len_b, length=length, alpha=alpha)
    with inference(model):
        n, k, dev = src.size(0), beam, src.device
        max_len = max_lengths(model, src, max_len_a, max_len_b)
        memory = model.encode(src)
        tokens = torch.full((n, 1), BOS, dtype=torch.long, device=dev)  # one row per sentence until step 1 is done
        scores = torch.full((n, k), float("-inf"), device=dev)
        scores[:, 0] = 0.0  # one live beam at the start
        active = torch.arange(n, device=dev)  # sentence of each live row group
        n_finished = torch.zeros(n, dtype=torch.long, device=dev)
        finished: list[list[Scored]] = [[] for _ in range(n)]
        state, step = None, 0
        while active.numel():
            step += 1
            logits, state = model.decode_step(tokens, memory, state)
            if step == 1:  # the K beams of a sentence share their first step: compute it once, then expand
                logits, tokens, memory, state = _expand(model, logits, tokens, memory, state, k)
            m = active.numel()
            at_limit = step > max_len[active]  # [m]
            cand = scores.unsqueeze(-1) + log_probs(logits, at_limit.repeat_interleave(k)).view(m, k, -1)  # [m,K,V]
            vocab = cand.size(-1)
            top, flat = cand.view(m, -1).topk(min(2 * k, k * vocab), dim=1)  # [m,2K]
            from_beam, token = flat // vocab, flat % vocab
            # every hypothesis finishing now has step - 1 words + EOS
            n_finished[active] += collect_finished(finished, active, tokens, top, from_beam, token,
                                                    length_divisor(length, step, alpha))
            scores, from_beam, token = next_beams(top, from_beam, token, k)
            open_ = ~at_limit & torch.isfinite(scores).any(1) & (n_finished[active] < k)  # not done, not stuck
            keep = open_.nonzero().squeeze(1)
            if keep.numel() == 0:
                break
            rows = (keep.unsqueeze(1) * k + from_beam[keep]).view(-1)  # surviving beams, finished sentences out
            tokens = torch.cat([tokens[rows], token[keep].view(-1, 1)], dim=1)
            scores, active = scores[keep], active[keep]
            state = model.reorder_state(state, rows)
            if keep.numel() < m:
                memory = model.reorder_memory(memory, (keep.unsqueeze(1) * k + torch.arange(k, device=dev)).view(-1))
        # stable sort: among equal scores the first finished stays first (as max() picked it before)
        return [sorted(hyps, key=lambda h: -h[0])[:nbest] if hyps else [(float("-inf"), [])] for hyps in finished]


def beam_search(model: Seq2Seq, src: Tensor, *, beam: int = 4, max_len_a: float = 1.2, max_len_b: int = 10,
                length: str = "penalty", alpha: float = 0.6) -> list[list[int]]:
    """Best hypothesis per sentence of src [B,S] (tokens without BOS/EOS); see beam_search_nbest."""
    return [hyps[0][1] for hyps in beam_search_nbest(model, src, nbest=1, beam=beam, max_len_a=max_len_a,
                                                     max_len_b=max_len_b, length=length, alpha=alpha)]
