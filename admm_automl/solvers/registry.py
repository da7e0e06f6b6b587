"""The θ- and z-solver registries (see :class:`admm_automl.registry.Registry`)."""

from __future__ import annotations

from importlib import metadata  # noqa: F401  (tests patch metadata.entry_points through here)

from ..registry import Registry

__all__ = ["THETA_SOLVERS", "Z_SOLVERS", "Registry"]


def _solver_registries() -> tuple[Registry, Registry]:
    from .base import BaseThetaSolver, BaseZSolver

    return (
        Registry("theta solver", BaseThetaSolver, "admm_automl.theta_solvers"),
        Registry("z solver", BaseZSolver, "admm_automl.z_solvers"),
    )


THETA_SOLVERS, Z_SOLVERS = _solver_registries()
