"""Named architectures built from typed, validated option sets; parameter counting; warm start from a baseline."""
from __future__ import annotations

from typing import Any, Mapping

import torch
from torch import Tensor, nn

from pipeline.errors import PipelineError
from pipeline.models.layers import Seq2Seq
from pipeline.models.multicolumn import MultiColumnTransformer
from pipeline.models.options import parse_options
from pipeline.models.recurrence import RecurrenceTransformer
from pipeline.models.transformer import Transformer

ARCHITECTURES: dict[str, type] = {
    "transformer": Transformer,
    "recurrence": RecurrenceTransformer,
    "multicolumn": MultiColumnTransformer,
}


def build_model(arch: str, options: Mapping[str, Any], src_vocab_size: int, tgt_vocab_size: int) -> Seq2Seq:
    """A freshly initialised model of the named architecture."""
    if arch not in ARCHITECTURES:
        raise PipelineError(f"unknown architecture '{arch}'; known architectures: {', '.join(ARCHITECTURES)}")
    cls = ARCHITECTURES[arch]
    return cls(parse_options(arch, cls.Options, options), src_vocab_size, tgt_vocab_size)


def count_parameters(model: nn.Module) -> int:
    """Number of distinct parameters (tied weights counted once)."""
    return sum(p.numel() for p in model.parameters())


def init_from(model: nn.Module, baseline_state_dict: Mapping[str, Tensor]) -> list[str]:
    """Copy every parameter whose name and shape match the baseline (paper 5.1: proposed models start from the
    trained baseline); return the names of the parameters left at their fresh initialisation."""
    fresh = []
    with torch.no_grad():
        for name, param in model.named_parameters():
            source = baseline_state_dict.get(name)
            if source is not None and tuple(source.shape) == tuple(param.shape):
                param.copy_(source)
            else:
                fresh.append(name)
    return fresh
