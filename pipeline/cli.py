"""`python -m pipeline <step> ...`: the thin commands every Snakemake rule calls.

This is the only module that knows about files and the params files; each step reads its inputs, calls one
package function and writes its outputs atomically. No step knows any paper: what differs between papers
comes in as arguments (a spec, settings) or from the paper's own registered modules.
"""
from __future__ import annotations

import argparse
import json
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
    print(f"{args.params} + {len(params.files)} paper file(s): OK (scale {params.scale}; "
          f"{len(params.corpora)} corpora, "
          f"{len(params.models)} models, {len(params.systems)} systems, {len(params.tables)} tables and figures)")


def cmd_targets(args) -> None:
    from pipeline.config import load_params
    for table in load_params(args.params).tables.values():
        if args.paper is None or table.paper == args.paper:
            print(table.target)


def cmd_dvc_yaml(args) -> None:
    from pipeline.config import load_params
    from pipeline.dvcgen import dvc_yaml
    text = dvc_yaml(load_params(args.params))
    if args.check:
        current = Path(args.output).read_text(encoding="utf-8") if Path(args.output).exists() else ""
        if current != text:
            raise PipelineError(f"{args.output} is out of date with the params files; regenerate it with "
                                f"`python -m pipeline dvc-yaml`")
        print(f"{args.output}: up to date")
        return
    with atomic_open(args.output) as handle:
        handle.write(text)


def cmd_compare(args) -> None:
    from pipeline.report.compare import compare_tables
    same, lines = compare_tables(Path(args.committed), Path(args.rebuilt))
    print("\n".join(lines))
    if not same and args.strict:
        raise PipelineError(f"{args.rebuilt} differs from {args.committed}")


# ------------------------------------------------------------------------------------------------ data
def cmd_fetch(args) -> None:
    from pipeline.data.registry import fetch_corpus
    sizes = {"valid_size": args.valid_size, "test_size": args.test_size}
    card = fetch_corpus(args.source, Path(args.out), Path(args.cache), manual=json.loads(args.manual),
                        seed=args.seed, sizes=sizes, langs=(args.src, args.tgt), test_sets=tuple(args.test_sets))
    print(json.dumps({k: card[k] for k in ("counts",) if k in card}, ensure_ascii=False))


def cmd_tokenize(args) -> None:
    if args.pretokenized:  # e.g. the synthetic toy corpora: validate and keep as they are
        write_lines(args.output, read_lines(args.input))
        return
    from pipeline.data.tokenize import tokenize_file
    tokenize_file(Path(args.input), Path(args.output), args.lang)


def cmd_learn_truecaser(args) -> None:
    from pipeline.data.truecase import learn_truecaser
    learn_truecaser(read_lines(args.input), Path(args.model))


def cmd_truecase(args) -> None:
    from pipeline.data.truecase import load_truecaser, truecase_lines
    write_lines(args.output, truecase_lines(read_lines(args.input), load_truecaser(Path(args.model))))


def cmd_clean(args) -> None:
    from pipeline.data.clean import clean_parallel
    report = clean_parallel(args.src_in, args.tgt_in, args.src_out, args.tgt_out,
                            max_len=args.max_len, max_ratio=args.max_ratio)
    _write_json(args.report, report)
    print(json.dumps(report))


def cmd_learn_bpe(args) -> None:
    from pipeline.data.subword import learn_bpe
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
    learn_bpe({lang: inputs[lang] for lang in sides}, Path(args.codes_dir), args.merges, args.joint)


def cmd_apply_bpe(args) -> None:
    from pipeline.data.subword import apply_bpe, codes_for, copy_unsegmented
    if args.copy:  # a side the corpus does not segment (its bpe_sides): the words as they are
        copy_unsegmented(Path(args.codes_dir), args.side, Path(args.input), Path(args.output))
        return
    apply_bpe(codes_for(Path(args.codes_dir), args.side), Path(args.input), Path(args.output))


def cmd_vocab(args) -> None:
    from pipeline.data.vocab import Vocab
    if args.vocab_size < 0:
        raise PipelineError(f"vocab: --vocab-size {args.vocab_size}; expected an integer >= 0 (0: every type)")
    lines = [line for path in args.inputs for line in read_lines(path)]
    Vocab.build(lines, max_size=args.vocab_size or None).save(args.output)


# ------------------------------------------------------------------------------------------- training
def _encode_parallel(src_path, tgt_path, src_vocab, tgt_vocab):
    src, tgt = read_parallel(src_path, tgt_path)
    return [src_vocab.encode(s) for s in src], [tgt_vocab.encode(t) for t in tgt]


