"""Wall time and peak memory of learn-bpe at paper settings on corpora with a realistic growth of word types, and
their extrapolation to paper-scale corpora (4.5 and 40 million sentence pairs).

learn-bpe (pipeline/data/subword.py, subword-nmt's learn_bpe) counts the words of its input in one pass and then
runs its merges over the word TYPES: its memory (the vocabulary, the pair statistics and their index, a deep copy
of the statistics) and most of its time grow with the number of types and the merges, not with the lines. A
corpus of made-up words drawn from a fixed 50,000-word list (benchmarks/preprocess_memory.py) never has more than
50,000 types, so it cannot stand in. This script generates each side's tokens with Simon's model (Simon 1955, with
the decaying rate of new words of Zanette and Montemurro 2005): token t is a new type with probability
K * beta * t^(beta - 1), else a copy of an earlier token drawn uniformly (so frequent types get more frequent: a
Zipf-like rank-frequency law). The expected number of types after n tokens is then Heaps' law K * n^beta.

Calibration (the anchor and the exponent; see docs/performance.md (l)):
  - anchor: Sennrich et al. (2016, ACL, "Neural Machine Translation of Rare Words with Subword Units"), Table 1:
    the German side of WMT15 English-German's training data (about 4.2 million pairs, tokenised) has about 100
    million tokens and 1.75 million word types. So: 24 tokens a line on average, and V(1e8) = 1.75e6.
  - beta = 0.6: an assumption (textbook values of Heaps' exponent lie between 0.4 and 0.6, e.g. Baeza-Yates and
    Ribeiro-Neto, Modern Information Retrieval; crawled text with its names, numbers and noise sits high, and from
    the anchor a larger beta gives a 40-million-pair corpus more types: the upper end errs on the side of memory).
    Then K = 1.75e6 / 1e8^0.6 = 27.7.
  - both sides follow the German law (English has fewer types: conservative), and the sides' spellings come from
    different syllable inventories, so a joint vocabulary holds nearly the sum of both sides' types (conservative).
  - type spellings: words formed as text forms them (see LANGUAGES below): stems reused with prefixes, suffixes
    and, on the German-like side, in compounds, frequent types short and rare ones long; the first types are
    punctuation, 3% of the types numbers, part of them capitalised.

learn-bpe runs as the rule runs it (`python -m pipeline learn-bpe --langs src tgt --inputs ... --merges 32000
--joint`, one process, one thread), once with 1 merge (start-up, reading, counting, the first pair statistics) and
once with all merges; each run's wall and CPU time (the machine is shared: CPU time is what a job with a core of its
own takes) and peak resident memory (os.wait4's ru_maxrss) are recorded. The extrapolation (fit() below): counting
linear in the tokens; the merges as a fitted power of the types and as a linear upper bound; peak memory linear in
the types held (the joint vocabulary's), each evaluated at the types Heaps' law gives 4.5 and 40 million pairs:

    python benchmarks/learn_bpe_scaling.py --output benchmarks/results/learn_bpe_scaling.json
    python benchmarks/learn_bpe_scaling.py --pairs 20000 40000 --merges 2000     # a quick check
    python benchmarks/learn_bpe_scaling.py --refit benchmarks/results/learn_bpe_scaling.json   # fit again
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

TOKENS_PER_LINE = 24.0            # Sennrich et al. 2016, Table 1: ~100M tokens over ~4.2M lines (German side)
ANCHOR_TOKENS, ANCHOR_TYPES = 1e8, 1.75e6
BETA = 0.6                        # assumption (see the module docstring)
K = ANCHOR_TYPES / ANCHOR_TOKENS ** BETA
TARGETS = {"WMT14 En-De (4.5M pairs)": 4_500_000, "40M pairs (WMT14 En-Fr, WMT17 Zh-En with UN)": 40_000_000}
PUNCTUATION = [".", ",", "&quot;", "-", ":", "(", ")", "&apos;s", "?", ";", "!", "/", "&apos;", "%", "&amp;"]

# Word formation of a German-like (src) and an English-like (tgt) side: stems of syllables (onset, vowel, coda),
# prefixes, suffixes and, for the German-like side, compounds of two or three stems with a linking s or n. Real
# vocabularies reuse stems and affixes (a few hundred thousand stems behind 1.75 million German types); words of
# syllables drawn at random would give far more distinct character pairs than text has, and with them far more
# work per merge.
LANGUAGES = {
    "de": {"onsets": ["", "b", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "w", "z", "sch", "st",
                      "tr", "ch", "br", "gr", "sp", "pf", "v", "fl", "kr", "schl", "str"],
           "vowels": ["a", "e", "i", "o", "u", "ä", "ö", "ü", "ei", "au", "ie", "eu"],
           "codas": ["", "", "", "n", "r", "s", "t", "l", "ch", "ng", "m", "rt", "ck", "nd", "st", "tz", "ft", "cht"],
           "prefixes": ["", "", "", "", "", "", "ge", "ver", "be", "er", "ent", "zer", "un", "an", "auf", "aus", "ein",
                        "mit", "vor", "nach", "ab", "zu", "über", "unter"],
           "suffixes": ["", "", "", "en", "e", "er", "es", "n", "s", "t", "te", "ten", "st", "ung", "ungen", "lich",
                        "liche", "lichen", "keit", "heit", "ig", "igen", "isch", "ische", "ischen", "bar", "los",
                        "schaft", "em", "ern", "chen"],
           "compound": 0.3, "link": ["", "", "s", "n", "es", "en"], "capital": 0.4},
    "en": {"onsets": ["", "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "y",
                      "th", "sh", "wh", "pr", "cl", "qu", "st", "tr", "gr", "bl"],
           "vowels": ["a", "e", "i", "o", "u", "y", "ea", "ou", "oo", "ai", "ee", "io"],
           "codas": ["", "", "", "n", "r", "s", "t", "l", "ng", "m", "ck", "nt", "ss", "ght", "nd", "st", "rk", "ct"],
           "prefixes": ["", "", "", "", "", "", "", "un", "re", "dis", "pre", "in", "over", "under", "non", "co",
                        "de", "mis", "inter", "sub"],
           "suffixes": ["", "", "", "s", "ed", "ing", "er", "ers", "ly", "ion", "ions", "al", "ness", "ment",
                        "ments", "able", "ity", "es", "est", "ive", "ful", "less", "ic", "ism", "ist", "ize", "ized"],
           "compound": 0.04, "link": ["-"], "capital": 0.2},
}
PREFIX_RATE = 0.25  # of the types that are no compound


def heaps_types(pairs: float) -> float:
    """Expected types of one side of `pairs` lines (Heaps' law as calibrated above)."""
    return K * (pairs * TOKENS_PER_LINE) ** BETA


def simon_tokens(n: int, rng: np.random.Generator) -> np.ndarray:
    """Type ids of n tokens from Simon's model with Heaps' law K * n^beta (ids in order of first appearance)."""
    t = np.arange(1, n + 1, dtype=np.float64)
    new = rng.random(n) < np.minimum(1.0, K * BETA * t ** (BETA - 1))
    new[0] = True
    index = np.arange(n, dtype=np.int64)
    parent = np.where(new, index, (rng.random(n) * index).astype(np.int64))  # a copy of a uniform earlier token
    while True:  # pointer jumping: every token to the new-type token its chain of copies starts at
        jumped = parent[parent]
        if np.array_equal(jumped, parent):
            break
        parent = jumped
    return (np.cumsum(new) - 1)[parent].astype(np.int32)


def _zipf_choice(rng: np.random.Generator, n: int, size: int, exponent: float = 1.0) -> np.ndarray:
    """`size` draws of ranks 0..n-1 with probability proportional to (rank + 1)^-exponent."""
    cumulative = np.cumsum(1.0 / np.arange(1, n + 1) ** exponent)
    return np.searchsorted(cumulative, rng.random(size) * cumulative[-1])


def spellings(types: int, lang: str, rng: np.random.Generator) -> list[str]:
    """Distinct made-up spellings for type ids 0..types-1 in order of first appearance: the first are punctuation,
    3% numbers, the others prefix + stem(s) + suffix, with frequent stems first (frequent words short, rare ones
    long: compounds and rare stems)."""
    spec = LANGUAGES[lang]
    syllables = [o + v + c for o in spec["onsets"] for v in spec["vowels"] for c in spec["codas"]]
    rng.shuffle(syllables)
    stems_n = max(1000, types // 4)
    lengths = 1 + np.minimum(2, rng.poisson(0.12 * np.log10(np.arange(stems_n) + 10)))  # frequent stems short
    picks = _zipf_choice(rng, len(syllables), (stems_n, 3), 0.7)
    stems, seen = [], set()
    for i in range(stems_n):
        stem = "".join(syllables[j] for j in picks[i, :lengths[i]])
        while stem in seen:
            stem += syllables[int(rng.integers(len(syllables)))]
        seen.add(stem)
        stems.append(stem)
    # each type draws its parts from Zipf laws; a spelling already taken is drawn again with a rarer stem or as a
    # compound, so later (rarer) types are longer
    def endless(draw):
        while True:
            yield from draw(1 << 16).tolist()

    stem_draws = endless(lambda n: _zipf_choice(rng, stems_n, n, 0.9))
    prefix_draws = endless(lambda n: _zipf_choice(rng, len(spec["prefixes"]), n, 0.8))
    suffix_draws = endless(lambda n: _zipf_choice(rng, len(spec["suffixes"]), n, 0.8))
    link_draws = endless(lambda n: rng.integers(0, len(spec["link"]), n))
    coins = endless(rng.random)
    numbers = np.where(rng.random(types) < 0.03, rng.integers(0, 10 ** rng.integers(1, 7, types)), -1)
    capital = rng.random(types) < spec["capital"]
    seen, words = set(PUNCTUATION), list(PUNCTUATION[:types])
    for k in range(len(words), types):
        if numbers[k] >= 0 and str(numbers[k]) not in seen:
            word = str(numbers[k])
        else:
            attempt = 0
            while True:
                stem = stems[next(stem_draws)]
                if attempt > 3 or next(coins) < spec["compound"] * min(1.0, k / 200_000):
                    parts = [stems[next(stem_draws)] for _ in range(1 + (attempt > 6))]
                    stem = spec["link"][next(link_draws)].join([stem, *parts])
                elif k > 300 and next(coins) < PREFIX_RATE:
                    stem = spec["prefixes"][next(prefix_draws)] + stem
                word = stem + (spec["suffixes"][next(suffix_draws)] if k > 300 else "")
                if capital[k]:
                    word = word[:1].upper() + word[1:]
                if word not in seen:
                    break
                attempt += 1
        seen.add(word)
        words.append(word)
    return words


def generate(directory: Path, pairs: int, seed: int = 1) -> dict:
    """train.src (German-like) and train.tgt (English-like) of `pairs` lines; their token and type counts."""
    rng = np.random.default_rng(seed)
    lengths = np.clip(rng.gamma(4.0, TOKENS_PER_LINE / 4.0, pairs).round().astype(np.int64), 1, 250)
    ends = np.cumsum(lengths)
    counts, vocabularies = {}, {}
    for side, lang in (("src", "de"), ("tgt", "en")):
        ids = simon_tokens(int(ends[-1]), rng)
        words = np.array(spellings(int(ids.max()) + 1, lang, rng), dtype=object)
        tokens = words[ids]
        with open(directory / f"train.{side}", "w", encoding="utf-8") as out:
            start = 0
            for end in ends:
                out.write(" ".join(tokens[start:end]) + "\n")
                start = end
        counts[side] = {"tokens": int(ends[-1]), "types": int(ids.max()) + 1,
                        "mean_type_chars": round(float(np.mean([len(w) for w in words])), 2)}
        vocabularies[side] = set(words)
    joint = len(vocabularies["src"] | vocabularies["tgt"])
    return {"sides": counts, "joint_types": joint}


def learn_bpe(directory: Path, merges: int, joint: bool) -> dict:
    """`python -m pipeline learn-bpe` as the rule runs it: wall and CPU seconds (user + system: what the job would
    take on a core of its own; this machine is shared), peak resident memory (MB), merges learnt."""
    codes = directory / f"codes-{merges}"
    argv = [sys.executable, "-m", "pipeline", "learn-bpe", "--langs", "src", "tgt", "--inputs",
            str(directory / "train.src"), str(directory / "train.tgt"), "--codes-dir", str(codes), "--merges",
            str(merges), *(["--joint"] if joint else [])]
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"})
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"learn-bpe failed (status {status})")
    learnt = {p.name: sum(1 for _ in open(p, encoding="utf-8")) - 1 for p in sorted(codes.glob("codes*"))}
    return {"seconds": round(seconds, 1), "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
            "peak_mb": round(usage.ru_maxrss / 1024, 1), "merges_learnt": learnt}


def fit(results: list[dict], joint: bool, merges: int) -> dict:
    """The extrapolation: CPU seconds = s0 + a * tokens (start-up, reading and counting: the 1-merge run, linear in
    the tokens; it also holds the first pair statistics, which grow with the types: conservative) + the merges (the
    full run less the 1-merge run), both as fitted (c * types^g, least squares on logarithms; the small sizes' late
    merges are slowed by many pairs of equal low counts, which flattens g) and as an upper bound (linear from the
    largest size: every part of a merge's work, the words holding the pair, the new pairs, the statistics scanned,
    grows at most linearly in the types); peak MB = m0 + m * types (linear in the types held)."""
    held = np.array([r["joint_types"] if joint else max(s["types"] for s in r["sides"].values()) for r in results],
                    dtype=float)
    tokens = np.array([sum(s["tokens"] for s in r["sides"].values()) for r in results], dtype=float)
    setup = np.array([r["counting"]["cpu_seconds"] for r in results])
    loop = np.array([r["full"]["cpu_seconds"] for r in results]) - setup
    per_token, startup = np.polyfit(tokens, setup, 1)
    exponent, log_c = np.polyfit(np.log(held), np.log(loop), 1)
    slope, intercept = np.polyfit(held, [r["full"]["peak_mb"] for r in results], 1)
    out = {"counting_us_per_token": round(per_token * 1e6, 3), "startup_cpu_s": round(startup, 1),
           "merge_loop_exponent_in_types": round(exponent, 3),
           "merge_loop_cpu_s_at_1m_types": round(math.exp(log_c) * 1e6 ** exponent, 1),
           "mb_per_million_types": round(slope * 1e6, 1), "mb_at_zero_types": round(intercept, 1),
           "extrapolated": []}
    for name, pairs in TARGETS.items():
        per_side = heaps_types(pairs)
        types = 2 * per_side if joint else per_side
        count_s = startup + per_token * 2 * pairs * TOKENS_PER_LINE
        loop_s = math.exp(log_c) * types ** exponent * (1 if joint else 2)  # separate: one side after the other
        bound_s = loop[-1] * types / held[-1]  # every part of a merge's work grows at most linearly in the types
        out["extrapolated"].append({"corpus": name, "pairs": pairs, "merges": merges,
                                    "types_per_side": round(per_side), "types_held": round(types),
                                    "counting_minutes": round(count_s / 60, 1),
                                    "merge_minutes_fitted": round(loop_s / 60, 1),
                                    "merge_minutes_linear_bound": round(bound_s / 60, 1),
                                    "minutes_fitted": round((count_s + loop_s) / 60, 1),
                                    "minutes_bound": round((count_s + bound_s) / 60, 1),
                                    "peak_mb": round(intercept + slope * types)})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, nargs="+", default=[25_000, 50_000, 100_000])
    parser.add_argument("--merges", type=int, default=32_000)
    parser.add_argument("--separate", action="store_true", help="codes per side (zh-en) instead of joint (en-de)")
    parser.add_argument("--output", help="also write the results here (JSON)")
    parser.add_argument("--refit", metavar="JSON", help="measure nothing: fit the sizes of an earlier --output again")
    args = parser.parse_args()
    if args.refit:
        summary = json.loads(Path(args.refit).read_text(encoding="utf-8"))
        summary["fit"] = fit(summary["sizes"], summary["joint"], summary["merges"])
        Path(args.refit).write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(json.dumps(summary["fit"], indent=2))
        return
    joint, results = not args.separate, []
    for pairs in args.pairs:
        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp)
            start = time.perf_counter()
            corpus = generate(d, pairs)
            generated = time.perf_counter() - start
            results.append({"pairs": pairs, **corpus, "generate_seconds": round(generated, 1),
                            "counting": learn_bpe(d, 1, joint), "full": learn_bpe(d, args.merges, joint)})
        r = results[-1]
        print(f"pairs={pairs} tokens/side={r['sides']['src']['tokens']} types src={r['sides']['src']['types']} "
              f"tgt={r['sides']['tgt']['types']} joint={r['joint_types']} counting={r['counting']} "
              f"full={r['full']} (generated in {generated:.0f} s)", flush=True)
    summary = {"step": "learn-bpe", "merges": args.merges, "joint": joint, "threads": 1,
               "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, shared",
               "python": platform.python_version(),
               "model": {"tokens_per_line": TOKENS_PER_LINE, "heaps_beta": BETA, "heaps_k": round(K, 2),
                         "anchor": "Sennrich et al. 2016 (ACL), Table 1: German side of WMT15 En-De training data, "
                                   "about 100M tokens and 1.75M types (tokenised, unsegmented)",
                         "beta": "assumption", "sides": "both sides follow the anchor's law (conservative)"},
               "sizes": results}
    if len(results) >= 2:
        summary["fit"] = fit(results, joint, args.merges)
        for row in summary["fit"]["extrapolated"]:
            print(" ".join(f"{k}={v}" for k, v in row.items()))
    if args.output:
        Path(args.output).write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
