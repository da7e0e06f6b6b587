"""The top-r pruning of the algorithm graph (end of Phase 2 of the paper's Algorithm 1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .defaults import DEFAULT_XI_SELECT, MIN_COST, MIN_STD
from .paths import check_n_choices, encode_paths
from .validation import check_top_r, check_xi
from .acquisition import log_eips, rank_with_random_ties
from .ridge import RidgePathModel


@dataclass(frozen=True)
class Subgraph:
    """The pruned algorithm graph G′.

    Attributes
    ----------
    masks : tuple of bool ndarray
        One per module, shape (n_k,): the algorithms kept.
    top_paths : ndarray of int, shape (r, K)
        The r best paths, best first, whose algorithms were kept.
    """

    masks: tuple[np.ndarray, ...]
    top_paths: np.ndarray

    @property
    def n_choices(self) -> tuple[int, ...]:
        """Number of algorithms kept per module."""
        return tuple(int(m.sum()) for m in self.masks)

    def kept(self) -> tuple[tuple[int, ...], ...]:
        """Indices of the kept algorithms of each module."""
        return tuple(tuple(int(i) for i in np.flatnonzero(m)) for m in self.masks)


def subgraph_masks(paths: np.ndarray, n_choices: Sequence[int]) -> tuple[np.ndarray, ...]:
    """Per-module masks of the algorithms used by any of ``paths`` (shape (r, K))."""
    sizes = check_n_choices(n_choices)
    zs = np.atleast_2d(np.asarray(paths, dtype=int))
    masks = []
    for k, size in enumerate(sizes):
        mask = np.zeros(size, dtype=bool)
        mask[zs[:, k]] = True
        masks.append(mask)
    return tuple(masks)


def build_subgraph(
    perf: RidgePathModel,
    cost: RidgePathModel | None,
    paths: np.ndarray,
    n_choices: Sequence[int],
    best: float,
    top_r: int,
    rng: np.random.Generator,
    *,
    xi: float = DEFAULT_XI_SELECT,
    min_std: float = MIN_STD,
    min_cost: float = MIN_COST,
) -> Subgraph:
    """BuildSubgraph: keep the algorithms of the ``top_r`` paths of highest EIPS (ξ = 0).

    Parameters
    ----------
    perf, cost : RidgePathModel
        The fitted performance and cost models (``cost=None`` ranks by EI alone).
    paths : ndarray of int, shape (L, K)
        The paths to rank: :func:`all_paths`, or the :func:`candidate_paths` sample.
    n_choices : sequence of int
        Module sizes.
    best : float
        m⁺, the best (lowest) loss observed so far.
    top_r : int
        r, between 1 and L.
    rng : numpy.random.Generator
        Breaks ties in the ranking.
    xi : float, default=0.0
        The paper ranks with ξ = 0 here (pure exploitation).

    Returns
    -------
    Subgraph
        G′ as the product of the per-module sets of algorithms used by the top r paths, as the
        released code builds it. The paper only says "the subgraph of the top r paths", which
        could also mean exactly those r paths; the product keeps a plain per-module space, which
        is what the θ back end and the z-solvers search, and may hold more than r paths.

    Notes
    -----
    Paths are ranked by :func:`log_eips` (the same order as EIPS where EIPS is representable),
    ties at random.
    """
    zs = np.atleast_2d(np.asarray(paths))
    top_r = check_top_r(top_r, len(zs))
    xi = check_xi(xi, "xi")
    X = encode_paths(zs, n_choices)
    mean, std = perf.predict(X, min_std)
    scores = log_eips(mean, std, None if cost is None else cost.mean(X), best, xi, min_cost)
    top = zs[rank_with_random_ties(scores, rng)[:top_r]]
    return Subgraph(subgraph_masks(top, n_choices), top)
