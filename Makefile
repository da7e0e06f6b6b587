# One-command set-up: a virtual environment with the package, its test tools, every extra (the
# benchmark's peers Optuna, FLAML and SMAC3, plotting, Dask for the Dask executor's tests on a
# loopback cluster, RBFOpt for the rbfopt θ-solver's tests), and Sphinx for the documentation
# site (`make docs`).
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test test-core test-fast lint docs smoke chromium autogluon clean

# The shared benchmark data (read in place, never copied); the smoke runs fall back to
# scikit-learn's bundled data or skip the scripts that need it when it is missing.
DATA_DIR ?= ../shared/data

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,experiments,docs]'
	touch $(STAMP)

install: $(STAMP)

# Search a pipeline for scikit-learn's breast-cancer data for 30 s; prints it with its scores.
demo: $(STAMP)
	$(BIN)/admm-automl fit --dataset breast_cancer --time-budget 30 --seed 0

# The whole test suite: spread over TEST_WORKERS processes (pytest-xdist), then the tests marked
# serial, which time themselves against deadlines, alone.
TEST_WORKERS ?= 2
test: $(STAMP)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) -m "not serial"
	$(BIN)/python -m pytest -m serial

# The bare core in a fresh venv, as `pip install admm-automl` without extras installs it: the
# fast tests (the timing ones are about the engine, not the install), of which those that need an
# extra are reported as skipped, naming it (tests/conftest.py); about 2 minutes to install and 2
# to test.
CORE_VENV ?= .venv-core
test-core:
	rm -rf $(CORE_VENV)
	$(PYTHON) -m venv $(CORE_VENV)
	$(CORE_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(CORE_VENV)/bin/python -m pip install --quiet . pytest pytest-timeout pytest-xdist
	ADMM_AUTOML_CORE_ONLY=1 $(CORE_VENV)/bin/pytest -n $(TEST_WORKERS) -m "not slow and not serial" \
		-p no:cacheprovider

# Everything but the tests marked slow, those above ~5 s each (about 3 minutes).
test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not slow"

# The layers of the package (pyproject.toml's import-linter contracts): no cycles, no upward import.
lint: $(STAMP)
	$(BIN)/lint-imports

# The documentation site (Sphinx: the API reference from the docstrings, docs/*.md, a page per
# paper) in docs/_build/html; any warning fails it. The API stubs are generated afresh each time.
# Built in .venv when `make install` (or test, demo, ...) made it; else in a venv of its own with
# the core and Sphinx only (`.[docs]`), not a second copy of every extra: the package imports
# without its extras, so autodoc needs none of them.
DOCS_VENV ?= $(if $(wildcard $(STAMP)),$(VENV),.venv-docs)
DOCS_STAMP := $(DOCS_VENV)/.installed-docs
$(DOCS_STAMP): pyproject.toml
	test -x $(DOCS_VENV)/bin/python || $(PYTHON) -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(DOCS_VENV)/bin/python -m pip install --quiet -e '.[docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	rm -rf docs/api/generated
	$(DOCS_VENV)/bin/sphinx-build -W --keep-going -b html docs docs/_build/html

# Every experiment script at a tiny budget, so none of them rots (results go to temporary folders).
smoke: $(STAMP)
	$(BIN)/python experiments/automl_benchmark.py smoke --data-dir $(DATA_DIR)
	$(BIN)/python experiments/theta_solvers.py --seeds 1 --budget 8 --real-budget 4 \
		--methods bo,skopt,rbfopt,random --problems branin,hartmann6
	$(BIN)/python experiments/probes.py --smoke
	tmp=$$(mktemp -d) && $(BIN)/python experiments/dask_throughput.py --smoke --out $$tmp && rm -rf $$tmp
	$(BIN)/python experiments/scale.py --smoke
	$(BIN)/python experiments/dask_cluster.py --smoke
	$(BIN)/python experiments/overhead.py --smoke
	$(BIN)/python experiments/overhead.py pending --smoke
	$(BIN)/python experiments/overhead.py workers --smoke
	$(BIN)/python experiments/time_budget.py --smoke
	$(BIN)/python experiments/import_time.py --smoke
	@if [ -d "$(DATA_DIR)" ]; then \
		tmp=$$(mktemp -d) && \
		$(BIN)/python experiments/reproduce/run.py --paper liu2020 --smoke --data-dir $(DATA_DIR) && \
		$(BIN)/python experiments/reproduce/run.py --paper blds --smoke --data-dir $(DATA_DIR) && \
		$(BIN)/python experiments/reproduce/run.py --paper flash --smoke --data-dir $(DATA_DIR) && \
		$(BIN)/python experiments/reproduce/run.py --paper blendsearch --smoke --data-dir $(DATA_DIR) && \
		$(BIN)/python experiments/reproduce/run.py --paper bapi --smoke --data-dir $(DATA_DIR) && \
		$(BIN)/python experiments/reproduce/fidelity_ratio.py --smoke --data-dir $(DATA_DIR) && \
		$(BIN)/python experiments/algorithm_selection.py --smoke --data-dir $(DATA_DIR) --out $$tmp/as && \
		$(BIN)/python experiments/constraints.py --smoke --data-dir $(DATA_DIR) --out $$tmp/c && \
		$(BIN)/python experiments/constrained.py --smoke --data-dir $(DATA_DIR) --out $$tmp/cs && \
		$(BIN)/python experiments/mitigation_cost.py --smoke --data-dir $(DATA_DIR) && \
		$(BIN)/python experiments/fairness_beside.py --smoke --data-dir $(DATA_DIR) && \
		$(BIN)/python experiments/portfolio.py --smoke --data-dir $(DATA_DIR) && \
		$(BIN)/python experiments/vs_automl.py --smoke --data-dir $(DATA_DIR) && \
		$(BIN)/python experiments/early_stopping.py --smoke --data-dir $(DATA_DIR) && \
		$(BIN)/python experiments/ensemble_layers.py --smoke --study bagging && \
		$(BIN)/python experiments/ensemble_layers.py --smoke --study check && \
		$(BIN)/python experiments/ensemble_layers.py --smoke --study bags && \
		rm -rf $$tmp; \
	else echo "smoke: $(DATA_DIR) not found: the scripts that need it are skipped" && \
		$(BIN)/python experiments/vs_automl.py --smoke && \
		$(BIN)/python experiments/ensemble_layers.py --smoke --study bagging; fi

# AutoGluon-Tabular, a peer of experiments/vs_automl.py, in its own environment: it pins pandas
# below 2.4, which .venv is past. No torch (its neural networks are left out). From 1.5, which
# has the best_quality_v150 preset.
AUTOGLUON_VENV ?= .venv-autogluon
autogluon:
	$(PYTHON) -m venv $(AUTOGLUON_VENV)
	$(AUTOGLUON_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(AUTOGLUON_VENV)/bin/python -m pip install --quiet \
		'autogluon.tabular[lightgbm,catboost,xgboost]>=1.5,<1.7'

# Debian's headless Chromium, for the screenshot test of the HTML run report (skipped without it).
# Needs root (or sudo).
chromium:
	@command -v chromium >/dev/null || { apt-get update && apt-get install -y chromium; }

clean:
	rm -rf $(VENV) $(CORE_VENV) .venv-docs $(AUTOGLUON_VENV) *.egg-info .pytest_cache docs/_build docs/api/generated
