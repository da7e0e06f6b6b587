"""Command line: ``admm-automl fit`` and ``admm-automl list``."""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import warnings
from pathlib import Path
from typing import Sequence

from .exceptions import ADMMAutoMLError, EvaluationFailedWarning

_LABELS = {"roc_auc": "AUROC", "roc_auc_ovr": "AUROC (one-vs-rest)", "accuracy": "accuracy"}


def _parser() -> argparse.ArgumentParser:
    from .evaluation.setup import METHOD_SUMMARIES

    parser = argparse.ArgumentParser(
        prog="admm-automl", description="AutoML pipeline search by ADMM."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    fit = sub.add_parser("fit", help="search a pipeline for a dataset and report its scores")
    fit.add_argument("--config", help="YAML configuration (estimator and data sections)")
    source = fit.add_mutually_exclusive_group()
    source.add_argument(
        "--dataset",
        help="a scikit-learn bundled dataset (e.g. breast_cancer), a file NAME.csv[.gz] of "
        "--data-dir, or an OpenML dataset openml:NAME or openml:ID (downloaded once, then cached)",
    )
    source.add_argument("--data", help="a CSV file (use with --target)")
    fit.add_argument("--target", help="name of the target column of --data")
    fit.add_argument("--data-dir", help="directory of NAME.csv[.gz] files with a 'target' column")
    fit.add_argument("--time-budget", type=float, help="search time in seconds")
    fit.add_argument("--max-evals", type=int, help="number of pipeline evaluations")
    fit.add_argument("--seed", type=int, help="random seed (random_state)")
    fit.add_argument("--search-space", help="built-in space name or YAML file")
    fit.add_argument("--theta-solver", help="θ-min solver name")
    fit.add_argument("--z-solver", help="z-min solver name")
    fit.add_argument("--method", choices=list(METHOD_SUMMARIES),
                     help="admm (default), jopt (one θ-solver over the joint space), select "
                     "(algorithm selection only, hyperparameters at their defaults) or flash "
                     "(FLASH: design, EIPS pruning, then the θ-solver on the pruned space; its "
                     "params go in a config file's method: {name: flash, params: {...}})")
    fit.add_argument("--inner-iter", type=int, help="evaluations per sub-problem (I or I0)")
    fit.add_argument("--inner-iter-step", type=int, help="adaptive step F (0 = fixed I)")
    fit.add_argument("--inner-iter-max", type=int, help="cap of the adaptive schedule")
    fit.add_argument("--cv", type=int, help="k-fold cross-validation instead of a holdout split")
    fit.add_argument("--n-jobs", type=int, help="worker processes")
    fit.add_argument("--executor", choices=["auto", "serial", "process", "dask"],
                     help="where trials run (dask: on --dask-address, else a local Dask cluster "
                     "of --n-jobs workers)")
    fit.add_argument("--dask-address", help="a Dask scheduler address, e.g. tcp://10.0.0.5:8786")
    fit.add_argument(
        "--constraint", action="append", metavar="EXPR",
        help="a black-box constraint such as 'latency <= 2e-5' or 'fpr <= 0.1' (repeatable)",
    )
    fit.add_argument("--constraint-mode", choices=["auto", "admm", "penalty", "filter"])
    fit.add_argument("--test-size", type=float, help="held-out test fraction (default 0.25)")
    fit.add_argument("--output", help="directory for the journal, resolved config and pipeline")
    fit.add_argument("--no-resume", dest="resume", action="store_false", default=None,
                     help="keep an existing journal in --output as journal-1.jsonl and start afresh "
                     "(by default a journal of the same run is resumed, one of another run refused)")
    fit.add_argument("-v", "--verbose", action="count", default=0)
    sub.add_parser("list", help="list solvers, spaces and metrics")
    return parser


def _fit(args: argparse.Namespace) -> int:
    import numpy as np
    from sklearn.model_selection import train_test_split

    from .config import Config, config_from_estimator, dump_config, load_config
    from .datasets import load_csv, load_dataset

    config = load_config(args.config) if args.config else Config()
    overrides = {
        "time_budget": args.time_budget,
        "max_evals": args.max_evals,
        "random_state": args.seed,
        "search_space": args.search_space,
        "theta_solver": args.theta_solver,
        "z_solver": args.z_solver,
        "method": args.method,
        "inner_iter": args.inner_iter,
        "inner_iter_step": args.inner_iter_step,
        "inner_iter_max": args.inner_iter_max,
        "cv": args.cv,
        "n_jobs": args.n_jobs,
        "executor": args.executor,
        "dask_address": args.dask_address,
        "constraints": args.constraint,
        "constraint_mode": args.constraint_mode,
        "output_dir": args.output,
        "resume": args.resume,
        "verbose": args.verbose or None,
    }
    config.estimator.update({k: v for k, v in overrides.items() if v is not None})
    if args.dataset:
        config.data = {"dataset": args.dataset}
        if args.data_dir:
            config.data["data_dir"] = args.data_dir
    elif args.data:
        if not args.target:
            raise ADMMAutoMLError("--data needs --target (the name of the target column)")
        config.data = {"csv": args.data, "target": args.target}
    if args.test_size is not None:
        config.data["test_size"] = args.test_size
    if "dataset" in config.data:
        X, y = load_dataset(config.data["dataset"], config.data.get("data_dir"))
    elif "csv" in config.data:
        X, y = load_csv(config.data["csv"], config.data["target"])
    else:
        raise ADMMAutoMLError("no data: give --dataset, --data with --target, or a config data section")
    seed = config.estimator.get("random_state")
    model = config.make_estimator()
    task = getattr(model, "_fixed_task", None) or config.estimator.get("task", "auto")
    stratify = None
    if task != "regression" and len(np.unique(y)) <= max(20, len(y) // 50):
        stratify = y
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=config.data.get("test_size", 0.25), random_state=seed, stratify=stratify
    )
    with warnings.catch_warnings():  # failures are reported in the summary below
        warnings.simplefilter("ignore", EvaluationFailedWarning)
        model.fit(X_train, y_train)
    label = _LABELS.get(model.metric_, model.metric_)
    test_score = model.metric_score(X_test, y_test)
    print("Best pipeline:")
    for name, step in model.best_pipeline_.steps:
        print(f"  {name}: {step}")
    print(f"Evaluations: {model.n_evals_} ({model.n_failed_} failed), stopped by {model.stop_reason_}")
    if getattr(model, "constraints", None):
        verdict = "met" if model.feasible_ else "NOT met (least violating pipeline)"
        print(f"Constraints {verdict}:")
        best = model.history_.loc[model.history_["eval_id"] == model.best_eval_id_].iloc[0]
        for c in model.constraints_:
            print(f"  {c}: validation value {best[f'constraint:{c.key}']:.4g}")
    print(f"Validation {label}: {model.best_score_:.4f}")
    print(f"Test {label}: {test_score:.4f}")
    if args.output:
        out = Path(args.output)
        out.mkdir(parents=True, exist_ok=True)
        dump_config(config_from_estimator(model, config.data), out / "config.resolved.yaml")
        with open(out / "best_pipeline.pkl", "wb") as fh:
            pickle.dump(model.best_pipeline_, fh)
        summary = {
            "best_params": {k: repr(v) if isinstance(v, tuple) else v
                            for k, v in model.best_params_.items()},
            "metric": model.metric_,
            "validation_score": model.best_score_,
            "test_score": test_score,
            "n_evals": model.n_evals_,
        }
        (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
        print(f"Wrote {out / 'journal.jsonl'}, config.resolved.yaml, best_pipeline.pkl, summary.json")
    return 0


def _list() -> int:
    from .constraints import CONSTRAINTS
    from .evaluation import list_metrics
    from .solvers import THETA_SOLVERS, Z_SOLVERS
    from .space import list_spaces, load_space

    from .evaluation.setup import METHOD_SUMMARIES

    print("methods:")
    for name, summary in METHOD_SUMMARIES.items():
        print(f"  {name:<16} {summary}")
    registries = (
        ("theta solvers", THETA_SOLVERS), ("z solvers", Z_SOLVERS), ("constraints", CONSTRAINTS)
    )
    for title, registry in registries:
        print(f"{title}:")
        for name in registry.names():
            print(f"  {name:<16} {registry.describe(name)}")
    print("search spaces:")
    for name in list_spaces():
        space = load_space(name)
        parts = []
        for task in ("classification", "regression"):
            sub = space.for_task(task)
            parts.append(f"{sub.n_pipelines} {task} pipelines ({sub.n_hyperparameters} hyperparameters)")
        print(f"  {name:<16} {', '.join(parts)}")
        if space.skipped:
            left_out = "; ".join(f"{choice} ({reason})" for _, choice, reason in space.skipped)
            print(f"  {'':<16} note: left out {left_out}")
    print("metrics:")
    print("  " + ", ".join(list_metrics()) + " (and any scikit-learn scorer name)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _fit(args) if args.command == "fit" else _list()
    except (ADMMAutoMLError, ValueError) as err:
        print(f"admm-automl: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
