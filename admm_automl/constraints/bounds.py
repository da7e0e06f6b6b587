"""Bounds on a metric of the fitted pipeline: error rates or any scikit-learn scorer."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..exceptions import InvalidParameterError, UnknownComponentError, unknown_name_message
from .base import BaseConstraint
from .registry import CONSTRAINTS

RATES = ("fpr", "fnr", "tpr", "tnr")


def known_metric(name: str) -> bool:
    from sklearn.metrics import get_scorer_names

    return name in RATES or name in get_scorer_names()


@CONSTRAINTS.register("metric")
class MetricBound(BaseConstraint):
    """A bound on a validation metric: ``fpr``, ``fnr``, ``tpr``, ``tnr`` or a scikit-learn scorer.

    Rates are those of the positive class (the larger label) from ``predict``; a scorer gives its
    own value (scikit-learn scorers are greater-is-better, so error scorers are negative, e.g.
    ``neg_log_loss >= -0.3``). The expression ``"fpr <= 0.1"`` creates ``MetricBound("fpr", 0.1)``.
    """

    senses = ("<=", ">=")
    nonnegative = False

    def __init__(self, metric: str = "fpr", threshold: float = 0.1, sense: str = "<=") -> None:
        self.metric = metric
        self.threshold = threshold
        self.sense = sense

    @property
    def key(self) -> str:
        return self.metric

    def validate(self) -> None:
        super().validate()
        if not known_metric(self.metric):
            from sklearn.metrics import get_scorer_names

            raise UnknownComponentError(
                unknown_name_message("metric", self.metric, list(RATES) + list(get_scorer_names()))
            )
        if self.metric in RATES and not 0.0 <= self.threshold <= 1.0:
            raise InvalidParameterError(
                f"constraint {self.metric!r}: a rate threshold must lie in [0, 1], got "
                f"{self.threshold!r}"
            )

    def bind(self, X, y, *, groups, splits, task) -> None:
        self.validate()
        if self.metric in RATES:
            if task != "classification" or len(np.unique(y)) != 2:
                raise InvalidParameterError(
                    f"constraint {self.metric!r} needs a binary classification target"
                )
            self.positive_ = np.unique(y)[1]

    def measure(self, pipeline: Any, X: Any, y: np.ndarray, rows: np.ndarray) -> float:
        if self.metric not in RATES:
            from sklearn.metrics import get_scorer

            return float(get_scorer(self.metric)(pipeline, X, y))
        truth = np.asarray(y) == self.positive_
        pred = np.asarray(pipeline.predict(X)) == self.positive_
        tp, fp = np.sum(pred & truth), np.sum(pred & ~truth)
        fn, tn = np.sum(~pred & truth), np.sum(~pred & ~truth)
        ratio = {"fpr": (fp, fp + tn), "fnr": (fn, fn + tp), "tpr": (tp, tp + fn),
                 "tnr": (tn, tn + fp)}[self.metric]
        return float(ratio[0] / ratio[1]) if ratio[1] else float("nan")


@CONSTRAINTS.register("model_size")
class ModelSize(BaseConstraint):
    """Size of the fitted pipeline in bytes (its pickle)."""

    of_the_model = True

    def __init__(self, threshold: float = 1e6, sense: str = "<=") -> None:
        self.threshold = threshold
        self.sense = sense

    def measure(self, pipeline: Any, X: Any, y: np.ndarray, rows: np.ndarray) -> float:
        import pickle

        return float(len(pickle.dumps(pipeline, protocol=pickle.HIGHEST_PROTOCOL)))
