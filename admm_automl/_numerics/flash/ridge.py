"""The ridge performance model and the ridge cost model over paths, with their Gaussian predictive
distribution (the paper's Eq. 1 and its predictive variance)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg

from ...exceptions import InvalidParameterError
from .defaults import (DEFAULT_COST_TRANSFORM, DEFAULT_FIT_INTERCEPT, DEFAULT_RIDGE_ALPHA,
                       MIN_SECONDS, MIN_STD)
from .validation import check_cost_transform, check_ridge_alpha


@dataclass(frozen=True)
class RidgePathModel:
    """A fitted ridge model over path vectors with a Gaussian predictive distribution.

    Attributes
    ----------
    coef : ndarray, shape (N,)
        β.
    intercept : float
        b (0 for the paper's literal Eq. 1).
    noise_var : float
        σ_ε², the population variance (ddof = 0) of the in-sample residuals.
    precision_inv : ndarray, shape (N, N)
        (PᵀP + αI)⁻¹ on the *uncentred* design matrix P, as in the paper and the released code.
    """

    coef: np.ndarray
    intercept: float
    noise_var: float
    precision_inv: np.ndarray

    def mean(self, P: np.ndarray) -> np.ndarray:
        """μ(p) = βᵀp + b for each row of ``P`` (shape (n, N) -> (n,), or (N,) -> scalar)."""
        return np.asarray(P, dtype=float) @ self.coef + self.intercept

    def predict(self, P: np.ndarray, min_std: float = MIN_STD) -> tuple[np.ndarray, np.ndarray]:
        """Predictive mean and standard deviation ``(μ, s)`` for each row of ``P``.

        ``s(p) = max(sqrt(σ_ε² (1 + pᵀ(PᵀP + αI)⁻¹p)), min_std)``. The paper writes this quantity
        as σ̂_p but it is a variance; EI needs its square root. The floor keeps EI defined when
        σ_ε² = 0 (an interpolating fit).
        """
        X = np.asarray(P, dtype=float)
        rows = np.atleast_2d(X)
        leverage = np.einsum("ij,ij->i", rows @ self.precision_inv, rows)  # pᵀ(PᵀP + αI)⁻¹p
        if X.ndim == 1:
            leverage = leverage[0]
        std = np.sqrt(self.noise_var * (1.0 + leverage))
        return self.mean(X), np.maximum(std, min_std)

    def mean_columns(self, columns: np.ndarray) -> np.ndarray:
        """:meth:`mean` of path vectors given by the columns of their ones
        (:func:`~.paths.path_columns`, shape (n, K)): ``Σ_k β[c_k] + b``, a gather of K entries
        per path instead of a product with its N-long one-hot vector. Equal to :meth:`mean` up
        to rounding (the sums run in another order)."""
        c = np.asarray(columns)
        total = self.coef[c[:, 0]].copy()
        for k in range(1, c.shape[1]):  # K one-dimensional adds: a sum over a short axis is slow
            total += self.coef[c[:, k]]
        return total + self.intercept

    def predict_columns(self, columns: np.ndarray,
                        min_std: float = MIN_STD) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`predict` of path vectors given by the columns of their ones (shape (n, K)):
        the leverage ``pᵀ(PᵀP + αI)⁻¹p`` is the sum of the K × K entries of the inverse at
        those columns. It reads K + K² numbers per path where :meth:`predict` multiplies (n, N)
        matrices; equal to it up to rounding."""
        c = np.asarray(columns)
        A, K = self.precision_inv, c.shape[1]
        leverage = np.zeros(len(c))
        for k in range(K):  # Σ_k A[c_k, c_k] + 2 Σ_{k<l} A[c_k, c_l] (A is symmetric)
            leverage += A[c[:, k], c[:, k]]
            for l in range(k + 1, K):
                leverage += 2.0 * A[c[:, k], c[:, l]]
        std = np.sqrt(self.noise_var * (1.0 + leverage))
        return self.mean_columns(c), np.maximum(std, min_std)


def fit_ridge(
    P: np.ndarray,
    y: np.ndarray,
    alpha: float = DEFAULT_RIDGE_ALPHA,
    *,
    fit_intercept: bool = DEFAULT_FIT_INTERCEPT,
) -> RidgePathModel:
    """Fit the additive ridge model ``y ≈ βᵀp + b`` over path vectors.

    Parameters
    ----------
    P : ndarray, shape (n, N)
        One observed path vector per row (repeats allowed).
    y : ndarray, shape (n,)
        Observed targets (losses, or transformed costs); must be finite — the caller maps failed
        runs to a value first (the released code uses the worst error, 100 %).
    alpha : float, default=1.0
        Ridge penalty α.
    fit_intercept : bool, default=True
        ``True`` — **Variant A**, the released code's ``sklearn.linear_model.Ridge(alpha)``: an
        unpenalised intercept, β from the centred system
        ``((P−P̄)ᵀ(P−P̄) + αI) β = (P−P̄)ᵀ(y−ȳ)``, ``b = ȳ − P̄ᵀβ``.
        ``False`` — **Variant B**, the paper's Eq. 1 read literally,
        ``argmin (1/n)‖Pβ − y‖² + α‖β‖²``: no intercept, ``(PᵀP + nαI) β = Pᵀy``. It shrinks
        every prediction towards 0 (on the five-observation toy problem of the tests it
        predicts 6.5 where Variant A predicts 19.7 for errors of 12–25), which distorts EI; it
        is here for comparison only.

    Returns
    -------
    RidgePathModel
        With σ_ε² = population variance of the in-sample residuals (the released code's
        ``np.var``) and ``(PᵀP + αI)⁻¹`` for the predictive variance — the same α, no n factor,
        uncentred P, in both variants, as in the paper's variance formula.

    Notes
    -----
    Written with numpy/scipy rather than scikit-learn's ``Ridge``: ``Ridge`` returns β and b but
    neither the residual variance nor (PᵀP + αI)⁻¹, which the predictive variance needs, and the
    whole fit is one N×N Cholesky solve (N = Σ n_k, a few dozen). Each module's block of P sums
    to the all-ones column, so PᵀP is singular; the penalty α > 0 is what makes β unique. Single
    β entries are defined only up to shifts within a block; predictions for paths are well defined.
    """
    X = np.asarray(P, dtype=float)
    target = np.asarray(y, dtype=float)
    alpha = check_ridge_alpha(alpha)
    if X.ndim != 2 or X.shape[0] == 0 or target.shape != (X.shape[0],):
        raise InvalidParameterError(
            f"fit_ridge needs P of shape (n, N) with n >= 1 and y of shape (n,), got "
            f"{np.shape(P)} and {np.shape(y)}"
        )
    if not np.all(np.isfinite(target)):
        raise InvalidParameterError(
            f"fit_ridge needs finite targets (map failed runs to a finite value first), got "
            f"{target[~np.isfinite(target)][:3].tolist()!r}"
        )
    n, dim = X.shape
    eye = np.eye(dim)
    if fit_intercept:
        x_mean, y_mean = X.mean(axis=0), float(target.mean())
        Xc = X - x_mean
        coef = linalg.solve(Xc.T @ Xc + alpha * eye, Xc.T @ (target - y_mean), assume_a="pos")
        intercept = y_mean - float(x_mean @ coef)
    else:
        coef = linalg.solve(X.T @ X + n * alpha * eye, X.T @ target, assume_a="pos")
        intercept = 0.0
    residuals = X @ coef + intercept - target
    precision_inv = linalg.cho_solve(linalg.cho_factor(X.T @ X + alpha * eye), eye)
    return RidgePathModel(coef, intercept, float(np.var(residuals)), precision_inv)


def fit_ridge_columns(
    columns: np.ndarray,
    y: np.ndarray,
    gram: np.ndarray,
    alpha: float = DEFAULT_RIDGE_ALPHA,
    *,
    fit_intercept: bool = DEFAULT_FIT_INTERCEPT,
) -> RidgePathModel:
    """:func:`fit_ridge` on path vectors given by the columns of their ones
    (:func:`~.paths.path_columns`, shape (n, K)) and their Gram matrix ``gram = PᵀP`` (N × N:
    counts of pairs of ones, kept by the caller as rows arrive, exact in floating point). The
    same model up to rounding, from sufficient statistics: ``(P−P̄)ᵀ(P−P̄) = PᵀP − n P̄P̄ᵀ``,
    ``(P−P̄)ᵀ(y−ȳ) = Pᵀy − n P̄ȳ``, ``P̄`` the diagonal of ``PᵀP`` over n (a one-hot entry is its
    own square), ``Pᵀy`` a sum of ``y`` per column; the residuals by gathers. So a fit costs
    O(nK + N³) instead of O(nN²)."""
    c = np.asarray(columns)
    target = np.asarray(y, dtype=float)
    alpha = check_ridge_alpha(alpha)
    G = np.asarray(gram, dtype=float)
    n, dim = c.shape[0], G.shape[0]
    if c.ndim != 2 or n == 0 or target.shape != (n,):
        raise InvalidParameterError(
            f"fit_ridge_columns needs columns of shape (n, K) with n >= 1 and y of shape (n,), "
            f"got {np.shape(columns)} and {np.shape(y)}")
    if not np.all(np.isfinite(target)):
        raise InvalidParameterError(
            f"fit_ridge_columns needs finite targets, got "
            f"{target[~np.isfinite(target)][:3].tolist()!r}")
    eye = np.eye(dim)
    Pty = np.bincount(c.ravel(), weights=np.repeat(target, c.shape[1]), minlength=dim)
    # numpy's LAPACK calls: at N ≈ 40 scipy's checks and wrappers cost more than the solves
    if fit_intercept:
        x_mean, y_mean = np.diag(G) / n, float(target.mean())
        coef = np.linalg.solve(G - n * np.outer(x_mean, x_mean) + alpha * eye,
                               Pty - n * x_mean * y_mean)
        intercept = y_mean - float(x_mean @ coef)
    else:
        coef = np.linalg.solve(G + n * alpha * eye, Pty)
        intercept = 0.0
    fitted = coef[c[:, 0]].copy()
    for k in range(1, c.shape[1]):
        fitted += coef[c[:, k]]
    residuals = fitted + intercept - target
    precision_inv = np.linalg.inv(G + alpha * eye)
    return RidgePathModel(coef, intercept, float(np.var(residuals)), precision_inv)


def transform_cost(seconds: np.ndarray, transform: str = DEFAULT_COST_TRANSFORM) -> np.ndarray:
    """The cost model's target from measured durations.

    * ``"log"`` — log τ, the paper's E[log τ] (Eq. 4) and the released code. Durations are floored
      at :data:`MIN_SECONDS` first (a full cache hit can take ~0 s; log 0 is −inf). Runs shorter
      than 1 s have log τ < 0, which makes the EIPS denominator non-positive: see :func:`eips`.
    * ``"log1p"`` (the default) — log(1 + τ): positive for every τ > 0, within log(1 + 1/τ) of
      log τ for slow runs (0.1 at 10 s) and ≈ τ for sub-second ones, so it keeps the paper's damping where runs
      are long and stays a usable divisor where they are short (the paper does not say what
      happens when log τ ≤ 0).
    * ``"identity"`` — τ in seconds (Snoek et al.'s EI per second, without the paper's damping).

    Raises
    ------
    InvalidParameterError
        On an unknown transform, or a negative or non-finite duration.
    """
    transform = check_cost_transform(transform)
    tau = np.asarray(seconds, dtype=float)
    bad = ~(np.isfinite(tau) & (tau >= 0))
    if bad.any():
        raise InvalidParameterError(
            f"durations must be finite and >= 0 seconds, got {tau[bad][:3].tolist()!r}"
        )
    if transform == "log":
        return np.log(np.maximum(tau, MIN_SECONDS))
    if transform == "log1p":
        return np.log1p(tau)
    return tau


def fit_cost_model(
    P: np.ndarray,
    seconds: np.ndarray,
    alpha: float = DEFAULT_RIDGE_ALPHA,
    *,
    transform: str = DEFAULT_COST_TRANSFORM,
    fit_intercept: bool = DEFAULT_FIT_INTERCEPT,
) -> RidgePathModel:
    """The ridge cost model: :func:`fit_ridge` on ``transform_cost(seconds, transform)``.

    Its :meth:`RidgePathModel.mean` is the predicted transformed cost, used directly as the EIPS
    denominator (the released code uses ``β_τᵀp + b_τ`` as E[log τ(p)]).
    """
    return fit_ridge(P, transform_cost(seconds, transform), alpha, fit_intercept=fit_intercept)
