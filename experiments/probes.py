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
    codes, said = [], ""
    for _ in range(10):  # each crashing trial (a key) runs twice, in two sessions
        proc = subprocess.run([sys.executable, str(script), str(folder / "run")],
                              capture_output=True, text=True)
        codes.append(proc.returncode)
        said = said or next((line for line in proc.stderr.splitlines() if "Fatal" in line), "")
        if proc.returncode == 0:
            break
    return (f"exit codes {codes}; evaluations, failed: {proc.stdout.strip()}; a crash's "
            f"standard error: {said!r}")


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


def _finished_run(**params: Any) -> Path:
    """A run directory of a finished fit (with an ensemble, its kept predictions in
    ``predictions/``)."""
    return _finished(**params)[0]


def _finished(**params: Any) -> tuple[Path, Any]:
    out = Path(tempfile.mkdtemp())
    return out, fit(output_dir=out, max_evals=10, **params)


def _planted_link() -> str:
    """summary.json a symbolic link to a file of the user's, before the fit writes it."""
    out, victim = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp()) / "precious.txt"
    victim.write_text("the user's own file")
    (out / "summary.json").symlink_to(victim)
    fit(output_dir=out, max_evals=4)
    return (f"the link's target still reads {victim.read_text()!r}; summary.json is now "
            f"{'a link' if (out / 'summary.json').is_symlink() else 'a plain file'}")


def _damaged_prediction(damage: str) -> str:
    """A finished run, the kept prediction file of an ensemble member damaged, then the same
    fit again."""
    out, first = _finished()
    path = out / "predictions" / f"{min(first.ensemble_weights_)}.npy"
    path.unlink()
    if damage == "shape":
        np.save(path, np.zeros(5))
    elif damage == "fifo":
        os.mkfifo(path)
    again = fit(output_dir=out, max_evals=10)
    same = again.ensemble_weights_ == first.ensemble_weights_
    return (f"{summary(again)}; ensemble {again.ensemble_weights_} "
            f"({'the same as' if same else 'NOT the same as'} the uninterrupted run's)")


def _damaged_record(edit: Callable[[dict], Any]) -> str:
    """A finished run whose journal's third record was edited by hand, then the same fit."""
    import json

    out = _finished_run()
    journal = out / "journal.jsonl"
    lines = journal.read_text(encoding="utf-8").splitlines()
    n = next(i for i, line in enumerate(lines) if json.loads(line).get("eval_id") == 2)
    record = json.loads(lines[n])
    edit(record)
    lines[n] = json.dumps(record)
    journal.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return summary(fit(output_dir=out, max_evals=10))


def _truncated_journal() -> str:
    """The journal's last line cut in half (a kill while writing it), then the same fit."""
    out = _finished_run(ensemble_size=0)
    journal = out / "journal.jsonl"
    text = journal.read_text(encoding="utf-8")
    last = text.rstrip("\n").rsplit("\n", 1)[1]
    journal.write_text(text[:len(text) - len(last) // 2 - 1], encoding="utf-8")
    again = fit(output_dir=out, max_evals=10, ensemble_size=0)
    return f"{summary(again)}; statuses {sorted(set(again.history_['status']))}"


def _killed_report() -> str:
    """``admm-automl report`` of a directory whose run was killed before its first evaluation
    (the journal's header and one trial's start mark)."""
    import json

    from admm_automl.journal import Journal

    out = Path(tempfile.mkdtemp())
    Journal(out / "journal.jsonl", {"metric": "roc_auc", "package_version": "0"}).close()
    with open(out / "journal.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"started": {"key": "k", "z": [0], "theta": [], "fidelity": 1.0,
                                         "iterations": None}}) + "\n")
    result = run_cli("report", str(out))
    lines = [line for line in (out / "report.md").read_text().splitlines()
             if line.startswith("| evaluations")]
    return f"{result}; report.md: {lines[0] if lines else '(no evaluations row)'}"


