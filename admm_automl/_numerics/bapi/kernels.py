"""Kernels of the objective surrogate over (x, t): scikit-learn kernels that read their columns.

The inputs of the objective GP are rows ``[x_1, …, x_d, t]``: a configuration in the unit box and,
in the **last column**, the training length ``t = iterations / t_max`` in (0, 1]. The product
kernel of Belakaria et al. (2022) is

    K([x, t], [x', t']) = s² · K_x(x, x') · K_t(t, t'),

built from scikit-learn kernels so that :class:`~sklearn.gaussian_process.GaussianProcessRegressor`
fits the hyperparameters by maximum marginal likelihood. scikit-learn kernels act on every column,
so the two factors here are thin subclasses that slice their own columns: the configuration
kernels (:class:`ConfigurationMatern`, :class:`ConfigurationRBF`) read all columns but the last,
the time kernels (:class:`ExponentialDecay`, :class:`TimeRBF`) only the last one. The time kernels
also give the derivatives that the monotonicity constraint needs (``∂K_t/∂t'`` and
``∂²K_t/∂t∂t'``, Belakaria et al. 2022, Appendix A, with the two typos of their Eqs. 26 and 28
corrected: the RBF first derivative divides by ℓ², the second has ``(t − t')²``).
"""

from __future__ import annotations

import numpy as np
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    Hyperparameter,
    Kernel,
    Matern,
    WhiteKernel,
)

from ...exceptions import InvalidParameterError

#: time kernels by name: ``"ed"`` (exponential decay, for decaying learning curves) and ``"rbf"``
TIME_KERNELS = ("ed", "rbf")
#: configuration kernels by name
X_KERNELS = ("matern52", "rbf")


class ConfigurationMatern(Matern):
    """scikit-learn's :class:`~sklearn.gaussian_process.kernels.Matern` on all columns but the last
    (the configuration ``x``; the last column is the training length)."""

    def __call__(self, X, Y=None, eval_gradient=False):
        return super().__call__(X[:, :-1], None if Y is None else Y[:, :-1], eval_gradient)

    def diag(self, X):
        return np.ones(X.shape[0])


class ConfigurationRBF(RBF):
    """scikit-learn's :class:`~sklearn.gaussian_process.kernels.RBF` on all columns but the
    last."""

    def __call__(self, X, Y=None, eval_gradient=False):
        return super().__call__(X[:, :-1], None if Y is None else Y[:, :-1], eval_gradient)

    def diag(self, X):
        return np.ones(X.shape[0])


class TimeRBF(RBF):
    """An RBF kernel ``exp(−(t − t')²/(2ℓ²))`` on the last column (the training length).

    Belakaria et al. (2022) use it for curves that are monotone but not decaying (reinforcement
    learning rewards); it needs more virtual points than the exponential-decay kernel.
    """

    def __call__(self, X, Y=None, eval_gradient=False):
        return super().__call__(X[:, -1:], None if Y is None else Y[:, -1:], eval_gradient)

    def diag(self, X):
        return np.ones(X.shape[0])

    def time_value(self, ta: np.ndarray, tb: np.ndarray) -> np.ndarray:
        """``K_t(ta_i, tb_j)`` for 1-d arrays of training lengths."""
        diff = np.subtract.outer(np.asarray(ta, float), np.asarray(tb, float))
        return np.exp(-0.5 * diff**2 / self.length_scale**2)

    def time_d2(self, ta: np.ndarray, tb: np.ndarray) -> np.ndarray:
        """``∂K_t(ta_i, tb_j)/∂tb_j = (ta − tb)/ℓ² · K_t``: ``Cov(f(ta), ∂f(tb)/∂t)``."""
        diff = np.subtract.outer(np.asarray(ta, float), np.asarray(tb, float))
        ell2 = self.length_scale**2
        return diff / ell2 * np.exp(-0.5 * diff**2 / ell2)

    def time_d12(self, ta: np.ndarray, tb: np.ndarray) -> np.ndarray:
        """``∂²K_t/∂ta∂tb = (1/ℓ²)(1 − (ta − tb)²/ℓ²) · K_t``: ``Cov(∂f(ta)/∂t, ∂f(tb)/∂t)``."""
        diff = np.subtract.outer(np.asarray(ta, float), np.asarray(tb, float))
        ell2 = self.length_scale**2
        return (1.0 - diff**2 / ell2) / ell2 * np.exp(-0.5 * diff**2 / ell2)


