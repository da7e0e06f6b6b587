"""The default as a user gets it: the `default` space and its shipped portfolio, label encoding and
seeding, cv="auto" as a fit decides it, the automatic trial timeout, and a refit the time budget
covers (the rules of cv="auto" themselves: tests/evaluation/test_splits.py; the ensemble and its
library: tests/final/test_ensemble.py, tests/final/test_library.py)."""

from __future__ import annotations

import json
import pickle
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification

from admm_automl import ADMM, ADMMClassifier
from admm_automl.exceptions import EvaluationFailedWarning, InvalidParameterError
from admm_automl.space import load_space
from admm_automl.space.portfolio import builtin_portfolio, portfolio_points, resolve_portfolio
from admm_automl.testing.spaces import diverse_space, tiny_space

SERIAL = dict(executor="serial", random_state=0, theta_solver="random", z_solver="random",
              inner_iter=2, inner_iter_step=0, cv=None)
DIVERSE = diverse_space()


# ----------------------------------------------------------------------------- space and portfolio
def test_default_space_is_the_estimators_default():
    assert ADMM().search_space == "default"
    assert ADMM().cv == "auto" and ADMM().portfolio == "auto" and ADMM().ensemble_size == 16


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_shipped_portfolio_loads_and_every_configuration_is_valid(task):
    pytest.importorskip("lightgbm", reason="the portfolio names LightGBM ([boost] extra)")
    pytest.importorskip("xgboost", reason="the portfolio names XGBoost ([boost] extra)")
    node = builtin_portfolio("default")
    assert node["space"] == "default"
    space = load_space("default").for_task(task)
    configs = node[task] or []
    if task == "classification":
        assert 1 <= len(configs) <= 16
    for config in configs:
        z, theta = space.encode(config)  # raises on an unknown choice or hyperparameter
        assert space.decode(z, space.encoding.project(theta)) == config  # exact round trip
    assert len(portfolio_points(configs, space)) == len(configs)


def test_portfolio_leaves_out_configurations_of_skipped_algorithms_and_names_bad_ones():
    space = load_space("default").for_task("classification").for_data(10**6)  # no svm
    svm = {"scaler": "standard_scaler", "estimator": "svm"}
    forest = {"scaler": "none", "estimator": "random_forest", "estimator__n_estimators": 50}
    assert len(portfolio_points([svm, forest], space)) == 1
    with pytest.raises(InvalidParameterError, match="n_trees"):
        portfolio_points([{"estimator": "random_forest", "estimator__n_trees": 5}], space)
    with pytest.raises(InvalidParameterError, match="does not exist"):
        resolve_portfolio("no/such/portfolio.yaml", space, "classification")
    assert resolve_portfolio("auto", tiny_space(), "classification") == []  # none shipped
    assert resolve_portfolio([forest], space, "classification") == [forest]


def test_a_user_space_named_default_is_not_given_the_shipped_portfolio():
    pytest.importorskip("lightgbm", reason="the portfolio names LightGBM ([boost] extra)")
    pytest.importorskip("xgboost", reason="the portfolio names XGBoost ([boost] extra)")
    shipped = load_space("default").for_task("classification")
    assert resolve_portfolio("auto", shipped, "classification")  # the shipped space has one
    import yaml

    from admm_automl.space.loader import _builtin_dir

    node = yaml.safe_load(_builtin_dir().joinpath("default.yaml").read_text(encoding="utf-8"))
    copy = load_space(node).for_task("classification")  # a user's copy, same name and content
    assert copy.name == "default" and not copy.shipped
    assert resolve_portfolio("auto", copy, "classification") == []
    mine = load_space({"name": "default", "modules": [{"name": "estimator", "choices": [
        {"name": "gnb", "class": "sklearn.naive_bayes.GaussianNB"}]}]})
    assert resolve_portfolio("auto", mine.for_task("classification"), "classification") == []


def test_random_state_reaches_xgboost_through_its_kwargs():
    pytest.importorskip("xgboost")
    space = load_space("default").for_task("classification")
    z, theta = space.encode({"scaler": "none", "estimator": "xgboost"})
    pipeline = space.to_pipeline(z, space.encoding.project(theta), random_state=7)
    assert pipeline.named_steps["estimator"].get_params()["random_state"] == 7


def test_string_labels_reach_xgboost_as_indices_and_its_refit_predicts_labels(breast_cancer):
    pytest.importorskip("xgboost")
    X, y = breast_cancer
    labels = np.where(y == 1, "benign", "malignant")
    space = tiny_space({"xgboost": {"class": "xgboost.XGBClassifier", "hyperparameters": {
        "n_estimators": {"type": "fixed", "value": 10}}}})
    model = ADMMClassifier(search_space=space, max_evals=2, ensemble_size=0, **SERIAL)
    model.fit(X, labels)
    assert model.history_["status"].tolist() == ["ok", "ok"]
    assert list(model.classes_) == ["benign", "malignant"]
    assert set(model.predict(X)) == {"benign", "malignant"}
    # XGBoost takes only 0..K-1: its refit learned the indices, and the pipeline alone (as the
    # run directory pickles it) predicts the labels
    refitted = pickle.loads(pickle.dumps(model.best_pipeline_))
    assert list(refitted.classes_) == ["benign", "malignant"]
    assert np.array_equal(refitted.predict(X), model.predict(X))
    assert np.allclose(refitted.predict_proba(X), model.predict_proba(X))
    assert 0.5 < model.metric_score(X, labels) <= 1.0


