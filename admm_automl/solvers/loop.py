"""The loop that drives a solver: ask, evaluate through the problem, tell, until a call's new
evaluations are made (:meth:`RunLoop.run`).

:class:`~admm_automl.solvers.base.BaseSolver` runs this loop; the ask/tell protocol it drives is in
:mod:`admm_automl.solvers.base`. Three loops: batches evaluated together
(:meth:`RunLoop._run`, overhead-aware with :class:`OverheadBalance`), trials submitted as workers
free and told in the order they end (:meth:`RunLoop._run_async`, on a problem with ``submit``),
and a foreign loop a solver drives itself (it overrides ``_run`` and evaluates through
:meth:`RunLoop._evaluate`, which keeps the call's count).
"""

from __future__ import annotations

import math
import time
from collections import Counter, deque
from dataclasses import dataclass

from ..records import Observation, Suggestion

#: an asynchronous run of ``W`` workers asks ``W // ASK_AHEAD`` suggestions beyond the free
#: workers and queues them for the next ones to free (:meth:`RunLoop._run_async`)
ASK_AHEAD = 16
#: on a problem with ``overlap``, the fraction of a call's evaluations it may leave in flight
#: when it returns (:meth:`RunLoop._run_async`): enough to keep workers busy across the
#: steps of an optimiser, few enough that the next step starts from most of this one's results
OVERLAP_TAIL = 0.5


@dataclass
class OverheadBalance:
    """How many cheap proposals the overhead-aware loop adds to a batch, so that a solver whose
    ask costs more than an evaluation does not leave the workers idle.

    After each batch it keeps exponential moving averages (weight ``smoothing`` on the newest
    value) of the seconds per solver ask and per evaluation (everything ``problem.evaluate``
    costs per point, engine included). A batch of ``n`` solver asks then gets
    ``min(max_cheap·n, floor(ratio·n·ask/evaluation))`` cheap proposals, so that with ``ratio=1``
    the loop spends at least as long evaluating as asking: when an evaluation costs microseconds
    and an ask milliseconds, the loop still evaluates at about half the rate of random search
    instead of starving, and when evaluations are slower than asks nothing changes. The first
    batch of a run has no measurement and so no cheap proposals.

    The counts depend on measured times, so the loop is overhead-aware only where the history
    depends on the clock anyway: ADMM turns it on under a time budget (``RunOptions``), and an
    evaluation budget alone keeps the history a function of the seed.
    """

    ratio: float = 1.0
    max_cheap: int = 64
    smoothing: float = 0.3
    ask_seconds: float | None = None
    eval_seconds: float | None = None

    def observe(self, ask_seconds: float, eval_seconds: float) -> None:
        w = self.smoothing
        self.ask_seconds = ask_seconds if self.ask_seconds is None else (
            w * ask_seconds + (1 - w) * self.ask_seconds)
        self.eval_seconds = eval_seconds if self.eval_seconds is None else (
            w * eval_seconds + (1 - w) * self.eval_seconds)

    def n_cheap(self, n_asked: int) -> int:
        if self.ask_seconds is None or self.eval_seconds is None:
            return 0
        cap = self.max_cheap * n_asked
        if self.eval_seconds <= 0:
            return cap
        return int(min(cap, math.floor(self.ratio * n_asked * self.ask_seconds / self.eval_seconds)))


