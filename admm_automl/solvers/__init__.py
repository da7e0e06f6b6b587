"""Solvers for the ADMM sub-problems, reachable by name through the registries.

Importing this package registers the built-ins.
"""

from . import theta, z  # noqa: F401  (registers the built-ins)
from .base import BaseSolver, BaseThetaSolver, BaseZSolver
from .registry import THETA_SOLVERS, Z_SOLVERS, Registry


def list_theta_solvers() -> list[str]:
    """Names of the registered θ-solvers (plug-ins included)."""
    return THETA_SOLVERS.names()


def list_z_solvers() -> list[str]:
    """Names of the registered z-solvers (plug-ins included)."""
    return Z_SOLVERS.names()


__all__ = [
    "THETA_SOLVERS",
    "Z_SOLVERS",
    "BaseSolver",
    "BaseThetaSolver",
    "BaseZSolver",
    "Registry",
    "list_theta_solvers",
    "list_z_solvers",
]
