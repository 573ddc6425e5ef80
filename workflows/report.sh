#!/usr/bin/env bash
# make report: every table and figure in results/<scale>/ (params.yaml's scale) on one HTML page, Snakemake's own
# report (default artifacts/report.html). It shows them as they stand and builds nothing else: one page per table
# and figure (rule report_page: the table or the figure's PNG with its footer), then `snakemake --report`, which
# embeds them, one category per paper. A table or figure the params files define but results/<scale>/ lacks
# is named and left out: build it first. Needs no .snakemake metadata (a fresh clone's committed results are
# enough); where a build left metadata, the report's statistics show its jobs' runtimes.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-artifacts/report.html}
mkdir -p "$(dirname "$out")"
while read -r target; do
  [ -f "$target" ] || echo "report: $target is not built, so it is not in the report" >&2
done < <(python -m pipeline targets)
snakemake --cores all --quiet host progress --show-failed-logs --allowed-rules report_page report_pages -- report_pages
# every file the DAG names that no run recorded (all of them in a fresh clone) gets one warning: count them instead
snakemake --report "$out" -- report_pages 2>&1 | awk '/^Missing metadata for file/ {n++; next} {print}
  END {if (n) print n " files of the DAG have no Snakemake metadata (not built here): no runtimes for them"}'
echo "report: $out"
