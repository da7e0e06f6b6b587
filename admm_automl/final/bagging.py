"""Bags: the fold models of a cross-validated evaluation kept and averaged, instead of one refit
on all rows (AutoGluon-Tabular's bagged models, Erickson et al. 2020).

With k-fold cross-validation every evaluation fits k models, each on (k − 1)/k of the rows, and
the search scores them on the remaining rows. Those k models, averaged, are a model in their own
right: a bag. It costs no refit (the ensemble's members need none where their bags were kept, so
more members fit in a time budget), and its out-of-fold predictions are exactly the validation
predictions the ensemble and the stack layer were chosen on — the stack's second layer sees at
prediction time the same kind of inputs it was trained on, which a member refitted on all rows
only approximates. Averaging k models fitted on different rows also smooths a learner that
overfits its training rows (bagging, Breiman 1996).

How they are kept: a trial of a run that keeps them (:attr:`TrialContext.models_dir
<admm_automl.evaluation.trial.TrialContext>`) writes its fold models, pickled, to one file in a
private temporary folder of the run (:mod:`admm_automl.evaluation.fold_models`) — never in the run directory, which runs nothing but the
estimators its files name — and the run's library of kept predictions
(:mod:`.library`) deletes the files of the evaluations that leave it, so the folder holds at
most the library's evaluations. A file larger than
:data:`~admm_automl.evaluation.fold_models.MAX_MODEL_MB` is not written (that
evaluation is refitted if chosen). The folder is removed when ``fit`` ends. A resumed run has
no fold models of the evaluations of earlier sessions: a member among them gets its fold models
fitted again by its own trial (the same pipelines on the same splits, so the same bag), and the
resumed run returns the model an uninterrupted one does.

What it costs: disk for the folder while ``fit`` runs (at most the library's evaluations — the
best 32 and each learner's best — of at most
:data:`~admm_automl.evaluation.fold_models.MAX_MODEL_MB` each), a few milliseconds of pickling
per trial for the usual models, and a fitted ensemble k times the size of one of refits, which
predicts k times slower.

Where bags are not used: under a holdout (one split: its "bag" is a single model fitted on 80 %
of the rows, which a refit on all rows beats), with constraints (a bag of k models predicts k
times slower and is k times larger than what the trials measured), and with ``bagging=False``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone, is_classifier
from sklearn.model_selection import check_cv
from sklearn.utils.validation import check_is_fitted

__all__ = ["BaggedClassifier", "BaggedRegressor", "bag_of"]


class _Bag(BaseEstimator):
    """The average of fold models.

    Parameters
    ----------
    estimator : estimator
        What each fold fits (a clone of it).
    cv : int, cross-validation generator or iterable, default=5
        The folds: one model per fold, fitted on its training rows.

    Attributes
    ----------
    estimators_ : list of estimators
        The fold models; predictions are their mean (of class probabilities for a classifier).
    """

    def __init__(self, estimator: Any, cv: Any = 5) -> None:
        self.estimator = estimator
        self.cv = cv

    def fit(self, X: Any, y: Any) -> "_Bag":
        from ..evaluation.data import take_rows

        folds = check_cv(self.cv, y, classifier=is_classifier(self)).split(X, y)
        y = np.asarray(y)
        self.estimators_ = [clone(self.estimator).fit(take_rows(X, train), y[train])
                            for train, _ in folds]
        return self

    def _mean(self, method: str, X: Any) -> np.ndarray:
        check_is_fitted(self)
        return np.mean([getattr(model, method)(X) for model in self.estimators_], axis=0)


class BaggedClassifier(ClassifierMixin, _Bag):
    __doc__ = _Bag.__doc__

    @property
    def classes_(self) -> np.ndarray:
        return self.estimators_[0].classes_

    def predict_proba(self, X: Any) -> np.ndarray:
        return self._mean("predict_proba", X)

    def predict(self, X: Any) -> np.ndarray:
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


class BaggedRegressor(RegressorMixin, _Bag):
    __doc__ = _Bag.__doc__

    def predict(self, X: Any) -> np.ndarray:
        return self._mean("predict", X)


def bag_of(models: Sequence[Any], splits: Sequence[Any]) -> _Bag:
    """A fitted bag of the fold models a trial kept, one per split of ``splits`` (the run's), as
    :meth:`_Bag.fit` on those splits would have fitted them."""
    models = list(models)
    kind = BaggedClassifier if is_classifier(models[0]) else BaggedRegressor
    bag = kind(clone(models[0]), cv=[(split.train, split.valid) for split in splits])
    bag.estimators_ = models
    return bag
