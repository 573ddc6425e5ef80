"""GPU speed of training and beam search, beside a peer on the same GPU, the same batches and the same sources.

    python benchmarks/gpu.py --output gpu.json     # on one GPU: paper-scale models and recipes, about 5 minutes
    python benchmarks/gpu.py --quick               # tiny scale on the CPU, a few updates: a smoke test

Training: each family's paper-scale model and recipe (FAMILIES, the project's params) on random token pairs of
newstest-like lengths, cut into the recipe's batches by the trainer's own batching; the trainer's whole update
(`Trainer.train_step`: batch to the device, forward, loss, backward, clip, optimizer) timed over --steps updates
after --warmup. Printed: target tokens/s (EOS included), updates/s, peak GPU memory, and model FLOP/s by 6·N·T
(N: every parameter, embeddings and output projection included, tied ones once; T: target tokens a second) with
its share of the GPU's dense bfloat16 peak (--peak-tflops, else PEAK_TFLOPS by the device's name); then the same
updates again (seen_shapes_tokens_per_s: what is left once every batch shape has been met).

Search: `pipeline.translate.translate_lines` (encode, length-sorted batches of --batch-size, beam search, decode)
at each family's paper decoding settings on --sentences sources of newstest-like lengths; sentences/s and output
tokens/s. The model as initialised (seeded random weights, not the trained one): every family's outputs run to the
length cap floor(1.2 x source + 10).

Peer: transformers' MarianMTModel at the sizes of our Transformer-Base and -Big, trained on the same batches (bfloat16
autocast where the ours run in it, fused AdamW, label-smoothed cross-entropy summed over target tokens), and its
generate(num_beams=4, max_new_tokens=min_new_tokens=the batch's longest cap) on the same sources, same batch size.

Prints key=value lines; --output also writes them as JSON.
"""
from __future__ import annotations

import argparse
import json
import random
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
# bfloat16 matrix peaks, TFLOP/s: for the H100/H200 the rate this workplace's machines reach (about 790; NVIDIA's
# datasheet gives 989 dense for the SXM parts), the issue's reference; pass --peak-tflops for other GPUs
PEAK_TFLOPS = {"H100": 790.0, "H200": 790.0, "A100": 312.0}
SPARE = 3  # batches beyond the timed ones, for --profile: shapes the process has not met


def sentence_lengths(rng: random.Random, n: int) -> list[int]:
    """Lengths around newstest2014's mean of 27 subwords (sd 14), 1-100."""
    return [max(1, min(100, round(rng.gauss(27, 14)))) for _ in range(n)]


def random_pairs(vocab_size: int, n: int, seed: int):
    """n pairs of random ids with newstest-like lengths (pipeline.data.token_store.Pairs)."""
    from pipeline.data.token_store import Pairs
    rng = random.Random(seed)
    src = [[rng.randrange(4, vocab_size) for _ in range(k)] for k in sentence_lengths(rng, n)]
    tgt = [[rng.randrange(4, vocab_size) for _ in range(k)] for k in sentence_lengths(rng, n)]
    return Pairs.of((src, tgt))


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


