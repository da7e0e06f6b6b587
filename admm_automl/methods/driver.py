"""Budget, recording and the iteration driver that every optimiser composes (numpy only).

* :class:`Schedule` — evaluations per sub-problem call at iteration t (fixed or adaptive, Liu et al.,
  AAAI 2020, §5).
* :class:`Budget` — the evaluation and wall-clock limits of a run.
* :class:`RunOptions` — what every optimiser's run is configured with (budgets, seed, schedule,
  constraints, callback, listeners, batch size, clock).
* :class:`RunListener` — what a run reports as it happens (start, each batch before and after it is
  evaluated, each iteration, the end): the hook of progress displays, which every optimiser composed
  from the recorder and :func:`drive` feeds without any code of its own.
* :class:`Recorder` — evaluates ``(z, θ, fidelity)`` points through the engine within the budget and
  keeps every evaluation and the incumbent (the best observation by
  :meth:`~admm_automl.constraints.ranking.Constraints.rank` over *all* full-fidelity evaluations).
* :func:`drive` — the outer loop: one iteration after another until the budget, a callback or an
  exhausted space stops it, one trace row per iteration.

ADMM, JOPT, algorithm selection alone and the benchmark's peers compose these; none inherits from
another.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
import weakref
from collections import Counter, deque
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import numpy as np

from ..clock import Deadline
from ..constraints.ranking import Constraints
from ..exceptions import BudgetExhausted, DriverBoundWarning, InvalidParameterError
from ..records import NO_WORKER_LEFT, Observation, Request, Status
from ..space.encoding import Encoding

logger = logging.getLogger(__name__)

#: ``engine(requests, time_left=seconds | None, tags=dict) -> observations``
Engine = Callable[..., list[Observation]]
#: a point to evaluate: ``(z, θ (relaxed), fidelity)``, or ``(z, θ, fidelity, iterations)`` with a
#: training length (the second fidelity of an iterative learner)
Point = tuple
#: ``inner_iter="auto"``: no sub-problem call makes more than this share of the evaluations the
#: budget has left (:meth:`Schedule.capped`)
AUTO_SHARE = 0.25


@dataclass(frozen=True)
class Schedule:
    """Evaluations per sub-problem call: ``min(start + step * t, maximum)`` at iteration t.

    ``step=0`` is fixed-I ADMM; ``step=8`` or ``16`` with ``maximum=128`` is Liu et al.'s
    AdADMM-F8 / AdADMM-F16. ``floor``: no call makes fewer evaluations than this (a run sets it
    to its number of workers: :meth:`RunOptions.drive`).

    ``share`` (0: off) sizes the schedule to the budget: no call makes more than this fraction
    of the evaluations the budget has left (:meth:`capped`; under a time budget, estimated from
    the measured seconds per evaluation so far, :meth:`Recorder.evaluations_left`). Liu et al.
    (2020) ran AdADMM-F16 for an hour and more, ~1000 evaluations; at a budget of 20 to 60
    evaluations its first θ-step (16) would take most of the run before the first z-step. With
    a quarter, an ADMM iteration (a θ- and a z-step) takes at most about half of what is left,
    so every budget gets several z-steps, and long runs grow to the paper's schedule.
    """

    start: int = 16
    step: int = 16
    maximum: int = 128
    floor: int = 1
    share: float = 0.0

    def __post_init__(self) -> None:
        if (self.start < 1 or self.step < 0 or self.maximum < self.start or self.floor < 1
                or not 0.0 <= self.share <= 1.0):
            raise InvalidParameterError(
                "the iteration schedule needs start >= 1, step >= 0, maximum >= start, "
                f"floor >= 1 and 0 <= share <= 1; got start={self.start!r}, "
                f"step={self.step!r}, maximum={self.maximum!r}, floor={self.floor!r}, "
                f"share={self.share!r}"
            )

    @classmethod
    def of(cls, start: int | str, step: int, maximum: int) -> "Schedule":
        """The estimator's schedule: ``start="auto"`` is Liu et al.'s AdADMM-F16 start (16,
        or ``maximum`` if smaller) sized to the budget (``share`` :data:`AUTO_SHARE`); a number
        is the schedule as given, as in the paper."""
        if start == "auto":
            return cls(min(16, maximum), step, maximum, share=AUTO_SHARE)
        return cls(start, step, maximum)

    def __call__(self, t: int) -> int:
        return int(max(min(self.start + self.step * t, self.maximum), self.floor))

    def capped(self, n: int, left: float) -> int:
        """``n`` evaluations for one call, at most ``share`` of the ``left`` the budget has (at
        least ``floor``, and ``n`` itself when ``share`` is 0)."""
        if not self.share or not math.isfinite(left):
            return int(n)
        return int(max(min(n, math.ceil(self.share * max(left, 0.0))), self.floor))


class Budget:
    """The limits of a run: ``max_evals`` new evaluations and/or the time budget of ``deadline``
    (the run's one clock, :class:`~admm_automl.clock.Deadline`; a caller that starts it early
    counts its own set-up, such as starting worker processes), optimiser overhead included.
    ``reserve()``, when given, is the seconds of the budget kept back for work after the run (the
    estimator's refit); it is read at every check, so it may grow with what the run learns."""

    def __init__(
        self,
        max_evals: int | None,
        deadline: Deadline,
        *,
        reserve: Callable[[], float] | None = None,
    ) -> None:
        if max_evals is None and deadline.budget is None:
            raise InvalidParameterError("give max_evals or time_budget (or both)")
        self.max_evals = max_evals
        self.deadline = deadline
        self.reserve = reserve

    @property
    def time_budget(self) -> float | None:
        return self.deadline.budget

    @property
    def clock(self) -> Callable[[], float]:
        return self.deadline.clock

    def elapsed(self) -> float:
        return self.deadline.elapsed()

    def time_left(self) -> float | None:
        """Seconds left for the run: the budget less the time elapsed and the reserve."""
        left = self.deadline.left()
        if left is None:
            return None
        return left - (0.0 if self.reserve is None else float(self.reserve()))


class RunListener:
    """Receives what a run does as it happens; every method is a no-op here, so a listener
    overrides only what it needs (:class:`admm_automl.reporting.progress.ProgressDisplay` is one).

    The recorder and :func:`drive` call them in the process and on the thread that runs the
    optimiser (never in worker processes), after the engine has recorded the evaluations in the
    journal. A listener only reads the recorder: it must not evaluate or change it; it may stop
    the run by raising :class:`~admm_automl.exceptions.BudgetExhausted` with a stop reason (the
    estimator's ``callbacks`` do). The run set-up around the search tells them :meth:`stage`
    and :meth:`note`.
    """

    def stage(self, text: str) -> None:
        """What the run does outside the search, such as ``"preparing the data"`` or
        ``"refitting the best pipeline"``; the next stage or the search replaces it."""

    def note(self, text: str) -> None:
        """A fact about the whole run, such as that it resumed an earlier session's journal."""

    def run_started(self, recorder: "Recorder", name: str) -> None:
        """The run ``name`` (``"ADMM"``, ``"JOPT"``, ...) starts; ``recorder.budget`` is set."""

    def evaluating(self, recorder: "Recorder", points: Sequence[Point], phase: str) -> None:
        """``points`` (``(z, θ, fidelity)``) are about to be evaluated in ``phase``."""

    def evaluated(self, recorder: "Recorder", items: Sequence["Evaluated"]) -> None:
        """``items`` were evaluated (cache hits included, ``observation.cached``) and recorded;
        ``recorder.incumbent`` is up to date."""

    def iteration_done(self, recorder: "Recorder", row: dict[str, Any]) -> None:
        """An iteration ended with this trace row."""

    def run_finished(self, recorder: "Recorder", stop_reason: str) -> None:
        """The run ended: ``"max_evals"``, ``"time_budget"``, ``"callback"``, ``"exhausted"``,
        ``"no_workers"`` (no worker process was left to run a trial), or ``"error"`` when an
        exception (an interrupt included) stops it."""


@dataclass(frozen=True)
class RunOptions:
    """The settings every optimiser's run shares.

    Parameters
    ----------
    schedule : Schedule
        New evaluations per sub-problem call at each iteration.
    max_evals, time_budget : int or None, float or None
        Stop after this many new evaluations / seconds of wall clock, overhead included (at least
        one is needed). An evaluation is not started when the time left is below the fastest one
        so far; the engine stops one that would overrun (with an executor that can stop it).
    seed : int or numpy.random.SeedSequence
        Source of the solvers' random streams.
    callback : callable, optional
        Called with each trace row; returning True stops the run.
    listeners : sequence of RunListener
        Told about the run as it happens (a progress display).
    constraints : sequence
        Black-box constraints (objects with ``key``, ``threshold``, ``sense``), measured by the
        engine into ``observation.constraints[key]``.
    constraint_mode : {"admm", "penalty", "filter"} or None
        How the search treats them (:mod:`admm_automl.methods.lagrangian`); None is the method's default.
        ``penalty_weight`` is the weight of ``"penalty"``.
    max_idle_iterations : int
        Stop when this many consecutive iterations make no new evaluation (space exhausted).
    batch_size : int
        Suggestions per batch for batch-capable solvers (the number of parallel workers).
    clock : callable, default=time.monotonic
        The clock of the time budget (a test simulates time with its own).
    deadline : Deadline, optional
        The run's clock when the caller started it before the run, so that the budget counts the
        caller's set-up too (the estimator's data checks and worker start-up); it carries the
        time budget and the clock (``time_budget`` and ``clock``, if given too, must be its own).
        Default: ``Deadline(time_budget, clock=clock)`` started with the run.
    reserve : callable, optional
        Seconds of the time budget to keep back for the caller's work after the run (the
        estimator's refit), asked at every check (:class:`Budget`).
    asynchronous : bool, default=False
        Hand a worker its next trial as soon as it is free (the engine's ``submit``/``collect``)
        instead of evaluating in batches of ``batch_size`` that wait for their slowest trial;
        the sub-problems get ``submit``/``collect`` (:mod:`admm_automl.problem`). With one
        worker the history is that of a batch run.
    overhead_aware : bool or None
        Whether the solvers that can (``supports_cheap_proposals``) add cheap proposals to a
        batch when their asks cost more than the evaluations
        (:class:`~admm_automl.solvers.loop.OverheadBalance`); None (default): on
        under a time budget, where the history depends on the clock anyway, off otherwise, so
        that the same seed and evaluation budget give the same history.
    """

    schedule: Schedule = Schedule()
    max_evals: int | None = None
    time_budget: float | None = None
    seed: Any = None
    callback: Callable[[dict[str, Any]], Any] | None = None
    listeners: Sequence[RunListener] = ()
    constraints: Sequence[Any] = ()
    constraint_mode: str | None = None
    penalty_weight: float = 1.0
    max_idle_iterations: int = 5
    batch_size: int = 1
    clock: Callable[[], float] = time.monotonic
    deadline: Deadline | None = None
    reserve: Callable[[], float] | None = None
    asynchronous: bool = False
    overhead_aware: bool | None = None

    def __post_init__(self) -> None:
        if self.deadline is not None:
            if (self.time_budget not in (None, self.deadline.budget)
                    or self.clock not in (time.monotonic, self.deadline.clock)):
                raise InvalidParameterError(
                    f"time_budget={self.time_budget!r} or clock={self.clock!r} differs from "
                    f"the deadline's ({self.deadline.budget!r}, {self.deadline.clock!r}): give "
                    "the time budget and its clock once, as deadline= or as time_budget= and "
                    "clock=")
            object.__setattr__(self, "time_budget", self.deadline.budget)
            object.__setattr__(self, "clock", self.deadline.clock)
        if self.max_evals is None and self.time_budget is None:
            raise InvalidParameterError("give max_evals or time_budget (or both)")

    @property
    def cheap_proposals(self) -> bool:
        """Whether the sub-problems are overhead-aware (``overhead_aware``, resolved)."""
        if self.overhead_aware is None:
            return self.time_budget is not None
        return bool(self.overhead_aware)

    def _seed_streams(self) -> list[np.random.SeedSequence]:
        """The run's three seed sequences: the θ-solver's, the z-solver's and the start's,
        spawned from a fresh copy of the seed (so every call, and every run of an optimiser,
        gets the same streams). Child i of a SeedSequence depends only on the seed and i, so
        the first two are those that two children per seed gave before the third was added."""
        seed = self.seed
        if isinstance(seed, np.random.SeedSequence):  # a copy: spawning counts its children
            seq = np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key,
                                         pool_size=seed.pool_size)
        else:
            seq = np.random.SeedSequence(seed)
        return seq.spawn(3)

    def solver_seeds(self) -> tuple[np.random.SeedSequence, np.random.SeedSequence]:
        """The θ-solver's and the z-solver's seed sequences, spawned from the seed."""
        theta, z, _ = self._seed_streams()
        return theta, z

    def start_seed(self) -> np.random.SeedSequence:
        """The seed sequence of a random initial pipeline: the same for every method and solver
        run with this seed, so that they all start from the same pipeline."""
        return self._seed_streams()[2]

    def recorder(self, encoding: Encoding, engine: Engine, constraints: Constraints) -> "Recorder":
        """A recorder over ``engine`` with this run's budget, on ``deadline`` (default: a clock
        started now)."""
        deadline = self.deadline or Deadline(self.time_budget, clock=self.clock)
        budget = Budget(self.max_evals, deadline, reserve=self.reserve)
        return Recorder(encoding, engine, budget, constraints, listeners=self.listeners,
                        workers=self.batch_size)

    def loop_fields(self, recorder: "Recorder") -> dict[str, Any]:
        """The ``overhead_aware`` and ``clock`` fields of a sub-problem: cheap proposals as this
        run asks, timed on its budget's clock (a simulated clock times asks and evaluations
        alike, so a toy run's history does not depend on the machine's load)."""
        return {"overhead_aware": self.cheap_proposals, "clock": recorder.budget.clock}

    def asynchronous_hooks(self, recorder: "Recorder", phase: str,
                           point: Callable[[Any], Point],
                           done: Callable[[Any, Observation], Any],
                           config: Callable[[Point], Any] | None = None) -> dict[str, Any]:
        """The ``submit``/``collect``/``free_workers`` fields of a sub-problem whose suggestions
        become points by ``point(suggestion)`` and whose answers ``done(suggestion,
        observation)`` records (None fields when the run is not asynchronous), and ``overlap``:
        a sub-solver's run may end with its last trials in flight, which ``done`` records when
        they end, during a later step (:meth:`Recorder.collect`) or at the end of the run
        (:meth:`Recorder.drain`). ``config(point)``, the inverse of ``point`` (None for a point
        the sub-problem cannot propose), gives the sub-problem's ``in_flight``."""
        if not self.asynchronous:
            return {}

        def submit(suggestion: Any) -> int:
            return recorder.submit(point(suggestion), phase,
                                   on_done=lambda obs: done(suggestion, obs))

        return {"submit": submit, "collect": recorder.collect,
                "free_workers": recorder.free_workers, "overlap": True,
                "in_flight": recorder.pending.view(config) if config is not None else None}

    def drive(self, recorder: "Recorder", iterate: Callable[[int], Any],
              summarize: Callable[[int], dict[str, Any]], start: Callable[[], Any],
              name: str) -> tuple[list[dict[str, Any]], str]:
        """:func:`drive` with this run's schedule, callback and idle limit. No sub-problem call
        makes fewer evaluations than there are workers (``batch_size``): a step of 16 trials on
        64 workers would leave 48 idle whatever the engine does, and a step of 64 takes the wall
        time of one of 16 (Liu et al. 2020 evaluate one pipeline at a time, so their schedule
        never meets this; where it asks for more than the workers, it is kept)."""
        schedule = replace(self.schedule, floor=max(self.schedule.floor, int(self.batch_size)))
        return drive(recorder, schedule, iterate, summarize, start=start,
                     callback=self.callback, max_idle_iterations=self.max_idle_iterations,
                     name=name)


