#!/usr/bin/env bash
# make run: rebuild a table from scratch where nothing is built yet (a fresh clone trains every system of it), then
# say whether the rebuilt table equals the committed one. The committed results/ would satisfy Snakemake as they
# are ("Nothing to be done"), so the table step is forced; everything it needs that is missing is built first.
# A second run retrains nothing: only the table step reruns. In a DVC repository what it built is recorded (dvc commit).
set -euo pipefail
cd "$(dirname "$0")/.."
# one build per workspace, stopped whole with make (pipeline/build_guard.py): a second run beside a live one is
# refused at once; a Snakemake lock a killed run left is removed
if [ -z "${PIPELINE_BUILD_GUARD:-}" ]; then
  PIPELINE_BUILD_GUARD=1 exec python -m pipeline.build_guard bash workflows/run.sh "$@"
fi
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
if [ -d .dvc ]; then   # record it in dvc.lock and DVC's cache: `dvc repro` reruns none of it, `dvc checkout` restores it
  dvc commit --force --with-deps --quiet "$(python -m pipeline targets --stage-of "$table")"
  echo "recorded in dvc.lock and DVC's cache: $table and everything it was built from"
fi
cat "${table%.tsv}.md" 2>/dev/null || true
if [ -s "$committed" ]; then
  python -m pipeline compare --committed "$committed" --rebuilt "$table"
else
  echo "no committed $table to compare with (not in git's HEAD)"
fi
