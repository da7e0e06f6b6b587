"""Which points of an observed learning curve enter the objective GP.

Belakaria et al. (2022, Sec. 3.4) keep at most three points of each curve, chosen where the model
is most uncertain, the rule of BOIL (Nguyen et al., "Bayesian Optimization for Iterative
Learning", NeurIPS 2020): add points one at a time, each time the length with the largest
posterior variance given the data and the points already chosen. The variance does not depend on
the observed values, so nothing is fantasised.

Our choices where the paper is silent: the **last** observed point always enters first (it is
the value of the configuration so far, and it tells later steps how far ``x`` was trained); the
variance is that of the unconstrained model (it does not depend on ``y``, the monotone one does);
and, as BOIL does, we stop adding once the largest remaining variance is below the observation
noise (the point would carry only noise and makes the kernel matrix ill-conditioned).
"""

from __future__ import annotations

import numpy as np

from ...exceptions import InvalidParameterError
from . import defaults
from .curve_gp import LearningCurveGP


def running_best(losses: np.ndarray) -> np.ndarray:
    """The best-so-far curve ``min_{t' ≤ t} loss(t')`` (keep the best checkpoint; the monotone
    model assumes a non-increasing curve)."""
    return np.minimum.accumulate(np.asarray(losses, dtype=float))


def select_curve_points(
    model: LearningCurveGP | None,
    x: np.ndarray,
    t: np.ndarray,
    max_points: int = defaults.PTS_PER_CURVE,
) -> np.ndarray:
    """Indices (ascending) of the points of one curve of ``x`` at lengths ``t`` to add to the GP.

    Parameters
    ----------
    model : LearningCurveGP or None
        The objective GP before the curve is added. ``None`` (no model yet, the initial design):
        the last point and points evenly spaced in index.
    x : ndarray of shape (d,)
    t : ndarray of shape (g,)
        Observed training fractions of the curve, increasing.
    max_points : int, default=3
        At most this many points (1 gives Belakaria et al.'s BAPI-4-L: the last point only).
    """
    max_points = defaults.check_int(max_points, "max_points", low=1)
    t = np.asarray(t, dtype=float).reshape(-1)
    if t.size == 0 or np.any(np.diff(t) <= 0):
        raise InvalidParameterError(f"t must be a non-empty increasing curve, got {t!r}")
    last = t.size - 1
    if model is None or max_points == 1 or t.size == 1:
        chosen = np.round(np.linspace(last, 0, min(max_points, t.size))).astype(int)
        return np.unique(chosen)
    cov = model.latent_covariance(np.repeat(np.atleast_2d(x), t.size, axis=0), t)
    noise = model.noise_std_**2
    chosen = [last]
    for _ in range(min(max_points, t.size) - 1):
        j = chosen[-1]  # condition on the point just chosen (observed with noise)
        column = cov[:, j].copy()
        cov = cov - np.outer(column, column) / (cov[j, j] + noise)
        variance = np.diag(cov).copy()
        variance[chosen] = -np.inf
        best = int(np.argmax(variance))
        if variance[best] <= noise:
            break
        chosen.append(best)
    return np.sort(np.array(chosen))


def curve_dataset(
    model: LearningCurveGP | None,
    curves: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
    max_points: int = defaults.PTS_PER_CURVE,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """GP_f's data: of every curve ``(x, t, y)`` (its configuration, increasing training
    fractions and losses), the points :func:`select_curve_points` chooses under ``model``.

    Returns the rows ``X`` (n, d), their lengths ``T`` (n,) and losses ``Y`` (n,).
    """
    X, T, Y = [], [], []
    for x, t, y in curves:
        keep = select_curve_points(model, x, t, max_points)
        X.extend([x] * len(keep))
        T.extend(t[keep])
        Y.extend(y[keep])
    return np.array(X), np.array(T), np.array(Y)
