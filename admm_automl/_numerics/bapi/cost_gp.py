"""The cost surrogate GP_c: what training a configuration for a given length costs.

Belakaria et al. (2022, Sec. 3.3) model the cost with the product kernel
``K_c = K_RBF(x, x') · t·t'`` (RBF in the configuration, linear in the training length): costs
differ between configurations and grow linearly with the number of iterations. With that kernel
the model is exactly ``c(x, t) = t · r(x)`` with a GP ``r`` on the configuration, the cost per
unit of training fraction, so we regress the observed rates ``c_i / t_i`` on ``x_i``.

One change, stated: we model the **logarithm** of the rate. Wall-clock rates of scikit-learn
learners span orders of magnitude across configurations (hidden units, batch size, number of
leaves); a GP on the raw rate would predict negative costs and let the slowest configurations
dominate the fit, while on the log scale the noise is a relative error, the same for fast and
slow learners. The rate predicted is the log-normal mean ``exp(μ + σ²/2)``, the expected cost,
so an uncertain configuration counts as more expensive when the horizon is planned. The GP is
scikit-learn's, with ``ConstantKernel × ARD RBF + WhiteKernel`` on normalised targets, fitted by
maximum marginal likelihood (:func:`admm_automl._numerics.gp.sklearn_gp.fit_gp`).
"""

from __future__ import annotations

import math

import numpy as np

from ...exceptions import InvalidParameterError
from .. import gp as _gp
from . import defaults


class CostGP:
    """GP_c: ``cost(x, t) = t · r(x)`` with ``log r`` a Gaussian process on the configuration.

    Parameters
    ----------
    n_restarts : int, default=1
        Extra random starts of the marginal-likelihood maximisation (drawn from ``rng``).

    Attributes
    ----------
    median_cost_ : float
        Median of the observed costs (the selection rule floors predicted costs with it).
    kernel_ : sklearn kernel or None
        The fitted kernel; ``None`` when the rates could not be told apart (one point, or all
        equal), in which case every configuration gets their common rate.
    """

    def __init__(self, *, n_restarts: int = 1):
        self.n_restarts = defaults.check_int(n_restarts, "n_restarts", low=0)

    def fit(
        self,
        X: np.ndarray,
        t: np.ndarray,
        cost: np.ndarray,
        *,
        rng: np.random.Generator | None = None,
    ) -> CostGP:
        """Fit to observed cumulative costs ``cost[i]`` of training ``X[i]`` to length ``t[i]``.

        Costs must be finite and non-negative; a zero cost (below the timer's resolution) is
        raised to a millionth of the largest rate before the logarithm.
        """
        X = defaults.as_configurations(X)
        t = defaults.as_lengths(t, len(X))
        cost = np.asarray(cost, dtype=float).reshape(-1)
        if len(X) == 0 or cost.shape != (len(X),):
            raise InvalidParameterError(
                f"fit needs at least one cost and one per row: X has {len(X)} rows, cost has "
                f"shape {cost.shape}"
            )
        if not np.all(np.isfinite(cost)) or np.any(cost < 0):
            raise InvalidParameterError(f"costs must be finite and >= 0, got {cost!r}")
        rate = cost / t
        floor = max(float(rate.max()) * 1e-6, 1e-12)
        log_rate = np.log(np.maximum(rate, floor))
        self.dim_ = X.shape[1]
        self.median_cost_ = float(np.median(cost))
        self.log_rate_ = float(log_rate.mean())
        start = getattr(self, "kernel_", None)  # warm start from the previous fit
        self.kernel_ = self.gp_ = None
        if len(X) > 1 and log_rate.std() > 1e-9:
            if self.n_restarts > 0 and rng is None:
                raise InvalidParameterError("fit needs rng (a numpy Generator) for n_restarts > 0")
            if start is None or start.k1.k2.length_scale.size != self.dim_:
                start = _cost_kernel(self.dim_)
            self.gp_, self.kernel_ = _gp.fit_gp(
                X,
                log_rate,
                kernel=start,
                n_restarts=self.n_restarts,
                random_state=None if rng is None else int(rng.integers(2**32 - 1)),
            )
        return self

    def rate(self, X: np.ndarray) -> np.ndarray:
        """Expected cost per unit of training fraction, ``E[r(x)] = exp(μ + σ²/2)``, shape (m,)."""
        if not hasattr(self, "dim_"):
            raise InvalidParameterError("the cost model is not fitted yet: call fit first")
        X = defaults.as_configurations(X, dim=self.dim_)
        if self.gp_ is None:
            return np.full(len(X), math.exp(self.log_rate_))
        mean, std = _gp.predict(self.gp_, X)
        return np.exp(mean + 0.5 * std**2)

    def predict_cost(
        self, X: np.ndarray, t_to: float | np.ndarray, t_from: float | np.ndarray = 0.0
    ) -> np.ndarray:
        """Expected cost of training ``X[i]`` from length ``t_from[i]`` on to ``t_to[i]``.

        ``(t_to − t_from)⁺ · E[r(x)]``: continuing a partly trained model costs only the extra
        iterations (Belakaria et al., Sec. 3.4); nothing is charged when ``t_to ≤ t_from``.
        """
        rate = self.rate(X)
        t_to = defaults.as_lengths(t_to, len(rate), "t_to")
        t_from = np.broadcast_to(np.asarray(t_from, dtype=float), rate.shape)
        if not np.all((t_from >= 0.0) & (t_from <= 1.0)):
            raise InvalidParameterError(f"t_from must lie in [0, 1], got {t_from!r}")
        return np.maximum(t_to - t_from, 0.0) * rate


def full_training_cost(costs: np.ndarray, fractions: np.ndarray) -> float | None:
    """The median over configurations of the cost of training one to ``t_max``, each observed
    ``cost`` scaled up from the ``fraction`` of ``t_max`` it was trained to (cost linear in ``t``,
    as GP_c models it); ``None`` without any observation."""
    if len(costs) == 0:
        return None
    return float(np.median(np.asarray(costs, dtype=float) / np.asarray(fractions, dtype=float)))


def _cost_kernel(dim: int):
    """``ConstantKernel × ARD RBF + WhiteKernel`` (RBF on the configuration, as the paper says)."""
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    return ConstantKernel(1.0, (1e-3, 1e3)) * RBF(np.ones(dim), (1e-2, 1e2)) + WhiteKernel(
        1e-2, (1e-6, 1.0)
    )