def metric_worst(engine: Engine) -> float | None:
    """The worst value of the engine's metric (the loss's upper bound: 1 for 1 − AUROC), or None
    where it has none or the engine has no metric (a benchmark function, a test engine). Read
    from the pipeline objective's trial context (``engine.ctx.metric.worst``); not the failure
    loss, which for an unbounded metric is a constant predictor's loss, not a bound."""
    metric = getattr(getattr(engine, "ctx", None), "metric", None)
    worst = getattr(metric, "worst", None)
    return float(worst) if isinstance(worst, (int, float)) and not isinstance(worst, bool) else None


def tell(listeners: Sequence[RunListener], *, stage: str | None = None,
         note: str | None = None) -> None:
    """Tell every listener the run's ``stage`` or a ``note`` (see :class:`RunListener`)."""
    for listener in listeners:
        if stage is not None:
            listener.stage(stage)
        if note is not None:
            listener.note(note)


#: :class:`ProposalWaits` warns when the workers wait for proposals more than this share of
#: the time they run trials
WAIT_WARN_SHARE = 0.1


class ProposalWaits:
    """How long freed workers wait for their next trial: from the moment an answer is
    recorded (its worker is free) to the next submission. A worker that waits is waiting for
    the driver, whose proposals (the solvers' asks, the steps between them) then set the pace,
    not the trials; the run's summary and ``experiments/scale.py`` read the totals, and a
    warning is logged once when, over a window of ``max(16, 4·workers)`` trials, the waits
    add up to more than :data:`WAIT_WARN_SHARE` of the trials' own durations (and again each
    time the share doubles). Answers from the cache took no worker and count for nothing."""

    def __init__(self, workers: int) -> None:
        self.workers = max(1, int(workers))
        self.window = max(16, 4 * self.workers)
        self.waited = 0.0  # seconds workers waited, in all
        self.busy = 0.0  # seconds of the trials answered, in all
        self.trials = 0
        self._free: deque[float] = deque()  # when each freed worker became free
        self._slots: dict[Any, tuple[float, float]] = {}  # by ticket: its worker's (freed, wait)
        self._window = [0.0, 0.0, 0]  # waited, busy, trials of the current window
        self._warned = 0.0

    def answered(self, now: float, obs: Observation, ticket: int | None = None) -> None:
        slot = self._slots.pop(ticket, None)
        if obs.cached:  # answered without a worker: the one it was meant for is still free
            if slot is not None:
                self._free.appendleft(slot[0])
                self.waited -= slot[1]
                self._window[0] = max(0.0, self._window[0] - slot[1])
            return
        if obs.budget_stop:
            return
        self._free.append(now)
        self.busy += obs.duration
        self.trials += 1
        self._window[1] += obs.duration
        self._window[2] += 1
        if self._window[2] >= self.window:
            self._check()

    def submitted(self, now: float, ticket: int | None = None) -> None:
        if self._free:
            freed = self._free.popleft()
            wait = max(0.0, now - freed)
            self._slots[ticket] = (freed, wait)
            self.waited += wait
            self._window[0] += wait

    @property
    def share(self) -> float:
        """Seconds waited per second of trials, over the run so far."""
        return self.waited / self.busy if self.busy > 0 else 0.0

    def _check(self) -> None:
        waited, busy, trials = self._window
        self._window = [0.0, 0.0, 0]
        share = waited / busy if busy > 0 else 0.0
        if share > WAIT_WARN_SHARE and share >= 2 * self._warned:
            self._warned = share
            # a warning, not a log line: the package's logger has no handler unless the user
            # sets one, and this is a finding about the run the user should see
            warnings.warn(
                f"the workers waited for proposals: {100 * share:.0f} % of the time they ran "
                f"trials over the last {trials} trials ({1000 * waited / max(trials, 1):.1f} ms "
                f"per trial after a worker was freed); the driver, not the trials, sets the pace "
                f"of {self.workers} workers at this trial cost — fewer workers, longer trials or "
                "a cheaper solver would keep them busy", DriverBoundWarning, stacklevel=2)


