"""`python -m pipeline <step> ...`: the thin commands every Snakemake rule calls.

This is the only module that knows about files and the params file; each step reads its inputs,
calls one package function and writes its outputs atomically.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.fileio import atomic_open, read_lines, read_parallel, write_lines


def _write_json(path: str | Path, obj) -> None:
    with atomic_open(path) as handle:
        json.dump(obj, handle, indent=2, ensure_ascii=False, sort_keys=True)
        handle.write("\n")


def _read_json(path: str | Path) -> dict:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise PipelineError(f"{path}: not valid JSON ({err})") from None


# ---------------------------------------------------------------------------------------------- config
def cmd_check_config(args) -> None:
    from pipeline.config import load_params
    params = load_params(args.params, scale=args.scale)
    print(f"{args.params}: OK (scale {params.scale}; {len(params.corpora)} corpora, {len(params.models)} models, "
          f"{len(params.experiments)} experiments, {len(params.tables)} tables)")


def cmd_targets(args) -> None:
    from pipeline.config import load_params
    for table in load_params(args.params).tables.values():
        print(table.target)


# ------------------------------------------------------------------------------------------------ data
def cmd_fetch(args) -> None:
    from pipeline.data.registry import fetch_corpus
    sizes = {"valid_size": args.valid_size, "test_size": args.test_size}
    card = fetch_corpus(args.source, Path(args.out), Path(args.cache), manual=json.loads(args.manual),
                        seed=args.seed, sizes=sizes, langs=(args.src, args.tgt))
    print(json.dumps({k: card[k] for k in ("counts",) if k in card}, ensure_ascii=False))


def cmd_tokenize(args) -> None:
    if args.pretokenized:  # e.g. the synthetic toy corpora: validate and keep as they are
        write_lines(args.output, read_lines(args.input))
        return
    from pipeline.data.tokenize import tokenize_file
    tokenize_file(Path(args.input), Path(args.output), args.lang)


def cmd_clean(args) -> None:
    from pipeline.data.clean import clean_parallel
    report = clean_parallel(args.src_in, args.tgt_in, args.src_out, args.tgt_out,
                            max_len=args.max_len, max_ratio=args.max_ratio)
    _write_json(args.report, report)
    print(json.dumps(report))


def cmd_learn_bpe(args) -> None:
    from pipeline.data.subword import learn_bpe
    inputs = dict(zip(args.langs, map(Path, args.inputs)))
    learn_bpe(inputs, Path(args.codes_dir), args.merges, args.joint)


def cmd_apply_bpe(args) -> None:
    from pipeline.data.subword import apply_bpe, codes_for
    apply_bpe(codes_for(Path(args.codes_dir), args.side), Path(args.input), Path(args.output))


def cmd_vocab(args) -> None:
    from pipeline.data.vocab import Vocab
    lines = [line for path in args.inputs for line in read_lines(path)]
    Vocab.build(lines).save(args.output)


# ------------------------------------------------------------------------------------------- training
def _encode_parallel(src_path, tgt_path, src_vocab, tgt_vocab):
    src, tgt = read_parallel(src_path, tgt_path)
    return [src_vocab.encode(s) for s in src], [tgt_vocab.encode(t) for t in tgt]


def cmd_train(args) -> None:
    import torch

    from pipeline.checkpoint import load_model
    from pipeline.data.vocab import Vocab
    from pipeline.models.registry import build_model
    from pipeline.train import Recipe, fit

    spec = json.loads(args.spec)
    torch.manual_seed(spec["seed"])
    src_vocab, tgt_vocab = Vocab.load(args.src_vocab), Vocab.load(args.tgt_vocab)
    train = _encode_parallel(args.train_src, args.train_tgt, src_vocab, tgt_vocab)
    valid = _encode_parallel(args.valid_src, args.valid_tgt, src_vocab, tgt_vocab)
    model = build_model(spec["arch"], spec["options"], len(src_vocab), len(tgt_vocab))
    init_state = load_model(Path(args.init))[0].state_dict() if args.init else None
    recipe = Recipe.from_dict({**spec["recipe"], "seed": spec["seed"]}, where=f"recipe of {spec['experiment']}")
    run_dir = Path(args.run_dir)
    if (run_dir / "COMPLETE").exists():  # a finished run asked again: its inputs changed, start afresh
        shutil.rmtree(run_dir)
    meta = {"experiment": spec["experiment"], "arch": spec["arch"], "options": spec["options"], "init": args.init,
            "src_vocab_size": len(src_vocab), "tgt_vocab_size": len(tgt_vocab)}
    summary = fit(model, train, valid, recipe, run_dir=run_dir, out_dir=Path(args.out_dir), meta=meta,
                  init_state=init_state, progress=not args.no_progress)
    _publish_curves(Path(args.out_dir) / "dvclive", Path(args.curves_dir))
    (run_dir / "COMPLETE").touch()
    print(json.dumps(summary))


def _publish_curves(live_dir: Path, curves_dir: Path) -> None:
    """Copy the dvclive curve files (train/*.tsv, valid/*.tsv) to where `dvc plots show` collects them."""
    tmp = curves_dir.with_name(f".{curves_dir.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(live_dir / "plots" / "metrics", tmp)
    shutil.rmtree(curves_dir, ignore_errors=True)
    os.replace(tmp, curves_dir)


def cmd_translate(args) -> None:
    from pipeline.checkpoint import load_model
    from pipeline.data.subword import remove_bpe
    from pipeline.data.tokenize import detokenize_lines
    from pipeline.data.vocab import Vocab
    from pipeline.translate import translate_lines

    spec = json.loads(args.spec)
    model, _ = load_model(Path(args.model))
    src_vocab, tgt_vocab = Vocab.load(args.src_vocab), Vocab.load(args.tgt_vocab)
    started = time.time()
    out = translate_lines(model, src_vocab, tgt_vocab, read_lines(args.input), beam=spec["beam"],
                          length_penalty=spec["length_penalty"], batch_size=spec["batch_size"],
                          max_len_a=spec["max_len_a"], max_len_b=spec["max_len_b"], progress=not args.no_progress)
    write_lines(args.output, detokenize_lines([remove_bpe(line) for line in out], args.lang))
    print(f"translated {len(out)} sentences in {time.time() - started:.1f}s", file=sys.stderr)


# ------------------------------------------------------------------------------------------ evaluation
def cmd_score(args) -> None:
    from pipeline.evaluate.bleu import bleu, target_tokenizer
    hyps, refs = read_lines(args.hyp), read_lines(args.ref)
    result = bleu(hyps, refs, tokenize=target_tokenizer(args.lang))
    result.update({"system": args.system, "test_set": args.test_set, "metric": "BLEU"})
    _write_json(args.output, result)
    print(f"{args.system} {args.test_set}: BLEU {result['score']:.2f} ({result['signature']})")


def cmd_significance(args) -> None:
    from pipeline.evaluate.bleu import target_tokenizer
    from pipeline.evaluate.significance import paired_bootstrap
    refs = read_lines(args.ref)
    result = paired_bootstrap(refs, read_lines(args.baseline), read_lines(args.system), n_samples=args.n_samples,
                              seed=args.seed, tokenize=target_tokenizer(args.lang))
    result.update({"system": args.system, "baseline": args.baseline})
    _write_json(args.output, result)
    print(f"{args.system} vs {args.baseline}: p = {result['p_value']:.4f}")


def cmd_table(args) -> None:
    from pipeline.report import hao2019
    from pipeline.report.table import write_table
    spec = json.loads(args.spec)
    ours: dict = {}
    for row, by_pair in spec["cells"].items():
        for pair, files in by_pair.items():
            score, model = _read_json(files["score"]), _read_json(files["model"])
            cell = {"bleu": score["score"], "params": model["n_params"], "p_value": None, "baseline_params": None}
            if files.get("significance"):
                cell["p_value"] = _read_json(files["significance"])["p_value"]
            if files.get("baseline_model"):
                cell["baseline_params"] = _read_json(files["baseline_model"])["n_params"]
            ours.setdefault(row, {})[pair] = cell
            spec["footer"].setdefault("bleu_signature", {})[pair] = score["signature"]
    builders = {"hao2019-table3": hao2019.table3}
    if args.name not in builders:
        raise PipelineError(f"table '{args.name}': no layout for it; known: {', '.join(builders)}")
    table = builders[args.name](ours, spec["footer"])
    write_table(table, args.output, args.markdown)
    print(table.to_markdown())


# ---------------------------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pipeline", description=__doc__.splitlines()[0])
    steps = parser.add_subparsers(dest="step", required=True, metavar="STEP")

    def step(name, func, help_text):
        sub = steps.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(func=func)
        return sub

    p = step("check-config", cmd_check_config, "validate params.yaml")
    p.add_argument("--params", default="params.yaml")
    p.add_argument("--scale", choices=("tiny", "paper"))

    p = step("targets", cmd_targets, "print the table targets params.yaml defines")
    p.add_argument("--params", default="params.yaml")

    p = step("fetch", cmd_fetch, "download/build a corpus into train/valid/test files")
    p.add_argument("--source", required=True, help="registry corpus name, e.g. l10n-zh-en")
    p.add_argument("--src", required=True)
    p.add_argument("--tgt", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--cache", required=True)
    p.add_argument("--manual", default="{}", help="JSON: user-supplied part key -> path")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--valid-size", type=int, default=500)
    p.add_argument("--test-size", type=int, default=1000)

    p = step("tokenize", cmd_tokenize, "Moses tokenization / jieba segmentation of one file")
    p.add_argument("--lang", required=True)
    p.add_argument("--pretokenized", action="store_true", help="copy (validated) instead of tokenising")
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)

    p = step("clean", cmd_clean, "drop empty, overlong and badly proportioned training pairs")
    for name in ("--src-in", "--tgt-in", "--src-out", "--tgt-out", "--report"):
        p.add_argument(name, required=True)
    p.add_argument("--max-len", type=int, required=True)
    p.add_argument("--max-ratio", type=float, default=None)

    p = step("learn-bpe", cmd_learn_bpe, "learn BPE codes (joint or one per language)")
    p.add_argument("--langs", nargs=2, required=True)
    p.add_argument("--inputs", nargs=2, required=True)
    p.add_argument("--codes-dir", required=True)
    p.add_argument("--merges", type=int, required=True)
    p.add_argument("--joint", action="store_true")

    p = step("apply-bpe", cmd_apply_bpe, "segment a tokenised file into subwords")
    p.add_argument("--codes-dir", required=True)
    p.add_argument("--side", required=True, help="the language key the codes were learnt under")
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)

    p = step("vocab", cmd_vocab, "build a vocabulary from subword files")
    p.add_argument("--inputs", nargs="+", required=True)
    p.add_argument("--output", required=True)

    p = step("train", cmd_train, "train one system (resumes from its run directory)")
    p.add_argument("--spec", required=True, help="JSON: experiment, arch, options, recipe, seed")
    for name in ("--train-src", "--train-tgt", "--valid-src", "--valid-tgt", "--src-vocab", "--tgt-vocab",
                 "--run-dir", "--out-dir", "--curves-dir"):
        p.add_argument(name, required=True)
    p.add_argument("--init", default=None, help="model.pt of the system to start from")
    p.add_argument("--no-progress", action="store_true")

    p = step("translate", cmd_translate, "beam-search a subword file, then remove BPE and detokenise")
    p.add_argument("--spec", required=True, help="JSON: beam, length_penalty, batch_size, max_len_a, max_len_b")
    for name in ("--model", "--src-vocab", "--tgt-vocab", "--input", "--output", "--lang"):
        p.add_argument(name, required=True)
    p.add_argument("--no-progress", action="store_true")

    p = step("score", cmd_score, "case-sensitive sacreBLEU of a detokenised hypothesis file")
    for name in ("--hyp", "--ref", "--lang", "--output", "--system", "--test-set"):
        p.add_argument(name, required=True)

    p = step("significance", cmd_significance, "paired bootstrap resampling of a system against its baseline")
    for name in ("--ref", "--baseline", "--system", "--lang", "--output"):
        p.add_argument(name, required=True)
    p.add_argument("--n-samples", type=int, default=1000)
    p.add_argument("--seed", type=int, default=12345)

    p = step("table", cmd_table, "build a paper's table from score files and the paper's numbers")
    p.add_argument("--name", required=True)
    p.add_argument("--spec", required=True, help="JSON: cells (row -> pair -> files) and footer")
    p.add_argument("--output", required=True)
    p.add_argument("--markdown", required=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except PipelineError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0
