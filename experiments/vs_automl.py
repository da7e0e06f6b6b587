"""The default ``ADMM`` against what a user would pick instead: FLAML's ``AutoML`` and a default
random forest (and TPOT when it is installed), side by side, one core each.

Protocol, the same for every method: a stratified 70/30 split with seed s of each dataset (plain
70/30 for regression; ``--seeds``, default 0 alone, and every method's own seed is s too); the method gets the 70 % and the time budget (60 s and 300 s), and is scored
on the 30 % with its refitted model: test AUROC on every shared dataset (binary), accuracy on
scikit-learn's digits (multiclass) and R² on diabetes (regression). Each run is its own process
with BLAS/OpenMP at one thread and ``n_jobs=1``. Every method searches with its own default
metric (AUROC, log-loss, RMSE for ADMM and FLAML alike).

``ADMM+ens`` is the estimator as a user gets it (``ADMM(time_budget=B, random_state=0)``, whose
``ensemble_size`` is 16), except that on a shared dataset it runs the portfolio learned *without*
that dataset (leave-one-dataset-out, ``experiments/portfolio_lodo.yaml`` from
``experiments/portfolio.py``); digits and diabetes are not among the portfolio's datasets, so they
run the shipped one. ``ADMM`` is the best single pipeline of the same search (``ensemble_size=0``
gives it; the ``ADMM+ens`` run scores both, see :func:`run_one`). ``ADMM+ens+shrink`` is
``ADMM+ens`` with ``shrink_to_fit=True`` (a forest's trial sized to its time limit before it
starts, :mod:`admm_automl.evaluation.shrink`), for the campaign that decides whether the default
takes it; it runs only when ``--methods`` names it, as ``ADMM+ens+ext`` does: the default
with the held-out portfolio learned with the published zero-shot candidates as well
(``portfolio.py --external``, written to ``experiments/portfolio_lodo_external.yaml``). ``FLAML`` is
``AutoML().fit(X, y, task=..., time_budget=B, n_jobs=1, seed=0)``; ``RF`` is scikit-learn's
``RandomForestClassifier`` / ``Regressor`` with its defaults (``n_jobs=1``, seed 0) behind the
package's imputation and one-hot encoding; ``TPOT`` is TPOT 1.1's ``TPOTClassifier`` /
``TPOTRegressor`` with ``max_time_mins = B / 60`` and its defaults, when ``import tpot`` works: it
is not a dependency (it brings Dask and more); ``pip install tpot 'setuptools<81'`` adds it (its
``stopit`` dependency imports ``pkg_resources``, which newer setuptools no longer ship).
``AutoGluon``, ``AutoGluon-best`` and ``AutoGluon-v150`` are AutoGluon-Tabular's
``TabularPredictor(label=..., eval_metric=...).fit(train, time_limit=B, presets=..., num_cpus=1,
num_gpus=0)`` with its default preset (``medium_quality``), with ``best_quality`` (bagged k-fold
models stacked in layers: the preset a user who wants the best model is told to pick) and with
``best_quality_v150`` (AutoGluon 1.5's newer best preset: one bagged layer of its 2025 CPU
zero-shot portfolio, with early stopping of the portfolio; its neural networks are skipped here,
as torch is not installed). AutoGluon pins pandas below 2.4, which
this package's environment is past, so it runs in its own virtual environment (``make
autogluon``: ``.venv-autogluon`` with ``autogluon.tabular[lightgbm,catboost,xgboost]``, no torch;
``AUTOGLUON_PYTHON`` names another interpreter): the split goes to it as CSV files, it returns the
test predictions, and they are scored here by the same code as every method's. Its metric is the
test metric for binary (AUROC: what a user scored on AUROC tells it; its own default is accuracy)
and its defaults otherwise (accuracy; RMSE, which ranks models as R² does); its fit time is
measured around ``fit`` in its process, as the others' are in theirs.
auto-sklearn's current release (0.15) does not install here: it builds scikit-learn < 0.25 from
source, which fails.

Usage::

    python experiments/vs_automl.py run --data-dir ../shared/data              # both budgets
    python experiments/vs_automl.py run --data-dir ../shared/data --budgets 60 --datasets pc4 sonar
    python experiments/vs_automl.py run --data-dir ../shared/data --budgets 60 --seeds 0 1 2 3 4
    python experiments/vs_automl.py run --data-dir ../shared/data --budgets 60 \
        --methods ADMM+ens ADMM+ens+shrink --seeds 0 1 2                     # the shrink's arms
    python experiments/vs_automl.py table                                      # print the tables
    python experiments/vs_automl.py --smoke --data-dir ../shared/data          # CI: ~1 minute

Results: ``experiments/results/vs_automl/<budget>/<dataset>/<method>.json`` for seed 0,
``<method>@<seed>.json`` for another (a run that has one is not repeated unless ``--force``); the
table has a row per dataset and seed (``<dataset>#<seed>``), and counts wins per row; with several
seeds it also averages each dataset's seeds and decides the rule on those means. AutoGluon
takes no seed: its runs of one dataset differ by their split alone. ``--parallel N`` runs N single-core runs at once.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import copy  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from typing import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "experiments" / "results" / "vs_automl"
LODO_FILE = REPO / "experiments" / "portfolio_lodo.yaml"
#: the held-out portfolios learned with the published zero-shot candidates too
#: (``portfolio.py --external``), which the arm ``+ext`` runs
LODO_EXTERNAL_FILE = REPO / "experiments" / "portfolio_lodo_external.yaml"
#: scikit-learn's bundled tasks with their natural test metric
BUNDLED = {"digits": "accuracy", "diabetes": "r2"}
METHODS = ("ADMM", "ADMM+ens", "ADMM+ens+shrink", "ADMM+ens+shrink3k", "ADMM+ens+boxed",
           "ADMM+ens+heldout", "ADMM+ens+ext", "FLAML", "AutoGluon", "AutoGluon-best",
           "AutoGluon-v150", "RF", "TPOT")
#: variants of the default that run only when ``--methods`` names them (a campaign's arm)
OPT_IN = ("ADMM+ens+shrink", "ADMM+ens+shrink3k", "ADMM+ens+boxed", "ADMM+ens+heldout",
          "ADMM+ens+ext")
from admm_automl.evaluation.shrink import SHRINK_MIN_ROWS  # noqa: E402


def builds_ensemble(method: str) -> bool:
    """Whether ``method`` is the default or one of its arms (``ADMM+ens+boxed``, the z-solver
    arm ``ADMM+ens-blds``): its result records the ensemble's weights and kind, and the table
    prints its search's stopped share and validation-to-test gap."""
    return method.startswith("ADMM+ens")


