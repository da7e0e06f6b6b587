"""BAPI's initial design: the configurations trained before any model exists.

Belakaria et al. (2022) start from an initial design without giving its size; ours is
``max(3, d + 1)`` configurations (:func:`.defaults.n_initial`): the problem's start point first
(the ADMM iterate, or the configured default), then the first points of a scrambled Sobol'
sequence, which cover the unit box more evenly than as many uniform ones. Configurations already
observed count towards the size.
"""

from __future__ import annotations

import numpy as np

from .. import gp as _gp
from . import defaults


def initial_design(dim: int, n_observed: int, start: np.ndarray | None,
                   rng: np.random.Generator) -> list[np.ndarray]:
    """The configurations still missing from the initial design of ``dim`` coordinates when
    ``n_observed`` are known: ``start`` (if given) and Sobol' points seeded from ``rng``."""
    missing = max(0, defaults.n_initial(dim) - n_observed)
    design = [] if start is None else [start]
    seed = int(rng.integers(2**32 - 1))
    design.extend(_gp.sobol_points(max(0, missing - len(design)), dim, seed))
    return design[:missing]
