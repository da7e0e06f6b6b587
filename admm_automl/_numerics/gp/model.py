"""The numpy GP of the ``bo`` θ-solver: an ARD Matérn-5/2 kernel on the unit box around a
pessimistic constant prior mean (the worst observed value), *maximum a posteriori* hyperparameters
under the priors of Optuna's GP sampler, analytic gradients of the posterior and of the prediction,
and incremental updates (:class:`MaternGP`; see its docstring for why it is written by hand rather
than taken from scikit-learn).

The model and its priors live together, as in Optuna's GP sampler, because the MAP fit is their
sum: :func:`log_prior` is one term of :meth:`MaternGP._loss`. :func:`clean_targets` prepares the
targets of this GP and of the scikit-learn one (:mod:`.sklearn_gp`) alike.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np
from scipy import linalg, optimize
from scipy.linalg import lapack

_LOG_2PI = math.log(2.0 * math.pi)


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


def matern52_value(d2: np.ndarray) -> np.ndarray:
    """The first result of :func:`matern52` alone, bit for bit the same (the same operations in
    the same order, in place), for predictions without gradients: the derivative and half the
    temporaries are not made."""
    s5r = np.maximum(d2, 0.0)
    s5r *= 5.0
    np.sqrt(s5r, out=s5r)
    e = np.negative(s5r)
    np.exp(e, out=e)
    s5r += 1.0
    s5r += (5.0 / 3.0) * d2
    s5r *= e
    return s5r


def _sq_dist(X1: np.ndarray, X2: np.ndarray, inv_sq_ls: np.ndarray) -> np.ndarray:
    """``Σ_j a_j (x1_j − x2_j)²`` for every pair of rows (``a`` = inverse squared length scales)."""
    A = X1 * np.sqrt(inv_sq_ls)
    B = X2 * np.sqrt(inv_sq_ls)
    d2 = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * (A @ B.T)
    return np.maximum(d2, 0.0)


def cho_inverse(L: np.ndarray) -> np.ndarray:
    """``K⁻¹`` from the lower Cholesky factor ``L`` of ``K`` (zeros above its diagonal, as
    :func:`scipy.linalg.cholesky` returns it), by LAPACK's ``potri``: ``L⁻¹`` and then
    ``L⁻ᵀL⁻¹`` in place, half the work of solving ``K X = I`` column by column, which is what
    ``cho_solve`` with the identity does. ``potri`` writes the lower triangle only (the upper
    keeps ``L``'s zeros), so the sum with the transpose, its diagonal halved (exact in binary),
    is the symmetric inverse. Single-threaded on the 2-core VM: 0.31 against 0.67 ms for
    n = 150, 1.4 against 2.8–3.7 ms for 300, 3.7 against 8.0 ms for 450; the values agree
    with ``cho_solve``'s to ~1e-15 relative."""
    inv, info = lapack.dpotri(L, lower=1)
    if info != 0:
        raise linalg.LinAlgError(f"potri failed (info {info})")
    inv = inv + inv.T
    inv[np.diag_indices(len(inv))] *= 0.5
    return inv


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


#: the constant prior means :class:`MaternGP` knows (see its docstring)
PRIOR_MEANS = ("max", "mean")


class MaternGP:
    """A Gaussian process with an ARD Matérn-5/2 kernel on the unit box, in numpy.

    ``k(x, x') = s·M52(Σ_j a_j (x_j − x'_j)²) + noise·δ`` on the targets scaled to unit variance,
    around a constant prior mean: by default the *largest* (worst, as we minimise) observed value
    (``prior_mean="max"``), or their mean (``"mean"``, what Optuna's GP sampler and scikit-learn's
    ``normalize_y`` do). Far from the data the posterior returns to the prior mean. Around the mean
    it predicts an average value there with the full prior variance, and expected improvement sends
    the search to the faces and corners of the box, the points farthest from everything observed;
    around the worst value it predicts nothing better than what is known to be bad, and the search
    refines the basins it has found and explores where the model has evidence of improvement. De
    Ath, Fieldsend and Everson ("What do you mean? The role of the mean function in Bayesian
    optimisation", GECCO 2020) compared eight mean functions (constants at the mean, minimum,
    median and maximum of the observations, linear and quadratic polynomials, random forests, RBF
    networks) under EI and UCB: from 5 dimensions up the worst observed value was consistently the
    best on their 10 synthetic problems, which they attribute to more exploitation and so faster
    convergence; on their two real-world problems no mean function was clearly best. Measured here
    on Hartmann-6 with the θ-solver ``bo`` (50 evaluations): around the mean 200 of 800 model-based
    asks over 20 seeds went to points with 4 or more of the 6 coordinates on a face of the box,
    around the maximum 9; the runs that end in the global basin (regret < 0.01) went from 47 to 60
    of 100 seeds, and those runs end at a regret of ~5e-5 instead of ~1e-3
    (``experiments/theta_solvers.py``). Hyperparameters are the *maximum a posteriori* under
    :func:`log_prior` (L-BFGS-B in log space with the analytic gradient, warm-started from the
    previous fit, then from the default ``a = 1, s = 1, noise = 1`` if that fails — as Optuna's GP
    sampler does). Between fits, :meth:`append` adds points with the hyperparameters fixed by a
    block update of ``K⁻¹`` (cost O(n²m) for m new points instead of O(n³)), and
    :meth:`with_targets` swaps the targets of the same points (O(n²)).

    ``fast_inverse``: the fit's loss takes ``K⁻¹`` from the Cholesky factor by LAPACK's
    ``potri`` (:func:`cho_inverse`, 2–2.5× faster at 150–450 points) instead of solving with
    the identity. The two agree to ~1e-15 relative, but that rounding moves the MAP
    hyperparameters in their last digits, and so, a few asks later, the points asked: a seeded
    serial run's history must stay what it was, so only a run with several workers, whose
    history depends on the order its trials end anyway, asks for it (``bo``).

    Why not scikit-learn's ``GaussianProcessRegressor``: it maximises the likelihood without
    priors (so on few points the length scales run to their bounds), refits from scratch at every
    call and has no gradient of the prediction; each of these is what makes this class sharper
    (the priors) or cheaper (the incremental update, the analytic gradients).
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, params: KernelParams | None = None, *,
                 fit: bool = True, min_noise: float = MIN_NOISE, gtol: float = 1e-2,
                 prior_mean: str = "max", fast_inverse: bool = False) -> None:
        if prior_mean not in PRIOR_MEANS:
            raise ValueError(f"prior_mean must be one of {PRIOR_MEANS}, got {prior_mean!r}")
        self.X = np.atleast_2d(np.asarray(X, dtype=float))
        self.min_noise = float(min_noise)
        self.prior_mean = prior_mean
        self.fast_inverse = bool(fast_inverse)
        self.params = params if params is not None else KernelParams.default(self.X.shape[1])
        self._set_y(y)
        if fit:
            self.params = self._fit(gtol)
        self._factorise()

    # ------------------------------------------------------------------ targets
    def _set_y(self, y: np.ndarray) -> None:
        """The targets, the constant prior mean ``y_mean`` (their largest value or their mean,
        see the class docstring) and ``ys``: the targets less that mean, over their standard
        deviation."""
        y = np.asarray(y, dtype=float)
        self.y = y
        self.y_mean = float(y.max() if self.prior_mean == "max" else y.mean())
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
            # K⁻¹ is the fit's main cost at a few hundred points (``fast_inverse``)
            K_inv = (cho_inverse(L) if self.fast_inverse
                     else linalg.cho_solve((L, True), np.eye(n), check_finite=False))
        except linalg.LinAlgError:
            return 1e300, np.zeros_like(raw)
        alpha = linalg.cho_solve((L, True), y, check_finite=False)
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
        self.chol = L  # kept for :meth:`append_factored`
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

    def append_factored(self, X_new: np.ndarray, y: np.ndarray,
                        in_place: bool = False) -> "MaternGP":
        """:meth:`append`, with the Cholesky factor ``chol`` of the kernel matrix kept along
        (the GP must have one: built by the constructor or by this method). The Schur
        complement and ``K⁻¹B`` come from triangular solves with the factor, as a fresh
        factorisation computes its last rows, instead of from the explicit ``K⁻¹``: repeated
        block updates of ``K⁻¹`` amplify its rounding by the inverse of the Schur complement
        (small when a new point is well predicted, as a constant liar's next point often is), to
        1e-4 of the inverse after two updates on a 32-point GP with noise 5e-4; this way the
        error stays that of a fresh factorisation. O(n²m) for m points, as :meth:`append`.

        ``in_place``: the factor and ``K⁻¹`` grow inside buffers with room to spare, written in
        place, so that an append moves O(n·m) numbers besides the rank-m update of ``K⁻¹``
        instead of copying both matrices; this GP's ``K⁻¹`` is then changed too, and must not
        be used any more (for :class:`~.lies.KeptLies`, which keeps only the newest)."""
        X_new = np.atleast_2d(np.asarray(X_new, dtype=float))
        p, L, n, m = self.params, self.chol, len(self.X), len(X_new)
        B = p.scale * self._kernel(self.X, X_new, p)[0]  # (n, m)
        C = p.scale * self._kernel(X_new, X_new, p)[0]
        C[np.diag_indices(m)] += p.noise
        W = linalg.solve_triangular(L, B, lower=True, check_finite=False)  # L⁻¹B
        Lc = linalg.cholesky(C - W.T @ W, lower=True, check_finite=False)
        V = linalg.solve_triangular(L, W, lower=True, trans="T", check_finite=False)  # K⁻¹B
        S_inv = linalg.cho_solve((Lc, True), np.eye(m), check_finite=False)
        top = V @ S_inv
        new = self._copy()
        new.X = np.vstack([self.X, X_new])
        new._scaled = None
        buffers = getattr(self, "_buffers", None)
        if (not in_place or buffers is None or buffers[0].shape[0] < n + m
                or L.base is not buffers[0] or self.K_inv.base is not buffers[1]):
            cap = max(n + m, int(1.25 * (n + m)) + 16) if in_place else n + m
            chol_buf, inv_buf = np.zeros((cap, cap)), np.empty((cap, cap))
            chol_buf[:n, :n] = L
            inv_buf[:n, :n] = self.K_inv
        else:
            chol_buf, inv_buf = buffers
        chol_buf[n:n + m, :n] = W.T
        chol_buf[n:n + m, n:n + m] = Lc
        inv = inv_buf[:n, :n]
        inv += top @ V.T
        inv_buf[:n, n:n + m] = -top
        inv_buf[n:n + m, :n] = -top.T
        inv_buf[n:n + m, n:n + m] = S_inv
        new.chol = chol_buf[:n + m, :n + m]
        new.K_inv = inv_buf[:n + m, :n + m]
        new._buffers = (chol_buf, inv_buf) if in_place else None
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
        np.maximum(d2, 0.0, out=d2)
        if grad:
            M, dM = matern52(d2)
        else:
            M = matern52_value(d2)
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


class Fantasies:
    """A :class:`MaternGP`'s posterior at fixed points (the rows of ``X``: an acquisition
    search's candidates), conditioned on some of those points one at a time at believed
    values — the constant liar or kriging believer of a batch (Ginsbourger, Le Riche and
    Carraro, 2010) — by rank-one updates with the hyperparameters and the targets' scaling
    fixed.

    Conditioning on a point ``q`` at value ``v`` (noise ``σ_n²``) changes the posterior at
    every ``x`` by ``c(x, q)``, the posterior covariance: ``μ(x) += c(x, q)(v − μ(q))/s``,
    ``σ²(x) −= c(x, q)²/s`` with ``s = σ²(q) + σ_n²``, and later covariances by the same
    rank-one term. One update costs O(m·n) for ``m`` points and a GP on ``n``, where appending
    the point to the GP and predicting again costs O(m·n² + n²): what a batch of proposals
    from one search pays per point after the first. The first prediction costs as much as
    :meth:`MaternGP.predict`."""

    def __init__(self, gp: MaternGP, X: np.ndarray) -> None:
        X = np.atleast_2d(np.asarray(X, dtype=float))
        p = gp.params
        self.gp = gp
        self._A = X * np.sqrt(p.inv_sq_lengthscales)
        train = gp.X * np.sqrt(p.inv_sq_lengthscales)
        d2 = ((self._A * self._A).sum(1)[:, None] + (train * train).sum(1)[None, :]
              - 2.0 * (self._A @ train.T))
        self._k = p.scale * matern52(np.maximum(d2, 0.0))[0]  # (m, n)
        self._Kk = self._k @ gp.K_inv
        self._mean = self._k @ gp.alpha  # standardised units
        self._var = np.maximum(p.scale - (self._Kk * self._k).sum(1), 1e-30)
        self._updates: list[np.ndarray] = []

    def condition(self, q: int, value: float) -> None:
        """Condition on the ``q``-th point at ``value`` (target units)."""
        gp, p = self.gp, self.gp.params
        d2 = ((self._A - self._A[q]) ** 2).sum(1)
        c = p.scale * matern52(d2)[0] - self._Kk @ self._k[q]
        for u in self._updates:
            c -= u * u[q]
        # |c(x, q)| ≤ σ(x)·σ(q) (Cauchy–Schwarz): held where rounding would break it, as it
        # can next to points already in the GP, so the variances stay ≥ 0 and nothing grows
        var_q = float(self._var[q])
        bound = np.sqrt(self._var * var_q)
        s = math.sqrt(var_q + p.noise)
        u = np.clip(c, -bound, bound) / s
        believed = (float(value) - gp.y_mean) / gp.y_std
        self._mean = self._mean + u * (believed - self._mean[q]) / s
        self._var = np.maximum(self._var - u * u, 1e-30)
        self._updates.append(u)

    def predict(self) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and standard deviation (target units) at every point."""
        gp = self.gp
        return gp.y_mean + gp.y_std * self._mean, gp.y_std * np.sqrt(self._var)
