"""GPU speed of training and beam search, beside a peer on the same GPU, the same batches and the same sources.

    python benchmarks/gpu.py --output gpu.json     # on one GPU: paper-scale models and recipes
    python benchmarks/gpu.py --quick               # tiny scale on the CPU, a few updates: a smoke test

Training: each family's paper-scale model and recipe (FAMILIES, the project's params) on random token pairs whose
lengths follow newstest's (source around 27 subwords, the target's length the source's times a log-normal ratio, as
real pairs correlate), cut into batches by the trainer's own batching; the trainer's whole update
(`Trainer.train_step`: batch to the device, forward, loss, backward, clip, optimizer) timed over --steps updates
after --warmup, --repeats times (the median is reported). Two layouts: "whole", the recipe's global batch on one GPU,
and "rank", the --rank-tokens share one of the recipe's GPUs holds in the paper layout (4,096 tokens for hao2019).
Printed: target tokens/s (EOS included), updates/s, peak GPU memory and the model FLOPs utilisation (MFU):
6·N·T over the GPU's datasheet dense bfloat16 peak (DATASHEET_TFLOPS by name, or --peak-tflops), N the parameters
in matrix products (the output projection counted, embedding lookups not), T target tokens a second; beside it the
share of a bfloat16 GEMM ceiling measured in the same run (8192^3 products).

Speed-ups (pipeline/speedups.py): every measurement names the set it ran with, "default" first; --ablate measures
each family also with none and with compile added, --ablate-each the first family without each default training
speed-up and with each optional one: one run gives each A/B on the same GPU.
--learning N trains the first family N updates with all speed-ups and with none from the same seed and reports both
loss curves (means of 25-update windows).

Search: `pipeline.translate.translate_lines` (encode, length-sorted batches of --batch-size, beam search, decode)
at each family's paper decoding settings on --sentences sources of newstest-like lengths; sentences/s and output
tokens/s. The model as initialised (seeded random weights), each output ended at the length of its reference
(the source's length: max_len_a 1, max_len_b -1), so that sentences/s compare with tables of real systems.

Peer: transformers' MarianMTModel at the sizes of our Transformer-Base and -Big, trained on the same batches (bfloat16
autocast where ours run in it, fused AdamW, label-smoothed cross-entropy summed over target tokens), and its
generate(num_beams=4, min_new_tokens = max_new_tokens = the batch's longest source) on the same sources, same batch
size, after one warm-up batch.

Prints key=value lines; --output also writes them as JSON (after each measurement).
"""
from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# family -> (experiment whose model and recipe are measured, its paper's decoding settings, whether the peer runs
# beside it at the same size)
FAMILIES = {
    "transformer-base": ("ende-base", {"beam": 4, "length": "penalty", "alpha": 0.6}, True),
    "transformer-big": ("ende-big", {"beam": 4, "length": "penalty", "alpha": 0.6}, True),
    "transformer-zeng": ("z-en-de-transf", {"beam": 4, "length": "penalty", "alpha": 0.6}, False),
    "ran-all": ("z-en-de-ran-all", {"beam": 4, "length": "penalty", "alpha": 0.6}, False),
    "dl4mt": ("w-en-de-baseline", {"beam": 5, "length": "normalize"}, False),
    "rnmt": ("rn-en-de-rnmt", {"beam": 10, "length": "normalize"}, False),
    "lstm-residual": ("shu-residual", {"beam": 5, "length": "normalize"}, False),
}
# dense bfloat16 peaks from NVIDIA's datasheets, TFLOP/s, by a part of the device's name (first match wins; the
# SXM parts are named plainly: "NVIDIA H100 80GB HBM3", "NVIDIA H200"); pass --peak-tflops for other GPUs
DATASHEET_TFLOPS = (("H100 PCIe", 756.0), ("H100 NVL", 835.0), ("H100", 989.4), ("H200", 989.4), ("H800", 989.4),
                    ("A100", 312.0), ("A10G", 70.0), ("L40S", 362.0), ("V100", 125.0))
