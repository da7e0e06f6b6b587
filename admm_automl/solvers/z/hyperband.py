"""Hyperband adapted to algorithm selection (Kishimoto et al., 2021, Appendix C; Li et al. 2018)."""

from __future__ import annotations

import math

import numpy as np

from ...exceptions import InvalidParameterError
from ...records import Observation
from ..registry import Z_SOLVERS
from ..base import random_z
from ...problem import pipeline_index
from ._fidelity import Program, ProgramZSolver, value_of


@Z_SOLVERS.register("hyperband")
class HyperbandZSolver(ProgramZSolver):
    """Hyperband over pipelines: successive halving brackets on training-set size.

    The resource is the number of training rows; its levels are the shared schedule b·η^k
    (k ≥ 1: bη rows first, as for BLDS and DAUB) with the whole training split as the last
    level, so the maximum resource R is the training-set size and s_max + 1 is the number of
    levels. Bracket s (s = s_max … 0) draws n = ceil((s_max + 1)/(s + 1) · η^s) pipelines
    uniformly without replacement, trains them at level s_max − s, and keeps the best
    floor(n_i/η) at each higher level. One pass over all
    brackets is one Hyperband iteration; iterations repeat until the budget ends.

    Parameters
    ----------
    b : float, default=100
        Base size in rows: the lowest level is ``b * eta`` rows.
    eta : float, default=2
        Growth factor of the levels and the halving rate.

    Notes
    -----
    * Our choice where the paper leaves the rung sizes open: rungs are the shared b·η^k levels
      (not Li et al.'s R·η^-k), so Hyperband, BLDS and DAUB train the same nested subsets, as the
      paper's "same growth strategy" suggests, and share the objective's cache; a cache keyed by
      (pipeline, level) reuses results within and across iterations (Kishimoto et al., 2021,
      Appendix C). Ties in the top-k are broken by pipeline index, so runs are reproducible.
      Brackets draw without replacement (the paper does not say). The problem's history entries
      on the ladder enter that cache (a start evaluated at the first level is not trained again
      there when a bracket draws it).
    * A warm start (``problem.warm_start``: a portfolio's pipelines) fills the next brackets'
      draws before uniform ones, in its order, so successive halving decides which of them get
      more data (Li et al. 2018 draw uniformly; a start found good elsewhere is what a user
      expects a search to try first).
    * Values are ``problem.augment``; failed or non-finite values rank last.
    * Inside ADMM, θ changes between z-min calls: the cache is **cleared in update_problem** and
      the next call starts the *next* bracket afresh under the new θ (brackets rotate across
      calls, so small z-min budgets still reach full-fidelity brackets).

    References
    ----------
    L. Li, K. Jamieson, G. DeSalvo, A. Rostamizadeh, A. Talwalkar. Hyperband: A novel
    bandit-based approach to hyperparameter optimization. JMLR 18(185), 2018.
    A. Kishimoto et al. Bandit Limited Discrepancy Search and Application to Machine Learning
    Pipeline Optimization. AutoML Workshop at ICML 2021, Appendix C.
    """

    places_warm_start = True

    def __init__(self, b: float = 100, eta: float = 2.0) -> None:
        self.b = b
        self.eta = eta

    def _init_state(self) -> None:
        if not self.eta > 1:
            raise InvalidParameterError(f"hyperband: eta must be > 1, got {self.eta!r}")
        self.next_bracket_ = 0  # position in s_max, s_max - 1, ..., 0
        self.n_iterations_ = 0
        self.drawn_: set[tuple[int, ...]] = set()  # warm-start pipelines already in a bracket
        self._seed_cache()

    def _on_new_problem(self) -> None:
        self._seed_cache()
        self._restart_program()

    def _seed_cache(self) -> None:
        """A fresh cache holding the history entries on the ladder."""
        self.cache_: dict[tuple[tuple[int, ...], int], float] = {
            (z, level): value_of(self.problem_, z, obs) if obs.ok else math.inf
            for z, level, obs in self.history_levels()
        }

    def _value(self, z: tuple[int, ...], level: int) -> Program:
        key = (z, level)
        if key not in self.cache_:
            self._n_trained += 1
            obs: Observation = yield z, level
            self.cache_[key] = value_of(self.problem_, z, obs) if obs.ok else math.inf
        return self.cache_[key]

    def _sample(self, n: int) -> list[tuple[int, ...]]:
        """n distinct pipelines (fewer if the space is smaller): the warm start's not yet drawn
        first, then uniform ones."""
        n_choices = self.problem_.n_choices
        total = int(np.prod(n_choices))
        n = min(n, total)
        out: list[tuple[int, ...]] = []
        while len(out) < n and (z := self._warm_next(self.drawn_)) is not None:
            self.drawn_.add(z)
            out.append(z)
        if len(out) == n:
            return out
        if total <= 4 * n:
            idx = (self.rng_.choice(total, size=n, replace=False) if not out
                   else self.rng_.permutation(total))
            rest = (tuple(int(j) for j in np.unravel_index(int(i), n_choices)) for i in idx)
            return out + [z for z in rest if z not in out][: n - len(out)]
        seen: set[tuple[int, ...]] = set(out)
        while len(out) < n:
            z = random_z(self.rng_, n_choices)
            if z not in seen:
                seen.add(z)
                out.append(z)
        return out

    def _bracket(self, s: int, s_max: int) -> Program:
        eta = float(self.eta)
        n = int(math.ceil((s_max + 1) / (s + 1) * eta**s))
        configs = self._sample(n)
        n_choices = self.problem_.n_choices
        for i in range(s + 1):
            level = s_max - s + i
            values = []
            for z in configs:
                v = yield from self._value(z, level)
                values.append((v, pipeline_index(z, n_choices), z))
            if i == s:
                break
            keep = max(1, int(math.floor(n * eta ** (-i - 1))))
            values.sort(key=lambda t: (t[0], t[1]))
            configs = [z for _, _, z in values[:keep]]

    def _program(self) -> Program:
        self._n_trained = 0
        idle = 0
        while idle <= 10 * (self.ladder_.top + 2):  # every draw cached: the space is exhausted
            before = self._n_trained
            s_max = self.ladder_.top
            brackets = list(range(s_max, -1, -1))
            s = brackets[self.next_bracket_ % len(brackets)]
            self.next_bracket_ = (self.next_bracket_ + 1) % len(brackets)
            if self.next_bracket_ == 0:
                self.n_iterations_ += 1
            yield from self._bracket(s, s_max)
            idle = idle + 1 if self._n_trained == before else 0
