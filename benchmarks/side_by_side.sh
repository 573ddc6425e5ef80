#!/usr/bin/env bash
# (a, b) Our trainer and beam search against fairseq's, back to back on this machine: the peer's
# ../shared/benchmarks/peer-fairseq/peer_train.sh (its venv made once by peer_setup.sh, ~6 min), then
# benchmarks/nmt_speed.py on the same corpus and model, for each of three seeds. Prints both sides' key=value lines,
# each side's mean and spread, the speed ratios of the means, and whether the BLEU and NLL spreads overlap.
#   bash benchmarks/side_by_side.sh            # UPDATES=500 THREADS=nproc SEEDS="1 2 3"
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PEER=${PEER:-$HERE/../../shared/benchmarks/peer-fairseq}
PY=${PYTHON:-python}
OUT=${TMPDIR:-/tmp}/side_by_side
mkdir -p "$OUT"
export UPDATES=${UPDATES:-500} THREADS=${THREADS:-$(nproc)}
SEEDS=${SEEDS:-1 2 3}   # model initialisation, dropout and batch order on each side; the same corpus
VENV=${VENV:-${TMPDIR:-/tmp}/venv-peer-fairseq}
[ -x "$VENV/bin/fairseq-train" ] || VENV=$VENV bash "$PEER/peer_setup.sh"
for seed in $SEEDS; do   # interleaved, so that both sides see the same machine
  echo "== fairseq, seed $seed ($(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg))"
  VENV=$VENV WORK=$OUT/peer-$seed SEED=$seed bash "$PEER/peer_train.sh" > "$OUT/peer-$seed.log" 2>&1 \
    || { tail -30 "$OUT/peer-$seed.log"; exit 1; }
  grep -E '^[a-z_]+=' "$OUT/peer-$seed.log" | tee "$OUT/peer-$seed.txt"
  echo "== ours, seed $seed ($(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg))"
  # float32 as fairseq's side: `auto` takes bfloat16 where the CPU has it (an AMD EPYC Zen 4 does)
  "$PY" "$HERE/nmt_speed.py" --updates "$UPDATES" --threads "$THREADS" --seed "$seed" --precision float32 \
    --work "$OUT/ours-$seed" 2> "$OUT/ours-$seed.log" | tee "$OUT/ours-$seed.txt"
done
"$PY" - "$OUT" $SEEDS <<'PY'
import json, math, re, statistics, sys
out, seeds = sys.argv[1], sys.argv[2:]
def kv(path):
    return dict(line.strip().split("=", 1) for line in open(path) if "=" in line)
def peer_nll(seed):
    # fairseq logs nll_loss in bits (base 2); the last train_inner line covers the last 10 updates, as ours does
    log = open(f"{out}/peer-{seed}/train.log").read()
    inner = [json.loads(m.group(1)) for m in re.finditer(r"\| train_inner \| (\{.*\})", log)]
    return float(inner[-1]["nll_loss"]) * math.log(2)
sides = {"ours": [kv(f"{out}/ours-{s}.txt") for s in seeds], "peer": [kv(f"{out}/peer-{s}.txt") for s in seeds]}
values = {
    "train_tokens_per_s": {side: [float(r["train_tokens_per_s"]) for r in runs] for side, runs in sides.items()},
    "decode_sent_per_s": {side: [float(r["decode_sent_per_s"]) for r in runs] for side, runs in sides.items()},
    "bleu": {side: [float(r["bleu"]) for r in runs] for side, runs in sides.items()},
    "train_final_nll_nats": {"ours": [float(r["train_final_nll"]) for r in sides["ours"]],
                             "peer": [peer_nll(s) for s in seeds]},
}
print(f"seeds={','.join(seeds)}")
for name, by_side in values.items():
    for side, xs in by_side.items():
        print(f"{side}_{name}={statistics.mean(xs):.4g} (min {min(xs):.4g}, max {max(xs):.4g}: "
              f"{' '.join(f'{x:.4g}' for x in xs)})")
for name in ("train_tokens_per_s", "decode_sent_per_s"):
    print(f"{name.split('_')[0]}_speed_ratio={statistics.mean(values[name]['ours']) / statistics.mean(values[name]['peer']):.2f}")
for name in ("bleu", "train_final_nll_nats"):   # the two sides' spreads overlap: no difference the seeds cannot explain
    o, p = values[name]["ours"], values[name]["peer"]
    print(f"{name}_spreads_overlap={'yes' if max(min(o), min(p)) <= min(max(o), max(p)) else 'no'} "
          f"(difference of means {statistics.mean(o) - statistics.mean(p):+.4g})")
PY
