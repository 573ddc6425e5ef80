#!/usr/bin/env bash
# make run: rebuild a table from scratch where nothing is built yet (a fresh clone trains every system of it), then
# say whether the rebuilt table equals the committed one. The committed results/ would satisfy Snakemake as they
# are ("Nothing to be done"), so the table step is forced; everything it needs that is missing is built first.
# A second run retrains nothing: only the table step reruns.
set -euo pipefail
cd "$(dirname "$0")/.."
table=${1:?usage: workflows/run.sh results/tiny/PAPER/TABLE.tsv, as make run passes its TABLE}
committed=$(mktemp)
trap 'rm -f "$committed"' EXIT
if git cat-file -e "HEAD:$table" 2>/dev/null; then
  git show "HEAD:$table" > "$committed"
elif [ -f "$table" ]; then
  cp "$table" "$committed"
fi
started=$(date +%s)
snakemake=(snakemake --profile workflows/profiles/local --forcerun table figure)
dry=$("${snakemake[@]}" -n -- "$table" 2>&1) || { echo "$dry" >&2; exit 1; }
python -m pipeline plan "$table" --dry-run - <<< "$dry"   # what runs and why; which systems remain to train
"${snakemake[@]}" -- "$table"
echo "built $table in $(( $(date +%s) - started )) s"
cat "${table%.tsv}.md" 2>/dev/null || true
python -m pipeline compare --committed "$committed" --rebuilt "$table"