SPARE = 3  # batches beyond the timed ones, for --profile: shapes the process has not met
LENGTH_RATIO_SD = 0.2  # sd of log(target length / source length) of the pairs drawn (our choice; real pairs ~0.15-0.25)


def sentence_lengths(rng: random.Random, n: int) -> list[int]:
    """Lengths around newstest2014's mean of 27 subwords (sd 14), 1-100."""
    return [max(1, min(100, round(rng.gauss(27, 14)))) for _ in range(n)]


def pair_lengths(rng: random.Random, n: int) -> list[tuple[int, int]]:
    """(source, target) lengths: sources as sentence_lengths, each target its source's length times a log-normal
    ratio (sd LENGTH_RATIO_SD), 1-100: correlated as translations are."""
    return [(k, max(1, min(100, round(k * math.exp(rng.gauss(0.0, LENGTH_RATIO_SD))))))
            for k in sentence_lengths(rng, n)]


def random_pairs(vocab_size: int, n: int, seed: int):
    """n pairs of random ids with correlated newstest-like lengths (pipeline.data.token_store.Pairs)."""
    from pipeline.data.token_store import Pairs
    rng = random.Random(seed)
    lengths = pair_lengths(rng, n)
    src = [[rng.randrange(4, vocab_size) for _ in range(k)] for k, _ in lengths]
    tgt = [[rng.randrange(4, vocab_size) for _ in range(k)] for _, k in lengths]
    return Pairs.of((src, tgt))


def peak_tflops(name: str) -> float | None:
    """The datasheet dense bfloat16 peak of a GPU by its name (DATASHEET_TFLOPS), None if unknown."""
    return next((v for part, v in DATASHEET_TFLOPS if part in name), None)


def matmul_parameters(model) -> int:
    """Parameters that enter matrix products (6·N·T's N): all of them but embedding tables used only for lookups
    (a table tied to the output projection is a product's weight and counts, once)."""
    import torch
    output = (model.output_layer if hasattr(model, "output_layer") else model.get_output_embeddings()).weight
    lookups = {id(m.weight) for m in model.modules() if isinstance(m, torch.nn.Embedding)} - {id(output)}
    return sum(p.numel() for p in model.parameters() if id(p) not in lookups)


def gemm_ceiling(device, size: int = 8192, repeats: int = 10) -> float | None:
    """TFLOP/s of a bfloat16 size^3 matrix product on random data, median of `repeats` after warm-up (GPUs)."""
    import torch
    if device.type != "cuda":
        return None
    a, b = (torch.randn(size, size, device=device, dtype=torch.bfloat16) for _ in range(2))
    for _ in range(3):
        a @ b
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        a @ b
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1000)
    return round(2 * size ** 3 / statistics.median(times) / 1e12, 1)


def synchronize(device) -> None:
    import torch
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def peak_mb(device) -> float | None:
    import torch
    return round(torch.cuda.max_memory_allocated(device) / 2**20) if device.type == "cuda" else None


def reset_peak(device) -> None:
    import torch
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def timed_updates(update, batches: list, warmup: int, device) -> tuple[int, float]:
    """(target tokens, seconds) of update(batch) -> tokens over the batches after the first `warmup`; the peak
    memory counts from there."""
    for i, batch in enumerate(batches):
        if i == warmup:
            synchronize(device)
            reset_peak(device)
            start, tokens = time.perf_counter(), 0
        n = update(batch)
        if i >= warmup:
            tokens += n
    synchronize(device)
    return tokens, time.perf_counter() - start


def recipe_of(params, experiment: str, layout: str, args):
    """The experiment's recipe (seed 1); layout "rank": its batch cut to the share of one GPU (--rank-tokens)."""
    from pipeline.recipe import Recipe
    train = {**params.recipes[params.experiments[experiment].recipe].train, "seed": 1}
    if layout == "rank" and train.get("batch_unit", "tokens") == "tokens":
        train["batch_size"] = min(train["batch_size"], args.rank_tokens)
    return Recipe.from_dict(train, where=f"recipe of {experiment}")


