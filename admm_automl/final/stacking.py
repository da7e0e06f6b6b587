"""A stack layer over the ensemble's members: stacked generalisation (Wolpert, Neural Networks
1992; Breiman, Machine Learning 1996), the second layer of AutoGluon-Tabular (Erickson et al.
2020).

The search already holds, for every kept evaluation, predictions on rows its model was not fitted
on: the validation rows of each split, out-of-fold with cross-validation. A second-layer model
trained on those predictions learns how to combine the members — which one to trust where, a
member that is right but badly calibrated — where the weighted ensemble (:mod:`.ensemble`) can
only average them. Training it costs nothing but the small second-layer model: no pipeline is
fitted again for it.

* **Members**: those of the weighted ensemble (its greedy selection chose them), then the best
  evaluation of each learner they leave out, in rank order, each while its fit (a refit on all
  rows, or none for a kept bag) still fits in what is left of the time budget: a second layer
  learns most from members that differ, which the greedy selection, scoring averages, may pass
  over.
* **Inputs of the second layer**, per member: the logit of the positive class's probability
  (binary), the log-probability of every class (multiclass; clipped at 1e-6), or the prediction
  (regression). The original features are not passed through (AutoGluon's layers do, with full
  learners at the second layer): a linear second layer on them would add little, and a searched
  one would need a search of its own inside the budget.
* **The second layer**: scikit-learn's ``LogisticRegression`` (L2, C = 1) for classification;
  least squares with non-negative weights and an intercept (``LinearRegression(positive=True)``)
  for regression, Breiman's (1996) remedy for stacked regressions whose members are nearly
  collinear.
* **Its loss**, compared with the weighted ensemble's: of the second layer's *own* out-of-fold
  predictions over the pooled validation rows, trained on the other folds' validation rows under
  cross-validation and on 5 folds of the validation rows under a holdout; a second layer scored
  on the rows it was fitted on would always look better than it is. The stack replaces the
  weighted ensemble only when that loss is strictly lower.

The fitted model is a :class:`StackedClassifier` / :class:`StackedRegressor`: its members refitted
on all rows or kept as bags of their fold models (:mod:`.bagging`), as the weighted ensemble's
are, under a second layer fitted on the search's
out-of-fold predictions (given frozen, so that refitting the stack, or measuring its constraints
split by split, refits only its members). Given an unfitted second layer instead, ``fit`` does
the whole stacking itself (members' out-of-fold predictions by ``cross_val_predict`` over ``cv``,
the second layer on them, the members on all rows), as scikit-learn's ``StackingClassifier``
does; it is the same model, only not assembled from a finished search.

Not done: further layers, and a second layer that sees the original features.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone, is_classifier
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import (KFold, LeaveOneGroupOut, StratifiedKFold, check_cv,
                                     cross_val_predict)
from sklearn.utils.validation import check_is_fitted

__all__ = ["StackedClassifier", "StackedRegressor", "final_layer", "meta_features",
           "stack_out_of_fold"]

#: probabilities are clipped to [EPS, 1 − EPS] before their logarithm
EPS = 1e-6
#: folds of the validation rows the second layer is scored on under a holdout
HOLDOUT_FOLDS = 5


def meta_features(predictions: Sequence[np.ndarray], classification: bool) -> np.ndarray:
    """The second layer's inputs from the members' predictions (rows × classes probabilities, or
    regression values): per member, the logit of the last class's probability when there are
    two, the log-probabilities when there are more, the values themselves for a regression."""
    columns = []
    for values in predictions:
        values = np.asarray(values, dtype=float)
        if not classification:
            columns.append(values.reshape(len(values), -1))
        elif values.shape[1] == 2:
            p = np.clip(values[:, 1], EPS, 1 - EPS)
            columns.append(np.log(p / (1 - p))[:, None])
        else:
            columns.append(np.log(np.clip(values, EPS, 1.0)))
    return np.hstack(columns)


def final_layer(classification: bool, random_state: Any = None) -> Any:
    """The unfitted second layer (module docstring)."""
    from sklearn.linear_model import LinearRegression, LogisticRegression

    if classification:
        return LogisticRegression(C=1.0, max_iter=1000, random_state=random_state)
    return LinearRegression(positive=True)


def stack_out_of_fold(meta: np.ndarray, y: np.ndarray, groups: np.ndarray, final: Any,
                      random_state: Any = None) -> tuple[np.ndarray, Any]:
    """The second layer's own out-of-fold predictions on ``meta`` (class probabilities, or
    values), trained on the other groups' rows (``groups``: each row's validation split; one
    group — a holdout — is cut into :data:`HOLDOUT_FOLDS` folds), and the second layer fitted on
    all of ``meta``."""
    classification = is_classifier(final)
    if len(np.unique(groups)) >= 2:
        folds = list(LeaveOneGroupOut().split(meta, y, groups))
    else:
        kind = StratifiedKFold if classification else KFold
        n = HOLDOUT_FOLDS
        if classification:
            n = min(n, int(np.bincount(np.unique(y, return_inverse=True)[1]).min()))
        if n < 2:
            raise ValueError("too few validation rows of some class to score a second layer")
        folds = list(kind(n, shuffle=True, random_state=random_state).split(meta, y))
    method = "predict_proba" if classification else "predict"
    oof = cross_val_predict(clone(final), meta, y, cv=folds, method=method)
    return oof, clone(final).fit(meta, y)


class _Stacked(BaseEstimator):
    """Members under a second layer fed by :func:`meta_features` (module docstring).

    Parameters
    ----------
    estimators : list of (str, estimator)
        The members, by name.
    final_estimator : estimator
        The second layer; a ``FrozenEstimator`` (fitted already) makes ``fit`` fit only the
        members, anything else is fitted on the members' out-of-fold predictions over ``cv``.
    cv : int, cross-validation generator or iterable, default=5
        The folds of those out-of-fold predictions (unused with a frozen second layer).
    """

    def __init__(self, estimators: list[tuple[str, Any]], final_estimator: Any,
                 cv: Any = 5) -> None:
        self.estimators = estimators
        self.final_estimator = final_estimator
        self.cv = cv

    def _member_outputs(self, members: Sequence[Any], X: Any) -> list[np.ndarray]:
        method = "predict_proba" if is_classifier(self) else "predict"
        return [getattr(member, method)(X) for member in members]

    def fit(self, X: Any, y: Any) -> "_Stacked":
        if not self.estimators:
            raise ValueError("a stack needs at least one member")
        if isinstance(self.final_estimator, FrozenEstimator):
            check_is_fitted(self.final_estimator.estimator)
            final = self.final_estimator
        else:
            if any(isinstance(est, FrozenEstimator) for _, est in self.estimators):
                raise ValueError("a frozen member has no out-of-fold predictions to train a "
                                 "second layer on: give the second layer frozen too, or the "
                                 "members unfitted")
            cv = check_cv(self.cv, y, classifier=is_classifier(self))
            method = "predict_proba" if is_classifier(self) else "predict"
            oof = [cross_val_predict(clone(est), X, y, cv=cv, method=method)
                   for _, est in self.estimators]
            final = clone(self.final_estimator).fit(meta_features(oof, is_classifier(self)), y)
        self.estimators_ = [clone(est).fit(X, y) for _, est in self.estimators]
        self.named_estimators_ = dict(zip((name for name, _ in self.estimators),
                                          self.estimators_))
        self.final_estimator_ = final
        return self

    def transform(self, X: Any) -> np.ndarray:
        """The second layer's inputs for X (:func:`meta_features` of the members' outputs)."""
        check_is_fitted(self)
        return meta_features(self._member_outputs(self.estimators_, X), is_classifier(self))


class StackedClassifier(ClassifierMixin, _Stacked):
    __doc__ = _Stacked.__doc__

    @property
    def classes_(self) -> np.ndarray:
        return self.final_estimator_.classes_

    def predict_proba(self, X: Any) -> np.ndarray:
        return self.final_estimator_.predict_proba(self.transform(X))

    def predict(self, X: Any) -> np.ndarray:
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


class StackedRegressor(RegressorMixin, _Stacked):
    __doc__ = _Stacked.__doc__

    def predict(self, X: Any) -> np.ndarray:
        return self.final_estimator_.predict(self.transform(X))
