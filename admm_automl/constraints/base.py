"""Black-box constraints: a measured value of the fitted pipeline and a bound on it.

A constraint is ``value <= threshold`` or ``value >= threshold`` (``sense``). It is *bound* to the data
before the search (``bind``: check the inputs, prepare groups or batches; errors come here, before
any pipeline is trained) and *measured* on the validation rows of every evaluation (``measure``).
The ADMM loop only sees :class:`~admm_automl.methods.admm.Bound` records and raw values.
"""

from __future__ import annotations

import math
from typing import Any, Callable, ClassVar, Sequence

import numpy as np

from .._params import ParamsMixin
from ..exceptions import InvalidParameterError
from ..records import POINT


class BaseConstraint(ParamsMixin):
    """Base of the constraints: ``threshold``, ``sense`` and the ``measure`` of a fitted pipeline."""

    #: registry name (set by the ``register`` decorator)
    name: ClassVar[str] = ""
    #: senses a constraint accepts (most are upper bounds)
    senses: ClassVar[tuple[str, ...]] = ("<=",)
    #: whether a negative threshold is meaningless (times, sizes, differences)
    nonnegative: ClassVar[bool] = True
    #: whether the value is a property of the fitted object itself (its size, its prediction
    #: latency) rather than of its predictions on held-out rows. Such a value changes when the
    #: pipeline is refitted on all rows — a quantile transformer keeps one quantile per training
    #: row (up to ``n_quantiles``), a forest grows deeper with more rows — so the refitted model
    #: is measured again before it is returned (:mod:`admm_automl.final.refit`)
    of_the_model: ClassVar[bool] = False

    threshold: float
    sense: str

    @property
    def key(self) -> str:
        """The column name of this constraint's values (``history_["constraint:<key>"]``)."""
        return self.name

    def validate(self) -> None:
        """Check the parameters; called before the search."""
        t = self.threshold
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
            raise InvalidParameterError(
                f"constraint {self.key!r}: threshold must be a finite number, got {t!r}"
            )
        if self.sense not in self.senses:
            raise InvalidParameterError(
                f"constraint {self.key!r}: sense must be one of {self.senses!r}, got {self.sense!r}"
            )
        if self.nonnegative and t < 0:
            raise InvalidParameterError(
                f"constraint {self.key!r}: a negative threshold ({t!r}) cannot be met by a "
                "non-negative quantity"
            )

    def bind(self, X: Any, y: np.ndarray, *, groups: np.ndarray | None, splits: list,
             task: str) -> None:
        """Prepare for a search on (X, y); raise a clear error if the data does not fit."""
        self.validate()

    def measure(self, pipeline: Any, X: Any, y: np.ndarray, rows: np.ndarray) -> float:
        """The constraint's value for a fitted pipeline on validation rows ``rows`` (X, y)."""
        raise NotImplementedError

    def measure_point(self, pipeline: Any, X: Any, y: np.ndarray,
                      rows: np.ndarray) -> tuple[float, float | None]:
        """``(value, point)``: :meth:`measure`'s value and, for a constraint whose value is a
        confidence bound, the point value on these rows (None for the others)."""
        return float(self.measure(pipeline, X, y, rows)), None

    def combine_bounds(self, bounds: np.ndarray, points: np.ndarray, distinct: float) -> float:
        """The bound of one evaluation from the bounds and point values of its splits
        (``distinct``: how many splits have validation rows of their own — k folds: k; a
        holdout: 1; repeats of the folds validate the same rows again and add nothing).

        For a bound on a metric of the validation rows (a fairness metric's bootstrap bound) it
        is the bound *of the splits' mean*: the mean of the point values plus the splits' margins
        (bound − point) combined as the independent errors of a mean are (normal approximation),
        their root mean square over √k, k the distinct splits. Why not the mean of the splits'
        bounds: that is the bound of one fold's rows, √k too wide for a value read on all of
        them: with 5 folds it asked a pipeline for the margin of a fifth of its validation rows
        (on 4 500 rows of the adult census data, +0.030 over a demographic parity difference of
        0.20, where the bound of the folds' mean is +0.014)."""
        margins = bounds - points
        k = min(max(distinct, 1.0), len(margins))
        spread = float(np.sqrt(np.mean(margins ** 2)) / np.sqrt(k))
        return float(np.mean(points)) + (spread if margins.sum() >= 0 else -spread)

    def feasible(self, value: float | None) -> bool:
        if value is None or not math.isfinite(value):
            return False
        return value <= self.threshold if self.sense == "<=" else value >= self.threshold

    def __str__(self) -> str:
        return f"{self.key} {self.sense} {self.threshold:g}"


