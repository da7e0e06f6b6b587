"""The label encoding of a refit: a learner that takes only the label indices (XGBoost) is wrapped
so that the pipeline still predicts the labels."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from admm_automl.final.labels import LabelEncodedClassifier, fit_on_labels


class IndicesOnly(LogisticRegression):
    """Refuses labels other than 0..K-1, as XGBoost's classifier does."""

    def fit(self, X, y, sample_weight=None):
        if not np.array_equal(np.unique(y), np.arange(len(np.unique(y)))):
            raise ValueError(f"Invalid classes inferred from unique values of `y`: {np.unique(y)}")
        return super().fit(X, y, sample_weight=sample_weight)


@parametrize_with_checks([LabelEncodedClassifier(LogisticRegression())])
def test_is_a_scikit_learn_classifier(estimator, check):
    check(estimator)


def test_a_pipeline_whose_learner_refuses_labels_learns_indices_and_predicts_labels():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=120) > 0, "yes", "no")
    pipeline = make_pipeline(StandardScaler(), IndicesOnly())
    with pytest.raises(ValueError, match="Invalid classes"):
        IndicesOnly().fit(X, y)
    fitted = fit_on_labels(pipeline, X, y, (y == "yes").astype(int))
    last = fitted.steps[-1][1]
    assert isinstance(last, LabelEncodedClassifier)
    assert list(last.estimator_.classes_) == [0, 1] and list(fitted.classes_) == ["no", "yes"]
    assert (fitted.predict(X) == y).mean() > 0.8
    assert fitted.predict_proba(X).shape == (120, 2)


def test_a_learner_that_takes_the_labels_is_not_wrapped():
    X = np.arange(20.0).reshape(-1, 1)
    y = np.where(X[:, 0] > 9, "b", "a")
    fitted = fit_on_labels(make_pipeline(LogisticRegression()), X, y, (y == "b").astype(int))
    assert isinstance(fitted.steps[-1][1], LogisticRegression)
    assert list(fitted.classes_) == ["a", "b"]
