"""Gaussian-process numerics shared by the ``bo`` θ- and z-solvers and BAPI: pure functions on
arrays, no solver coupling. Laid out as Optuna's private ``optuna._gp`` package: the model, the
acquisition functions and their optimisation each in a module of its own.

* :mod:`.model`: :class:`MaternGP` (the θ-solver ``bo``), an ARD Matérn-5/2 GP in numpy around
  a constant prior mean at the worst observed value (De Ath et al., GECCO 2020), with
  *maximum a posteriori* hyperparameters under the priors of Optuna's GP sampler
  (:func:`log_prior`), analytic gradients and incremental updates; :func:`clean_targets`;
  :class:`Fantasies`, its posterior at fixed points conditioned on believed values one point at
  a time (a batch's constant liar by rank-one updates).
* :mod:`.sklearn_gp`: scikit-learn's ``GaussianProcessRegressor`` with
  ``ConstantKernel × Matern(ν=5/2, ARD) + WhiteKernel`` fitted by maximising the log marginal
  likelihood (:func:`fit_gp`; Liu et al. 2020, Appendix 3), for the z-solver ``bo`` and BAPI.
* :mod:`.acquisition`: log expected improvement, finite far from the incumbent (Ament et al.,
  NeurIPS 2023), with a known additive term — the ADMM penalty — added to the GP mean
  analytically: :class:`GPLogEI` (analytic gradients, for :class:`MaternGP`) and :class:`LogEI`
  (central differences, for scikit-learn's GP).
* :mod:`.optim`: candidates and :func:`maximize`, the L-BFGS-B polish of either acquisition
  (one run per start, or all starts in one vectorised run with ``batched=True``).
* :mod:`.lies`: :class:`KeptLies`, the GP of the observations with the pending points at the
  constant liar, kept from one ask to the next (only the point told and the point issued change).
* :mod:`.surrogate`: how the θ-solver ``bo`` feeds and sizes its GP (the rows a refit uses, the
  refit cadence, the candidate and start counts of an acquisition search, growing arrays).
* :mod:`.threads`: :func:`single_threaded_blas`.

Nothing here knows about ADMM problems: the solver passes arrays and a penalty callable.
"""

from .acquisition import (
    GPLogEI,
    LogEI,
    Penalty,
    expected_improvement,
    log_expected_improvement,
    log_h,
    penalty_gradient,
    penalty_rows,
    value_and_central_difference,
)
from .lies import KeptLies
from .model import (MIN_NOISE, PRIOR_MEANS, Fantasies, KernelParams, MaternGP, clean_targets,
                    log_prior, matern52)
from .optim import candidate_points, maximize, scored_candidates, sobol_points
from .sklearn_gp import default_kernel, fit_gp, fit_regressor, predict
from .threads import single_threaded_blas

__all__ = [
    "Fantasies",
    "GPLogEI",
    "KeptLies",
    "KernelParams",
    "LogEI",
    "MIN_NOISE",
    "MaternGP",
    "PRIOR_MEANS",
    "Penalty",
    "candidate_points",
    "clean_targets",
    "default_kernel",
    "expected_improvement",
    "fit_gp",
    "fit_regressor",
    "log_expected_improvement",
    "log_h",
    "log_prior",
    "matern52",
    "maximize",
    "penalty_gradient",
    "penalty_rows",
    "predict",
    "scored_candidates",
    "single_threaded_blas",
    "sobol_points",
    "value_and_central_difference",
]
