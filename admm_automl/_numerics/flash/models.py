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
from .ridge import fit_cost_model, fit_ridge, RidgePathModel
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
        mean, std = self.perf.predict(X, min_std)
        return log_eips(mean, std, self.cost.mean(X), self.best, xi, min_cost)

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
