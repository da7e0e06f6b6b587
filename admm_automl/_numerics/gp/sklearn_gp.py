"""scikit-learn's Gaussian process, set up once for every solver that uses it.

:class:`~sklearn.gaussian_process.GaussianProcessRegressor` with
``ConstantKernel × Matern(ν=5/2, ARD) + WhiteKernel`` and normalised targets, fitted by maximising
the log marginal likelihood (Liu et al. 2020, Appendix 3; the same default as scikit-optimize's
``cook_estimator``): the surrogate of the z-solver ``bo`` and of BAPI's cost model
(:func:`fit_gp`), and the likelihood maximisation of BAPI's learning-curve GP
(:func:`fit_regressor`, on its own product kernel and standardised targets).
"""

from __future__ import annotations

import warnings

import numpy as np

#: the WhiteKernel's level in ``ConstantKernel × K + WhiteKernel``
_NOISE_PARAM = "k2__noise_level"


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


def fit_regressor(
    X: np.ndarray,
    y: np.ndarray,
    kernel,
    *,
    normalize_y: bool = True,
    optimize_hyperparameters: bool = True,
    n_restarts: int = 2,
    random_state: int | None = None,
):
    """A :class:`~sklearn.gaussian_process.GaussianProcessRegressor` fitted to ``(X, y)`` from
    ``kernel`` (L-BFGS-B on the log marginal likelihood, ``n_restarts`` further starts drawn
    log-uniformly within the bounds from ``random_state``; none with
    ``optimize_hyperparameters=False``), its convergence warnings silenced: a start that stops at
    its iteration limit is still a fit, and the restarts keep the best one.

    ``normalize_y=False`` is for targets the caller has standardised itself (BAPI's curve GP
    keeps the scaling fixed across refits). The fitted kernel is ``gp.kernel_``, noise included.
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.gaussian_process import GaussianProcessRegressor

    gp = GaussianProcessRegressor(
        kernel=kernel,
        normalize_y=normalize_y,
        optimizer="fmin_l_bfgs_b" if optimize_hyperparameters else None,
        n_restarts_optimizer=int(n_restarts) if optimize_hyperparameters else 0,
        random_state=random_state,
        alpha=1e-10,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        gp.fit(X, y)
    return gp


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
    fitted at the previous step, a warm start; :func:`default_kernel` when ``None``);
    ``n_restarts`` further starts are drawn log-uniformly within the bounds from
    ``random_state``. With ``optimize_hyperparameters=False`` the kernel's hyperparameters are
    used as they are (cheap refits for constant-liar batches).

    ``fitted_kernel`` keeps the fitted noise level (reuse it as ``kernel`` next time); the returned
    ``gp`` predicts the *latent* function: the WhiteKernel's level is zeroed after fitting, so the
    predictive standard deviation excludes observation noise (as scikit-optimize does). The
    training solve (``alpha_``, ``L_``) keeps the noise.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if kernel is None:
        kernel = default_kernel(X.shape[1])
    gp = fit_regressor(X, y, kernel, optimize_hyperparameters=optimize_hyperparameters,
                       n_restarts=n_restarts, random_state=random_state)
    fitted = gp.kernel_.clone_with_theta(gp.kernel_.theta)
    gp.kernel_.set_params(**{_NOISE_PARAM: 0.0})
    return gp, fitted


def predict(gp, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and standard deviation of the latent function at the rows of ``X``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Predicted variances smaller than 0" -> clipped to 0
        mean, std = gp.predict(np.atleast_2d(X), return_std=True)
    return np.asarray(mean, dtype=float), np.asarray(std, dtype=float)
