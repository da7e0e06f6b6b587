"""Acquisition functions: the logarithm of expected improvement of ``F(x) = g(x) + p(x)``, a GP
``g`` for the black box plus a known term ``p`` (the ADMM penalty) added to the GP mean
analytically.

The logarithm is computed in a form that stays finite far from the incumbent (Ament et al.,
"Unexpected Improvements to Expected Improvement for Bayesian Optimization", NeurIPS 2023):
:func:`log_h` and :func:`log_expected_improvement` on arrays, :class:`GPLogEI` (analytic
gradients) for :class:`~.model.MaternGP` and :class:`LogEI` (central differences,
:func:`value_and_central_difference`) for scikit-learn's GP (:mod:`.sklearn_gp`).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from scipy import special

from .model import MaternGP
from .sklearn_gp import predict

#: ``penalty(X) -> values``: a known term evaluated on the rows of X (shape (n, d) -> (n,))
Penalty = Callable[[np.ndarray], np.ndarray]

_LOG_2PI = math.log(2.0 * math.pi)
_LOG_2PI_HALF = 0.5 * _LOG_2PI
_LOG_PI_2_HALF = 0.5 * math.log(math.pi / 2.0)
#: below it ``log h`` is the asymptote: there the bracket ``1 − |z|Φ(z)/φ(z) ≈ 1/z²`` has lost
#: ``ε·z²`` of its relative precision (2e-10 at |z| = 1e3, all of it at 1/√ε) while the
#: asymptote's next neglected term is ``15/z⁴`` (1.5e-11)
_ASYMPTOTE_BELOW = -1e3


def _log1mexp(a: np.ndarray) -> np.ndarray:
    """``log(1 − exp(a))`` for ``a < 0`` without cancellation (Mächler, 2012)."""
    a = np.asarray(a, dtype=float)
    out = np.empty_like(a)
    near = a > -math.log(2.0)
    out[near] = np.log(-np.expm1(a[near]))
    out[~near] = np.log1p(-np.exp(a[~near]))
    return out


def log_h(z: np.ndarray) -> np.ndarray:
    """``log(φ(z) + z·Φ(z))``, finite for every finite ``z``.

    ``h(z) = φ(z) + zΦ(z)`` is EI divided by σ. For ``z > −1`` it is computed directly (it is at
    least h(−1) ≈ 0.083 there). Below, ``zΦ(z)`` cancels ``φ(z)``; with the scaled complementary
    error function ``Φ(z)/φ(z) = erfcx(−z/√2)·√(π/2)``,
    ``log h = −z²/2 − log√(2π) + log1mexp(log(|z|·erfcx(−z/√2)) + log√(π/2))``.
    The bracket is ``≈ 1/z²``, so it keeps ``ε·z²`` of relative rounding; below ``z = −1e3`` the
    asymptote ``h(z) ≈ φ(z)/z²·(1 − 3/z²)`` is the more accurate (to ``15/z⁴``) and gives
    ``log h ≈ −z²/2 − log√(2π) − 2·log|z| + log1p(−3/z²)``. (A cut at ``−1/√ε``, as first written
    here, let the bracket round to ≥ 0 near it: ``log`` of 0 or of a negative number.)
    """
    z = np.asarray(z, dtype=float)
    out = np.empty_like(z)
    upper = z > -1.0
    zu = z[upper]
    out[upper] = np.log(np.exp(-0.5 * zu * zu) / math.sqrt(2 * math.pi) + zu * special.ndtr(zu))
    mid = ~upper & (z > _ASYMPTOTE_BELOW)
    zm = z[mid]
    out[mid] = (
        -0.5 * zm * zm
        - _LOG_2PI_HALF
        + _log1mexp(np.log(special.erfcx(-zm / math.sqrt(2.0)) * np.abs(zm)) + _LOG_PI_2_HALF)
    )
    low = ~upper & ~mid
    zl = z[low]
    out[low] = (-0.5 * zl * zl - _LOG_2PI_HALF - 2.0 * np.log(np.abs(zl))
                + np.log1p(-3.0 / (zl * zl)))
    return out


def log_expected_improvement(
    mean: np.ndarray, std: np.ndarray, threshold: float, min_std: float = 1e-12
) -> np.ndarray:
    """``log E[max(threshold − F, 0)]`` for ``F ~ N(mean, std²)`` (minimisation).

    ``= log σ + log h((threshold − mean)/σ)`` with ``σ = max(std, min_std)``; finite everywhere,
    unlike ``log`` of the textbook ``σ·(zΦ(z) + φ(z))``, which underflows to ``log 0 = −inf``
    once ``z < −38`` and so gives the optimiser a flat, gradient-free landscape.
    """
    sigma = np.maximum(np.asarray(std, dtype=float), min_std)
    z = (threshold - np.asarray(mean, dtype=float)) / sigma
    return np.log(sigma) + log_h(z)


def expected_improvement(mean: np.ndarray, std: np.ndarray, threshold: float) -> np.ndarray:
    """The textbook EI ``σ·(zΦ(z) + φ(z))`` (reference only: it underflows far from the optimum)."""
    sigma = np.maximum(np.asarray(std, dtype=float), 1e-12)
    z = (threshold - np.asarray(mean, dtype=float)) / sigma
    return sigma * (z * special.ndtr(z) + np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi))


class LogEI:
    """log-EI of ``F(x) = g(x) + p(x)``: a GP ``g`` for the black box plus a known term ``p``.

    With the GP posterior ``g(x) ~ N(μ(x), σ(x)²)`` and ``p`` deterministic,
    ``F(x) ~ N(μ(x) + p(x), σ(x)²)``, so

        log EI(x) = log σ(x) + log h((τ − μ(x) − p(x)) / σ(x)),   τ = f* − ξ·s,

    where ``f*`` is the best (smallest) observed value of F itself (loss *plus* penalty, scored
    with the current penalty), ``s`` the spread of the targets and ``ξ ≥ 0`` the exploration margin.
    The penalty enters the mean only: it is known exactly, so it adds no variance.
    """

    def __init__(self, gp, threshold: float, penalty: Penalty | None = None, min_std: float = 1e-12):
        self.gp = gp
        self.threshold = float(threshold)
        self.penalty = penalty
        self.min_std = min_std

    def __call__(self, X: np.ndarray) -> np.ndarray:
        X = np.atleast_2d(np.asarray(X, dtype=float))
        mean, std = predict(self.gp, X)
        if self.penalty is not None:
            mean = mean + self.penalty(X)
        return log_expected_improvement(mean, std, self.threshold, self.min_std)

    def value_and_grad(self, x: np.ndarray, step: float = 1e-6) -> tuple[float, np.ndarray]:
        """Value and central-difference gradient at ``x`` (:func:`value_and_central_difference`)"""
        return value_and_central_difference(self, x, step)


def penalty_rows(penalty: Callable[[np.ndarray], float] | None, X: np.ndarray) -> np.ndarray:
    """A known term on the rows of ``X``: its own ``rows(X)`` when it has one (a
    :class:`~admm_automl.problem.QuadraticPenalty`), else one call per row; zeros for ``None``."""
    X = np.atleast_2d(X)
    if penalty is None:
        return np.zeros(len(X))
    rows = getattr(penalty, "rows", None)
    if rows is not None:
        return np.asarray(rows(X), dtype=float)
    return np.array([penalty(x) for x in X], dtype=float)


def penalty_gradient(penalty: Callable[[np.ndarray], float] | None, X: np.ndarray,
                     step: float = 1e-6) -> np.ndarray:
    """Gradient of a known term at the rows of ``X``: its own ``gradient(X)`` when it has one,
    else central differences (one-sided at the faces of the unit box)."""
    X = np.atleast_2d(X)
    if penalty is None:
        return np.zeros_like(X)
    gradient = getattr(penalty, "gradient", None)
    if gradient is not None:
        return np.asarray(gradient(X), dtype=float)
    return np.array([value_and_central_difference(lambda R: penalty_rows(penalty, R), x, step)[1]
                     for x in X])


class GPLogEI:
    """log-EI of ``F(x) = g(x) + p(x)`` for a :class:`MaternGP` ``g``, with analytic gradients.

    The same acquisition as :class:`LogEI` (``log σ + log h((τ − μ − p)/σ)``); the gradient uses
    ``d log h / dz = Φ(z)/h(z)``, computed as ``exp(log Φ(z) − log h(z))`` so that it stays finite
    far from the incumbent.
    """

    def __init__(self, gp: MaternGP, threshold: float, penalty: Penalty | None = None,
                 min_std: float = 1e-12) -> None:
        self.gp = gp
        self.threshold = float(threshold)
        self.penalty = penalty
        self.min_std = min_std

    def __call__(self, X: np.ndarray) -> np.ndarray:
        mean, std = self.gp.predict(X)
        mean = mean + penalty_rows(self.penalty, X)
        return log_expected_improvement(mean, std, self.threshold, self.min_std)

    def values_and_grads(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Values (m,) and gradients (m, d) at the rows of ``X``."""
        X = np.atleast_2d(np.asarray(X, dtype=float))
        mean, std, dmean, dstd = self.gp.predict(X, grad=True)
        if self.penalty is not None:
            mean = mean + penalty_rows(self.penalty, X)
            dmean = dmean + penalty_gradient(self.penalty, X)
        sigma = np.maximum(std, self.min_std)
        dstd = np.where((std > self.min_std)[:, None], dstd, 0.0)
        z = (self.threshold - mean) / sigma
        lh = log_h(z)
        ratio = np.exp(special.log_ndtr(z) - lh)  # Φ(z)/h(z) = d log h / dz
        dz = (-dmean - z[:, None] * dstd) / sigma[:, None]
        grads = dstd / sigma[:, None] + ratio[:, None] * dz
        return np.log(sigma) + lh, grads

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        values, grads = self.values_and_grads(np.asarray(x, dtype=float)[None, :])
        return float(values[0]), grads[0]


def value_and_central_difference(
    function: Callable[[np.ndarray], np.ndarray], x: np.ndarray, step: float = 1e-6
) -> tuple[float, np.ndarray]:
    """Value and central-difference gradient at ``x`` of a function vectorised over rows.

    One batched call on 2d+1 rows; one-sided at the faces of the unit box (no row leaves it).
    Where both sides are the same infinity (a log acquisition of −inf on a flat region) the
    gradient is 0, not NaN.
    """
    x = np.asarray(x, dtype=float)
    d = x.size
    eye = np.eye(d) * step
    plus = np.clip(x + eye, 0.0, 1.0)
    minus = np.clip(x - eye, 0.0, 1.0)
    values = function(np.vstack([x[None, :], plus, minus]))
    width = np.diag(plus - minus)
    with np.errstate(invalid="ignore"):
        grad = (values[1 : d + 1] - values[d + 1 :]) / np.where(width > 0, width, 1.0)
    return float(values[0]), np.where(np.isnan(grad), 0.0, grad)
