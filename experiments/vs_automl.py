"""The default ``ADMM`` against what a user would pick instead: FLAML's ``AutoML`` and a default
random forest (and TPOT when it is installed), side by side, one core each.

Protocol, the same for every method: a stratified 70/30 split with seed 0 of each dataset (plain
70/30 for regression); the method gets the 70 % and the time budget (60 s and 300 s), and is scored
on the 30 % with its refitted model: test AUROC on every shared dataset (binary), accuracy on
scikit-learn's digits (multiclass) and R² on diabetes (regression). Each run is its own process
with BLAS/OpenMP at one thread and ``n_jobs=1``. Every method searches with its own default
metric (AUROC, log-loss, RMSE for ADMM and FLAML alike).

``ADMM+ens`` is the estimator as a user gets it (``ADMM(time_budget=B, random_state=0)``, whose
``ensemble_size`` is 16), except that on a shared dataset it runs the portfolio learned *without*
that dataset (leave-one-dataset-out, ``experiments/portfolio_lodo.yaml`` from
``experiments/portfolio.py``); digits and diabetes are not among the portfolio's datasets, so they
run the shipped one. ``ADMM`` is the best single pipeline of the same search (``ensemble_size=0``
gives it; the ``ADMM+ens`` run scores both, see :func:`run_one`). ``FLAML`` is
``AutoML().fit(X, y, task=..., time_budget=B, n_jobs=1, seed=0)``; ``RF`` is scikit-learn's
``RandomForestClassifier`` / ``Regressor`` with its defaults (``n_jobs=1``, seed 0) behind the
package's imputation and one-hot encoding; ``TPOT`` is TPOT 1.1's ``TPOTClassifier`` /
``TPOTRegressor`` with ``max_time_mins = B / 60`` and its defaults, when ``import tpot`` works: it
is not a dependency (it brings Dask and more); ``pip install tpot 'setuptools<81'`` adds it (its
``stopit`` dependency imports ``pkg_resources``, which newer setuptools no longer ship).
auto-sklearn's current release (0.15) does not install here: it builds scikit-learn < 0.25 from
source, which fails.

Usage::

    python experiments/vs_automl.py run --data-dir ../shared/data              # both budgets
    python experiments/vs_automl.py run --data-dir ../shared/data --budgets 60 --datasets pc4 sonar
    python experiments/vs_automl.py table                                      # print the tables
    python experiments/vs_automl.py --smoke --data-dir ../shared/data          # CI: ~1 minute

Results: ``experiments/results/vs_automl/<budget>/<dataset>/<method>.json`` (a run that has one is
not repeated unless ``--force``). ``--parallel N`` runs N single-core runs at once.
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
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "experiments" / "results" / "vs_automl"
LODO_FILE = REPO / "experiments" / "portfolio_lodo.yaml"
#: scikit-learn's bundled tasks with their natural test metric
BUNDLED = {"digits": "accuracy", "diabetes": "r2"}
METHODS = ("ADMM", "ADMM+ens", "FLAML", "RF", "TPOT")
#: scores closer than this are a tie
TIE = 1e-3


def available_methods() -> list[str]:
    return [m for m in METHODS if m != "TPOT" or importlib.util.find_spec("tpot") is not None]


def load_split(name: str, data_dir: str | None):
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
    parts = train_test_split(X, y, test_size=0.3, random_state=0,
                             stratify=y if task == "classification" else None)
    return (*parts, task, metric)


def lodo_portfolio(name: str) -> object:
    """The portfolio learned without dataset ``name`` ("auto", the shipped one, for the others)."""
    import yaml

    if not LODO_FILE.is_file():
        return "auto"
    entry = (yaml.safe_load(LODO_FILE.read_text()) or {}).get("datasets", {}).get(name)
    return "auto" if entry is None else {"space": "default",
                                         "classification": entry["classification"]}


def make_model(method: str, dataset: str, task: str, budget: float):
    """``(model, fit keyword arguments)`` of one method."""
    if method.startswith("ADMM"):
        from admm_automl import ADMMClassifier, ADMMRegressor

        cls = ADMMClassifier if task == "classification" else ADMMRegressor
        return cls(time_budget=budget, random_state=0, portfolio=lodo_portfolio(dataset),
                   ensemble_size=0 if method == "ADMM" else 16), {}
    if method == "FLAML":
        from flaml import AutoML

        return AutoML(), {"task": task, "time_budget": budget, "n_jobs": 1, "seed": 0,
                          "verbose": 0}
    if method == "TPOT":
        from tpot import TPOTClassifier, TPOTRegressor

        cls = TPOTClassifier if task == "classification" else TPOTRegressor
        return cls(max_time_mins=budget / 60, n_jobs=1, random_state=0, verbose=0), {}
    if method == "RF":
        return None, {}
    raise ValueError(f"unknown method {method!r}; known: {METHODS}")


def run_one(dataset: str, method: str, budget: float, data_dir: str | None, out: Path) -> dict:
    """One run in this process; writes and returns its result (an ``ADMM+ens`` run also writes
    the ``ADMM`` result: its search's best single pipeline, refitted)."""
    warnings.simplefilter("ignore")
    X_train, X_test, y_train, y_test, task, metric = load_split(dataset, data_dir)
    model, fit_kwargs = make_model(method, dataset, task, budget)
    if model is None:  # the default random forest behind the package's preprocessing
        from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
        from sklearn.pipeline import make_pipeline

        from admm_automl.evaluation.data import make_preprocessor

        forest = (RandomForestClassifier if task == "classification" else RandomForestRegressor)
        model = make_pipeline(make_preprocessor(X_train), forest(n_jobs=1, random_state=0))
    start = time.monotonic()
    model.fit(X_train, y_train, **fit_kwargs)
    fit_time = time.monotonic() - start
    results = {method: model}
    if method == "ADMM+ens":  # the same search's best single pipeline is the ADMM result
        results["ADMM"] = copy.copy(model)
        results["ADMM"].ensemble_ = None
    for name, fitted in results.items():
        result = {"dataset": dataset, "method": name, "budget": budget, "metric": metric,
                  "score": test_score(fitted, X_test, y_test, y_train, metric),
                  "fit_time": fit_time, "rows": int(len(y_train) + len(y_test)),
                  "best": str(getattr(model, "best_params_", None)
                              or getattr(model, "best_estimator", None)),
                  "ensemble": ({str(k): v for k, v in model.ensemble_weights_.items()}
                               if name == "ADMM+ens" else None)}
        path = out.with_name(f"{name}.json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=1))
    return json.loads(out.read_text())


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


def result_path(root: Path, budget: float, dataset: str, method: str) -> Path:
    return root / f"{budget:g}" / dataset / f"{method}.json"


def run_all(datasets: list[str], methods: list[str], budgets: list[float], data_dir: str | None,
            root: Path, parallel: int, force: bool) -> None:
    from admm_automl.benchmarks.runner import run_processes

    commands = []
    for budget in budgets:
        for dataset in datasets:
            for method in methods:
                if method == "ADMM" and "ADMM+ens" in methods:
                    continue  # the ADMM+ens run writes it
                if force or not result_path(root, budget, dataset, method).is_file():
                    cmd = [sys.executable, __file__, "run-one", "--dataset", dataset, "--method",
                           method, "--budget", str(budget), "--root", str(root)]
                    commands += [cmd + (["--data-dir", data_dir] if data_dir else [])]
    print(f"{len(commands)} runs, {parallel} at a time, on {platform.node()} "
          f"({os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}), results in {root}",
          flush=True)
    run_processes(commands, parallel)


def table(root: Path) -> str:
    """Per budget: the scores per dataset, then each ADMM variant against each other method (wins
    / ties / losses and the mean difference, on the shared binary datasets and on all)."""
    lines = []
    for budget_dir in sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: float(p.name)):
        rows: dict[str, dict[str, dict]] = {}
        for path in sorted(budget_dir.glob("*/*.json")):
            r = json.loads(path.read_text())
            rows.setdefault(r["dataset"], {})[r["method"]] = r
        methods = [m for m in METHODS if any(m in by for by in rows.values())]
        lines.append(f"\nbudget {budget_dir.name} s — test score (AUROC; digits accuracy; "
                     "diabetes R²)")
        lines.append(f"{'dataset':<20}" + "".join(f"{m:>10}" for m in methods))
        for dataset, by in rows.items():
            lines.append(f"{dataset:<20}" + "".join(
                f"{by[m]['score']:>10.4f}" if m in by else f"{'-':>10}" for m in methods))
        lines.append(f"{'mean wall s (fit)':<20}" + "".join(
            f"{np.mean([by[m]['fit_time'] for by in rows.values() if m in by]):>10.1f}"
            for m in methods))
        pairs_of_methods = [(a, b) for i, a in enumerate(methods) for b in methods[i + 1:]
                            if a.startswith("ADMM")]
        for reference, other in pairs_of_methods:
            for label, keep in (("shared", lambda d: d not in BUNDLED), ("all", lambda d: True)):
                pairs = [(by[reference]["score"], by[other]["score"]) for d, by in rows.items()
                         if keep(d) and reference in by and other in by]
                if not pairs:
                    continue
                diff = np.array([a - b for a, b in pairs])
                lines.append(
                    f"{reference} vs {other} ({label}, {len(pairs)} datasets): "
                    f"{int((diff > TIE).sum())} wins / {int((abs(diff) <= TIE).sum())} ties / "
                    f"{int((diff < -TIE).sum())} losses, mean difference {diff.mean():+.4f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs="?", choices=("run", "run-one", "table"), default="run")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--datasets", nargs="*", help="default: every shared dataset + bundled")
    parser.add_argument("--dataset", help="run-one: the dataset")
    parser.add_argument("--methods", nargs="*", default=None, help=f"default: {METHODS}")
    parser.add_argument("--method", help="run-one: the method")
    parser.add_argument("--budgets", nargs="*", type=float, default=[60.0, 300.0])
    parser.add_argument("--budget", type=float, help="run-one: the budget")
    parser.add_argument("--root", default=str(RESULTS))
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--smoke", action="store_true",
                        help="two small datasets at 20 s, results in a temporary folder")
    args = parser.parse_args(argv)
    if args.command == "run-one":
        r = run_one(args.dataset, args.method, args.budget, args.data_dir,
                    result_path(Path(args.root), args.budget, args.dataset, args.method))
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
        run_all(datasets, methods, budgets, args.data_dir, root, args.parallel, args.force)
    print(table(root))


if __name__ == "__main__":
    main()
