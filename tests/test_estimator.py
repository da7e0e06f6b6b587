"""The scikit-learn layer: fitted attributes, data handling, bad input, determinism, failures."""

from __future__ import annotations

import json
import os
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import Pipeline

from admm_automl import ADMM, ADMMClassifier, ADMMRegressor
from admm_automl.exceptions import (
    DataError,
    EvaluationFailedWarning,
    InvalidParameterError,
    UnknownComponentError,
)
from admm_automl.testing import tiny_space

# paper_small has pipelines that fail on this data (QDA after degree-2 polynomial features has
# fewer rows per class than features); those failures are expected and recorded
pytestmark = pytest.mark.filterwarnings("ignore::admm_automl.exceptions.EvaluationFailedWarning")

X, Y = load_breast_cancer(return_X_y=True, as_frame=True)
FAST = dict(max_evals=12, inner_iter=3, inner_iter_step=0, random_state=0,
            theta_solver="random", z_solver="random", search_space="paper_small", cv=None)


@pytest.fixture(scope="module")
def fitted():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvaluationFailedWarning)
        return ADMM(max_evals=30, inner_iter=4, inner_iter_step=4, random_state=0,
                    search_space="paper_small", cv=None).fit(X, Y)


def test_fitted_attributes(fitted):
    model = fitted
    assert isinstance(model.best_pipeline_, Pipeline)
    assert [name for name, _ in model.best_pipeline_.steps] == [
        "preprocess", "scaler", "transformer", "estimator"
    ]
    assert set(model.best_params_) >= {"scaler", "transformer", "estimator"}
    assert model.task_ == "classification" and model.metric_ == "roc_auc"
    assert len(model.history_) == model.n_evals_ == 30
    assert model.best_loss_ == pytest.approx(model.history_["loss"].min())
    assert model.best_score_ == pytest.approx(1 - model.best_loss_)
    assert list(model.history_["eval_id"]) == list(range(30))
    assert model.history_["phase"].iloc[0] == "initial"
    assert model.history_["pipeline"].iloc[0] == "none -> none -> gaussian_nb"
    assert {"param:estimator", "loss", "status", "error", "fit_time", "duration"} <= set(
        model.history_.columns
    )
    assert set(model.admm_trace_.columns) == {
        "iteration", "rho", "primal_residual", "lambda_norm", "best_loss", "n_evals",
        "inner_iter", "time", "solver_proposals", "cheap_proposals",
    }
    assert model.admm_trace_["n_evals"].iloc[-1] == 30
    cv = model.cv_results_
    assert len(cv["params"]) == 30 and cv["rank_test_score"].min() == 1
    assert cv["params"][int(np.argmax(cv["mean_test_score"]))]["estimator"] == model.best_params_["estimator"]
    np.testing.assert_array_equal(model.classes_, [0, 1])
    assert model.n_features_in_ == 30 and list(model.feature_names_in_) == list(X.columns)


def test_prediction_api(fitted):
    proba = fitted.predict_proba(X)
    assert proba.shape == (len(X), 2)
    # the ensemble (on by default) when one was built, else the best pipeline
    model = fitted.best_pipeline_ if fitted.ensemble_ is None else fitted.ensemble_
    np.testing.assert_array_equal(fitted.predict(X), model.predict(X))
    assert fitted.score(X, Y) == pytest.approx((fitted.predict(X) == Y).mean())
    from sklearn.metrics import roc_auc_score

    assert fitted.metric_score(X, Y) == pytest.approx(roc_auc_score(Y, proba[:, 1]))


def test_best_pipeline_is_plain_scikit_learn(fitted):
    import pickle

    restored = pickle.loads(pickle.dumps(fitted.best_pipeline_))
    assert all(not type(step).__module__.startswith("admm_automl") for _, step in restored.steps)
    np.testing.assert_array_equal(restored.predict(X), fitted.predict(X))


