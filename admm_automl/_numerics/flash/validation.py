"""Checks of FLASH's settings: the phase budgets, the top-r of the pruning, ridge α, ξ and the
cost transform."""

from __future__ import annotations

import math
from numbers import Real
from typing import Sequence

from ...exceptions import InvalidParameterError
from .defaults import COST_TRANSFORMS
from .paths import _is_int, n_paths, path_rank


def check_n_init(n_init: int | None, n_choices: Sequence[int] | None = None) -> int:
    """Validate the Phase-1 budget (evaluations of the initial design); ``None`` is the default.

    The default is ``path_rank(n_choices)`` = N − K + 1: beyond that many paths the paper's
    D-criterion is 0 for every candidate, and it is the paper's 30 on its benchmark layout.

    Raises
    ------
    InvalidParameterError
        If ``n_init`` is not an integer >= 1, or is ``None`` without ``n_choices``.
    """
    if n_init is None:
        if n_choices is None:
            raise InvalidParameterError("n_init=None (the default) needs n_choices")
        return path_rank(n_choices)
    if not _is_int(n_init) or n_init < 1:
        raise InvalidParameterError(f"n_init must be an integer >= 1, got {n_init!r}")
    return int(n_init)


def check_n_prune(n_prune: int | None, n_choices: Sequence[int] | None = None) -> int:
    """Validate the Phase-2 budget (EIPS evaluations before pruning); ``None`` is the default.

    0 is allowed (prune right after the initial design). The default is ``path_rank(n_choices)``,
    as for :func:`check_n_init` (the paper uses 30 for both).
    """
    if n_prune is None:
        if n_choices is None:
            raise InvalidParameterError("n_prune=None (the default) needs n_choices")
        return path_rank(n_choices)
    if not _is_int(n_prune) or n_prune < 0:
        raise InvalidParameterError(f"n_prune must be an integer >= 0, got {n_prune!r}")
    return int(n_prune)


def check_top_r(top_r: int, n_paths: int) -> int:
    """Validate r, the number of best paths kept when pruning: ``1 <= top_r <= n_paths``.

    ``n_paths`` is the number of paths ranked (all paths, or the sample when the space is too
    large to enumerate).
    """
    if not _is_int(top_r) or not 1 <= top_r <= n_paths:
        raise InvalidParameterError(
            f"top_r must be an integer between 1 and the number of paths ({n_paths}), "
            f"got {top_r!r}"
        )
    return int(top_r)


def check_ridge_alpha(alpha: float) -> float:
    """Validate the ridge penalty: a finite number > 0 (it is what makes β unique)."""
    if not isinstance(alpha, Real) or isinstance(alpha, bool) or not 0 < alpha < math.inf:
        raise InvalidParameterError(f"ridge_alpha must be a finite number > 0, got {alpha!r}")
    return float(alpha)


def check_xi(xi: float, name: str = "xi") -> float:
    """Validate an EI exploration offset: a finite number >= 0, in loss units."""
    if not isinstance(xi, Real) or isinstance(xi, bool) or not 0 <= xi < math.inf:
        raise InvalidParameterError(
            f"{name} must be a finite number >= 0 (in loss units), got {xi!r}"
        )
    return float(xi)


def check_cost_transform(transform: str) -> str:
    """Validate the cost model's target transform (one of :data:`COST_TRANSFORMS`)."""
    if transform not in COST_TRANSFORMS:
        raise InvalidParameterError(
            f"cost_transform must be one of {', '.join(map(repr, COST_TRANSFORMS))}, "
            f"got {transform!r}"
        )
    return str(transform)
