"""z-min solvers (algorithm selection with θ fixed).

``random`` (uniform), ``cmab`` (the Thompson-sampling bandit of Liu et al., AAAI 2020, their
default), ``bo`` (GP-BO over one-hot choices), ``flash`` (the ridge path model with EIPS of Zhang
et al., KDD 2016, fed by every evaluation of the run), and the multi-fidelity solvers of
Kishimoto et al. (2021) — ``blds`` (Bandit Limited Discrepancy Search), ``daub`` and
``hyperband`` — which train on nested subsets of b·η^k rows, k ≥ 1 (:func:`fidelity_levels`,
their shared ladder; ``blds`` may start at k = 0, ``first_size="b"``).
"""

from ._fidelity import fidelity_levels

from .blds import BLDSZSolver
from .bo import GPBayesOptZSolver
from .cmab import ThompsonSamplingZSolver
from .daub import DAUBZSolver
from .flash import FlashZSolver
from .hyperband import HyperbandZSolver
from .random import RandomZSolver

__all__ = [
    "BLDSZSolver",
    "DAUBZSolver",
    "FlashZSolver",
    "GPBayesOptZSolver",
    "HyperbandZSolver",
    "RandomZSolver",
    "ThompsonSamplingZSolver",
    "fidelity_levels",
]
