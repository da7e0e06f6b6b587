"""Gaussian-process numerics shared by the ``bo`` θ- and z-solvers: pure functions on arrays, no
solver coupling.

The surrogate is scikit-learn's :class:`~sklearn.gaussian_process.GaussianProcessRegressor` with
``ConstantKernel × Matern(ν=5/2, ARD) + WhiteKernel`` and normalised targets, fitted by maximising
the log marginal likelihood (Liu et al. 2020, Appendix 3; the same default as scikit-optimize's
``cook_estimator``). The acquisition is the logarithm of expected improvement, computed in a form
that stays finite far from the incumbent (Ament et al., "Unexpected Improvements to Expected
Improvement for Bayesian Optimization", NeurIPS 2023), with a known additive term — the ADMM
penalty — added to the GP mean analytically.

Nothing here knows about ADMM problems: the solver passes arrays and a vectorised penalty.
"""

from __future__ import annotations

import math
import warnings
from typing import Callable

import numpy as np
from scipy import optimize, special
from scipy.stats import qmc

#: ``penalty(X) -> values``: a known term evaluated on the rows of X (shape (n, d) -> (n,))
Penalty = Callable[[np.ndarray], np.ndarray]

_LOG_2PI_HALF = 0.5 * math.log(2.0 * math.pi)
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
    seed = int(rng.integers(2**32 - 1))
    parts = [sobol_points(n_candidates, dim, seed)]
    if centres is not None and len(centres):
        centres = np.atleast_2d(centres)
        per = max(8, n_candidates // (4 * len(centres)))
        for scale in (0.02, 0.1):
            noise = rng.normal(0.0, scale, size=(len(centres), per, dim))
            parts.append(np.clip(centres[:, None, :] + noise, 0.0, 1.0).reshape(-1, dim))
        parts.append(centres)
    candidates = np.vstack(parts)
    values = acquisition(candidates)
    values = np.where(np.isfinite(values), values, -np.inf)
    order = np.argsort(-values, kind="stable")
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
