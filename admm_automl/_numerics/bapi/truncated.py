"""Mean and covariance of a multivariate normal truncated to ``{c ≤ upper}``, by expectation
propagation, vectorised over a batch of independent small problems.

The monotone objective GP needs, for every query configuration, the first two moments of the
``k``-dimensional truncated normal of the derivative values at its virtual points (Agrell,
"Gaussian processes with linear operator inequality constraints", JMLR 2019; Belakaria et al.
2023, Appendix A). Belakaria et al. and Agrell sample it (Botev's minimax tilting); scipy has no
vectorised routine for these moments, and the planning step needs them for hundreds of candidate
configurations at once, smoothly in the configuration (the acquisition is polished by L-BFGS-B).

We use expectation propagation (Minka, UAI 2001), as Cunningham, Hennig and Lacoste-Julien
("Gaussian probabilities and expectation propagation", 2011) do for Gaussians on boxes: one
Gaussian site per constraint, each updated from the exact moments of a univariate truncated
normal (computed with the scaled complementary error function, so they stay finite deep in the
tail), rank-one updates of the joint, sweeps until the mean moves less than ``tol``. It is
deterministic and exact when ``k = 1`` or the coordinates are independent. Against 2·10⁶
rejection draws on bivariate cases (correlations −0.8…0.99, truncation mass 1e-3…0.6) the mean
was within about 0.01 and the covariance within about 0.03 of the truncated standard
deviations' scale; tests check it against brute-force Monte Carlo.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_MIN_VARIANCE_FACTOR = 1e-12


def truncated_univariate(
    mean: np.ndarray, var: np.ndarray, upper: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of ``N(mean, var)`` conditioned on ``≤ upper`` (elementwise).

    With ``β = (upper − mean)/σ`` and the inverse Mills ratio ``λ = φ(β)/Φ(β)``:
    ``E = mean − σλ`` and ``Var = σ²(1 − βλ − λ²)``. ``λ = √(2/π)/erfcx(−β/√2)`` has no
    cancellation for very negative β; the variance factor is floored at 1e-12 (it tends to
    ``1/β²`` and loses digits only for ``β < −10⁴``).
    """
    sigma = np.sqrt(var)
    beta = (upper - mean) / sigma
    lam = _SQRT_2_OVER_PI / special.erfcx(-beta / math.sqrt(2.0))
    factor = np.minimum(np.maximum(1.0 - beta * lam - lam * lam, _MIN_VARIANCE_FACTOR), 1.0)
    return mean - sigma * lam, var * factor


def truncated_normal_moments(
    mean: np.ndarray,
    cov: np.ndarray,
    upper: float | np.ndarray = 0.0,
    *,
    max_sweeps: int = 50,
    tol: float = 1e-7,
) -> tuple[np.ndarray, np.ndarray]:
    """Moments of ``N(mean_b, cov_b)`` truncated to ``{c : c ≤ upper}``, for every batch entry.

    Parameters
    ----------
    mean : ndarray of shape (m, k)
    cov : ndarray of shape (m, k, k)
        Symmetric positive definite.
    upper : float or ndarray broadcastable to (m, k)
        The upper bounds (no lower bounds; negate the problem for lower bounds).
    max_sweeps, tol
        Expectation-propagation sweeps over the ``k`` sites, stopped early once no mean moves by
        more than ``tol`` (in the units of ``mean``; the objective GP calls it on
        standardised values, where 1e-7 is far below any difference that matters).

    Returns
    -------
    mean : ndarray of shape (m, k)
    cov : ndarray of shape (m, k, k)
    """
    mu = np.array(mean, dtype=float)
    sigma = np.array(cov, dtype=float)
    m, k = mu.shape
    bound = np.broadcast_to(np.asarray(upper, dtype=float), (m, k))
    site_precision = np.zeros((m, k))
    site_shift = np.zeros((m, k))
    for _ in range(max_sweeps):
        previous = mu.copy()
        for j in range(k):
            s_jj = sigma[:, j, j]
            cavity_precision = 1.0 / s_jj - site_precision[:, j]
            cavity_shift = mu[:, j] / s_jj - site_shift[:, j]
            tilted_mean, tilted_var = truncated_univariate(
                cavity_shift / cavity_precision, 1.0 / cavity_precision, bound[:, j]
            )
            new_precision = 1.0 / tilted_var - cavity_precision
            new_shift = tilted_mean / tilted_var - cavity_shift
            d_precision = new_precision - site_precision[:, j]
            d_shift = new_shift - site_shift[:, j]
            column = sigma[:, :, j].copy()
            denom = 1.0 + d_precision * s_jj
            mu = mu + column * ((d_shift - d_precision * mu[:, j]) / denom)[:, None]
            sigma = sigma - (d_precision / denom)[:, None, None] * (
                column[:, :, None] * column[:, None, :]
            )
            site_precision[:, j] = new_precision
            site_shift[:, j] = new_shift
        if np.max(np.abs(mu - previous), initial=0.0) < tol:
            break
    return mu, 0.5 * (sigma + np.swapaxes(sigma, 1, 2))
