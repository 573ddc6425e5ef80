#!/usr/bin/env bash
# (a, b) Our trainer and beam search against fairseq's, back to back on this machine: the peer's
# ../shared/benchmarks/peer-fairseq/peer_train.sh (its venv made once by peer_setup.sh, ~6 min), then
# benchmarks/nmt_speed.py on the same corpus and model. Prints both sides' key=value lines and the ratios.
#   bash benchmarks/side_by_side.sh            # UPDATES=500 THREADS=nproc
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PEER=${PEER:-$HERE/../../shared/benchmarks/peer-fairseq}
PY=${PYTHON:-python}
OUT=${TMPDIR:-/tmp}/side_by_side
mkdir -p "$OUT"
export UPDATES=${UPDATES:-500} THREADS=${THREADS:-$(nproc)}
VENV=${VENV:-${TMPDIR:-/tmp}/venv-peer-fairseq}
[ -x "$VENV/bin/fairseq-train" ] || VENV=$VENV bash "$PEER/peer_setup.sh"
echo "== fairseq ($(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg))"
VENV=$VENV WORK=$OUT/peer bash "$PEER/peer_train.sh" > "$OUT/peer.log" 2>&1 || { tail -30 "$OUT/peer.log"; exit 1; }
grep -E '^[a-z_]+=' "$OUT/peer.log" | tee "$OUT/peer.txt"
echo "== ours ($(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg))"
"$PY" "$HERE/nmt_speed.py" --updates "$UPDATES" --threads "$THREADS" --work "$OUT/ours" 2> "$OUT/ours.log" \
  | tee "$OUT/ours.txt"
"$PY" - "$OUT" <<'PY'
import json, math, re, sys
out = sys.argv[1]
def kv(path):
    return dict(line.strip().split("=", 1) for line in open(path) if "=" in line)
peer, ours = kv(f"{out}/peer.txt"), kv(f"{out}/ours.txt")
# fairseq logs nll_loss in bits (base 2); the last train_inner line covers the last 10 updates, as ours does
inner = [json.loads(m.group(1)) for m in re.finditer(r"\| train_inner \| (\{.*\})", open(f"{out}/peer/train.log").read())]
peer_nll = float(inner[-1]["nll_loss"]) * math.log(2)
print(f"peer_train_final_nll_nats={peer_nll:.4f}")
print(f"train_speed_ratio={float(ours['train_tokens_per_s']) / float(peer['train_tokens_per_s']):.2f}")
print(f"decode_speed_ratio={float(ours['decode_sent_per_s']) / float(peer['decode_sent_per_s']):.2f}")
print(f"bleu_difference={float(ours['bleu']) - float(peer['bleu']):+.2f}")
print(f"nll_difference_nats={float(ours['train_final_nll']) - peer_nll:+.4f}")
PY
