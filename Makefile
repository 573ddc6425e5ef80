# make run   — set up, then build hao2019 Table 3 at the tiny scale on this machine's CPU and print it
# make test  — set up, then the whole test suite (as root it also installs Slurm + munge from Debian)
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(abspath $(VENV))/bin
export PATH := $(BIN):$(PATH)
TABLE ?= results/hao2019/table3.tsv

.PHONY: venv run test sync clean-artifacts

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e .
	touch $@

run: venv
	snakemake --profile workflows/profiles/local $(TABLE)
	@cat $(TABLE:.tsv=.md)

test: venv
	pytest -ra --durations=15

# after `dvc pull` / `dvc checkout`: re-stamp Snakemake's view so nothing retrains
sync: venv
	bash workflows/sync_after_pull.sh

clean-artifacts:
	rm -rf artifacts/tiny .snakemake
