"""Gaussian-process numerics shared by the ``bo`` θ- and z-solvers: pure functions on arrays, no
solver coupling.

Two surrogates live here:

* :class:`MaternGP` (the θ-solver ``bo``): an ARD Matérn-5/2 GP in numpy with *maximum a
  posteriori* hyperparameters under the priors of Optuna's GP sampler, analytic gradients of
  both the posterior and the prediction, and incremental updates (see its docstring for why it is
  written by hand rather than taken from scikit-learn). :class:`GPLogEI` is its acquisition and
  :func:`maximize_batched` polishes all starts in one vectorised L-BFGS-B run.
* scikit-learn's :class:`~sklearn.gaussian_process.GaussianProcessRegressor` with
  ``ConstantKernel × Matern(ν=5/2, ARD) + WhiteKernel`` and normalised targets, fitted by
  maximising the log marginal likelihood (:func:`fit_gp`; Liu et al. 2020, Appendix 3; the same
  default as scikit-optimize's ``cook_estimator``), for the z-solver ``bo`` and BAPI's cost model;
  :class:`LogEI` and :func:`maximize` (central differences) go with it.

The acquisition is the logarithm of expected improvement, computed in a form that stays finite far
from the incumbent (Ament et al., "Unexpected Improvements to Expected Improvement for Bayesian
Optimization", NeurIPS 2023), with a known additive term — the ADMM penalty — added to the GP mean
analytically.

Nothing here knows about ADMM problems: the solver passes arrays and a penalty callable.
"""

from __future__ import annotations

import copy
import math
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy import linalg, optimize, special
from scipy.stats import qmc

#: ``penalty(X) -> values``: a known term evaluated on the rows of X (shape (n, d) -> (n,))
Penalty = Callable[[np.ndarray], np.ndarray]

_LOG_2PI = math.log(2.0 * math.pi)
_LOG_2PI_HALF = 0.5 * _LOG_2PI
_LOG_PI_2_HALF = 0.5 * math.log(math.pi / 2.0)
_INV_SQRT_EPS = 1.0 / math.sqrt(np.finfo(float).eps)
_NOISE_PARAM = "k2__noise_level"
_CONTROLLER = None


def single_threaded_blas():
    """A context manager that limits BLAS to one thread: the GP's matrices are tiny, and a
    multi-threaded BLAS on a busy machine makes every small solve orders of magnitude slower."""
    global _CONTROLLER
    from threadpoolctl import ThreadpoolController

    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1, user_api="blas")


# ----------------------------------------------------------------------------- targets
def clean_targets(y: np.ndarray) -> np.ndarray | None:
    """Replace NaN and ±inf by the largest finite value (the worst one, as we minimise).

    A non-finite value means "this point is bad", so the worst finite value keeps the GP away from
    it without the scale blow-up a huge penalty value would cause. Returns ``None`` when no value
    is finite (there is nothing to model).
    """
    y = np.asarray(y, dtype=float).copy()
    finite = np.isfinite(y)
    if not finite.any():
        return None
    y[~finite] = y[finite].max()
    return y


# ----------------------------------------------------------------------------- GP
def default_kernel(dim: int, ard: bool = True):
    """``ConstantKernel × Matern(ν=2.5) + WhiteKernel``, with one length scale per dimension
    (``ard``) or one for all (the one-hot inputs of the z-solver, whose coordinates are alike).

    Bounds are for inputs in the unit box and normalised targets: length scales 0.01-100 (as
    scikit-optimize), signal variance 0.001-1000, noise variance 1e-8-1.
    """
    from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

    return ConstantKernel(1.0, (1e-3, 1e3)) * Matern(
        length_scale=np.ones(dim) if ard else 1.0, length_scale_bounds=(1e-2, 1e2), nu=2.5
    ) + WhiteKernel(1e-4, (1e-8, 1.0))


