"""DAUB (Data Allocation using Upper Bounds) for pipelines (Kishimoto et al., 2021, Appendix C)."""

from __future__ import annotations

import heapq
import math

import numpy as np

from ...exceptions import InvalidParameterError
from ...records import Observation
from ..registry import Z_SOLVERS
from ..base import random_z
from ...problem import all_pipelines
from ._fidelity import Program, ProgramZSolver, value_of


@Z_SOLVERS.register("daub")
class DAUBZSolver(ProgramZSolver):
    """DAUB over pipelines: bootstrap every pipeline, then grow the most promising one's data.

    Every pipeline is first trained at the two lowest levels (bη and bη² rows, on the ladder
    BLDS and Hyperband share; the bootstrap). A priority queue then orders pipelines by an
    optimistic projection of their full-data value: the latest value minus the rate of
    improvement (least-squares slope over the last ``window`` levels) times the rows still to
    come. The top pipeline gets the next level
    (η times more rows); a pipeline trained on the whole training split leaves the queue, and the
    search goes on until the queue is empty (Kishimoto et al., 2021, Appendix C).

    Parameters
    ----------
    b : float, default=100
        Base size in rows: the first level is ``b * eta`` rows.
    eta : float, default=2
        Growth factor of the levels.
    window : int, default=3
        Number of most recent levels in the slope regression.
    max_pipelines : int, default=20000
        Spaces with more pipelines are represented by a uniform random subset of this size.

    Notes
    -----
    Choices made where neither Kishimoto et al. nor Sabharwal et al. fix the details: bootstrap at
    the two lowest levels (two points are needed for a slope); regression window 3; no
    training-loss cap (the objective reports validation values only); the projection is clamped
    at ``min(0, latest value)``; failed pipelines leave the queue. Pipelines not yet bootstrapped
    come first, in an order drawn once from the solver's rng (ties are broken by that rank, so
    runs are reproducible), so an interrupted bootstrap is a uniform sample of the space rather
    than its first corner. Values are ``problem.augment``.

    A history entry trained on a lower level's rows (a start evaluated at the first level,
    ``SelectionOptimizer(initial_fidelity=...)``) is that pipeline's training at that level: it
    enters the learning curve and the pipeline is bootstrapped first, so the shared start is
    not trained again at the same level; a failed one leaves the queue.

    Inside ADMM (θ changes between z-min calls), the learning curves measured under the old θ
    are **dropped in update_problem**, but the queue order is kept as a prior: when a pipeline is
    popped, its latest two levels are re-asked under the new θ (the objective's cache answers
    them for free when its θ did not change) before it gets more data. Pipelines already trained
    on full data stay out of the queue; the tuned selection arrives as ``problem.history``.
    A warm start (``problem.warm_start``: a portfolio's pipelines) is bootstrapped first, in
    its order, so DAUB's projections decide which of them get more data.

    References
    ----------
    A. Sabharwal, H. Samulowitz, G. Tesauro. Selecting near-optimal learners via incremental data
    allocation. AAAI 2016.
    A. Kishimoto et al. Bandit Limited Discrepancy Search and Application to Machine Learning
    Pipeline Optimization. AutoML Workshop at ICML 2021, Appendix C.
    """

    places_warm_start = True

    def __init__(
        self, b: float = 100, eta: float = 2.0, window: int = 3, max_pipelines: int = 20000
    ) -> None:
        self.b = b
        self.eta = eta
        self.window = window
        self.max_pipelines = max_pipelines

    # ------------------------------------------------------------------ state
    def _init_state(self) -> None:
        if not isinstance(self.window, (int, np.integer)) or self.window < 2:
            raise InvalidParameterError(
                f"daub: window must be an integer >= 2, got {self.window!r}"
            )
        n_choices = self.problem_.n_choices
        total = int(np.prod(n_choices))
        if total <= int(self.max_pipelines):
            pipelines = [tuple(z) for z in all_pipelines(n_choices).tolist()]
        else:
            seen: set[tuple[int, ...]] = set()
            while len(seen) < int(self.max_pipelines):
                seen.add(random_z(self.rng_, n_choices))
            pipelines = sorted(seen)
        rank = self.rng_.permutation(len(pipelines))
        self.rank_ = {z: int(r) for z, r in zip(pipelines, rank)}
        self.level_: dict[tuple[int, ...], int] = {}  # highest level trained (any θ)
        self.curve_: dict[tuple[int, ...], dict[int, float]] = {}  # level -> value, current θ
        self.done_: set[tuple[int, ...]] = set()
        self.key_: dict[tuple[int, ...], float] = {z: -math.inf for z in pipelines}
        self.queue_ = [(-math.inf, self.rank_[z], z) for z in pipelines]
        heapq.heapify(self.queue_)
        self._mark_history()
        self._queue_warm_start()

    def _queue_warm_start(self) -> None:
        """The warm start's pipelines are bootstrapped first, in its order (ranks below the
        history's -1; a pipeline outside a sampled space joins it)."""
        warm = getattr(self.problem_, "warm_start", None)
        found = [tuple(int(j) for j in z) for z in (warm() if warm is not None else ())]
        for i, z in enumerate(found):
            if z not in self.done_ and self.key_.setdefault(z, -math.inf) == -math.inf:
                heapq.heappush(self.queue_, (-math.inf, i - len(found) - 1, z))

    def _on_new_problem(self) -> None:
        self.curve_ = {}
        self._mark_history()
        self._restart_program()

    def _mark_history(self) -> None:
        """Fully trained (or failed) history entries leave the queue; lower-level ones start
        their curve and go first (a pipeline outside a sampled space joins it)."""
        for z, level, obs in self.history_levels():
            if z in self.done_:
                continue
            if level >= self.ladder_.top or math.isinf(self._record(z, level, obs)):
                self.done_.add(z)
            elif self.key_.setdefault(z, -math.inf) == -math.inf:  # not yet bootstrapped
                heapq.heappush(self.queue_, (-math.inf, -1, z))

    # ------------------------------------------------------------------ DAUB
    def projected(self, z: tuple[int, ...]) -> float:
        """Optimistic projection of the full-data value from the latest ``window`` levels."""
        curve = self.curve_[z]
        levels = sorted(curve)[-int(self.window):]
        rows = np.array([self.ladder_.rows[k] for k in levels])
        values = np.array([curve[k] for k in levels])
        last = float(values[-1])
        if len(levels) < 2:
            return last
        slope = float(np.polyfit(rows, values, 1)[0])
        rate = max(0.0, -slope)
        bound = last - rate * (self.ladder_.rows[-1] - rows[-1])
        return max(bound, min(0.0, last))

    def _record(self, z: tuple[int, ...], level: int, obs: Observation) -> float:
        """Enter the value of ``z`` at ``level`` in its curve (+inf when it failed)."""
        v = value_of(self.problem_, z, obs) if obs.ok else math.inf
        self.curve_.setdefault(z, {})[level] = v
        self.level_[z] = max(self.level_.get(z, -1), level)
        return v

    def _train(self, z: tuple[int, ...], level: int) -> Program:
        obs: Observation = yield z, level
        return self._record(z, level, obs)

    def _program(self) -> Program:
        top = self.ladder_.top
        while self.queue_:
            key, rank, z = heapq.heappop(self.queue_)
            if z in self.done_ or key != self.key_.get(z):
                continue  # a stale entry
            last = self.level_.get(z, -1)
            # bootstrap (levels 0 and 1), or re-measure the latest two levels under this θ
            needed = range(0, min(1, top) + 1) if last < 0 else range(max(0, last - 1), last + 1)
            failed = False
            for level in needed:
                if level not in self.curve_.get(z, {}):
                    v = yield from self._train(z, level)
                    failed = failed or math.isinf(v)
            if not failed and last >= 0 and self.level_[z] < top:
                v = yield from self._train(z, self.level_[z] + 1)  # allocate η times more data
                failed = math.isinf(v)
            if failed or self.level_[z] >= top:
                self.done_.add(z)
                continue
            self.key_[z] = self.projected(z)
            heapq.heappush(self.queue_, (self.key_[z], rank, z))