def cmd_train(args) -> None:
    import torch

    from pipeline.checkpoint import load_model
    from pipeline.data.vocab import Vocab
    from pipeline.models.registry import build_model
    from pipeline.recipe import Recipe
    from pipeline.train import fit

    spec = json.loads(args.spec)
    torch.manual_seed(spec["seed"])
    src_vocab, tgt_vocab = Vocab.load(args.src_vocab), Vocab.load(args.tgt_vocab)
    train = _encode_parallel(args.train_src, args.train_tgt, src_vocab, tgt_vocab)
    valid = _encode_parallel(args.valid_src, args.valid_tgt, src_vocab, tgt_vocab)
    model = build_model(spec["model"], len(src_vocab), len(tgt_vocab))
    init_state = load_model(Path(args.init))[0].state_dict() if args.init else None
    recipe = Recipe.from_dict({**spec["recipe"], "seed": spec["seed"]}, where=f"recipe of {spec['experiment']}")
    meta = {"experiment": spec["experiment"], "model": spec["model"], "init": args.init,
            "src_vocab_size": len(src_vocab), "tgt_vocab_size": len(tgt_vocab)}
    summary = fit(model, train, valid, recipe, run_dir=Path(args.run_dir), out_dir=Path(args.out_dir),
                  curves_dir=Path(args.curves_dir), meta=meta, init_state=init_state, progress=not args.no_progress)
    print(json.dumps({k: summary[k] for k in ("steps", "epochs", "final_valid_nll", "kept") if k in summary}))


def _load_systems(paths: list[str]):
    """One model, or an ensemble of several averaging their log-probabilities, and the precision they were trained
    at (float32 if the members differ)."""
    from pipeline.checkpoint import load_model, trained_precision
    loaded = [load_model(Path(path)) for path in paths]
    precisions = {trained_precision(info) for _, info in loaded}
    precision = precisions.pop() if len(precisions) == 1 else "float32"
    if len(loaded) == 1:
        return loaded[0][0], precision
    from pipeline.ensemble import Ensemble
    return Ensemble([model for model, _ in loaded]), precision


def cmd_translate(args) -> None:
    from pipeline.data.subword import remove_bpe
    from pipeline.data.tokenize import detokenize_lines
    from pipeline.data.vocab import Vocab
    from pipeline.fileio import write_nbest
    from pipeline.translate import translate_nbest

    spec = json.loads(args.spec)
    model, precision = _load_systems(args.model)
    src_vocab, tgt_vocab = Vocab.load(args.src_vocab), Vocab.load(args.tgt_vocab)
    started = time.time()
    nbest = spec.get("nbest", 1)
    out = translate_nbest(model, src_vocab, tgt_vocab, read_lines(args.input), nbest=nbest, beam=spec["beam"],
                          length=spec.get("length", "penalty"), alpha=spec["length_penalty"],
                          batch_size=spec["batch_size"], max_len_a=spec["max_len_a"], max_len_b=spec["max_len_b"],
                          progress=not args.no_progress, precision=precision)

    def post(line: str) -> str:
        words = remove_bpe(line)
        if args.detruecase:  # truecased corpora: the first word capitalised again, before detokenising
            from pipeline.data.truecase import detruecase_lines
            words = detruecase_lines([words])[0]
        return detokenize_lines([words], args.lang)[0]

    write_lines(args.output, [post(hyps[0][1]) for hyps in out])
    if nbest > 1:
        write_nbest(Path(args.output).with_suffix(".nbest"), [[(score, post(text)) for score, text in hyps]
                                                               for hyps in out])
    print(f"translated {len(out)} sentences in {time.time() - started:.1f}s", file=sys.stderr)


# ------------------------------------------------------------------------------------------ evaluation
def references(ref_dir: str, test_set: str, lang: str) -> list[list[str]]:
    """Every reference stream of a test set: <test_set>.<lang>, then <test_set>.<lang>.1, .2, ... if present."""
    first = Path(ref_dir) / f"{test_set}.{lang}"
    streams = [first]
    k = 1
    while (Path(ref_dir) / f"{test_set}.{lang}.{k}").exists():
        streams.append(Path(ref_dir) / f"{test_set}.{lang}.{k}")
        k += 1
    return [read_lines(path) for path in streams]


def cmd_score(args) -> None:
    from pipeline.evaluate.metric_text import metric_lines, segmenter_signature
    from pipeline.evaluate.metrics import get_metric
    metric = get_metric(args.metric)
    hyps, refs = read_lines(args.hyp), references(args.ref_dir, args.test_set, args.lang)
    prepared = [metric_lines(lines, metric, args.lang, args.pretokenized, args.truecaser) for lines in [hyps] + refs]
    result = metric.score(prepared[0], prepared[1:], args.lang)
    signature = result["signature"] + segmenter_signature(metric, args.lang, args.pretokenized)
    result.update({"system": args.system, "test_set": args.test_set, "signature": signature})
    _write_json(args.output, result)
    print(f"{args.system} {args.test_set}: {args.metric} {result['score']:.2f} ({result['signature']})")


# ------------------------------------------------------------------------------------- combined systems
def cmd_external(args) -> None:
    from pipeline.external import read_hyps, read_moses_nbest, supplied_dir
    from pipeline.fileio import write_nbest
    folder = supplied_dir(args.dir, args.key, args.system)
    sentences = len(read_lines(args.source))
    if args.nbest:
        write_nbest(args.output, read_moses_nbest(folder / f"{args.split}.nbest", sentences, args.nbest))
    else:
        write_lines(args.output, read_hyps(folder / f"{args.split}.hyp", sentences))
    print(f"{args.system} {args.split}: {sentences} sentences from {folder}", file=sys.stderr)


