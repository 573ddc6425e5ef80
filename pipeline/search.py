"""Batched beam search and greedy decoding over the Seq2Seq incremental interface (any model family)."""
from __future__ import annotations

import contextlib
from typing import Iterator

import torch
from torch import Tensor

from pipeline.data.vocab import BOS, EOS, PAD
from pipeline.errors import PipelineError
from pipeline.models.layers import Seq2Seq


@contextlib.contextmanager
def inference(model: Seq2Seq) -> Iterator[None]:
    """Eval mode and no autograd for the block; the model's previous mode is restored afterwards."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was_training)


def _max_lengths(model: Seq2Seq, src: Tensor, a: float, b: int) -> Tensor:
    """Longest output per sentence [B] (tokens, EOS excluded): floor(a * source length + b), capped by the model."""
    src_len = src.ne(PAD).sum(1).double()
    limit = torch.floor(a * src_len + b).long().clamp(min=0)
    if model.max_output_len is not None:
        limit = limit.clamp(max=model.max_output_len)
    return limit


def _log_probs(logits: Tensor, force_eos: Tensor) -> Tensor:
    """logits [N,V] -> log-probabilities [N,V]; PAD and BOS never generated; rows with force_eos [N] may only end.

    A forced EOS keeps its model log-probability (not renormalised; fairseq's convention)."""
    lp = torch.log_softmax(logits.float(), dim=-1)
    lp[:, PAD] = float("-inf")
    lp[:, BOS] = float("-inf")
    eos = lp[:, EOS].clone()
    lp[force_eos] = float("-inf")
    lp[:, EOS] = torch.where(force_eos, eos, lp[:, EOS])
    return lp


def length_penalty_factor(length: int, alpha: float) -> float:
    """GNMT length penalty ((5 + |Y|) / 6)^alpha, |Y| counting the EOS (our choice of normalisation)."""
    return ((5.0 + length) / 6.0) ** alpha


def _strip(tokens: list[int]) -> list[int]:
    """Tokens before the first EOS."""
    return tokens[:tokens.index(EOS)] if EOS in tokens else tokens


def greedy(model: Seq2Seq, src: Tensor, *, max_len_a: float = 1.2, max_len_b: int = 10) -> list[list[int]]:
    """Most probable next token at every step: src [B,S] -> B token lists without BOS/EOS."""
    if src.size(0) == 0:
        return []
    with inference(model):
        max_len = _max_lengths(model, src, max_len_a, max_len_b)
        memory = model.encode(src)
        tokens = torch.full((src.size(0), 1), BOS, dtype=torch.long, device=src.device)
        done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
        state = None
        for step in range(1, int(max_len.max()) + 2):
            logits, state = model.decode_step(tokens, memory, state)
            nxt = _log_probs(logits, step > max_len).argmax(-1).masked_fill(done, PAD)
            tokens = torch.cat([tokens, nxt.unsqueeze(1)], dim=1)
            done |= nxt.eq(EOS)
            if bool(done.all()):
                break
        return [_strip(row) for row in tokens[:, 1:].tolist()]


def _next_beams(top: Tensor, from_beam: Tensor, token: Tensor, beam: int) -> tuple[Tensor, Tensor, Tensor]:
    """The best `beam` candidates that do not end: scores, source beams, tokens, each [N,beam] (-inf: empty slot)."""
    width = top.size(1)
    alive = token.ne(EOS) & torch.isfinite(top)  # [N,2K]
    rank = torch.arange(width, device=top.device).unsqueeze(0)
    pick = torch.where(alive, rank, rank + width).argsort(dim=1)[:, :beam]  # first K alive, in score order
    scores = top.gather(1, pick).masked_fill(~alive.gather(1, pick), float("-inf"))
    return scores, from_beam.gather(1, pick), token.gather(1, pick)


def _collect_finished(finished: list[list[tuple[float, list[int]]]], sentences: list[int], tokens: Tensor,
                      top: Tensor, from_beam: Tensor, token: Tensor, alpha: float) -> None:
    """Add every EOS among a sentence's first K ranked candidates (top [N,2K]) to its finished hypotheses,
    scored log p / length penalty; tokens [N*K,t] are the live prefixes (BOS first)."""
    k = tokens.size(0) // len(sentences)
    ends = token[:, :k].eq(EOS) & torch.isfinite(top[:, :k])
    for i, r in ends.nonzero().tolist():
        hyp = tokens[i * k + from_beam[i, r], 1:].tolist()
        finished[sentences[i]].append((top[i, r].item() / length_penalty_factor(len(hyp) + 1, alpha), hyp))


def beam_search(model: Seq2Seq, src: Tensor, *, beam: int = 4, max_len_a: float = 1.2, max_len_b: int = 10,
                length_penalty: float = 0.6) -> list[list[int]]:
    """Best hypothesis per sentence (no BOS/EOS) by beam search, batched over sentences and beams.

    Each step ranks the 2K best extensions of a sentence's K beams; an EOS among the first K ranks finishes a
    hypothesis (scored log p / length penalty), the first K others continue. A sentence stops once it has K
    finished hypotheses or reaches its length limit (EOS forced); it then leaves the batch (fairseq-like).
    """
    if beam < 1:
        raise PipelineError(f"beam size must be >= 1, got {beam}")
    if src.size(0) == 0:
        return []
    with inference(model):
        n, k, dev = src.size(0), beam, src.device
        max_len = _max_lengths(model, src, max_len_a, max_len_b)
        memory = model.reorder_memory(model.encode(src), torch.arange(n, device=dev).repeat_interleave(k))
        tokens = torch.full((n * k, 1), BOS, dtype=torch.long, device=dev)
        scores = torch.full((n, k), float("-inf"), device=dev)
        scores[:, 0] = 0.0  # one live beam at the start
        active = torch.arange(n, device=dev)  # sentence of each live row group
        finished: list[list[tuple[float, list[int]]]] = [[] for _ in range(n)]
        state, step = None, 0
        while active.numel():
            step += 1
            logits, state = model.decode_step(tokens, memory, state)
            m = active.numel()
            forced = (step > max_len[active]).repeat_interleave(k)
            cand = scores.unsqueeze(-1) + _log_probs(logits, forced).view(m, k, -1)  # [m,K,V]
            vocab = cand.size(-1)
            top, flat = cand.view(m, -1).topk(min(2 * k, k * vocab), dim=1)  # [m,2K]
            from_beam, token = flat // vocab, flat % vocab
            _collect_finished(finished, active.tolist(), tokens, top, from_beam, token, length_penalty)
            scores, from_beam, token = _next_beams(top, from_beam, token, k)
            open_ = ~(step > max_len[active]) & torch.isfinite(scores).any(1)  # not at the limit, not stuck
            keep = [i for i, ok in enumerate(open_.tolist()) if ok and len(finished[int(active[i])]) < k]
            keep_t = torch.tensor(keep, dtype=torch.long, device=dev)
            rows = (keep_t.unsqueeze(1) * k + from_beam[keep_t]).view(-1)  # surviving beams, finished sentences out
            tokens = torch.cat([tokens[rows], token[keep_t].view(-1, 1)], dim=1)
            scores, active = scores[keep_t], active[keep_t]
            if not keep:
                break
            state = model.reorder_state(state, rows)
            if len(keep) < m:
                memory = model.reorder_memory(memory, (keep_t.unsqueeze(1) * k + torch.arange(k, device=dev)).view(-1))
        return [max(hyps, key=lambda h: h[0])[1] if hyps else [] for hyps in finished]
