"""Fitting the final model on the labels: a learner that takes only the label indices (XGBoost)
learns them and still predicts the labels (:class:`LabelEncodedClassifier`)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.pipeline import Pipeline
from sklearn.utils import get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d

from ..exceptions import DataError

__all__ = ["LabelEncodedClassifier", "fit_on_labels", "label_indices"]


def label_indices(classes: np.ndarray, y: Any) -> np.ndarray:
    """The indices in ``classes`` of the labels ``y``; an unseen label is an error."""
    y = column_or_1d(np.asarray(y))
    index = np.clip(np.searchsorted(classes, y), 0, len(classes) - 1)
    unseen = classes[index] != y
    if unseen.any():
        raise DataError(f"y has labels not seen in fit: {sorted(set(y[unseen].tolist()))[:5]!r}")
    return index


def fit_on_labels(model: Any, X: Any, y: Any, y_search: Any, **fit_params: Any) -> Any:
    """``model`` fitted on all of (X, y), its warnings silenced (the search reported them). If
    the model refuses the labels themselves (XGBoost takes only 0..K-1), it learns the label
    indices instead: a pipeline's last step is wrapped in :class:`LabelEncodedClassifier`, so the
    pipeline alone (``best_pipeline_``, pickled in the run directory) still predicts the labels;
    another model (an ensemble) is fitted on ``y_search``, the indices the search used, and the
    estimator maps its predictions back. ``fit_params`` go to ``model.fit``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return model.fit(X, y, **fit_params)
        except Exception:
            if y is y_search or np.array_equal(np.asarray(y), np.asarray(y_search)):
                raise
            if not isinstance(model, Pipeline):
                return model.fit(X, y_search, **fit_params)
            name, last = model.steps[-1]
            model.steps[-1] = (name, LabelEncodedClassifier(last))
            return model.fit(X, y, **fit_params)


def _estimator_has(method: str) -> Any:
    return lambda self: hasattr(self.estimator_ if hasattr(self, "estimator_") else self.estimator,
                                method)


class LabelEncodedClassifier(MetaEstimatorMixin, ClassifierMixin, BaseEstimator):
    """A classifier that learns the indices ``0..K-1`` of the labels and predicts the labels: for
    a learner that takes no other targets (XGBoost), as scikit-learn's
    ``TransformedTargetRegressor`` transforms a regressor's target.

    Parameters
    ----------
    estimator : classifier
        Cloned and fitted on the label indices.

    Attributes
    ----------
    classes_ : ndarray
        The labels, sorted; ``predict_proba``'s columns are in this order.
    estimator_ : classifier
        The fitted clone.
    """

    def __init__(self, estimator: Any) -> None:
        self.estimator = estimator

    def fit(self, X: Any, y: Any, **fit_params: Any) -> "LabelEncodedClassifier":
        check_classification_targets(y)
        self.classes_, indices = np.unique(column_or_1d(y, warn=True), return_inverse=True)
        self.estimator_ = clone(self.estimator).fit(X, indices, **fit_params)
        return self

    @property
    def n_features_in_(self) -> int:
        return self.estimator_.n_features_in_

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        inner = get_tags(self.estimator)
        tags.input_tags.sparse, tags.input_tags.allow_nan = (inner.input_tags.sparse,
                                                             inner.input_tags.allow_nan)
        return tags

    def predict(self, X: Any) -> np.ndarray:
        check_is_fitted(self)
        return self.classes_[np.asarray(self.estimator_.predict(X), dtype=int)]

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X: Any) -> np.ndarray:
        check_is_fitted(self)
        return self.estimator_.predict_proba(X)

    @available_if(_estimator_has("predict_log_proba"))
    def predict_log_proba(self, X: Any) -> np.ndarray:
        check_is_fitted(self)
        return self.estimator_.predict_log_proba(X)

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X: Any) -> np.ndarray:
        check_is_fitted(self)
        return self.estimator_.decision_function(X)