_KILLED_SCRIPT = (
    "import sys\nfrom sklearn.datasets import load_breast_cancer\n"
    "from admm_automl import ADMM\nfrom admm_automl.testing import tiny_space\n"
    "X, y = load_breast_cancer(return_X_y=True)\n"
    "space = tiny_space({'nb': {'class': 'admm_automl.testing.estimators.KilledAtFitNB'}})\n"
    "m = ADMM(search_space=space, max_evals=6, executor='serial', random_state=0, cv=None,\n"
    "         z_solver='random', theta_solver='random', inner_iter=3, inner_iter_step=0,\n"
    "         output_dir=sys.argv[1]).fit(X, y)\n"
    "print(list(m.history_['loss'].round(6)), m.best_eval_id_)\n")


def _serial_kill(signal_name: str) -> str:
    """A serial fit killed in its third fit by ``signal_name``, resumed, against the same fit
    uninterrupted."""
    import subprocess
    import sys

    folder = Path(tempfile.mkdtemp())
    script = folder / "search.py"
    script.write_text(_KILLED_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "ADMM_AUTOML_TEST_KILL_AT_FIT"}
    straight = subprocess.run([sys.executable, str(script), str(folder / "straight")], env=env,
                              capture_output=True, text=True)
    killed = subprocess.run([sys.executable, str(script), str(folder / "killed")],
                            env={**env, "ADMM_AUTOML_TEST_KILL_AT_FIT": f"{signal_name} 3"},
                            capture_output=True, text=True)
    resumed = subprocess.run([sys.executable, str(script), str(folder / "killed")], env=env,
                             capture_output=True, text=True)
    return (f"killed: exit {killed.returncode}; resumed: the same losses and best as the "
            f"uninterrupted run: {resumed.stdout == straight.stdout} ({resumed.stdout.strip()})")