def make_trainer(params, experiment: str, recipe, pairs, vocab_size: int, device, work: Path):
    """A Trainer of the experiment's model (seed 1) on `pairs`, as the pipeline builds one."""
    import torch

    from pipeline.models.registry import build_model
    from pipeline.precision import resolve
    from pipeline.train.distributed import Dist
    from pipeline.train.trainer import Trainer
    torch.manual_seed(1)
    spec = params.model_spec(experiment)
    model = build_model(spec, vocab_size, vocab_size)
    meta = {"model": spec, "src_vocab_size": vocab_size, "tgt_vocab_size": vocab_size,
            "precision": resolve(recipe.precision, device)}
    return Trainer(model, pairs, pairs.select([0]), recipe, work / experiment, meta, Dist(), False, {})


def measure_training(params, experiment: str, args, device, work: Path, layout: str = "whole"
                     ) -> tuple[dict, list, object, object]:
    """Our trainer's steady-state speed on the recipe's batches in `layout` with the speed-ups now on;
    (figures, (timed batches, spare ones), the pairs, the trainer)."""
    from pipeline.train.builders import build_batches

    exp = params.experiments[experiment]
    corpus = params.corpora[exp.corpus]
    vocab_size = corpus.vocab_size or corpus.bpe_merges
    recipe = recipe_of(params, experiment, layout, args)
    needed = args.warmup + args.steps
    per_batch = recipe.batch_size // 30 if recipe.batch_unit == "tokens" else recipe.batch_size
    pairs = random_pairs(vocab_size, max(64, int(per_batch * needed * 1.6)), seed=1)
    batches = list(build_batches(pairs.src_lengths, pairs.tgt_lengths, recipe).epoch(1, 0))[:needed + SPARE]
    trainer = make_trainer(params, experiment, recipe, pairs, vocab_size, device, work)
    timed, spare = batches[:needed], batches[needed:]
    rates, first = [], None
    for repeat in range(args.repeats):  # the first pass also meets every shape (compiles, kernel plans)
        tokens, seconds = timed_updates(lambda batch: trainer.train_step(batch)[2], timed, args.warmup, device)
        first = first or tokens / seconds
        rates.append(tokens / seconds)
        peak = peak_mb(device)
    rate = statistics.median(rates[1:] if len(rates) > 1 else rates)
    n_matmul = matmul_parameters(trainer.model)
    target_tokens = sum(int(pairs.tgt_lengths[b].sum()) + len(b) for b in timed) / len(timed)
    figures = {"layout": layout, "precision": trainer.precision, "batch": f"{recipe.batch_size} {recipe.batch_unit}",
               "target_tokens_per_update": round(target_tokens), "parameters": sum(p.numel() for p in
                                                                                 trainer.model.parameters()),
               "matmul_parameters": n_matmul, "updates": args.steps, "repeats": args.repeats,
               "target_tokens_per_s": round(rate), "updates_per_s": round(rate / target_tokens, 3),
               "first_pass_tokens_per_s": round(first), "peak_mb": peak,
               "model_tflops": round(6 * n_matmul * rate / 1e12, 2)}
    return figures, (timed, spare), pairs, trainer


def learning_curves(params, experiment: str, args, device, work: Path, window: int = 25) -> dict:
    """--learning updates of the experiment from one seed with every speed-up and with none: the training loss per
    target token, as means over `window` updates (the same batches, the same initial weights)."""
    from pipeline import speedups
    from pipeline.train.builders import build_batches
    exp = params.experiments[experiment]
    corpus = params.corpora[exp.corpus]
    vocab_size = corpus.vocab_size or corpus.bpe_merges
    recipe = recipe_of(params, experiment, "whole", args)
    per_batch = recipe.batch_size // 30 if recipe.batch_unit == "tokens" else recipe.batch_size
    pairs = random_pairs(vocab_size, int(per_batch * args.learning * 1.3), seed=3)
    batches = list(build_batches(pairs.src_lengths, pairs.tgt_lengths, recipe).epoch(1, 0))[:args.learning]
    curves = {}
    for name, on in (("all", speedups.SPEEDUPS), ("none", ())):
        with speedups.only(on):
            trainer = make_trainer(params, experiment, recipe, pairs, vocab_size, device, work / name)
            trainer.state.step = 0
            losses, tokens = [], []
            for batch in batches:
                loss, _, n = trainer.train_step(batch)
                trainer.state.step += 1
                losses.append(loss)
                tokens.append(n)
            losses = [float(x) for x in losses]
        curves[name] = [round(sum(losses[i:i + window]) / sum(tokens[i:i + window]), 4)
                        for i in range(0, len(losses), window)]
        del trainer
    diffs = [abs(a - b) for a, b in zip(curves["all"], curves["none"])]
    return {"experiment": experiment, "updates": len(batches), "window": window, **curves,
            "max_abs_difference": round(max(diffs), 4), "last_difference": round(diffs[-1], 4)}