def cmd_rerank(args) -> None:
    from pipeline.data.vocab import Vocab
    from pipeline.fileio import read_nbest
    from pipeline.rerank import prepare_candidates, rerank_choice, sentence_log_probs
    settings = json.loads(args.settings)
    src_vocab, tgt_vocab = Vocab.load(args.src_vocab), Vocab.load(args.tgt_vocab)
    sources = [src_vocab.encode(line) for line in read_lines(args.src)]
    lists = read_nbest(args.nbest, sentences=len(sources))
    truecaser = bpe = None
    if args.truecaser:
        from pipeline.data.truecase import load_truecaser
        truecaser = load_truecaser(Path(args.truecaser))
    if args.codes_dir:
        from pipeline.data.subword import codes_for, load_bpe
        bpe = load_bpe(codes_for(Path(args.codes_dir), "tgt"))
    flat = [(i, text) for i, hyps in enumerate(lists) for _, text in hyps]
    prepared = prepare_candidates([text for _, text in flat], args.lang, truecaser, bpe, args.pretokenized)
    model, _ = _load_systems(args.model)
    scores = sentence_log_probs(model, [sources[i] for i, _ in flat], [tgt_vocab.encode(c) for c in prepared],
                                batch_size=args.batch_size)
    chosen, at = [], 0
    for hyps in lists:
        if not hyps:
            raise PipelineError(f"{args.nbest}: sentence {len(chosen)} has no candidates; expected at least one")
        pick = rerank_choice(scores[at:at + len(hyps)], settings["length"])
        chosen.append(hyps[pick][1])
        at += len(hyps)
    write_lines(args.output, chosen)
    moved = sum(hyps[0][1] != text for hyps, text in zip(lists, chosen))
    print(f"reranked {len(lists)} n-best lists ({len(flat)} candidates); {moved} first choices changed",
          file=sys.stderr)


def _pooled(paths: list[str], sentences: int, metric, lang: str, pretokenized: bool, truecaser: str,
            keep: int | None = None) -> tuple[list[list[str]], list[list[list[str]]]]:
    """Per sentence (the first `keep` of `sentences`, all for None) the pooled candidates of every n-best file (file
    order, duplicates kept) and their tokens as the metric reads them."""
    from pipeline.evaluate.metric_text import metric_lines
    from pipeline.fileio import read_nbest
    keep = sentences if keep is None else min(keep, sentences)
    pooled: list[list[str]] = [[] for _ in range(keep)]
    for path in paths:
        for i, hyps in enumerate(read_nbest(path, sentences=sentences)[:keep]):
            if not hyps:
                raise PipelineError(f"{path}: sentence {i} has no candidates; expected at least one")
            pooled[i] += [text for _, text in hyps]
    flat = metric_lines([text for texts in pooled for text in texts], metric, lang, pretokenized, truecaser)
    tokens, at = [], 0
    for texts in pooled:
        tokens.append([line.split() for line in flat[at:at + len(texts)]])
        at += len(texts)
    return pooled, tokens


def cmd_gmbr_tune(args) -> None:
    import numpy as np

    from pipeline.combination import FEATURES, expected_features, tune_theta
    from pipeline.evaluate.metric_text import metric_lines
    from pipeline.evaluate.metrics import get_metric
    settings = json.loads(args.settings)
    metric = get_metric(settings["metric"])
    refs = references(args.ref_dir, args.split, args.lang)
    pooled, tokens = _pooled(args.nbest, len(refs[0]), metric, args.lang, args.pretokenized, args.truecaser,
                             keep=settings["tune_sentences"])
    sentences = len(pooled)
    refs = [r[:sentences] for r in refs]
    refs = [metric_lines(r, metric, args.lang, args.pretokenized, args.truecaser) for r in refs]
    flat_hyps = [" ".join(t) for cands in tokens for t in cands]
    flat_refs = [[r[i] for i, cands in enumerate(tokens) for _ in cands] for r in refs]
    stats, at, candidate_stats = metric.score(flat_hyps, flat_refs, args.lang)["stats"], 0, []
    for cands in tokens:
        candidate_stats.append(np.asarray(stats[at:at + len(cands)]))
        at += len(cands)
    expected = [expected_features(cands) for cands in tokens]
    theta, score = tune_theta(expected, candidate_stats, metric, trials=settings["trials"], seed=settings["seed"])
    first = metric.score_from_stats(np.stack([s[0] for s in candidate_stats]))
    _write_json(args.output, {"theta": dict(zip(FEATURES, map(float, theta))), "metric": settings["metric"],
                              "tune_split": args.split, "sentences": sentences, "tuned_score": score,
                              "first_candidate_score": first, "candidates": sum(map(len, pooled))})
    print(f"GMBR tuned on {sentences} {args.split} sentences: {settings['metric']} {score:.2f} (the first system's "
          f"1-best: {first:.2f}); theta {dict(zip(FEATURES, theta.round(3).tolist()))}")


