"""build_model: a model spec -> a freshly initialised EncoderDecoder; parameter counting; warm start from a baseline.

Every module of pipeline/models is imported once, so each encoder and decoder class registers itself where it is
defined (@register_encoder / @register_decoder): a new kind is a new file, not an entry here.
"""
from __future__ import annotations

import functools
from typing import Any, Mapping

import torch
from torch import Tensor, nn

from pipeline.errors import PipelineError
from pipeline.models.options import ModelSpec, validate_model
from pipeline.models.seq2seq import DECODERS, ENCODERS, EncoderDecoder, load_modules


def _component(table: Mapping[str, type], part: str, name: str) -> type:
    """The registered class of an encoder or decoder kind whose options are registered."""
    if name not in table:
        raise PipelineError(f"{part} '{name}' has options but no module registered with @register_{part}('{name}'); "
                            f"registered {part}s: {', '.join(sorted(table))}")
    return table[name]


def build_model(spec: Mapping[str, Any] | ModelSpec, src_vocab_size: int, tgt_vocab_size: int) -> EncoderDecoder:
    """A freshly initialised model of spec {"encoder": kind, "decoder": kind, **options} (or a validated ModelSpec)."""
    spec = validate_model(spec)
    load_modules()
    encoder = _component(ENCODERS, "encoder", spec.encoder)(spec.encoder_options)
    decoder = _component(DECODERS, "decoder", spec.decoder)(spec.decoder_options, spec.encoder_options.memory_dims)
    return EncoderDecoder(encoder, decoder, spec.model_options, src_vocab_size, tgt_vocab_size, spec=spec)


def model_code(spec: Mapping[str, Any] | ModelSpec) -> list[str]:
    """Repository files a model of this spec is built from: its encoder's and decoder's modules and options
    modules, with what they import (with the trainer's, the code its weights depend on)."""
    spec = validate_model(spec)
    return list(_kinds_code(spec.encoder, spec.decoder))


@functools.lru_cache(maxsize=None)
def _kinds_code(encoder: str, decoder: str) -> tuple[str, ...]:
    from pipeline.code_deps import code_files
    from pipeline.models.options import DECODER_OPTIONS, ENCODER_OPTIONS

    load_modules()
    classes = (ENCODERS[encoder], DECODERS[decoder], ENCODER_OPTIONS[encoder], DECODER_OPTIONS[decoder])
    return tuple(code_files([], sorted({cls.__module__ for cls in classes})))


def count_parameters(model: nn.Module) -> int:
    """Number of distinct parameters (tied weights counted once)."""
    return sum(p.numel() for p in model.parameters())


def init_from(model: nn.Module, baseline_state_dict: Mapping[str, Tensor]) -> list[str]:
    """Copy every parameter whose name and shape match the baseline (hao2019 5.1: proposed models start from the
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
