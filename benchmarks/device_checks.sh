#!/usr/bin/env bash
# The GPU measurements still open, in one run on a GPU machine (DEVELOPERS.md: such a machine is at hand only at
# times, for 15 minutes a task): benchmarks/gpu.py (training and beam search beside transformers' MarianMTModel)
# and benchmarks/gpu_steps.py (each model step as the rules run it). About 10 minutes on one H100/H200.
#   bash benchmarks/device_checks.sh OUT_DIR            # on the GPU machine
#   PYTHON=.venv/bin/python bash benchmarks/device_checks.sh OUT_DIR --quick   # tiny scale on the CPU, first
set -euo pipefail
out=${1:?usage: benchmarks/device_checks.sh OUT_DIR [--quick]}
shift
mkdir -p "$out"
export PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || echo "no nvidia-smi"; } > "$out/gpu.csv" 2>&1
"${PYTHON:-python3}" benchmarks/gpu.py "$@" --output "$out/gpu.json" 2>&1 | tee "$out/gpu.log"
"${PYTHON:-python3}" benchmarks/gpu_steps.py "$@" --output "$out/gpu_steps.json" 2>&1 | tee "$out/gpu_steps.log"