def cmd_gmbr(args) -> None:
    from pipeline.combination import FEATURES, expected_features, gmbr_choice
    from pipeline.evaluate.metrics import get_metric
    tuned = _read_json(args.theta)
    theta = [tuned["theta"][name] for name in FEATURES]
    sentences = len(read_lines(args.source))
    pooled, tokens = _pooled(args.nbest, sentences, get_metric(tuned["metric"]), args.lang, args.pretokenized,
                             args.truecaser)
    picks = [gmbr_choice(expected_features(cands), theta) for cands in tokens]
    write_lines(args.output, [texts[k] for texts, k in zip(pooled, picks)])
    print(f"GMBR chose among {sum(map(len, pooled))} candidates of {sentences} sentences", file=sys.stderr)


def cmd_length_switch(args) -> None:
    from pipeline.combination import length_heuristic
    lengths = [len(line.split()) for line in read_lines(args.source)]
    short, long = read_lines(args.short), read_lines(args.long)
    out = length_heuristic(lengths, short, long, threshold=args.threshold)
    write_lines(args.output, out)
    print(f"{sum(n < args.threshold for n in lengths)} of {len(lengths)} sentences below {args.threshold} source "
          f"words took {args.short}", file=sys.stderr)


def cmd_scores(args) -> None:
    """One small file per system: test set -> metric -> score (what `dvc metrics show` lists)."""
    summary: dict[str, dict] = {}
    for path in args.inputs:
        result = _read_json(path)
        summary.setdefault(result["test_set"], {})[result["metric"]] = round(result["score"], 4)
    _write_json(args.output, summary)


def cmd_significance(args) -> None:
    from pipeline.evaluate.metrics import get_metric
    from pipeline.evaluate.significance import run_test
    baseline, system = _read_json(args.baseline), _read_json(args.system)
    if baseline["metric"] != system["metric"]:
        raise PipelineError(f"{args.system} is scored by {system['metric']}, {args.baseline} by "
                            f"{baseline['metric']}; expected the same metric")
    settings = json.loads(args.settings)
    result = run_test(settings.pop("test"), get_metric(system["metric"]), baseline["stats"], system["stats"],
                      field=args.field or None, **settings)
    result.update({"system": system.get("system"), "baseline": baseline.get("system"), "metric": system["metric"]})
    _write_json(args.output, result)
    print(f"{result['system']} vs {result['baseline']}: p = {result['p_value']:.4f} (delta {result['delta']:+.2f})")


def cmd_length_bins(args) -> None:
    from pipeline.evaluate.length import bleu_by_length, score_by_length
    settings = json.loads(args.settings)
    bins = [tuple(b) for b in settings["bins"]]
    by = {"source": args.src, "target": args.tgt}
    if settings.get("metric"):  # the score file's per-sentence stats, summed per bin
        from pipeline.evaluate.metrics import get_metric
        scores = _read_json(args.scores) if args.scores else {}
        if scores.get("metric") != settings["metric"]:
            raise PipelineError(f"length-bins: --scores {args.scores or '(none)'} holds metric "
                                f"{scores.get('metric')!r}; expected the score file of {settings['metric']!r}")
        metric = get_metric(settings["metric"])
        result = {kind: score_by_length(read_lines(by[kind]), scores["stats"], metric, bins=bins)
                  for kind in settings["by"]}
    else:  # sacreBLEU against the first reference
        from pipeline.evaluate.bleu import target_tokenizer
        hyps, refs = read_lines(args.hyp), read_lines(args.ref)
        result = {kind: bleu_by_length(read_lines(by[kind]), hyps, refs, tokenize=target_tokenizer(args.lang),
                                       bins=bins) for kind in settings["by"]}
    _write_json(args.output, result)


def _test_ids(model_path: str, src: str, tgt: str | None, src_vocab: str, tgt_vocab: str | None, limit: int):
    """The model, its record (load_model's info) and the first `limit` test sentences as ids, pairs that do not fit
    the model left out."""
    from pipeline.checkpoint import load_model
    from pipeline.data.vocab import Vocab
    from pipeline.train import within_length

    model, info = load_model(Path(model_path))
    src_ids = [Vocab.load(src_vocab).encode(line) for line in read_lines(src)[:limit]]
    if tgt is None:
        return model, info, src_ids, None
    tgt_ids = [Vocab.load(tgt_vocab).encode(line) for line in read_lines(tgt)[:limit]]
    (src_ids, tgt_ids), dropped = within_length((src_ids, tgt_ids), model.max_input_len)
    if dropped:
        print(f"note: {dropped} test pair(s) longer than the model's positions left out", file=sys.stderr)
    return model, info, src_ids, tgt_ids


