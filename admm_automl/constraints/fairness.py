"""Group fairness: disparate impact as the spread of a metric across sensitive groups (Liu et al.
2020), and fairlearn's group-fairness metrics by their usual names (demographic parity, equalized
odds, equal opportunity; differences and ratios), over one sensitive column or the intersection of
several."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..exceptions import DataError, InvalidParameterError
from .base import BaseConstraint, check_confidence
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
                f"{self.name} needs group_by (a column of X, or a list of columns; on the "
                "command line --group-by COLUMN) or fit(..., sensitive_features=)")
        self.groups_ = make_groups(X, self.group_by, self.bins,
                                   groups if self.group_by is None else None, self.name)
        if len(np.unique(y)) != 2:
            raise InvalidParameterError(f"{self.name} supports binary classification only")
        self.positive_ = np.unique(y)[1]
        if not np.any(self.groups_ != None):  # noqa: E711 (object array)
            raise DataError(f"{self.name}: no row falls into any group (check bins)")
        found = sorted(set(self.groups_.tolist()) - {None})
        if len(found) < 2:
            source = "sensitive_features" if self.group_by is None else f"group_by {self.group_by!r}"
            raise DataError(f"{self.name}: every row with a group is in group {found[0]!r} of "
                            f"{source}; a group-fairness constraint compares at least two groups")

    @property
    def mitigation_target(self) -> str | None:
        """The quantity fairlearn's mitigations equalise to meet this constraint (fairlearn's
        name, :mod:`.mitigation`); None where none does."""
        return None

    def _rows(self, y: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(y_true as 0/1, groups, the mask of rows that have a group)`` of ``rows``."""
        groups = self.groups_[rows]
        keep = groups != None  # noqa: E711 (object array)
        y_true = (np.asarray(y) == self.positive_).astype(int)
        return y_true[keep], groups[keep].astype(str), keep


#: what each fairlearn metric compares across groups: the selection rate, the true positive
#: rate, or both the true and the false positive rates (equalized odds: the worse of the two)
_RATES = {"demographic_parity": ("sr",), "equal_opportunity": ("tpr",),
          "equalized_odds": ("tpr", "fpr")}
#: ... and the quantity a mitigation equalises to meet it (fairlearn's name)
_TARGETS = {"demographic_parity": "demographic_parity", "equal_opportunity":
            "true_positive_rate_parity", "equalized_odds": "equalized_odds"}


def group_rates(y_true: np.ndarray, y_pred: np.ndarray, group: np.ndarray,
                n_groups: int) -> dict[str, np.ndarray]:
    """Selection rate, true and false positive rate of each group (columns), for one sample
    (1-D inputs) or many at once (2-D: one row per resample), by counting; 0/0 is NaN."""
    y_true, y_pred, group = (np.atleast_2d(a) for a in (y_true, y_pred, group))
    offset = group + n_groups * np.arange(len(group))[:, None]

    def count(weights: np.ndarray) -> np.ndarray:
        return np.bincount(offset.ravel(), weights.ravel().astype(float),
                           minlength=n_groups * len(group)).reshape(len(group), n_groups)

    ones = np.ones_like(y_true)
    with np.errstate(invalid="ignore", divide="ignore"):
        return {"sr": count(y_pred) / count(ones),
                "tpr": count(y_pred * y_true) / count(y_true),
                "fpr": count(y_pred * (1 - y_true)) / count(1 - y_true)}


