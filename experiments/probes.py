"""The project's probe list: bad input a new user would try, run as that user would, with what
happens printed one line each (a Markdown table, the source of docs/probes.md).

Each probe is one call of the public API or of the command line. Its outcome is what the user
sees: ``ok`` with a short summary, ``warns`` with the warning, or the error's class and message.
The expected handling is written next to it, so a reader can compare; tests/test_bad_inputs.py
asserts the messages one by one.

    python experiments/probes.py            # every probe (about 2 minutes on 2 idle cores)
    python experiments/probes.py --smoke    # one probe per group, for CI (seconds)
    python experiments/probes.py --only predict,data
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import io  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from sklearn.datasets import load_breast_cancer  # noqa: E402

from admm_automl import ADMM, ADMMClassifier, ADMMRegressor  # noqa: E402
from admm_automl import cli  # noqa: E402
from admm_automl.testing import tiny_space  # noqa: E402

X, Y = load_breast_cancer(return_X_y=True, as_frame=True)
X, Y = X.iloc[:300, :8].copy(), Y.iloc[:300].to_numpy()
FAST = dict(search_space=tiny_space(), max_evals=6, inner_iter=3, inner_iter_step=0,
            theta_solver="random", z_solver="random", random_state=0, executor="serial")
TINY_DISCRETE = {"name": "tiny_discrete", "modules": [{"name": "estimator", "choices": [{
    "name": "tree", "class": "sklearn.tree.DecisionTreeClassifier", "hyperparameters": {
        "criterion": {"type": "categorical", "choices": ["gini", "entropy"], "default": "gini"},
        "max_depth": {"type": "int", "low": 1, "high": 2, "default": 1}}}]}]}


def fit(X_: Any = None, y: Any = None, cls: type = ADMMClassifier, **params: Any) -> Any:
    return cls(**{**FAST, **params}).fit(X if X_ is None else X_, Y if y is None else y)


def summary(model: Any) -> str:
    return (f"{model.n_evals_} evaluations ({model.n_failed_} failed), "
            f"validation {model.metric_} {model.best_score_:.3f}")


def with_column(name: str, values: Any) -> pd.DataFrame:
    frame = X.copy()
    frame[name] = values
    return frame


def space_file(class_path: str) -> str:
    folder = Path(tempfile.mkdtemp())
    path = folder / "space.yaml"
    path.write_text(
        "name: bad\nmodules:\n  - name: estimator\n    choices:\n"
        f"      - name: mine\n        class: {class_path}\n"
    )
    return str(path)


def run_cli(*argv: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(list(argv))
        except SystemExit as exit_:  # argparse's usage errors
            code = exit_.code
    lines = err.getvalue().strip().splitlines()
    return f"exit {code}; stderr ({len(lines)} line(s)): {lines[-1] if lines else ''}"


# --------------------------------------------------------------------------------- the probes
def _numeric_strings() -> str:
    as_text, plain = fit(X.astype(str)), fit()
    predicted = as_text.best_pipeline_.predict(X.astype(str))
    return (f"{summary(as_text)} (the same data as numbers: {plain.best_score_:.3f}); "
            f"best_pipeline_ predicts from the raw text: {predicted[:3]}")


def _datetime_column() -> str:
    model = fit(with_column("when", pd.date_range("2020-01-01", periods=len(X), freq="h")))
    features = model.best_pipeline_[0].get_feature_names_out()
    return f"{summary(model)}; features {list(features[-6:])}"


def _predict_array_for_frame() -> str:
    frame = with_column("city", np.where(np.arange(len(X)) % 3, "Oslo", "Rome"))
    return str(fit(frame).predict(frame.to_numpy()))


def _predict_string_in_numeric() -> str:
    bad = X.astype(object)
    bad.iloc[3, 1] = "n/a"
    return str(fit().predict(bad))


def _predict_numeric_strings() -> str:
    model = fit()
    same = (model.predict(X.astype(str)) == model.predict(X)).all()
    return f"predictions equal to those of the numbers: {same}"


def _exhausted_bo() -> str:
    start = time.perf_counter()
    model = fit(search_space=TINY_DISCRETE, theta_solver="bo", max_evals=20, inner_iter=16,
                inner_iter_step=16)
    return (f"{model.n_evals_} evaluations, stopped by {model.stop_reason_}, "
            f"{time.perf_counter() - start:.1f} s")


def _slow_serial() -> str:
    sleeps = {"seconds": {"type": "fixed", "value": 3}}
    space = tiny_space({"sleeper": {"class": "admm_automl.testing.SleepingClassifier",
                                    "hyperparameters": sleeps}})
    return summary(fit(search_space=space, time_budget=1.0, max_evals=None))


def _misbehaving(class_path: str, **params: Any) -> str:
    """A space of Gaussian naive Bayes and a misbehaving estimator: what its trials record."""
    space = tiny_space({"gnb": {"class": "sklearn.naive_bayes.GaussianNB"},
                        "bad": {"class": class_path}})
    model = fit(search_space=space, max_evals=4, **{"executor": "auto", **params})
    bad = model.history_[model.history_["param:estimator"] == "bad"]
    return f"{summary(model)}; the bad one: {sorted(set(zip(bad['status'], bad['error'])))}"


def _rerun_finished() -> str:
    """A finished run run again from its directory: nothing evaluated, the same model."""
    out = tempfile.mkdtemp()
    first = fit(output_dir=out, max_evals=10)
    again = fit(output_dir=out, max_evals=10)
    same = np.array_equal(first.predict_proba(X), again.predict_proba(X))
    return (f"ensemble {again.ensemble_weights_} (first run: {first.ensemble_weights_}), "
            f"the same predictions: {same}")


def _locked_directory() -> str:
    from admm_automl.run.lock import run_lock

    out = tempfile.mkdtemp()
    with run_lock(out):  # another fit holds the directory
        return summary(fit(output_dir=out))


def _serial_segfault() -> str:
    """A serial trial that kills the process, then the same script again."""
    import subprocess
    import sys

    folder = Path(tempfile.mkdtemp())
    script = folder / "search.py"
    script.write_text(
        "import sys\nfrom sklearn.datasets import load_breast_cancer\n"
        "from admm_automl import ADMM\nfrom admm_automl.testing import tiny_space\n"
        "X, y = load_breast_cancer(return_X_y=True)\n"
        "space = tiny_space({'crash': {'class': 'admm_automl.testing.SegfaultingClassifier'},\n"
        "                    'gnb': {'class': 'sklearn.naive_bayes.GaussianNB'}})\n"
        "m = ADMM(search_space=space, max_evals=4, executor='serial', random_state=0,\n"
        "         z_solver='random', theta_solver='random', output_dir=sys.argv[1]).fit(X, y)\n"
        "print(m.n_evals_, m.n_failed_)\n")
    codes = []
    for _ in range(4):
        proc = subprocess.run([sys.executable, str(script), str(folder / "run")],
                              capture_output=True, text=True)
        codes.append(proc.returncode)
        if proc.returncode == 0:
            break
    return f"exit codes {codes}; evaluations, failed: {proc.stdout.strip()}"


def _budget_cut() -> str:
    sleeps = {"seconds": {"type": "fixed", "value": 60}}
    space = tiny_space({"gnb": {"class": "sklearn.naive_bayes.GaussianNB"},
                        "sleeper": {"class": "admm_automl.testing.SleepingClassifier",
                                    "hyperparameters": sleeps}})
    model = fit(search_space=space, time_budget=5, trial_timeout=30, max_evals=None,
                executor="process")
    return f"{summary(model)}; statuses {model.history_['status'].tolist()}"


def _pyarrow_strings() -> str:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return "skipped: pyarrow is not installed"
    colours = pd.array(np.where(np.arange(len(X)) % 3, "red", "blue"), dtype="string[pyarrow]")
    frame = with_column("colour", colours)
    model = fit(frame)
    return f"{summary(model)}; predicts {model.predict(frame.iloc[:3]).tolist()}"


def _unwritable_directory() -> str:
    out = Path(tempfile.mkdtemp())
    (out / "trace.csv").mkdir()
    return summary(fit(output_dir=out))


#: (group, probe, expected handling, call)
PROBES: list[tuple[str, str, str, Callable[[], Any]]] = [
    # data: X
    ("data", "numbers stored as text in a DataFrame",
     "converted to numbers (also in best_pipeline_)", _numeric_strings),
    ("data", "a datetime column", "seconds since 1970 + year, month, day, weekday (+ hour)",
     _datetime_column),
    ("data", "Python date objects in a column", "as a datetime column",
     lambda: summary(fit(with_column("day", [pd.Timestamp(2020, 1, 1 + i % 28).date()
                                             for i in range(len(X))])))),
    ("data", "a timedelta column", "seconds",
     lambda: summary(fit(with_column("wait", pd.to_timedelta(np.arange(len(X)), unit="min"))))),
    ("data", "an object column mixing ints and strings", "DataError naming the column",
     lambda: fit(with_column("code", [i if i % 2 else f"x{i}" for i in range(len(X))]))),
    ("data", "duplicate column names", "DataError naming them",
     lambda: fit(X.set_axis(["a", "a", *X.columns[2:]], axis=1))),
    ("data", "text with pandas.NA (the 'string' dtype)", "NA imputed like NaN",
     lambda: summary(fit(with_column("s", pd.array(["a", None, "b"] * 100, dtype="string"))))),
    ("data", "a column of lists", "DataError naming the column",
     lambda: fit(with_column("tags", [[1, 2]] * len(X)))),
    ("data", "complex numbers", "DataError naming the column",
     lambda: fit(with_column("z", np.ones(len(X)) * 1j))),
    ("data", "infinity in a DataFrame", "DataError naming the column",
     lambda: fit(with_column("big", np.r_[np.inf, np.ones(len(X) - 1)]))),
    ("data", "'inf' as text", "DataError naming the column",
     lambda: fit(with_column("big", ["inf"] + ["1"] * (len(X) - 1)))),
    ("data", "a column that is all NaN", "imputed (zeros)",
     lambda: summary(fit(with_column("empty", np.nan)))),
    ("data", "a pandas Series as X", "DataError: X must be 2-D", lambda: fit(X.iloc[:, 0])),
    ("data", "a numpy array of numeric strings", "converted to numbers",
     lambda: summary(fit(X.to_numpy().astype(str)))),
    ("data", "an object array of numbers and text", "text one-hot encoded",
     lambda: summary(fit(np.c_[X.to_numpy()[:, :3].astype(object),
                               np.where(Y == 1, "yes", "no")]))),
    ("data", "X with no rows", "ValueError: 0 samples", lambda: fit(X.iloc[:0], Y[:0])),
    ("data", "a scipy sparse matrix", "scikit-learn: dense data is required",
     lambda: fit(__import__("scipy.sparse").sparse.csr_matrix(X.to_numpy()))),
    # data: y
    ("target", "one class", "DataError", lambda: fit(y=np.zeros(len(X)))),
    ("target", "NaN in y", "ValueError naming NaN", lambda: fit(y=np.r_[np.nan, Y[1:]])),
    ("target", "y shorter than X", "ValueError: inconsistent numbers of samples",
     lambda: fit(y=Y[:-1])),
    ("target", "continuous y for ADMMClassifier", "ValueError: unknown label type",
     lambda: fit(y=np.linspace(0, 1, len(X)))),
    ("target", "text y for ADMMRegressor", "DataError: regression needs a numeric target",
     lambda: fit(y=np.where(Y == 1, "a", "b"), cls=ADMMRegressor)),
    ("target", "5 rows", "DataError: AUROC cannot be computed on the validation split",
     lambda: fit(X.iloc[:5], np.array([0, 1, 0, 1, 0]))),
    ("target", "2 positives in 300 rows", "DataError naming the rows per class",
     lambda: fit(y=np.r_[1, 1, np.zeros(len(X) - 2, dtype=int)])),
    ("target", "a class too rare for 3-fold AUROC", "DataError naming the fold",
     lambda: fit(cv=3, y=np.r_[1, 1, np.zeros(len(X) - 2, dtype=int)])),
    # predict time
    ("predict", "a numpy array for a model fitted on a DataFrame with text columns",
     "DataError naming the text columns", _predict_array_for_frame),
    ("predict", "a string in a numeric column", "DataError naming the column, value and row",
     _predict_string_in_numeric),
    ("predict", "numbers stored as text in a numeric column", "converted",
     _predict_numeric_strings),
    ("predict", "a column fewer", "ValueError naming the missing column",
     lambda: fit().predict(X.iloc[:, :-1])),
    ("predict", "renamed columns", "ValueError: the feature names should match",
     lambda: fit().predict(X.set_axis([f"c{i}" for i in range(X.shape[1])], axis=1))),
    ("predict", "predict before fit", "NotFittedError", lambda: ADMM().predict(X)),
    # parameters and set-up
    ("setup", "a space naming a class that does not exist", "InvalidParameterError at set-up, "
     "with a did-you-mean", lambda: fit(search_space=space_file(
         "sklearn.ensemble.RandomForrestClassifier"))),
    ("setup", "a space naming a package that is not installed", "InvalidParameterError at set-up",
     lambda: fit(search_space=space_file("catboost.CatBoostClassifier"))),
    ("setup", "a space giving a class a parameter it does not take", "InvalidParameterError at "
     "set-up, with a did-you-mean", lambda: fit(search_space=tiny_space({"forest": {
         "class": "sklearn.ensemble.RandomForestClassifier", "hyperparameters": {
             "n_estimatorz": {"type": "fixed", "value": 10}}}}))),
    ("setup", "time_budget=0.5 s with worker processes", "SearchError: the budget ended before "
     "any evaluation finished", lambda: fit(executor="auto", time_budget=0.5, max_evals=None)),
    ("setup", "executor='serial', time_budget=1 s, a 3 s fit", "TimeBudgetWarning after the run",
     _slow_serial),
    ("setup", "n_jobs=-1", "InvalidParameterError", lambda: fit(n_jobs=-1)),
    ("setup", "trial_timeout with executor='serial'", "InvalidParameterError",
     lambda: fit(trial_timeout=5)),
    ("setup", "a regression metric for classification", "InvalidParameterError",
     lambda: fit(scoring="rmse")),
    ("setup", "output_dir is a file", "an error naming the path",
     lambda: fit(output_dir=__file__)),
    # pipelines and solvers
    ("search", "a pipeline that predicts NaN", "recorded as failed: non-finite values",
     lambda: _misbehaving("admm_automl.testing.NaNClassifier", executor="serial")),
    ("search", "a fit that sleeps, trial_timeout=2", "recorded as timeout",
     lambda: _misbehaving("admm_automl.testing.SleepingClassifier", trial_timeout=2)),
    ("search", "a fit stuck in one C call, trial_timeout=2", "recorded as timeout",
     lambda: _misbehaving("admm_automl.testing.BusyClassifier", trial_timeout=2)),
    ("search", "a fit that allocates 4 GiB, memory_limit=1024", "recorded as memout",
     lambda: _misbehaving("admm_automl.testing.MemoryHogClassifier", memory_limit=1024)),
    ("search", "every pipeline fails", "SearchError with the errors",
     lambda: fit(search_space=tiny_space({"raiser": {
         "class": "admm_automl.testing.RaisingClassifier"}}))),
    ("search", "bo on a space of 4 configurations, max_evals=20", "stops, exhausted, in seconds",
     _exhausted_bo),
    # the run directory
    ("rundir", "a finished run run again from its directory",
     "nothing evaluated; the same ensemble and predictions", _rerun_finished),
    ("rundir", "a second fit on a directory another fit is writing",
     "refused at once, naming the holder's process", _locked_directory),
    ("rundir", "a space file whose class is subprocess.Popen",
     "refused before anything is called, naming the path",
     lambda: fit(search_space=space_file("subprocess.Popen"))),
    ("rundir", "a serial trial that segfaults, then the same call again",
     "the second call records it as failed and finishes", _serial_segfault),
    ("rundir", "a trial cut by the end of the time budget",
     "cancelled: not counted as an evaluation or a failure", _budget_cut),
    ("rundir", "the run directory cannot be written at the end (a full disk)",
     "a warning naming the file; the fitted model kept", _unwritable_directory),
    # messages
    ("messages", "scoring='auroc'", "did you mean 'roc_auc'", lambda: fit(scoring="auroc")),
    ("messages", "a constraint without its number, 'latency <='", "says a number must follow",
     lambda: fit(constraints=["latency <="])),
    ("messages", "a regression target times 1e200", "names the values, not the folds",
     lambda: fit(cls=ADMMRegressor, y=np.linspace(1.0, 2.0, len(X)) * 1e200)),
    ("messages", "fit --test-size 1.5", "a usage error (exit 2)",
     lambda: run_cli("fit", "--dataset", "breast_cancer", "--test-size", "1.5")),
    ("messages", "a text column with one value per row", "a warning naming the column",
     lambda: summary(fit(with_column("customer", [f"c{i:05d}" for i in range(len(X))])))),
    ("messages", "a string[pyarrow] column", "as a text column", _pyarrow_strings),
    # command line
    ("cli", "fit --search-space with a class that does not exist", "one line, non-zero exit",
     lambda: run_cli("fit", "--dataset", "breast_cancer", "--max-evals", "2", "--search-space",
                     space_file("sklearn.svm.SVX"))),
    ("cli", "fit --time-budget 0.5", "one line, non-zero exit",
     lambda: run_cli("fit", "--dataset", "breast_cancer", "--time-budget", "0.5")),
    ("cli", "fit --data with a missing file", "one line, non-zero exit",
     lambda: run_cli("fit", "--data", "missing.csv", "--target", "y")),
    ("cli", "fit --dataset with an unknown name", "one line, non-zero exit",
     lambda: run_cli("fit", "--dataset", "breast_cancr", "--max-evals", "2")),
]


def outcome(probe: Callable[[], Any]) -> str:
    """What the user sees: the result, the first warning, or the error, on one line."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = probe()
        except Exception as err:
            return f"**{type(err).__name__}**: {' '.join(str(err).split())}"
    ours = [w for w in caught if "admm_automl" in type(w.message).__module__
            and type(w.message).__name__ != "EvaluationFailedWarning"]
    text = "ok" if result is None or not isinstance(result, str) else f"ok: {result}"
    if ours:
        text += f"; warns **{type(ours[0].message).__name__}**: {ours[0].message}"
    return text


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="one probe per group")
    parser.add_argument("--only", help="comma-separated groups")
    args = parser.parse_args(argv)
    groups = set(args.only.split(",")) if args.only else None
    seen: set[str] = set()
    print("| group | probe | expected | what happens | s |")
    print("|---|---|---|---|---|")
    for group, name, expected, probe in PROBES:
        if (groups and group not in groups) or (args.smoke and group in seen):
            continue
        seen.add(group)
        start = time.perf_counter()
        text = outcome(probe).replace("|", "\\|").replace("\n", " ")
        print(f"| {group} | {name} | {expected} | {text} | {time.perf_counter() - start:.1f} |",
              flush=True)


if __name__ == "__main__":
    main()