class RunLoop:
    """The run loop of a solver (:class:`~admm_automl.solvers.base.BaseSolver` inherits it): it
    asks through ``ask_batch`` and ``ask_cheap``, tells through ``tell`` and evaluates through
    ``problem_``; it counts a call's new evaluations and free cache hits in ``fresh_left_``,
    ``cached_left_`` and ``last_cached_``."""

    def run(self, n_evals: int) -> None:
        """Ask, evaluate and tell until ``n_evals`` new evaluations are made (budget errors
        propagate to the caller); cache hits are free, at most ``max(100, 10·n_evals)`` of them.

        A solver with ``supports_batch`` asks up to ``problem.batch_size`` suggestions at a time,
        so a parallel executor evaluates them together.
        """
        self.fresh_left_ = int(n_evals)
        self.cached_left_ = max(100, 10 * int(n_evals))
        self.last_cached_ = False
        if getattr(self.problem_, "submit", None) is not None and type(self)._run is RunLoop._run:
            self._run_async()
        else:
            self._run()

    def _run(self) -> None:
        """The loop of :meth:`run`; override to drive a foreign loop through :meth:`_evaluate`.

        Overhead-aware (``problem.overhead_aware`` and ``supports_cheap_proposals``): after the
        solver's own asks, each batch gets the cheap suggestions that :class:`OverheadBalance`
        allows from the measured seconds per ask and per evaluation.
        """
        batch = max(1, int(getattr(self.problem_, "batch_size", 1))) if self.supports_batch else 1
        balance = None
        if self.supports_cheap_proposals and getattr(self.problem_, "overhead_aware", False):
            balance = OverheadBalance()
        clock = getattr(self.problem_, "clock", time.perf_counter)
        while not self._run_done():
            n = min(batch, self.fresh_left_)
            start = clock()
            suggestions = self.ask_batch(n)
            asked = clock()
            if balance is not None:
                suggestions += self.ask_cheap(min(balance.n_cheap(n), self.fresh_left_ - n))
            self._evaluate(suggestions)
            if balance is not None:
                balance.observe((asked - start) / n,
                                (clock() - asked) / len(suggestions))

    def _run_async(self) -> None:
        """The loop of :meth:`run` on a problem with ``submit``: whenever a worker is free, ask
        and submit a suggestion (up to ``problem.batch_size`` of them in flight for a solver with
        ``supports_batch``, one otherwise; as many at once as workers are free, through
        :meth:`ask_batch`), and tell each answer as it comes back, in the order trials end. The
        asks see the suggestions still in flight as pending (``pending_``: the constant liar of
        ``bo``, the pulls counted by ``cmab``), as they see a batch's; a proposal that repeats
        one in flight is not submitted (the loop waits for an answer before it asks again). With
        one worker this is ask, evaluate, tell: the history of a batch of one. Cheap proposals
        are not added here.

        With ``W`` workers the loop asks ``W // ASK_AHEAD`` suggestions beyond the free workers
        (none below 16 workers; beyond the ``W`` a call may hold in flight too, never beyond its
        evaluations left) and queues them, pending, for the next workers to free: as
        workers free one or two at a time, each ask would otherwise be a search of its own
        (``bo``: a GP update and an acquisition search per point; at 64 workers the driver could
        not keep up). A queued suggestion is made without the results of the few trials that
        end while it waits, beside the ``W − 1`` in flight whose results no proposal knows;
        the queue's leftovers are dropped from ``pending_`` when the call returns.

        The call returns when its evaluations are all answered, so that the next sub-problem
        starts from every result of this one, as in a sequential run; or, on a problem with
        ``overlap``, as soon as every one of them is submitted, a worker would be idle and at
        most :data:`OVERLAP_TAIL` of them are still in flight: the tail of a step no longer
        holds workers idle. The trials left in flight are answered during a later call (their
        tickets are kept in ``flying_``) and told then, unless :meth:`update_problem` or a new
        :meth:`setup` came first and dropped them from ``pending_``: the optimiser still
        records them when they end."""
        problem = self.problem_
        width = max(1, int(getattr(problem, "batch_size", 1))) if self.supports_batch else 1
        overlap = bool(getattr(problem, "overlap", False))
        tail = math.floor(OVERLAP_TAIL * self.fresh_left_)
        ahead = width // ASK_AHEAD
        # this call's suggestions in flight, and an earlier call's still pending here
        mine: dict[int, Suggestion] = {}
        earlier = {t: s for t, s in self.flying_.items() if s.id in self.pending_}
        self.flying_ = {}
        # asked ahead for the next free workers, pending, not yet submitted
        queue: deque[Suggestion] = deque()
        # the identities of ``mine`` and ``earlier``, kept as they are submitted and answered
        flying = Counter(self._key(s) for s in earlier.values())

        def landed(suggestion: Suggestion) -> None:
            key = self._key(suggestion)
            flying[key] -= 1
            if flying[key] <= 0:
                del flying[key]

        try:
            while True:
                while len(mine) < min(width, self.fresh_left_) and not self._run_done():
                    free = problem.free_workers()
                    if (mine or earlier) and free <= 0:
                        break  # every worker (or the rest of the budget) is taken: wait
                    n = min(width, self.fresh_left_) - len(mine)
                    k = min(n, max(1, free))
                    if len(queue) < k:
                        # ahead of the free workers even when this call holds all the others:
                        # at 64 workers a search per freed worker cost bo 5-9 ms a point, one
                        # search for five 2-4 ms
                        room = min(width + ahead, self.fresh_left_) - len(mine)
                        queue.extend(self.ask_batch(min(room, k + ahead) - len(queue)))
                    repeat = False
                    for _ in range(min(k, len(queue))):
                        suggestion = queue.popleft()
                        if self._key(suggestion) in flying:
                            repeat = True  # a repeat of a trial in flight: wait for an answer
                            del self.pending_[suggestion.id]
                            continue
                        try:
                            ticket = problem.submit(suggestion)
                        except BaseException:
                            self.pending_.pop(suggestion.id, None)
                            raise
                        mine[ticket] = suggestion
                        flying[self._key(suggestion)] += 1
                    if repeat:
                        break
                done = not mine and (not earlier or self._run_done())
                # nothing more to submit: every evaluation is in flight, or the call ended on
                # its free cache hits (or an exhausted space) with some of its own in flight
                asked = len(mine) >= self.fresh_left_ or self._run_done()
                if done or (overlap and mine and asked and len(mine) <= tail
                            and problem.free_workers() > 0):
                    self.flying_ = {**earlier, **mine}
                    return
                for ticket, observation in problem.collect():
                    if ticket in earlier:  # an answer to an earlier call: no evaluation of this one
                        landed(earlier[ticket])
                        self.tell(earlier.pop(ticket), observation)
                        continue
                    if ticket not in mine:  # another sub-problem's trial
                        continue
                    landed(mine[ticket])
                    self.tell(mine.pop(ticket), observation)
                    if observation.cached:
                        self.cached_left_ -= 1
                    else:
                        self.fresh_left_ -= 1
                    self.last_cached_ = observation.cached
        except BaseException:
            for suggestion in (*mine.values(), *earlier.values()):
                self.pending_.pop(suggestion.id, None)
            raise
        finally:
            for suggestion in queue:  # asked ahead for workers this call no longer fills
                self.pending_.pop(suggestion.id, None)

    def _run_done(self) -> bool:
        """Whether :meth:`run` has made its new evaluations, spent its free cache hits, or has
        nothing new to ask: every configuration of a finite problem was told and the last asks
        were answered from the cache (a problem without a cache may evaluate a point again)."""
        exhausted = (self.n_configurations_ is not None
                     and len(self.told_) >= self.n_configurations_ and self.last_cached_)
        return self.fresh_left_ <= 0 or self.cached_left_ <= 0 or exhausted

    def _evaluate(self, suggestions: list[Suggestion]) -> list[Observation]:
        """Evaluate asked suggestions through the problem, tell the results and count them."""
        try:
            observations = self.problem_.evaluate(suggestions)
        except BaseException:
            for suggestion in suggestions:
                self.pending_.pop(suggestion.id, None)
            raise
        for suggestion, observation in zip(suggestions, observations):
            self.tell(suggestion, observation)
            if observation.cached:
                self.cached_left_ -= 1
            else:
                self.fresh_left_ -= 1
        self.last_cached_ = all(o.cached for o in observations)
        return observations
