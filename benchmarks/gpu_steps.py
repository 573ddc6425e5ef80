"""The model steps on the job's device, timed: a newstest-sized decode per model family and each analysis that
runs a model, through `python -m pipeline <step>` as the rules call them (pipeline/device.py puts the model on the
GPU when the machine has one).

Each family's paper-scale model (the project's params) is built with seeded random weights and saved as the
trainer saves model.pt, with vocabularies of the corpus's size and a test set of newstest2014's size (3,003
sentences, lengths drawn around its mean of 27 tokens). Random weights decode to the length limit, so a decode
here is at least as long as a real one. Prints key=value lines and writes them to --output (JSON):

    python benchmarks/gpu_steps.py --output gpu_steps.json     # on a GPU machine: paper scale
    python benchmarks/gpu_steps.py --quick                     # tiny scale, 60 sentences: a CPU smoke test

Not covered: zhang2018's alignment (it needs the gold links of Liu and Sun's set) and hao2019's probing (it needs
SentEval's tasks); both load and run their model through the same pipeline/device.py.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# family -> (experiment whose model is built, decoding settings of its paper, analyses: kind -> settings)
FAMILIES = {
    "transformer-base": ("ende-base", {"beam": 4, "length": "penalty", "length_penalty": 0.6}, {}),
    "ran-all": ("z-en-de-ran-all", {"beam": 4, "length": "penalty", "length_penalty": 0.6},
                {"attention": {"sentences": 400},
                 "speed": {"batch_sizes": [128], "beams": [4], "repeats": 1, "sentences": 3003}}),
    "dl4mt-self-attentive": ("w-en-de-self-attentive", {"beam": 5, "length": "normalize"},
                             {"previous_words": {"sentences": 400}}),
    "lstm-lm": ("w-lm-mean", None, {"perplexity": {"sentences": 3003, "batch_size": 50}}),
    "rnmt": ("rn-en-de-rnmt", {"beam": 10, "length": "normalize"}, {}),
    "lstm-residual": ("shu-residual", {"beam": 5, "length": "normalize"}, {}),
}


def prepare(params, experiment: str, folder: Path, sentences: int, seed: int = 1) -> dict:
    """model.pt (seeded random weights), both vocabularies and a test set of `sentences` pairs in `folder`."""
    import torch

    from pipeline.checkpoint import model_record, save_atomic
    from pipeline.data.vocab import SPECIALS, Vocab
    from pipeline.models.registry import build_model
    corpus = params.corpora[params.experiments[experiment].corpus]
    size = corpus.vocab_size or corpus.bpe_merges
    torch.manual_seed(seed)
    spec = params.model_spec(experiment)
    meta = {"model": spec, "src_vocab_size": size, "tgt_vocab_size": size, "precision": "bfloat16"}
    save_atomic(model_record(build_model(spec, size, size).eval(), meta, 1), folder / "model.pt")
    words = [f"w{i}" for i in range(len(SPECIALS), size)]
    for side in ("src", "tgt"):
        Vocab(list(SPECIALS) + words).save(folder / f"vocab.{side}")
    rng = random.Random(seed)
    for side in ("src", "tgt"):
        lines = [" ".join(rng.choices(words, k=max(1, min(100, round(rng.gauss(27, 14)))))) for _ in range(sentences)]
        (folder / f"test.{side}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {name: str(folder / name) for name in ("model.pt", "vocab.src", "vocab.tgt", "test.src", "test.tgt")}


def timed(argv: list[str]) -> tuple[float | None, str]:
    """Run one step; (wall seconds, its stderr), seconds None if it failed (its stderr's end is printed)."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pipeline", *argv], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": path})
    if proc.returncode != 0:
        print(f"{argv[0]} failed:\n{proc.stderr[-3000:]}", file=sys.stderr, flush=True)
        return None, proc.stderr
    return time.perf_counter() - start, proc.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny-scale models, 60 sentences")
    parser.add_argument("--sentences", type=int, default=3003)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--output", help="also write the results here (JSON)")
    args = parser.parse_args()
    import torch

    from pipeline.config import load_params
    from pipeline.device import job_device
    scale, sentences = ("tiny", 60) if args.quick else ("paper", args.sentences)
    params = load_params(ROOT / "params.yaml", scale=scale)
    device = job_device()
    results = {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu", "scale": scale,
               "sentences": sentences, "torch": torch.__version__, "steps": []}
    print(f"device={results['device']} scale={scale} sentences={sentences}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for family, (experiment, decoding, analyses) in FAMILIES.items():
            folder = Path(tmp) / family
            folder.mkdir()
            files = prepare(params, experiment, folder, sentences)
            inputs = {"model": files["model.pt"], "src": files["test.src"], "tgt": files["test.tgt"],
                      "src_vocab": files["vocab.src"], "tgt_vocab": files["vocab.tgt"]}
            runs = []
            if decoding is not None:
                spec = {**decoding, "batch_size": args.batch_size, "max_len_a": 1.2, "max_len_b": 10}
                seconds, log = timed(["translate", "--spec", json.dumps(spec), "--model", files["model.pt"],
                                      "--src-vocab", files["vocab.src"], "--tgt-vocab", files["vocab.tgt"],
                                      "--input", files["test.src"], "--output", str(folder / "test.hyp"),
                                      "--lang", "en", "--no-progress"])
                search = re.search(r"translated \d+ sentences in ([\d.]+)s", log)
                hyp = folder / "test.hyp"
                runs.append({"step": "translate", "seconds": seconds and round(seconds, 2),
                             "search_s": float(search.group(1)) if search else None,
                             "output_words": len(hyp.read_text(encoding="utf-8").split()) if hyp.exists() else None})
            for kind, settings in analyses.items():
                context = {"decoding": {"length": "penalty", "length_penalty": 0.6, "max_len_a": 1.2,
                                        "max_len_b": 10}} if kind == "speed" else {}
                if args.quick:
                    settings = {**settings, "sentences": min(settings.get("sentences", sentences), sentences)}
                seconds, _ = timed([kind.replace("_", "-"), "--settings", json.dumps(settings), "--inputs",
                                    json.dumps(inputs), "--context", json.dumps(context), "--output",
                                    str(folder / f"{kind}.json")])
                run = {"step": kind, "seconds": seconds and round(seconds, 2)}
                if kind == "speed" and seconds:  # its own timing: tokens/s and the timed passes' seconds
                    rows = json.loads((folder / f"{kind}.json").read_text(encoding="utf-8"))["rows"]
                    run["rows"] = [{k: row[k] for k in ("batch_size", "beam", "tokens_per_s", "sentences_per_s")}
                                   | {"pass_s": [round(r["seconds"], 2) for r in row["runs"]]} for row in rows]
                runs.append(run)
            for run in runs:
                run = {"family": family, "experiment": experiment, **run}
                results["steps"].append(run)
                print(" ".join(f"{k}={v}" for k, v in run.items()), flush=True)
            if args.output:  # after each family: a run stopped at its time limit keeps what it measured
                Path(args.output).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