def test_a_fitted_estimator_loaded_by_another_version_says_so(fitted, monkeypatch):
    """A pickled fitted estimator records the package version that fitted it; loading it under
    the same version is silent and predicts identically, under another one warns, naming both."""
    import pickle

    import admm_automl
    from admm_automl.exceptions import ModelVersionWarning

    blob = pickle.dumps(fitted)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ModelVersionWarning)
        restored = pickle.loads(blob)
    np.testing.assert_array_equal(restored.predict_proba(X), fitted.predict_proba(X))
    saved = re.escape(admm_automl.__version__)
    monkeypatch.setattr(admm_automl, "__version__", "9.9.9")
    with pytest.warns(ModelVersionWarning, match=rf"fitted and saved by admm-automl {saved} and "
                                                 r"is loaded by 9\.9\.9"):
        pickle.loads(blob)


@pytest.mark.slow
def test_same_seed_and_evaluation_budget_give_the_same_history():
    # the searches alone (no ensemble after them) on 200 rows: paper_small's forests made three
    # fits on all rows one of the slowest tests
    settings, rows = {**FAST, "ensemble_size": 0}, slice(0, 200)
    a = ADMM(**settings).fit(X.iloc[rows], Y.iloc[rows]).history_
    b = ADMM(**settings).fit(X.iloc[rows], Y.iloc[rows]).history_
    cols = ["pipeline", "loss", "status", "phase", "admm_iter"] + [
        c for c in a.columns if c.startswith("param:")
    ]
    pd.testing.assert_frame_equal(a[cols], b[cols])
    c = ADMM(**{**settings, "random_state": 1}).fit(X.iloc[rows], Y.iloc[rows]).history_
    assert list(a["pipeline"]) != list(c["pipeline"]) or list(a["loss"]) != list(c["loss"])


def test_regression_and_multiclass():
    Xd, yd = load_diabetes(return_X_y=True)
    reg = ADMMRegressor(**FAST).fit(Xd, yd)
    assert reg.task_ == "regression" and reg.metric_ == "rmse"
    assert reg.best_loss_ == pytest.approx(-reg.best_score_)
    assert reg.history_["pipeline"].iloc[0] == "none -> none -> ridge"
    assert -1 < reg.score(Xd, yd) <= 1
    Xi, yi = load_iris(return_X_y=True)
    clf = ADMM(**FAST).fit(Xi, yi)
    assert clf.task_ == "classification" and clf.metric_ == "log_loss"
    assert clf.predict_proba(Xi).shape == (150, 3)


def test_the_task_is_inferred_from_what_the_target_holds():
    """Whole-valued numbers with many distinct values are a regression target (the diabetes
    scores, 214 values in 442 rows, were taken for 214 classes); few values, or text, are
    classes."""
    Xd, yd = load_diabetes(return_X_y=True, as_frame=True)
    model = ADMM(**FAST).fit(Xd, yd)
    assert model.task_ == "regression" and model.metric_ == "rmse"
    assert (yd % 1 == 0).all() and yd.nunique() == 214  # what made it look like classes
    from admm_automl.run.inputs import infer_task

    assert infer_task(np.arange(30) % 6, "multiclass") == "classification"  # 6 classes, 30 rows
    assert infer_task(np.arange(10_000) % 5 + 1.0, "multiclass") == "classification"
    assert infer_task(np.arange(2_000) % 150, "multiclass") == "regression"  # 7.5 % > 5 %
    assert infer_task(np.array(list("abcdefghijklmnopqrstuvwxyz")), "multiclass") == \
        "classification"  # text is classes, however many


def test_pandas_with_categoricals_strings_and_nan():
    rng = np.random.default_rng(0)
    n = 200
    frame = pd.DataFrame(
        {
            "num": rng.normal(size=n),
            "with_nan": np.where(rng.uniform(size=n) < 0.2, np.nan, rng.normal(size=n)),
            "color": rng.choice(["red", "green", "blue"], size=n),
            "size": pd.Categorical(rng.choice(["s", "m", None], size=n)),
            "flag": rng.uniform(size=n) < 0.5,
        }
    )
    y = ((frame["num"] > 0) ^ (frame["color"] == "red")).astype(int).to_numpy()
    model = ADMMClassifier(**FAST).fit(frame, y)
    assert model.best_loss_ < 0.5
    assert (model.history_["status"] == "ok").all()
    assert model.predict(frame.iloc[:5]).shape == (5,)
    # string labels
    labels = np.where(y == 1, "yes", "no")
    model = ADMMClassifier(**FAST).fit(frame, labels)
    assert set(model.predict(frame)) <= {"yes", "no"}


