"""Numerical core of BAPI, budget-aware planning for iterative learners (Belakaria, Doppa, Fusi,
Sheth, "Bayesian Optimization over Iterative Learners with Structured Responses: A Budget-aware
Planning Approach", AISTATS 2023): pure functions and models on arrays, no solver protocol.

Inputs are configurations ``x`` in the unit box ``[0, 1]^d`` and training lengths
``t = iterations / t_max`` in (0, 1]. The package minimises: the objective model is of the loss,
non-increasing in ``t`` (the paper maximises an accuracy non-decreasing in ``t``; same model,
opposite sign).

* :class:`LearningCurveGP`: GP_f over (x, t), product kernel, monotone in ``t`` (or not:
  BAPI-NM); posterior marginals, curves and joint covariances.
* :class:`CostGP`: GP_c, cost linear in ``t`` with a configuration-dependent rate.
* :func:`select_curve_points`, :func:`running_best`, :func:`curve_dataset`: which points of a
  curve enter GP_f.
* :func:`conservative_stopping`, :func:`stopping_lengths`, :func:`check_termination`: when to stop;
  :func:`automatic_epsilon`: its tolerance ε from the data;
  :func:`first_length`, :func:`next_length`: how far each training step goes.
* :func:`initial_design`: the configurations trained before any model;
  :func:`full_training_cost`: the cost of one full training.
* :func:`plan_horizon`, :func:`select_member`: NMO and the member to run.
* :func:`q_expected_improvement`, :func:`normal_base_samples`: Monte Carlo q-EI.
* :mod:`.defaults`: the paper's constants and ours.
"""

from __future__ import annotations

from ..._lazy import attach
from . import defaults

# The models and functions load on first use (PEP 562), not with the package: the bapi θ-solver
# is registered by every import of the solvers, and its GP pulls in scikit-learn's Gaussian
# processes, which a search with another solver never needs.
_LAZY = {
    "normal_base_samples": "acquisition",
    "q_expected_improvement": "acquisition",
    "CostGP": "cost_gp",
    "full_training_cost": "cost_gp",
    "LearningCurveGP": "curve_gp",
    "Marginals": "curve_gp",
    "curve_dataset": "curve_points",
    "running_best": "curve_points",
    "select_curve_points": "curve_points",
    "initial_design": "design",
    "Horizon": "horizon",
    "plan_horizon": "horizon",
    "select_member": "horizon",
    "Termination": "stopping",
    "automatic_epsilon": "stopping",
    "check_termination": "stopping",
    "conservative_stopping": "stopping",
    "first_length": "stopping",
    "next_length": "stopping",
    "stopping_lengths": "stopping",
}


__all__ = [
    "CostGP",
    "Horizon",
    "LearningCurveGP",
    "Marginals",
    "Termination",
    "automatic_epsilon",
    "check_termination",
    "conservative_stopping",
    "curve_dataset",
    "defaults",
    "first_length",
    "full_training_cost",
    "initial_design",
    "next_length",
    "normal_base_samples",
    "plan_horizon",
    "q_expected_improvement",
    "running_best",
    "select_curve_points",
    "select_member",
    "stopping_lengths",
]

__getattr__, __dir__ = attach(__name__, _LAZY, __all__)
