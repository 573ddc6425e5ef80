"""N-best reranking by a translation model (shu2016 5.1: "T2S neural reranking", the T2S system's n-best lists
reranked by the NMT ensemble).

Each candidate is prepared as the corpus prepares its target side (tokenised, truecased, BPE'd where the corpus
does), then scored teacher-forced by the model: the sum over its tokens and EOS of log p(y_t | y_<t, x). An
ensemble's step distribution is the renormalised mean of its members' log-probabilities, as in beam search
(pipeline/ensemble.py). Our choices where the paper is silent: the NMT score alone ranks the candidates (the T2S
system's own score is not mixed in), normalised by length (tokens + EOS) as our beam search normalises
(`length: normalize`; `none` sums); ties keep the candidate the n-best list ranked first.
"""
from __future__ import annotations

import math
from typing import Sequence

import torch

from pipeline.data.vocab import PAD
from pipeline.errors import PipelineError
from pipeline.evaluate.forced import forced_batches
from pipeline.search import inference


def prepare_candidates(texts: Sequence[str], lang: str, truecaser=None, bpe=None, pretokenized: bool = False
                       ) -> list[str]:
    """Detokenised candidates as the corpus's target side reads: tokenised (unless the corpus is pretokenised), then
    truecased, then BPE'd (each if given)."""
    from pipeline.data.tokenize import tokenize_lines
    lines = list(texts) if pretokenized else tokenize_lines(list(texts), lang)
    if truecaser is not None:
        from pipeline.data.truecase import truecase_lines
        lines = truecase_lines(lines, truecaser)
    if bpe is not None:
        lines = [bpe.segment(line) for line in lines]
    return lines


def sentence_log_probs(model, src_ids: Sequence[Sequence[int]], tgt_ids: Sequence[Sequence[int]],
                       batch_size: int = 50) -> list[tuple[float, int]]:
    """Per pair (log p(y | x) summed over y's tokens and EOS, that token count), teacher-forced in eval mode; a
    target longer than the model can emit gets -inf."""
    if len(src_ids) != len(tgt_ids):
        raise PipelineError(f"reranking: {len(src_ids)} sources and {len(tgt_ids)} candidates; expected one source "
                            "per candidate")
    limit = model.max_output_len
    out: list[tuple[float, int]] = [(-math.inf, len(t) + 1) for t in tgt_ids]
    kept = [k for k, t in enumerate(tgt_ids) if limit is None or len(t) + 1 <= limit]
    param = next(model.parameters(), None)
    device = param.device if param is not None else torch.device("cpu")
    with inference(model):
        for chunk, src, tgt_in, tgt_out in forced_batches([src_ids[k] for k in kept], [tgt_ids[k] for k in kept],
                                                           batch_size):
            tgt_out = tgt_out.to(device)
            log_probs = torch.log_softmax(model(src.to(device), tgt_in.to(device)).float(), dim=-1)  # [B,T,V]
            picked = log_probs.gather(-1, tgt_out.unsqueeze(-1)).squeeze(-1).masked_fill(tgt_out.eq(PAD), 0.0)
            for row, k in enumerate(chunk):
                out[kept[k]] = (float(picked[row].double().sum()), int(tgt_out[row].ne(PAD).sum()))
    return out


def rerank_choice(scores: Sequence[tuple[float, int]], length: str = "normalize") -> int:
    """The index of the best candidate by model score (per token if length is 'normalize'); ties to the first."""
    if not scores:
        raise PipelineError("reranking: a sentence without candidates; expected at least one")
    if length not in ("normalize", "none"):
        raise PipelineError(f"reranking: length {length!r}; expected normalize or none")
    values = [total / tokens if length == "normalize" else total for total, tokens in scores]
    return max(range(len(values)), key=lambda i: (values[i], -i))


def rerank_lists(model, sources: Sequence[Sequence[int]], lists, tgt_vocab, *, lang: str, truecaser=None, bpe=None,
                 pretokenized: bool = False, length: str = "normalize", batch_size: int = 50,
                 where: str = "n-best lists") -> list[str]:
    """Per sentence the candidate of its n-best list (read_nbest's (score, text) lists) the model scores best, the
    candidates prepared as the corpus's target side (prepare_candidates); an empty list names `where`."""
    flat = [(i, text) for i, hyps in enumerate(lists) for _, text in hyps]
    prepared = prepare_candidates([text for _, text in flat], lang, truecaser, bpe, pretokenized)
    scores = sentence_log_probs(model, [sources[i] for i, _ in flat], [tgt_vocab.encode(c) for c in prepared],
                                batch_size=batch_size)
    chosen, at = [], 0
    for hyps in lists:
        if not hyps:
            raise PipelineError(f"{where}: sentence {len(chosen)} has no candidates; expected at least one")
        chosen.append(hyps[rerank_choice(scores[at:at + len(hyps)], length)][1])
        at += len(hyps)
    return chosen
