"""The training step: one system trained (or resumed from its run directory) on a corpus's subwords (the rule
`train`, dvc.yaml's train-<experiment> stages). Its job resources are its recipe's (params/<paper>.yaml recipes.<name>.resources)."""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from pipeline.steps import register_step
from pipeline.steps.arguments import arg, json_arg


@dataclass
class TrainArgs:
    spec: str = arg(help="JSON: experiment, model, recipe, seed, init")
    train_src: str = arg(help="token store prefix (PREFIX.ids, PREFIX.offsets: python -m pipeline binarize)")
    train_tgt: str = arg(help="token store prefix")
    valid_src: str = arg(help="token store prefix")
    valid_tgt: str = arg(help="token store prefix")
    src_vocab: str = arg()
    tgt_vocab: str = arg()
    run_dir: str = arg()
    out_dir: str = arg()
    curves_dir: str = arg()
    init: str | None = arg(None, help="model.pt of the system to start from")
    no_progress: bool = arg(False)
    attempt: int = arg(1, help="Snakemake's attempt of this job: a retry (> 1) finds a run finished by an earlier "
                               "attempt whose job failed after (e.g. at its time limit) and writes its outputs again")


# portable-fixed's matrix products (pipeline/fixed_gemm.py): they compute nothing on GPUs or where cpu_math is native
FIXED_KERNEL_FILES = frozenset({"pipeline/fixed_gemm.py", "pipeline/fixed_gemm.c", "pipeline/fixed_gemm_aten.cpp"})


def weights_files(model_spec: dict, fixed_products: bool) -> list[str]:
    """The code that defines a system's weights: the train step's own files and its model's (dvc.yaml's
    train-<experiment> stage depends on them); the fixed-order kernel's only where it computes the products
    (cpu_math.fixed_products()), so that an edit to it trains no system of a native scale afresh."""
    from pipeline.models.registry import model_code

    files = set(_trainer_files()) | set(model_code(model_spec))
    return sorted(files if fixed_products else files - FIXED_KERNEL_FILES)


@functools.lru_cache(maxsize=None)
def _trainer_files() -> tuple[str, ...]:
    from pipeline.steps import step_files

    return tuple(step_files(["train"]))


def weights_code(model_spec: dict, fixed_products: bool) -> dict[str, str]:
    """weights_files with their hashes (in the run key: an edit trains the system afresh)."""
    from pipeline.code_deps import file_digests

    return file_digests(weights_files(model_spec, fixed_products))


@register_step("train", TrainArgs, rules=("train",), stage="train",
               code=("pipeline.train", "pipeline.recipe", "pipeline.checkpoint", "pipeline.models.registry",
                     "pipeline.data.vocab", "pipeline.data.batching", "pipeline.data.batch_plan",
                     "pipeline.data.token_store"),
               help="train one system (resumes from its run directory)")
def train(args: TrainArgs) -> None:
    import torch

    from pipeline.device import given_gpus, require_given_gpus

    require_given_gpus()  # before anything is read: a GPU job whose torch sees none stops in seconds

    from pipeline import cpu_math
    from pipeline.checkpoint import load_model
    from pipeline.data.token_store import Pairs, TokenArray
    from pipeline.data.vocab import Vocab
    from pipeline.models.registry import build_model
    from pipeline.recipe import Recipe
    from pipeline.train import fit

    spec = json_arg(args.spec, "--spec")
    torch.manual_seed(spec["seed"])
    src_vocab, tgt_vocab = Vocab.load(args.src_vocab), Vocab.load(args.tgt_vocab)
    train_data = Pairs(TokenArray.open(args.train_src), TokenArray.open(args.train_tgt))  # memory-mapped
    valid = Pairs(TokenArray.open(args.valid_src), TokenArray.open(args.valid_tgt))
    model = build_model(spec["model"], len(src_vocab), len(tgt_vocab))
    init_state = load_model(Path(args.init))[0].state_dict() if args.init else None
    recipe = Recipe.from_dict({**spec["recipe"], "seed": spec["seed"]}, where=f"recipe of {spec['experiment']}")
    code = weights_code(spec["model"], cpu_math.fixed_products(given_gpus()))
    meta = {"experiment": spec["experiment"], "model": spec["model"], "init": args.init,
            "src_vocab_size": len(src_vocab), "tgt_vocab_size": len(tgt_vocab), "code": code}
    summary = fit(model, train_data, valid, recipe, run_dir=Path(args.run_dir), out_dir=Path(args.out_dir),
                  curves_dir=Path(args.curves_dir), meta=meta, init_state=init_state, progress=not args.no_progress,
                  retry=args.attempt > 1)
    print(json.dumps({k: summary[k] for k in ("steps", "epochs", "final_valid_nll", "kept") if k in summary}))
