"""The augmented-Lagrangian terms of the ADMM framework (Liu et al., AAAI 2020, Algorithm 2) for
the black-box constraints, numpy only: the slack, the multiplier update and the constraint part of
a sub-problem value in each mode of :class:`~admm_automl.constraints.ranking.Constraints` (which
holds how far an observation is from meeting them, ``g``, and how observations rank).

With the paper's ``g ≤ ε`` (ε = 1), slack ``u ∈ [0, ε]`` and multiplier μ:

* θ-min adds (ρ/2) Σ (g − ε + u + μ/ρ)² with, per evaluation, the optimal slack in closed form
  ``u = clip(ε − g − μ/ρ, 0, ε)`` (the paper searches u with BO; the closed form is exact);
* z-min adds the same term, each candidate at its own optimal slack too (the paper fixes u at
  the θ-min winner's; why not: :mod:`admm_automl.methods.admm`);
* μ ← μ + ρ (g − ε + u) at the new iterate, u its optimal slack, which is
  ``max(0, μ + ρ (g − ε))``.

In ``"penalty"`` mode the term is a fixed weight times the total violation; in ``"filter"`` mode
it is 0.
"""

from __future__ import annotations

import numpy as np

from ..constraints.ranking import Constraints
from ..records import Observation


def optimal_slack(g: np.ndarray, mu: np.ndarray, rho: float) -> np.ndarray:
    """argmin over u ∈ [0, 1] of (g − 1 + u + μ/ρ)²: ``clip(1 − g − μ/ρ, 0, 1)``."""
    return np.clip(1.0 - g - mu / rho, 0.0, 1.0)


def constraint_term(g: np.ndarray, u: np.ndarray, mu: np.ndarray, rho: float) -> float:
    """(ρ/2) Σ (g − 1 + u + μ/ρ)²."""
    r = g - 1.0 + u + mu / rho
    return 0.5 * rho * float(r @ r)


def update_multipliers(mu: np.ndarray, g: np.ndarray, u: np.ndarray, rho: float) -> np.ndarray:
    """μ + ρ (g − 1 + u)."""
    return mu + rho * (g - 1.0 + u)


def constraint_value(
    constraints: Constraints, obs: Observation, mu: np.ndarray | None = None, rho: float = 1.0,
) -> float:
    """The constraint part of a sub-problem value in the mode of ``constraints``; in ``"admm"``
    mode with multipliers ``mu``, at this observation's optimal slack."""
    if not constraints.items or constraints.mode == "filter":
        return 0.0
    if constraints.mode == "penalty":
        return constraints.weight * constraints.violation(obs)
    g = constraints.g(obs)
    mu = np.zeros(len(constraints.items)) if mu is None else mu
    return constraint_term(g, optimal_slack(g, mu, rho), mu, rho)
