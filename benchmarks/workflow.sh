#!/usr/bin/env bash
# (e) the no-op `snakemake -n` over every target (the `all` rule: every table and figure), in this checkout;
# (f) `make run` wall time in a fresh clone of this checkout (first run: trains Table 3; second: nothing to do);
# the whole tiny build of one paper (every table and figure) in a fresh clone, and what it ran.
#   bash benchmarks/workflow.sh noop             # seconds, a few
#   bash benchmarks/workflow.sh make-run         # ~15 min on 2 cores (needs ../shared beside the clone: a symlink)
#   bash benchmarks/workflow.sh paper hao2019    # the paper's whole tiny build; the results are compared too
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
seconds() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$@"; }
case "${1:-noop}" in
  noop)
    cd "$ROOT"
    start=$(date +%s.%N)
    snakemake -n --profile workflows/profiles/local all > "${TMPDIR:-/tmp}/snakemake_noop.log" 2>&1
    echo "snakemake_dry_run_all_s=$(seconds "$start" "$(date +%s.%N)")"
    echo "snakemake_dry_run_jobs=$(grep -cE '^(local)?rule ' "${TMPDIR:-/tmp}/snakemake_noop.log" || true)" ;;
  make-run)
    work=$(mktemp -d)
    git clone -q "$ROOT" "$work/main"
    ln -s "$(cd "$ROOT/../shared" && pwd)" "$work/shared"
    cd "$work/main"
    for attempt in first second; do
      start=$(date +%s.%N)
      status=0
      make run > "$work/make_run_$attempt.log" 2>&1 || status=$?  # non-zero: the build failed
      echo "make_run_${attempt}_s=$(seconds "$start" "$(date +%s.%N)") exit=$status"
    done
    echo "systems_trained_first=$(grep -cE '^(local)?rule train:' "$work/make_run_first.log" || true)"
    echo "log_dir=$work" ;;
  paper)
    paper=${2:?usage: $0 paper <paper, e.g. hao2019>}
    work=$(mktemp -d)
    git clone -q "$ROOT" "$work/main"
    ln -s "$(cd "$ROOT/../shared" && pwd)" "$work/shared"
    cd "$work/main"
    make venv > "$work/venv.log" 2>&1
    export PATH="$work/main/.venv/bin:$PATH"  # the rules' python is the clone's (make does the same)
    targets=$(git ls-files "results/tiny/$paper/*.tsv")
    start=$(date +%s.%N)
    status=0
    snakemake --profile workflows/profiles/local --forcerun table figure -- $targets \
      > "$work/build.log" 2>&1 || status=$?
    echo "paper=$paper build_s=$(seconds "$start" "$(date +%s.%N)") exit=$status"
    echo "systems_trained=$(grep -cE '^(local)?rule train:' "$work/build.log" || true)" \
         "jobs=$(grep -cE '^(local)?rule ' "$work/build.log" || true)"
    [ "$status" = 0 ] || { tail -20 "$work/build.log"; exit "$status"; }
    for table in $targets; do  # which committed tables the build reproduced
      git show "HEAD:$table" > "$work/committed.tsv"
      python -m pipeline compare --strict --committed "$work/committed.tsv" --rebuilt "$table" > /dev/null 2>&1 \
        && echo "$table identical" || echo "$table differs"
    done
    echo "log_dir=$work" ;;
  *) echo "usage: $0 noop|make-run|paper <paper>" >&2; exit 2 ;;
esac