def measure_training(params, experiment: str, args, device, work: Path) -> tuple[dict, list, object, object]:
    """Our trainer's steady-state speed on the recipe's batches; (figures, the batches, the pairs, the model)."""
    import torch

    from pipeline.models.registry import build_model, count_parameters
    from pipeline.precision import resolve
    from pipeline.recipe import Recipe
    from pipeline.train.builders import build_batches
    from pipeline.train.distributed import Dist
    from pipeline.train.trainer import Trainer

    exp = params.experiments[experiment]
    corpus = params.corpora[exp.corpus]
    vocab_size = corpus.vocab_size or corpus.bpe_merges
    recipe = Recipe.from_dict({**params.recipes[exp.recipe].train, "seed": 1}, where=f"recipe of {experiment}")
    needed = args.warmup + args.steps
    per_batch = recipe.batch_size // 30 if recipe.batch_unit == "tokens" else recipe.batch_size
    pairs = random_pairs(vocab_size, max(64, int(per_batch * needed * 1.6)), seed=1)
    batches = list(build_batches(pairs.src_lengths, pairs.tgt_lengths, recipe).epoch(1, 0))[:needed + SPARE]
    torch.manual_seed(1)
    spec = params.model_spec(experiment)
    model = build_model(spec, vocab_size, vocab_size)
    n_params = count_parameters(model)
    dist_ = Dist()
    meta = {"model": spec, "src_vocab_size": vocab_size, "tgt_vocab_size": vocab_size,
            "precision": resolve(recipe.precision, device)}
    trainer = Trainer(model, pairs, pairs.select([0]), recipe, work / experiment, meta, dist_, False, {})
    timed, spare = batches[:needed], batches[needed:]
    tokens, seconds = timed_updates(lambda batch: trainer.train_step(batch)[2], timed, args.warmup, device)
    # the same updates again: shapes seen before (what a per-shape cost, a kernel plan or an allocation, adds)
    again, again_seconds = timed_updates(lambda batch: trainer.train_step(batch)[2], timed, args.warmup, device)
    figures = {"parameters": n_params, "precision": meta["precision"], "batch": f"{recipe.batch_size} "
               f"{recipe.batch_unit}", "updates": args.steps, "target_tokens_per_s": round(tokens / seconds),
               "updates_per_s": round(args.steps / seconds, 3),
               "peak_mb": peak_mb(device), "model_tflops": round(6 * n_params * tokens / seconds / 1e12, 2),
               "seen_shapes_tokens_per_s": round(again / again_seconds)}
    return figures, (timed, spare), pairs, trainer


def search_model(params, experiment: str, vocab_size: int, device):
    """The experiment's model with seeded random weights (as initialised, not trained: every family then decodes
    to the length cap, the same work for each)."""
    import torch

    from pipeline.models.registry import build_model
    torch.manual_seed(2)
    return build_model(params.model_spec(experiment), vocab_size, vocab_size).to(device)