def search_model(params, experiment: str, vocab_size: int, device):
    """The experiment's model with seeded random weights (as initialised, not trained: every family then decodes
    to the length cap, the same work for each)."""
    import torch

    from pipeline.models.registry import build_model
    torch.manual_seed(2)
    return build_model(params.model_spec(experiment), vocab_size, vocab_size).to(device)


def search_sources(vocab_size: int, n: int) -> list[list[int]]:
    """n sources of random ids with newstest-like lengths (seeded: ours and the peer's are the same)."""
    rng = random.Random(2)
    return [[rng.randrange(4, vocab_size) for _ in range(k)] for k, _ in pair_lengths(rng, n)]


def measure_search(model, decoding: dict, vocab_size: int, args, precision: str) -> dict:
    """translate_lines at the paper's settings on random sources of newstest-like lengths, each output ended at its
    source's length (a reference-length stand-in: max_len_a 1, max_len_b -1)."""
    from pipeline.data.vocab import SPECIALS, Vocab
    from pipeline.translate import translate_lines
    vocab = Vocab(list(SPECIALS) + [f"w{i}" for i in range(len(SPECIALS), vocab_size)])
    lines = [" ".join(f"w{i}" for i in ids) for ids in search_sources(vocab_size, args.sentences)]
    device = next(model.parameters()).device
    settings = dict(batch_size=args.batch_size, progress=False, precision=precision, max_len_a=1.0, max_len_b=-1,
                    **decoding)
    translate_lines(model, vocab, vocab, lines[: args.batch_size], **settings)  # warm-up
    synchronize(device)
    start = time.perf_counter()
    out = translate_lines(model, vocab, vocab, lines, **settings)
    synchronize(device)
    seconds = time.perf_counter() - start
    return {"sentences": len(lines), "batch_size": args.batch_size, **decoding,
            "sentences_per_s": round(len(lines) / seconds, 1),
            "output_tokens_per_s": round(sum(len(o.split()) for o in out) / seconds),
            "mean_output_tokens": round(sum(len(o.split()) for o in out) / len(out), 1)}


def peer_model(spec: dict, vocab_size: int, device):
    """MarianMTModel of our Transformer's size (model spec: d_model, heads, ffn_dim, layers, dropout, embeddings
    shared or tied as ours), specials as ours (pad 0, bos 1, eos 2)."""
    from transformers import MarianConfig, MarianMTModel
    config = MarianConfig(vocab_size=vocab_size, d_model=spec["d_model"], encoder_layers=spec["enc_layers"],
                          decoder_layers=spec["dec_layers"], encoder_attention_heads=spec["heads"],
                          decoder_attention_heads=spec["heads"], encoder_ffn_dim=spec["ffn_dim"],
                          decoder_ffn_dim=spec["ffn_dim"], dropout=spec.get("dropout", 0.1),
                          max_position_embeddings=1024, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                          decoder_start_token_id=1, forced_eos_token_id=None, scale_embedding=True,
                          share_encoder_decoder_embeddings=spec.get("share_embeddings", False),
                          tie_word_embeddings=spec.get("share_embeddings", False) or spec.get("tie_output", False))
    return MarianMTModel(config).to(device)