def cmd_attention(args) -> None:
    import torch

    from pipeline.evaluate.attention import attention_statistics
    torch.manual_seed(0)
    model, _, src_ids, tgt_ids = _test_ids(args.model, args.src, args.tgt, args.src_vocab, args.tgt_vocab,
                                           args.sentences)
    _write_json(args.output, attention_statistics(model, src_ids, tgt_ids, bins=args.bins))


def cmd_previous_words(args) -> None:
    import torch

    from pipeline.evaluate.previous_words import previous_word_analysis
    torch.manual_seed(0)
    settings = json.loads(args.settings)
    model, _, src_ids, tgt_ids = _test_ids(args.model, args.src, args.tgt, args.src_vocab, args.tgt_vocab,
                                           settings["sentences"])
    tokens = [line.split() for line in read_lines(args.tgt)[:settings["sentences"]]]
    if len(tokens) != len(tgt_ids):
        raise PipelineError(f"previous-words: {len(tokens) - len(tgt_ids)} of the first {len(tokens)} pairs of "
                            f"{args.tgt} do not fit the model's positions; expected a model without a length limit")
    parses = read_lines(settings["parses"])[:len(tgt_ids)] if settings["parses"] else None
    first = settings["sentence"] - 1
    trees = list(range(first, min(first + settings["trees"], len(tgt_ids))))
    _write_json(args.output, previous_word_analysis(model, src_ids, tgt_ids, tokens, first, parses,
                                                    settings["max_distance"], trees=trees))


def cmd_perplexity(args) -> None:
    from pipeline.evaluate.perplexity import perplexity
    model, _, src_ids, tgt_ids = _test_ids(args.model, args.src, args.tgt, args.src_vocab, args.tgt_vocab,
                                           args.sentences)
    _write_json(args.output, perplexity(model, src_ids, tgt_ids, batch_size=args.batch_size))


def cmd_alignment(args) -> None:
    from pipeline.evaluate.alignment import alignment_analysis, read_gold
    from pipeline.evaluate.source_attention import source_attention
    settings = json.loads(args.settings)
    model, _, src_ids, tgt_ids = _test_ids(args.model, args.src, args.tgt, args.src_vocab, args.tgt_vocab,
                                           settings["sentences"])
    src_lines, tgt_lines = read_lines(args.src)[:len(src_ids)], read_lines(args.tgt)[:len(tgt_ids)]
    gold = read_gold(read_lines(args.gold)[:settings["sentences"]], args.gold)
    if len(gold) != len(src_ids):
        raise PipelineError(f"{args.gold}: {len(gold)} gold lines for {len(src_ids)} test pairs used; expected one "
                            "per test pair (a model with a length limit may have dropped pairs)")
    matrices = source_attention(model, src_ids, tgt_ids, batch_size=settings["batch_size"])
    _write_json(args.output, alignment_analysis(matrices, src_lines, tgt_lines, gold, shown=settings["shown"],
                                                where=args.gold))


def cmd_curve(args) -> None:
    from pipeline.evaluate.curves import first_epochs, read_curve, steps_per_epoch
    settings = json.loads(args.settings)
    per_epoch = steps_per_epoch(_read_json(args.summary), where=args.summary)
    points = first_epochs(read_curve(args.curve), per_epoch, settings["epochs"])
    _write_json(args.output, {"curve": settings["curve"], "epochs": settings["epochs"], "steps_per_epoch": per_epoch,
                              "points": [[step, value] for step, value in points]})
    print(f"{len(points)} points of {settings['curve']} ({per_epoch:.1f} updates per epoch)")


def cmd_ranking(args) -> None:
    from pipeline.evaluate.ranking import build_sheet, read_sheet, tally, write_key, write_sheet
    hyps = {}
    for item in args.hyp:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise PipelineError(f"--hyp {item!r}: expected <system>=<file of its translations>")
        hyps[name] = read_lines(path)
    rows, key = build_sheet(read_lines(args.src), read_lines(args.ref), hyps, args.sentences, args.seed)
    write_sheet(rows, args.sheet)
    write_key(key, args.key)
    systems = list(hyps)
    pairs = [(a, b) for i, a in enumerate(systems) for b in systems[i + 1:]]
    filled = [(read_sheet(path, key), key) for path in args.filled]
    _write_json(args.output, {"sheet": args.sheet, "key": args.key, "items": len(rows), "systems": systems,
                              "filled": list(args.filled), "tally": tally(filled, pairs) if filled else None})


def cmd_patterns(args) -> None:
    from pipeline.checkpoint import load_model
    from pipeline.evaluate.attention import pattern_weights
    _write_json(args.output, pattern_weights(load_model(Path(args.model))[0], args.size))


def cmd_speed(args) -> None:
    from pipeline.checkpoint import trained_precision
    from pipeline.evaluate.speed import decoding_speed
    model, info, src_ids, _ = _test_ids(args.model, args.src, None, args.src_vocab, None, args.sentences)
    precision = trained_precision(info)
    spec = json.loads(args.spec)
    model.eval()
    rows = decoding_speed(model, src_ids, batch_sizes=spec["batch_sizes"], beams=spec["beams"],
                          repeats=spec["repeats"], max_len_a=spec["max_len_a"], max_len_b=spec["max_len_b"],
                          length=spec.get("length", "penalty"), alpha=spec["length_penalty"], precision=precision)
    device = next(model.parameters()).device.type
    _write_json(args.output, {"rows": rows, "sentences": len(src_ids), "device": f"{device} ({precision})"})
    for row in rows:
        print(f"batch {row['batch_size']:>4} beam {row['beam']:>3}: {row['tokens_per_s']:.1f} tokens/s")


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


