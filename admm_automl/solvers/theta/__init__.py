"""θ-min solvers (continuous HPO on the active set)."""

from .random import RandomThetaSolver

__all__ = ["RandomThetaSolver"]