def measure_peer(spec: dict, batches: list, pairs, vocab_size: int, args, device, precision: str) -> dict:
    """The peer trained on our batches, then generate() on the same sources as our search."""
    import torch
    import torch.nn.functional as F

    from pipeline.data.batching import encode_source, make_batch, pad
    from pipeline.precision import autocast
    torch.manual_seed(1)
    model = peer_model(spec, vocab_size, device)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)

    def update(batch) -> int:
        src, tgt_in, tgt_out = (t.to(device, non_blocking=True) for t in
                                make_batch([pairs.source(j).tolist() for j in batch],
                                           [pairs.target(j).tolist() for j in batch]))
        n = len(batch) + int(pairs.tgt_lengths[batch].sum())
        with autocast(precision, device):
            logits = model(input_ids=src, attention_mask=src.ne(0), decoder_input_ids=tgt_in,
                           decoder_attention_mask=tgt_in.ne(0)).logits
        loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), tgt_out.reshape(-1), ignore_index=0,
                               label_smoothing=0.1, reduction="sum")
        (loss / n).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return n

    rates = []
    for _ in range(args.repeats if batches else 0):
        tokens, seconds = timed_updates(update, batches, args.warmup, device)
        rates.append(tokens / seconds)
    rate = statistics.median(rates[1:] if len(rates) > 1 else rates) if rates else 0.0
    n_matmul = matmul_parameters(model)
    train = {} if not rates else {"parameters": sum(p.numel() for p in model.parameters() if p.requires_grad),  # not its sinusoids
             "matmul_parameters": n_matmul, "target_tokens_per_s": round(rate),
             "model_tflops": round(6 * n_matmul * rate / 1e12, 2), "peak_mb": peak_mb(device)}
    sources = search_sources(vocab_size, args.sentences)  # the same sources as measure_search's
    order = sorted(range(len(sources)), key=lambda i: -len(sources[i]))
    model.eval()

    def generate(chunk_ids: list[int]) -> int:
        chunk = [encode_source(sources[i]) for i in chunk_ids]
        src = pad(chunk).to(device)
        cap = max(len(c) - 1 for c in chunk)  # ours: each output ends at its source's length (measure_search)
        # min_new_tokens: random weights end at once otherwise; the batch's longest output for every sentence
        out = model.generate(input_ids=src, attention_mask=src.ne(0), num_beams=4, max_new_tokens=cap,
                             min_new_tokens=cap, length_penalty=0.6, early_stopping=True)
        return int(out[:, 1:].ne(0).logical_and(out[:, 1:].ne(2)).sum())

    with torch.no_grad(), autocast(precision, device):
        generate(order[: args.batch_size])  # warm-up, as ours
        synchronize(device)
        start, produced = time.perf_counter(), 0
        for first in range(0, len(order), args.batch_size):
            produced += generate(order[first : first + args.batch_size])
        synchronize(device)
    seconds = time.perf_counter() - start
    generate_figures = {"sentences_per_s": round(len(sources) / seconds, 1),
                        "output_tokens_per_s": round(produced / seconds)}
    return {"train": train, "generate": generate_figures}


def profile(trainer, batches: list, model, decoding: dict, vocab_size: int, args, precision: str, path: str) -> None:
    """torch.profiler tables of the training updates on `batches` (shapes not met before) and one search batch, by
    device and by host time, with the count of host-device synchronisations: where a speed-up must start."""
    import torch
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    device = next(model.parameters()).device
    args = argparse.Namespace(**{**vars(args), "sentences": args.batch_size})
    sections = []
    for name, work in ((f"train {len(batches)} updates", lambda: [trainer.train_step(b) for b in batches]),
                       ("search 1 batch", lambda: measure_search(model, decoding, vocab_size, args, precision))):
        synchronize(device)
        start = time.perf_counter()
        with torch_profile(activities=activities) as prof:
            work()
            synchronize(device)
        wall = time.perf_counter() - start
        table = prof.key_averages()
        syncs = sum(e.count for e in table if "Synchronize" in e.key or "Memcpy" in e.key or e.key == "aten::item")
        sections.append(f"== {name}: {wall:.3f} s wall (profiled), {sum(e.count for e in table)} events, {syncs} "
                        "sync/copy/item calls\n"
                        + table.table(sort_by="self_cuda_time_total" if len(activities) > 1 else "self_cpu_time_total",
                                      row_limit=35, max_name_column_width=60)
                        + table.table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=60))
    Path(path).write_text("\n".join(sections), encoding="utf-8")


