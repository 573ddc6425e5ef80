#!/usr/bin/env bash
# After `dvc pull` / `dvc checkout` / `dvc exp apply`: make Snakemake agree with DVC, so nothing retrains.
# DVC restores files in arbitrary mtime order and Snakemake's .snakemake/metadata is absent (fresh clone) or
# describes another state. If, and only if, DVC says the workspace matches dvc.lock, re-stamp the DAG:
# --touch sets mtimes in DAG order and rewrites the metadata. Targets default to every table in params.yaml.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -gt 0 ]; then targets=("$@"); else mapfile -t targets < <(python -m pipeline targets); fi
# one line where they disagree: stages never run through DVC (no record) apart from those that differ from their record
dvc status --json | python -m pipeline.dvc_records
snakemake --touch --cores 1 --quiet all -- "${targets[@]}"
dry=$(snakemake -n all -- "${targets[@]}" 2>&1) || true
if ! grep -q "Nothing to be done" <<< "$dry"; then
  echo "sync_after_pull: snakemake still sees work to do for ${targets[*]}; its jobs and reasons:" >&2
  grep -E "^(local)?rule |^ +(output|reason):" <<< "$dry" >&2 || echo "$dry" >&2
  exit 1
fi
echo "sync_after_pull: snakemake and dvc agree; up to date: ${targets[*]}"
