"""Losses to minimise, built on scikit-learn scorers.

Every metric is a *loss*: ``offset - scorer(estimator, X, y)`` (scikit-learn scorers are
greater-is-better). Bounded losses know their worst value (given to failed pipelines; 1.0 for
1 - AUROC, the worst-case value of Liu et al. 2020); for unbounded ones the objective uses the loss
of a constant predictor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..exceptions import InvalidParameterError, unknown_name_message


@dataclass(frozen=True)
class Metric:
    """A loss ``offset - scorer(estimator, X, y)``; ``worst`` is its upper bound, if it has one."""

    name: str
    scorer: Any  # a scorer name or a callable scorer(estimator, X, y) -> score
    offset: float = 0.0
    worst: float | None = None

    def make_scorer(self, labels: Any = None) -> Callable[..., float]:
        """The scorer; with ``labels`` (all classes), probability losses stay defined when a
        validation split misses a class."""
        if callable(self.scorer):
            return self.scorer
        from sklearn import metrics

        if labels is not None and self.scorer == "neg_log_loss":
            return metrics.make_scorer(
                metrics.log_loss, greater_is_better=False, response_method="predict_proba",
                labels=labels,
            )
        if labels is not None and self.scorer == "roc_auc_ovr":
            return metrics.make_scorer(
                metrics.roc_auc_score, response_method="predict_proba", multi_class="ovr",
                labels=labels,
            )
        return metrics.get_scorer(self.scorer)

    def loss(self, scorer: Callable[..., float], estimator: Any, X: Any, y: Any) -> float:
        return float(self.offset - scorer(estimator, X, y))

    def shortcut(self, y: np.ndarray, labels: np.ndarray | None = None
                 ) -> Callable[[np.ndarray], float] | None:
        """The loss of prediction arrays against ``y`` — class probabilities with one column per
        label of ``labels`` in sorted order, or a regressor's values — computed as scikit-learn
        computes it, without its input checks; None where there is no such shortcut (a metric
        other than 1 − AUROC of two classes, log-loss, RMSE and MAE, or ``y`` not all of two
        classes or of ``labels``). An array of another shape is refused (ValueError).

        Why: the greedy ensemble selection scores the average of every candidate at every step,
        some five hundred calls an ensemble, and scikit-learn's scorers spend milliseconds a call
        checking their input (14 ms for log-loss on 500 rows of three classes, against 0.1 ms
        for the arithmetic). The arithmetic is scikit-learn's own, so the values are equal
        (``tests/evaluation/test_metrics.py`` holds them to it)."""
        y = np.asarray(y)
        if self.name in ("rmse", "mae") and labels is None:
            return _regression_loss(self.name, y)
        if labels is None or self.name not in ("roc_auc", "log_loss"):
            return None
        classes = np.unique(labels)
        index = np.searchsorted(classes, y)
        if index.size and (index.max() >= len(classes) or np.any(classes[index] != y)):
            return None  # a label outside ``labels``: the scorer says why
        if self.name == "log_loss":  # its columns in sorted order, as scikit-learn reads them
            return _log_loss(index, len(classes))
        if len(labels) != 2:
            return None
        return _auroc_loss(y == np.asarray(labels)[1])  # the scorer's positive class


def _log_loss(index: np.ndarray, n_classes: int) -> Callable[[np.ndarray], float]:
    """scikit-learn's ``log_loss`` of probabilities against the classes at ``index``: clipped to
    [eps, 1 − eps] of their dtype, the mean of −log of each row's true class (of two classes, the
    positive column and one minus it, as the scorer hands them over)."""
    rows = np.arange(len(index))

    def loss(values: np.ndarray) -> float:
        values = np.asarray(values)
        if values.shape != (len(index), n_classes):
            raise ValueError(f"expected probabilities of shape {(len(index), n_classes)}, got "
                             f"{values.shape}")
        eps = np.finfo(values.dtype).eps if values.dtype.kind == "f" else np.finfo(float).eps
        if n_classes == 2:  # the scorer passes the positive column only: the other is 1 - it
            true = np.where(index == 1, values[:, 1], 1 - values[:, 1])
        else:
            true = values[rows, index]
        return float(-np.mean(np.log(np.clip(true, eps, 1 - eps))))

    return loss


def _auroc_loss(positive: np.ndarray) -> Callable[[np.ndarray], float] | None:
    """1 − AUROC of class probabilities against the 0/1 ``positive`` labels by the rank-sum
    (Mann–Whitney) formula, ties counted a half, as ``roc_auc_score``'s trapezoids count them;
    None when a class is missing (the scorer then says why)."""
    from scipy.stats import rankdata

    n_pos = int(positive.sum())
    n_neg = len(positive) - n_pos
    if not n_pos or not n_neg:
        return None

    def loss(values: np.ndarray) -> float:
        ranks = rankdata(np.asarray(values)[:, 1])
        return 1.0 - (ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)

    return loss


def _regression_loss(name: str, y: np.ndarray) -> Callable[[np.ndarray], float] | None:
    """scikit-learn's RMSE or MAE of one output, as it computes them: the column's average of
    squared (then the root) or absolute errors, then the average over outputs."""
    if y.ndim != 1 or y.dtype.kind not in "fiu":
        return None
    column = y.astype(float)[:, None]

    def loss(values: np.ndarray) -> float:
        values = np.asarray(values, dtype=float)
        if values.shape != y.shape:
            raise ValueError(f"expected values of shape {y.shape}, got {values.shape}")
        errors = values[:, None] - column
        if name == "rmse":
            return float(np.average(np.sqrt(np.average(errors ** 2, axis=0))))
        return float(np.average(np.average(np.abs(errors), axis=0)))

    return loss


_BUILTIN = {
    "roc_auc": Metric("roc_auc", "roc_auc", 1.0, 1.0),  # 1 - AUROC (binary)
    "roc_auc_ovr": Metric("roc_auc_ovr", "roc_auc_ovr", 1.0, 1.0),
    "accuracy": Metric("accuracy", "accuracy", 1.0, 1.0),  # 1 - accuracy
    "balanced_accuracy": Metric("balanced_accuracy", "balanced_accuracy", 1.0, 1.0),
    "f1": Metric("f1", "f1", 1.0, 1.0),
    "log_loss": Metric("log_loss", "neg_log_loss"),
    "rmse": Metric("rmse", "neg_root_mean_squared_error"),
    "mae": Metric("mae", "neg_mean_absolute_error"),
    "r2": Metric("r2", "r2", 1.0),  # 1 - R2
}

#: default metric per target type (Liu et al. 2020: 1 - AUROC for binary problems)
DEFAULTS = {"binary": "roc_auc", "multiclass": "log_loss", "continuous": "rmse"}
CLASSIFICATION_ONLY = {"roc_auc", "roc_auc_ovr", "accuracy", "balanced_accuracy", "f1", "log_loss"}
REGRESSION_ONLY = {"rmse", "mae", "r2"}


#: how a person reads the score of a metric (reports, the progress display, the command line)
LABELS = {"roc_auc": "AUROC", "roc_auc_ovr": "AUROC (one-vs-rest)", "balanced_accuracy":
          "balanced accuracy", "log_loss": "log-loss", "rmse": "RMSE", "mae": "MAE", "r2": "R²"}


def shown(name: str, offset: float, loss: float) -> tuple[str, float]:
    """``(label, value)`` of a loss as a person reads it: the score ``offset − loss`` of a metric
    that has one (AUROC, accuracy, R²), the loss itself otherwise (RMSE, log-loss)."""
    label = LABELS.get(name, name)
    return (label, offset - loss) if offset else (label, loss)


#: what people call the metrics, for the suggestion of an unknown name (not accepted as names:
#: scikit-learn's scorer names are the vocabulary)
ALIASES = {"auroc": "roc_auc", "auc": "roc_auc", "roc": "roc_auc", "rocauc": "roc_auc",
           "logloss": "log_loss", "cross_entropy": "log_loss", "nll": "log_loss",
           "acc": "accuracy", "mse": "neg_mean_squared_error", "r_squared": "r2",
           "f1_score": "f1", "rmsle": "neg_root_mean_squared_log_error"}


def list_metrics() -> list[str]:
    return sorted(_BUILTIN)


def get_metric(scoring: Any, task: str, target_type: str) -> Metric:
    """Resolve ``scoring`` (None, a built-in loss name, a scikit-learn scorer name or a callable)."""
    if scoring is None:
        return _BUILTIN[DEFAULTS[target_type]]
    if callable(scoring):
        return Metric(getattr(scoring, "__name__", "custom"), scoring)
    if not isinstance(scoring, str):
        raise InvalidParameterError(
            f"scoring must be None, a metric name or a callable scorer, got {scoring!r}"
        )
    if scoring in _BUILTIN:
        wrong = REGRESSION_ONLY if task == "classification" else CLASSIFICATION_ONLY
        if scoring in wrong:
            raise InvalidParameterError(f"scoring {scoring!r} does not apply to {task}")
        if scoring == "roc_auc" and target_type == "multiclass":
            return _BUILTIN["roc_auc_ovr"]
        return _BUILTIN[scoring]
    from sklearn.metrics import get_scorer_names

    if scoring in get_scorer_names():
        return Metric(scoring, scoring)
    raise InvalidParameterError(
        unknown_name_message("scoring", scoring, list(_BUILTIN) + list(get_scorer_names()),
                             ALIASES)
    )