def cmd_table(args) -> None:
    from pipeline.report.cells import read_cells
    from pipeline.report.layouts import build
    from pipeline.report.table import write_table
    spec = json.loads(args.spec)
    cells, facts = read_cells(spec)
    _write_json(args.cells, {"cells": cells, "facts": facts})  # what the layout was given: provenance
    table, figure = build(spec["layout"], cells, facts)
    if args.figure:
        from pipeline.report.figures import save_figure
        if figure is None:
            raise PipelineError(f"layout '{spec['layout']}' is a table, not a figure; use --markdown")
        write_table(table, args.output)
        save_figure(figure, Path(args.figure))
    else:
        write_table(table, args.output, args.markdown)
        print(table.to_markdown())


def cmd_report_page(args) -> None:
    from pipeline.report.page import write_page
    write_page(args.tsv, args.rendering, args.name, args.output)


def cmd_describe(args) -> None:
    import torch

    from pipeline.config import load_params
    from pipeline.models.registry import build_model, count_parameters

    params = load_params(args.params, scale=args.scale)
    if args.experiment not in params.experiments:
        raise PipelineError(f"unknown experiment '{args.experiment}'; defined: {', '.join(params.experiments)}")
    exp = params.experiments[args.experiment]
    corpus = params.corpora[exp.corpus]  # our approximation when no vocabulary is built yet: its cap, else the merges
    vocab = args.vocab or corpus.vocab_size or corpus.bpe_merges

    def count(name: str) -> int:
        with torch.device("meta"):  # shapes only: paper-size models cost no memory
            return count_parameters(build_model(params.model_spec(name), vocab, vocab))

    total = count(exp.name)
    line = (f"{exp.name} ({params.scale}): {params.model_spec(exp.name)}\n"
            f"  parameters: {total:,} with {vocab:,}-token vocabularies")
    if exp.init:
        line += f"\n  added over {exp.init}: {total - count(exp.init):,}"
    print(line)


