#!/usr/bin/env python
"""Our side of the side-by-side speed benchmark (../shared/benchmarks/peer-fairseq/peer_train.sh is fairseq's).

The same synthetic corpus (the peer's make_corpus.py, run here), word-level vocabularies (no BPE), the same
Transformer (3+3 layers, d_model 256, 4 heads, FFN 1024, post-norm, dropout 0.1, decoder input and output
embeddings tied), label smoothing 0.1, Adam (0.9, 0.98), inverse square root after 100 warm-up updates to 1e-3,
batches of at most 4096 padded tokens, seed 1, 500 updates, no validation during training; then beam-4 decoding of
the 500 test sentences in batches of 64, scored by sacreBLEU (13a) against test.tgt.

Prints key=value lines like the peer script: train_tokens_per_s (target tokens with EOS / the trainer's own
stopwatch over the updates), decode_sent_per_s (beam search only, in a process of its own that loads the saved
model, as fairseq-generate does), bleu, params, train_final_nll (nats, the last 10 updates), peak RSS.

    python benchmarks/nmt_speed.py [--updates 500] [--threads 2] [--precision auto|float32|bfloat16]
                                   [--self-attn dot|ran]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEER = ROOT.parent / "shared" / "benchmarks" / "peer-fairseq"


def peak_rss_mb() -> str:
    """This process's peak resident memory (VmHWM: unlike ru_maxrss, not inherited from the parent)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return f"{int(line.split()[1]) / 1024:.0f}"
    return "nan"


def model_spec(self_attn: str = "dot") -> dict:
    """The peer's Transformer; self_attn "ran": RAN-ALL on both sides."""
    spec = {"encoder": "transformer", "decoder": "transformer", "d_model": 256, "ffn_dim": 1024, "heads": 4,
            "enc_layers": 3, "dec_layers": 3, "dropout": 0.1, "tie_output": True}
    if self_attn == "ran":
        spec.update(enc_self_attn="ran", dec_self_attn="ran", ran_max_len=64)
    return spec


def make_recipe(updates: int, seed: int, precision: str):
    """The peer's training settings (no validation, no checkpoints before the end)."""
    from pipeline.recipe import Recipe

    return Recipe(lr=1e-3, batch_size=4096, optimizer="adam", adam_betas=(0.9, 0.98), adam_eps=1e-8,
                  schedule="inverse_sqrt", warmup=100, max_steps=updates, label_smoothing=0.1,
                  checkpoint_every=10 ** 9, valid_every=10 ** 9, log_every=10, seed=seed, precision=precision)


def encoded(work: Path, split: str) -> tuple[list[list[int]], list[list[int]]]:
    """A split of work/corpus as ids of work's vocabularies (sources, targets)."""
    from pipeline.data.vocab import Vocab
    from pipeline.fileio import read_lines

    return tuple([Vocab.load(work / f"vocab.{side}").encode(x) for x in read_lines(work / "corpus" / f"{split}.{side}")]
                 for side in ("src", "tgt"))


def test_translation(work: Path, beam: int, gen_batch: int):
    """(a function translating the test set with work/out/model.pt at its training precision, the references)."""
    from pipeline.checkpoint import load_model, trained_precision
    from pipeline.data.vocab import Vocab
    from pipeline.fileio import read_lines
    from pipeline.translate import translate_lines

    model, info = load_model(work / "out" / "model.pt")
    src_vocab, tgt_vocab = Vocab.load(work / "vocab.src"), Vocab.load(work / "vocab.tgt")
    lines, refs = read_lines(work / "corpus" / "test.src"), read_lines(work / "corpus" / "test.tgt")
    return (lambda: translate_lines(model, src_vocab, tgt_vocab, lines, beam=beam, batch_size=gen_batch,
                                    progress=False, precision=trained_precision(info))), refs