def fit_gp(
    X: np.ndarray,
    y: np.ndarray,
    *,
    kernel=None,
    optimize_hyperparameters: bool = True,
    n_restarts: int = 2,
    random_state: int | None = None,
):
    """Fit a GP to ``(X, y)``; returns ``(gp, fitted_kernel)``.

    ``kernel`` is the starting point of the marginal-likelihood maximisation (e.g. the kernel
    fitted at the previous step, a warm start); ``n_restarts`` further starts are drawn
    log-uniformly within the bounds from ``random_state``. With
    ``optimize_hyperparameters=False`` the kernel's hyperparameters are used as they are (cheap
    refits for constant-liar batches).

    ``fitted_kernel`` keeps the fitted noise level (reuse it as ``kernel`` next time); the returned
    ``gp`` predicts the *latent* function: the WhiteKernel's level is zeroed after fitting, so the
    predictive standard deviation excludes observation noise (as scikit-optimize does). The
    training solve (``alpha_``, ``L_``) keeps the noise.
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.gaussian_process import GaussianProcessRegressor

    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if kernel is None:
        kernel = default_kernel(X.shape[1])
    gp = GaussianProcessRegressor(
        kernel=kernel,
        normalize_y=True,
        optimizer="fmin_l_bfgs_b" if optimize_hyperparameters else None,
        n_restarts_optimizer=int(n_restarts) if optimize_hyperparameters else 0,
        random_state=random_state,
        alpha=1e-10,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        gp.fit(X, y)
    fitted = gp.kernel_.clone_with_theta(gp.kernel_.theta)
    gp.kernel_.set_params(**{_NOISE_PARAM: 0.0})
    return gp, fitted


def predict(gp, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and standard deviation of the latent function at the rows of ``X``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Predicted variances smaller than 0" -> clipped to 0
        mean, std = gp.predict(np.atleast_2d(X), return_std=True)
    return np.asarray(mean, dtype=float), np.asarray(std, dtype=float)


# ----------------------------------------------------------------------------- numpy GP (MAP)
#: the smallest noise variance of :class:`MaternGP` (standardised targets; Optuna's default)
MIN_NOISE = 1e-6


def matern52(d2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Matérn-5/2 correlation of squared scaled distances ``d2`` and its derivative in ``d2``.

    ``k = (1 + √5 r + 5r²/3)·e^{−√5 r}`` with ``r = √d2``; ``dk/d(d2) = −(5/6)(1 + √5 r)e^{−√5 r}``
    (finite at ``d2 = 0``, unlike the derivative in ``r``).
    """
    s5r = np.sqrt(5.0 * np.maximum(d2, 0.0))
    e = np.exp(-s5r)
    return e * (1.0 + s5r + (5.0 / 3.0) * d2), (-5.0 / 6.0) * (1.0 + s5r) * e


def _sq_dist(X1: np.ndarray, X2: np.ndarray, inv_sq_ls: np.ndarray) -> np.ndarray:
    """``Σ_j a_j (x1_j − x2_j)²`` for every pair of rows (``a`` = inverse squared length scales)."""
    A = X1 * np.sqrt(inv_sq_ls)
    B = X2 * np.sqrt(inv_sq_ls)
    d2 = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * (A @ B.T)
    return np.maximum(d2, 0.0)


@dataclass(frozen=True)
class KernelParams:
    """Hyperparameters of :class:`MaternGP`: inverse squared length scales (one per dimension),
    the signal variance and the noise variance, all for standardised targets."""

    inv_sq_lengthscales: np.ndarray
    scale: float = 1.0
    noise: float = 1.0

    @classmethod
    def default(cls, dim: int) -> "KernelParams":
        return cls(np.ones(dim), 1.0, 1.0)

    def to_raw(self, min_noise: float) -> np.ndarray:
        noise = max(self.noise - 0.99 * min_noise, 1e-300)
        return np.concatenate([np.log(self.inv_sq_lengthscales),
                               [math.log(self.scale), math.log(noise)]])

    @classmethod
    def from_raw(cls, raw: np.ndarray, min_noise: float) -> "KernelParams":
        raw = np.clip(raw, -30.0, 30.0)
        return cls(np.exp(raw[:-2]), float(np.exp(raw[-2])), min_noise + float(np.exp(raw[-1])))


def log_prior(raw: np.ndarray, min_noise: float) -> tuple[float, np.ndarray]:
    """Log prior density (up to a constant) of the raw parameters and its gradient.

    The priors of Optuna's GP sampler (``optuna._gp.prior``, 3.6–4.x): on every inverse squared
    length scale ``a``, ``−(0.1/a + 0.1·a)`` (a mode at ``a = 1``, i.e. length scale 1 on the unit
    box, and heavy penalties on both very short and very long scales); Gamma(2, 1) on the signal
    variance; Gamma(1.1, 30) on the noise variance (mean ≈ 0.04 of the standardised variance).
    """
    a = np.exp(np.clip(raw[:-2], -30.0, 30.0))
    s = math.exp(min(max(raw[-2], -30.0), 30.0))
    e = math.exp(min(max(raw[-1], -30.0), 30.0))
    noise = min_noise + e
    value = -float((0.1 / a + 0.1 * a).sum()) + (math.log(s) - s) + (0.1 * math.log(noise) - 30.0 * noise)
    grad = np.concatenate([0.1 / a - 0.1 * a, [1.0 - s, (0.1 / noise - 30.0) * e]])
    return value, grad


