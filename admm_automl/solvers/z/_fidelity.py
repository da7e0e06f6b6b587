"""Shared machinery of the multi-fidelity z-solvers (BLDS, DAUB, Hyperband).

* :func:`fidelity_levels` turns ``(b, η, n_train)`` into the training-data fractions of the
  schedule of Kishimoto et al. (2021): b, bη, bη², … rows (the first training uses b rows, one of
  the paper's two conflicting readings), the last level being the whole training split.
* :class:`Ladder` holds those levels with their row counts (for confidence radii and learning
  curves).
* :class:`ProgramZSolver` lets a solver be written as a plain generator that ``yield``s
  ``(z, level)`` requests and receives the observation back, which keeps first-improvement
  searches (BLDS) and successive halving (Hyperband) readable as the papers' pseudocode. It also
  provides ``best()`` over full-fidelity observations only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Generator, Sequence

import numpy as np

from ...exceptions import InvalidParameterError
from ...problem import ZProblem
from ...records import Observation, Suggestion

from ..base import BaseZSolver, random_z

#: a solver program yields ``(z, level index)`` and receives the observation
Program = Generator[tuple[tuple[int, ...], int], Observation, Any]


def _fraction_for_rows(rows: int, n_train: int) -> float:
    """The largest fraction f with ceil(f * n_train) == rows (float-safe; Split.train_rows)."""
    f = rows / n_train
    while math.ceil(f * n_train) > rows:
        f = math.nextafter(f, 0.0)
    return f


def fidelity_levels(
    n_train: int | None,
    *,
    b: float = 100,
    eta: float = 2.0,
    fidelity: tuple[float, float] | None = None,
) -> tuple[float, ...]:
    """Training-data fractions of the levels b·η^k rows (k = 0, 1, …), ending at full data.

    Parameters
    ----------
    n_train : int or None
        Training rows at full fidelity. ``None`` (unknown) gives full fidelity only, unless a
        ``fidelity`` range is given: then the levels are ``hi·η^-k`` down to ``lo``.
    b, eta : float
        First level in rows and growth factor (Kishimoto et al., 2021: 100 and 2).
    fidelity : (lo, hi), optional
        Admissible range of fractions (``ZProblem.fidelity``); the last level is ``hi``.

    Returns
    -------
    tuple of float
        Increasing fractions in (0, 1]; the last one is ``hi`` (1.0 without a range). Fraction f
        trains on exactly ``ceil(f * n_train)`` = b·η^k rows.
    """
    if not b > 0 or not eta > 1:
        raise InvalidParameterError(
            f"fidelity levels need b > 0 and eta > 1, got b={b!r}, eta={eta!r}"
        )
    lo, hi = (0.0, 1.0) if fidelity is None else (float(fidelity[0]), float(fidelity[1]))
    if not 0.0 <= lo <= hi <= 1.0 or hi <= 0.0:
        raise InvalidParameterError(
            f"invalid fidelity range {fidelity!r}: need 0 <= lo <= hi <= 1"
        )
    if n_train is None or n_train <= 0:
        if fidelity is None:
            return (1.0,)
        levels = [hi]
        while levels[-1] / eta >= lo and levels[-1] / eta > 0 and len(levels) < 64:
            levels.append(levels[-1] / eta)
        return tuple(reversed(levels))
    levels = []
    k = 0
    while True:
        rows = int(math.ceil(b * eta**k - 1e-9))
        if rows >= hi * n_train:
            break
        f = _fraction_for_rows(rows, n_train)
        if f >= lo and (not levels or f > levels[-1]):
            levels.append(f)
        k += 1
    levels.append(hi)
    return tuple(levels)


@dataclass(frozen=True)
class Ladder:
    """Fidelity levels (fractions) and the training rows of each level.

    With ``n_train`` unknown, rows are nominal: the first level counts as ``b`` rows and the others
    scale with their fraction (so radii and slopes keep the paper's units).
    """

    fractions: tuple[float, ...]
    rows: tuple[float, ...]

    @classmethod
    def for_problem(cls, problem: ZProblem, b: float, eta: float) -> "Ladder":
        n_train = problem.n_train
        fractions = fidelity_levels(n_train, b=b, eta=eta, fidelity=problem.fidelity)
        if n_train:
            rows = tuple(float(math.ceil(f * n_train)) if f < 1.0 else float(n_train)
                         for f in fractions)
        else:
            rows = tuple(b * f / fractions[0] for f in fractions)
        return cls(fractions, rows)

    @property
    def top(self) -> int:
        return len(self.fractions) - 1

    def cumulative(self, k: int) -> float:
        """D_k: rows consumed by the first k+1 trainings.

        Our choice where the paper is silent: the sum of the sizes actually used (the last one
        capped at the training-set size), not the nominal geometric sum.
        """
        return float(sum(self.rows[: k + 1]))


def value_of(problem: ZProblem, z: tuple[int, ...], obs: Observation) -> float:
    """The z-problem value of an observation (``augment``), +inf when it is not finite."""
    try:
        v = float(problem.augment(z, obs))
    except (TypeError, ValueError):
        return math.inf
    return v if math.isfinite(v) else math.inf


class ProgramZSolver(BaseZSolver):
    """A z-solver driven by a generator program that yields ``(z, level)`` requests.

    Subclasses implement :meth:`_program`. ``ask`` returns the pending request of the program;
    ``tell`` with that suggestion sends the observation into the program, which runs to its next
    request. When the program ends (the space is exhausted), random full-fidelity pipelines are
    asked; the objective's cache answers them (free, and bounded per ``run`` call, so an exhausted
space ends the call). After ``update_problem`` the program may re-traverse pipelines whose θ did not
change at no cost. ``best()`` only considers observations at the top
    fidelity level (and ``problem.history`` entries at full fidelity): a partially trained loss is
    not comparable with a full one (the paper leaves "best so far" open; we count fully trained
    pipelines only), and ADMM's z-min must return a full-data choice.
    Returns ``None`` when there is none yet, so the ADMM driver keeps its current z.
    """

    supports_fidelity: ClassVar[bool] = True
    b: float
    eta: float

    def _setup(self) -> None:
        self.ladder_ = Ladder.for_problem(self.problem_, self.b, self.eta)
        self.fidelities_: list[float] = []
        self._init_state()
        self._restart_program()

    def update_problem(self, problem: ZProblem) -> None:
        super().update_problem(problem)
        self.fidelities_ = []
        self.ladder_ = Ladder.for_problem(problem, self.b, self.eta)
        self._on_new_problem()

    # ------------------------------------------------------------------ hooks
    def _init_state(self) -> None:
        """Build the solver state that lives across ADMM iterations."""

    def _on_new_problem(self) -> None:
        """A new θ: drop what is no longer valid (default: restart the program)."""
        self._restart_program()

    def _program(self) -> Program:  # pragma: no cover - abstract
        raise NotImplementedError

    # ------------------------------------------------------------------ driving the program
    def _restart_program(self) -> None:
        self._gen = self._program()
        self._request: tuple[tuple[int, ...], int] | None = None
        self._waiting_id: int | None = None
        self._advance(None)

    def _advance(self, obs: Observation | None) -> None:
        try:
            self._request = next(self._gen) if obs is None else self._gen.send(obs)
        except StopIteration:
            self._gen = self._exhausted()
            self._request = next(self._gen)

    def _exhausted(self) -> Program:
        """Nothing left to learn: random full-fidelity re-asks (answered by the cache)."""
        while True:
            yield random_z(self.rng_, self.problem_.n_choices), self.ladder_.top

    def ask(self) -> Suggestion:
        suggestion = super().ask()
        if self._waiting_id is None:
            self._waiting_id = suggestion.id
        return suggestion

    def _ask(self) -> tuple[tuple[int, ...], float]:
        z, level = self._request
        return tuple(int(j) for j in z), float(self.ladder_.fractions[level])

    def _tell(self, suggestion: Suggestion, observation: Observation) -> None:
        self.fidelities_.append(1.0 if suggestion.fidelity is None else float(suggestion.fidelity))
        if suggestion.id == self._waiting_id:
            self._waiting_id = None
            self._advance(observation)

    # ------------------------------------------------------------------ results
    def level_of(self, fidelity: float) -> int:
        """Index of the ladder level of a fidelity fraction (nearest)."""
        fr = np.asarray(self.ladder_.fractions)
        return int(np.abs(fr - fidelity).argmin())

    def _is_full(self, fidelity: float, obs: Observation) -> bool:
        top = self.ladder_.fractions[-1]
        return min(fidelity, float(obs.fidelity)) >= top - 1e-12

    def best(self) -> tuple[Any, Observation] | None:
        candidates = [(z, o) for z, o in self.problem_.history if self._is_full(1.0, o)]
        candidates += [
            (z, o) for (z, o), f in zip(self.trials_, self.fidelities_) if self._is_full(f, o)
        ]
        if not candidates:
            return None
        scores = np.array([value_of(self.problem_, tuple(z), o) for z, o in candidates])
        if np.all(np.isinf(scores)):  # all failed: the first is as good as any
            return candidates[0]
        return candidates[int(np.argmin(scores))]