def measure_all(measures: dict[str, BaseConstraint], pipeline: Any, X: Any, y: np.ndarray,
                rows: np.ndarray, into: dict[str, list[float]]) -> None:
    """Append every constraint's value on ``rows`` to ``into[name]``, and a bounded one's point
    value to ``into[name + POINT]`` (what the run reports beside the bound)."""
    for name, constraint in measures.items():
        value, point = constraint.measure_point(pipeline, X, y, rows)
        into.setdefault(name, []).append(float(value))
        if point is not None:
            into.setdefault(name + POINT, []).append(float(point))


def combine_splits(measured: dict[str, list[float]], splits: Sequence[Any],
                   measures: dict[str, BaseConstraint]) -> dict[str, float]:
    """Each constraint's value for one evaluation from its values on the validation ``splits``
    (:func:`measure_all`): the mean over the splits; for a value that is a confidence bound (its
    point value recorded beside it, ``name + POINT``), the constraint's own
    :meth:`~BaseConstraint.combine_bounds` of the splits' bounds and point values."""
    out = {name: float(np.mean(values)) for name, values in measured.items() if values}
    bounded = {name: c for name, c in measures.items() if name in out and name + POINT in out}
    if not bounded:
        return out
    rows = [np.asarray(split.valid) for split in splits]
    distinct = len(np.unique(np.concatenate(rows))) / np.mean([len(r) for r in rows])
    for name, constraint in bounded.items():
        out[name] = constraint.combine_bounds(np.asarray(measured[name], float),
                                              np.asarray(measured[name + POINT], float),
                                              distinct)
    return out


def check_confidence(key: str, confidence: Any) -> None:
    """A clear error unless ``confidence`` is None or a number in [0.5, 1)."""
    c = confidence
    if c is not None and (isinstance(c, bool) or not isinstance(c, (int, float))
                          or not 0.5 <= c < 1.0):
        raise InvalidParameterError(
            f"{key}: confidence must be None or a number in [0.5, 1), got {c!r}")


class CallableConstraint(BaseConstraint):
    """A user function ``fn(pipeline, X_valid, y_valid, groups) -> float`` with a bound.

    ``groups`` are the validation rows' sensitive groups (``None`` when the run has none). The
    function travels to worker processes by value (cloudpickle), so a function of your script or a
    lambda works; in YAML give its import path,
    ``{name: callable, function: my_module.my_fn, threshold: 0.1}``.
    """

    senses = ("<=", ">=")
    nonnegative = False

    def __init__(
        self,
        function: "Callable[..., float] | str | None" = None,
        threshold: float = 0.0,
        sense: str = "<=",
        label: str | None = None,
    ) -> None:
        self.function = function
        self.threshold = threshold
        self.sense = sense
        self.label = label

    @property
    def key(self) -> str:
        if self.label:
            return self.label
        fn = self.function
        return fn.rsplit(".", 1)[-1] if isinstance(fn, str) else getattr(fn, "__name__", "callable")

    def validate(self) -> None:
        super().validate()
        if isinstance(self.function, str):
            from ..space.space import import_class

            self.function_ = import_class(self.function, "function")
        elif callable(self.function):
            self.function_ = self.function
        else:
            raise InvalidParameterError(
                f"constraint 'callable': function must be a callable or an import path, got "
                f"{self.function!r}"
            )

    def bind(self, X, y, *, groups, splits, task) -> None:
        self.validate()
        self.groups_ = groups

    def measure(self, pipeline, X, y, rows) -> float:
        groups = None if self.groups_ is None else self.groups_[rows]
        return float(self.function_(pipeline, X, y, groups))
