"""The decoding step: beam search of a subword file with one model or an ensemble, BPE removed and detokenised
(the rules `translate` and `nbest_decode`)."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

from pipeline.fileio import read_lines, write_lines
from pipeline.steps import MODEL_RESOURCES, register_step
from pipeline.steps.arguments import arg, json_arg


def nbest_decoding(decoding: dict, n: int) -> dict:
    """A system's decoding settings asking for its n best (a combination's input): the beam widened to n if narrower
    (our choice; the rule nbest_decode)."""
    return {**decoding, "nbest": n, "beam": max(decoding["beam"], n)}


def load_systems(paths: list[str], vocab_paths: dict[str, str] | None = None, device=None):
    """(model, precision, vocabularies): one model, or an ensemble of several averaging their log-probabilities, on
    `device` (default: the job's GPU if it has one, else the CPU: pipeline.device), the precision they were trained
    at (float32 if the members differ), and the Vocab of each side ("src"/"tgt") at vocab_paths, which every member
    must fit (pipeline.checkpoint.check_vocab)."""
    from pipeline.checkpoint import check_vocab, trained_precision
    from pipeline.data.vocab import Vocab
    from pipeline.device import load_model_for_job
    loaded = [load_model_for_job(path, device) for path in paths]
    vocabs = {side: Vocab.load(vocab_path) for side, vocab_path in (vocab_paths or {}).items()}
    for path, (_, info) in zip(paths, loaded):
        for side, vocab in vocabs.items():
            check_vocab(info, vocab, side, vocab_paths[side], path)
    precisions = {trained_precision(info) for _, info in loaded}
    precision = precisions.pop() if len(precisions) == 1 else "float32"
    if len(loaded) == 1:
        return loaded[0][0], precision, vocabs
    from pipeline.ensemble import Ensemble
    return Ensemble([model for model, _ in loaded]), precision, vocabs


@dataclass
class TranslateArgs:
    spec: str = arg(help="JSON: the decoding settings (pipeline/decoding.py Decoding: beam, length, length_penalty, "
                         "batch_size, max_len_a, max_len_b, nbest)")
    model: list[str] = arg(append=True, help="model.pt; several: an ensemble")
    src_vocab: str = arg()
    tgt_vocab: str = arg()
    input: str = arg()
    output: str = arg()
    lang: str = arg()
    detruecase: bool = arg(False, help="the corpus is truecased: undo it before detokenising")
    no_progress: bool = arg(False)


@register_step("translate", TranslateArgs, rules=("translate", "nbest_decode"), stage="eval", resources=MODEL_RESOURCES,
               code=("pipeline.translate", "pipeline.beam_search", "pipeline.ensemble", "pipeline.checkpoint"),
               help="beam-search a subword file, then remove BPE and detokenise")
def translate(args: TranslateArgs) -> None:
    from pipeline.data.subword import remove_bpe
    from pipeline.data.tokenize import detokenize_lines
    from pipeline.decoding import Decoding
    from pipeline.fileio import write_nbest
    from pipeline.settings import from_mapping
    from pipeline.translate import translate_nbest

    decoding = from_mapping(Decoding, json_arg(args.spec, "--spec"))
    model, precision, vocabs = load_systems(args.model, {"src": args.src_vocab, "tgt": args.tgt_vocab})
    started = time.time()
    out = translate_nbest(model, vocabs["src"], vocabs["tgt"], read_lines(args.input), nbest=decoding.nbest,
                          batch_size=decoding.batch_size, progress=not args.no_progress, precision=precision,
                          **decoding.search())

    def post(line: str) -> str:
        words = remove_bpe(line)
        if args.detruecase:  # truecased corpora: the first word capitalised again, before detokenising
            from pipeline.data.truecase import detruecase_lines
            words = detruecase_lines([words])[0]
        return detokenize_lines([words], args.lang)[0]

    write_lines(args.output, [post(hyps[0][1]) for hyps in out])
    if decoding.nbest > 1:
        write_nbest(Path(args.output).with_suffix(".nbest"), [[(score, post(text)) for score, text in hyps]
                                                               for hyps in out])
    print(f"translated {len(out)} sentences in {time.time() - started:.1f}s", file=sys.stderr)
