"""θ-min solvers (continuous HPO on the active set)."""

from .bapi import BAPIThetaSolver
from .bo import GPBayesOptThetaSolver
from .flaml import BlendSearchThetaSolver, CFOThetaSolver
from .random import RandomThetaSolver
from .rbfopt import RBFOptThetaSolver
from .skopt import SkoptThetaSolver
from .smac import SMACThetaSolver
from .tpe import TPEThetaSolver

__all__ = [
    "BAPIThetaSolver", "BlendSearchThetaSolver", "CFOThetaSolver", "GPBayesOptThetaSolver",
    "RBFOptThetaSolver", "RandomThetaSolver", "SMACThetaSolver", "SkoptThetaSolver",
    "TPEThetaSolver",
]