#: AutoGluon-Tabular's presets per method
AUTOGLUON_PRESETS = {"AutoGluon": "medium_quality", "AutoGluon-best": "best_quality",
                     "AutoGluon-v150": "best_quality_v150"}
#: AutoGluon's own environment (`make autogluon`)
AUTOGLUON_PYTHON = Path(os.environ.get("AUTOGLUON_PYTHON",
                                       REPO / ".venv-autogluon" / "bin" / "python"))
#: scores closer than this are a tie
TIE = 1e-3


def available_methods() -> list[str]:
    """The methods whose library is installed (TPOT in this environment, AutoGluon in its own),
    but the :data:`OPT_IN` variants."""
    def available(method: str) -> bool:
        if method == "TPOT":
            return importlib.util.find_spec("tpot") is not None
        if method in AUTOGLUON_PRESETS:
            return AUTOGLUON_PYTHON.is_file()
        return True
    return [m for m in METHODS if m not in OPT_IN and available(m)]


def load_split(name: str, data_dir: str | None, seed: int = 0):
    """``(X_train, X_test, y_train, y_test, task, metric)`` of the protocol's 70/30 split."""
    from sklearn.model_selection import train_test_split

    from admm_automl.datasets import load_bundled, load_dataset

    if name in BUNDLED:
        X, y = load_bundled(name)
        metric = BUNDLED[name]
    else:
        X, y = load_dataset(name, data_dir)
        metric = "roc_auc"
    task = "regression" if metric == "r2" else "classification"
    parts = train_test_split(X, y, test_size=0.3, random_state=seed,
                             stratify=y if task == "classification" else None)
    return (*parts, task, metric)


def lodo_portfolio(name: str, path: Path = LODO_FILE, required: bool = False) -> object:
    """The portfolio learned without dataset ``name`` in the held-out file ``path`` ("auto", the
    shipped one, for the others — unless ``required``: an arm whose portfolio is its point)."""
    import yaml

    entry = ((yaml.safe_load(path.read_text()) or {}).get("datasets", {}).get(name)
             if path.is_file() else None)
    if entry is None and required:
        raise FileNotFoundError(f"no held-out portfolio of {name!r} in {path} (portfolio.py "
                                "--external --lodo-out writes it)")
    if entry is None:
        return "auto"
    return {"space": "default", **{task: entry[task] for task in ("classification", "regression")
                                   if task in entry}}


