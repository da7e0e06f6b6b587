"""Command line: ``admm-automl fit``, ``admm-automl predict``, ``admm-automl report`` and
``admm-automl list``.

Exit codes, as is conventional: 0 success; 1 a run error (every pipeline failed, workers that
cannot start, a missing optional dependency, any unexpected error); 2 a usage error (a bad option,
configuration, data file, name or output directory); 130 interrupted (Ctrl-C). An error prints one
line, ``admm-automl: error: ...``, on standard error (``--traceback`` adds the traceback).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
import warnings
from typing import Any, Callable, Sequence

from .evaluation.metrics import shown
from .methods.registry import METHODS
from .run.params import add_fit_options, fit_overrides
from .exceptions import (
    ADMMAutoMLError,
    ADMMAutoMLWarning,
    ConfigError,
    DataError,
    InvalidParameterError,
    MissingDependencyError,
    ResumeError,
)

#: errors in what the user gave (exit code 2); any other error is a run error (exit code 1)
USAGE_ERRORS = (InvalidParameterError, ConfigError, DataError, ResumeError)



def _fraction(text: str) -> float:
    """A number strictly between 0 and 1 (argparse reports anything else as a usage error)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not a fraction in (0, 1)")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="admm-automl", description="AutoML pipeline search by ADMM.",
        epilog="exit codes: 0 success, 1 run error, 2 usage error, 130 interrupted",
    )
    parser.add_argument("--traceback", action="store_true",
                        help="print the traceback of an error, not only its message")
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
    fit.add_argument("--group-by", metavar="COLUMN",
                     help="the column of the data whose groups the group-fairness constraints "
                     "compare (those without a group_by of their own), e.g. --constraint "
                     "'demographic_parity_difference <= 0.05' --group-by sex")
    add_fit_options(fit)  # every estimator parameter that has an option (run/params.py)
    fit.add_argument("--test-size", type=_fraction,
                     help="held-out test fraction, in (0, 1) (default 0.25)")
    talk = fit.add_mutually_exclusive_group()
    talk.add_argument("-v", "--verbose", action="count", default=0,
                      help="log every iteration (-vv: every evaluation) to standard error")
    talk.add_argument("-q", "--quiet", action="store_true",
                      help="print nothing but errors: no progress display, no summary")
    fit.add_argument("--progress", action="store_true",
                     help="show the progress display even when standard error is not a terminal")
    report = sub.add_parser("report", help="write the HTML and Markdown report of a run directory")
    report.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (fit --output)")
    report.add_argument("--output", help="the HTML file to write (default RUN_DIR/report.html); "
                        "the Markdown twin goes beside it")
    predict = sub.add_parser("predict", help="predict the rows of a CSV file with the model of a "
                             "run directory (its model.pkl)")
    predict.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (fit --output)")
    predict.add_argument("data", metavar="DATA", help="a CSV file with the columns the model was "
                         "fitted on (others, such as the target, are left out)")
    predict.add_argument("--output", help="the CSV file to write, one column 'prediction' "
                         "(default: standard output)")
    sub.add_parser("list", help="list methods, solvers, constraints, spaces and metrics")
    return parser


def _config(args: argparse.Namespace) -> Any:
    """The configuration file (if any) with what the options give on top of it."""
    from .config import Config, load_config

    config = load_config(args.config) if args.config else Config()
    config.estimator.update(fit_overrides(args))  # --cv holdout gives cv=None: kept
    talk = {"verbose": args.verbose or None,
            "progress": False if args.quiet else True if args.progress else None}
    config.estimator.update({k: v for k, v in talk.items() if v is not None})
    if args.group_by is not None:  # kept in the resolved configuration, as the constraints' own
        from .constraints import with_group_by

        config.estimator["constraints"] = with_group_by(config.estimator.get("constraints"),
                                                        args.group_by)
    if args.dataset:
        config.data = {"dataset": args.dataset}
        if args.data_dir:
            config.data["data_dir"] = args.data_dir
    elif args.data:
        if not args.target:
            raise ConfigError("--data needs --target (the name of the target column)")
        config.data = {"csv": args.data, "target": args.target}
    if args.test_size is not None:
        config.data["test_size"] = args.test_size
    return config