def test_object_array_with_strings():
    Xo = np.array([[1.0, "a"], [2.0, "b"], [3.0, "a"], [4.0, "b"]] * 10, dtype=object)
    y = np.array([0, 1, 0, 1] * 10)
    model = ADMMClassifier(**FAST).fit(Xo, y)
    assert model.best_loss_ == 0.0
    np.testing.assert_array_equal(model.predict(Xo), y)


@pytest.mark.parametrize(
    "X_bad,y_bad,error,match",
    [
        (np.array([[1.0, np.inf], [2.0, 3.0], [3.0, 1.0]]), [0, 1, 0], ValueError, "infinity"),
        (pd.DataFrame({"a": [1.0, np.inf, 2.0, 3.0]}), [0, 1, 0, 1], DataError, r"infinity in column\(s\) \['a'\]"),
        (np.ones((10, 2)), np.zeros(10), DataError, "single class"),
        (np.ones((10, 2)), np.zeros(9), ValueError, "inconsistent numbers of samples"),
        (np.ones((0, 2)), np.zeros(0), ValueError, "0 sample"),
        (np.ones((10, 2)), None, ValueError, "requires y to be passed"),
        (np.ones((10, 2)), np.r_[np.zeros(5), np.ones(4), np.nan], ValueError, "NaN"),
    ],
)
def test_bad_data_gets_a_clear_error(X_bad, y_bad, error, match):
    with pytest.raises(error, match=match):
        ADMM(**FAST).fit(X_bad, y_bad)


@pytest.mark.parametrize(
    "params,match",
    [
        ({"max_evals": -5}, "'max_evals' parameter of ADMM must be a positive integer"),
        ({"time_budget": -1.0}, "'time_budget' parameter of ADMM must be a positive number"),
        ({"rho": 0}, "'rho' parameter"),
        ({"cv": 1}, r"'cv' parameter of ADMM must be one of 'auto', 'holdout' or an integer >= 2 or "
         r"None. Got 1"),
        ({"inner_iter": 64, "inner_iter_max": 16}, "maximum >= start"),
        ({"task": "ranking"}, "'task' parameter of ADMM must be one of 'auto', 'classification'"),
        ({"method": "jopt", "constraint_mode": "admm"}, "no ADMM split"),
        ({"resume": "yes"}, "'resume' parameter of ADMM must be a bool"),
        ({"search_space": "paper_smal"}, "Unknown search space 'paper_smal'. Did you mean 'paper_small'"),
        ({"scoring": "auroc"}, "Unknown scoring 'auroc'. Did you mean 'roc_auc'"),
        ({"executor": "serial", "trial_timeout": 5}, "trial_timeout needs worker processes"),
        ({"n_jobs": 0}, r"'n_jobs' parameter of ADMM must be a non-zero integer \(-1: every core\)"),
    ],
)
def test_bad_parameters_get_a_clear_error(params, match):
    with pytest.raises(InvalidParameterError, match=match):
        ADMM(**{**FAST, **params}).fit(X, Y)


