"""The numeric view of a pipeline space that the ADMM loop works on (numpy only, no scikit-learn).

``z`` is one choice index per module. ``θ`` is one unit-interval coordinate per tunable
hyperparameter of every algorithm; ``active(z)`` lists the coordinates of the chosen algorithms and
``project`` maps relaxed discrete coordinates to their nearest admissible value (the projection P_D of
Liu et al., AAAI 2020). ``low_cost`` is the cost-frugal starting point of CFO and BlendSearch (Wu et al.,
AAAI 2021; Wang et al., ICLR 2021) in the same unit coordinates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np


@dataclass(frozen=True, eq=False)
class Encoding:
    """Index bookkeeping of θ and z.

    Parameters
    ----------
    module_names, choice_names
        Module names and, per module, the names of its choices.
    theta_names
        One name per θ coordinate (``"module:choice:hyperparameter"``).
    grids
        Per θ coordinate, the admissible unit values of a discrete coordinate or ``None``.
    slots
        ``slots[i][j]`` are the θ indices of choice ``j`` of module ``i``.
    initial_z, initial_theta
        The first configuration (Liu et al., AAAI 2020, start from Gaussian naive Bayes at its defaults;
        every algorithm's θ starts at its defaults).
    low_cost
        Per θ coordinate, the unit value of its declared low-cost point, NaN where it declares none
        (default: NaN everywhere).
    lengths
        ``lengths[i][j]``: the training length (an :class:`~admm_automl.space.Iterations`) of
        choice ``j`` of module ``i``, or ``None`` (default: no choice declares one).

    Attributes
    ----------
    has_low_cost : numpy.ndarray of bool
        Where ``low_cost`` is declared (not NaN).
    """

    module_names: tuple[str, ...]
    choice_names: tuple[tuple[str, ...], ...]
    theta_names: tuple[str, ...]
    grids: tuple[np.ndarray | None, ...]
    slots: tuple[tuple[np.ndarray, ...], ...]
    initial_z: tuple[int, ...]
    initial_theta: np.ndarray
    low_cost: np.ndarray | None = None
    lengths: tuple[tuple[Any, ...], ...] = ()

    def __post_init__(self) -> None:
        discrete = np.array([g is not None for g in self.grids], dtype=bool)
        object.__setattr__(self, "discrete", discrete)
        object.__setattr__(self, "n_choices", tuple(len(c) for c in self.choice_names))
        low_cost = np.full(self.theta_dim, np.nan) if self.low_cost is None else self.low_cost
        low_cost = np.asarray(low_cost, dtype=float)
        if low_cost.shape != (self.theta_dim,):
            raise ValueError(f"low_cost must have shape ({self.theta_dim},), got {low_cost.shape}")
        object.__setattr__(self, "low_cost", low_cost)
        object.__setattr__(self, "has_low_cost", ~np.isnan(low_cost))

    def with_low_cost(self, theta: np.ndarray, indices: np.ndarray | None = None) -> np.ndarray:
        """``theta`` with every coordinate that declares a low-cost point moved to it.

        With ``indices``, ``theta`` holds only those coordinates (for example the active set).
        """
        idx = np.arange(self.theta_dim) if indices is None else np.asarray(indices, dtype=int)
        theta = np.asarray(theta, dtype=float)
        return np.where(self.has_low_cost[idx], self.low_cost[idx], theta)

    @property
    def has_training_length(self) -> bool:
        """Whether some choice declares a training length."""
        return any(length is not None for module in self.lengths for length in module)

    def training_length(self, z: Sequence[int]) -> Any:
        """The :class:`~admm_automl.space.Iterations` of the algorithm of ``z`` that declares a
        training length, or ``None``; a ``ValueError`` when several chosen algorithms declare one
        (the training-length fidelity is one number per pipeline)."""
        if not self.lengths:
            return None
        found = [
            (self.module_names[i], self.lengths[i][int(j)])
            for i, j in enumerate(z)
            if self.lengths[i][int(j)] is not None
        ]
        if len(found) > 1:
            raise ValueError(
                "the training-length fidelity applies to one iterative algorithm per pipeline, "
                f"but modules {', '.join(m for m, _ in found)} all declare `iterations`"
            )
        return found[0][1] if found else None

    @property
    def theta_dim(self) -> int:
        return len(self.theta_names)

    @property
    def n_pipelines(self) -> int:
        return int(np.prod(self.n_choices)) if self.n_choices else 0

    def active(self, z: Sequence[int]) -> np.ndarray:
        """Indices of the θ coordinates of the algorithms selected by ``z`` (sorted)."""
        parts = [self.slots[i][int(j)] for i, j in enumerate(z)]
        return np.concatenate(parts).astype(int) if parts else np.zeros(0, dtype=int)

    def project(self, theta: np.ndarray, indices: np.ndarray | None = None) -> np.ndarray:
        """Clip to the unit box and move every discrete coordinate to its nearest admissible value.

        With ``indices``, ``theta`` holds only those coordinates (for example the active set).
        """
        theta = np.clip(np.asarray(theta, dtype=float), 0.0, 1.0)
        idx = np.arange(self.theta_dim) if indices is None else np.asarray(indices, dtype=int)
        out = theta.copy()
        for k, i in enumerate(idx):
            grid = self.grids[i]
            if grid is not None:
                out[k] = grid[np.abs(grid - theta[k]).argmin()]
        return out

    def check_z(self, z: Sequence[int]) -> tuple[int, ...]:
        """Validate a choice vector and return it as a tuple of ints."""
        values = tuple(z)
        if any(isinstance(j, bool) or float(j) != int(j) for j in values):
            raise ValueError(f"invalid algorithm choice {values!r}: choices must be integers")
        z = tuple(int(j) for j in values)
        if len(z) != len(self.n_choices) or any(
            not 0 <= j < k for j, k in zip(z, self.n_choices)
        ):
            raise ValueError(f"invalid algorithm choice {z!r} for module sizes {self.n_choices!r}")
        return z

    def check_theta(self, theta: np.ndarray) -> np.ndarray:
        """Validate the length of a full θ vector."""
        theta = np.asarray(theta, dtype=float)
        if theta.shape != (self.theta_dim,):
            raise ValueError(
                f"theta must have shape ({self.theta_dim},), got {theta.shape}"
            )
        return theta
