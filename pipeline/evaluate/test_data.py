"""A trained model and the first test sentences of an analysis as vocabulary ids (the teacher-forced analyses and
the decoding-speed measurement read their inputs through this)."""
from __future__ import annotations

import sys

from pipeline.fileio import read_lines


def load_test(inputs: dict, limit: int, with_target: bool = True, device=None):
    """(model, its record (load_model's info), source ids, target ids or None) of the first `limit` test pairs of
    `inputs` (model, src, tgt, src_vocab, tgt_vocab); pairs that do not fit the model's positions are left out.
    The model is on `device` (default: the job's GPU if it has one, else the CPU: pipeline.device)."""
    from pipeline.checkpoint import check_vocab
    from pipeline.data.vocab import Vocab
    from pipeline.device import load_model_for_job
    from pipeline.data.token_store import Pairs
    from pipeline.train import within_length

    model, info = load_model_for_job(inputs["model"], device)
    ids = {}
    for side in ("src", "tgt") if with_target else ("src",):
        vocab = Vocab.load(inputs[f"{side}_vocab"])
        check_vocab(info, vocab, side, inputs[f"{side}_vocab"], inputs["model"])
        ids[side] = [vocab.encode(line) for line in read_lines(inputs[side])[:limit]]
    src_ids, tgt_ids = ids["src"], ids.get("tgt")
    if not with_target:
        return model, info, src_ids, None
    pairs, dropped = within_length(Pairs.of((src_ids, tgt_ids)), model.max_input_len)
    src_ids, tgt_ids = pairs.lists()
    if dropped:
        print(f"note: {dropped} test pair(s) longer than the model's positions left out", file=sys.stderr)
    return model, info, src_ids, tgt_ids