# ---------------------------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pipeline", description=__doc__.splitlines()[0])
    steps = parser.add_subparsers(dest="step", required=True, metavar="STEP")

    def step(name, func, help_text):
        sub = steps.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(func=func)
        return sub

    p = step("check-config", cmd_check_config, "validate params.yaml and the papers' params files")
    p.add_argument("--params", default="params.yaml")
    p.add_argument("--scale", choices=("tiny", "paper"))

    p = step("targets", cmd_targets, "print the table and figure targets the params files define")
    p.add_argument("--params", default="params.yaml")
    p.add_argument("--paper", help="only this paper's")

    p = step("dvc-yaml", cmd_dvc_yaml, "write dvc.yaml (one stage per corpus, system, table and figure)")
    p.add_argument("--params", default="params.yaml")
    p.add_argument("--output", default="dvc.yaml")
    p.add_argument("--check", action="store_true", help="only check that the file is up to date")

    p = step("compare", cmd_compare, "compare a rebuilt table with the committed one, cell by cell")
    p.add_argument("--committed", required=True)
    p.add_argument("--rebuilt", required=True)
    p.add_argument("--strict", action="store_true", help="exit non-zero when they differ")

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
    p.add_argument("--test-sets", nargs="+", default=["test"],
                   help="the corpus's test sets, 'test' first; those the source does not build are cut from 'test'")

    p = step("tokenize", cmd_tokenize, "Moses tokenization / jieba segmentation of one file")
    p.add_argument("--lang", required=True)
    p.add_argument("--pretokenized", action="store_true", help="copy (validated) instead of tokenising")
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)

    p = step("learn-truecaser", cmd_learn_truecaser, "learn a Moses truecasing model from a tokenised file")
    p.add_argument("--input", required=True)
    p.add_argument("--model", required=True)

    p = step("truecase", cmd_truecase, "truecase a tokenised file with a model of learn-truecaser")
    for name in ("--model", "--input", "--output"):
        p.add_argument(name, required=True)

    p = step("clean", cmd_clean, "drop empty, overlong and badly proportioned training pairs")
    for name in ("--src-in", "--tgt-in", "--src-out", "--tgt-out", "--report"):
        p.add_argument(name, required=True)
    p.add_argument("--max-len", type=int, required=True)
    p.add_argument("--max-ratio", type=float, default=None)

    p = step("learn-bpe", cmd_learn_bpe, "learn BPE codes (joint or one per language)")
    p.add_argument("--langs", nargs="+", required=True)
    p.add_argument("--inputs", nargs="+", required=True, help="one training file per --langs entry")
    p.add_argument("--codes-dir", required=True)
    p.add_argument("--merges", type=int, required=True)
    p.add_argument("--joint", action="store_true")
    p.add_argument("--sides", nargs="*", default=None,
                   help="learn codes for these languages only (default: all; none given: no codes at all); "
                        "apply-bpe --copy passes the others through")

    p = step("apply-bpe", cmd_apply_bpe, "segment a tokenised file into subwords")
    p.add_argument("--codes-dir", required=True)
    p.add_argument("--side", required=True, help="the language key the codes were learnt under")
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--copy", action="store_true", help="a side without BPE: copy the input unchanged")

    p = step("vocab", cmd_vocab, "build a vocabulary from subword files (several files: a joint vocabulary)")
    p.add_argument("--inputs", nargs="+", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--vocab-size", type=int, default=0,
                   help="keep the N most frequent types, ties alphabetical (the rest map to <unk>); 0: every type")

    p = step("train", cmd_train, "train one system (resumes from its run directory)")
    p.add_argument("--spec", required=True, help="JSON: experiment, model, recipe, seed, init")
    for name in ("--train-src", "--train-tgt", "--valid-src", "--valid-tgt", "--src-vocab", "--tgt-vocab",
                 "--run-dir", "--out-dir", "--curves-dir"):
        p.add_argument(name, required=True)
    p.add_argument("--init", default=None, help="model.pt of the system to start from")
    p.add_argument("--no-progress", action="store_true")

    p = step("translate", cmd_translate, "beam-search a subword file, then remove BPE and detokenise")
    p.add_argument("--spec", required=True, help="JSON: beam, length, length_penalty, batch_size, max_len_a, "
                                                 "max_len_b, nbest")
    p.add_argument("--model", action="append", required=True, help="model.pt; several: an ensemble")
    for name in ("--src-vocab", "--tgt-vocab", "--input", "--output", "--lang"):
        p.add_argument(name, required=True)
    p.add_argument("--detruecase", action="store_true", help="the corpus is truecased: undo it before detokenising")
    p.add_argument("--no-progress", action="store_true")

    p = step("score", cmd_score, "score a detokenised hypothesis file with a registered metric")
    p.add_argument("--metric", required=True, help="e.g. sacrebleu, sacrebleu-ci, multi-bleu, rouge")
    p.add_argument("--ref-dir", required=True, help="the corpus's raw directory: <test-set>.<lang>[.1, .2, ...]")
    for name in ("--hyp", "--test-set", "--lang", "--output", "--system"):
        p.add_argument(name, required=True)
    p.add_argument("--pretokenized", action="store_true", help="the corpus is already tokenised (toy corpora)")
    p.add_argument("--truecaser", default="", help="tokenised metrics: truecase hypotheses and references with "
                                                   "this model (a truecased corpus's target side)")

    p = step("external", cmd_external, "bring a supplied system's translations or n-best lists into the pipeline")
    for name in ("--key", "--system", "--split", "--source", "--output"):
        p.add_argument(name, required=True)
    p.add_argument("--dir", default="", help="the directory paths.manual.<key> names ('' when unset)")
    p.add_argument("--nbest", type=int, default=0, help="write the first N of each n-best list (0: the 1-best file)")

    p = step("rerank", cmd_rerank, "rerank n-best lists by a model's (or an ensemble's) log-probability")
    p.add_argument("--model", action="append", required=True, help="model.pt; several: an ensemble")
    for name in ("--nbest", "--src", "--src-vocab", "--tgt-vocab", "--lang", "--settings", "--output"):
        p.add_argument(name, required=True)
    p.add_argument("--truecaser", default="", help="the target side's truecasing model (truecased corpora)")
    p.add_argument("--codes-dir", default="", help="the corpus's BPE codes (corpora that segment the target side)")
    p.add_argument("--pretokenized", action="store_true", help="the corpus is already tokenised (toy corpora)")
    p.add_argument("--batch-size", type=int, default=50)

    for name, func, help_text in (("gmbr-tune", cmd_gmbr_tune, "tune GMBR's loss weights on development n-best lists"),
                                  ("gmbr", cmd_gmbr, "GMBR system combination of pooled n-best lists")):
        p = step(name, func, help_text)
        p.add_argument("--nbest", nargs="+", required=True, help="one n-best file per system")
        for option in ("--lang", "--output") + (("--ref-dir", "--split", "--settings") if name == "gmbr-tune"
                                                 else ("--theta", "--source")):
            p.add_argument(option, required=True)
        p.add_argument("--pretokenized", action="store_true", help="the corpus is already tokenised (toy corpora)")
        p.add_argument("--truecaser", default="", help="tokenised metrics: the target side's truecasing model")

    p = step("length-switch", cmd_length_switch, "per sentence one system's output below a source length, else "
             "another's")
    for name in ("--source", "--short", "--long", "--output"):
        p.add_argument(name, required=True)
    p.add_argument("--threshold", type=int, required=True, help="source words (whitespace tokens)")

    p = step("scores", cmd_scores, "collect a system's score files into one summary (DVC metrics)")
    p.add_argument("--inputs", nargs="+", required=True)
    p.add_argument("--output", required=True)

    p = step("significance", cmd_significance, "a paired significance test of a system against its baseline")
    for name in ("--baseline", "--system", "--output"):
        p.add_argument(name, required=True, help="score JSON (with per-sentence statistics)" if name != "--output"
                       else None)
    p.add_argument("--settings", required=True, help="JSON: test, n_samples, seed")
    p.add_argument("--field", default="", help="the metric's field tested (default: its score)")

    p = step("length-bins", cmd_length_bins, "BLEU by source and/or target length bins")
    for name in ("--src", "--tgt", "--hyp", "--ref", "--lang", "--output", "--settings"):
        p.add_argument(name, required=True)
    p.add_argument("--scores", default="", help="the score file of the settings' metric (its per-sentence stats)")

    p = step("attention", cmd_attention, "self-attention entropy, histograms and JS divergence on the test set")
    for name in ("--model", "--src", "--tgt", "--src-vocab", "--tgt-vocab", "--output"):
        p.add_argument(name, required=True)
    p.add_argument("--sentences", type=int, default=400, help="the first N test sentences")
    p.add_argument("--bins", type=int, default=20)

    p = step("previous-words", cmd_previous_words, "attention over the previous target words: relative positions, "
             "one sentence's matrix, binary trees (Algorithm 1) and their bracketing scores against gold parses")
    for name in ("--model", "--src", "--tgt", "--src-vocab", "--tgt-vocab", "--output", "--settings"):
        p.add_argument(name, required=True)

    p = step("perplexity", cmd_perplexity, "perplexity of the test references (teacher-forced)")
    for name in ("--model", "--src", "--tgt", "--src-vocab", "--tgt-vocab", "--output"):
        p.add_argument(name, required=True)
    p.add_argument("--sentences", type=int, default=1_000_000, help="the first N test sentences")
    p.add_argument("--batch-size", type=int, default=50)

    p = step("alignment", cmd_alignment, "alignment error rate of the attention's argmax links against gold "
             "alignments (teacher-forced on the references), and the word attention of chosen sentences")
    for name in ("--model", "--src", "--tgt", "--src-vocab", "--tgt-vocab", "--gold", "--output", "--settings"):
        p.add_argument(name, required=True)

    p = step("curve", cmd_curve, "a run's learning curve over its first epochs")
    for name in ("--curve", "--summary", "--settings", "--output"):
        p.add_argument(name, required=True)

    p = step("ranking", cmd_ranking, "blind human-ranking sheets of several systems' translations (the key kept "
             "apart), and the pairwise tally of filled-in sheets")
    p.add_argument("--hyp", action="append", required=True, help="<system>=<translations>, one per system")
    for name in ("--src", "--ref", "--sheet", "--key", "--output"):
        p.add_argument(name, required=True)
    p.add_argument("--sentences", type=int, default=50)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--filled", nargs="*", default=[], help="filled-in sheets to tally (pooled)")

    p = step("patterns", cmd_patterns, "the learnt (input-independent) attention weights of a RAN / Syn-R model")
    p.add_argument("--model", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--size", type=int, default=80)

    p = step("speed", cmd_speed, "decoding speed (target tokens/s) by batch size and beam, median of repeats")
    for name in ("--model", "--src", "--src-vocab", "--output", "--spec"):
        p.add_argument(name, required=True)
    p.add_argument("--sentences", type=int, default=200, help="the first N test sentences")

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
    p.add_argument("--settings", default="{}", help="JSON: seed, epochs, hidden, lr")

    p = step("table", cmd_table, "build a table or figure from its cells' files and the paper's layout")
    p.add_argument("--spec", required=True, help="JSON: layout, values, cells (row -> column -> files), facts")
    p.add_argument("--output", required=True)
    p.add_argument("--cells", required=True, help="where to write the cells and facts the layout was given (JSON)")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--markdown", help="the rendered table (.md)")
    target.add_argument("--figure", help="the figure (.png)")

    p = step("report-page", cmd_report_page, "a table or figure of results/ as one HTML page for Snakemake's report")
    p.add_argument("--tsv", required=True, help="results/<paper>/<output>.tsv")
    p.add_argument("--rendering", required=True, help="its .md (a table) or .png (a figure)")
    p.add_argument("--name", required=True, help="the page's title where the .md gives none (a figure)")
    p.add_argument("--output", required=True)

    p = step("describe", cmd_describe, "an experiment's model and parameter count at a scale")
    p.add_argument("experiment")
    p.add_argument("--params", default="params.yaml")
    p.add_argument("--scale", choices=("tiny", "paper"))
    p.add_argument("--vocab", type=int, default=None,
                   help="vocabulary size per side (default: the corpus's vocab_size, else its BPE merges)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except PipelineError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except FileNotFoundError as err:  # a missing input file: one line naming it, not a traceback
        print(f"error: {err.filename or err}: no such file; expected it as an input of `{args.step}`",
              file=sys.stderr)
        return 2
    return 0
