"""θ-min solvers (continuous HPO on the active set)."""

from .bo import GPBayesOptThetaSolver
from .random import RandomThetaSolver
from .rbfopt import RBFOptThetaSolver
from .skopt import SkoptThetaSolver

__all__ = ["GPBayesOptThetaSolver", "RBFOptThetaSolver", "RandomThetaSolver", "SkoptThetaSolver"]