def make_model(method: str, dataset: str, task: str, budget: float, seed: int = 0,
               n_train: int | None = None):
    """``(model, fit keyword arguments)`` of one method. ``ADMM+ens-<z>`` (``ADMM-<z>``) is the
    default with the z-solver ``<z>`` (``ADMM+ens-blds``), for the comparison of z-solvers;
    ``+shrink`` turns ``shrink_to_fit`` on (``ADMM+ens+shrink``), ``+shrink3k`` only from
    ``SHRINK_MIN_ROWS`` training rows (``n_train``: the arm that decided ``shrink_to_fit="auto"``,
    which the default now is; kept so that its campaign can be run again); ``+boxed`` turns
    ``boost_to_fit`` on (boosted rounds stopped at a fold's share of the trial's limit);
    ``+heldout`` judges the ensemble on held-out validation rows
    (``ensemble_check="held_out"``); ``+ext`` runs the held-out portfolio learned with the
    published zero-shot candidates (:data:`LODO_EXTERNAL_FILE`)."""
    if method.startswith("ADMM"):
        from admm_automl import ADMMClassifier, ADMMRegressor

        base, _, z_solver = method.partition("-")
        external = base.endswith("+ext")
        base = base.removesuffix("+ext")
        check = {"ensemble_check": "held_out"} if base.endswith("+heldout") else {}
        base = base.removesuffix("+heldout")
        boxed = {"boost_to_fit": True} if base.endswith("+boxed") else {}
        base = base.removesuffix("+boxed")
        if base.endswith("+shrink3k"):
            if n_train is None:
                raise ValueError(f"{method} needs n_train, the training rows")
            shrink = n_train >= SHRINK_MIN_ROWS
        else:
            shrink = base.endswith("+shrink")
        base = base.removesuffix("+shrink3k").removesuffix("+shrink")
        cls = ADMMClassifier if task == "classification" else ADMMRegressor
        portfolio = (lodo_portfolio(dataset, LODO_EXTERNAL_FILE, required=dataset not in BUNDLED)
                     if external else lodo_portfolio(dataset))
        return cls(time_budget=budget, random_state=seed, portfolio=portfolio,
                   n_jobs=1,
                   ensemble_size=0 if base == "ADMM" else 16, z_solver=z_solver or "cmab",
                   **({"shrink_to_fit": True} if shrink else {}), **check, **boxed), {}
    if method == "FLAML":
        from flaml import AutoML

        return AutoML(), {"task": task, "time_budget": budget, "n_jobs": 1, "seed": seed,
                          "verbose": 0}
    if method == "TPOT":
        from tpot import TPOTClassifier, TPOTRegressor

        cls = TPOTClassifier if task == "classification" else TPOTRegressor
        return cls(max_time_mins=budget / 60, n_jobs=1, random_state=seed, verbose=0), {}
    if method in ("RF", *AUTOGLUON_PRESETS):
        return None, {}
    raise ValueError(f"unknown method {method!r}; known: {METHODS}")


class Replayed:
    """The test-set predictions of a model fitted in another process (AutoGluon's), with the
    ``predict`` / ``predict_proba`` / ``classes_`` that :func:`test_score` reads."""

    def __init__(self, answer: dict, y_train) -> None:
        # the CSV round trip turns labels into text: map them back to the training labels
        self._by_text = {str(label): label for label in np.unique(y_train)}
        self.classes_ = np.array([self._by_text.get(c, c) for c in answer.get("classes") or []])
        self.proba = np.asarray(answer["proba"]) if answer.get("proba") is not None else None
        self.labels = answer["predict"]

    def predict_proba(self, X):
        return self.proba

    def predict(self, X):
        if len(self.classes_):
            return np.array([self._by_text.get(str(v), v) for v in self.labels])
        return np.asarray(self.labels, dtype=float)


def fit_autogluon(method: str, X_train, y_train, X_test, task: str, metric: str,
                  budget: float) -> tuple[Replayed, float, str]:
    """``(predictions, fit seconds, best model)`` of AutoGluon run in its own environment on the
    split (as CSV: its pandas cannot read this environment's pickles)."""
    import subprocess

    if not AUTOGLUON_PYTHON.is_file():
        raise SystemExit(f"{method}: no AutoGluon environment at {AUTOGLUON_PYTHON}; run "
                         "`make autogluon` or set AUTOGLUON_PYTHON")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        X_train.assign(target=np.asarray(y_train)).to_csv(folder / "train.csv", index=False)
        X_test.to_csv(folder / "test.csv", index=False)
        problem = {"classification": "binary" if metric == "roc_auc" else "multiclass",
                   "regression": "regression"}[task]
        subprocess.run([str(AUTOGLUON_PYTHON), __file__, "autogluon-child", "--folder", tmp,
                        "--budget", str(budget), "--preset", AUTOGLUON_PRESETS[method],
                        "--problem", problem], check=True)
        answer = json.loads((folder / "answer.json").read_text())
    if "error" in answer:
        return None, answer["fit_time"], answer["error"]
    return Replayed(answer, y_train), answer["fit_time"], answer["best"]


def autogluon_child(folder: Path, budget: float, preset: str, problem: str) -> None:
    """In AutoGluon's environment: fit on ``train.csv``, predict ``test.csv``, write
    ``answer.json``. Imports nothing of this package."""
    import pandas as pd
    from autogluon.tabular import TabularPredictor

    train = pd.read_csv(folder / "train.csv")
    test = pd.read_csv(folder / "test.csv")
    predictor = TabularPredictor(label="target", problem_type=problem,
                                 eval_metric="roc_auc" if problem == "binary" else None,
                                 path=str(folder / "model"), verbosity=0)
    start = time.monotonic()
    try:
        predictor.fit(train, time_limit=budget, presets=preset, num_cpus=1, num_gpus=0)
    except Exception as error:  # e.g. best_quality at a short budget: no model fitted in time
        (folder / "answer.json").write_text(json.dumps(
            {"fit_time": time.monotonic() - start, "error": f"{type(error).__name__}: {error}"}))
        return
    fit_time = time.monotonic() - start
    answer = {"fit_time": fit_time, "best": str(predictor.model_best),
              "predict": [v.item() if hasattr(v, "item") else v
                          for v in predictor.predict(test).tolist()]}
    if problem != "regression":
        proba = predictor.predict_proba(test)
        answer["classes"] = [str(c) for c in proba.columns]
        answer["proba"] = proba.to_numpy().tolist()
    (folder / "answer.json").write_text(json.dumps(answer))


