"""Group fairness: disparate impact as the spread of a metric across sensitive groups."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..exceptions import DataError, InvalidParameterError
from .base import BaseConstraint
from .registry import CONSTRAINTS

_METRICS = ("roc_auc", "accuracy", "selection_rate", "tpr", "fpr")


def _metric_function(name: str):
    from fairlearn.metrics import false_positive_rate, selection_rate, true_positive_rate
    from sklearn.metrics import accuracy_score, roc_auc_score

    return {
        "roc_auc": roc_auc_score,
        "accuracy": accuracy_score,
        "selection_rate": selection_rate,
        "tpr": true_positive_rate,
        "fpr": false_positive_rate,
    }[name]


def make_groups(
    X: Any, group_by: "str | int | None", bins: Sequence[float] | None, sensitive_features: Any
) -> np.ndarray:
    """Group label per row, from ``sensitive_features`` or a column of X (numbers binned).

    Numeric values are cut at ``bins`` (right-open intervals ``[a, b)`` labelled ``"a-b"``); rows
    outside every bin get no group (``None``) and are left out of the group metric.
    """
    if sensitive_features is not None:
        values = np.asarray(sensitive_features)
        if len(values) != len(X):
            raise DataError(
                f"sensitive_features has {len(values)} rows but X has {len(X)}"
            )
        source = "sensitive_features"
    else:
        if hasattr(X, "iloc"):
            if group_by not in X.columns:
                raise DataError(
                    f"disparate_impact: group_by column {group_by!r} is not in X; columns: "
                    f"{[str(c) for c in X.columns]!r}"
                )
            values = X[group_by].to_numpy()
        else:
            if not isinstance(group_by, int) or not 0 <= group_by < X.shape[1]:
                raise DataError(
                    f"disparate_impact: group_by must be a column index below {X.shape[1]} for "
                    f"array input, got {group_by!r}"
                )
            values = np.asarray(X)[:, group_by]
        source = f"column {group_by!r}"
    if bins is None:
        labels = np.array([None if v is None or v != v else str(v) for v in values], dtype=object)
        if len(set(labels) - {None}) > 50:
            raise DataError(
                f"disparate_impact: {source} has more than 50 distinct values; give bins"
            )
        return labels
    edges = np.asarray(bins, dtype=float)
    if edges.ndim != 1 or len(edges) < 2 or np.any(np.diff(edges) <= 0):
        raise InvalidParameterError(
            f"disparate_impact: bins must be at least 2 increasing edges, got {list(bins)!r}"
        )
    numeric = np.asarray(values, dtype=float)
    index = np.searchsorted(edges, numeric, side="right") - 1
    labels = np.array([None] * len(numeric), dtype=object)
    inside = (index >= 0) & (index < len(edges) - 1)
    for k in np.unique(index[inside]):
        labels[index == k] = f"{edges[k]:g}-{edges[k + 1]:g}"
    return labels


@CONSTRAINTS.register("disparate_impact")
class DisparateImpact(BaseConstraint):
    """Disparate impact: max − min of a metric (AUROC by default) over sensitive groups.

    Computed with fairlearn's ``MetricFrame(...).difference()`` on the validation rows, as Liu et
    al. 2020 (Section 5, Appendix 12) measure it across age groups. Groups come from the column
    ``group_by`` of X (numbers cut at ``bins``) or from ``fit(..., sensitive_features=...)``; they
    are fixed once for all rows, so splits and subsamples see the same grouping.

    Parameters
    ----------
    threshold : float
        Largest allowed difference.
    group_by : str or int, optional
        Column of X (name for a DataFrame, index for an array); None uses ``sensitive_features``.
    bins : list of float, optional
        Edges for a numeric column, e.g. ``[20, 30, 40, 50, 60, 70]``.
    metric : {"roc_auc", "accuracy", "selection_rate", "tpr", "fpr"}
    """

    def __init__(
        self,
        threshold: float = 0.1,
        sense: str = "<=",
        group_by: "str | int | None" = None,
        bins: Sequence[float] | None = None,
        metric: str = "roc_auc",
    ) -> None:
        self.threshold = threshold
        self.sense = sense
        self.group_by = group_by
        self.bins = bins
        self.metric = metric

    def validate(self) -> None:
        super().validate()
        if self.metric not in _METRICS:
            raise InvalidParameterError(
                f"disparate_impact: metric must be one of {_METRICS!r}, got {self.metric!r}"
            )

    def bind(self, X, y, *, groups, splits, task) -> None:
        self.validate()
        if task != "classification":
            raise InvalidParameterError("disparate_impact applies to classification only")
        if groups is None and self.group_by is None:
            raise InvalidParameterError(
                "disparate_impact needs group_by (a column of X) or fit(..., sensitive_features=)"
            )
        self.groups_ = make_groups(X, self.group_by, self.bins, groups if self.group_by is None else None)
        if len(np.unique(y)) != 2:
            raise InvalidParameterError("disparate_impact supports binary classification only")
        self.positive_ = np.unique(y)[1]
        for i, split in enumerate(splits):
            rows = split.valid
            for group in sorted(set(self.groups_[rows]) - {None}):
                members = rows[self.groups_[rows] == group]
                if self.metric == "roc_auc" and len(np.unique(y[members])) < 2:
                    raise DataError(
                        f"disparate_impact: group {group!r} has a single class in validation "
                        f"split {i}, so its AUROC is undefined; merge groups (bins) or use "
                        "another metric"
                    )
        if not np.any(self.groups_ != None):  # noqa: E711 (object array)
            raise DataError("disparate_impact: no row falls into any group (check bins)")

    def measure(self, pipeline, X, y, rows) -> float:
        from fairlearn.metrics import MetricFrame

        groups = self.groups_[rows]
        keep = groups != None  # noqa: E711 (object array)
        y_true = (np.asarray(y) == self.positive_).astype(int)[keep]
        if self.metric == "roc_auc":
            classes = list(pipeline.classes_)
            y_pred = pipeline.predict_proba(X)[:, classes.index(self.positive_)][keep]
        else:
            y_pred = (pipeline.predict(X) == self.positive_).astype(int)[keep]
        frame = MetricFrame(
            metrics=_metric_function(self.metric), y_true=y_true, y_pred=y_pred,
            sensitive_features=groups[keep].astype(str),
        )
        return float(frame.difference(method="between_groups", errors="raise"))
