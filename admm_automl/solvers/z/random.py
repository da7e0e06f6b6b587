"""Uniform random algorithm selection (the randomized z-min baseline of Liu et al., 2020)."""

from __future__ import annotations

from ..base import BaseZSolver, random_z
from ..registry import Z_SOLVERS


@Z_SOLVERS.register("random")
class RandomZSolver(BaseZSolver):
    """Uniform random choice per module.

    Each ask draws one choice per module independently and uniformly; failures need no handling.
    """

    supports_batch = True

    def __init__(self) -> None:
        pass

    def _ask(self) -> tuple[tuple[int, ...], None]:
        return random_z(self.rng_, self.problem_.n_choices), None