def test_n_jobs_minus_one_is_one_worker_per_core_as_in_scikit_learn(monkeypatch):
    """-1, the default, is one worker per core this process may use (as FLAML and AutoGluon
    use every core); joblib's count honours a cap such as LOKY_MAX_CPU_COUNT, as it does a CPU
    affinity or a container quota. One core: trials in this process, as n_jobs=1."""
    import joblib

    from admm_automl.evaluation.executors import SerialExecutor
    from admm_automl.run.executor import make_executor

    assert ADMM().n_jobs == -1 and ADMM().get_params()["n_jobs"] == -1
    monkeypatch.setenv("LOKY_MAX_CPU_COUNT", "3")
    assert joblib.cpu_count() == min(3, os.cpu_count())
    executor = make_executor("auto", n_jobs=-1, memory_limit_mb=None, needs_isolation=False)
    assert executor.n_workers == joblib.cpu_count()
    if joblib.cpu_count() > 1:
        assert make_executor("process", n_jobs=-2, memory_limit_mb=None,
                             needs_isolation=False).n_workers == joblib.cpu_count() - 1
    # executor="serial" beside the default: one trial at a time, not an error; a count is one
    assert isinstance(make_executor("serial", n_jobs=-1, memory_limit_mb=None,
                                    needs_isolation=False), SerialExecutor)
    with pytest.raises(InvalidParameterError, match="n_jobs > 1 and memory_limit need"):
        make_executor("serial", n_jobs=2, memory_limit_mb=None, needs_isolation=False)
    monkeypatch.setenv("LOKY_MAX_CPU_COUNT", "1")
    assert isinstance(make_executor("auto", n_jobs=-1, memory_limit_mb=None,
                                    needs_isolation=False), SerialExecutor)
    model = ADMM(**{**FAST, "max_evals": 4, "n_jobs": -1, "ensemble_size": 0}).fit(X, Y)
    assert model.n_evals_ == 4


def test_unknown_solvers_are_reported_with_the_registered_names():
    with pytest.raises(UnknownComponentError, match=r"Unknown theta solver 'bayes'.*Available: .*'random'"):
        ADMM(theta_solver="bayes").fit(X, Y)
    with pytest.raises(UnknownComponentError, match=r"Unknown z solver 'bldz'. Did you mean 'blds'"):
        ADMM(z_solver="bldz").fit(X, Y)


@pytest.mark.slow
def test_failing_pipelines_are_recorded_and_the_run_completes(tmp_path):
    space = tiny_space(
        {
            "gnb": {"class": "sklearn.naive_bayes.GaussianNB"},
            "raiser": {"class": "admm_automl.testing.RaisingClassifier"},
            "nan": {"class": "admm_automl.testing.NaNClassifier"},
            "sleeper": {"class": "admm_automl.testing.SleepingClassifier",
                        "hyperparameters": {"seconds": {"type": "fixed", "value": 60}}},
        }
    )
    # the limit leaves a starved machine room for gnb's trial (a fit of milliseconds) while the
    # sleeper's 60 s cannot fit: at 2 s, gnb once hit it beside two benchmark runs
    model = ADMMClassifier(
        search_space=space, max_evals=8, inner_iter=8, trial_timeout=5.0, random_state=0,
        output_dir=tmp_path, z_solver="random",
    )
    with pytest.warns(EvaluationFailedWarning, match="pipelines failed"):
        model.fit(X, Y)
    assert model.n_evals_ == 8  # every pipeline of the 2 x 4 space, each once
    status = model.history_.groupby("param:estimator")["status"].agg(set).to_dict()
    assert status == {"gnb": {"ok"}, "raiser": {"failed"}, "nan": {"failed"}, "sleeper": {"timeout"}}
    assert (model.history_.loc[model.history_["status"] != "ok", "loss"] == 1.0).all()
    journal = [json.loads(l) for l in (tmp_path / "journal.jsonl").read_text().splitlines()]
    assert len(journal) == 9 and journal[0] == {"run": journal[0]["run"]}  # header + 8
    assert any("always fails" in (r.get("error") or "") for r in journal[1:])
    assert model.best_params_["estimator"] == "gnb"


