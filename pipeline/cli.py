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
    from pipeline.evaluate.bleu import bleu, target_tokenizer, tokenized_bleu
    hyps, refs = read_lines(args.hyp), read_lines(args.ref)
    if args.metric == "multi-bleu":  # zeng2021: the detokenised output tokenised again, against the tokenised reference
        from pipeline.data.tokenize import tokenize_lines
        result = tokenized_bleu(tokenize_lines(hyps, args.lang), refs)
    else:
        result = bleu(hyps, refs, tokenize=target_tokenizer(args.lang))
    result.update({"system": args.system, "test_set": args.test_set, "metric": args.metric})
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


def cmd_length_bins(args) -> None:
    from pipeline.evaluate.bleu import target_tokenizer
    from pipeline.evaluate.length import BINS, bleu_by_length
    hyps, refs = read_lines(args.hyp), read_lines(args.ref)
    by = {"source": args.src, "target": args.tgt}

    def bins(kind: str) -> list[dict]:
        """BLEU per bin of the tokenised source or reference length."""
        return bleu_by_length(read_lines(by[kind]), hyps, refs, tokenize=target_tokenizer(args.lang),
                              bins=BINS[args.bins])

    if args.by == ["source"] and args.bins == "hao2019":
        _write_json(args.output, bins("source"))
    else:
        if "target" in args.by and not args.tgt:
            raise PipelineError("length-bins: --by target needs --tgt (the tokenised reference)")
        _write_json(args.output, {kind: bins(kind) for kind in args.by})


def _test_ids(model_path: str, src: str, tgt: str | None, src_vocab: str, tgt_vocab: str | None, limit: int):
    """The model and the first `limit` test sentences as ids, pairs that do not fit the model left out."""
    from pipeline.checkpoint import load_model
    from pipeline.data.vocab import Vocab
    from pipeline.train import within_length

    model, _ = load_model(Path(model_path))
    src_ids = [Vocab.load(src_vocab).encode(line) for line in read_lines(src)[:limit]]
    if tgt is None:
        return model, src_ids, None
    tgt_ids = [Vocab.load(tgt_vocab).encode(line) for line in read_lines(tgt)[:limit]]
    (src_ids, tgt_ids), dropped = within_length((src_ids, tgt_ids), getattr(model, "max_input_len", None))
    if dropped:
        print(f"note: {dropped} test pair(s) longer than the model's positions left out", file=sys.stderr)
    return model, src_ids, tgt_ids


def cmd_attention(args) -> None:
    import torch

    from pipeline.evaluate.attention import attention_statistics
    torch.manual_seed(0)
    model, src_ids, tgt_ids = _test_ids(args.model, args.src, args.tgt, args.src_vocab, args.tgt_vocab, args.sentences)
    _write_json(args.output, attention_statistics(model, src_ids, tgt_ids, bins=args.bins))


def cmd_patterns(args) -> None:
    from pipeline.checkpoint import load_model
    from pipeline.evaluate.attention import pattern_weights
    _write_json(args.output, pattern_weights(load_model(Path(args.model))[0], args.size))


def cmd_speed(args) -> None:
    from pipeline.evaluate.speed import decoding_speed
    model, src_ids, _ = _test_ids(args.model, args.src, None, args.src_vocab, None, args.sentences)
    spec = json.loads(args.spec)
    model.eval()
    rows = decoding_speed(model, src_ids, batch_sizes=spec["batch_sizes"], beams=spec["beams"],
                          repeats=spec["repeats"], max_len_a=spec["max_len_a"], max_len_b=spec["max_len_b"],
                          length_penalty=spec["length_penalty"])
    device = next(model.parameters()).device.type
    _write_json(args.output, {"rows": rows, "sentences": len(src_ids), "device": device})
    for row in rows:
        print(f"batch {row['batch_size']:>4} beam {row['beam']:>3}: {row['tokens_per_s']:.1f} tokens/s")


def cmd_score_generation(args) -> None:
    from pipeline.data.tokenize import tokenize_lines
    from pipeline.evaluate.bleu import bleu
    from pipeline.evaluate.rouge import meteor_unavailable_reason, rouge
    hyps, refs = read_lines(args.hyp), read_lines(args.ref)
    result = rouge(tokenize_lines(hyps, args.lang), tokenize_lines(refs, args.lang))
    sacre = bleu(hyps, refs)
    result.update({"bleu4": sacre["score"], "bleu4_signature": sacre["signature"], "meteor": None,
                   "meteor_reason": meteor_unavailable_reason(), "system": args.system})
    _write_json(args.output, result)
    print(json.dumps({k: v for k, v in result.items() if k.startswith(("rouge", "bleu4"))}))


def cmd_probing_data(args) -> None:
    from pipeline.evaluate.probing import build_text_tasks, fetch_senteval
    if args.source == "senteval":
        summary = fetch_senteval(Path(args.out), Path(args.cache))
    else:
        sentences = [line for path in args.sentences for line in read_lines(path)]
        summary = build_text_tasks(sentences, Path(args.out), seed=args.seed, max_per_task=args.max_per_task)
    print(json.dumps(summary, ensure_ascii=False))