def test_the_portfolio_is_the_first_z_step_s_and_admm_goes_on_from_its_best(breast_cancer):
    """After the initial pipeline, the z-solver (cmab) takes the portfolio's pipelines at the
    portfolio's hyperparameters; the first θ-step tunes the best of the three evaluated."""
    X, y = breast_cancer
    portfolio = [{"scaler": "standard", "estimator": "k_neighbors", "estimator__n_neighbors": 9},
                 {"scaler": "standard", "estimator": "logistic_regression"}]
    model = ADMMClassifier(search_space=DIVERSE, max_evals=5, portfolio=portfolio,
                           **{**SERIAL, "z_solver": "cmab"}).fit(X, y)
    head = model.history_.head(3)
    assert head["phase"].tolist() == ["initial", "z", "z"]
    assert head["solver"].tolist()[1:] == ["cmab", "cmab"]
    assert head["pipeline"].tolist() == ["none -> logistic_regression",
                                         "standard -> k_neighbors",
                                         "standard -> logistic_regression"]
    assert head["param:estimator__n_neighbors"][1] == 9
    best_start = head["loss"].idxmin()
    # the first θ-step tunes the algorithm of the best of the three
    assert model.history_["phase"][3] == "theta"
    assert model.history_["pipeline"][3] == head["pipeline"][best_start]


# ----------------------------------------------------------------------------- time-aware trials
def test_small_data_are_cross_validated(breast_cancer, tmp_path):
    X, y = breast_cancer
    ADMMClassifier(search_space=tiny_space(), max_evals=1, output_dir=tmp_path,
                   **{**SERIAL, "cv": "auto"}).fit(X, y)
    header = json.loads((tmp_path / "journal.jsonl").read_text().splitlines()[0])
    assert '"splits": {"cv": 5' in json.dumps(header)



@pytest.mark.parametrize("budget, folds", [(5.0, 5), (2.0, None)])
def test_the_time_budget_decides_cv_above_the_row_limit(budget, folds, tmp_path):
    # 6000 rows x 2 features = 12,000 cells: cross-validated at 5 s (12,500), a holdout at 2 s
    X, y = make_classification(n_samples=6000, n_features=2, n_informative=2, n_redundant=0,
                               random_state=0)
    ADMMClassifier(search_space=tiny_space(), max_evals=1, time_budget=budget,
                   output_dir=tmp_path, ensemble_size=0,
                   **{**SERIAL, "cv": "auto"}).fit(X, y)
    header = json.loads((tmp_path / "journal.jsonl").read_text().splitlines()[0])
    assert header["run"]["splits"]["cv"] == folds

@pytest.mark.serial  # timed against a budget: `make test` runs it alone
@pytest.mark.slow
def test_automatic_timeout_stops_a_slow_trial_and_the_run_goes_on(breast_cancer):
    X, y = breast_cancer
    space = tiny_space({
        "gaussian_nb": {"class": "sklearn.naive_bayes.GaussianNB"},
        "sleeping": {"class": "admm_automl.testing.estimators.SleepingClassifier",
                     "hyperparameters": {"seconds": {"type": "fixed", "value": 60.0}}},
    })
    budget = 12.0
    model = ADMMClassifier(search_space=space, time_budget=budget, random_state=0, cv=None,
                           theta_solver="random", z_solver="random", inner_iter=2,
                           inner_iter_step=0,
                           portfolio=[{"scaler": "none", "estimator": "sleeping"}])
    with warnings.catch_warnings():
        warnings.simplefilter("error", EvaluationFailedWarning)  # a time-out is not a failure
        model.fit(X, y)
    h = model.history_
    slow = h[h["pipeline"] == "none -> sleeping"].iloc[0]
    assert slow["status"] == "timeout" and slow["phase"] == "z"
    assert model.n_timeouts_ >= 1 and model.n_failed_ == 0
    from admm_automl.reporting.rundir import run_summary, timeout_seconds

    stopped, total = timeout_seconds(h)
    assert stopped == pytest.approx(h.loc[h["status"] == "timeout", "duration"].sum())
    assert slow["duration"] <= stopped < total == pytest.approx(h["duration"].sum())
    assert run_summary(model)["timeout_seconds"] == (stopped, total)
    assert not slow.get("budget_stop", False) is True  # the automatic timeout, not the budget end
    # the automatic timeout is at most a quarter of the time left (3 s here); half the budget
    # leaves room for a busy machine and is still far below the 12 s at which only the end of the
    # budget would stop the 60 s sleep
    assert slow["duration"] < 0.5 * budget
    after = h[h["eval_id"] > slow["eval_id"]]
    assert (after["status"] == "ok").any()  # the run went on
    assert model.best_params_["estimator"] == "gaussian_nb"


# ----------------------------------------------------------------------------- the refit
@pytest.mark.serial  # timed against a budget: `make test` runs it alone
@pytest.mark.slow
def test_a_time_budget_covers_the_refit(breast_cancer):
    import time

    X, y = breast_cancer
    space = tiny_space({"sleeping": {
        "class": "admm_automl.testing.estimators.SleepingClassifier",
        "hyperparameters": {"seconds": {"type": "float", "low": 0.8, "high": 1.0,
                                        "default": 0.9}}}})
    budget = 6.0
    model = ADMMClassifier(search_space=space, time_budget=budget, random_state=0, cv=None,
                           theta_solver="random", z_solver="random", portfolio=None,
                           ensemble_size=4, trial_timeout=5.0)
    start = time.monotonic()
    model.fit(X, y)
    elapsed = time.monotonic() - start
    h = model.history_
    assert model.refit_time_ >= 0.8
    # the search stopped early enough for the refit: it kept back the best one's estimated refit
    # (without the reserve: about 6.8 s); half a second of slack for a busy machine, whose
    # measured refit may overrun its estimate a little, keeps that failure caught
    assert h["time"].max() + model.refit_time_ <= budget + 0.5
    # the budget is kept, give or take a busy machine; an ignored budget never ends (no max_evals)
    assert elapsed <= budget + 5.0