def run_one(dataset: str, method: str, budget: float, data_dir: str | None, out: Path,
            seed: int = 0) -> dict:
    """One run in this process; writes and returns its result (an ``ADMM+ens`` run also writes
    the ``ADMM`` result: its search's best single pipeline, refitted)."""
    warnings.simplefilter("ignore")
    X_train, X_test, y_train, y_test, task, metric = load_split(dataset, data_dir, seed)
    model, fit_kwargs = make_model(method, dataset, task, budget, seed, n_train=len(y_train))
    if method in AUTOGLUON_PRESETS:
        model, fit_time, best = fit_autogluon(method, X_train, y_train, X_test, task, metric,
                                              budget)
        score = None if model is None else test_score(model, X_test, y_test, y_train, metric)
        return write_result(out, {"dataset": dataset, "method": method, "budget": budget,
                                  "seed": seed, "metric": metric, "score": score, "fit_time": fit_time,
                                  "rows": int(len(y_train) + len(y_test)),
                                  "best": best if model is not None else None,
                                  "error": None if model is not None else best,
                                  "ensemble": None})
    if model is None:  # the default random forest behind the package's preprocessing
        from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
        from sklearn.pipeline import make_pipeline

        from admm_automl.evaluation.data import make_preprocessor

        forest = (RandomForestClassifier if task == "classification" else RandomForestRegressor)
        model = make_pipeline(make_preprocessor(X_train), forest(n_jobs=1, random_state=seed))
    start = time.monotonic()
    model.fit(X_train, y_train, **fit_kwargs)
    fit_time = time.monotonic() - start
    results = {method: model}
    if method == "ADMM+ens":  # the same search's best single pipeline is the ADMM result
        results["ADMM"] = copy.copy(model)
        results["ADMM"].ensemble_ = None
    for name, fitted in results.items():
        result = {"dataset": dataset, "method": name, "budget": budget, "seed": seed,
                  "metric": metric,
                  "score": test_score(fitted, X_test, y_test, y_train, metric),
                  "fit_time": fit_time, "rows": int(len(y_train) + len(y_test)),
                  "best": str(getattr(model, "best_params_", None)
                              or getattr(model, "best_estimator", None)),
                  "ensemble": ({str(k): v for k, v in model.ensemble_weights_.items()}
                               if builds_ensemble(name) else None),
                  "ensemble_kind": (getattr(model, "ensemble_kind_", None)
                                    if builds_ensemble(name) else None),
                  # the validation loss of what predicts, for the validation-to-test gap
                  "validation_loss": validation_loss(fitted),
                  **search_steps(model)}
        write_result(out.with_name(out.name.replace(method, name, 1)), result)
    return json.loads(out.read_text())


def validation_loss(model) -> float | None:
    """Of a package model: the validation loss of what predicts — the ensemble's pooled loss
    when there is one, else the best pipeline's; None for another model."""
    if not hasattr(model, "best_loss_"):
        return None
    ensemble = getattr(model, "ensemble_", None) is not None
    return float(model.ensemble_loss_ if ensemble else model.best_loss_)


def search_steps(model) -> dict:
    """Of a package model: which step and solver made its evaluations
    (:func:`~admm_automl.reporting.rundir.step_counts`) and when its first z-step began, in
    seconds from the start of ``fit`` (None: no z-step); nothing for another model."""
    history = getattr(model, "history_", None)
    if history is None or "phase" not in history:
        return {}
    from admm_automl.reporting.rundir import step_counts

    z = history[history["phase"] == "z"]
    first = float((z["time"] - z["duration"]).min()) if len(z) else None
    return {"steps": step_counts(history), "first_z_start": first,
            **stopped_seconds(history)}


def stopped_seconds(history) -> dict:
    """How many of a package model's evaluations were stopped by a time limit (their own or the
    budget's end) and the seconds they ran before it, in all and per learner; of those, the
    seconds stopped by their own limit (``limit_seconds``) and how many were never started
    (``n_not_started``: predicted past their limit, no seconds); and how many ended with their
    boosted rounds stopped at their share of the limit instead (``n_boxed``, ``boost_to_fit``)."""
    stopped = history["status"].isin(["timeout", "cancelled"])
    own = history["status"] == "timeout"
    by_learner = (history.loc[stopped].groupby("param:estimator")["duration"].sum()
                  if "param:estimator" in history else {})
    return {"n_evals": int(len(history)), "n_stopped": int(stopped.sum()),
            "stopped_seconds": float(history.loc[stopped, "duration"].sum()),
            "limit_seconds": float(history.loc[own, "duration"].sum()),
            "n_not_started": int((own & (history["duration"] <= 0.0)).sum()),
            "stopped_by_learner": {str(k): float(v) for k, v in dict(by_learner).items()},
            "n_boxed": int((history["boxed"].fillna(0) > 0).sum()) if "boxed" in history else 0}