class InFlight:
    """The points submitted and not yet answered, by ticket: the engine's pending set, kept by
    the :class:`Recorder` as it submits a point and as its answer is recorded, so that nothing
    asks the engine for its trials in flight and sorts them out at every proposal (at 64
    workers that walk, once per ask, took a fifth of the driver's time).

    A sub-problem reads it through a :meth:`view`: the configurations in flight that answer
    that sub-problem's points, kept by the same events."""

    def __init__(self) -> None:
        self.points: dict[int, Point] = {}
        self._views: "weakref.WeakSet[InFlightView]" = weakref.WeakSet()

    def add(self, ticket: int, point: Point) -> None:
        self.points[ticket] = point
        for view in self._views:
            view._add(ticket, point)

    def remove(self, ticket: int) -> None:
        if self.points.pop(ticket, None) is None:
            return
        for view in self._views:
            view._remove(ticket)

    def view(self, config: Callable[[Point], Any]) -> "InFlightView":
        """A live view of the points in flight as ``config(point)`` (None: a point the view's
        sub-problem cannot propose, left out); it lives as long as its sub-problem holds it."""
        view = InFlightView(config)
        for ticket, point in self.points.items():
            view._add(ticket, point)
        self._views.add(view)
        return view

    def __len__(self) -> int:
        return len(self.points)


