#!/usr/bin/env python
"""Paired bootstrap (1000 samples, 3000 sentences, 2 systems): our test on per-sentence statistics against
sacreBLEU's PairedTest on the text; prints both p-values and wall times.

    python benchmarks/bootstrap.py [--sentences 3000] [--samples 1000]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=3000)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=12345)
    args = parser.parse_args()

    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest

    from pipeline.evaluate.metrics import get_metric
    from pipeline.evaluate.significance import run_test
    from sentences import corpus, noisy

    refs = corpus(1, args.sentences)
    baseline, system = noisy(refs, 11, 0.45), noisy(refs, 12, 0.43)
    metric = get_metric("sacrebleu")

    began = time.perf_counter()
    stats = [metric.score(lines, [refs], "en")["stats"] for lines in (baseline, system)]
    scored = time.perf_counter()
    ours = run_test("paired_bootstrap", metric, *stats, n_samples=args.samples, seed=args.seed)
    tested = time.perf_counter()

    os.environ["SACREBLEU_SEED"] = str(args.seed)
    began_sb = time.perf_counter()
    _, results = PairedTest([("baseline", baseline), ("system", system)], {"BLEU": BLEU()}, references=[refs],
                            test_type="bs", n_samples=args.samples)()
    sb_s = time.perf_counter() - began_sb
    for key, value in [
        ("ours_p_value", f"{ours['p_value']:.6f}"), ("sacrebleu_p_value", f"{results['BLEU'][1].p_value:.6f}"),
        ("ours_bleu_delta", f"{ours['delta']:.4f}"),
        ("ours_score_s", f"{scored - began:.2f}"), ("ours_test_s", f"{tested - scored:.2f}"),
        ("ours_total_s", f"{tested - began:.2f}"), ("sacrebleu_total_s", f"{sb_s:.2f}"),
        ("speedup", f"{sb_s / (tested - began):.2f}"),
    ]:
        print(f"{key}={value}")


if __name__ == "__main__":
    main()