def write_result(path: Path, result: dict) -> dict:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1))
    return result


def test_score(model, X_test, y_test, y_train, metric: str) -> float:
    """The protocol's test score of a fitted model."""
    from sklearn.metrics import accuracy_score, r2_score, roc_auc_score

    if metric == "roc_auc":
        positive_label = np.unique(y_train)[1]
        classes = list(getattr(model, "classes_", np.unique(y_train)))
        return float(roc_auc_score(y_test == positive_label,
                                   model.predict_proba(X_test)[:, classes.index(positive_label)]))
    if metric == "accuracy":
        return float(accuracy_score(y_test, model.predict(X_test)))
    return float(r2_score(y_test, model.predict(X_test)))


def result_path(root: Path, budget: float, dataset: str, method: str, seed: int = 0) -> Path:
    """Seed 0's result is ``<method>.json`` (as before seeds), seed s's ``<method>@s.json``."""
    return root / f"{budget:g}" / dataset / (f"{method}.json" if seed == 0
                                             else f"{method}@{seed}.json")


def run_all(datasets: list[str], methods: list[str], budgets: list[float], data_dir: str | None,
            root: Path, parallel: int, force: bool, seeds: Sequence[int] = (0,)) -> None:
    from admm_automl.benchmarks.runner import run_processes

    commands = []
    for budget in budgets:
        for seed in seeds:
            for dataset in datasets:
                for method in methods:
                    if method == "ADMM" and "ADMM+ens" in methods:
                        continue  # the ADMM+ens run writes it
                    if force or not result_path(root, budget, dataset, method, seed).is_file():
                        cmd = [sys.executable, __file__, "run-one", "--dataset", dataset,
                               "--method", method, "--budget", str(budget), "--root", str(root),
                               "--seed", str(seed)]
                        commands += [cmd + (["--data-dir", data_dir] if data_dir else [])]
    print(f"{len(commands)} runs, {parallel} at a time, on {platform.node()} "
          f"({os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}), results in {root}",
          flush=True)
    run_processes(commands, parallel)


def row_name(result: dict) -> str:
    """A result's row of the table: its dataset, ``<dataset>#<seed>`` for a seed other than 0."""
    seed = result.get("seed") or 0
    return result["dataset"] if seed == 0 else f"{result['dataset']}#{seed}"


def table(root: Path, datasets: list[str] | None = None, margin: float = TIE,
          floor: float = 3 * TIE) -> str:
    """Per budget: the scores per dataset, then each ADMM variant against each other method (wins
    / ties / losses and the mean difference, on the shared binary datasets and on all), and with
    several seeds the same on each dataset's mean over its seeds (:func:`seeds_section`, whose
    non-inferiority rule takes ``margin`` and ``floor``); then, for each longer budget, every
    method's score against its score at the shorter one (:func:`longer_budget`). ``datasets``
    keeps only those datasets' rows, so a campaign decided on one set and confirmed on another
    prints each set's verdict from one results folder."""
    lines = []
    by_budget = read_results(root)
    if datasets:
        by_budget = {budget: {row: by for row, by in rows.items() if row.split("#")[0] in datasets}
                     for budget, rows in by_budget.items()}
    for budget, rows in by_budget.items():
        ran = {m for by in rows.values() for m in by}
        # the named methods in their order, then the z-solver arms (``ADMM+ens-blds``)
        methods = [m for m in METHODS if m in ran] + sorted(ran - set(METHODS))
        lines.append(f"\nbudget {budget} s — test score (AUROC; digits accuracy; "
                     "diabetes R²)")
        lines.append(f"{'dataset':<20}" + "".join(f"{m:>15}" for m in methods))
        lines += [score_row(dataset, by, methods) for dataset, by in rows.items()]
        lines.append(f"{'mean wall s (fit)':<20}" + "".join(
            f"{np.mean([by[m]['fit_time'] for by in rows.values() if m in by]):>15.1f}"
            for m in methods))
        for reference, other in method_pairs(methods):
            for label, keep in (("shared", lambda d: d.split("#")[0] not in BUNDLED),
                                ("all", lambda d: True)):
                both = {d: (by[reference]["score"], by[other]["score"]) for d, by in rows.items()
                        if keep(d) and reference in by and other in by}
                if both:
                    lines.append(compare(reference, other, label, both))
        peers = [m for m in ("FLAML", "AutoGluon", "AutoGluon-best", "AutoGluon-v150")
                 if m in methods]
        if "ADMM+ens" in methods and peers:  # the campaign's rule is against the peers
            lines.append(verdict(rows, peers))
        if any("#" in d for d in rows):
            lines.append(seeds_section(rows, methods, peers, margin, floor))
        lines += [search_section(rows, float(budget), m) for m in methods if builds_ensemble(m)]
    budgets = list(by_budget)
    for longer in budgets[1:]:
        lines.append(longer_budget(by_budget[budgets[0]], by_budget[longer], budgets[0], longer))
    return "\n".join(lines)