def measure_search(model, decoding: dict, vocab_size: int, args, precision: str) -> dict:
    """translate_lines at the paper's settings on random sources of newstest-like lengths."""
    from pipeline.data.vocab import SPECIALS, Vocab
    from pipeline.translate import translate_lines
    vocab = Vocab(list(SPECIALS) + [f"w{i}" for i in range(len(SPECIALS), vocab_size)])
    rng = random.Random(2)
    lines = [" ".join(f"w{rng.randrange(4, vocab_size)}" for _ in range(k))
             for k in sentence_lengths(rng, args.sentences)]
    device = next(model.parameters()).device
    translate_lines(model, vocab, vocab, lines[: args.batch_size], batch_size=args.batch_size, progress=False,
                    precision=precision, **decoding)  # warm-up
    synchronize(device)
    start = time.perf_counter()
    out = translate_lines(model, vocab, vocab, lines, batch_size=args.batch_size, progress=False,
                          precision=precision, **decoding)
    synchronize(device)
    seconds = time.perf_counter() - start
    return {"sentences": len(lines), "batch_size": args.batch_size, **decoding,
            "sentences_per_s": round(len(lines) / seconds, 1),
            "output_tokens_per_s": round(sum(len(o.split()) for o in out) / seconds)}


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

    tokens, seconds = timed_updates(update, batches, args.warmup, device)
    train = {"parameters": sum(p.numel() for p in model.parameters() if p.requires_grad),  # not its sinusoids
             "target_tokens_per_s": round(tokens / seconds),
             "peak_mb": peak_mb(device)}
    rng = random.Random(2)  # the same sources as measure_search's
    sources = [[rng.randrange(4, vocab_size) for _ in range(k)] for k in sentence_lengths(rng, args.sentences)]
    order = sorted(range(len(sources)), key=lambda i: -len(sources[i]))
    model.eval()
    produced = 0
    synchronize(device)
    start = time.perf_counter()
    with torch.no_grad(), autocast(precision, device):
        for first in range(0, len(order), args.batch_size):
            chunk = [encode_source(sources[i]) for i in order[first : first + args.batch_size]]
            src = pad(chunk).to(device)
            cap = int(1.2 * max(len(c) - 1 for c in chunk) + 10)
            # min_new_tokens: random weights end at once, ours run to the cap; the same output length for both
            out = model.generate(input_ids=src, attention_mask=src.ne(0), num_beams=4, max_new_tokens=cap,
                                 min_new_tokens=cap, length_penalty=0.6, early_stopping=True)
            produced += int(out[:, 1:].ne(0).logical_and(out[:, 1:].ne(2)).sum())
    synchronize(device)
    seconds = time.perf_counter() - start
    generate = {"sentences_per_s": round(len(sources) / seconds, 1), "output_tokens_per_s": round(produced / seconds)}
    return {"train": train, "generate": generate}


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny scale, 2 + 3 updates, 64 sentences")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--sentences", type=int, default=1024)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--families", nargs="*", default=list(FAMILIES), choices=list(FAMILIES))
    parser.add_argument("--no-peer", action="store_true", help="skip transformers' MarianMTModel")
    parser.add_argument("--peak-tflops", type=float, help="the GPU's dense bfloat16 peak (default: by its name)")
    parser.add_argument("--output", help="also write the results here (JSON)")
    parser.add_argument("--profile", help="write torch.profiler tables of the first family's updates and search here")
    args = parser.parse_args()
    import torch

    from pipeline.config import load_params
    from pipeline.device import job_device
    scale = "tiny" if args.quick else "paper"
    if args.quick:
        args.warmup, args.steps, args.sentences, args.batch_size = 2, 3, 64, 32
    params = load_params(ROOT / "params.yaml", scale=scale)
    device = job_device()
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    peak = args.peak_tflops or next((v for k, v in PEAK_TFLOPS.items() if k in name), None)
    results = {"device": name, "torch": torch.__version__, "scale": scale, "peak_tflops": peak, "train": {},
               "search": {}, "peer": {}}
    line("setup", {"device": name.replace(" ", "_"), "torch": torch.__version__, "scale": scale, "peak_tflops": peak})
    with tempfile.TemporaryDirectory() as tmp:
        for family in args.families:
            experiment, decoding, peer = FAMILIES[family]
            figures, (batches, spare), pairs, trainer = measure_training(params, experiment, args, device, Path(tmp))
            if peak and device.type == "cuda":
                figures["share_of_peak"] = round(figures["model_tflops"] / peak, 3)
            results["train"][family] = {"experiment": experiment, **figures}
            line(f"train family={family}", figures)
            corpus = params.corpora[params.experiments[experiment].corpus]
            vocab_size = corpus.vocab_size or corpus.bpe_merges
            searcher = search_model(params, experiment, vocab_size, device)
            results["search"][family] = measure_search(searcher, decoding, vocab_size, args, figures["precision"])
            line(f"search family={family}", results["search"][family])
            if args.profile and family == args.families[0]:
                profile(trainer, spare, searcher, decoding, vocab_size, args, figures["precision"], args.profile)
            if peer and not args.no_peer:
                results["peer"][family] = measure_peer(params.model_spec(experiment), batches, pairs, vocab_size, args, device,
                                                       figures["precision"])
                import transformers
                results["peer"][family]["name"] = f"transformers {transformers.__version__} MarianMTModel"
                line(f"peer family={family} train", results["peer"][family]["train"])
                line(f"peer family={family} generate", results["peer"][family]["generate"])
            del searcher, trainer, batches, pairs
            if device.type == "cuda":
                torch.cuda.empty_cache()
            if args.output:  # after each family: a run stopped at its time limit keeps what it measured
                Path(args.output).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
