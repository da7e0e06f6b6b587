"""The joint (conditional) space: one unit box for ``(z, θ)`` together, over every choice of
every module or a pruned subset of them. JOPT searches it with one θ-solver (the baseline of the
ADMM split in Liu et al., AAAI 2020), FLASH tunes its pruned space in it (Zhang et al., KDD 2016),
and the FLAML adapters translate it to FLAML's nested space (Wang et al., ICLR 2021)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..exceptions import InvalidParameterError
from .encoding import Encoding

__all__ = ["JointSpace", "joint_decode", "joint_encode"]


@dataclass(frozen=True, eq=False)
class JointSpace:
    """One unit box for ``(z, θ)``, over all choices or a subset of each module's choices.

    A joint point is one relaxed categorical coordinate per module with at least two kept choices
    (its j-th kept choice of k at j/(k − 1), like a categorical hyperparameter), then the θ
    coordinates of every kept algorithm, in θ order. Decoding rounds a module coordinate to the
    nearest kept choice; θ coordinates of algorithms that are not kept stay at their defaults
    (they are never active).

    Parameters
    ----------
    encoding : Encoding
        The space's (z, θ) bookkeeping.
    kept : tuple of tuple of int, optional
        Per module, the indices of the kept choices (default: all of them).
    """

    encoding: Encoding
    kept: tuple[tuple[int, ...], ...] | None = None

    def __post_init__(self) -> None:
        enc = self.encoding
        kept = self.kept or tuple(tuple(range(k)) for k in enc.n_choices)
        if len(kept) != len(enc.n_choices) or not all(
            kept[i] and all(0 <= j < k for j in kept[i]) for i, k in enumerate(enc.n_choices)
        ):
            raise InvalidParameterError(
                f"kept must name at least one valid choice of each of the {len(enc.n_choices)} "
                f"modules (sizes {enc.n_choices}), got {self.kept!r}"
            )
        kept = tuple(tuple(int(j) for j in sorted(set(c))) for c in kept)
        slots = [enc.slots[i][j] for i, choices in enumerate(kept) for j in choices]
        object.__setattr__(self, "kept", kept)
        object.__setattr__(self, "modules", tuple(i for i, c in enumerate(kept) if len(c) > 1))
        object.__setattr__(self, "theta_index",
                           np.unique(np.concatenate([np.zeros(0, dtype=int), *slots])))

    @property
    def dim(self) -> int:
        return len(self.modules) + len(self.theta_index)

    @property
    def discrete(self) -> np.ndarray:
        """Which joint coordinates are discrete (the module coordinates, discrete θ)."""
        return np.concatenate([np.ones(len(self.modules), dtype=bool),
                               self.encoding.discrete[self.theta_index]])

    @property
    def names(self) -> tuple[str, ...]:
        enc = self.encoding
        return (tuple(f"module:{enc.module_names[i]}" for i in self.modules)
                + tuple(enc.theta_names[k] for k in self.theta_index))

    @property
    def low_cost(self) -> np.ndarray:
        """The low-cost point of each joint coordinate (NaN where none is declared; a module
        coordinate declares none)."""
        return np.concatenate([np.full(len(self.modules), np.nan),
                               self.encoding.low_cost[self.theta_index]])

    @property
    def grids(self) -> tuple[np.ndarray | None, ...]:
        """The admissible unit values of each discrete joint coordinate (None: continuous)."""
        return (tuple(np.linspace(0.0, 1.0, len(self.kept[i])) for i in self.modules)
                + tuple(self.encoding.grids[k] for k in self.theta_index))

    def encode(self, z: Sequence[int], theta: np.ndarray) -> np.ndarray:
        """The joint point of ``(z, θ)`` (z must use kept choices)."""
        units = [self.kept[i].index(z[i]) / (len(self.kept[i]) - 1) for i in self.modules]
        theta = np.asarray(theta, dtype=float)
        return np.concatenate([np.array(units, dtype=float), theta[self.theta_index]])

    def decode(self, x: np.ndarray) -> tuple[tuple[int, ...], np.ndarray]:
        """``(z, θ)`` of a joint point (module coordinates rounded to the nearest kept choice)."""
        x = np.clip(np.asarray(x, dtype=float), 0.0, 1.0)
        z = [c[0] for c in self.kept]
        for coord, i in zip(x, self.modules):
            z[i] = self.kept[i][int(np.rint(coord * (len(self.kept[i]) - 1)))]
        theta = np.array(self.encoding.initial_theta, dtype=float)
        theta[self.theta_index] = x[len(self.modules):]
        return tuple(z), theta


def joint_encode(encoding: Encoding, z: Sequence[int], theta: np.ndarray) -> np.ndarray:
    """The point of ``(z, θ)`` in the joint box over all choices (:class:`JointSpace`)."""
    return JointSpace(encoding).encode(z, theta)


def joint_decode(encoding: Encoding, x: np.ndarray) -> tuple[tuple[int, ...], np.ndarray]:
    """``(z, θ)`` of a point of the joint box over all choices (:class:`JointSpace`)."""
    return JointSpace(encoding).decode(x)
