"""Uniform random search on the active θ box (the RND baseline for θ-min of Liu et al. 2020)."""

from __future__ import annotations

import numpy as np

from ..base import BaseThetaSolver
from ..registry import THETA_SOLVERS


@THETA_SOLVERS.register("random")
class RandomThetaSolver(BaseThetaSolver):
    """Uniform random search in the active unit box.

    Asks independent uniform points in [0, 1]^dim; discrete coordinates are left relaxed (the
    objective evaluates their projection). Failed observations need no special handling.
    """

    supports_batch = True

    def __init__(self) -> None:
        pass

    def _ask(self) -> tuple[np.ndarray, None]:
        return self.rng_.uniform(0.0, 1.0, size=self.problem_.dim), None