def line(prefix: str, figures: dict) -> None:
    print(prefix + " " + " ".join(f"{k}={v}" for k, v in figures.items()), flush=True)


def utilisation(figures: dict, peak: float | None, ceiling: float | None) -> None:
    """Add MFU (over the datasheet peak) and the share of the measured GEMM ceiling to training figures."""
    if peak:
        figures["mfu"] = round(figures["model_tflops"] / peak, 3)
    if ceiling:
        figures["share_of_gemm_ceiling"] = round(figures["model_tflops"] / ceiling, 3)


TRAINING_SPEEDUPS = ("no_sync", "native_dropout")  # the default ones a training update takes
OPTIONAL = ("fused_qkv", "bf16_residual")  # off by default (pipeline/speedups.py): measured when added


def variants(args, family: str) -> list[tuple[str, frozenset]]:
    """(name, speed-ups on) of each training measurement of `family`: the default set; with --ablate also none and
    the default plus compile (measured last: a compilation that runs long costs only itself); with --ablate-each,
    for the first family, the default without each of its training speed-ups and with each optional one."""
    from pipeline.speedups import DEFAULT
    out = [("default", DEFAULT)]
    if args.ablate:
        out.append(("none", frozenset()))
        if args.ablate_each and family == args.families[0]:
            out += [(f"-{name}", DEFAULT - {name}) for name in TRAINING_SPEEDUPS]
            out += [(f"+{name}", DEFAULT | {name}) for name in OPTIONAL]
        out.append(("+compile", DEFAULT | {"compile"}))
    return out