def test_all_pipelines_failing_is_an_error():
    space = tiny_space({"raiser": {"class": "admm_automl.testing.RaisingClassifier"}})
    with pytest.raises(RuntimeError, match="All 2 evaluated pipelines failed.*always fails"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ADMMClassifier(**{**FAST, "search_space": space}).fit(X, Y)


@pytest.mark.serial  # timed against a budget: `make test` runs it alone
@pytest.mark.slow
def test_time_budget_is_honoured():
    import time

    start = time.monotonic()
    model = ADMM(time_budget=4.0, random_state=0, search_space="paper_small", cv=None).fit(X, Y)
    elapsed = time.monotonic() - start
    assert model.stop_reason_ == "time_budget"
    # generous margins for a busy machine: an ignored budget would never end (no max_evals), so
    # budget + 5 s still tells a kept budget from one that is not
    assert model.history_["time"].max() <= 4.0 + 5.0
    assert elapsed < 4.0 + 20.0  # plus start-up of the worker processes and the refit


@pytest.mark.slow
def test_defaults_are_the_papers_method_and_run_end_to_end():
    model = ADMM(max_evals=20, random_state=0, search_space="paper_small", cv=None)
    assert (model.theta_solver, model.z_solver) == ("bo", "cmab")
    assert (model.inner_iter, model.inner_iter_step, model.inner_iter_max) == ("auto", 16, 128)
    model.fit(X, Y)
    assert model.n_evals_ == 20 and model.best_score_ > 0.95
    assert set(model.history_["phase"]) >= {"initial", "z"}


@pytest.mark.slow
def test_kfold_cv():
    model = ADMM(**{**FAST, "cv": 3}).fit(X, Y)
    assert model.history_["n_train"].iloc[0] == pytest.approx(len(X) * 2 / 3, abs=1)


@pytest.mark.slow
def test_clone_cross_val_score_and_grid_search():
    est = ADMMClassifier(**{**FAST, "max_evals": 4})
    assert clone(est).get_params() == est.get_params()
    scores = cross_val_score(est, X, Y, cv=2)
    assert scores.shape == (2,) and (scores > 0.8).all()
    grid = GridSearchCV(est, {"rho": [0.5, 2.0]}, cv=2).fit(X, Y)
    assert grid.best_params_["rho"] in (0.5, 2.0)
    assert isinstance(grid.best_estimator_.best_pipeline_, Pipeline)


@pytest.mark.slow
def test_solver_given_as_mapping_and_instance_is_not_mutated():
    from admm_automl.solvers.theta import RandomThetaSolver

    solver = RandomThetaSolver()
    model = ADMM(**{**FAST, "theta_solver": solver, "z_solver": {"name": "random", "params": {}}})
    model.fit(X, Y)
    assert not hasattr(solver, "problem_")
    assert model.n_evals_ == 12


@pytest.mark.slow
def test_a_trial_cut_by_the_time_budget_is_cancelled_not_failed_and_the_counts_agree():
    """A trial stopped by the end of the time budget says nothing of its pipeline: its status
    is ``cancelled`` and it counts neither as an evaluation nor as a failure, in ``n_evals_``,
    ``n_failed_`` and the warning alike."""
    space = tiny_space({
        "gnb": {"class": "sklearn.naive_bayes.GaussianNB"},
        "raiser": {"class": "admm_automl.testing.RaisingClassifier"},
        "sleeper": {"class": "admm_automl.testing.SleepingClassifier",
                    "hyperparameters": {"seconds": {"type": "fixed", "value": 60}}},
    })
    # a timeout past the budget: the first sleeper (after gnb and the raiser, with this seed)
    # runs until the budget's end
    model = ADMMClassifier(search_space=space, time_budget=5, trial_timeout=30, random_state=0,
                           z_solver="random", executor="process", portfolio=None,
                           ensemble_size=0)
    with pytest.warns(EvaluationFailedWarning) as caught:
        model.fit(X, Y)
    status = model.history_["status"]
    assert status.tolist()[-1] == "cancelled"  # the sleeper, cut at the budget's end
    assert set(model.history_.loc[status == "cancelled", "param:estimator"]) == {"sleeper"}
    n_failed = int(status.isin(["failed", "timeout", "memout"]).sum())
    assert model.n_failed_ == n_failed >= 1  # the raiser
    assert model.n_evals_ == int((status != "cancelled").sum())
    (message,) = {str(w.message) for w in caught if w.category is EvaluationFailedWarning}
    assert message.startswith(f"{n_failed} of {model.n_evals_} evaluated pipelines failed")
    cut = int((status == "cancelled").sum())  # history_'s other rows are named, with their count
    assert f"(history_ has {len(model.history_)} rows, a row per trial: {cut} cut or never " \
        "begun at the end of the time budget" in message