class InFlightView:
    """One sub-problem's view of :class:`InFlight`: called, the ``(config, fidelity)`` of its
    configurations in flight (the problem's ``in_flight``); :meth:`identities`, their
    identities under a solver's identity function as a multiset, computed once per point as it
    is submitted rather than at every ask."""

    def __init__(self, config: Callable[[Point], Any]) -> None:
        self.config = config
        self.entries: dict[int, tuple[Any, float]] = {}
        #: the identity function, held weakly (None: none bound yet)
        self._identity: Callable[[], Any] | None = None
        self._keys: dict[int, Any] = {}
        self._counts: Counter = Counter()

    def __call__(self) -> list[tuple[Any, float]]:
        return list(self.entries.values())

    def __len__(self) -> int:
        return len(self.entries)

    def identities(self, identity: Callable[[Any, float | None], Any]) -> Counter:
        """The multiset of ``identity(config, fidelity)`` over the configurations in flight,
        kept up to date from now on (read it, do not change it)."""
        if self._identity is None or self._identity() != identity:
            # weak: the solver holds its problem, which holds this view
            self._identity = (weakref.WeakMethod(identity) if hasattr(identity, "__self__")
                              else lambda: identity)
            self._keys = {t: identity(c, f) for t, (c, f) in self.entries.items()}
            self._counts = Counter(self._keys.values())
        return self._counts

    def _add(self, ticket: int, point: Point) -> None:
        config = self.config(point)
        if config is None:
            return
        self.entries[ticket] = (config, point[2])
        identity = None if self._identity is None else self._identity()
        if identity is not None:
            key = self._keys[ticket] = identity(config, point[2])
            self._counts[key] += 1

    def _remove(self, ticket: int) -> None:
        if self.entries.pop(ticket, None) is None:
            return
        key = self._keys.pop(ticket, None)
        if key is not None and key in self._counts:
            self._counts[key] -= 1
            if self._counts[key] <= 0:
                del self._counts[key]