class MaternGP:
    """A Gaussian process with an ARD Matérn-5/2 kernel on the unit box, in numpy.

    ``k(x, x') = s·M52(Σ_j a_j (x_j − x'_j)²) + noise·δ``, targets standardised (mean 0, variance
    1). Hyperparameters are the *maximum a posteriori* under :func:`log_prior` (L-BFGS-B in log
    space with the analytic gradient, warm-started from the previous fit, then from the default
    ``a = 1, s = 1, noise = 1`` if that fails — as Optuna's GP sampler does). Between fits,
    :meth:`append` adds points with the hyperparameters fixed by a block update of ``K⁻¹`` (cost
    O(n²m) for m new points instead of O(n³)), and :meth:`with_targets` swaps the targets of the
    same points (O(n²)).

    Why not scikit-learn's ``GaussianProcessRegressor``: it maximises the likelihood without
    priors (so on few points the length scales run to their bounds), refits from scratch at every
    call and has no gradient of the prediction; each of these is what makes this class sharper
    (the priors) or cheaper (the incremental update, the analytic gradients).
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, params: KernelParams | None = None, *,
                 fit: bool = True, min_noise: float = MIN_NOISE, gtol: float = 1e-2) -> None:
        self.X = np.atleast_2d(np.asarray(X, dtype=float))
        self.min_noise = float(min_noise)
        self.params = params if params is not None else KernelParams.default(self.X.shape[1])
        self._set_y(y)
        if fit:
            self.params = self._fit(gtol)
        self._factorise()

    # ------------------------------------------------------------------ targets
    def _set_y(self, y: np.ndarray) -> None:
        y = np.asarray(y, dtype=float)
        self.y = y
        self.y_mean = float(y.mean())
        self.y_std = max(float(y.std()), 1e-10)
        self.ys = (y - self.y_mean) / self.y_std

    def with_targets(self, y: np.ndarray) -> "MaternGP":
        """The same points and hyperparameters with new targets (no refactorisation)."""
        new = self._copy()
        new._set_y(y)
        new.alpha = new.K_inv @ new.ys
        return new

    def _copy(self) -> "MaternGP":
        return copy.copy(self)

    # ------------------------------------------------------------------ fitting
    def _kernel(self, X1: np.ndarray, X2: np.ndarray, params: KernelParams):
        d2 = _sq_dist(X1, X2, params.inv_sq_lengthscales)
        return matern52(d2)

    def _loss(self, raw: np.ndarray) -> tuple[float, np.ndarray]:
        """Negative log posterior (marginal likelihood + prior) and its gradient in ``raw``."""
        p = KernelParams.from_raw(raw, self.min_noise)
        X, y, n = self.X, self.ys, len(self.ys)
        M, dM = self._kernel(X, X, p)
        K = p.scale * M
        K[np.diag_indices(n)] += p.noise
        try:
            L = linalg.cholesky(K, lower=True, check_finite=False)
        except linalg.LinAlgError:
            return 1e300, np.zeros_like(raw)
        alpha = linalg.cho_solve((L, True), y, check_finite=False)
        K_inv = linalg.cho_solve((L, True), np.eye(n), check_finite=False)
        nll = 0.5 * float(y @ alpha) + float(np.log(np.diag(L)).sum()) + 0.5 * n * _LOG_2PI
        W = np.outer(alpha, alpha) - K_inv  # d nll / d K = −W/2
        G = W * (p.scale * dM)
        # Σ_ik G_ik (x_ij − x_kj)² = 2·Σ_i x_ij²·(G1)_i − 2·x_jᵀ G x_j   (G symmetric)
        quad = 2.0 * ((X * X) * G.sum(1)[:, None]).sum(0) - 2.0 * (X * (G @ X)).sum(0)
        grad = np.empty_like(raw)
        grad[:-2] = -0.5 * p.inv_sq_lengthscales * quad
        grad[-2] = -0.5 * float((W * (p.scale * M)).sum())
        grad[-1] = -0.5 * (p.noise - self.min_noise) * float(np.trace(W))
        prior, prior_grad = log_prior(raw, self.min_noise)
        return nll - prior, grad - prior_grad

    def _fit(self, gtol: float) -> KernelParams:
        for start in (self.params, KernelParams.default(self.X.shape[1])):
            raw0 = start.to_raw(self.min_noise)
            with np.errstate(all="ignore"):
                res = optimize.minimize(self._loss, raw0, jac=True, method="L-BFGS-B",
                                        options={"gtol": gtol, "maxiter": 200})
            if np.all(np.isfinite(res.x)) and res.fun < 1e299:
                return KernelParams.from_raw(res.x, self.min_noise)
        return KernelParams.default(self.X.shape[1])

    def _factorise(self) -> None:
        self._scaled = None
        p, n = self.params, len(self.X)
        K = p.scale * self._kernel(self.X, self.X, p)[0]
        K[np.diag_indices(n)] += p.noise
        L = linalg.cholesky(K, lower=True, check_finite=False)
        self.K_inv = linalg.cho_solve((L, True), np.eye(n), check_finite=False)
        self.alpha = self.K_inv @ self.ys

    # ------------------------------------------------------------------ updates
    def append(self, X_new: np.ndarray, y: np.ndarray) -> "MaternGP":
        """A GP with ``X_new`` added (``y``: the targets of *all* points, old then new), the
        hyperparameters fixed: ``K⁻¹`` by the block (Schur-complement) update."""
        X_new = np.atleast_2d(np.asarray(X_new, dtype=float))
        p = self.params
        B = p.scale * self._kernel(self.X, X_new, p)[0]  # (n, m)
        C = p.scale * self._kernel(X_new, X_new, p)[0]
        C[np.diag_indices(len(X_new))] += p.noise
        KB = self.K_inv @ B
        S = C - B.T @ KB
        S_inv = np.linalg.inv(S)
        top = KB @ S_inv
        new = self._copy()
        new.X = np.vstack([self.X, X_new])
        new._scaled = None
        new.K_inv = np.block([[self.K_inv + top @ KB.T, -top], [-top.T, S_inv]])
        new._set_y(y)
        new.alpha = new.K_inv @ new.ys
        return new

    # ------------------------------------------------------------------ prediction
    def predict(self, X: np.ndarray, grad: bool = False):
        """Posterior mean and standard deviation of the latent function (target units) at the
        rows of ``X``; with ``grad=True`` also their gradients (shape (m, d) each)."""
        X = np.atleast_2d(np.asarray(X, dtype=float))
        p = self.params
        if self._scaled is None:  # the training points scaled by √a, and their squared norms
            scaled = self.X * np.sqrt(p.inv_sq_lengthscales)
            self._scaled = (scaled, (scaled * scaled).sum(1))
        train, train_sq = self._scaled
        A = X * np.sqrt(p.inv_sq_lengthscales)
        d2 = (A * A).sum(1)[:, None] + train_sq[None, :] - 2.0 * (A @ train.T)
        M, dM = matern52(np.maximum(d2, 0.0, out=d2))
        k = p.scale * M  # (m, n)
        Kk = k @ self.K_inv
        var = np.maximum(p.scale - (Kk * k).sum(1), 1e-30)
        std = np.sqrt(var)
        mean = self.y_mean + self.y_std * (k @ self.alpha)
        if not grad:
            return mean, self.y_std * std
        # dk_i/dx = s·dM_i·2a∘(x − X_i), so Σ_i w_i dk_i/dx = 2s·a∘(x·Σ_i w_i dM_i − Σ_i w_i dM_i X_i)
        a2s = (2.0 * p.scale) * p.inv_sq_lengthscales
        Da = dM * self.alpha
        dmean = (self.y_std * a2s) * (X * Da.sum(1)[:, None] - Da @ self.X)
        DK = dM * Kk
        dvar = (-2.0 * a2s) * (X * DK.sum(1)[:, None] - DK @ self.X)
        dstd = (self.y_std * 0.5) * dvar / std[:, None]
        return mean, self.y_std * std, dmean, dstd


# ----------------------------------------------------------------------------- log-EI
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
    For ``z < −1/√ε`` the bracket is below machine precision and the asymptote
    ``h(z) ≈ φ(z)/z²`` gives ``log h ≈ −z²/2 − log√(2π) − 2·log|z|``.
    """
    z = np.asarray(z, dtype=float)
    out = np.empty_like(z)
    upper = z > -1.0
    zu = z[upper]
    out[upper] = np.log(np.exp(-0.5 * zu * zu) / math.sqrt(2 * math.pi) + zu * special.ndtr(zu))
    mid = ~upper & (z > -_INV_SQRT_EPS)
    zm = z[mid]
    out[mid] = (
        -0.5 * zm * zm
        - _LOG_2PI_HALF
        + _log1mexp(np.log(special.erfcx(-zm / math.sqrt(2.0)) * np.abs(zm)) + _LOG_PI_2_HALF)
    )
    low = ~upper & ~mid
    zl = z[low]
    out[low] = -0.5 * zl * zl - _LOG_2PI_HALF - 2.0 * np.log(np.abs(zl))
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


