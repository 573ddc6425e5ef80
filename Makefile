# make run   — set up, then rebuild hao2019 Table 3 at the tiny scale on this CPU and compare it with the committed one
# make test  — set up, then the whole test suite (as root it also installs Slurm + munge from Debian)
# make test-fast — the unit tests only (no end-to-end runs): the inner loop
# make report — every table and figure in results/tiny/ on one HTML page (artifacts/report.html, Snakemake's report)
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(abspath $(VENV))/bin
export PATH := $(BIN):$(PATH)
TABLE ?= results/tiny/hao2019/table3.tsv
REPORT ?= artifacts/report.html

.PHONY: venv run test test-fast sync report clean-artifacts

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt workflows/fix_dvc_dry_run.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e .
	$(BIN)/python workflows/fix_dvc_dry_run.py
	touch $@

run: venv
	bash workflows/run.sh $(TABLE)

# one test process per core and one more: the end-to-end runs spend about a quarter of their time waiting (Slurm's
# polls, subprocesses); they are started first (tests/conftest.py)
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
test: venv
	pytest -ra --durations=15 -n $(TEST_WORKERS) --dist load --maxschedchunk 1

# the inner loop: everything but the end-to-end runs (Snakemake, DVC, Slurm), a few minutes
test-fast: venv
	pytest -ra -m "not slow" --durations=10

# after `dvc pull` / `dvc checkout`: re-stamp Snakemake's view so nothing retrains
sync: venv
	bash workflows/sync_after_pull.sh

# every table and figure in results/<scale>/, as they stand, on one HTML page: Snakemake's report (builds nothing else)
report: venv
	bash workflows/report.sh $(REPORT)

clean-artifacts:
	rm -rf artifacts/tiny .snakemake