@dataclass
class Evaluated:
    """One observation with the point it was asked at (θ relaxed, as the solver proposed it)."""

    z: tuple[int, ...]
    theta: np.ndarray
    observation: Observation
    phase: str
    iteration: int


def _cut_short(observations: Sequence[Observation]) -> str:
    """Why the engine answered points without running them to their end: ``"no_workers"`` when
    no worker process was left to run one (workers killed over and over, none could start), else
    the end of the time budget."""
    if any(o.status == Status.CANCELLED and (o.error or "").startswith(NO_WORKER_LEFT)
           for o in observations):
        return "no_workers"
    return "time_budget"


@dataclass
class Result:
    """What a run of any optimiser returns."""

    incumbent: Evaluated | None
    trace: list[dict[str, Any]]
    evaluated: list[Evaluated]
    n_evals: int
    stop_reason: str
    #: per completed iteration, the optimiser's state after it (ADMM: its iterate)
    states: list[Any] = field(default_factory=list)


class Recorder:
    """Evaluate points through ``engine`` within ``budget``; keep every evaluation and the best.

    ``iteration`` and ``tags`` are set by the optimiser and written with every evaluation (the
    journal's ``admm_iter`` and, for ADMM, the multipliers ``mu:<constraint>`` in force).
    ``listeners`` are told about every batch (:class:`RunListener`); every new evaluation is
    logged at DEBUG level.
    """

    def __init__(
        self, encoding: Encoding, engine: Engine, budget: Budget, constraints: Constraints,
        *, listeners: Sequence[RunListener] = (), workers: int = 1,
    ) -> None:
        self.encoding = encoding
        self.engine = engine
        self.budget = budget
        self.constraints = constraints
        self.evaluated: list[Evaluated] = []
        #: every new evaluation as ``(z, observation)``, oldest first (see :meth:`observations`)
        self.fresh: list[tuple[tuple[int, ...], Observation]] = []
        self.incumbent: Evaluated | None = None
        self._best: tuple[Evaluated | None, tuple] | None = None  # (:meth:`_incumbent_rank`)
        self.listeners = tuple(listeners)
        self.n_evals = 0
        #: new evaluations that failed (raised, ran out of memory, scored NaN)
        self.n_failed = 0
        #: new evaluations stopped at their own time limit
        self.n_timeouts = 0
        self.fastest = 0.0
        self.iteration = 0
        self.tags: dict[str, Any] = {}
        #: ``budget.clock()`` when the first evaluation was asked (None: not yet)
        self.first_start: float | None = None
        #: trials that may run at once (asynchronous submission, :meth:`submit`)
        self.workers = max(1, int(workers))
        self._flights: dict[int, tuple[Point, str, int, Callable[[Observation], Any] | None]] = {}
        #: submitted points the engine answered at once (cache hits), as ``_flights``: never in
        #: flight, recorded at the next :meth:`collect` like the others (:meth:`submit`)
        self._answered: dict[int, tuple[Point, str, int, Callable[[Observation], Any] | None]] = {}
        self._last_projection: tuple[np.ndarray, np.ndarray] | None = None
        #: the points in flight, kept on submit and on answer (:class:`InFlight`)
        self.pending = InFlight()
        #: workers' waits for a proposal (:class:`ProposalWaits`)
        self.waits = ProposalWaits(self.workers)

    def evaluate(self, points: Sequence[Point], phase: str,
                 tags: dict[str, Any] | None = None) -> list[Observation]:
        """Evaluate ``(z, θ, fidelity)`` points; raises :class:`BudgetExhausted` when the budget
        cannot start them (or ended during them, after recording what was done). ``tags`` are
        written with them besides the recorder's own (``{"confirm": True}``: see
        :class:`~admm_automl.evaluation.objective.PipelineObjective`).

        An evaluation is not started when the time left is below the fastest one seen so far; the
        engine stops one that would overrun. Cache hits are free.
        """
        budget = self.budget
        if budget.max_evals is not None:
            room = budget.max_evals - self.n_evals
            if room <= 0:
                raise BudgetExhausted("max_evals")
            points = points[:room]
        time_left = budget.time_left()
        if time_left is not None and time_left <= max(self.fastest, 1e-3):
            raise BudgetExhausted("time_budget")
        requests = [Request(p[0], self.encoding.project(p[1]), *p[2:]) for p in points]
        if self.first_start is None:
            self.first_start = budget.clock()
        tags = {"phase": phase, "admm_iter": self.iteration, **self.tags, **(tags or {})}
        for listener in self.listeners:
            listener.evaluating(self, points, phase)
        observations = self.engine(requests, time_left=time_left, tags=tags)
        items = [self._record(point, obs, phase, self.iteration)
                 for point, obs in zip(points, observations)]
        for listener in self.listeners:
            listener.evaluated(self, items)
        if len(observations) < len(points) or any(o.budget_stop for o in observations):
            raise BudgetExhausted(_cut_short(observations))
        return observations

    def _record(self, point: Point, obs: Observation, phase: str, iteration: int) -> Evaluated:
        """Count and keep one answered point; update the incumbent."""
        z, theta = point[0], point[1]
        item = Evaluated(z, np.array(theta), obs, phase, iteration)
        if not obs.cached:
            self.n_evals += not obs.budget_stop  # a cancelled trial is no evaluation
            self.fresh.append((z, obs))
            timeout = obs.status == Status.TIMEOUT
            self.n_failed += not (obs.ok or obs.budget_stop or timeout)
            self.n_timeouts += timeout
            if obs.duration > 0:
                self.fastest = min(self.fastest or obs.duration, obs.duration)
            self._log(item)
        if obs.fidelity >= 1.0:
            rank = self.constraints.rank(obs)
            if self.incumbent is None or rank < self._incumbent_rank():
                self.incumbent = item
                self._best = (item, rank)
        self.evaluated.append(item)
        return item

    def _incumbent_rank(self) -> tuple:
        """``constraints.rank`` of the incumbent's observation, kept from when it became the
        incumbent: every answer at full data is compared with it, at 64 workers thousands of
        free repeats a minute."""
        best = self._best
        if best is None or best[0] is not self.incumbent:
            best = self._best = (self.incumbent, self.constraints.rank(self.incumbent.observation))
        return best[1]

    # ------------------------------------------------------------------ asynchronous
    @property
    def in_flight(self) -> int:
        """Trials submitted and not yet answered (not the points the cache answered at once)."""
        return len(self._flights)

    @property
    def outstanding(self) -> int:
        """Points submitted and not yet collected: the trials in flight and the cache's answers
        that wait for the next :meth:`collect`."""
        return len(self._flights) + len(self._answered)

    def points_in_flight(self) -> list[Point]:
        """The ``(z, θ, fidelity)`` points submitted and not yet answered."""
        return list(self.pending.points.values())

    def free_workers(self) -> int:
        """How many more points may be submitted now: workers without a trial, and no more
        than ``max_evals`` leaves room for beside the points in flight. An answer from the
        cache holds its place until it is collected, as when it went through the in-flight
        set: a sub-problem's loop then collects and tells it before it asks again (a z-step's
        next pull knows the repeat's reward), as before."""
        outstanding = self.outstanding
        free = self.workers - outstanding
        if self.budget.max_evals is not None:
            free = min(free, self.budget.max_evals - self.n_evals - outstanding)
        return free

    def submit(self, point: Point, phase: str,
               on_done: Callable[[Observation], Any] | None = None) -> int:
        """Submit one ``(z, θ, fidelity)`` point without waiting for it (the engine's
        ``submit``); return its ticket. ``on_done(observation)`` is called when it is answered,
        after it is recorded. Raises :class:`BudgetExhausted` when the budget cannot start it:
        points in flight count against ``max_evals``.

        A point the engine answers at once (a cache hit: a z-step's free repeats, ~16 600 of
        ~19 200 submissions in a 30 s simulated run at 64 workers) is never in flight: it does
        not enter the in-flight set, its views or the workers' waits (0.07 ms of CPU a point,
        each live view mapping it to its configuration), and waits for the next
        :meth:`collect`, which records it in its order with the others, as before."""
        budget = self.budget
        if budget.max_evals is not None and self.n_evals + self.outstanding >= budget.max_evals:
            raise BudgetExhausted("max_evals")
        time_left = budget.time_left()
        if time_left is not None and time_left <= max(self.fastest, 1e-3):
            raise BudgetExhausted("time_budget")
        request = Request(point[0], self._project(point[1]), *point[2:])
        if self.first_start is None:
            self.first_start = budget.clock()
        for listener in self.listeners:
            listener.evaluating(self, [point], phase)
        ticket = self.engine.submit(request, time_left=time_left,
                                    tags={"phase": phase, "admm_iter": self.iteration,
                                          **self.tags})
        answered = getattr(self.engine, "answered", None)
        if answered is not None and answered(ticket):
            self._answered[ticket] = (point, phase, self.iteration, on_done)
            return ticket
        self._flights[ticket] = (point, phase, self.iteration, on_done)
        self.pending.add(ticket, point)
        self.waits.submitted(budget.clock(), ticket)
        return ticket

    def _project(self, theta: np.ndarray) -> np.ndarray:
        """``encoding.project(theta)``, remembered for the last θ: a z-step submits every
        pipeline at one θ, and on ``paper_large`` the projection (95 coordinates, a nearest
        grid value each) cost as much as the rest of a submission."""
        theta = np.asarray(theta, dtype=float)
        last = self._last_projection
        if last is not None and last[0].shape == theta.shape and np.array_equal(last[0], theta):
            return last[1].copy()
        projected = self.encoding.project(theta)
        self._last_projection = (theta.copy(), projected.copy())
        return projected

    def collect(self) -> list[tuple[int, Observation]]:
        """Wait until a submitted point is answered (at once when none is in flight) and
        return ``(ticket, observation)`` of every one answered now, each recorded first (the
        journal by the engine, then here) and its ``on_done`` called. Raises
        :class:`BudgetExhausted` after recording them when one was stopped at the end of the
        time budget."""
        answers = self.engine.collect() if self._flights or self._answered else []
        items, calls = [], []
        now = self.budget.clock()
        for ticket, obs in answers:
            entry = self._answered.pop(ticket, None)
            if entry is None:
                entry = self._flights.pop(ticket)
                self.pending.remove(ticket)
                self.waits.answered(now, obs, ticket)
            point, phase, iteration, on_done = entry
            items.append(self._record(point, obs, phase, iteration))
            calls.append((on_done, obs))
        if items:  # ``in_flight`` is what still runs
            for listener in self.listeners:
                listener.evaluated(self, items)
        for on_done, obs in calls:
            if on_done is not None:
                on_done(obs)
        if any(obs.budget_stop for _, obs in answers):
            raise BudgetExhausted(_cut_short([obs for _, obs in answers]))
        return answers

    def drain(self) -> None:
        """Wait for every point in flight and record it (the end of a run)."""
        while self._flights or self._answered:
            try:
                self.collect()
            except BudgetExhausted:
                pass

    def evaluations_left(self) -> float:
        """The new evaluations the budget has room for: ``max_evals`` less those made (and in
        flight) and, under a time budget, the time left divided by the wall seconds per
        evaluation since the first one began (the optimiser's overhead and parallel workers
        included, the set-up before it not: on adult its 5 s beside one 1.7 s evaluation made
        the first step a third of what the budget held); ``inf`` when neither bounds it yet."""
        budget, made = self.budget, self.n_evals + self.outstanding
        left = math.inf if budget.max_evals is None else float(budget.max_evals - made)
        time_left = budget.time_left()
        if time_left is not None and made and self.first_start is not None:
            per = (budget.clock() - self.first_start) / made
            left = min(left, max(time_left, 0.0) / max(per, 1e-9))
        return left

    def observations(self) -> list[tuple[tuple[int, ...], Observation]]:
        """Every new evaluation of the run so far as ``(z, observation)``, oldest first, whatever
        its phase, θ or fidelity (cache hits left out: they repeat an earlier one). The list grows
        in place; read it, do not change it."""
        return self.fresh

    def pipeline(self, z: Sequence[int]) -> str:
        """The names of the algorithms chosen by ``z``, ``"scaler -> ... -> estimator"``."""
        return " -> ".join(names[int(j)] for names, j in zip(self.encoding.choice_names, z))

    def _log(self, item: Evaluated) -> None:
        if not logger.isEnabledFor(logging.DEBUG):
            return
        obs = item.observation
        values = "".join(f", {k} {v:.4g}" for k, v in obs.constraints.items()
                         if isinstance(v, (int, float)))
        logger.debug(
            "evaluation %d (%s, iteration %d): %s at fidelity %.3g: loss %.5g%s, %s in %.2f s%s",
            obs.eval_id, item.phase, item.iteration, self.pipeline(item.z), obs.fidelity,
            obs.loss, values, obs.status.value, obs.duration,
            f": {obs.error.strip().splitlines()[-1]}" if obs.error else "",
        )

    def row(self, n: int) -> dict[str, Any]:
        """The trace columns every optimiser shares, for iteration ``self.iteration`` of ``n``
        sub-solver evaluations."""
        inc = self.incumbent
        row = {
            "iteration": self.iteration,
            "best_loss": inc.observation.loss if inc is not None else math.inf,
            "n_evals": self.n_evals,
            "inner_iter": n,
            "time": self.budget.elapsed(),
        }
        if len(self.constraints):
            row["feasible_found"] = inc is not None and self.constraints.feasible(inc.observation)
        return row


