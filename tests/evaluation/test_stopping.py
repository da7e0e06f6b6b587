"""Early stopping of boosted learners on each trial's validation rows (evaluation.stopping): the
rounds a trial keeps are the rounds its scored model uses, they are recorded per split, and they
reach the refit and the ensemble's members."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from admm_automl import ADMMClassifier
from admm_automl.exceptions import ConfigError, InvalidParameterError
from admm_automl.evaluation.metrics import get_metric
from admm_automl.evaluation.splits import make_splits
from admm_automl.evaluation.stopping import patience
from admm_automl.evaluation.trial import TrialContext, run_trial
from admm_automl.space import load_space
from admm_automl.space.loader import space_from_dict

DEFAULT = load_space("default")
#: (choice, its rounds parameter): every boosted learner of the default space
BOOSTED = [("hist_gradient_boosting", "max_iter"), ("lightgbm", "n_estimators"),
           ("xgboost", "n_estimators"), ("catboost", "iterations")]


@pytest.fixture(scope="module")
def context(breast_cancer):
    X, y = breast_cancer
    space = DEFAULT.for_task("classification")
    splits = make_splits(y, classification=True, cv=3, validation_size=0.2, seed=0)
    return TrialContext(space, X, y, splits, get_metric("log_loss", "classification", "binary"),
                        None, 0, labels=np.unique(y), cache_size=0)


def _config(choice: str, parameter: str, cap: int) -> dict:
    # a high learning rate overfits within a few dozen rounds: early stopping must cut the cap
    return {"scaler": "none", "estimator": choice, f"estimator__{parameter}": cap,
            "estimator__learning_rate": 0.5}


@pytest.mark.parametrize("choice,parameter", BOOSTED)
def test_a_trial_stops_early_per_fold_and_its_rounds_rebuild_the_scored_model(
        context, choice, parameter):
    from sklearn.base import clone

    from admm_automl.evaluation.stopping import fit_stopped

    space = context.space
    z, theta = space.encode(_config(choice, parameter, 1000))
    result = run_trial(context, z, theta, 1.0)
    assert result["status"] == "ok", result.get("error")
    rounds = result["rounds"]
    assert len(rounds) == 3  # one per fold, each stopped on its own validation rows
    assert all(1 <= r < 1000 - patience(1000) for r in rounds)
    # the first fold's model rebuilt with those rounds and no stopping predicts as the trial's did
    split = context.splits[0]
    trial_model = space.to_pipeline(z, theta, random_state=0)
    fitted = clone(trial_model)
    fit_stopped(fitted[-1], context.X[split.train], context.y[split.train],
                context.X[split.valid], context.y[split.valid], stopping=space.stopping(z)[1])
    rebuilt = space.to_pipeline(z, theta, random_state=0, rounds=rounds[0])
    assert rebuilt[-1].get_params()[parameter] == rounds[0]
    rebuilt.fit(context.X[split.train], context.y[split.train])
    np.testing.assert_allclose(rebuilt.predict_proba(context.X[split.valid]),
                               fitted[-1].predict_proba(context.X[split.valid]), atol=1e-6)


def test_a_learner_without_stopping_fits_its_configured_rounds(context):
    z, theta = context.space.encode({"scaler": "none", "estimator": "random_forest",
                                     "estimator__n_estimators": 8})
    result = run_trial(context, z, theta, 1.0)
    assert result["status"] == "ok" and "rounds" not in result
    with pytest.raises(InvalidParameterError, match="does not stop early"):
        context.space.to_pipeline(z, theta, rounds=5)


def test_patience_is_a_tenth_of_the_cap_within_10_and_50():
    assert [patience(c) for c in (4, 100, 250, 1000, 32768)] == [10, 10, 25, 50, 50]


def test_the_space_refuses_stopping_it_cannot_honour():
    def space(stopping, module="estimator"):
        algo = {"name": "hgb", "class": "sklearn.ensemble.HistGradientBoostingClassifier",
                "hyperparameters": {"max_iter": {"type": "int", "low": 10, "high": 100,
                                                 "default": 50},
                                    "learning_rate": {"type": "float", "low": 0.01,
                                                      "high": 1.0, "default": 0.1}},
                "stopping": stopping}
        plain = {"name": "lr", "class": "sklearn.linear_model.LogisticRegression"}
        modules = [{"name": "first", "choices": [algo if module == "first" else plain]},
                   {"name": "estimator", "choices": [algo if module == "estimator" else plain]}]
        return space_from_dict({"name": "s", "modules": modules})

    assert space({"parameter": "max_iter", "method": "hist_gradient_boosting"})
    with pytest.raises(ConfigError, match="method 'lightgbn' is not one of .*lightgbm"):
        space({"parameter": "max_iter", "method": "lightgbn"})
    with pytest.raises(ConfigError, match="must be an int"):
        space({"parameter": "learning_rate", "method": "hist_gradient_boosting"})
    with pytest.raises(ConfigError, match="parameter"):
        space({"method": "hist_gradient_boosting"})
    with pytest.raises(InvalidParameterError, match=r"only the estimator.*first\.hgb"):
        space({"parameter": "max_iter", "method": "hist_gradient_boosting"}, module="first")


def test_a_method_of_another_library_fails_the_trial_with_a_clear_error(breast_cancer):
    X, y = breast_cancer
    space = space_from_dict({"name": "s", "modules": [{"name": "estimator", "choices": [{
        "name": "forest", "class": "sklearn.ensemble.RandomForestClassifier",
        "hyperparameters": {"n_estimators": {"type": "int", "low": 4, "high": 50, "default": 8}},
        "stopping": {"parameter": "n_estimators", "method": "hist_gradient_boosting"}}]}]})
    splits = make_splits(y, classification=True, cv=None, validation_size=0.2, seed=0)
    ctx = TrialContext(space, X, y, splits, get_metric("accuracy", "classification", "binary"),
                       None, 0, labels=np.unique(y))
    result = run_trial(ctx, (0,), space.encoding.initial_theta, 1.0)
    assert result["status"] == "failed"
    assert "RandomForestClassifier" in result["error"] and "HistGradientBoosting" in result["error"]


@pytest.mark.slow
def test_early_stopped_rounds_reach_the_refit_and_the_ensemble(breast_cancer):
    X, y = breast_cancer
    space = DEFAULT.for_task("classification").restrict(scaler="none", estimator="lightgbm")
    # bagging=False: the members are refitted (bags keep the fold models, each with its rounds)
    model = ADMMClassifier(search_space=space, max_evals=8, executor="serial", random_state=0,
                           portfolio=None, ensemble_size=8, cv=3, bagging=False).fit(X, y)
    history = model.history_.set_index("eval_id")
    refit = lambda eval_id: max(1, round(np.mean(history.loc[eval_id, "rounds"])))  # noqa: E731
    assert model.best_rounds_ == refit(model.best_eval_id_)
    assert model.best_pipeline_[-1].n_estimators == model.best_rounds_
    assert model.best_params_["estimator__n_estimators"] >= model.best_rounds_  # the cap
    members = [(int(name[len("eval"):]), pipeline) for name, pipeline in
               model.ensemble_.estimators if name != f"eval{model.best_eval_id_}"]
    assert members  # the ensemble has members besides the best pipeline
    for eval_id, member in members:
        assert member[-1].n_estimators == refit(eval_id)


def test_without_stopping_fits_the_searched_rounds(context):
    plain = context.space.without_stopping()
    z, theta = plain.encode(_config("lightgbm", "n_estimators", 300))
    assert plain.stopping(z) is None and context.space.stopping(z) is not None
    assert plain.n_pipelines == context.space.n_pipelines


@pytest.mark.parametrize("cv", [3, "folds"])
def test_a_mitigated_boosted_learner_fits_the_rounds_early_stopping_chose(monkeypatch, cv):
    """A mitigation wraps its learner at the rounds stopped on the trial's validation rows (one
    stopped fit a fold, at the cap), which is the threshold optimizer's fitted learner; its
    other fits (inner folds) use those rounds, never the cap; with ``cv="folds"`` there are
    none. The refit builds the wrapped learner at those rounds too."""
    import lightgbm
    import pandas as pd

    from admm_automl.constraints import (ThresholdOptimizerClassifier, make_constraints,
                                         mitigation_module)

    rng = np.random.default_rng(0)
    group = rng.integers(0, 2, 900)
    X = pd.DataFrame({"x": rng.normal(size=900), "w": rng.normal(size=900),
                      "sex": np.where(group == 1, 1.0, 0.0)})
    logit = 1.5 * X["x"].to_numpy() + 1.0 * (2 * group - 1)
    y = (rng.random(900) < 1.0 / (1.0 + np.exp(-logit))).astype(int)
    (constraint,) = make_constraints([{"name": "demographic_parity_difference",
                                       "threshold": 0.1, "group_by": "sex"}])
    space = (DEFAULT.for_task("classification").restrict(scaler="none", estimator="lightgbm")
             .wrapped(mitigation_module(constraint)))
    z, theta = space.encode({**_config("lightgbm", "n_estimators", 1000),
                             "mitigation": "threshold_optimizer"})
    splits = make_splits(y, classification=True, cv=3, validation_size=0.2, seed=0)
    ctx = TrialContext(space, X, y, splits, get_metric("roc_auc", "classification", "binary"),
                       None, 0, labels=np.unique(y), cache_size=0)
    fits = []
    real_fit = lightgbm.LGBMClassifier.fit
    monkeypatch.setattr(lightgbm.LGBMClassifier, "fit", lambda self, *a, **k: (
        fits.append((self.n_estimators, "callbacks" in k)) or real_fit(self, *a, **k)))
    monkeypatch.setitem(ThresholdOptimizerClassifier.__init__.__kwdefaults__, "cv", cv)
    result = run_trial(ctx, z, theta, 1.0)
    assert result["status"] == "ok", result.get("error")
    rounds = result["rounds"]
    assert len(rounds) == 3 and all(1 <= r < 1000 - patience(1000) for r in rounds)
    stopped = [n for n, early in fits if early]
    assert stopped == [1000, 1000, 1000]  # one stopped fit a fold, at the cap
    others = [n for n, early in fits if not early]
    if cv == "folds":
        assert others == []
    else:  # each fold's threshold optimizer: 3 inner folds at its rounds; the learner is the
        assert others == [r for r in rounds for _ in range(3)]  # stopped fit
    refit = space.to_pipeline(z, theta, rounds=rounds[0])
    assert refit[-1].estimator[-1].n_estimators == rounds[0]


BOXED = [("lightgbm", "n_estimators"), ("xgboost", "n_estimators"), ("catboost", "iterations")]


def _slow(choice: str, parameter: str, context, cap: int = 5000):
    """A boosted learner of the default space that learns slowly (no early stop for hundreds of
    rounds) with ``cap`` rounds, and its early stopping."""
    pytest.importorskip(choice)
    z, theta = context.space.encode({"scaler": "none", "estimator": choice,
                                     f"estimator__{parameter}": cap,
                                     "estimator__learning_rate": 0.001})
    return context.space.to_pipeline(z, theta, random_state=0)[-1], context.space.stopping(z)[1]


@pytest.mark.parametrize("choice,parameter", BOXED)
def test_a_rounds_box_past_its_moment_stops_the_fit_and_keeps_the_best_round_so_far(
        context, choice, parameter):
    from admm_automl.evaluation.stopping import RoundsBox, fit_stopped

    estimator, stopping = _slow(choice, parameter, context)
    split = context.splits[0]
    data = (context.X[split.train], context.y[split.train], context.X[split.valid],
            context.y[split.valid])
    box = RoundsBox(0.0)
    rounds = fit_stopped(estimator, *data, stopping=stopping, box=box)
    assert box.fired and 1 <= rounds <= 2  # XGBoost's box waits for its second round
    assert estimator.predict_proba(data[2]).shape == (len(data[2]), 2)
    if choice == "xgboost":  # no clone of the fitted model carries the box
        assert estimator.get_params()["callbacks"] is None
    estimator, stopping = _slow(choice, parameter, context, cap=300)
    far = RoundsBox(float("inf"))  # a slow learner's 300 rounds, all of them improving
    assert fit_stopped(estimator, *data, stopping=stopping, box=far) > 100 and not far.fired


@pytest.mark.parametrize("choice,parameter", BOXED[2:])
def test_with_boost_to_fit_a_trial_past_its_limit_ends_inside_it_with_its_model(
        breast_cancer, choice, parameter):
    """5 000 rounds at a learning rate of 0.001 take several seconds a fold on these rows; under
    a limit of 1.5 s each of the 3 folds stops at its share and the trial scores what it has."""
    from admm_automl.evaluation.policy import trial_limit

    X, y = breast_cancer
    splits = make_splits(y, classification=True, cv=3, validation_size=0.2, seed=0)
    ctx = TrialContext(DEFAULT.for_task("classification"), X, y, splits,
                       get_metric("roc_auc", "classification", "binary"), None, 0,
                       labels=np.unique(y), cache_size=0, boost_to_fit=True)
    _slow(choice, parameter, ctx)
    z, theta = ctx.space.encode({"scaler": "none", "estimator": choice,
                                 f"estimator__{parameter}": 5000,
                                 "estimator__learning_rate": 0.001})
    with trial_limit(1.5):
        result = run_trial(ctx, z, theta, 1.0)
    assert result["status"] == "ok", result.get("error")
    assert result["boxed"] == 3 and all(1 <= r < 5000 for r in result["rounds"])
    assert 0.5 < 1.0 - result["loss"] <= 1.0  # a model that ranks (AUROC), not a constant


def test_a_split_s_box_is_its_share_of_what_the_limit_leaves_and_none_without_a_limit(context):
    import time

    from admm_automl.evaluation.policy import trial_limit
    from admm_automl.evaluation.trial import BOX_SHARE, _Trial

    z, theta = context.space.encode(_config("hist_gradient_boosting", "max_iter", 100))
    ctx = dataclasses.replace(context, boost_to_fit=True)
    assert _Trial(ctx, z, theta, 1.0).box(0) is None  # no limit known: a reproducible run
    with trial_limit(30.0):
        assert _Trial(context, z, theta, 1.0).box(0) is None  # the option off
        start = time.perf_counter()
        first, last = _Trial(ctx, z, theta, 1.0).box(0), _Trial(ctx, z, theta, 1.0).box(2)
    # 3 splits: the first gets a third of 80 % of the 30 s, the last (all others done) all 80 %
    assert first.end - start == pytest.approx(BOX_SHARE * 30.0 / 3, abs=0.5)
    assert last.end - start == pytest.approx(BOX_SHARE * 30.0, abs=0.5)
