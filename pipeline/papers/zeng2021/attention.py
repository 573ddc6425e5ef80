"""Zeng et al. (2021) sec. 4.1-4.3: self-attention entropy (eq. 5, Figure 4), weight histograms (Figure 5), RAN patterns
(Figure 6) and Jensen-Shannon divergence between layers (Figure 7), from teacher-forced passes."""
from __future__ import annotations

import contextlib
from typing import Iterator, Sequence

import torch
from torch import Tensor, nn

from pipeline.evaluate.forced import forced_batches
from pipeline.data.vocab import PAD
from pipeline.errors import PipelineError
from pipeline.models.ran import using
from pipeline.search import inference

SIDES = ("enc", "dec")


def _part(model: nn.Module, side: str) -> nn.Module:
    """The encoder ("enc") or decoder ("dec") of a composed model."""
    return getattr(model, "encoder" if side == "enc" else "decoder", None)


def _layers(model: nn.Module, side: str) -> nn.ModuleList:
    """The encoder or decoder layers of a Transformer-like model; PipelineError if it has none."""
    layers = getattr(_part(model, side), "layers", None)
    if layers is None or not all(hasattr(getattr(layer, "self_attn", None), "attention_weights") for layer in layers):
        raise PipelineError(f"attention analysis: model {type(model).__name__} has no {side} layers whose "
                            "self_attn offers attention_weights (expected a transformer encoder and decoder)")
    return layers


def _entropy(p: Tensor) -> Tensor:
    """Eq. 5 along the last axis, natural log, 0 log 0 = 0: [...,S] -> [...]."""
    return -torch.special.xlogy(p, p).sum(-1)


def _js(p: Tensor, q: Tensor) -> Tensor:
    """Jensen-Shannon divergence (natural log) of rows p, q [...,S] -> [...], clamped at 0 against rounding."""
    m = 0.5 * (p + q)
    kl_pm = (torch.special.xlogy(p, p) - torch.special.xlogy(p, m)).sum(-1)
    kl_qm = (torch.special.xlogy(q, q) - torch.special.xlogy(q, m)).sum(-1)
    return (0.5 * (kl_pm + kl_qm)).clamp(min=0.0)


class _Side:
    """Running sums of one side's statistics over batches (float64)."""

    def __init__(self, layers: int, bins: int):
        self.edges = torch.linspace(0.0, 1.0, bins + 1, dtype=torch.float64)
        self.entropy = torch.zeros(layers, dtype=torch.float64)  # sum over rows of the head-mean entropy
        self.counts = torch.zeros(layers, bins, dtype=torch.long)
        self.js = torch.zeros(layers, layers, dtype=torch.float64)
        self.rows = 0
        self.means: dict[int, Tensor] = {}  # this batch's head-averaged weights [B,T,S] per layer

    def add(self, index: int, weights: Tensor, rows: Tensor, visible: Tensor) -> None:
        """weights [B,h,T,S], rows [B,T] (non-pad queries), visible [B,T,S] (keys counted in the histogram)."""
        w = weights.double().cpu()
        self.entropy[index] += _entropy(w).mean(1)[rows].sum()  # eq. 5 per row; heads averaged (same row count)
        values = w.permute(0, 2, 3, 1)[visible].reshape(-1)  # all heads of the visible (query, key) pairs
        bucket = torch.bucketize(values, self.edges[1:-1], right=True)  # edges[i] <= w < edges[i+1]; 1 -> last
        self.counts[index] += torch.bincount(bucket, minlength=self.counts.size(1))
        self.means[index] = w.mean(1)  # our choice: JS of head-averaged rows (Figure 7 is one map per model)

    def end_batch(self, rows: Tensor) -> None:
        """Add this batch's pairwise JS (mean over rows later) and its row count."""
        for i in range(len(self.means)):
            for j in range(i + 1, len(self.means)):
                d = _js(self.means[i], self.means[j])[rows].sum()
                self.js[i, j] += d
                self.js[j, i] += d
        self.rows += int(rows.sum())
        self.means.clear()

    def result(self) -> dict:
        """JSON-ready statistics: means over all non-pad query rows."""
        return {"entropy": (self.entropy / self.rows).tolist(),
                "histogram": {"edges": self.edges.tolist(), "counts": self.counts.tolist()},
                "js": (self.js / self.rows).tolist()}