def _split_data(config: Any, model: Any) -> tuple[Any, Any, Any, Any]:
    """``X_train, X_test, y_train, y_test`` of the configuration's data (stratified for a
    classification with few classes), split by the run's seed."""
    import numpy as np
    from sklearn.model_selection import train_test_split

    from .datasets import load_csv, load_dataset

    if "dataset" in config.data:
        X, y = load_dataset(config.data["dataset"], config.data.get("data_dir"))
    elif "csv" in config.data:
        X, y = load_csv(config.data["csv"], config.data["target"])
    else:
        raise ConfigError("no data: give --dataset, --data with --target, or a config data section")
    task = getattr(model, "_fixed_task", None) or config.estimator.get("task", "auto")
    stratify = None
    if task != "regression" and len(np.unique(y)) <= max(20, len(y) // 50):
        stratify = y
    return train_test_split(X, y, test_size=config.data.get("test_size", 0.25),
                            random_state=config.estimator.get("random_state"), stratify=stratify)


def _fit(args: argparse.Namespace) -> int:
    from .reporting.rundir import MODEL_FILE, ensemble_summary, write_run

    say: Callable[..., Any] = (lambda *a, **k: None) if args.quiet else print
    config = _config(args)
    model = config.make_estimator()
    X_train, X_test, y_train, y_test = _split_data(config, model)
    asked = model.progress
    if asked is None and sys.stderr.isatty():  # the command line shows progress in a terminal
        model.set_params(progress=True)
    with warnings.catch_warnings():  # failures and constraints are reported in the summary below
        warnings.simplefilter("ignore", ADMMAutoMLWarning)
        model.fit(X_train, y_train)
    model.set_params(progress=asked)  # the resolved configuration records what was asked
    test_score = model.metric_score(X_test, y_test)
    offset = model.best_score_ + model.best_loss_  # score = offset − loss
    label, validation = shown(model.metric_, offset, model.best_loss_)
    test = shown(model.metric_, offset, offset - test_score)[1]
    ensemble = ensemble_summary(model)
    if ensemble is not None:  # what predict uses, and so the test score
        loss = ensemble["validation_loss"]
        say(f"Model: an ensemble of {len(ensemble['members'])} pipelines (validation {label} "
            f"{shown(model.metric_, offset, loss)[1]:.4f}), used by predict; the test score "
            "below is the ensemble's:")
        for member in ensemble["members"]:
            say(f"  {member['weight']:.0%}  {member['pipeline']} (evaluation {member['eval_id']})")
    say(f"{'Best single pipeline' if ensemble is not None else 'Best pipeline'}: "
        f"{_best_pipeline_name(model)} (evaluation {model.best_eval_id_})")
    for line in _step_lines(model.best_pipeline_):
        say(line)
    from .reporting.rundir import evaluations_note, step_counts, steps_note, timeout_seconds

    note = evaluations_note(model.n_failed_, model.n_timeouts_, timeout_seconds(model.history_))
    say(f"Evaluations: {model.n_evals_} ({note}), stopped by {model.stop_reason_}")
    if steps := step_counts(model.history_):
        say(f"Steps: {steps_note(steps)}")
    cache = model.prefix_cache_
    if cache["hits"]:
        say(f"Prefix cache: {cache['hit_rate']:.0%} of lookups hit, {cache['fits_saved']} step fits "
            f"and {cache['seconds_saved']:.1f} s saved")
    if getattr(model, "constraints", None):
        from .final.results import describe_constraints

        verdict = ("NOT met (least violating pipeline)" if not model.feasible_
                   else "met by the ensemble" if model.ensemble_ is not None else "met")
        say(f"Constraints {verdict}, on the validation data:")
        for line in describe_constraints(model):
            say(f"  {line}")
    if ensemble is None:
        say(f"Validation {label}: {validation:.4f}")
    else:  # the validation score of what predicts, beside the test score, which is the ensemble's
        ensemble_validation = shown(model.metric_, offset, ensemble["validation_loss"])[1]
        say(f"Validation {label}: {ensemble_validation:.4f} (the ensemble's; the best single "
            f"pipeline's {validation:.4f})")
    say(f"Test {label}: {test:.4f}")
    if model.output_dir is not None:  # from --output or the configuration file
        out = write_run(model, model.output_dir, data=config.data, test_score=test_score)
        say(f"Run directory: {out} (journal.jsonl, trace.csv, summary.json, "
            f"config.resolved.yaml, best_pipeline.pkl, {MODEL_FILE})")
        say(_write_report(out, after_fit=True))
        if (out / MODEL_FILE).is_file():  # the last lines: what to deploy, and how
            what = "the ensemble" if ensemble is not None else "the best pipeline"
            say(f"Saved model: {out / MODEL_FILE}, the fitted estimator that predicts with {what} "
                "(the test score's model)")
            say(f"  predict with it: admm-automl predict {out} DATA.csv; or in Python "
                "joblib.load(path) or pickle.load(open(path, 'rb')), then .predict(X) "
                "(admm-automl installed)")
    return 0


def _best_pipeline_name(model: Any) -> str:
    """The best pipeline by the names of its choices (``"standard_scaler -> lightgbm"``)."""
    history = model.history_
    return str(history.loc[history["eval_id"] == model.best_eval_id_, "pipeline"].iloc[0])


def _step_lines(pipeline: Any, width: int = 100) -> list[str]:
    """One line per step, ``"  estimator: LGBMClassifier(learning_rate=0.0383, ...)"``: the
    parameters that differ from the class's defaults, wrapped at ``width`` columns
    (:func:`~admm_automl.reporting.describe.describe`; a step's full ``repr`` lists every default
    and objects by their memory address)."""
    import textwrap

    from .reporting.describe import describe

    return [textwrap.fill(f"  {name}: {describe(step)}", width=width, subsequent_indent="      ",
                          break_long_words=False, break_on_hyphens=False)
            for name, step in pipeline.steps]


def _write_report(run_dir: Any, path: Any = None, *, after_fit: bool = False) -> str:
    """Write the report of ``run_dir``; the line that says where it is. After ``fit`` a missing
    matplotlib is said, not raised: the run itself succeeded."""
    from .reporting.report import write_report

    try:
        html = write_report(run_dir, path)
    except MissingDependencyError as err:
        if not after_fit:
            raise
        return f"Report: not written ({err}); then `admm-automl report {run_dir}` writes it"
    return f"Report: {html} (Markdown: {html.with_suffix('.md')})"


def _report(args: argparse.Namespace) -> int:
    print(_write_report(args.run_dir, args.output))
    return 0


def _predict(args: argparse.Namespace) -> int:
    """Predict ``args.data`` with the run directory's ``model.pkl``, the fitted estimator whose
    predictions ``fit`` scored (the ensemble when there is one)."""
    from pathlib import Path

    import joblib
    import pandas as pd

    from .reporting.rundir import MODEL_FILE

    path = Path(args.run_dir) / MODEL_FILE
    if not path.is_file():
        raise ConfigError(f"{path} not found: `admm-automl fit --output {args.run_dir}` writes it "
                          "when the fit ends")
    try:
        X = pd.read_csv(args.data)
    except (OSError, ValueError) as err:
        raise DataError(f"cannot read {args.data}: {err}") from None
    model = joblib.load(path)
    names = getattr(model, "feature_names_in_", None)
    if names is not None:  # the fitted columns, in their order; the target and the like left out
        missing = [str(name) for name in names if name not in X.columns]
        if missing:
            raise DataError(f"{args.data} lacks {len(missing)} of the columns the model was fitted "
                            f"on: {', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''}")
        X = X[list(names)]
    predictions = pd.DataFrame({"prediction": model.predict(X)})
    if args.output:
        predictions.to_csv(args.output, index=False)
        print(f"Predictions: {args.output} ({len(predictions)} rows, by {path})")
    else:
        predictions.to_csv(sys.stdout, index=False)
    return 0


def _list() -> int:
    from .constraints import CONSTRAINTS
    from .evaluation import list_metrics
    from .solvers import THETA_SOLVERS, Z_SOLVERS
    from .space import list_spaces, load_space

    print("methods:")
    for name in METHODS:
        print(f"  {name:<16} {METHODS[name].summary}")
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
    """Run the command line; returns the exit code (argparse exits with 2 by itself on a bad
    option)."""
    args = _parser().parse_args(argv)
    commands = {"fit": _fit, "predict": _predict, "report": _report, "list": lambda _: _list()}
    try:
        return commands[args.command](args)
    except BrokenPipeError:  # `admm-automl list | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        resume = (" (run the same command again to resume it)"
                  if args.command == "fit" and args.output_dir else "")
        print(f"admm-automl: interrupted{resume}", file=sys.stderr)
        return 130
    except Exception as err:  # one line, not a traceback: the user reads the message
        if args.traceback:
            traceback.print_exc()
        usage = isinstance(err, USAGE_ERRORS)
        plain = isinstance(err, (ADMMAutoMLError, RuntimeError, OSError))  # messages for users
        what = str(err) if plain and str(err) else f"{type(err).__name__}: {err}"
        print(f"admm-automl: error: {what}", file=sys.stderr)
        return 2 if usage else 1


if __name__ == "__main__":
    sys.exit(main())