def cmd_probe(args) -> None:
    from pipeline.checkpoint import load_model
    from pipeline.data.subword import codes_for, load_bpe
    from pipeline.data.tokenize import tokenize_lines
    from pipeline.data.vocab import Vocab
    from pipeline.evaluate.probing import run_probing

    model, _ = load_model(Path(args.model))
    bpe, vocab = load_bpe(codes_for(Path(args.codes_dir), "src")), Vocab.load(args.src_vocab)

    def encode_lines(lines: list[str]) -> list[list[int]]:
        """The model's own preprocessing: tokenise, BPE, vocabulary ids."""
        return [vocab.encode(bpe.process_line(line)) for line in tokenize_lines(lines, args.lang)]

    tasks = {path.stem: path for path in sorted(Path(args.tasks_dir).glob("*.txt"))}
    results = run_probing(model, encode_lines, tasks, **json.loads(args.settings))
    _write_json(args.output, results)
    print(json.dumps({task: round(r["test"], 2) for task, r in results.items()}))


def _cell(files: dict) -> dict:
    """One cell of a hao2019 table from its files: BLEU, parameters, speed, significance, probing accuracies."""
    model = _read_json(files["model"])
    cell = {"bleu": _read_json(files["score"])["score"], "params": model["n_params"]}
    if model.get("steps_per_s") is not None:
        cell["steps_per_s"] = model["steps_per_s"]
    if files.get("significance"):
        cell["p_value"] = _read_json(files["significance"])["p_value"]
    if files.get("baseline_model"):
        cell["baseline_params"] = _read_json(files["baseline_model"])["n_params"]
    if files.get("probing"):
        cell["probing"] = {task: result["test"] for task, result in _read_json(files["probing"]).items()}
    return cell


def _zeng2021_cell(files: dict, pair: str) -> dict:
    """One cell of a zeng2021 table or figure: both BLEUs, a task's generation metrics, or one analysis."""
    from pipeline.report.zeng2021 import TABLE4
    if "multi_bleu" in files:
        cell = {"bleu": _read_json(files["multi_bleu"])["score"], "sacrebleu": _read_json(files["score"])["score"],
                "params": _read_json(files["model"])["n_params"]}
        if files.get("significance"):
            cell["p_value"] = _read_json(files["significance"])["p_value"]
        return cell
    if "generation" in files:
        scores = _read_json(files["generation"])
        return {metric: scores[metric] for metric in TABLE4[pair].pairs}
    if "speed" in files:
        return {"speed": _read_json(files["speed"])["rows"]}
    for analysis in ("attention", "patterns", "length"):
        if analysis in files:
            return {analysis: _read_json(files[analysis])}
    raise PipelineError(f"zeng2021 cell {pair}: no analysis among its files ({', '.join(files)})")


def cmd_table(args) -> None:
    from pipeline.report.layouts import build
    from pipeline.report.table import write_table
    spec = json.loads(args.spec)
    cells, footer = spec["cells"], spec["footer"]
    all_files = [files for by_pair in cells.values() for files in by_pair.values()]
    footer["bleu_signature"] = {pair: _read_json(files["score"])["signature"]
                                for by_pair in cells.values() for pair, files in by_pair.items()}
    runs = [_read_json(files["model"]) for files in all_files]
    footer["device"] = ", ".join(sorted({f"{run['device']} x {run['world_size']} process(es)" for run in runs}))
    if args.name.startswith("zeng2021-"):
        ours = {row: {pair: _zeng2021_cell(files, pair) for pair, files in by_pair.items()}
                for row, by_pair in cells.items()}
        signatures = {_read_json(files["multi_bleu"])["signature"] for files in all_files if "multi_bleu" in files}
        if signatures:
            footer["tok_signature"] = "; ".join(sorted(signatures))
        reasons = {_read_json(files["generation"])["meteor_reason"] for files in all_files if "generation" in files}
        if reasons:
            footer["na_reasons"] = {"meteor": "; ".join(sorted(reasons))}
    elif any("length" in files for files in all_files):
        ours = {row: _read_json(files["length"]) for row, by_pair in cells.items() for files in by_pair.values()}
    else:
        ours = {row: {pair: _cell(files) for pair, files in by_pair.items()} for row, by_pair in cells.items()}
    table, figure = build(args.name, ours, footer)
    if args.figure:
        from pipeline.report.figures import save_figure
        if figure is None:
            raise PipelineError(f"table '{args.name}' is a table, not a figure; use --markdown")
        write_table(table, args.output)
        save_figure(figure, Path(args.figure))
    else:
        write_table(table, args.output, args.markdown)
        print(table.to_markdown())


