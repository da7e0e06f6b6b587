"""When training a configuration can stop: conservative stopping and early termination.

Conservative stopping (Belakaria et al. 2022, Eq. 8 and Alg. 3) is the shortest training length
whose predicted loss is within ε of the prediction at ``t_max``. Early termination (their Alg. 5)
re-estimates it while ``x`` trains, every ``p`` iterations, and stops ``x`` once its predicted
loss there cannot beat the incumbent and the model is nearly as sure of that as of the length
just observed. The known ADMM penalty ``penalty(x)`` does not depend on ``t``: it cancels in the
stopping length and is added to the predicted loss in the comparison with the incumbent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ...exceptions import InvalidParameterError
from .. import gp as _gp
from . import defaults
from .curve_gp import LearningCurveGP
from .curve_points import select_curve_points


def conservative_stopping(
    mean_curves: np.ndarray, t_grid: np.ndarray, epsilon: float = defaults.EPSILON
) -> np.ndarray:
    """The first length of ``t_grid`` whose mean loss is within ``epsilon`` of the last one.

    ``t_opt = min{t ∈ grid : μ(x, t) − μ(x, t_max) ≤ ε}`` (Belakaria et al., Eq. 8, for a loss).
    The mean of the monotone model is non-increasing only up to the constraint's reach, so the
    whole grid is scanned instead of the paper's binary search: exact, and one vectorised
    prediction either way.

    Parameters
    ----------
    mean_curves : ndarray of shape (m, g) or (g,)
        Predicted mean loss of ``m`` configurations on the grid.
    t_grid : ndarray of shape (g,)
        Increasing training fractions ending at ``t_max`` (usually 1).
    epsilon : float, default=0.01
        Tolerated loss above the prediction at ``t_max``, in loss units.

    Returns
    -------
    ndarray of shape (m,) (or a float for a 1-d ``mean_curves``)
    """
    epsilon = defaults.check_real(epsilon, "epsilon", low=0.0)
    grid = np.asarray(t_grid, dtype=float).reshape(-1)
    curves = np.asarray(mean_curves, dtype=float)
    flat = curves.ndim == 1
    curves = np.atleast_2d(curves)
    if grid.size == 0 or curves.shape[1] != grid.size or np.any(np.diff(grid) <= 0):
        raise InvalidParameterError(
            f"t_grid must be increasing with one entry per column of mean_curves "
            f"({curves.shape[1]}), got {grid!r}"
        )
    within = curves - curves[:, -1:] <= epsilon
    stop = grid[np.argmax(within, axis=1)]
    return float(stop[0]) if flat else stop


def automatic_epsilon(curves: Sequence[tuple[np.ndarray, np.ndarray]]) -> float | None:
    """ε from the data (Belakaria et al. 2022, "Setting ε"): "the smallest degradation in the
    function value at t_max in the evaluated data: ε = min{f(x, t_max) − f(x, t) ∀(x, t) ∈ D}".

    ``curves`` are the evaluated learning curves ``(t, y)``: increasing training fractions (1 is
    ``t_max``) and their losses, every point observed (the engine's checkpoints), not only the
    few that enter the objective GP (often just the last one, which has no shorter length to
    compare with). Read literally the minimum is 0 (the pair ``t = t_max`` itself) or negative
    (a noisy curve), so it is taken over the pairs that make it a degradation: a curve observed
    at ``t_max``, a shorter length ``t`` of it, and a strictly positive ``y(t) − y(t_max)`` (for
    a loss, what stopping at ``t`` would have lost). Returns None when there is no such pair (no
    curve reached ``t_max`` yet, or every one is flat).
    """
    gaps: list[float] = []
    for t, y in curves:
        t = np.asarray(t, dtype=float).reshape(-1)
        y = np.asarray(y, dtype=float).reshape(-1)
        if t.shape != y.shape:
            raise InvalidParameterError(
                f"a curve needs one loss per length, got {t.size} lengths and {y.size} losses")
        last = np.isclose(t, 1.0)
        if not last.any():
            continue
        gap = y[~last] - float(y[last].min())
        gaps.extend(gap[np.isfinite(gap) & (gap > 0)].tolist())
    return min(gaps) if gaps else None


def stopping_lengths(
    model: LearningCurveGP, X: np.ndarray, t_grid: np.ndarray, epsilon: float = defaults.EPSILON
) -> np.ndarray:
    """Conservative stopping length of every configuration of ``X`` under the model, shape (m,)."""
    mean, _ = model.predict_curves(X, t_grid)
    return conservative_stopping(mean, t_grid, epsilon)


@dataclass(frozen=True)
class Termination:
    """The outcome of one early-termination check.

    ``stop`` and why (``"poor"``: cannot beat the incumbent, confidently; ``"converged"``: the
    re-estimated stopping length is reached; ``"continue"``); ``t_next`` the length to train to
    before the next check (the current length when stopping); ``t_stop`` the re-estimated
    conservative stopping length; ``mean`` (penalty included) and ``std`` the prediction there;
    ``std_current`` the uncertainty at the current length used in the τ test.
    """

    stop: bool
    reason: str
    t_next: float
    t_stop: float
    mean: float
    std: float
    std_current: float


def check_termination(
    model: LearningCurveGP,
    x: np.ndarray,
    t_curve: np.ndarray,
    y_curve: np.ndarray,
    *,
    t_grid: np.ndarray,
    incumbent: float | None,
    epsilon: float = defaults.EPSILON,
    tau: float = defaults.TAU,
    check_every: float = defaults.CHECK_FRACTION,
    pts_per_curve: int = defaults.PTS_PER_CURVE,
    penalty: _gp.Penalty | None = None,
    current_std: str = "conditioned",
) -> Termination:
    """Belakaria et al.'s early-termination test (their Sec. 3.4 and Alg. 5) after a curve.

    The model is conditioned (hyperparameters fixed) on the points of the new curve chosen by
    :func:`.select_curve_points`; then ``t_n`` is the conservative stopping length of ``x`` and

    * ``stop, "poor"`` if ``μ(x, t_n) + penalty(x) ≥ incumbent`` and
      ``σ(x, t_n) ≤ τ · σ(x, t)``, ``t`` the last observed length;
    * else ``stop, "converged"`` if ``t ≥ t_n`` (an exit Alg. 5 lacks: without it the next
      check could stall at ``t``);
    * else ``continue`` to ``min(t_n, t + p)``.

    ``σ`` is the predictive standard deviation including observation noise, at ``t_n`` from the
    conditioned model; at ``t`` from the conditioned model (``current_std="conditioned"``, the
    paper's "uncertainty of the epoch just observed") or from the model before the curve was
    added (``"unconditioned"``). The paper does not say which.

    Parameters
    ----------
    model : LearningCurveGP
        GP_f on the data before this evaluation's curve.
    x : ndarray of shape (d,)
    t_curve, y_curve : ndarray of shape (g,)
        The lengths and (best-so-far) losses observed in this evaluation, increasing in ``t``.
    t_grid : ndarray
        Lengths on which stopping is searched (:func:`.defaults.length_grid`).
    incumbent : float or None
        Best observed value (loss plus penalty) over the other evaluations; ``None`` (none yet)
        disables the ``"poor"`` exit.
    epsilon, tau, check_every, pts_per_curve
        ε, τ ≥ 1, p as a fraction of ``t_max``, and points per curve.
    penalty : callable or None
        ``penalty(X) -> (m,)``, the known ADMM term added to the predicted loss.
    current_std : {"conditioned", "unconditioned"}
    """
    tau = defaults.check_real(tau, "tau", low=1.0)
    check_every = defaults.check_real(check_every, "check_every", low=0.0, high=1.0, low_open=True)
    if current_std not in ("conditioned", "unconditioned"):
        raise InvalidParameterError(
            f"current_std must be 'conditioned' or 'unconditioned', got {current_std!r}"
        )
    x = np.asarray(x, dtype=float).reshape(1, -1)
    t_curve = defaults.as_lengths(t_curve, np.size(t_curve), "t_curve")
    y_curve = np.asarray(y_curve, dtype=float).reshape(-1)
    if y_curve.shape != t_curve.shape:
        raise InvalidParameterError(
            f"y_curve must have one loss per length ({t_curve.size}), got shape {y_curve.shape}"
        )
    keep = select_curve_points(model, x[0], t_curve, pts_per_curve)
    conditioned = model.with_points(np.repeat(x, keep.size, axis=0), t_curve[keep], y_curve[keep])
    t_now = float(t_curve[-1])
    t_n = float(stopping_lengths(conditioned, x, t_grid, epsilon)[0])
    mean, std = conditioned.predict(x, t_n, include_noise=True)
    shift = 0.0 if penalty is None else float(np.asarray(penalty(x)).reshape(-1)[0])
    source = conditioned if current_std == "conditioned" else model
    std_now = float(source.predict(x, t_now, include_noise=True)[1][0])
    value, spread = float(mean[0]) + shift, float(std[0])
    if incumbent is not None and value >= incumbent and spread <= tau * std_now:
        stop, reason, t_next = True, "poor", t_now
    elif t_now >= t_n - 1e-12:
        stop, reason, t_next = True, "converged", t_now
    else:
        stop, reason, t_next = False, "continue", min(t_n, t_now + check_every)
    return Termination(stop, reason, t_next, t_n, value, spread, std_now)


def first_length(t_max: int, trained: int, p: int, goal: float, *, checked: bool) -> int:
    """Iterations to train to in the first step of an evaluation (Belakaria et al., Alg. 5):
    ``p`` more than ``trained`` when the curve will be ``checked`` after each step; without a
    model to check against, straight to the fraction ``goal`` of ``t_max`` (at least one more)."""
    if checked:
        return min(t_max, trained + p)
    return max(trained + 1, min(t_max, int(round(goal * t_max))))


def next_length(t_max: int, length: int, t_next: float) -> int:
    """Iterations to train to after a check at ``length`` that continues to the fraction
    ``t_next`` (:attr:`Termination.t_next`): at least one iteration more, at most ``t_max``."""
    return min(t_max, max(int(length) + 1, int(round(t_next * t_max))))