def _full_disk_serial() -> str:
    """A serial fit whose journal cannot grow past 6000 bytes (a file-size limit as a full
    disk): the last line of what the user reads."""
    import subprocess
    import sys

    out = Path(tempfile.mkdtemp())
    code = ("import resource, signal, sys\nfrom sklearn.datasets import load_breast_cancer\n"
            "from admm_automl import ADMM\nfrom admm_automl.testing import tiny_space\n"
            "X, y = load_breast_cancer(return_X_y=True)\n"
            "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (6000, 6000))\n"
            "ADMM(search_space=tiny_space(), theta_solver='random', z_solver='random',\n"
            "     executor='serial', cv=None, max_evals=40, random_state=0,\n"
            "     output_dir=sys.argv[1]).fit(X, y)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True)
    lines = proc.stderr.strip().splitlines()
    return f"exit {proc.returncode}; last line: {lines[-1] if lines else ''}"


def _no_locks() -> str:
    """flock answering ENOLCK, as NFS without its lock service does."""
    import errno
    import fcntl
    from unittest import mock

    def no_locks(fd: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    with mock.patch.object(fcntl, "flock", no_locks):
        return summary(fit(output_dir=tempfile.mkdtemp()))


def _longer_budget_resume() -> str:
    """A run at time_budget=5 s with cv='auto', resumed at 10 s (cv='auto' repeats its folds
    twice at 10 s for 300 rows of 8 features, once at 5 s)."""
    out = tempfile.mkdtemp()
    params = dict(cv="auto", max_evals=2, output_dir=out)
    fit(time_budget=5, **params)
    return summary(fit(time_budget=10, **params))


def _fence_in_report() -> str:
    """An error message holding a line of three backticks, in report.md."""
    message = "it said:\n```\n# not a heading\n```\nand stopped"
    space = tiny_space({"gnb": {"class": "sklearn.naive_bayes.GaussianNB"},
                        "fails": {"class": "admm_automl.testing.RaisingClassifier",
                                  "hyperparameters": {"message": {"type": "fixed",
                                                                  "value": message}}}})
    out = Path(tempfile.mkdtemp())
    fit(search_space=space, cv=None, output_dir=out).report()
    outside, fence = [], None
    for line in (out / "report.md").read_text(encoding="utf-8").splitlines():
        if fence is None and line.startswith("```"):
            fence = line.strip()
        elif fence is not None and line.strip() == fence:
            fence = None
        elif fence is None:
            outside.append(line)
    return (f"the message's lines outside a code block: "
            f"{[line for line in outside if 'not a heading' in line or 'and stopped' in line]}")


def _slow_callback() -> str:
    """A callback that takes 2.5 s an evaluation, time_budget=4 s."""
    return summary(fit(time_budget=4, max_evals=None,
                       callbacks=[lambda record, best: time.sleep(2.5)]))


def _user_space_named_default() -> str:
    space = {"name": "default", "modules": [{"name": "estimator", "choices": [
        {"name": "gnb", "class": "sklearn.naive_bayes.GaussianNB"}]}]}
    model = fit(search_space=space, max_evals=3)
    return f"{summary(model)}; pipelines {sorted(set(model.history_['pipeline']))}"


def _yaml_exponent() -> str:
    folder = Path(tempfile.mkdtemp())
    path = folder / "space.yaml"
    path.write_text(
        "name: tol\nmodules:\n  - name: estimator\n    choices:\n      - name: lr\n"
        "        class: sklearn.linear_model.LogisticRegression\n        hyperparameters:\n"
        "          tol: {type: float, low: 1e-12, high: 1e-2, log: true, default: 1e-4}\n")
    return summary(fit(search_space=str(path)))


def _probe_beats_full_data() -> str:
    """A chance-level learner fitted on all 10 000 training rows and a good one too slow for
    them (its probe on a tenth predicts a full fit past the 1 s trial timeout)."""
    from sklearn.datasets import make_classification

    space = tiny_space({
        "prior": {"class": "sklearn.dummy.DummyClassifier",
                  "hyperparameters": {"strategy": {"type": "fixed", "value": "prior"}}},
        "slow_nb": {"class": "admm_automl.testing.SlowGaussianNB", "hyperparameters": {
            "seconds": {"type": "fixed", "value": 0.2}}}})
    X_, y = make_classification(n_samples=12_500, n_features=2, n_informative=2, n_redundant=0,
                                random_state=0)
    model = ADMM(search_space=space, theta_solver="random", z_solver="random", trial_timeout=1,
                 max_evals=6, executor="process", n_jobs=1, cv=None, random_state=0).fit(X_, y)
    return f"returns {model.best_pipeline_[-1].__class__.__name__}, {summary(model)}"


def _counts() -> str:
    """Failures and a trial cut at the budget's end: n_evals_, the warning and history_."""
    space = tiny_space({"gnb": {"class": "sklearn.naive_bayes.GaussianNB"},
                        "raiser": {"class": "admm_automl.testing.RaisingClassifier"},
                        "sleeper": {"class": "admm_automl.testing.SleepingClassifier",
                                    "hyperparameters": {"seconds": {"type": "fixed",
                                                                    "value": 60}}}})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = ADMMClassifier(search_space=space, time_budget=5, trial_timeout=30,
                               random_state=0, z_solver="random", executor="process",
                               portfolio=None, ensemble_size=0).fit(X, Y)
    said = [str(w.message) for w in caught if type(w.message).__name__ ==
            "EvaluationFailedWarning"]
    return (f"n_evals_ {model.n_evals_}, n_failed_ {model.n_failed_}, history_ "
            f"{len(model.history_)} rows; the warning: {said[0] if said else '(none)'}")


def _workers_killed() -> str:
    """From the first evaluation on, every worker process killed as soon as it appears,
    max_evals=12 and no time budget."""
    import threading

    import psutil

    done = threading.Event()

    def killer() -> None:
        me = psutil.Process()
        while not done.is_set():
            for child in me.children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    child.kill()
            time.sleep(0.05)

    thread = threading.Thread(target=killer, daemon=True)

    def start_killing(record: dict, best: Any) -> None:
        if not thread.is_alive() and not done.is_set():
            thread.start()

    try:
        model = fit(executor="process", n_jobs=1, max_evals=12, callbacks=[start_killing])
    finally:
        done.set()
        if thread.is_alive():
            thread.join()
    return f"{summary(model)}, stopped by {model.stop_reason_}"


def _threshold_optimizer_unseen_group() -> str:
    """A threshold-optimized model fitted on groups 'f' and 'm', asked about 'Martian'."""
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    from admm_automl.constraints import ThresholdOptimizerClassifier

    frame = with_column("sex", np.where(np.arange(len(X)) % 2, "m", "f"))
    learner = make_pipeline(make_column_transformer((OneHotEncoder(), ["sex"]),
                                                    remainder="passthrough"),
                            LogisticRegression(max_iter=1000))
    model = ThresholdOptimizerClassifier(learner, group_by="sex", random_state=0).fit(frame, Y)
    return str(model.predict(frame.assign(sex="Martian"))[:5])


FAIRNESS = [{"name": "demographic_parity_difference", "threshold": 0.1, "group_by": "g"}]


def _two_groups() -> pd.DataFrame:
    return with_column("g", np.where(np.arange(len(X)) % 2, "a", "b"))


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
    ("target", "12 rows of 3 classes, cv='auto' (5 folds)", "DataError naming the rows per class",
     lambda: fit(X.iloc[:12], np.arange(12) % 3, cv="auto")),
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
    ("predict", "summary() before fit", "NotFittedError", lambda: ADMM().summary()),
    # parameters and set-up
    ("setup", "a space naming a class that does not exist", "InvalidParameterError at set-up, "
     "with a did-you-mean", lambda: fit(search_space=space_file(
         "sklearn.ensemble.RandomForrestClassifier"))),
    ("setup", "a space naming a package that is not installed", "InvalidParameterError at set-up",
     lambda: fit(search_space=space_file("catboosted.CatBoostClassifier"))),
    ("setup", "a space giving a class a parameter it does not take", "InvalidParameterError at "
     "set-up, with a did-you-mean", lambda: fit(search_space=tiny_space({"forest": {
         "class": "sklearn.ensemble.RandomForestClassifier", "hyperparameters": {
             "n_estimatorz": {"type": "fixed", "value": 10}}}}))),
    ("setup", "time_budget=0.5 s with worker processes", "SearchError: the budget ended before "
     "any evaluation finished", lambda: fit(executor="auto", time_budget=0.5, max_evals=None)),
    ("setup", "executor='serial', time_budget=1 s, a 3 s fit", "TimeBudgetWarning after the run",
     _slow_serial),
    ("setup", "n_jobs=-1", "one trial per core this process may use (the default)",
     lambda: summary(fit(n_jobs=-1))),
    ("setup", "trial_timeout with executor='serial'", "InvalidParameterError",
     lambda: fit(trial_timeout=5)),
    ("setup", "a regression metric for classification", "InvalidParameterError",
     lambda: fit(scoring="rmse")),
    ("setup", "output_dir is a file", "an error naming the path",
     lambda: fit(output_dir=__file__)),
    ("setup", "output_dir=''", "InvalidParameterError (not the working directory)",
     lambda: fit(output_dir="")),
    ("setup", "cv='holdout' in Python (the CLI takes --cv holdout)", "one holdout split",
     lambda: summary(fit(cv="holdout"))),
    ("setup", "a user's space named 'default'", "its own pipelines, not the shipped portfolio",
     _user_space_named_default),
    ("setup", "a space file with 'low: 1e-12' (no dot)", "read as a number",
     _yaml_exponent),
    ("setup", "a space name of 5000 characters", "an error: neither a built-in space nor a file",
     lambda: fit(search_space="x" * 5000)),
    ("setup", "a callback of 2.5 s an evaluation, time_budget=4 s",
     "TimeBudgetWarning naming the callback", _slow_callback),
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
    ("search", "a probed learner at AUROC 0.9 beside a chance-level one fitted on all rows",
     "the probed one refitted on all rows, with both scores", _probe_beats_full_data),
    ("search", "failures and a trial cut by the budget's end",
     "n_evals_, the warning's 'k of n' and history_'s rows agree or are explained", _counts),
    ("search", "every worker killed from the first evaluation on, max_evals=12, no time budget",
     "stop_reason_ 'no_workers', not 'time_budget'", _workers_killed),
    # fairness
    ("fairness", "a threshold-optimized model asked about a group it never saw",
     "ValueError naming the column and the values", _threshold_optimizer_unseen_group),
    ("fairness", "sensitive_features of one group", "an error: the constraint compares nothing",
     lambda: ADMMClassifier(**{**FAST, "constraints": ["demographic_parity_difference <= 0.1"]})
     .fit(X, Y, sensitive_features=np.zeros(len(X)))),
    ("fairness", "demographic_parity_ratio >= 1.5", "InvalidParameterError: a ratio is at most 1",
     lambda: fit(_two_groups(), constraints=[{**FAIRNESS[0], "threshold": 1.5,
                                              "name": "demographic_parity_ratio"}])),
    ("fairness", "group_by and sensitive_features together",
     "InvalidParameterError: sensitive_features would be ignored",
     lambda: ADMMClassifier(**{**FAST, "constraints": FAIRNESS}).fit(
         _two_groups(), Y, sensitive_features=np.arange(len(X)) % 2)),
    # the run directory
    ("rundir", "a finished run run again from its directory",
     "nothing evaluated; the same ensemble and predictions", _rerun_finished),
    ("rundir", "a second fit on a directory another fit is writing",
     "refused at once, naming the holder's process", _locked_directory),
    ("rundir", "a space file whose class is subprocess.Popen",
     "refused before anything is called, naming the path",
     lambda: fit(search_space=space_file("subprocess.Popen"))),
    ("rundir", "a serial trial that segfaults, then the same call again",
     "a message before the process dies; it runs once more, a second death records it failed "
     "and the call after finishes", _serial_segfault),
    ("rundir", "a trial cut by the end of the time budget",
     "cancelled: not counted as an evaluation or a failure", _budget_cut),
    ("rundir", "the run directory cannot be written at the end (a full disk)",
     "a warning naming the file; the fitted model kept", _unwritable_directory),
    ("rundir", "summary.json planted as a symbolic link to the user's file",
     "the link replaced, its target untouched", _planted_link),
    ("rundir", "a kept prediction file of the wrong shape, then resume",
     "RunDirectoryWarning naming it; that member evaluated again, the same ensemble",
     lambda: _damaged_prediction("shape")),
    ("rundir", "a FIFO where a kept prediction file was, then resume",
     "RunDirectoryWarning; never opened (no hang); the same ensemble",
     lambda: _damaged_prediction("fifo")),
    ("rundir", "a kept prediction file deleted, then resume",
     "that member evaluated again, the same ensemble", lambda: _damaged_prediction("deleted")),
    ("rundir", "a journal record without its 'fidelity'", "ResumeError naming the line",
     lambda: _damaged_record(lambda r: r.pop("fidelity"))),
    ("rundir", "a journal record with eval_id '../../x'", "ResumeError naming the line",
     lambda: _damaged_record(lambda r: r.update(eval_id="../../x"))),
    ("rundir", "the journal's last line cut in half, then resume",
     "that evaluation runs again (not failed)", _truncated_journal),
    ("rundir", "admm-automl report of a run killed before its first evaluation",
     "a report saying there is none yet", _killed_report),
    ("rundir", "a serial fit killed by SIGKILL mid-trial, then resumed",
     "the history and best of the uninterrupted run", lambda: _serial_kill("SIGKILL")),
    ("rundir", "a serial fit killed by SIGTERM mid-trial, then resumed",
     "the history and best of the uninterrupted run", lambda: _serial_kill("SIGTERM")),
    ("rundir", "the disk fills up mid-search, executor='serial'",
     "the journal's OSError is what the user reads last", _full_disk_serial),
    ("rundir", "flock fails with ENOLCK (NFS without lockd)",
     "RunDirectoryError naming the file system", _no_locks),
    ("rundir", "resumed with a longer time_budget, cv='auto' choosing other repeats",
     "ResumeError saying cv='auto' depends on the budget and how to pin it",
     _longer_budget_resume),
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
    ("messages", "an error message holding a line of three backticks, in report.md",
     "stays inside its code block", _fence_in_report),
    ("messages", "leaderboard(n=-1)", "InvalidParameterError: a positive integer",
     lambda: fit().leaderboard(n=-1)),
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
