"""Beam search for the plain Transformer with fixed shapes (the static_search speed-up, pipeline/speedups.py): the
decoder step reads a preallocated key/value cache, takes its position and the beams' back-pointers as device
tensors and is captured once per batch as a CUDA graph, so that a step costs one graph launch and the beam
bookkeeping instead of ~300 kernel launches from Python. The same search as pipeline.beam_search.beam_search_nbest:
same ranking, finishing and length treatment; sentences that are done stay in the batch, ignored, instead of
leaving it (fixed shapes), so the hypotheses are those of the eager search up to the rounding of batch-size
dependent kernels. On the CPU (tests) the same step runs without a graph.
"""
from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F
from torch import Tensor

from pipeline.data.vocab import BOS
from pipeline.beam import Scored, collect_finished, length_divisor, log_probs, max_lengths, next_beams


def supports(model) -> bool:
    """Whether `model` is an encoder-decoder whose decoder takes the static step (Decoder.supports_static_step: the
    plain Transformer decoder, no pattern attention, no relative positions, absolute positions on)."""
    from pipeline.models.seq2seq import EncoderDecoder
    return type(model) is EncoderDecoder and model.decoder.supports_static_step


class StaticStep:
    """The decoder step over fixed buffers: tokens [N] and position [1] in, logits [N,V] out; every layer's
    self-attention cache [N,h,L,d/h] is first reordered by `rows` [N] (the beams' back-pointers), then this
    step's keys and values are written at `position` (hao2019 eq. 4-6 as DecoderLayer computes them)."""

    def __init__(self, model, memory: dict[str, Tensor], steps: int):
        self.model, dec = model, model.decoder
        enc, pad = memory["enc"], memory["enc_pad"]
        n, dev = enc.size(0), enc.device
        self.tokens = torch.full((n,), BOS, dtype=torch.long, device=dev)
        self.position = torch.zeros(1, dtype=torch.long, device=dev)
        self.rows = torch.arange(n, device=dev)
        self.keep_source = ~pad[:, None, None, :]  # [N,1,1,S]
        steps = -(-steps // 8) * 8  # room for every step, rounded up to the fused kernels' alignment (our choice)
        self.slots = torch.arange(steps, device=dev)
        self.cross, self.cache = [], []
        for layer in dec.layers:
            attn = layer.cross_attn
            k, v = attn._split(attn.k_proj(enc)).contiguous(), attn._split(attn.v_proj(enc)).contiguous()
            self.cross.append((k, v))
            shape = (n, attn.heads, steps, attn.d_head)
            dtype = k.dtype
            self.cache.append((torch.zeros(shape, dtype=dtype, device=dev), torch.zeros(shape, dtype=dtype, device=dev)))
        self.logits: Tensor | None = None

    def __call__(self) -> Tensor:
        """One step on the buffers -> logits [N,V] (also kept in self.logits)."""
        model, dec = self.model, self.model.decoder
        inp = dec.input
        x = model.tgt_embed(self.tokens).unsqueeze(1) * inp.scale  # [N,1,d]
        h = x + inp.positions.table.index_select(0, self.position).unsqueeze(0)
        keep_self = (self.slots <= self.position)[None, None, None, :]  # [1,1,1,L]
        for layer, (ck, cv), (xk, xv) in zip(dec.layers, self.cache, self.cross):
            ck.copy_(ck.index_select(0, self.rows))
            cv.copy_(cv.index_select(0, self.rows))
            attn = layer.self_attn
            q, k, v = attn._project(h, (attn.q_proj, attn.k_proj, attn.v_proj))
            ck.index_copy_(2, self.position, k.to(ck.dtype))
            cv.index_copy_(2, self.position, v.to(cv.dtype))
            out = F.scaled_dot_product_attention(q, ck.to(q.dtype), cv.to(q.dtype), attn_mask=keep_self)
            c = layer.self_norm(h + attn.out_proj(out.transpose(1, 2).reshape(h.shape)))  # eq. 4
            cross = layer.cross_attn
            qc = cross._split(cross.q_proj(c))
            out = F.scaled_dot_product_attention(qc, xk.to(qc.dtype), xv.to(qc.dtype), attn_mask=self.keep_source)
            d = layer.cross_norm(c + cross.out_proj(out.transpose(1, 2).reshape(c.shape)))  # eq. 5
            h = layer.ffn_norm(d + layer.ffn(d))  # eq. 6
        self.logits = model.output_proj(h[:, 0])
        return self.logits


class GraphedStep:
    """A StaticStep captured as a CUDA graph: calling it replays the graph (the buffers are the graph's inputs)."""

    def __init__(self, step: StaticStep):
        self.step = step
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        saved = [(k.clone(), v.clone()) for k, v in step.cache]
        with torch.cuda.stream(side):
            step()  # warm-up outside the capture (kernel selection, workspaces)
        torch.cuda.current_stream().wait_stream(side)
        for (k, v), (k0, v0) in zip(step.cache, saved):
            k.copy_(k0)
            v.copy_(v0)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.logits = step()

    def __call__(self) -> Tensor:
        self.graph.replay()
        return self.logits


def _no_autocast_cache():
    """Autocast without its weight-cast cache while a graph is captured and replayed (torch's rule for graphs)."""
    if torch.is_autocast_enabled("cuda"):
        return torch.autocast("cuda", dtype=torch.get_autocast_dtype("cuda"), cache_enabled=False)
    return contextlib.nullcontext()


def beam_search_static(model, src: Tensor, *, nbest: int, beam: int, max_len_a: float, max_len_b: int,
                       length: str, alpha: float) -> list[list[Scored]]:
    """pipeline.beam_search.beam_search_nbest for a model that `supports`, on fixed shapes (module docstring)."""
    n, k, dev = src.size(0), beam, src.device
    max_len = max_lengths(model, src, max_len_a, max_len_b)
    steps = int(max_len.max()) + 1  # the last one may only end
    memory = model.reorder_memory(model.encode(src), torch.arange(n, device=dev).repeat_interleave(k))
    with _no_autocast_cache():
        step = StaticStep(model, memory, steps)
        run = GraphedStep(step) if dev.type == "cuda" else step
        tokens = torch.full((n * k, 1), BOS, dtype=torch.long, device=dev)
        scores = torch.full((n, k), float("-inf"), device=dev)
        scores[:, 0] = 0.0
        sentences = torch.arange(n, device=dev)
        base = (sentences * k).unsqueeze(1)
        active = torch.ones(n, dtype=torch.bool, device=dev)
        n_finished = torch.zeros(n, dtype=torch.long, device=dev)
        finished: list[list[Scored]] = [[] for _ in range(n)]
        for t in range(1, steps + 1):
            step.tokens.copy_(tokens[:, -1])
            step.position.fill_(t - 1)
            logits = run()
            at_limit = t > max_len  # [n]
            cand = scores.unsqueeze(-1) + log_probs(logits, at_limit.repeat_interleave(k)).view(n, k, -1)
            vocab = cand.size(-1)
            top, flat = cand.view(n, -1).topk(min(2 * k, k * vocab), dim=1)
            from_beam, token = flat // vocab, flat % vocab
            top = top.masked_fill(~active.unsqueeze(1), float("-inf"))  # done sentences take nothing more
            n_finished += collect_finished(finished, sentences, tokens, top, from_beam, token,
                                            length_divisor(length, t, alpha))
            scores, from_beam, token = next_beams(top, from_beam, token, k)
            active = active & ~at_limit & torch.isfinite(scores).any(1) & (n_finished < k)
            if not bool(active.any()):
                break
            rows = (base + from_beam).masked_fill(~active.unsqueeze(1), 0) + torch.where(
                active.unsqueeze(1), 0, base + torch.arange(k, device=dev))  # done sentences: rows unchanged
            rows = rows.view(-1)
            step.rows.copy_(rows)
            tokens = torch.cat([tokens[rows], token.view(-1, 1)], dim=1)
    return [sorted(hyps, key=lambda h: -h[0])[:nbest] if hyps else [(float("-inf"), [])] for hyps in finished]