def drive(
    recorder: Recorder,
    schedule: Schedule,
    iterate: Callable[[int], Any],
    summarize: Callable[[int], dict[str, Any]],
    *,
    start: Callable[[], Any] | None = None,
    callback: Callable[[dict[str, Any]], Any] | None = None,
    max_idle_iterations: int = 5,
    name: str = "",
) -> tuple[list[dict[str, Any]], str]:
    """Run ``start()`` and then iterations ``iterate(schedule(t))`` until something stops them.

    After each iteration ``summarize(n)`` gives its trace row. The run stops when the budget is
    exhausted (the partly done iteration gets a row too), when ``callback(row)`` returns True, or
    when ``max_idle_iterations`` iterations in a row made no new evaluation (the space is
    exhausted). Returns the trace and the stop reason (``"max_evals"``, ``"time_budget"``,
    ``"no_workers"``, ``"callback"`` or ``"exhausted"``). The recorder's listeners are told when the run starts,
    after each iteration and when it ends, however it ends.
    """
    listeners = recorder.listeners
    for listener in listeners:
        listener.run_started(recorder, name)
    stop = "error"
    try:
        trace, stop = _iterate(recorder, schedule, iterate, summarize, start, callback,
                               max_idle_iterations, name)
        recorder.drain()  # what the last steps left in flight (asynchronous, ``overlap``)
        return trace, stop
    finally:
        for listener in listeners:
            listener.run_finished(recorder, stop)


