"""Losses to minimise, built on scikit-learn scorers.

Every metric is a *loss*: ``offset - scorer(estimator, X, y)`` (scikit-learn scorers are
greater-is-better). Bounded losses know their worst value (given to failed pipelines; 1.0 for
1 - AUROC, the worst-case value of Liu et al. 2020); for unbounded ones the objective uses the loss
of a constant predictor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

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