def score_row(dataset: str, by: dict[str, dict], methods: list[str]) -> str:
    """A table row: each method's score, ``-`` where it did not run, ``failed`` without a model."""
    return f"{dataset:<20}" + "".join(
        f"{'-':>15}" if m not in by else f"{'failed':>15}" if by[m]["score"] is None
        else f"{by[m]['score']:>15.4f}" for m in methods)


def method_pairs(methods: list[str]) -> list[tuple[str, str]]:
    """Each ADMM variant with each method after it in ``methods``: the comparisons printed."""
    return [(a, b) for i, a in enumerate(methods) for b in methods[i + 1:] if a.startswith("ADMM")]


def seed_means(rows: dict[str, dict[str, dict]]) -> tuple[dict[str, dict[str, dict]], dict]:
    """Per dataset, the mean score over its seeds of each method that ran in every one of them
    (None if one of those runs returned no model), and how many seeds each mean is of."""
    runs: dict[str, list[dict]] = {}
    for row, by in rows.items():
        runs.setdefault(row.split("#")[0], []).append(by)
    means, counts = {}, {}
    for dataset, seeds in runs.items():
        methods = set.intersection(*(set(by) for by in seeds))
        means[dataset] = {m: {"score": None if any(by[m]["score"] is None for by in seeds)
                              else float(np.mean([by[m]["score"] for by in seeds]))}
                          for m in methods}
        counts[dataset] = len(seeds)
    return means, counts


def seeds_section(rows: dict[str, dict[str, dict]], methods: list[str], peers: list[str],
                  margin: float = TIE, floor: float = 3 * TIE) -> str:
    """The scores averaged over seeds per dataset (:func:`seed_means`), each ADMM variant
    against each other method on those means, and the campaign's rule decided on them."""
    means, counts = seed_means(rows)
    fewer = sorted(d for d, n in counts.items() if n < max(counts.values()))
    lines = [f"\nmean over seeds per dataset ({max(counts.values())} seeds"
             + (f"; fewer on {', '.join(fewer)}" if fewer else "") + ")"]
    lines += [score_row(dataset, by, methods) for dataset, by in means.items()]
    for reference, other in method_pairs(methods):
        both = {d: (by[reference]["score"], by[other]["score"]) for d, by in means.items()
                if d not in BUNDLED and reference in by and other in by}
        if both:
            lines.append(compare(reference, other, "shared, seed means", both))
    if "ADMM+ens" in methods and peers:
        lines.append("seed means: " + verdict(means, peers))
    if "ADMM+ens" in methods:
        lines += [noninferiority(means, "ADMM+ens", arm, margin, floor)
                  for arm in OPT_IN if arm in methods]
    return "\n".join(lines)


