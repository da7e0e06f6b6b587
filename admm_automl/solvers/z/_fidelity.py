"""Shared machinery of the multi-fidelity z-solvers (BLDS, DAUB, Hyperband).

* :func:`fidelity_levels` turns ``(b, η, n_train)`` into the training-data fractions of the
  schedule of Kishimoto et al. (2021): the k-th training of a pipeline uses b·η^k rows (bη, bη²,
  …; 200, 400, 800, … at their b = 100, η = 2), the last level being the whole training split.
  BLDS, DAUB and Hyperband share this ladder, as the paper's three methods "use the same strategy
  to increase the subset of training data".
* :class:`Ladder` holds those levels with their row counts (for confidence radii and learning
  curves).
* :meth:`ProgramZSolver.history_levels` places the problem's history on the ladder, so that a
  start evaluated at the first level (``SelectionOptimizer(initial_fidelity=...)``) counts as
  that pipeline's first training.
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
    first_power: int = 1,
) -> tuple[float, ...]:
    """Training-data fractions of the levels b·η^k rows (k = 1, 2, …), ending at full data.

    The first level is bη rows, not b. Kishimoto et al. (2021) write both: their text says the
    k-th training of a pipeline "selects bη^k samples" (citing Sabharwal et al., 2016), and
    their worked example (Appendix, Figure 3) retrains a candidate "with an increased training
    subset (i.e., 400 samples)" after its first training, which is 200 = bη rows at b = 100,
    η = 2; only their D_k = Σ_{j=1..k} bη^(j−1), and one sentence on the first evaluation ("after
    training p with b samples"), count the first training as b. We follow the schedule the text
    states and the example shows.

    Parameters
    ----------
    n_train : int or None
        Training rows at full fidelity. ``None`` (unknown) gives full fidelity only, unless a
        ``fidelity`` range is given: then the levels are ``hi·η^-k`` down to ``lo``.
    b, eta : float
        Base size in rows and growth factor (Kishimoto et al., 2021: 100 and 2); the first level
        is ``b * eta`` rows.
    fidelity : (lo, hi), optional
        Admissible range of fractions (``ZProblem.fidelity``); the last level is ``hi``.
    first_power : {1, 0}, default=1
        The exponent of the first level, b·η^first_power rows. 1 is the schedule above, which
        DAUB and Hyperband use; 0 starts the ladder at b rows (b, bη, bη², …), the other reading
        of Kishimoto et al. (2021), offered by ``BLDSZSolver(first_size="b")``.

    Returns
    -------
    tuple of float
        Increasing fractions in (0, 1]; the last one is ``hi`` (1.0 without a range). Fraction f
        trains on exactly ``ceil(f * n_train)`` = b·η^k rows. A training split of at most
        b·η^first_power rows has the full-data level only.
    """
    if not b > 0 or not eta > 1:
        raise InvalidParameterError(
            f"fidelity levels need b > 0 and eta > 1, got b={b!r}, eta={eta!r}"
        )
    if first_power not in (0, 1) or isinstance(first_power, bool):
        raise InvalidParameterError(
            f"fidelity levels need first_power 0 or 1, got {first_power!r}"
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
    k = first_power  # the first training uses b·η rows (b with first_power=0)
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

    With ``n_train`` unknown, rows are nominal: the first level counts as ``b·η`` rows (``b``
    with ``first_power=0``) and the others scale with their fraction (so radii and slopes keep
    the paper's units).
    """

    fractions: tuple[float, ...]
    rows: tuple[float, ...]

    @classmethod
    def for_problem(
        cls, problem: ZProblem, b: float, eta: float, first_power: int = 1
    ) -> "Ladder":
        n_train = problem.n_train
        fractions = fidelity_levels(n_train, b=b, eta=eta, fidelity=problem.fidelity,
                                    first_power=first_power)
        if n_train:
            rows = tuple(float(math.ceil(f * n_train)) if f < 1.0 else float(n_train)
                         for f in fractions)
        else:
            rows = tuple(b * eta**first_power * f / fractions[0] for f in fractions)
        return cls(fractions, rows)

    @property
    def top(self) -> int:
        return len(self.fractions) - 1

    def cumulative(self, k: int) -> float:
        """D: rows consumed by the first k+1 trainings (levels 0..k) of a pipeline.

        The sum of the sizes actually used (the last one capped at the training-set size), not
        Kishimoto et al.'s (2021) printed D_k = Σ_{j=1..k} bη^(j−1). That sum is the data a
        pipeline has consumed when its j-th training uses bη^(j−1) rows; with the schedule we
        follow by default (bη^j rows, :func:`fidelity_levels`) it would undercount every
        pipeline's data by the factor η and count the first training as b rows it never had. On
        a ladder that starts at b rows (``first_power=0``) the two agree at every level below
        full data: D = b, b + bη, … The paper's stated purpose of D_k, making the bounds
        "account for the training data size", is served by the rows actually consumed.
        """
        return float(sum(self.rows[: k + 1]))

    def level_at(self, fidelity: float, n_train: int | None) -> int | None:
        """The level that trains on the same rows as ``fidelity`` (``ceil(f · n_train)``), or None
        when no level does. Without ``n_train``, fractions are compared up to rounding."""
        for k, f in enumerate(self.fractions):
            if n_train:
                if math.ceil(fidelity * n_train) == math.ceil(f * n_train):
                    return k
            elif abs(fidelity - f) <= 1e-12:
                return k
        return None


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
        self.ladder_ = self._ladder_for(self.problem_)
        self.fidelities_: list[float] = []
        self._init_state()
        self._restart_program()

    def update_problem(self, problem: ZProblem) -> None:
        super().update_problem(problem)
        self.fidelities_ = []
        self.ladder_ = self._ladder_for(problem)
        self._on_new_problem()

    # ------------------------------------------------------------------ hooks
    def _ladder_for(self, problem: ZProblem) -> Ladder:
        """The fidelity ladder of ``problem`` (default: the shared one, first level bη rows)."""
        return Ladder.for_problem(problem, self.b, self.eta)

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

    def history_levels(self) -> list[tuple[tuple[int, ...], int, Observation]]:
        """The problem's history entries that sit on the ladder, as ``(z, level, observation)``.

        An entry at full fidelity (or above the top of a ``fidelity`` range) is at the top level;
        one trained on a lower level's rows is that pipeline's training at that level (a start
        evaluated at the first level is its first training); entries between levels are left
        out, as they fit no solver's schedule.
        """
        out = []
        for z, obs in self.problem_.history:
            if obs is None:
                continue
            level = (self.ladder_.top if self._is_full(1.0, obs)
                     else self.ladder_.level_at(float(obs.fidelity), self.problem_.n_train))
            if level is not None:
                out.append((tuple(int(j) for j in z), level, obs))
        return out

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