def _iterate(recorder: Recorder, schedule: Schedule, iterate: Callable[[int], Any],
             summarize: Callable[[int], dict[str, Any]], start: Callable[[], Any] | None,
             callback: Callable[[dict[str, Any]], Any] | None, max_idle_iterations: int,
             name: str) -> tuple[list[dict[str, Any]], str]:
    """The loop of :func:`drive`."""
    trace: list[dict[str, Any]] = []

    def done(row: dict[str, Any]) -> None:
        trace.append(row)
        logger.info("%s iteration %d: best loss %.5g, %d evaluations", name, row["iteration"],
                    row["best_loss"], row["n_evals"])
        for listener in recorder.listeners:
            listener.iteration_done(recorder, row)

    idle = 0
    try:
        if start is not None:
            start()
        while True:
            n = schedule(recorder.iteration)
            # trials made or not yet collected: an asynchronous step may hand over its workers
            # before any of its trials has ended (they are recorded during the next steps), and
            # that is no idle iteration (a collected cache hit adds to neither)
            before = recorder.n_evals + recorder.outstanding
            iterate(n)
            done(row := summarize(n))
            if callback is not None and callback(row):
                return trace, "callback"
            if recorder.n_evals + recorder.outstanding != before:
                idle = 0
            elif recorder.outstanding:
                # nothing new to ask while trials are in flight (their sub-problem handed over
                # the workers): wait for one to end, whose result may give the next iteration
                # something new, rather than spin through cache hits or call the space exhausted
                recorder.collect()
            else:
                idle += 1
            if idle >= max_idle_iterations:
                return trace, "exhausted"
            recorder.iteration += 1
    except BudgetExhausted as stop:
        recorder.drain()  # the trials still in flight when the budget stopped the run
        if not trace or trace[-1]["iteration"] != recorder.iteration:
            done(summarize(schedule(recorder.iteration)))
        return trace, str(stop) or "budget"