def decode(work: Path, threads: int, beam: int, gen_batch: int) -> None:
    """Beam search over the test set with work/out/model.pt at its training precision; prints key=value lines."""
    import sacrebleu
    import torch

    torch.set_num_threads(threads)
    translate, refs = test_translation(work, beam, gen_batch)
    began = time.perf_counter()
    hyps = translate()
    seconds = time.perf_counter() - began
    bleu = sacrebleu.corpus_bleu(hyps, [refs], force=True).score
    print(f"decode_sent_per_s={len(hyps) / seconds:.2f} bleu={bleu:.2f} decode_s={seconds:.1f} "
          f"decode_peak_rss_mb={peak_rss_mb()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--updates", type=int, default=500)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "nmt_our_bench")
    parser.add_argument("--seed", type=int, default=1, help="model initialisation, dropout and batch order")
    parser.add_argument("--corpus-seed", type=int, default=1234)
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--gen-batch", type=int, default=64)
    parser.add_argument("--self-attn", default="dot", choices=("dot", "ran"),
                        help="ran: RAN-ALL, zeng2021's recurrent attention on both sides (benchmark c)")
    parser.add_argument("--decode", type=Path, help="(internal) only decode the model trained in this work dir")
    parser.add_argument("--peer-dir", type=Path, default=PEER, help="where make_corpus.py lies")
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    sys.path.insert(0, str(ROOT))
    if args.decode:
        return decode(args.decode, args.threads, args.beam, args.gen_batch)

    import shutil

    import torch

    from pipeline.data.vocab import Vocab
    from pipeline.fileio import read_lines
    from pipeline.models.registry import build_model
    from pipeline.train import fit, seed_everything

    torch.set_num_threads(args.threads)
    shutil.rmtree(args.work, ignore_errors=True)
    corpus = args.work / "corpus"
    subprocess.run([sys.executable, str(args.peer_dir / "make_corpus.py"), "--out", str(corpus), "--seed",
                    str(args.corpus_seed)], check=True, stdout=subprocess.DEVNULL)
    text = {f"{split}.{side}": read_lines(corpus / f"{split}.{side}")
            for split in ("train", "valid") for side in ("src", "tgt")}
    src_vocab, tgt_vocab = Vocab.build(text["train.src"]), Vocab.build(text["train.tgt"])
    src_vocab.save(args.work / "vocab.src")
    tgt_vocab.save(args.work / "vocab.tgt")

    spec, recipe = model_spec(args.self_attn), make_recipe(args.updates, args.seed, args.precision)
    seed_everything(args.seed)
    model = build_model(spec, len(src_vocab), len(tgt_vocab))
    meta = {"model": spec, "src_vocab_size": len(src_vocab), "tgt_vocab_size": len(tgt_vocab)}
    summary = fit(model, encoded(args.work, "train"), encoded(args.work, "valid"), recipe, run_dir=args.work / "run",
                  out_dir=args.work / "out", curves_dir=args.work / "curves", meta=meta, progress=False)
    train_rss = peak_rss_mb()
    # decoding in a process of its own that loads model.pt, as the pipeline's translate step and fairseq-generate do
    decoding = subprocess.run([sys.executable, __file__, "--decode", str(args.work), "--threads", str(args.threads),
                               "--beam", str(args.beam), "--gen-batch", str(args.gen_batch)],
                              check=True, capture_output=True, text=True)
    decoded = dict(line.split("=", 1) for line in decoding.stdout.split())
    for key, value in [
        ("train_tokens_per_s", f"{summary['tokens_per_s']:.1f}"),
        ("train_wall_s", f"{summary['wall_time_s']:.1f}"),
        ("decode_sent_per_s", decoded["decode_sent_per_s"]),
        ("bleu", decoded["bleu"]),
        ("params", summary["n_params"]),
        ("precision", summary["precision"]),
        ("train_updates", summary["steps"]),
        ("train_target_tokens", summary["tokens"]),
        ("train_final_nll", f"{summary['final_train_nll']:.4f}"),
        ("train_final_loss", f"{summary['final_train_loss']:.4f}"),
        ("train_peak_rss_mb", train_rss),
        ("decode_s", decoded["decode_s"]),
        ("decode_peak_rss_mb", decoded["decode_peak_rss_mb"]),
        ("threads", args.threads),
        ("self_attn", args.self_attn),
    ]:
        print(f"{key}={value}")


if __name__ == "__main__":
    main()
