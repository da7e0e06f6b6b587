"""Expected improvement (the paper's Eq. 2) and EI per unit of predicted log-cost (EIPS, Eq. 4),
as written and in log space, and ranking with random ties."""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ...exceptions import InvalidParameterError
from ..gp import log_h
from .defaults import DEFAULT_XI, MIN_COST, TIE_ATOL


def expected_improvement(
    mean: np.ndarray, std: np.ndarray, best: float, xi: float = DEFAULT_XI
) -> np.ndarray:
    """EI of the paper's Eq. 2 for minimisation, computed as written.

    ``u = (m⁺ − ξ − μ)/s``, ``EI = s·(uΦ(u) + φ(u))``. With a large ξ, ``u`` is strongly negative
    and EI underflows to exactly 0 in float64 once ``u < ≈ −38`` (ξ = 100 percent points and
    s = 2 already do); rank with :func:`log_expected_improvement` instead.
    """
    s = np.asarray(std, dtype=float)
    u = (best - xi - np.asarray(mean, dtype=float)) / s
    return s * (u * special.ndtr(u) + np.exp(-0.5 * u * u) / math.sqrt(2.0 * math.pi))


def log_expected_improvement(
    mean: np.ndarray, std: np.ndarray, best: float, xi: float = DEFAULT_XI
) -> np.ndarray:
    """log EI, finite for every finite input: ``log s + log h(u)`` with ``h(u) = uΦ(u) + φ(u)``.

    ``log h`` is the package's stable routine (the asymptote ``log φ(u) − 2 log|u|`` far in the
    tail, the scaled complementary error function in between; Ament et al. 2023), so paths keep
    their order where EI itself is 0.
    """
    s = np.asarray(std, dtype=float)
    u = (best - xi - np.asarray(mean, dtype=float)) / s
    return np.log(s) + log_h(u)


def eips(
    mean: np.ndarray,
    std: np.ndarray,
    cost: np.ndarray,
    best: float,
    xi: float = DEFAULT_XI,
    min_cost: float = MIN_COST,
) -> np.ndarray:
    """EI per unit of predicted transformed cost, the paper's Eq. 4: ``EI / max(c, min_cost)``.

    ``c`` is the cost model's prediction (of log(1 + τ) by default, E[log τ] in the paper). The
    paper divides by it unguarded; a prediction ≤ 0 (runs under a second with the log transform,
    or a ridge extrapolation) would flip or blow up the ratio, so it is floored at ``min_cost``
    (every path predicted cheaper than that counts as costing ``min_cost``). The default
    ``transform="log1p"`` of the cost model keeps predictions positive, so that the floor is
    rarely reached.
    """
    return expected_improvement(mean, std, best, xi) / np.maximum(cost, min_cost)


def log_eips(
    mean: np.ndarray,
    std: np.ndarray,
    cost: np.ndarray | None,
    best: float,
    xi: float = DEFAULT_XI,
    min_cost: float = MIN_COST,
) -> np.ndarray:
    """``log EIPS = log EI − log max(c, min_cost)``; with ``cost=None``, log EI alone.

    This is what FLASH's Phase 2 and the pruning rank by: it orders paths exactly as
    :func:`eips` wherever EIPS is representable, and keeps ordering them where EI underflows
    (with the paper's ξ every EIPS is 0 once s < ≈ 2.7 percent points; the released code then
    takes the first path in enumeration order).
    """
    log_ei = log_expected_improvement(mean, std, best, xi)
    if cost is None:
        return log_ei
    return log_ei - np.log(np.maximum(cost, min_cost))


def rank_with_random_ties(
    scores: np.ndarray, rng: np.random.Generator, atol: float = TIE_ATOL
) -> np.ndarray:
    """Indices of ``scores`` from best (largest) to worst, ties in uniformly random order.

    Sorted scores whose successive gaps are at most ``atol`` form one tie group (so symmetric
    paths whose scores differ only by rounding are ties); the order inside a group is a random
    permutation drawn from ``rng``. The paper's code breaks ties by enumeration order, which
    favours the first algorithms of each module.
    """
    values = np.asarray(scores, dtype=float)
    if np.isnan(values).any():
        raise InvalidParameterError("scores to rank contain NaN")
    order = np.argsort(-values, kind="stable")
    ordered = values[order]
    with np.errstate(invalid="ignore"):  # -inf - -inf is NaN: same group
        new_group = np.diff(ordered) < -atol
    keys = rng.random(len(values))
    # only the positions in a group of two or more move: sort those alone (by group, then key,
    # then position, as a lexsort of all positions would; a lone score keeps its place)
    tied = np.zeros(len(values), dtype=bool)
    tied[:-1] |= ~new_group
    tied[1:] |= ~new_group
    if not tied.any():
        return order
    group = np.concatenate([[0], np.cumsum(new_group)])
    at = np.flatnonzero(tied)
    out = order.copy()
    out[at] = order[at[np.lexsort((keys[at], group[at]))]]
    return out