# ----------------------------------------------------------------------------- design + search
def sobol_points(n: int, dim: int, seed: int) -> np.ndarray:
    """The first ``n`` points of a scrambled Sobol' sequence in [0, 1]^dim (drawn as a power of
    two, so scipy's balance warning does not fire)."""
    if n <= 0:
        return np.empty((0, dim))
    m = max(0, math.ceil(math.log2(n)))
    return qmc.Sobol(dim, scramble=True, seed=seed).random_base2(m)[:n]


def candidate_points(dim: int, rng: np.random.Generator, centres: np.ndarray | None,
                     n_candidates: int, sobol: bool = True) -> np.ndarray:
    """``n_candidates`` scrambled Sobol' points (``sobol``) or uniform ones, plus Gaussian
    perturbations (scales 0.02 and 0.1) of ``centres`` (e.g. the best observed points) and the
    centres themselves."""
    if sobol:
        parts = [sobol_points(n_candidates, dim, int(rng.integers(2**32 - 1)))]
    else:
        parts = [rng.uniform(0.0, 1.0, size=(n_candidates, dim))]
    if centres is not None and len(centres):
        centres = np.atleast_2d(centres)
        per = max(8, n_candidates // (4 * len(centres)))
        for scale in (0.02, 0.1):
            noise = rng.normal(0.0, scale, size=(len(centres), per, dim))
            parts.append(np.clip(centres[:, None, :] + noise, 0.0, 1.0).reshape(-1, dim))
        parts.append(centres)
    return np.vstack(parts)


def scored_candidates(acquisition: Callable[[np.ndarray], np.ndarray], dim: int,
                      rng: np.random.Generator, centres: np.ndarray | None, n_candidates: int,
                      sobol: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`candidate_points`, their acquisition values (non-finite ones as −inf) and the
    order from the best down."""
    candidates = candidate_points(dim, rng, centres, n_candidates, sobol)
    values = acquisition(candidates)
    values = np.where(np.isfinite(values), values, -np.inf)
    return candidates, values, np.argsort(-values, kind="stable")


def maximize(
    acquisition: LogEI,
    dim: int,
    rng: np.random.Generator,
    *,
    centres: np.ndarray | None = None,
    n_candidates: int = 1024,
    n_starts: int = 5,
    maxiter: int = 100,
) -> np.ndarray:
    """Points of [0, 1]^dim ordered from the highest acquisition value down.

    ``acquisition`` is a :class:`LogEI` or any object with the same ``__call__(X)`` (values of
    the rows, higher is better) and ``value_and_grad(x)``.

    Candidates: ``n_candidates`` scrambled Sobol' points plus Gaussian perturbations (scales 0.02
    and 0.1) of ``centres`` (e.g. the best observed points). The best ``n_starts`` candidates are
    polished by bound-constrained L-BFGS-B; the polished points come first (best first), then the
    remaining candidates, so a caller can skip points it does not want (duplicates).
    """
    candidates, values, order = scored_candidates(acquisition, dim, rng, centres, n_candidates)
    polished: list[tuple[float, np.ndarray]] = []
    bounds = [(0.0, 1.0)] * dim

    def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = acquisition.value_and_grad(x)
        if not np.isfinite(value):
            return 1e300, np.zeros(dim)
        return -value, -grad

    for i in order[: max(0, n_starts)]:
        start = candidates[i]
        try:
            res = optimize.minimize(
                objective, start, jac=True, method="L-BFGS-B", bounds=bounds,
                options={"maxiter": maxiter},
            )
            x, value = np.clip(res.x, 0.0, 1.0), -float(res.fun)
        except (ValueError, FloatingPointError, np.linalg.LinAlgError):
            x, value = start, float(values[i])
        if not (value >= values[i]):  # never return worse than the start
            x, value = start, float(values[i])
        polished.append((value, x))
    polished.sort(key=lambda t: -t[0])
    head = [x for _, x in polished]
    rest = [candidates[i] for i in order[max(0, n_starts):]]
    return np.array(head + rest)


def maximize_batched(
    acquisition: GPLogEI,
    dim: int,
    rng: np.random.Generator,
    *,
    centres: np.ndarray | None = None,
    n_candidates: int = 1024,
    n_starts: int = 5,
    maxiter: int = 100,
    lengthscales: np.ndarray | None = None,
) -> np.ndarray:
    """Points of [0, 1]^dim ordered from the highest acquisition value down, for an acquisition
    with batched analytic gradients (``values_and_grads``).

    Candidates as in :func:`candidate_points`, uniform rather than Sobol' (as Optuna; on
    Hartmann-6 more runs reached the global basin with them, 47 % against 38 % of 40 seeds, a
    difference within two standard errors). Starts, after Optuna's ``optimize_acqf_mixed``: the
    best candidate, the best centre (the incumbent) and ``n_starts − 2`` more drawn without
    replacement with probabilities ∝ ``exp(value − best value)`` (a roulette that spreads the
    starts over the promising modes instead of polishing one mode ``n_starts`` times). All starts
    are polished by *one* bound-constrained L-BFGS-B on the sum of their values (the starts are
    independent, so the summed objective is separable and its gradient is theirs; BoTorch's
    ``gen_candidates_scipy`` does the same), which costs one vectorised acquisition call per
    iteration instead of one per start. Coordinates are scaled by ``lengthscales`` (Optuna's
    preconditioning: the acquisition is a function of ``x / ℓ``, so ``u = x / ℓ`` is evenly
    conditioned). A polished point that is not better than its start is replaced by its start.
    """
    candidates, values, order = scored_candidates(acquisition, dim, rng, centres, n_candidates,
                                                  sobol=False)
    chosen = [int(order[0])]
    if centres is not None and len(centres):
        chosen.append(len(candidates) - len(np.atleast_2d(centres)))  # the first centre
    extra = max(0, int(n_starts) - len(chosen))
    if extra and np.isfinite(values[order[0]]):
        probs = np.exp(values - values[order[0]])
        probs[chosen] = 0.0
        probs = np.where(np.isfinite(probs), probs, 0.0)
        extra = min(extra, int(np.count_nonzero(probs > 0)))
        if extra:
            chosen.extend(int(i) for i in rng.choice(len(candidates), size=extra, replace=False,
                                                     p=probs / probs.sum()))
    chosen = list(dict.fromkeys(chosen))[: max(1, int(n_starts))] if n_starts > 0 else []
    head: list[tuple[float, np.ndarray]] = []
    if chosen:
        ls = np.ones(dim) if lengthscales is None else np.asarray(lengthscales, dtype=float)
        starts = candidates[chosen]
        k = len(starts)

        def objective(u: np.ndarray) -> tuple[float, np.ndarray]:
            X = np.clip(u.reshape(k, dim) * ls, 0.0, 1.0)
            v, g = acquisition.values_and_grads(X)
            bad = ~np.isfinite(v) | ~np.all(np.isfinite(g), axis=1)
            if bad.any():
                v = np.where(bad, -1e6, v)
                g = np.where(bad[:, None], 0.0, g)
            return -float(v.sum()), -(g * ls).ravel()

        bounds = [(0.0, 1.0 / l) for l in ls] * k
        try:
            res = optimize.minimize(objective, (starts / ls).ravel(), jac=True, method="L-BFGS-B",
                                    bounds=bounds, options={"maxiter": maxiter, "gtol": 1e-2})
            polished = np.clip(res.x.reshape(k, dim) * ls, 0.0, 1.0)
            new_values = acquisition(polished)
        except (ValueError, FloatingPointError, np.linalg.LinAlgError):
            polished, new_values = starts, values[chosen]
        for x0, v0, x1, v1 in zip(starts, values[chosen], polished, new_values):
            head.append((float(v1), x1) if v1 >= v0 else (float(v0), x0))
        head.sort(key=lambda t: -t[0])
    keep = np.ones(len(candidates), dtype=bool)
    keep[chosen] = False
    polished = np.array([x for _, x in head]).reshape(len(head), dim)
    return np.vstack([polished, candidates[order[keep[order]]]])