class ExponentialDecay(Kernel):
    """The exponential-decay kernel of freeze-thaw BO on the last column (the training length).

    ``K_t(t, t') = w + (1 + (t + t')/β)^(−α)`` with α, β > 0 and w ≥ 0 (Swersky, Snoek, Adams,
    "Freeze-Thaw Bayesian Optimization", 2014, in the form of Belakaria et al. 2022, Appendix A).
    The second term is ``∫ e^{−λt} e^{−λt'} Gamma(λ; α, β) dλ`` up to a constant, a mixture of
    exponentially decaying curves, and is therefore positive definite; the constant ``w`` gives
    each configuration its own asymptote. Its variance falls with ``t``: a curve is most uncertain
    early and settles as it converges.

    Bounds (the paper is silent; ``t`` lives in (0, 1]): α in [0.01, 100], β in [0.001, 10] (a
    curve may decay within a thousandth of ``t_max`` or barely at all), w in [1e-4, 100] relative
    to the decaying part. Hyperparameters are fitted in log space, as every scikit-learn kernel.
    """

    def __init__(
        self,
        alpha: float = 1.0,
        beta: float = 0.2,
        offset: float = 1.0,
        alpha_bounds=(1e-2, 1e2),
        beta_bounds=(1e-3, 1e1),
        offset_bounds=(1e-4, 1e2),
    ):
        self.alpha = alpha
        self.beta = beta
        self.offset = offset
        self.alpha_bounds = alpha_bounds
        self.beta_bounds = beta_bounds
        self.offset_bounds = offset_bounds

    @property
    def hyperparameter_alpha(self):
        return Hyperparameter("alpha", "numeric", self.alpha_bounds)

    @property
    def hyperparameter_beta(self):
        return Hyperparameter("beta", "numeric", self.beta_bounds)

    @property
    def hyperparameter_offset(self):
        return Hyperparameter("offset", "numeric", self.offset_bounds)

    def __call__(self, X, Y=None, eval_gradient=False):
        X = np.atleast_2d(X)
        if Y is not None and eval_gradient:
            raise ValueError("Gradient can only be evaluated when Y is None.")
        ta = X[:, -1]
        tb = ta if Y is None else np.atleast_2d(Y)[:, -1]
        total = np.add.outer(ta, tb)
        u = 1.0 + total / self.beta
        decay = u ** (-self.alpha)
        K = self.offset + decay
        if not eval_gradient:
            return K
        grads = []  # with respect to the logarithms, in the order of self.hyperparameters
        if not self.hyperparameter_alpha.fixed:
            grads.append(-self.alpha * np.log(u) * decay)
        if not self.hyperparameter_beta.fixed:
            grads.append(self.alpha * total / self.beta * decay / u)
        if not self.hyperparameter_offset.fixed:
            grads.append(np.full_like(K, self.offset))
        return K, (np.stack(grads, axis=-1) if grads else np.empty((*K.shape, 0)))

    def diag(self, X):
        t = np.atleast_2d(X)[:, -1]
        return self.offset + (1.0 + 2.0 * t / self.beta) ** (-self.alpha)

    def is_stationary(self):
        return False

    def time_value(self, ta: np.ndarray, tb: np.ndarray) -> np.ndarray:
        """``K_t(ta_i, tb_j)`` for 1-d arrays of training lengths."""
        u = 1.0 + np.add.outer(np.asarray(ta, float), np.asarray(tb, float)) / self.beta
        return self.offset + u ** (-self.alpha)

    def time_d2(self, ta: np.ndarray, tb: np.ndarray) -> np.ndarray:
        """``∂K_t(ta_i, tb_j)/∂tb_j = −(α/β) u^(−α−1)``: ``Cov(f(ta), ∂f(tb)/∂t)``."""
        u = 1.0 + np.add.outer(np.asarray(ta, float), np.asarray(tb, float)) / self.beta
        return -(self.alpha / self.beta) * u ** (-self.alpha - 1.0)

    def time_d12(self, ta: np.ndarray, tb: np.ndarray) -> np.ndarray:
        """``∂²K_t/∂ta∂tb = α(α+1)/β² · u^(−α−2)``: ``Cov(∂f(ta)/∂t, ∂f(tb)/∂t)``."""
        u = 1.0 + np.add.outer(np.asarray(ta, float), np.asarray(tb, float)) / self.beta
        return self.alpha * (self.alpha + 1.0) / self.beta**2 * u ** (-self.alpha - 2.0)

    def __repr__(self):
        return (
            f"{type(self).__name__}(alpha={self.alpha:.3g}, beta={self.beta:.3g}, "
            f"offset={self.offset:.3g})"
        )


def curve_kernel(dim: int, *, x_kernel: str = "matern52", time_kernel: str = "ed") -> Kernel:
    """The starting kernel ``s² · K_x · K_t + noise`` for ``dim`` configuration columns plus ``t``.

    ``K_x`` is ARD (one length scale per coordinate, bounds 0.01-100 as in the ``bo`` solver);
    ``s²`` in [1e-3, 1e3] for standardised targets; the noise variance in [1e-6, 1] (the lower
    bound keeps the solves stable when points of one curve lie close together; Belakaria et al.
    are silent on the noise model). The structure is fixed: :func:`kernel_parts` reads it back.
    """
    if x_kernel not in X_KERNELS:
        raise InvalidParameterError(f"x_kernel must be one of {X_KERNELS}, got {x_kernel!r}")
    if time_kernel not in TIME_KERNELS:
        raise InvalidParameterError(
            f"time_kernel must be one of {TIME_KERNELS}, got {time_kernel!r}"
        )
    scales = np.ones(dim)
    if x_kernel == "matern52":
        kx: Kernel = ConfigurationMatern(
            length_scale=scales, length_scale_bounds=(1e-2, 1e2), nu=2.5
        )
    else:
        kx = ConfigurationRBF(length_scale=scales, length_scale_bounds=(1e-2, 1e2))
    kt: Kernel = (
        ExponentialDecay()
        if time_kernel == "ed"
        else TimeRBF(0.3, length_scale_bounds=(1e-2, 1e1))
    )
    return ConstantKernel(1.0, (1e-3, 1e3)) * kx * kt + WhiteKernel(1e-4, (1e-6, 1.0))


def kernel_parts(kernel: Kernel) -> tuple[float, Kernel, Kernel, float]:
    """``(s², K_x, K_t, noise variance)`` of a kernel built by :func:`curve_kernel`."""
    product, white = kernel.k1, kernel.k2
    scaled_x, kt = product.k1, product.k2
    return float(scaled_x.k1.constant_value), scaled_x.k2, kt, float(white.noise_level)