def noninferiority(means: dict[str, dict[str, dict]], reference: str, other: str,
                   margin: float = TIE, floor: float = 3 * TIE) -> str:
    """The speed changes' rule (experiments/README.md), decided on the datasets' seed means
    (:func:`seed_means`) of the shared datasets both arms ran on: ``other`` is not worse than
    ``reference`` if the one-sided 95 % lower bound of the mean difference (Student's t over the
    datasets) is at least ``-margin``, no dataset's difference is below ``-floor`` and ``other``
    returned a model on every run. A counting rule has no power where almost no dataset moves by
    more than the tie width; this one's power follows from the spread of the differences."""
    from scipy.stats import t as student

    both = {d: (by[reference]["score"], by[other]["score"]) for d, by in means.items()
            if d not in BUNDLED and reference in by and other in by}
    none = sorted(d for d, (_, score) in both.items() if score is None)
    diffs = {d: b - a for d, (a, b) in both.items() if a is not None and b is not None}
    if none:
        return f"{other} against {reference}: no model on {', '.join(none)} -> NOT met"
    if len(diffs) < 2:
        return f"{other} against {reference}: non-inferiority needs two datasets, has {len(diffs)}"
    d = np.array(list(diffs.values()))
    bound = d.mean() - student.ppf(0.95, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    lowest = min(diffs, key=diffs.get)
    met = bound >= -margin and diffs[lowest] >= -floor
    return (f"{other} against {reference}, non-inferiority on {len(d)} dataset means: mean "
            f"{d.mean():+.5f}, sd {d.std(ddof=1):.5f}, one-sided 95 % lower bound {bound:+.5f} "
            f"({'>=' if bound >= -margin else '<'} {-margin:g}), lowest {lowest} "
            f"{diffs[lowest]:+.4f} ({'>=' if diffs[lowest] >= -floor else '<'} {-floor:g}) -> "
            f"{'met' if met else 'NOT met'}")


def search_section(rows: dict[str, dict[str, dict]], budget: float,
                   method: str = "ADMM+ens") -> str:
    """Of ``method``'s runs (the default or one of its arms), per dataset and averaged over its
    seeds: the share
    of the budget spent in trials stopped by a time limit, and the validation-to-test gap (the
    validation AUROC of what predicts, ``1 - validation_loss``, minus the test AUROC; positive:
    the choice looked better on validation than it is). Then the median share over the datasets
    and over the runs, and how many runs kept it at or below 10 %. On the binary datasets (AUROC:
    a loss of
    ``1 - score``); empty when no run recorded these fields (results from before them)."""
    runs: dict[str, list[dict]] = {}
    for row, by in rows.items():
        result = by.get(method)
        if result is not None and "stopped_seconds" in result and result.get("metric") == "roc_auc":
            runs.setdefault(row.split("#")[0], []).append(result)
    if not runs:
        return ""
    lines = [f"\n{method} search: share of {budget:g} s in trials stopped by a time limit, "
             "validation-to-test gap (means over seeds)",
             f"{'dataset':<20}{'stopped':>10}{'evals':>8}{'stopped n':>11}{'gap':>10}"
             "  most stopped (s over the seeds)"]
    shares = {}
    for dataset, results in runs.items():
        shares[dataset] = [r["stopped_seconds"] / budget for r in results]
        gaps = [1.0 - r["validation_loss"] - r["score"] for r in results
                if r.get("validation_loss") is not None and r["score"] is not None]
        lines.append(f"{dataset:<20}{np.mean(shares[dataset]):>10.1%}"
                     f"{np.mean([r['n_evals'] for r in results]):>8.1f}"
                     f"{np.mean([r['n_stopped'] for r in results]):>11.1f}"
                     + (f"{np.mean(gaps):>+10.4f}" if gaps else f"{'-':>10}")
                     + f"  {most_stopped(results)}")
    every = [share for dataset in shares.values() for share in dataset]
    lines.append(f"median share over {len(shares)} datasets "
                 f"{np.median([np.mean(v) for v in shares.values()]):.1%}, over "
                 f"{len(every)} runs {np.median(every):.1%}; runs at <= 10 %: "
                 f"{sum(share <= 0.10 for share in every)} of {len(every)}")
    return "\n".join(lines)


def most_stopped(results: list[dict]) -> str:
    """The learner whose stopped trials took the most seconds over ``results`` (runs that
    recorded it), with those seconds; empty when none did."""
    seconds: dict[str, float] = {}
    for result in results:
        for learner, s in (result.get("stopped_by_learner") or {}).items():
            seconds[learner] = seconds.get(learner, 0.0) + s
    if not seconds:
        return ""
    learner = max(seconds, key=seconds.get)
    return f"{learner} {seconds[learner]:.0f}"


def read_results(root: Path) -> dict[str, dict[str, dict[str, dict]]]:
    """Every result under ``root``: budget (its folder's name, shortest first) -> table row
    (:func:`row_name`) -> method -> result."""
    out: dict[str, dict[str, dict[str, dict]]] = {}
    for budget_dir in sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: float(p.name)):
        rows = out.setdefault(budget_dir.name, {})
        for path in sorted(budget_dir.glob("*/*.json")):
            r = json.loads(path.read_text())
            rows.setdefault(row_name(r), {})[r["method"]] = r
    return out


def longer_budget(short: dict[str, dict[str, dict]], long: dict[str, dict[str, dict]],
                  short_name: str, long_name: str) -> str:
    """Each method's score at the longer budget against its score at the shorter one, on the
    rows (datasets) that have both: how many are above / within :data:`TIE` / below, the mean
    difference and the rows below — and, for the default, the rule of experiments/README.md
    (a longer budget never makes the result worse: no row more than the tie width below)."""
    lines = [f"\n{long_name} s against {short_name} s, per method (above / within {TIE:g} / "
             "below, mean difference; every dataset with both)"]
    for m in METHODS:
        both = {d: (long[d][m]["score"], short[d][m]["score"]) for d in long
                if d in short and m in long[d] and m in short[d]}
        if not both:
            continue
        above, within, below, diffs = outcomes(both)
        worse = [f"{d} {a - b:+.4f}" for d, (a, b) in both.items()
                 if a is not None and b is not None and a - b < -TIE]
        line = (f"{m:<15} {above:>2} / {within:>2} / {below:>2}, mean "
                f"{diffs.mean() if len(diffs) else np.nan:+.4f}"
                + (f"; below: {', '.join(worse)}" if worse else ""))
        if m == "ADMM+ens":
            line += f" -> {'met' if not below else 'NOT met'} ({len(both)} datasets)"
        lines.append(line)
    return "\n".join(lines)


def outcomes(both: dict[str, tuple]) -> tuple[int, int, int, np.ndarray]:
    """``(wins, ties, losses, differences)`` of the first method against the second over
    ``both`` (dataset -> the two scores): a dataset where only one returned a model is a win for
    it; the differences (ties included) are over the datasets where both did."""
    wins = ties = losses = 0
    diffs = []
    for a, b in both.values():
        if a is None or b is None:
            wins, losses = wins + (b is None and a is not None), losses + (a is None and b is not None)
            continue
        diffs.append(a - b)
        wins, ties, losses = wins + (a - b > TIE), ties + (abs(a - b) <= TIE), losses + (a - b < -TIE)
    return wins, ties, losses, np.array(diffs)


