"""params.yaml and every paper's params/<paper>.yaml, validated and resolved for one scale into typed settings.

params.yaml holds what all papers share (scale, seed, paths, decoding and significance defaults); each
params/<paper>.yaml holds one paper's corpora, model presets, recipes, systems (experiments, grids,
ensembles, outputs of outside systems, combinations), tables and figures. Names are global: a paper may use another paper's corpus, preset or recipe.
Every error names the file and the key (e.g. `params/<paper>.yaml: experiments.<name>.model`) and what
was expected. Any leaf may be given per scale as `{tiny: ..., paper: ...}`; resolution picks the active scale, and
the smoke scale derives its values from those two (pipeline/scales.py).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.config.house import _House
from pipeline.config.reader import _check_test, _decoding, _read_yaml, _Reader
from pipeline.config.types import (CORPUS_KEYS, PAPER_KEYS, PAPERS_DIR, RESOURCE_KEYS, SCALES, SHARED_KEYS, SIDES,
                                   SIGNIFICANCE_KEYS, SYSTEM_KEYS, TRAIN_FIELDS, Combination, Corpus, EnsembleSpec,
                                   Experiment, External, ModelPreset, Params, RecipeResources, RecipeSpec, Significance,
                                   TableSpec)
from pipeline.errors import PipelineError

__all__ = ["CORPUS_KEYS", "PAPER_KEYS", "PAPERS_DIR", "RESOURCE_KEYS", "SCALES", "SHARED_KEYS", "SIDES",
           "SIGNIFICANCE_KEYS", "SYSTEM_KEYS", "TRAIN_FIELDS", "Combination", "Corpus", "EnsembleSpec", "Experiment",
           "External", "ModelPreset", "Params", "RecipeResources", "RecipeSpec", "Significance", "TableSpec",
           "load_params", "parse_params", "read_paper_files"]


def read_paper_files(root: str | Path = ".") -> dict[str, tuple[str, Any]]:
    """paper -> (its file as DVC names it, params/<paper>.yaml, and its raw mapping), for every file in
    <root>/params/ (sorted by name)."""
    files = sorted((Path(root) / PAPERS_DIR).glob("*.yaml"))
    return {path.stem: (f"{PAPERS_DIR}/{path.name}", _read_yaml(path)) for path in files}


def load_params(path: str | Path = "params.yaml", scale: str | None = None) -> Params:
    """Read and validate params.yaml and the paper files in params/ beside it."""
    path = Path(path)
    return parse_params(_read_yaml(path), source=str(path), scale=scale, papers=read_paper_files(path.parent))


def parse_params(raw: Any, source: str = "params.yaml", scale: str | None = None,
                 papers: dict[str, tuple[str, Any]] | None = None) -> Params:
    """Validate params.yaml's mapping (e.g. Snakemake's `config`) and the papers' (paper -> (file, mapping))."""
    if not isinstance(raw, dict):
        raise PipelineError(f"{source}: expected a mapping at the top level")
    scale = scale or raw.get("scale", "tiny")
    if scale not in SCALES:
        raise PipelineError(f"{source}: scale: expected one of {', '.join(SCALES)}, got {scale!r}")
    r = _Reader(source, scale)
    r.keys(raw, "", SHARED_KEYS)
    paths = r.mapping(raw.get("paths", {}), "paths")
    r.keys(paths, "paths", ("artifacts", "downloads", "manual"))
    manual = r.mapping(paths.get("manual") or {}, "paths.manual")
    decoding = _decoding(r, raw.get("decoding", {}), "decoding")
    significance = {"test": "paired_bootstrap", "n_samples": 1000, "seed": 12345,
                    **r.flat(raw.get("significance", {}), "significance", SIGNIFICANCE_KEYS)}
    _check_test(r, significance["test"], "significance.test")

    from pipeline.recipe import PRECISIONS  # torch-free
    precision = r.value(raw.get("precision", "auto"), "precision", str)
    if precision not in PRECISIONS:
        r.fail("precision", f"expected one of {', '.join(PRECISIONS)}, got {precision!r}")
    from pipeline.cpu_math import MODES  # torch-free
    cpu_math = r.value(raw.get("cpu_math", "native"), "cpu_math", str)
    if cpu_math not in MODES:
        r.fail("cpu_math", f"expected one of {', '.join(MODES)}, got {cpu_math!r}")
    max_job_minutes = r.value(raw.get("max_job_minutes", 2880), "max_job_minutes", int)
    if max_job_minutes < 1:
        r.fail("max_job_minutes", f"expected a positive number of minutes, got {max_job_minutes}")
    from pipeline.cost import gpu_models  # torch-free
    gpu_model = r.value(raw.get("gpu_model", "H200"), "gpu_model", str)
    if gpu_model not in gpu_models():
        r.fail("gpu_model", f"expected one of {', '.join(gpu_models())} (the GPU models of "
                            f"benchmarks/results/gpu_step_times.json), got {gpu_model!r}")
    smoke_gpus = r.value(raw.get("smoke_gpus", 1), "smoke_gpus", int)
    if smoke_gpus < 1:
        r.fail("smoke_gpus", f"expected a positive number of GPUs (at most this many a training run at smoke scale, "
                             f"on one node), got {smoke_gpus}")
    house = _House(scale, significance, precision, smoke_gpus)
    for paper, (path, data) in (papers or {}).items():
        house.read(paper, path, data)
    house.resolve()
    return Params(
        scale=scale, seed=r.value(raw.get("seed", 1), "seed", int),
        artifacts=r.value(paths.get("artifacts", "artifacts"), "paths.artifacts", str),
        downloads=r.value(paths.get("downloads", "artifacts/downloads"), "paths.downloads", str),
        manual={k: r.value(v, f"paths.manual.{k}", str) for k, v in manual.items()},
        decoding=decoding, significance=significance, corpora=house.corpora, models=house.models,
        recipes=house.recipes, experiments=house.experiments, ensembles=house.ensembles, tables=house.tables,
        files={paper: path for paper, (path, _) in (papers or {}).items()}, external=house.external,
        combinations=house.combinations, cpu_math=cpu_math, max_job_minutes=max_job_minutes, gpu_model=gpu_model,
    )
