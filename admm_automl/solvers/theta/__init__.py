"""θ-min solvers (continuous HPO on the active set)."""

from .bo import GPBayesOptThetaSolver
from .flaml import BlendSearchThetaSolver, CFOThetaSolver
from .random import RandomThetaSolver
from .rbfopt import RBFOptThetaSolver
from .skopt import SkoptThetaSolver

__all__ = [
    "BlendSearchThetaSolver", "CFOThetaSolver", "GPBayesOptThetaSolver", "RBFOptThetaSolver",
    "RandomThetaSolver", "SkoptThetaSolver",
]
