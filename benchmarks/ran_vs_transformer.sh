#!/usr/bin/env bash
# (c) RAN-ALL against the Transformer: the same corpus, sizes and updates (benchmarks/nmt_speed.py), then beam-4
# decoding of the 500 test sentences; prints both decoding rates and their ratio (zeng2021 Figure 3's claim).
#   bash benchmarks/ran_vs_transformer.sh [UPDATES=300]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python}
UPDATES=${UPDATES:-300}
for attn in dot ran; do
  "$PY" "$HERE/nmt_speed.py" --updates "$UPDATES" --self-attn "$attn" --work "${TMPDIR:-/tmp}/nmt_ran_bench_$attn" \
    2>/dev/null | sed "s/^/$attn./"
done | tee "${TMPDIR:-/tmp}/ran_vs_transformer.txt"
"$PY" - "${TMPDIR:-/tmp}/ran_vs_transformer.txt" <<'PY'
import sys
v = dict(line.strip().split("=", 1) for line in open(sys.argv[1]) if "=" in line)
print(f"ran_over_transformer_decode={float(v['ran.decode_sent_per_s']) / float(v['dot.decode_sent_per_s']):.2f}")
print(f"ran_over_transformer_train={float(v['ran.train_tokens_per_s']) / float(v['dot.train_tokens_per_s']):.2f}")
PY