def cmd_describe(args) -> None:
    import torch

    from pipeline.config import load_params
    from pipeline.models.registry import build_model, count_parameters

    params = load_params(args.params, scale=args.scale)
    if args.experiment not in params.experiments:
        raise PipelineError(f"unknown experiment '{args.experiment}'; defined: {', '.join(params.experiments)}")
    exp = params.experiments[args.experiment]
    corpus = params.corpora[exp.corpus]
    vocab = args.vocab or corpus.bpe_merges  # our approximation when no vocabulary is built yet
    arch, options = params.model_options(exp.name)
    with torch.device("meta"):  # shapes only: paper-size models cost no memory
        model = build_model(arch, options, vocab, vocab)
    total = count_parameters(model)
    line = f"{exp.name} ({params.scale}): {arch} {options}\n  parameters: {total:,} with {vocab:,}-token vocabularies"
    if exp.init:
        base_arch, base_options = params.model_options(exp.init)
        with torch.device("meta"):
            base = count_parameters(build_model(base_arch, base_options, vocab, vocab))
        line += f"\n  added over {exp.init}: {total - base:,}"
    print(line)


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

    p = step("score", cmd_score, "case-sensitive BLEU of a detokenised hypothesis file")
    for name in ("--hyp", "--ref", "--lang", "--output", "--system", "--test-set"):
        p.add_argument(name, required=True)
    p.add_argument("--metric", choices=("sacrebleu", "multi-bleu"), default="sacrebleu",
                   help="sacrebleu: against the raw reference; multi-bleu: the hypothesis re-tokenised, against "
                        "the tokenised reference (zeng2021's tokenised BLEU)")

    p = step("score-generation", cmd_score_generation, "ROUGE-1/2/L, BLEU-4 and METEOR (n/a) of a generation task")
    for name in ("--hyp", "--ref", "--lang", "--output", "--system"):
        p.add_argument(name, required=True)

    p = step("attention", cmd_attention, "self-attention entropy, histograms and JS divergence on the test set")
    for name in ("--model", "--src", "--tgt", "--src-vocab", "--tgt-vocab", "--output"):
        p.add_argument(name, required=True)
    p.add_argument("--sentences", type=int, default=400, help="the first N test sentences")
    p.add_argument("--bins", type=int, default=20)

    p = step("patterns", cmd_patterns, "the learnt (input-independent) attention weights of a RAN / Syn-R model")
    p.add_argument("--model", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--size", type=int, default=80)

    p = step("speed", cmd_speed, "decoding speed (target tokens/s) by batch size and beam, median of repeats")
    for name in ("--model", "--src", "--src-vocab", "--output", "--spec"):
        p.add_argument(name, required=True)
    p.add_argument("--sentences", type=int, default=200, help="the first N test sentences")

    p = step("significance", cmd_significance, "paired bootstrap resampling of a system against its baseline")
    for name in ("--ref", "--baseline", "--system", "--lang", "--output"):
        p.add_argument(name, required=True)
    p.add_argument("--n-samples", type=int, default=1000)
    p.add_argument("--seed", type=int, default=12345)

    p = step("length-bins", cmd_length_bins, "BLEU by source (and target) length bins (a paper's bins)")
    for name in ("--src", "--hyp", "--ref", "--lang", "--output"):
        p.add_argument(name, required=True)
    p.add_argument("--tgt", help="the tokenised reference, for --by target")
    p.add_argument("--by", nargs="+", choices=("source", "target"), default=["source"])
    p.add_argument("--bins", choices=("hao2019", "zeng2021"), default="hao2019")

    p = step("probing-data", cmd_probing_data, "probing tasks: built from text (tiny) or SentEval's files (paper)")
    p.add_argument("--source", choices=("text", "senteval"), required=True)
    p.add_argument("--sentences", nargs="+", default=[])
    p.add_argument("--out", required=True)
    p.add_argument("--cache", required=True)
    p.add_argument("--max-per-task", type=int, default=6000)
    p.add_argument("--seed", type=int, default=1)

    p = step("probe", cmd_probe, "probing classifiers on a frozen encoder's sentence means")
    for name in ("--model", "--tasks-dir", "--codes-dir", "--src-vocab", "--lang", "--output"):
        p.add_argument(name, required=True)
    p.add_argument("--settings", default="{}", help="JSON: seed, epochs, hidden")

    p = step("table", cmd_table, "build a paper's table or figure from score files and the paper's numbers")
    p.add_argument("--name", required=True)
    p.add_argument("--spec", required=True, help="JSON: cells (row -> pair -> files) and footer")
    p.add_argument("--output", required=True)
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--markdown", help="the rendered table (.md)")
    target.add_argument("--figure", help="the figure (.png)")

    p = step("describe", cmd_describe, "an experiment's architecture and parameter count at a scale")
    p.add_argument("experiment")
    p.add_argument("--params", default="params.yaml")
    p.add_argument("--scale", choices=("tiny", "paper"))
    p.add_argument("--vocab", type=int, default=None, help="vocabulary size per side (default: the BPE merges)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except PipelineError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0
