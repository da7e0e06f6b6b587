"""Expected improvement of a batch: Monte Carlo q-EI with fixed quasi-random base samples.

For a batch with joint posterior ``N(m, S)`` of the losses (penalty included in ``m``) and
incumbent ``y*``, ``qEI = E[max(y* − min_j F_j, 0)]``, estimated with the reparameterisation
``F = m + L e`` (``L = chol(S)``) over fixed base samples ``e`` (Wilson, Hutter, Deisenroth,
"Maximizing acquisition functions for Bayesian optimization", NeurIPS 2018). Fixing ``e`` makes
the estimate a deterministic function of the batch (a sample-average approximation) that greedy
construction can maximise one member at a time; the base samples are scrambled-Sobol' points
mapped through the normal quantile function, seeded from the caller's Generator. Single-point EI
is the closed form of :mod:`admm_automl._numerics.gp.acquisition` (log-EI, finite far from the
incumbent).
"""

from __future__ import annotations

import numpy as np
from scipy import special

from .. import gp as _gp


def normal_base_samples(n: int, q: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` quasi-random standard-normal vectors of length ``q`` (shape (n, q))."""
    uniform = _gp.sobol_points(n, q, int(rng.integers(2**32 - 1)))
    eps = np.finfo(float).eps
    return special.ndtri(np.clip(uniform, eps, 1.0 - eps))


def jittered_cholesky(cov: np.ndarray) -> np.ndarray:
    """Lower Cholesky factors of covariance matrices (shape (..., q, q)) after adding 1e-10 of
    their mean variance to the diagonal (a batch may hold near-duplicate points)."""
    q = cov.shape[-1]
    scale = np.maximum(np.trace(cov, axis1=-2, axis2=-1) / q, 1e-300)
    return np.linalg.cholesky(cov + 1e-10 * scale[..., None, None] * np.eye(q))


def q_expected_improvement(
    mean: np.ndarray, cov: np.ndarray, threshold: float, base_samples: np.ndarray
) -> np.ndarray:
    """Monte Carlo q-EI of batches for minimisation.

    Parameters
    ----------
    mean : ndarray of shape (..., q)
    cov : ndarray of shape (..., q, q)
        Joint covariance of each batch (positive semi-definite; :func:`jittered_cholesky`).
    threshold : float
        The incumbent ``y*``.
    base_samples : ndarray of shape (M, q') with q' ≥ q
        Standard-normal samples; the first ``q`` columns are used.

    Returns
    -------
    ndarray of shape (...)
    """
    mean = np.asarray(mean, dtype=float)
    q = mean.shape[-1]
    chol = jittered_cholesky(np.asarray(cov, dtype=float))
    samples = mean[..., None, :] + base_samples[:, :q] @ np.swapaxes(chol, -1, -2)
    return np.maximum(threshold - samples.min(axis=-1), 0.0).mean(axis=-1)
