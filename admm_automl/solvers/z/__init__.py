"""z-min solvers (algorithm selection with θ fixed).

``random`` (uniform), ``cmab`` (the Thompson-sampling bandit of Liu et al., AAAI 2020, their
default), ``bo`` (GP-BO over one-hot choices), and the multi-fidelity solvers of Kishimoto et al.
(2021) — ``blds`` (Bandit Limited Discrepancy Search), ``daub`` and ``hyperband`` — which train
on nested subsets of b·η^k rows (:mod:`._fidelity`).
"""

from .blds import BLDSZSolver
from .bo import GPBayesOptZSolver
from .cmab import ThompsonSamplingZSolver
from .daub import DAUBZSolver
from .hyperband import HyperbandZSolver
from .random import RandomZSolver

__all__ = [
    "BLDSZSolver",
    "DAUBZSolver",
    "GPBayesOptZSolver",
    "HyperbandZSolver",
    "RandomZSolver",
    "ThompsonSamplingZSolver",
]
