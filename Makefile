# One-command set-up: a virtual environment with the package and its test tools.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# Search a pipeline for scikit-learn's breast-cancer data for 30 s; prints it with its scores.
demo: $(STAMP)
	$(BIN)/admm-automl fit --dataset breast_cancer --time-budget 30 --seed 0

# The whole test suite (under 10 minutes on 2 cores).
test: $(STAMP)
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache
