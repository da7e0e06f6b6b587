"""z-min solvers (algorithm selection with θ fixed)."""

from .random import RandomZSolver

__all__ = ["RandomZSolver"]
