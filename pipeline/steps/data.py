"""Data steps: a corpus fetched, tokenised, truecased, cleaned, segmented into subwords and counted into
vocabularies (the rules of workflows/rules/data.smk, dvc.yaml's corpus-<name> stages)."""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.fileio import iter_lines, write_json, write_lines
from pipeline.steps import Resources, register_step
from pipeline.steps.arguments import arg, json_arg


@dataclass
class FetchArgs:
    source: str = arg(help="registry corpus name, e.g. l10n-zh-en")
    src: str = arg()
    tgt: str = arg()
    out: str = arg()
    cache: str = arg()
    manual: str = arg("{}", help="JSON: user-supplied part key -> path")
    seed: int = arg(1)
    valid_size: int = arg(500)
    test_size: int = arg(1000)
    test_sets: list[str] = arg(["test"], help="the corpus's test sets, 'test' first; those the source does not "
                                              "build are cut from 'test'")


@register_step("fetch", FetchArgs, rules=("fetch",), stage="corpus",
               help="download/build a corpus into train/valid/test files")
def fetch(args: FetchArgs) -> None:
    from pipeline.data.registry import fetch_corpus
    sizes = {"valid_size": args.valid_size, "test_size": args.test_size}
    card = fetch_corpus(args.source, Path(args.out), Path(args.cache), manual=json_arg(args.manual, "--manual"),
                        seed=args.seed, sizes=sizes, langs=(args.src, args.tgt), test_sets=tuple(args.test_sets))
    print(json.dumps({k: card[k] for k in ("counts",) if k in card}, ensure_ascii=False))


# the steps that split a file into chunks of lines (pipeline/data/chunks.py): 8 worker processes at paper scale
CHUNKED = {"tiny": Resources(), "paper": Resources(threads=8, mem_mb=4000, runtime=240)}


@dataclass
class TokenizeArgs:
    lang: str = arg()
    input: str = arg()
    output: str = arg()
    pretokenized: bool = arg(False, help="copy (validated) instead of tokenising")
    escaped: bool = arg(False, help="Moses-tokenised with XML escapes (&apos;re): unescape instead of tokenising")
    workers: int = arg(1, help="processes, each tokenising chunks of lines (the output is the same)")


@register_step("tokenize", TokenizeArgs, rules=("tokenize",), stage="corpus", resources=CHUNKED,
               help="Moses tokenization / jieba segmentation of one file")
def tokenize(args: TokenizeArgs) -> None:
    if args.pretokenized:  # e.g. the synthetic toy corpora: validate and keep as they are
        write_lines(args.output, iter_lines(args.input))
        return
    if args.escaped:  # tokenised already (zhang2018's WMT17 release): our tokens are unescaped (-no-escape)
        from sacremoses import MosesDetokenizer
        unescape = MosesDetokenizer(lang=args.lang).unescape_xml
        write_lines(args.output, (unescape(line) for line in iter_lines(args.input)))
        return
    from pipeline.data.tokenize import tokenize_file
    tokenize_file(Path(args.input), Path(args.output), args.lang, args.workers)


@dataclass
class LearnTruecaserArgs:
    input: str = arg()
    model: str = arg()


@register_step("learn-truecaser", LearnTruecaserArgs, rules=("learn_truecaser",), stage="corpus",
               help="learn a Moses truecasing model from a tokenised file")
def learn_truecaser(args: LearnTruecaserArgs) -> None:
    from pipeline.data.truecase import learn_truecaser as learn
    learn(iter_lines(args.input), Path(args.model))


@dataclass
class TruecaseArgs:
    model: str = arg()
    input: str = arg()
    output: str = arg()
    workers: int = arg(1, help="processes, each truecasing chunks of lines (the output is the same)")


@register_step("truecase", TruecaseArgs, rules=("truecase",), stage="corpus", resources=CHUNKED,
               help="truecase a tokenised file with a model of learn-truecaser")
def truecase(args: TruecaseArgs) -> None:
    from pipeline.data.chunks import map_file
    from pipeline.data.truecase import load_truecaser, truecase_with
    load_truecaser(Path(args.model))  # a missing model fails here, naming it
    map_file(functools.partial(truecase_with, model=Path(args.model)), args.input, args.output, args.workers)


@dataclass
class CleanArgs:
    src_in: str = arg()
    tgt_in: str = arg()
    src_out: str = arg()
    tgt_out: str = arg()
    report: str = arg()
    max_len: int = arg()
    max_ratio: float | None = arg(None)


@register_step("clean", CleanArgs, rules=("clean",), stage="corpus",
               help="drop empty, overlong and badly proportioned training pairs")
def clean(args: CleanArgs) -> None:
    from pipeline.data.clean import clean_parallel
    report = clean_parallel(args.src_in, args.tgt_in, args.src_out, args.tgt_out,
                            max_len=args.max_len, max_ratio=args.max_ratio)
    write_json(args.report, report)
    print(json.dumps(report))


@dataclass
class LearnBpeArgs:
    langs: list[str] = arg()
    inputs: list[str] = arg(help="one training file per --langs entry")
    codes_dir: str = arg()
    merges: int = arg()
    joint: bool = arg(False)
    sides: list[str] | None = arg(None, help="learn codes for these languages only (default: all; none given: no "
                                             "codes at all); apply-bpe --copy passes the others through")


