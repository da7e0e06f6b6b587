"""The losses' shortcut on prediction arrays gives scikit-learn's values."""

from __future__ import annotations

import numpy as np
import pytest

from admm_automl.evaluation.metrics import get_metric
from admm_automl.final.ensemble import _FixedClassifier, _FixedRegressor


def scorer_loss(metric, values, y, labels):
    """The loss as a trial's scorer computes it, on an estimator that predicts ``values``."""
    fixed = _FixedRegressor(values) if labels is None else _FixedClassifier(values, labels)
    return metric.loss(metric.make_scorer(labels), fixed, np.zeros((len(y), 1)), y)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("n_classes", [2, 3, 5])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_log_loss_shortcut_is_the_scorers_loss(seed, n_classes, dtype):
    """Equal to the last bit, clipped at the eps of the predictions' dtype: probabilities of 0
    and 1 included, a class absent from y included."""
    rng = np.random.default_rng(seed)
    labels = np.array(["a", "b", "c", "d", "e"][:n_classes])
    y = rng.choice(labels[:-1] if seed == 4 else labels, 300)
    values = rng.dirichlet(np.ones(n_classes), 300).astype(dtype)
    values[:10] = np.eye(n_classes, dtype=dtype)[rng.integers(n_classes, size=10)]  # 0 and 1
    metric = get_metric("log_loss", "classification", "multiclass")
    assert metric.shortcut(y, labels)(values) == scorer_loss(metric, values, y, labels)


@pytest.mark.parametrize("seed", range(5))
def test_auroc_shortcut_is_the_scorers_loss_ties_included(seed):
    rng = np.random.default_rng(seed)
    labels = np.array([0, 1])
    y = rng.integers(0, 2, 400)
    q = np.round(rng.uniform(size=400), seed % 3 + 1)  # many ties
    values = np.column_stack([1 - q, q])
    metric = get_metric("roc_auc", "classification", "binary")
    assert metric.shortcut(y, labels)(values) == pytest.approx(
        scorer_loss(metric, values, y, labels), abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("name", ["rmse", "mae"])
def test_regression_shortcuts_are_the_scorers_losses(seed, name):
    rng = np.random.default_rng(seed)
    y = rng.normal(size=250) * 10 ** seed
    values = y + rng.standard_t(3, size=250)
    metric = get_metric(name, "regression", "continuous")
    assert metric.shortcut(y)(values) == scorer_loss(metric, values, y, None)


def test_no_shortcut_where_the_scorer_must_decide():
    """Metrics without one, one class only, labels outside ``labels``: the scorer's case (it
    raises what a user should read); a wrongly shaped array is refused."""
    y = np.array([0, 1, 1, 0])
    binary = get_metric("roc_auc", "classification", "binary")
    assert get_metric("accuracy", "classification", "binary").shortcut(y, [0, 1]) is None
    assert get_metric("r2", "regression", "continuous").shortcut(y.astype(float)) is None
    assert binary.shortcut(np.ones(4, dtype=int), [0, 1]) is None
    assert binary.shortcut(np.array([0, 1, 2, 0]), [0, 1]) is None
    assert get_metric("log_loss", "classification", "binary").shortcut(y, [0, 2]) is None
    with pytest.raises(ValueError, match=r"shape \(4, 2\), got \(4, 3\)"):
        get_metric("log_loss", "classification", "binary").shortcut(y, [0, 1])(np.ones((4, 3)))
    with pytest.raises(ValueError, match=r"shape \(4,\), got \(3,\)"):
        get_metric("rmse", "regression", "continuous").shortcut(y.astype(float))(np.ones(3))


@pytest.mark.parametrize("metric_name,estimator,shortcut", [
    ("roc_auc", "sklearn.ensemble.RandomForestClassifier", True),
    ("roc_auc", "sklearn.linear_model.LogisticRegression", False),  # ranked by decision_function
    ("log_loss", "sklearn.linear_model.LogisticRegression", True),
    ("log_loss", "sklearn.svm.LinearSVC", False),  # no probabilities: the scorer's error
    ("rmse", "sklearn.linear_model.Ridge", True),
    ("mae", "sklearn.ensemble.RandomForestRegressor", True),
])
def test_a_trial_scores_and_keeps_one_prediction_where_the_scorer_reads_the_same(
        metric_name, estimator, shortcut):
    """A split's loss from the predictions the ensemble keeps, equal to the scorer's, where the
    scorer would read those predictions; left to the scorer elsewhere."""
    import importlib

    from admm_automl.evaluation.trial import TrialContext, _predicted_loss, validation_predictions

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    regression = metric_name in ("rmse", "mae")
    y = X[:, 0] + rng.normal(size=200) if regression else (X[:, 0] + rng.normal(size=200) > 0) * 1
    module, name = estimator.rsplit(".", 1)
    model = getattr(importlib.import_module(module), name)().fit(X[:150], y[:150])
    metric = get_metric(metric_name, "regression" if regression else "classification",
                        "continuous" if regression else "binary")
    labels = None if regression else np.unique(y)
    ctx = TrialContext(None, X, y, [], metric, labels=labels)
    loss, kept = _predicted_loss(ctx, model, X[150:], y[150:])
    assert (loss is not None) is shortcut
    if shortcut:
        expected = metric.loss(metric.make_scorer(labels), model, X[150:], y[150:])
        assert loss == pytest.approx(expected, abs=1e-12)
        np.testing.assert_array_equal(kept, validation_predictions(model, X[150:]))
