"""Both models fitted together on a run's observations (the paper's Algorithm 1, lines 6, 8 and
12): failed values filled, EIPS of candidate paths and the pruned graph."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .defaults import (DEFAULT_COST_TRANSFORM, DEFAULT_FIT_INTERCEPT, DEFAULT_RIDGE_ALPHA,
                       DEFAULT_XI_SELECT, MIN_COST, MIN_STD)
from .paths import check_n_choices, encode_paths
from .acquisition import log_eips
from .ridge import fit_cost_model, fit_ridge, fit_ridge_columns, RidgePathModel, transform_cost
from .pruning import build_subgraph


def fill_failed(values: np.ndarray) -> np.ndarray:
    """``values`` with every non-finite entry replaced by the largest finite one (0 if none).

    The paper's code records a failed run as the worst error (100 %) and keeps it in both ridge
    fits. In this package a failed evaluation already carries the run's failure loss (the metric's
    worst value), so only a NaN or infinite value (a caller that chose NaN as the failure loss)
    needs a stand-in, and the worst value seen is the closest to the paper's rule.
    """
    y = np.array(values, dtype=float)
    finite = np.isfinite(y)
    y[~finite] = y[finite].max() if finite.any() else 0.0
    return y


@dataclass(frozen=True)
class PathModels:
    """The performance and cost models fitted on the same observations, and m⁺.

    Attributes
    ----------
    perf, cost : RidgePathModel
        Ridge models of the value and of the transformed cost.
    best : float
        m⁺, the lowest (filled) value observed.
    n_choices : tuple of int
        Module sizes of the path encoding.
    """

    perf: RidgePathModel
    cost: RidgePathModel
    best: float
    n_choices: tuple[int, ...]

    def log_eips(self, paths: np.ndarray, xi: float, min_std: float = MIN_STD,
                 min_cost: float = MIN_COST) -> np.ndarray:
        """:func:`log_eips` of each choice vector in ``paths`` (shape (L, K)) against m⁺."""
        X = encode_paths(np.atleast_2d(np.asarray(paths)), self.n_choices)
        return self.log_eips_encoded(X, xi, min_std, min_cost)

    def log_eips_encoded(self, X: np.ndarray, xi: float, min_std: float = MIN_STD,
                         min_cost: float = MIN_COST) -> np.ndarray:
        """:meth:`log_eips` of path vectors already encoded (:func:`encode_paths`, shape
        (L, N)): a caller that scores the same candidate paths at every ask encodes them once."""
        mean, std = self.perf.predict(X, min_std)
        return log_eips(mean, std, self.cost.mean(X), self.best, xi, min_cost)

    def log_eips_columns(self, columns: np.ndarray, xi: float, min_std: float = MIN_STD,
                         min_cost: float = MIN_COST) -> np.ndarray:
        """:meth:`log_eips` of paths given by the columns of their ones
        (:func:`~.paths.path_columns`): gathers of the models' coefficients instead of products
        with one-hot vectors. Equal to :meth:`log_eips` up to rounding, at a fraction of its
        memory traffic (what an ask with many trials pending pays for)."""
        mean, std = self.perf.predict_columns(columns, min_std)
        return log_eips(mean, std, self.cost.mean_columns(columns), self.best, xi, min_cost)

    def subgraph(self, paths: np.ndarray, top_r: int, rng: np.random.Generator,
                 xi: float = DEFAULT_XI_SELECT) -> "Subgraph":
        """:func:`build_subgraph` with these models and m⁺."""
        return build_subgraph(self.perf, self.cost, paths, self.n_choices, self.best, top_r,
                              rng, xi=xi)


def fit_path_models(
    paths: np.ndarray,
    values: np.ndarray,
    seconds: np.ndarray,
    n_choices: Sequence[int],
    *,
    alpha: float = DEFAULT_RIDGE_ALPHA,
    transform: str = DEFAULT_COST_TRANSFORM,
    fit_intercept: bool = DEFAULT_FIT_INTERCEPT,
    censored: np.ndarray | None = None,
) -> PathModels:
    """Fit both ridge models on the observed paths (choice vectors, shape (n, K), repeats
    allowed): the performance model on :func:`fill_failed` ``(values)``, the cost model on
    ``transform_cost(seconds, transform)``.

    ``censored`` (bool, shape (n,)) marks rows whose value is unknown rather than bad (a run
    stopped by its time limit): they stay in the cost model, which learns from their time that
    the path is slow, and are left out of the performance model and of m⁺. If every row is
    censored, none is (the performance model needs one row).
    """
    sizes = check_n_choices(n_choices)
    X = encode_paths(np.atleast_2d(np.asarray(paths)), sizes)
    y = fill_failed(values)
    keep = np.ones(len(y), dtype=bool) if censored is None else ~np.asarray(censored, bool)
    if not keep.any():
        keep[:] = True
    perf = fit_ridge(X[keep], y[keep], alpha, fit_intercept=fit_intercept)
    cost = fit_cost_model(X, seconds, alpha, transform=transform, fit_intercept=fit_intercept)
    return PathModels(perf, cost, float(y[keep].min()), sizes)


def fit_path_models_columns(
    columns: np.ndarray,
    values: np.ndarray,
    seconds: np.ndarray,
    n_choices: Sequence[int],
    gram: np.ndarray,
    *,
    alpha: float = DEFAULT_RIDGE_ALPHA,
    transform: str = DEFAULT_COST_TRANSFORM,
    fit_intercept: bool = DEFAULT_FIT_INTERCEPT,
    censored: np.ndarray | None = None,
    censored_gram: np.ndarray | None = None,
) -> PathModels:
    """:func:`fit_path_models` from the columns of the observed paths' ones
    (:func:`~.paths.path_columns`) and their Gram matrix ``PᵀP`` (and that of the ``censored``
    rows, ``censored_gram``, when some are): :func:`~.ridge.fit_ridge_columns` for both
    models. The same models up to rounding, at O(nK) instead of O(nN²) for n observations
    (:class:`~.observed.ObservedPaths` keeps both Gram matrices as rows arrive)."""
    sizes = check_n_choices(n_choices)
    c = np.atleast_2d(np.asarray(columns))
    y = fill_failed(values)
    keep = np.ones(len(y), dtype=bool) if censored is None else ~np.asarray(censored, bool)
    kept_gram = np.asarray(gram, dtype=float)
    if not keep.any():
        keep[:] = True
    elif not keep.all():
        kept_gram = kept_gram - np.asarray(censored_gram, dtype=float)
    perf = fit_ridge_columns(c[keep], y[keep], kept_gram, alpha, fit_intercept=fit_intercept)
    cost = fit_ridge_columns(c, transform_cost(seconds, transform), gram, alpha,
                             fit_intercept=fit_intercept)
    return PathModels(perf, cost, float(y[keep].min()), sizes)