def wilcoxon_p(diffs: np.ndarray) -> float:
    """Two-sided paired Wilcoxon signed-rank p over the datasets (nan below six non-zero pairs)."""
    from scipy.stats import wilcoxon

    diffs = diffs[diffs != 0]
    return float(wilcoxon(diffs).pvalue) if len(diffs) >= 6 else float("nan")


def compare(reference: str, other: str, label: str, both: dict[str, tuple]) -> str:
    wins, ties, losses, diffs = outcomes(both)
    failed = {name: sum(pair[k] is None for pair in both.values())
              for k, name in enumerate((reference, other))}
    return (f"{reference} vs {other} ({label}, {len(both)} datasets): {wins} wins / {ties} ties / "
            f"{losses} losses, mean difference {diffs.mean() if len(diffs) else np.nan:+.4f}, "
            f"Wilcoxon p {wilcoxon_p(diffs):.2f}"
            + "".join(f"; {name} returned no model on {n}" for name, n in failed.items() if n))


def verdict(rows: dict[str, dict[str, dict]], peers: list[str]) -> str:
    """The campaign's rule (experiments/README.md), decided on the shared binary datasets: the
    default is ahead of each peer on at least 2/3 of the datasets where the two differ by more
    than the tie width, has the higher mean, and returns a model on every dataset."""
    shared = {d: by for d, by in rows.items()
              if d.split("#")[0] not in BUNDLED and "ADMM+ens" in by}
    none = [d for d, by in shared.items() if by["ADMM+ens"]["score"] is None]
    parts = []
    for peer in peers:
        both = {d: (by["ADMM+ens"]["score"], by[peer]["score"]) for d, by in shared.items()
                if peer in by}
        wins, _, losses, diffs = outcomes(both)
        ahead = wins >= 2 / 3 * (wins + losses) if wins + losses else True
        higher = bool(len(diffs)) and diffs.mean() > 0
        parts.append(f"{peer}: ahead on {wins} of {wins + losses} that differ "
                     f"({'>=' if ahead else '<'} 2/3), mean {'higher' if higher else 'not higher'}"
                     f" -> {'met' if ahead and higher and not none else 'NOT met'}")
    return ("rule (shared binary datasets): " + "; ".join(parts)
            + (f"; no model on {', '.join(none)}" if none else "; a model on every dataset"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs="?", default="run",
                        choices=("run", "run-one", "table", "autogluon-child"))
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--datasets", nargs="*", help="default: every shared dataset + bundled")
    parser.add_argument("--dataset", help="run-one: the dataset")
    parser.add_argument("--methods", nargs="*", default=None,
                        help=f"of {METHODS}; default: every installed one but {OPT_IN}")
    parser.add_argument("--method", help="run-one: the method")
    parser.add_argument("--budgets", nargs="*", type=float, default=[60.0, 300.0])
    parser.add_argument("--budget", type=float, help="run-one: the budget")
    parser.add_argument("--seeds", nargs="*", type=int, default=[0],
                        help="split and method seeds (default: 0)")
    parser.add_argument("--seed", type=int, default=0, help="run-one: the seed")
    parser.add_argument("--root", default=str(RESULTS))
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--margin", type=float, default=TIE,
                        help="table: the non-inferiority rule's bound on the mean difference")
    parser.add_argument("--floor", type=float, default=3 * TIE,
                        help="table: the non-inferiority rule's bound on any one dataset")
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--smoke", action="store_true",
                        help="two small datasets at 20 s, results in a temporary folder")
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    parser.add_argument("--preset", help=argparse.SUPPRESS)
    parser.add_argument("--problem", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.command == "autogluon-child":
        autogluon_child(Path(args.folder), args.budget, args.preset, args.problem)
        return
    if args.command == "run-one":
        r = run_one(args.dataset, args.method, args.budget, args.data_dir,
                    result_path(Path(args.root), args.budget, args.dataset, args.method, args.seed),
                    args.seed)
        print(json.dumps({k: r[k] for k in ("dataset", "method", "budget", "score")}), flush=True)
        return
    root = Path(tempfile.mkdtemp()) if args.smoke else Path(args.root)
    if args.command == "run":
        from admm_automl.datasets import list_data_dir

        shared = list_data_dir(args.data_dir) if args.data_dir and Path(args.data_dir).is_dir() else []
        datasets = args.datasets or [*shared, *BUNDLED]
        budgets = args.budgets
        methods = args.methods or available_methods()
        if args.smoke:
            datasets = (["sonar"] if "sonar" in shared else []) + ["diabetes"]
            budgets, methods = [20.0], [m for m in methods if m != "TPOT"]
        run_all(datasets, methods, budgets, args.data_dir, root, args.parallel, args.force,
                args.seeds)
    print(table(root, args.datasets if args.command == "table" else None, args.margin,
                args.floor))


if __name__ == "__main__":
    main()
