"""The reranking step: n-best lists reordered by a model's (or an ensemble's) log-probability of each candidate
(the rule `rerank`; pipeline/rerank.py)."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from pipeline.fileio import read_lines, read_nbest, write_lines
from pipeline.steps import MODEL_RESOURCES, register_step
from pipeline.steps.arguments import arg, json_arg


@dataclass
class RerankArgs:
    model: list[str] = arg(append=True, help="model.pt; several: an ensemble")
    nbest: str = arg()
    src: str = arg()
    src_vocab: str = arg()
    tgt_vocab: str = arg()
    lang: str = arg()
    settings: str = arg(help="JSON: the combination's settings (n, length)")
    output: str = arg()
    truecaser: str = arg("", help="the target side's truecasing model (truecased corpora)")
    codes_dir: str = arg("", help="the corpus's BPE codes (corpora that segment the target side)")
    pretokenized: bool = arg(False, help="the corpus is already tokenised (toy corpora)")
    batch_size: int = arg(50)


@register_step("rerank", RerankArgs, rules=("rerank",), stage="eval", resources=MODEL_RESOURCES,
               help="rerank n-best lists by a model's (or an ensemble's) log-probability")
def rerank(args: RerankArgs) -> None:
    from pipeline.rerank import rerank_lists
    from pipeline.steps.decoding import load_systems
    truecaser = bpe = None
    if args.truecaser:
        from pipeline.data.truecase import load_truecaser
        truecaser = load_truecaser(Path(args.truecaser))
    if args.codes_dir:
        from pipeline.data.subword import codes_for, load_bpe
        bpe = load_bpe(codes_for(Path(args.codes_dir), "tgt"))
    model, _, vocabs = load_systems(args.model, {"src": args.src_vocab, "tgt": args.tgt_vocab})
    sources = [vocabs["src"].encode(line) for line in read_lines(args.src)]
    lists = read_nbest(args.nbest, sentences=len(sources))
    chosen = rerank_lists(model, sources, lists, vocabs["tgt"], lang=args.lang, truecaser=truecaser, bpe=bpe,
                          pretokenized=args.pretokenized, length=json_arg(args.settings, "--settings")["length"],
                          batch_size=args.batch_size, where=args.nbest)
    write_lines(args.output, chosen)
    moved = sum(hyps[0][1] != text for hyps, text in zip(lists, chosen))
    print(f"reranked {len(lists)} n-best lists ({sum(map(len, lists))} candidates); {moved} first choices changed",
          file=sys.stderr)
