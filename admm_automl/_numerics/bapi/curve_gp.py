"""The objective surrogate GP_f over (x, t), monotone in the training length.

Sign convention: this package minimises, so the model is of the **loss** ``g(x, t)`` (validation
error, or the best-so-far validation loss), which is **non-increasing** in ``t``. The constraint
is ``∂g/∂t ≤ 0`` at the virtual points (Agrell's bounds ``a = −∞, b = 0``). This is Belakaria et
al.'s ``f = −g``, maximised with ``∂f/∂t ≥ 0``; every formula below is theirs with that sign.

The model (Belakaria et al. 2022, Sec. 3.3 and Appendix A):

* prior ``g ~ GP(m, s²·K_x(x, x')·K_t(t, t'))`` plus Gaussian noise, ``m`` the mean of the
  observed losses, targets standardised; hyperparameters by maximum marginal likelihood of the
  *unconstrained* model (the paper does not say how it fits them; the constrained likelihood
  ``P(Y)·P(C|Y)`` of Agrell 2019 would need the truncated-normal probability inside the
  optimiser), by scikit-learn's :class:`~sklearn.gaussian_process.GaussianProcessRegressor`;
* the monotone posterior of Agrell ("Gaussian processes with linear operator inequality
  constraints", JMLR 2019): condition on virtual observations ``C = ∂g/∂t(x*, t^v_j) ≤ 0``.

The approximation, stated (the paper leaves all four choices open):

1. **Virtual points per query configuration.** Every query configuration ``x*`` gets its own
   ``k`` virtual points ``(x*, t^v_j)``, and its posterior is computed under those alone (k×k
   solves, vectorised over configurations). ``t^v`` is evenly spaced on ``[t_min, 1]``: five
   points for the exponential-decay kernel (the paper uses two) and twenty for the RBF time
   kernel (the paper: spaced closer than the length scale); :mod:`.defaults` says why we use
   more than the paper.
2. **Moments, not samples.** The posterior mean and variance are those of the Gaussian mixture
   ``g* | Y, C``: ``E = μ_u + A(E[C̃] − m_C)`` and ``Var = Σ + A·Cov[C̃]·Aᵀ`` (notation of
   Belakaria et al., Appendix A), with the moments of the truncated normal ``C̃`` by expectation
   propagation (:mod:`.truncated`): deterministic and smooth in ``x``, so the acquisition can be
   polished by L-BFGS-B and a fixed seed gives fixed predictions.
3. **Joint covariance.** Per-configuration constraints do not define one joint Gaussian. For a
   batch (q-EI) we keep the unconstrained posterior *correlation* and rescale it to the
   constrained marginal standard deviations, ``D R D``: positive semi-definite, exact
   cross-correlations of the unconstrained model, and a batch of one has exactly the marginal
   used everywhere else (the spec's suggestion, the unconstrained covariance itself, would give a
   one-point q-EI different from the single-point EI).
4. The virtual observations carry a small noise variance (1e-6 in standardised units) so the
   k×k solves stay well conditioned.

With ``monotone=False`` the model is the plain GP with the same kernel: Belakaria et al.'s
ablation BAPI-NM.

From the GP core (:mod:`admm_automl._numerics.gp`) come the likelihood maximisation
(:func:`~admm_automl._numerics.gp.sklearn_gp.fit_regressor`) and the cleaning of the targets. The
rest is this model's own because its math differs: the kernel is a product of scikit-learn kernels
over (x, t) with the hyperparameter gradients the likelihood maximisation needs (the core's
``matern52`` is the numpy GP's correlation on squared distances expanded as
``|a|² + |b|² − 2a·b``, which rounds differently from scikit-learn's distances, so sharing it
would change every fitted model), and the Cholesky factor adds jitter when points close together
on one curve make the Gram matrix numerically singular (:func:`_cholesky`), where the core's
``MaternGP`` factorises without jitter and leaves a failure to the solver's fallback.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import linalg

from ...exceptions import InvalidParameterError
from .. import gp as _gp
from . import defaults
from .kernels import TIME_KERNELS, X_KERNELS, curve_kernel, kernel_parts
from .truncated import truncated_normal_moments


@dataclass(frozen=True)
class Marginals:
    """Posterior marginals of the loss at rows ``(X[i], t[i])``, and what cross-covariances need.

    ``mean`` and ``std`` are in loss units; ``std`` is the latent standard deviation (no
    observation noise), constrained when the model is monotone.
    """

    X: np.ndarray
    t: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    whitened: np.ndarray  # L⁻¹ K(Z, rows), standardised units, shape (n, m)
    ratio: np.ndarray  # constrained / unconstrained standard deviation, shape (m,)


class LearningCurveGP:
    """GP_f: a Gaussian process on ``(x, t)`` for the loss, monotone (non-increasing) in ``t``.

    Parameters
    ----------
    monotone : bool, default=True
        Condition on ``∂g/∂t ≤ 0`` at virtual points (BAPI); ``False`` gives the plain GP
        (the ablation BAPI-NM).
    time_kernel : {"ed", "rbf"}, default="ed"
        Exponential decay (for decaying learning curves, the paper's choice for supervised
        learners) or RBF in ``t``.
    x_kernel : {"matern52", "rbf"}, default="matern52"
        ARD kernel on the configuration. Matérn-5/2 as in our ``bo`` solver (Snoek et al. 2012);
        the paper allows RBF or Matérn without saying which it used.
    t_min : float, default=0.2
        Smallest training fraction of interest (the first check, ``p / t_max``): the first
        virtual point. Belakaria et al. space the points evenly in ``t`` without naming the range.
    n_virtual : int or None, default=None
        Virtual points per configuration; ``None`` chooses by kernel (5 for ED, 20 for RBF).
    n_restarts : int, default=1
        Extra random starts of the marginal-likelihood maximisation (drawn from ``rng`` in
        :meth:`fit`).

    Attributes
    ----------
    kernel_ : sklearn kernel
        The fitted kernel ``s²·K_x·K_t + noise`` (standardised targets).
    t_virtual_ : ndarray of shape (k,)
        Training fractions of the virtual points.
    X_, t_, y_ : ndarray
        The data the model is conditioned on (``y_`` in loss units).
    """

    def __init__(
        self,
        *,
        monotone: bool = True,
        time_kernel: str = "ed",
        x_kernel: str = "matern52",
        t_min: float = defaults.CHECK_FRACTION,
        n_virtual: int | None = None,
        n_restarts: int = defaults.GP_RESTARTS,
    ):
        if time_kernel not in TIME_KERNELS:
            raise InvalidParameterError(
                f"time_kernel must be one of {TIME_KERNELS}, got {time_kernel!r}"
            )
        if x_kernel not in X_KERNELS:
            raise InvalidParameterError(f"x_kernel must be one of {X_KERNELS}, got {x_kernel!r}")
        self.monotone = bool(monotone)
        self.time_kernel = time_kernel
        self.x_kernel = x_kernel
        self.t_min = defaults.check_real(t_min, "t_min", low=0.0, high=1.0, low_open=True)
        self.n_virtual = (
            None if n_virtual is None else defaults.check_int(n_virtual, "n_virtual", low=1)
        )
        self.n_restarts = defaults.check_int(n_restarts, "n_restarts", low=0)

    # ------------------------------------------------------------------------- fitting
    def fit(
        self,
        X: np.ndarray,
        t: np.ndarray,
        y: np.ndarray,
        *,
        rng: np.random.Generator | None = None,
        optimize: bool = True,
    ) -> LearningCurveGP:
        """Fit the hyperparameters to ``(X, t, y)`` and condition on the data.

        The maximisation starts from the previous fit's hyperparameters when there is one (a
        warm start, as in the ``bo`` solver), plus ``n_restarts`` random starts drawn from
        ``rng``. ``optimize=False`` keeps the current (or default) hyperparameters. Non-finite
        losses are replaced by the worst finite one
        (:func:`admm_automl._numerics.gp.model.clean_targets`).
        """
        X = defaults.as_configurations(X)
        t = defaults.as_lengths(t, len(X))
        y = np.asarray(y, dtype=float).reshape(-1)
        if len(X) == 0 or y.shape != (len(X),):
            raise InvalidParameterError(
                f"fit needs at least one point and one loss per row: X has {len(X)} rows, "
                f"y has shape {y.shape}"
            )
        clean = _gp.clean_targets(y)
        if clean is None:
            raise InvalidParameterError("fit needs at least one finite loss, got none")
        dim = X.shape[1]
        start = getattr(self, "kernel_", None)
        if start is None or kernel_parts(start)[1].length_scale.size != dim:
            start = curve_kernel(dim, x_kernel=self.x_kernel, time_kernel=self.time_kernel)
        self.y_mean_ = float(clean.mean())
        spread = float(clean.std())
        self.y_scale_ = spread if spread > 1e-12 else 1.0
        inputs = np.column_stack([X, t])
        if optimize:
            if self.n_restarts > 0 and rng is None:
                raise InvalidParameterError("fit needs rng (a numpy Generator) for n_restarts > 0")
            start = self._maximise_likelihood(
                inputs, (clean - self.y_mean_) / self.y_scale_, start, rng
            )
        self.kernel_ = start
        self._condition(X, t, clean)
        return self

    def _maximise_likelihood(self, inputs, targets, start, rng):
        """The kernel that maximises the marginal likelihood of the standardised ``targets``
        (the GP core's scikit-learn fit, without its own normalisation: the scaling is ours)."""
        seed = None if rng is None else int(rng.integers(2**32 - 1))
        gp = _gp.fit_regressor(inputs, targets, start, normalize_y=False,
                               n_restarts=self.n_restarts, random_state=seed)
        return gp.kernel_

    def with_points(self, X: np.ndarray, t: np.ndarray, y: np.ndarray) -> LearningCurveGP:
        """A new model conditioned on the current data plus ``(X, t, y)``, hyperparameters and
        target scaling unchanged (Belakaria et al.'s re-estimation during an evaluation)."""
        self._check_fitted()
        X = defaults.as_configurations(X, dim=self.X_.shape[1])
        t = defaults.as_lengths(t, len(X))
        y = np.asarray(y, dtype=float).reshape(-1)
        if y.shape != (len(X),) or not np.all(np.isfinite(y)):
            raise InvalidParameterError(f"y must be {len(X)} finite losses, got {y!r}")
        model = LearningCurveGP(
            monotone=self.monotone,
            time_kernel=self.time_kernel,
            x_kernel=self.x_kernel,
            t_min=self.t_min,
            n_virtual=self.n_virtual,
            n_restarts=self.n_restarts,
        )
        model.kernel_, model.y_mean_, model.y_scale_ = self.kernel_, self.y_mean_, self.y_scale_
        model._condition(
            np.vstack([self.X_, X]), np.concatenate([self.t_, t]), np.concatenate([self.y_, y])
        )
        return model

    def _condition(self, X: np.ndarray, t: np.ndarray, y: np.ndarray) -> None:
        """Factorise ``K + σ²I`` for the data and set the virtual points."""
        self.signal_var_, self.x_part_, self.t_part_, self.noise_var_ = kernel_parts(self.kernel_)
        self.X_, self.t_, self.y_ = X, t, y
        self.inputs_ = np.column_stack([X, t])
        gram = self._prior_cross(X, t)[0][:, 0, :] + (self.noise_var_ + 1e-10) * np.eye(len(X))
        self.chol_ = _cholesky(gram)
        self.weights_ = linalg.cho_solve((self.chol_, True), (y - self.y_mean_) / self.y_scale_)
        k = self.n_virtual
        if k is None:
            k = defaults.N_VIRTUAL_ED if self.time_kernel == "ed" else defaults.N_VIRTUAL_RBF
        self.t_virtual_ = np.linspace(self.t_min, 1.0, k) if k > 1 else np.array([1.0])
        self.derivative_prior_ = self.signal_var_ * self.t_part_.time_d12(
            self.t_virtual_, self.t_virtual_
        ) + defaults.VIRTUAL_NOISE * np.eye(k)

    def _check_fitted(self) -> None:
        if not hasattr(self, "chol_"):
            raise InvalidParameterError("the model is not fitted yet: call fit first")

    # ------------------------------------------------------------------------- posterior
    def _prior_cross(self, X: np.ndarray, T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``s²·K_x(X_i, X_l)·K_t(T_ig, t_l)`` for the data rows ``l`` (shape (m, g, n)), and
        ``K_x(X_i, X_l)`` (shape (m, n))."""
        T = np.asarray(T, dtype=float).reshape(len(X), -1)
        kx = self.x_part_(np.column_stack([X, np.zeros(len(X))]), self.inputs_)
        kt = self.t_part_.time_value(T.ravel(), self.t_).reshape((*T.shape, len(self.t_)))
        return self.signal_var_ * kx[:, None, :] * kt, kx

    def _posterior(self, X: np.ndarray, T: np.ndarray):
        """Latent posterior at ``(X_i, T_ig)`` in standardised units.

        Returns ``mean (m, g)``, ``var (m, g)``, the unconstrained ``var (m, g)`` and
        ``W = L⁻¹ K(Z, rows)`` of shape (n, m·g).
        """
        m, g = T.shape
        n = len(self.t_)
        cross, kx = self._prior_cross(X, T)
        mean = cross @ self.weights_
        W = linalg.solve_triangular(
            self.chol_, cross.reshape(m * g, n).T, lower=True, check_finite=False
        )
        prior_var = self.signal_var_ * self.t_part_.diag(T.reshape(-1, 1)).reshape(m, g)
        var_u = np.maximum(prior_var - np.einsum("ij,ij->j", W, W).reshape(m, g), 0.0)
        if not self.monotone:
            return mean, var_u, var_u, W
        k = len(self.t_virtual_)
        # Cov(C_ij, y_l) = s² K_x(x_i, x_l) ∂K_t(t_l, t^v_j)/∂t^v_j
        G = (
            self.signal_var_
            * kx[:, None, :]
            * self.t_part_.time_d2(self.t_, self.t_virtual_).T[None]
        )
        V = linalg.solve_triangular(
            self.chol_, G.reshape(m * k, n).T, lower=True, check_finite=False
        )
        V = V.reshape(n, m, k)
        m_c = G @ self.weights_  # (m, k): unconstrained posterior mean of C
        B1 = self.derivative_prior_[None] - np.einsum("nmi,nmj->mij", V, V)
        # B3 = Cov(g(x_i, T_ig), C_i | Y)
        B3 = self.signal_var_ * self.t_part_.time_d2(T.ravel(), self.t_virtual_).reshape(m, g, k)
        B3 = B3 - np.einsum("nmg,nmk->mgk", W.reshape(n, m, g), V)
        A = np.swapaxes(np.linalg.solve(B1, np.swapaxes(B3, 1, 2)), 1, 2)  # B3 B1⁻¹
        c_mean, c_cov = truncated_normal_moments(m_c, B1, 0.0)
        mean = mean + np.einsum("mgk,mk->mg", A, c_mean - m_c)
        var = var_u - np.einsum("mgk,mgk->mg", A, B3) + np.einsum("mgk,mkl,mgl->mg", A, c_cov, A)
        return mean, np.maximum(var, 0.0), var_u, W

    def predict_curves(
        self, X: np.ndarray, t_grid: np.ndarray, *, include_noise: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation of the loss of every configuration on a grid of lengths.

        Returns two arrays of shape ``(len(X), len(t_grid))`` in loss units; ``include_noise``
        adds the observation noise (the predictive distribution of a measured loss).
        """
        self._check_fitted()
        X = defaults.as_configurations(X, dim=self.X_.shape[1])
        grid = defaults.as_lengths(t_grid, np.size(t_grid), "t_grid")
        T = np.broadcast_to(grid, (len(X), grid.size))
        mean, var, _, _ = self._posterior(X, T)
        if include_noise:
            var = var + self.noise_var_
        return self.y_mean_ + self.y_scale_ * mean, self.y_scale_ * np.sqrt(var)

    def predict(
        self, X: np.ndarray, t: float | np.ndarray, *, include_noise: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation of the loss at the rows ``(X[i], t[i])`` (shape (m,))."""
        rows = self.marginals(X, t, include_noise=include_noise)
        return rows.mean, rows.std

    def marginals(
        self, X: np.ndarray, t: float | np.ndarray, *, include_noise: bool = False
    ) -> Marginals:
        """Posterior marginals at ``(X[i], t[i])`` with what :meth:`cross_covariance` needs."""
        self._check_fitted()
        X = defaults.as_configurations(X, dim=self.X_.shape[1])
        t = defaults.as_lengths(t, len(X))
        mean, var, var_u, W = self._posterior(X, t[:, None])
        mean, var, var_u = mean[:, 0], var[:, 0], var_u[:, 0]
        ratio = np.where(var_u > 1e-300, np.sqrt(var / np.maximum(var_u, 1e-300)), 1.0)
        if include_noise:
            var = var + self.noise_var_
        return Marginals(
            X=X,
            t=t,
            mean=self.y_mean_ + self.y_scale_ * mean,
            std=self.y_scale_ * np.sqrt(var),
            whitened=W,
            ratio=ratio,
        )

    def cross_covariance(self, a: Marginals, b: Marginals) -> np.ndarray:
        """Latent posterior covariance between the rows of ``a`` and ``b`` (loss units).

        The unconstrained posterior covariance rescaled to the constrained marginals (choice 3 of
        the module docstring): ``Cov_ij = U_ij · r^a_i · r^b_j`` with ``r`` the ratio of the
        constrained to the unconstrained standard deviation.
        """
        kx = self.x_part_(np.column_stack([a.X, a.t]), np.column_stack([b.X, b.t]))
        kt = self.t_part_.time_value(a.t, b.t)
        unconstrained = self.signal_var_ * kx * kt - a.whitened.T @ b.whitened
        return self.y_scale_**2 * unconstrained * a.ratio[:, None] * b.ratio[None, :]

    def joint(self, X: np.ndarray, t: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean (m,) and joint latent covariance (m, m) of the loss at the rows."""
        rows = self.marginals(X, t)
        cov = self.cross_covariance(rows, rows)
        np.fill_diagonal(cov, rows.std**2)
        return rows.mean, 0.5 * (cov + cov.T)

    def latent_covariance(self, X: np.ndarray, t: float | np.ndarray) -> np.ndarray:
        """Unconstrained joint posterior covariance of the latent loss at the rows (loss units).

        It does not depend on observed losses; the curve-point rule uses it.
        """
        self._check_fitted()
        X = defaults.as_configurations(X, dim=self.X_.shape[1])
        t = defaults.as_lengths(t, len(X))
        kx = self.x_part_(np.column_stack([X, t]), np.column_stack([X, t]))
        W = linalg.solve_triangular(
            self.chol_, self._prior_cross(X, t)[0][:, 0, :].T, lower=True, check_finite=False
        )
        cov = self.signal_var_ * kx * self.t_part_.time_value(t, t) - W.T @ W
        return self.y_scale_**2 * 0.5 * (cov + cov.T)

    @property
    def noise_std_(self) -> float:
        """Standard deviation of the observation noise, loss units."""
        return self.y_scale_ * math.sqrt(self.noise_var_)


def _cholesky(gram: np.ndarray) -> np.ndarray:
    """Lower Cholesky factor, adding jitter (1e-8 … 1e-4 of the mean diagonal) if needed."""
    scale = float(np.mean(np.diag(gram)))
    for jitter in (0.0, 1e-8, 1e-6, 1e-4):
        try:
            return linalg.cholesky(
                gram + jitter * scale * np.eye(len(gram)), lower=True, check_finite=False
            )
        except linalg.LinAlgError:
            continue
    raise InvalidParameterError("the kernel matrix of the objective GP is not positive definite")
