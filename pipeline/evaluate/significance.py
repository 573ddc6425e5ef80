"""Paired bootstrap resampling (Koehn 2004) via sacrebleu's PairedTest API, BLEU only."""
from __future__ import annotations

import contextlib
import os
from typing import Iterator

from sacrebleu.metrics import BLEU
from sacrebleu.significance import PairedTest

from pipeline.errors import PipelineError
from pipeline.evaluate.bleu import check_aligned, check_tokenize

_SEED_VAR = "SACREBLEU_SEED"


@contextlib.contextmanager
def _sacrebleu_seed(seed: int) -> Iterator[None]:
    """sacrebleu 2.6 reads its RNG seed only from SACREBLEU_SEED; set it for this block."""
    old = os.environ.get(_SEED_VAR)
    os.environ[_SEED_VAR] = str(seed)
    try:
        yield
    finally:
        if old is None:
            del os.environ[_SEED_VAR]
        else:
            os.environ[_SEED_VAR] = old


def paired_bootstrap(refs: list[str], baseline: list[str], system: list[str], *, n_samples: int = 1000,
                     seed: int = 12345, tokenize: str = "13a") -> dict:
    """Is `system`'s BLEU different from `baseline`'s? Same resamples for both systems.

    Returns plain floats: {"p_value", "baseline_score", "system_score", "mean", "ci" (system's
    bootstrap mean and 95% half-width), "n_samples", "seed", "signature"}.
    Our choice: an observed difference of exactly 0 gives p_value 1.0 (sacrebleu 2.6 returns
    1/(n_samples+1) for identical systems, as it counts strictly larger centred differences).
    """
    check_tokenize(tokenize)
    check_aligned(refs=refs, baseline=baseline, system=system)
    if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < 1:
        raise PipelineError(f"n_samples: expected a positive integer, got {n_samples!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 1:
        # sacrebleu treats seed 0 as "unseeded", which would make p-values irreproducible.
        raise PipelineError(f"seed: expected a positive integer, got {seed!r}")
    with _sacrebleu_seed(seed):
        test = PairedTest([("baseline", list(baseline)), ("system", list(system))],
                          {"BLEU": BLEU(tokenize=tokenize)}, references=[list(refs)],
                          test_type="bs", n_samples=n_samples)
        signatures, results = test()
    base, sys_ = results["BLEU"]
    p_value = 1.0 if sys_.score == base.score else float(sys_.p_value)
    return {
        "p_value": p_value,
        "baseline_score": float(base.score),
        "system_score": float(sys_.score),
        "mean": float(sys_.mean),
        "ci": float(sys_.ci),
        "n_samples": n_samples,
        "seed": seed,
        "signature": signatures["BLEU"].format(),
    }