@contextlib.contextmanager
def _hooks(model: nn.Module, sink) -> Iterator[None]:
    """Forward hooks re-computing every self_attn's weights with its inputs: sink(side, index, [B,h,T,S]).

    They run inside the layer's call, so a pattern side's context (ran.using, entered by the stack) is active."""
    handles = []

    def make(side: str, index: int):
        def hook(module, args, kwargs, output):
            query, keys = args[0], args[1]
            pad = args[2] if len(args) > 2 else kwargs.get("pad")
            sink(side, index, module.attention_weights(query, keys, pad, causal=kwargs.get("causal", False),
                                                       position_offset=kwargs.get("position_offset", 0)))
        return hook

    try:
        for side in SIDES:
            for i, layer in enumerate(_layers(model, side)):
                handles.append(layer.self_attn.register_forward_hook(make(side, i), with_kwargs=True))
        yield
    finally:
        for handle in handles:
            handle.remove()


def _check(src_ids: Sequence, tgt_ids: Sequence, batch_size: int, bins: int) -> None:
    """PipelineError naming the argument for empty or mismatched id lists and non-positive sizes."""
    for name, value in (("src_ids", src_ids), ("tgt_ids", tgt_ids)):
        if len(value) == 0:
            raise PipelineError(f"attention_statistics: argument '{name}' is empty; expected at least one sentence")
    if len(src_ids) != len(tgt_ids):
        raise PipelineError(f"attention_statistics: 'src_ids' has {len(src_ids)} sentences but 'tgt_ids' has "
                            f"{len(tgt_ids)}; expected one target per source")
    for name, value in (("batch_size", batch_size), ("bins", bins)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise PipelineError(f"attention_statistics: argument '{name}' must be a positive integer, got {value!r}")


def attention_statistics(model: nn.Module, src_ids: list[list[int]], tgt_ids: list[list[int]], *,
                         batch_size: int = 50, bins: int = 20) -> dict:
    """Entropy (eq. 5), histograms and layer-pair JS of every self-attention layer over teacher-forced pairs:
    {"enc": SIDE, "dec": SIDE, "n_sentences": N, "bins": bins} with SIDE = {"entropy": [L], "histogram":
    {"edges": [bins+1], "counts": [L][bins]}, "js": [L][L]}; padded queries and keys are ignored."""
    _check(src_ids, tgt_ids, batch_size, bins)
    sides = {side: _Side(len(_layers(model, side)), bins) for side in SIDES}
    device = next(model.parameters()).device
    masks: dict[str, tuple[Tensor, Tensor]] = {}
    with inference(model), _hooks(model, lambda side, i, w: sides[side].add(i, w, *masks[side])):
        for _, src, tgt_in, _ in forced_batches(src_ids, tgt_ids, batch_size):
            src_ok, tgt_ok = src.ne(PAD), tgt_in.ne(PAD)  # masks stay on the CPU, as the sums
            causal = torch.ones(tgt_in.size(1), tgt_in.size(1), dtype=torch.bool).tril()
            masks["enc"] = (src_ok, src_ok[:, :, None] & src_ok[:, None, :])
            # our choice: the decoder histogram counts only keys <= query (the others are 0 by construction)
            masks["dec"] = (tgt_ok, tgt_ok[:, :, None] & tgt_ok[:, None, :] & causal)
            model(src.to(device), tgt_in.to(device))
            for side, (rows, _) in masks.items():
                sides[side].end_batch(rows)
    out = {side: stats.result() for side, stats in sides.items()}
    return {**out, "n_sentences": len(src_ids), "bins": bins}


def pattern_weights(model: nn.Module, size: int) -> dict:
    """Zeng et al. (2021) Figure 6: head-averaged input-independent weights [n][n] per layer of a pattern side (decoder
    causal), n = min(size, ran_max_len); None for a dot-product side: {"enc": [L][n][n] | None, "dec": ...}."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise PipelineError(f"pattern_weights: argument 'size' must be a positive integer, got {size!r}")
    device = next(model.parameters()).device
    out: dict[str, list | None] = {}
    with inference(model):
        for side in SIDES:
            part = _part(model, side)
            patterns = getattr(part, "patterns", None)
            if patterns is None:
                out[side] = None
                continue
            n = min(size, part.options.ran_max_len)
            x = torch.zeros(1, n, part.options.d_model, device=device)  # the weights do not depend on it
            with using(patterns):
                out[side] = [layer.self_attn.attention_weights(x, x, None, causal=side == "dec")[0].mean(0)
                             .double().cpu().tolist() for layer in _layers(model, side)]
    return out
