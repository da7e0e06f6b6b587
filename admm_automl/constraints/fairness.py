"""Group fairness: disparate impact as the spread of a metric across sensitive groups (Liu et al.
2020), and fairlearn's group-fairness metrics by their usual names (demographic parity, equalized
odds, equal opportunity; differences and ratios), over one sensitive column or the intersection of
several."""

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
    X: Any, group_by: "str | int | list | None", bins: Sequence[float] | None,
    sensitive_features: Any, name: str = "disparate_impact",
) -> np.ndarray:
    """Group label per row, from ``sensitive_features`` or a column of X (numbers binned).

    Numeric values are cut at ``bins`` (right-open intervals ``[a, b)`` labelled ``"a-b"``); rows
    outside every bin get no group (``None``) and are left out of the group metric. Several
    columns (``group_by`` a list, or 2-D ``sensitive_features``) give their intersection. ``name``
    is the constraint's, for the messages.
    """
    if sensitive_features is not None:
        values = np.asarray(sensitive_features, dtype=object)
        if len(values) != len(X):
            raise DataError(
                f"sensitive_features has {len(values)} rows but X has {len(X)}"
            )
        if values.ndim == 2:  # several columns: their intersection
            return _intersection([values[:, j] for j in range(values.shape[1])], bins)
        source = "sensitive_features"
    elif isinstance(group_by, (list, tuple)):
        return _intersection([make_groups(X, column, None, None, name) for column in group_by],
                             bins)
    else:
        if hasattr(X, "iloc"):
            if group_by not in X.columns:
                raise DataError(
                    f"{name}: group_by column {group_by!r} is not in X; columns: "
                    f"{[str(c) for c in X.columns]!r}"
                )
            values = X[group_by].to_numpy()
        else:
            if not isinstance(group_by, int) or not 0 <= group_by < X.shape[1]:
                raise DataError(
                    f"{name}: group_by must be a column index below {X.shape[1]} for "
                    f"array input, got {group_by!r}"
                )
            values = np.asarray(X)[:, group_by]
        source = f"column {group_by!r}"
    if bins is None:
        labels = np.array([None if v is None or v != v else str(v) for v in values], dtype=object)
        if len(set(labels) - {None}) > 50:
            raise DataError(
                f"{name}: {source} has more than 50 distinct values; give bins"
            )
        return labels
    edges = np.asarray(bins, dtype=float)
    if edges.ndim != 1 or len(edges) < 2 or np.any(np.diff(edges) <= 0):
        raise InvalidParameterError(
            f"{name}: bins must be at least 2 increasing edges, got {list(bins)!r}"
        )
    numeric = np.asarray(values, dtype=float)
    index = np.searchsorted(edges, numeric, side="right") - 1
    labels = np.array([None] * len(numeric), dtype=object)
    inside = (index >= 0) & (index < len(edges) - 1)
    for k in np.unique(index[inside]):
        labels[index == k] = f"{edges[k]:g}-{edges[k + 1]:g}"
    return labels


def _intersection(columns: Sequence[Any], bins: Sequence[float] | None) -> np.ndarray:
    """One group per combination of the columns' values, labelled ``"a & b"``; a row missing in
    any column has no group."""
    if bins is not None:
        raise InvalidParameterError("bins apply to one numeric column; for the intersection of "
                                    "several columns give their values as groups")
    labels = [np.array([None if v is None or v != v else str(v) for v in c], dtype=object)
              for c in columns]
    out = np.array([None if any(v is None for v in row) else " & ".join(row)
                    for row in zip(*labels)], dtype=object)
    if len(set(out) - {None}) > 50:
        raise DataError("the intersection of the sensitive columns has more than 50 groups")
    return out


