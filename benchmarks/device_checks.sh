#!/usr/bin/env bash
# The GPU measurements the open issues need, in one run on a GPU machine (DEVELOPERS.md: such a machine is at hand
# only at times, for 15 minutes a task), about 7 minutes on one H100/H200. benchmarks/gpu.py: training (whole
# batch and one rank's 4k tokens) and beam search of each family with every speed-up, the A/B of each speed-up on
# Transformer-Base, without speed-ups for the others, 300 updates of Base with and without them (learning
# unchanged), and transformers' MarianMTModel beside Base and Big. Each step has its own time limit and writes its
# JSON as it goes, so a step that runs long costs only itself.
#   bash benchmarks/device_checks.sh OUT_DIR            # on the GPU machine
#   PYTHON=.venv/bin/python bash benchmarks/device_checks.sh OUT_DIR --quick   # tiny scale on the CPU, first
set -uo pipefail
out=${1:?usage: benchmarks/device_checks.sh OUT_DIR [--quick]}
shift
mkdir -p "$out"
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
# what the GPU machine's image lacks travels as wheels in .whl/ (polib: pip download --no-deps -d .whl polib==1.2.0)
if compgen -G ".whl/*.whl" > /dev/null; then
    "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv || echo "no nvidia-smi"; } \
    > "$out/gpu.csv" 2>&1
steps=${STEPS:-base big-search rnn big learning cpu-probe}  # STEPS="base rnn": only those
step() {  # step NAME LIMIT_S ARGS...: benchmarks/gpu.py with ARGS, its JSON and log under $out
    local name=$1 limit=$2
    shift 2
    [[ " $steps " == *" $name "* ]] || return 0
    echo "== $name (limit ${limit}s)"
    timeout "$limit" "$py" benchmarks/gpu.py "$@" --output "$out/$name.json" > "$out/$name.log" 2>&1
    echo "exit $? after ${SECONDS}s"
    grep -E "^(setup|train|search|peer|learning|error)" "$out/$name.log" | cut -c1-400
}
step base 140 --families transformer-base --layouts whole rank --ablate --ablate-each --steps 30 "$@"
step big-search 45 --families transformer-big --no-train --sentences 512 "$@"
step rnn 105 --families dl4mt rnmt lstm-residual --ablate --no-peer --no-search --steps 8 --repeats 2 "$@"
step big 150 --families transformer-big --layouts whole rank --ablate --steps 30 --sentences 512 "$@"
step learning 200 --families transformer-base --learning 300 --no-search --no-peer --steps 5 --repeats 1 "$@"
# the host CPU's bits of single ops on the portable path, its fixed-order products (pipeline/fixed_gemm.c) among them
# (docs/performance.md (n)):
# compare with benchmarks/results/cross_isa_probe_amd_epyc.json (python benchmarks/cross_isa.py --compare-probes A B)
if [[ " $steps " == *" cpu-probe "* ]]; then
    echo "== cpu-probe"
    env CUDA_VISIBLE_DEVICES= OMP_NUM_THREADS=1 ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=COMPATIBLE ONEDNN_MAX_CPU_ISA=AVX2 PIPELINE_GEMM=fixed \
        timeout 120 "$py" benchmarks/cross_isa.py --probe > "$out/cross_isa_probe.json" 2> "$out/cpu-probe.log"
    echo "exit $? after ${SECONDS}s"
fi
