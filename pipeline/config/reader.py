"""Reading one params file: per-scale values, types and keys checked, errors naming the file and key."""
from __future__ import annotations

import dataclasses
import difflib
import typing
from pathlib import Path
from typing import Any

import yaml

from pipeline.config.types import (CORPUS_KEYS, RESOURCE_KEYS, SCALES, SIDES, TRAIN_FIELDS, WRITTEN_SCALES, Corpus,
                                   RecipeSpec, RecipeResources)
from pipeline.errors import PipelineError
from pipeline.scales import SMOKE_MINUTES, smoke_recipe, written_scale


class _Reader:
    """Walks raw YAML of one file, resolving per-scale values and naming the file and key in errors."""

    def __init__(self, source: str, scale: str):
        self.source, self.scale = source, scale

    def fail(self, key: str, message: str):
        raise PipelineError(f"{self.source}: {key}: {message}")

    def mapping(self, value: Any, key: str) -> dict:
        if not isinstance(value, dict):
            self.fail(key, f"expected a mapping, got {type(value).__name__} {value!r}")
        return value

    def keys(self, value: dict, key: str, allowed, required=()) -> None:
        for name in value:
            if name not in allowed:
                close = difflib.get_close_matches(str(name), list(allowed), n=1)
                hint = f"; did you mean '{close[0]}'?" if close else ""
                self.fail(f"{key}.{name}" if key else str(name),
                          f"unknown key{hint} (expected one of: {', '.join(sorted(allowed))})")
        for name in required:
            if name not in value:
                self.fail(f"{key}.{name}" if key else name, "missing required key")

    def scaled(self, value: Any, key: str) -> tuple[Any, str]:
        """`{tiny:, paper:}` resolved for the active scale (other values unchanged), and the key it sits at; smoke
        takes one of the two (pipeline/scales.py written_scale)."""
        if isinstance(value, dict) and set(value) & set(SCALES):
            if "smoke" in value:
                self.fail(f"{key}.smoke", "a per-scale value names tiny and paper only: the smoke scale takes the "
                                          "paper value, the tiny one where it is about the data (docs/paper-scale.md)")
            self.keys(value, key, WRITTEN_SCALES, required=WRITTEN_SCALES)
            scale = written_scale(self.scale, key)
            return value[scale], f"{key}.{scale}"
        return value, key

    def value(self, value: Any, key: str, kind: type):
        """Resolve `{tiny:, paper:}` and check the type (int accepted where float is expected)."""
        if kind is not dict:
            value, key = self.scaled(value, key)
        ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value, ok = float(value), True
        if not ok:
            self.fail(key, f"expected {kind.__name__}, got {type(value).__name__} {value!r}")
        return value

    def resolved(self, value: Any, key: str) -> Any:
        """A whole subtree with every `{tiny:, paper:}` resolved (types are checked by whoever reads it)."""
        value, key = self.scaled(value, key)
        if isinstance(value, dict):
            return {k: self.resolved(v, f"{key}.{k}") for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolved(v, f"{key}[{i}]") for i, v in enumerate(value)]
        return value

    def flat(self, raw: Any, key: str, schema: dict) -> dict:
        raw = self.mapping(raw, key)
        self.keys(raw, key, schema)
        return {name: self.value(value, f"{key}.{name}", schema[name]) for name, value in raw.items()}

    def name_ref(self, value: Any, key: str, known: dict, what: str) -> str:
        value = self.value(value, key, str)
        if value not in known:
            close = difflib.get_close_matches(value, list(known), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            self.fail(key, f"unknown {what} '{value}'{hint}; defined: {', '.join(sorted(known)) or 'none'}")
        return value



# ------------------------------------------------------------------------------------------------- loading
def _read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PipelineError(f"{path}: no such params file") from None
    except yaml.YAMLError as err:
        raise PipelineError(f"{path}: not valid YAML: {err}") from None



# ------------------------------------------------------------------------------------------ field checks
def _corpus(r: _Reader, paper: str, name: str, spec: Any) -> Corpus:
    key = f"corpora.{name}"
    spec = r.mapping(spec, key)
    r.keys(spec, key, CORPUS_KEYS, required=("src", "tgt", "source", "max_len", "bpe_merges", "joint_bpe"))
    values = {k: r.value(v, f"{key}.{k}", CORPUS_KEYS[k]) for k, v in spec.items()}
    from pipeline.data.registry import CORPORA  # torch-free; the registry of downloadable corpora
    r.name_ref(values["source"], f"{key}.source", CORPORA, "registry corpus")
    if values.get("joint_vocab") and not values["joint_bpe"]:
        r.fail(f"{key}.joint_vocab", "expected joint_bpe: true as well (one vocabulary needs one subword model)")
    if "test_sets" in values:
        sets = values["test_sets"]
        if not sets or not all(isinstance(s, str) and s.startswith("test") for s in sets):
            r.fail(f"{key}.test_sets", f"expected a non-empty list of split names starting with 'test' (test, "
                                       f"test-nt15, ...), got {sets!r}")
        values["test_sets"] = tuple(sets)
    if "bpe_sides" in values:
        values["bpe_sides"] = _bpe_sides(r, f"{key}.bpe_sides", values["bpe_sides"], values["joint_bpe"])
    if values["bpe_merges"] < (1 if values.get("bpe_sides", SIDES) else 0):
        r.fail(f"{key}.bpe_merges", f"expected an integer >= 1 (BPE merges; 0 only with bpe_sides: []), got "
                                    f"{values['bpe_merges']!r}")
    if values.get("vocab_size", 0) < 0:
        r.fail(f"{key}.vocab_size", f"expected an integer >= 0 (the most frequent types kept; 0: every type), "
                                    f"got {values['vocab_size']!r}")
    return Corpus(name=name, paper=paper, **values)


def _bpe_sides(r: _Reader, key: str, sides: list, joint_bpe: bool) -> tuple:
    """The sides BPE segments, in (src, tgt) order: distinct names from SIDES; joint BPE needs both."""
    if not all(isinstance(s, str) and s in SIDES for s in sides) or len(set(sides)) != len(sides):
        r.fail(key, f"expected a list of distinct sides out of {', '.join(SIDES)} (those BPE segments; [] for none), "
                    f"got {sides!r}")
    if joint_bpe and set(sides) != set(SIDES):
        r.fail(key, f"joint_bpe: true learns one BPE model on both sides; expected bpe_sides [src, tgt], got {sides!r} "
                    f"(or set joint_bpe: false)")
    return tuple(s for s in SIDES if s in sides)


def _model_spec(r: _Reader, key: str, spec: Any) -> dict:
    """A preset's encoder, decoder and options for the active scale, checked by the models' option classes."""
    spec = r.resolved(r.mapping(spec, key), key)
    for part in ("encoder", "decoder"):
        if part not in spec:
            r.fail(f"{key}.{part}", "missing required key (the model's encoder and decoder, e.g. transformer)")
    _check_model(r, key, spec)
    return spec


def _check_model(r: _Reader, key: str, spec: dict) -> None:
    """Option names and types come from the encoder's, decoder's and model's typed option classes."""
    from pipeline.models.options import validate_model  # torch-free
    try:
        validate_model(spec)
    except PipelineError as err:
        r.fail(key, str(err))


def _recipe(r: _Reader, paper: str, name: str, spec: Any, precision: str, smoke_gpus: int = 1) -> RecipeSpec:
    """A paper's recipe; its precision defaults to params.yaml's `precision`. At smoke: the paper's on a short schedule,
    on at most `smoke_gpus` GPUs, for SMOKE_MINUTES (pipeline/scales.py)."""
    from pipeline.recipe import Recipe as TrainRecipe  # torch-free: the one recipe schema
    key = f"recipes.{name}"
    spec = dict(r.mapping(spec, key))
    # "did you mean" for a misspelt key
    r.keys(spec, key, {f.name for f in dataclasses.fields(TrainRecipe)} | {"resources"})
    resources = r.flat(spec.pop("resources", {}), f"{key}.resources", RESOURCE_KEYS)
    train = {"precision": precision, **r.resolved(spec, key)}
    TrainRecipe.from_dict(train, where=f"{r.source}: {key}")
    resources = {"gpu": 0, "runtime": 60, "mem_mb": 4000, "cpus": 1, **resources}
    if r.scale == "smoke":
        train = smoke_recipe(train)
        TrainRecipe.from_dict(train, where=f"{r.source}: {key} (at smoke)")
        resources.update(gpu=min(resources["gpu"], smoke_gpus), runtime=SMOKE_MINUTES)
    return RecipeSpec(name=name, paper=paper, train=train, resources=RecipeResources(**resources))


def _decoding(r: _Reader, raw: Any, key: str) -> dict:
    """Decoding settings (all or a system's overrides) for the active scale, checked by pipeline/decoding.py."""
    from pipeline.decoding import Decoding
    from pipeline.settings import from_mapping
    decoding = r.flat(raw, key, typing.get_type_hints(Decoding))
    try:
        from_mapping(Decoding, decoding)
    except PipelineError as err:
        name, _, message = str(err).partition(": ")
        r.fail(f"{key}.{name}", message)
    return decoding


def _check_test(r: _Reader, test: str, key: str) -> None:
    from pipeline.evaluate.significance import tests
    from pipeline.registry import unknown
    if test not in tests():
        r.fail(key, unknown("significance test", test, tests()))


def _value_source(r: _Reader, key: str, source: Any) -> str:
    """'train.<field>' (the run summary) or '<metric>' / '<metric>.<field>' (a score file)."""
    source = r.value(source, key, str)
    head, _, tail = source.partition(".")
    if head == "train":
        if tail not in TRAIN_FIELDS:
            r.fail(key, f"unknown run summary field '{tail}'; expected one of {', '.join(TRAIN_FIELDS)}")
        return source
    from pipeline.evaluate.metrics import metrics
    if head not in metrics():
        r.fail(key, f"unknown value source '{source}'; expected train.<field> or a metric "
                    f"({', '.join(metrics())}), optionally .<field>")
    return source