class _GroupConstraint(BaseConstraint):
    """What every group constraint shares: groups fixed once from ``group_by`` (a column of X,
    or several for their intersection) or ``fit(..., sensitive_features=)``, binary
    classification, and the labels of the positive class."""

    group_by: Any
    bins: Sequence[float] | None

    def bind(self, X, y, *, groups, splits, task) -> None:
        self.validate()
        if task != "classification":
            raise InvalidParameterError(f"{self.name} applies to classification only")
        if groups is None and self.group_by is None:
            raise InvalidParameterError(
                f"{self.name} needs group_by (a column of X, or a list of columns) or "
                "fit(..., sensitive_features=)")
        self.groups_ = make_groups(X, self.group_by, self.bins,
                                   groups if self.group_by is None else None, self.name)
        if len(np.unique(y)) != 2:
            raise InvalidParameterError(f"{self.name} supports binary classification only")
        self.positive_ = np.unique(y)[1]
        if not np.any(self.groups_ != None):  # noqa: E711 (object array)
            raise DataError(f"{self.name}: no row falls into any group (check bins)")

    def _rows(self, y: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(y_true as 0/1, groups, the mask of rows that have a group)`` of ``rows``."""
        groups = self.groups_[rows]
        keep = groups != None  # noqa: E711 (object array)
        y_true = (np.asarray(y) == self.positive_).astype(int)
        return y_true[keep], groups[keep].astype(str), keep


class _FairlearnMetric(_GroupConstraint):
    """A fairlearn metric of the predicted labels across groups, by fairlearn's name and with
    fairlearn's semantics (``fairlearn.metrics.<name>(y_true, y_pred, sensitive_features=...)``;
    ``method="between_groups"``, its default)."""

    def measure(self, pipeline, X, y, rows) -> float:
        import fairlearn.metrics

        y_true, groups, keep = self._rows(y, rows)
        y_pred = (pipeline.predict(X) == self.positive_).astype(int)[keep]
        return float(getattr(fairlearn.metrics, self.name)(y_true, y_pred,
                                                           sensitive_features=groups))


class _Difference(_FairlearnMetric):
    """Parameters: ``threshold`` (largest difference allowed, default 0.1), ``group_by`` (a
    column of X or a list of columns; None: ``sensitive_features``), ``bins`` (edges for one
    numeric column)."""

    def __init__(self, threshold: float = 0.1, sense: str = "<=",
                 group_by: "str | int | list | None" = None,
                 bins: Sequence[float] | None = None) -> None:
        self.threshold = threshold
        self.sense = sense
        self.group_by = group_by
        self.bins = bins


class _Ratio(_FairlearnMetric):
    """Parameters: ``threshold`` (smallest ratio allowed, default 0.8: the "four-fifths rule"),
    ``group_by`` and ``bins`` as for the differences."""

    senses = (">=",)

    def __init__(self, threshold: float = 0.8, sense: str = ">=",
                 group_by: "str | int | list | None" = None,
                 bins: Sequence[float] | None = None) -> None:
        self.threshold = threshold
        self.sense = sense
        self.group_by = group_by
        self.bins = bins


@CONSTRAINTS.register("demographic_parity_difference")
class DemographicParityDifference(_Difference):
    """Largest difference of the selection rate (share predicted positive) between groups."""


@CONSTRAINTS.register("demographic_parity_ratio")
class DemographicParityRatio(_Ratio):
    """Smallest ratio of the selection rates of two groups."""


@CONSTRAINTS.register("equalized_odds_difference")
class EqualizedOddsDifference(_Difference):
    """The larger of the true-positive-rate and false-positive-rate differences between groups."""


@CONSTRAINTS.register("equalized_odds_ratio")
class EqualizedOddsRatio(_Ratio):
    """The smaller of the true-positive-rate and false-positive-rate ratios between groups."""


@CONSTRAINTS.register("equal_opportunity_difference")
class EqualOpportunityDifference(_Difference):
    """Largest difference of the true positive rate between groups."""


@CONSTRAINTS.register("equal_opportunity_ratio")
class EqualOpportunityRatio(_Ratio):
    """Smallest ratio of the true positive rates of two groups."""


@CONSTRAINTS.register("disparate_impact")
class DisparateImpact(_GroupConstraint):
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
        super().bind(X, y, groups=groups, splits=splits, task=task)
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

    def measure(self, pipeline, X, y, rows) -> float:
        from fairlearn.metrics import MetricFrame

        y_true, groups, keep = self._rows(y, rows)
        if self.metric == "roc_auc":
            classes = list(pipeline.classes_)
            y_pred = pipeline.predict_proba(X)[:, classes.index(self.positive_)][keep]
        else:
            y_pred = (pipeline.predict(X) == self.positive_).astype(int)[keep]
        frame = MetricFrame(
            metrics=_metric_function(self.metric), y_true=y_true, y_pred=y_pred,
            sensitive_features=groups,
        )
        return float(frame.difference(method="between_groups", errors="raise"))