def search_variants(args) -> list[tuple[str, frozenset]]:
    """(name, speed-ups on) of each search measurement: the default; with --ablate also none, the default without
    static_search and with fused_qkv."""
    from pipeline.speedups import DEFAULT
    return [("default", DEFAULT)] + ([("none", frozenset()), ("-static_search", DEFAULT - {"static_search"}),
                                      ("+fused_qkv", DEFAULT | {"fused_qkv"})] if args.ablate else [])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny scale, 2 + 3 updates, 64 sentences")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3, help="timed passes over the updates (median)")
    parser.add_argument("--sentences", type=int, default=1024)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--families", nargs="*", default=list(FAMILIES), choices=list(FAMILIES))
    parser.add_argument("--layouts", nargs="*", default=["whole"], choices=["whole", "rank"])
    parser.add_argument("--rank-tokens", type=int, default=4096, help="one GPU's share in the rank layout")
    parser.add_argument("--ablate", action="store_true", help="also without speed-ups (and without each, first family)")
    parser.add_argument("--ablate-each", action="store_true", help="with --ablate: each eager speed-up's A/B too")
    parser.add_argument("--learning", type=int, default=0, help="N updates of the first family, speed-ups on and off")
    parser.add_argument("--no-search", action="store_true")
    parser.add_argument("--no-train", action="store_true", help="search only (ours and the peer's generate)")
    parser.add_argument("--no-peer", action="store_true", help="skip transformers' MarianMTModel")
    parser.add_argument("--peak-tflops", type=float, help="the GPU's dense bfloat16 peak (default: by its name)")
    parser.add_argument("--output", help="also write the results here (JSON)")
    parser.add_argument("--profile", help="write torch.profiler tables of the first family's updates and search here")
    args = parser.parse_args()
    import torch

    from pipeline import speedups
    from pipeline.config import load_params
    from pipeline.device import job_device
    scale = "tiny" if args.quick else "paper"
    if args.quick:
        args.warmup, args.steps, args.repeats, args.sentences, args.batch_size = 2, 3, 2, 64, 32
        args.learning = min(args.learning, 6)
    params = load_params(ROOT / "params.yaml", scale=scale)
    device = job_device()
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    peak = args.peak_tflops or peak_tflops(name)
    ceiling = gemm_ceiling(device)
    results = {"device": name, "torch": torch.__version__, "scale": scale, "peak_tflops": peak,
               "gemm_ceiling_tflops": ceiling, "speedups": dict(speedups.SPEEDUPS), "train": {}, "search": {},
               "peer": {}, "errors": {}}
    line("setup", {"device": name.replace(" ", "_"), "torch": torch.__version__, "scale": scale, "peak_tflops": peak,
                   "gemm_ceiling_tflops": ceiling})

    def save() -> None:  # after each measurement: a run stopped at its time limit keeps what it measured
        if args.output:
            Path(args.output).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")

    def attempt(key: str, work):
        """work(), or None with the error recorded: one failing measurement does not cost the others."""
        try:
            return work()
        except Exception as error:  # noqa: BLE001 - reported, and the run goes on
            results["errors"][key] = f"{type(error).__name__}: {error}"[:2000]
            print(f"error {key}: {type(error).__name__}: {error}", flush=True)
            return None
        finally:
            save()

    with tempfile.TemporaryDirectory() as tmp:
        if args.learning:
            experiment = FAMILIES[args.families[0]][0]
            results["learning"] = attempt("learning", lambda: learning_curves(params, experiment, args, device,
                                                                            Path(tmp) / "learning"))
            save()
            if results["learning"]:
                line("learning", {k: v for k, v in results["learning"].items() if k not in ("all", "none")})
        for family in args.families:
            experiment, decoding, peer = FAMILIES[family]
            results["train"][family] = {"experiment": experiment}
            kept = None
            plan = [(layout, variant, on) for layout in ([] if args.no_train else args.layouts)
                    for variant, on in (variants(args, family) if layout == "whole"
                                        else [("default", speedups.DEFAULT)])]

            def train(layout: str, variant: str, on: frozenset) -> None:
                nonlocal kept
                key = f"{layout}/{variant}"
                with speedups.only(on):
                    measured = attempt(f"train {family} {key}", lambda: measure_training(
                        params, experiment, args, device, Path(tmp), layout))
                if measured is None:
                    return
                figures = measured[0]
                utilisation(figures, peak, ceiling)
                results["train"][family][key] = figures
                line(f"train family={family} speedups={key}", figures)
                if kept is None and layout == "whole":
                    kept = measured
                del measured
                if device.type == "cuda":
                    torch.cuda.empty_cache()
                save()

            for item in plan:  # the compiled measurements come after the search and the peer
                if "compile" not in item[2]:
                    train(*item)
            corpus = params.corpora[params.experiments[experiment].corpus]
            vocab_size = corpus.vocab_size or corpus.bpe_merges
            precision = kept[0]["precision"] if kept else "bfloat16"
            if not args.no_search:
                searcher = search_model(params, experiment, vocab_size, device)
                results["search"][family] = {}
                for variant, on in search_variants(args):
                    with speedups.only(on):
                        figures = attempt(f"search {family} {variant}", lambda: measure_search(
                            searcher, decoding, vocab_size, args, precision))
                    if figures:
                        results["search"][family][variant] = figures
                        line(f"search family={family} speedups={variant}", figures)
                if args.profile and family == args.families[0] and kept:
                    profile(kept[3], kept[1][1], searcher, decoding, vocab_size, args, precision, args.profile)
                del searcher
            if peer and not args.no_peer and (kept or args.no_train):
                figures = attempt(f"peer {family}", lambda: measure_peer(
                    params.model_spec(experiment), kept[1][0] if kept else None, kept[2] if kept else None,
                    vocab_size, args, device, precision))
                if figures:
                    import transformers
                    if figures["train"]:
                        utilisation(figures["train"], peak, ceiling)
                    results["peer"][family] = {**figures, "name": f"transformers {transformers.__version__} "
                                                                  "MarianMTModel"}
                    line(f"peer family={family} train", figures["train"])
                    line(f"peer family={family} generate", figures["generate"])
                    save()
            kept = None  # frees the model and batches before the compiled measurements
            for item in plan:
                if "compile" in item[2]:
                    train(*item)
            kept = None
            if device.type == "cuda":
                torch.cuda.empty_cache()
            save()


if __name__ == "__main__":
    main()