def combine_rates(rates: dict[str, np.ndarray], kinds: Sequence[str],
                  ratio: bool) -> np.ndarray:
    """fairlearn's between-groups difference (max − min) or ratio (min / max) of each rate in
    ``kinds``, the worst of them (the largest difference, the smallest ratio), per row."""
    values = []
    for kind in kinds:
        r = rates[kind]
        low, high = np.nanmin(r, axis=1), np.nanmax(r, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            values.append(np.where(high > 0, low / high, 1.0) if ratio else high - low)
    return np.min(values, axis=0) if ratio else np.max(values, axis=0)


class _FairlearnMetric(_GroupConstraint):
    """A fairlearn metric of the predicted labels across groups, by fairlearn's name and with
    fairlearn's semantics (``fairlearn.metrics.<name>(y_true, y_pred, sensitive_features=...)``,
    ``method="between_groups"``), optionally as a bootstrap confidence bound.

    ``confidence`` (e.g. 0.9) asks that the constraint hold on new data, not only on the
    validation rows: the value is then the ``confidence`` quantile of the metric over
    ``n_bootstrap`` resamples of the validation rows (the upper one for a difference, the lower
    one for a ratio), never on the good side of the point estimate. Rows are resampled within
    each group, so every group keeps its size: a small group's rate is what varies most, and
    what fails first on new data. A bootstrap over the validation rows rather than a bound over
    cross-validation folds: it needs no more than one split, and it measures the sampling error
    of the very rates the constraint compares. With several folds the evaluation's value is the
    bound of their mean, not the mean of their bounds
    (:func:`~admm_automl.constraints.base.combine_splits`). The resamples come from a fixed seed,
    so a pipeline's bound is the same in every evaluation.

    A classifier that predicts one class for every validation row meets every parity vacuously
    (fairlearn's value is then 0, or 1 for a ratio): it accepts nobody, or everybody. Searched by
    a threshold-free score such as AUROC, such pipelines are easy to find (a boosted model of ten
    small trees whose probabilities never reach 0.5 ranks well and predicts no positive), so by
    default (``allow_one_class=False``) their value is the worst one — 1 for a difference, 0 for
    a ratio — and they do not meet the constraint; ``allow_one_class=True`` keeps fairlearn's.
    """

    confidence: float | None
    n_bootstrap: int
    allow_one_class: bool

    @property
    def mitigation_target(self) -> str | None:
        return _TARGETS[self.name.rpartition("_")[0]]

    def validate(self) -> None:
        super().validate()
        check_confidence(self.name, self.confidence)
        n = self.n_bootstrap
        if isinstance(n, bool) or not isinstance(n, int) or n < 10:
            raise InvalidParameterError(
                f"{self.name}: n_bootstrap must be an integer >= 10, got {n!r}")
        if not isinstance(self.allow_one_class, bool):
            raise InvalidParameterError(
                f"{self.name}: allow_one_class must be True or False, got "
                f"{self.allow_one_class!r}")

    def measure(self, pipeline, X, y, rows) -> float:
        return self.measure_point(pipeline, X, y, rows)[0]

    def measure_point(self, pipeline, X, y, rows) -> tuple[float, float | None]:
        import fairlearn.metrics

        y_true, groups, keep = self._rows(y, rows)
        y_pred = (pipeline.predict(X) == self.positive_).astype(int)[keep]
        if not self.allow_one_class and len(np.unique(y_pred)) < 2:  # vacuous (class docstring)
            worst = 0.0 if self.name.endswith("_ratio") else 1.0
            return worst, None if self.confidence is None else worst
        value = float(getattr(fairlearn.metrics, self.name)(y_true, y_pred,
                                                            sensitive_features=groups))
        if self.confidence is None:
            return value, None
        return self.bound(value, y_true, y_pred, groups), value

    def bound(self, value: float, y_true: np.ndarray, y_pred: np.ndarray,
              groups: np.ndarray) -> float:
        """The bootstrap bound of ``value`` (see the class docstring)."""
        family, _, kind = self.name.rpartition("_")
        ratio = kind == "ratio"
        names, index = np.unique(groups, return_inverse=True)
        rng = np.random.default_rng(0)
        members = [np.flatnonzero(index == g) for g in range(len(names))]
        draws = np.concatenate(
            [m[rng.integers(len(m), size=(self.n_bootstrap, len(m)))] for m in members], axis=1)
        stats = combine_rates(group_rates(y_true[draws], y_pred[draws], index[draws],
                                          len(names)), _RATES[family], ratio)
        stats = stats[np.isfinite(stats)]
        if not len(stats):
            return value
        if ratio:
            return min(value, float(np.quantile(stats, 1.0 - self.confidence)))
        return max(value, float(np.quantile(stats, self.confidence)))


class _Difference(_FairlearnMetric):
    """Parameters: ``threshold`` (largest difference allowed, default 0.1), ``group_by`` (a
    column of X or a list of columns; None: ``sensitive_features``), ``bins`` (edges for one
    numeric column), ``confidence`` and ``n_bootstrap`` (a bound that holds on new data), and
    ``allow_one_class`` (whether a classifier predicting one class meets it; see
    :class:`_FairlearnMetric`)."""

    def __init__(self, threshold: float = 0.1, sense: str = "<=",
                 group_by: "str | int | list | None" = None,
                 bins: Sequence[float] | None = None, confidence: float | None = None,
                 n_bootstrap: int = 200, allow_one_class: bool = False) -> None:
        self.threshold = threshold
        self.sense = sense
        self.group_by = group_by
        self.bins = bins
        self.confidence = confidence
        self.n_bootstrap = n_bootstrap
        self.allow_one_class = allow_one_class


class _Ratio(_FairlearnMetric):
    """Parameters: ``threshold`` (smallest ratio allowed, default 0.8: the "four-fifths rule"),
    ``group_by``, ``bins``, ``confidence``, ``n_bootstrap`` and ``allow_one_class`` as for the
    differences."""

    senses = (">=",)

    def __init__(self, threshold: float = 0.8, sense: str = ">=",
                 group_by: "str | int | list | None" = None,
                 bins: Sequence[float] | None = None, confidence: float | None = None,
                 n_bootstrap: int = 200, allow_one_class: bool = False) -> None:
        self.threshold = threshold
        self.sense = sense
        self.group_by = group_by
        self.bins = bins
        self.confidence = confidence
        self.n_bootstrap = n_bootstrap
        self.allow_one_class = allow_one_class

    def validate(self) -> None:
        super().validate()
        if self.threshold > 1:
            raise InvalidParameterError(
                f"constraint {self.key!r}: a ratio of two groups' rates (the smaller over the "
                f"larger) is at most 1, so '>= {self.threshold!r}' cannot be met; give a threshold "
                "in [0, 1], such as 0.8 (the four-fifths rule)")


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
    allow_one_class : bool, default=False
        Whether a classifier that predicts one class for every row meets a spread of the
        selection rate, TPR or FPR (all 0, or all 1: vacuously equal); by default its value is
        1, the worst (see :class:`_FairlearnMetric`). AUROC and accuracy are not affected.
    """

    def __init__(
        self,
        threshold: float = 0.1,
        sense: str = "<=",
        group_by: "str | int | None" = None,
        bins: Sequence[float] | None = None,
        metric: str = "roc_auc",
        allow_one_class: bool = False,
    ) -> None:
        self.threshold = threshold
        self.sense = sense
        self.group_by = group_by
        self.bins = bins
        self.metric = metric
        self.allow_one_class = allow_one_class

    def validate(self) -> None:
        super().validate()
        if self.metric not in _METRICS:
            raise InvalidParameterError(
                f"disparate_impact: metric must be one of {_METRICS!r}, got {self.metric!r}"
            )

    @property
    def mitigation_target(self) -> str | None:
        """Rates a mitigation can equalise; an AUROC or accuracy spread has none."""
        return {"selection_rate": "demographic_parity", "tpr": "true_positive_rate_parity",
                "fpr": "false_positive_rate_parity"}.get(self.metric)

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
            if (self.metric != "accuracy" and not self.allow_one_class
                    and len(np.unique(y_pred)) < 2):
                return 1.0  # rates equal vacuously: nobody, or everybody, selected
        frame = MetricFrame(
            metrics=_metric_function(self.metric), y_true=y_true, y_pred=y_pred,
            sensitive_features=groups,
        )
        return float(frame.difference(method="between_groups", errors="raise"))