# learn-bpe at paper scale (docs/performance.md (l), benchmarks/results/learn_bpe_scaling.json): one core (subword-nmt
# counts and merges in one process); memory and time grow with the word types. Estimated for a 40-million-pair
# corpus (13.6M types in a joint vocabulary): 24.6 GB, at most about 250 minutes with 40,000 merges; asked: 1.3x and
# 1.7x that
LEARN_BPE = {"tiny": Resources(), "paper": Resources(threads=1, mem_mb=32000, runtime=420)}


@register_step("learn-bpe", LearnBpeArgs, rules=("learn_bpe",), stage="corpus", resources=LEARN_BPE,
               help="learn BPE codes (joint or one per language)")
def learn_bpe(args: LearnBpeArgs) -> None:
    from pipeline.data.subword import learn_bpe as learn
    if len(args.langs) != len(args.inputs):
        raise PipelineError(f"learn-bpe: {len(args.langs)} --langs but {len(args.inputs)} --inputs; expected one "
                            f"training file per language")
    inputs = dict(zip(args.langs, map(Path, args.inputs)))
    sides = list(inputs) if args.sides is None else args.sides
    unknown = [side for side in sides if side not in inputs]
    if unknown:
        raise PipelineError(f"learn-bpe: --sides {' '.join(unknown)}; expected languages of --langs "
                            f"({' '.join(args.langs)})")
    if args.joint and set(sides) != set(inputs):
        raise PipelineError(f"learn-bpe: --joint with --sides {' '.join(sides) or '(none)'}; joint BPE is learnt on "
                            f"every language, expected no --sides")
    learn({lang: inputs[lang] for lang in sides}, Path(args.codes_dir), args.merges, args.joint)


@dataclass
class ApplyBpeArgs:
    codes_dir: str = arg()
    side: str = arg(help="the language key the codes were learnt under")
    input: str = arg()
    output: str = arg()
    copy: bool = arg(False, help="a side without BPE: copy the input unchanged")
    workers: int = arg(1, help="processes, each segmenting chunks of lines (the output is the same)")


@register_step("apply-bpe", ApplyBpeArgs, rules=("apply_bpe",), stage="corpus", resources=CHUNKED,
               help="segment a tokenised file into subwords")
def apply_bpe(args: ApplyBpeArgs) -> None:
    from pipeline.data.subword import apply_bpe as apply, codes_for, copy_unsegmented
    if args.copy:  # a side the corpus does not segment (its bpe_sides): the words as they are
        copy_unsegmented(Path(args.codes_dir), args.side, Path(args.input), Path(args.output))
        return
    apply(codes_for(Path(args.codes_dir), args.side), Path(args.input), Path(args.output), args.workers)


@dataclass
class VocabArgs:
    inputs: list[str] = arg()
    output: str = arg()
    vocab_size: int = arg(0, help="keep the N most frequent types, ties alphabetical (the rest map to <unk>); "
                                  "0: every type")


@register_step("vocab", VocabArgs, rules=("vocab",), stage="corpus",
               help="build a vocabulary from subword files (several files: a joint vocabulary)")
def vocab(args: VocabArgs) -> None:
    from pipeline.data.vocab import Vocab
    if args.vocab_size < 0:
        raise PipelineError(f"vocab: --vocab-size {args.vocab_size}; expected an integer >= 0 (0: every type)")
    lines = (line for path in args.inputs for line in iter_lines(path))  # counted one at a time
    Vocab.build(lines, max_size=args.vocab_size or None).save(args.output)


@dataclass
class BinarizeArgs:
    input: str = arg(help="a subword file")
    vocab: str = arg(help="the vocabulary of its side")
    output: str = arg(help="the store's prefix: writes PREFIX.ids and PREFIX.offsets")


@register_step("binarize", BinarizeArgs, rules=("binarize",), stage="corpus",
               resources={"tiny": Resources(), "paper": Resources(mem_mb=2000, runtime=120)},
               help="encode a subword file as vocabulary ids into the binary token store training memory-maps")
def binarize(args: BinarizeArgs) -> None:
    from pipeline.data.token_store import binarize as write
    from pipeline.data.vocab import Vocab
    print(json.dumps({"sentences": write(args.input, Vocab.load(args.vocab), args.output)}))


@dataclass
class CorpusReadyArgs:
    files: list[str] = arg(help="every file a system of the corpus reads")
    output: str = arg(help="the corpus's ready marker: its files and their line counts (JSON)")


@register_step("corpus-ready", CorpusReadyArgs, rules=("corpus",), stage="corpus",
               help="mark a corpus as ready: every file its systems read, with its line count (a token store's "
                    "files: their sentences and ids)")
def corpus_ready(args: CorpusReadyArgs) -> None:
    from pipeline.data.token_store import ID_DTYPE, OFFSET_DTYPE
    counts = {}
    for path in args.files:
        if path.endswith((".ids", ".offsets")):
            size = Path(path).stat().st_size
            counts[path] = size // ID_DTYPE.itemsize if path.endswith(".ids") else size // OFFSET_DTYPE.itemsize - 1
            continue
        with open(path, "rb") as handle:
            counts[path] = sum(1 for _ in handle)
    write_json(args.output, counts)
