"""The black box ``(z, θ, fidelity) -> Observation`` over batches.

One evaluation path for every solver: cache look-up, the executor (with the trial policy's
timeouts and probes, :mod:`.policy`), failure capture (the run's failure loss, error text kept),
and the journal, written before an observation is used (its records' schema:
:func:`admm_automl.journal.make_record`).

A resumed journal's evaluations are *replayed*: the first request for one of them is answered from
the journal as if it had just been evaluated (it counts for the budget, so the same seed and
evaluation budget retrace the same search and continue it), without running or recording it again.

Observers (such as the run's library of kept predictions, :mod:`admm_automl.final.library`) are
told of every evaluation just before it is recorded, with its validation predictions when the
trial returned them, and of the replayed ones (with the index of their learner, without
predictions) at the start.

Requests are asked one at a time (:meth:`PipelineObjective.submit`) and each observation is handed
back as soon as its trial ends (:meth:`PipelineObjective.collect`), so that a search can keep every
worker busy (the executors' ``submit``/``wait``, :mod:`.executors`); a *batch* (calling the
objective with requests) is its requests submitted, then collected until all are answered. A
request asked while the same one is in flight is answered by that trial (as a cache hit), never
run twice; a probed request's full trial is sent when its probe's answer allows it. A request
tagged ``confirm`` (a pipeline that met every constraint on a subsample, to be confirmed on all
rows) is not probed, may take all the time left, and replaces the probe that stood in for it.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from ..clock import Deadline
from ..journal import Journal, make_record, observation_of
from ..records import Observation, Request
from .policy import PROBE_FIDELITY, TrialPolicy
from .trial import TrialContext

logger = logging.getLogger(__name__)

#: a trial run in the process that writes the journal, during which that process died this many
#: times, is recorded as failed instead of run again (crash-only trials, :mod:`..journal`). A
#: first death says nothing of the pipeline: the journal cannot tell a crash in the estimator
#: from a kill of the process (the user's SIGKILL or SIGTERM, the out-of-memory killer made to
#: choose by another program, a machine going down), and a kill must cost nothing, or the resumed
#: run would have another history and model than an uninterrupted one. A second death of the same
#: trial is no coincidence: an estimator that crashes does so every time, and costs one crash more
#: before it is recorded, instead of crashing every resume at the same pipeline.
CRASHES_TO_FAIL = 2
#: cache keys remembered by :meth:`PipelineObjective._key` before the memo starts afresh
KEYS_KEPT = 20_000

#: the error of a trial whose process died during it :data:`CRASHES_TO_FAIL` times
CRASHED = (f"the process died during this evaluation in {CRASHES_TO_FAIL} sessions (a crash in "
           "the estimator, such as a segmentation fault, or the process was killed each time); "
           "it is not run again. executor='process' runs each trial in a worker process, where a "
           "crash is recorded and the search goes on")


class Observer(Protocol):
    """Told of every evaluation the objective records (``learner`` is the index of the
    pipeline's last step; ``predictions`` its validation predictions, None when the trial kept
    none or the evaluation is replayed from a resumed journal; ``models`` the name of the file
    of its fold models, :mod:`.fold_models`, None without one). Called just before the record
    is journaled."""

    def observed(self, record: dict[str, Any], observation: Observation, learner: int | None,
                 predictions: Any, models: str | None = None) -> None: ...

@dataclass
class _Flight:
    """A request whose trial is in flight (asynchronous asks): the objective's tickets waiting
    for it (the first asked it, the others asked the same while it ran), and what to do with its
    observation (answer them, or decide on the full trial after a probe)."""

    key: str
    request: Request
    tags: dict[str, Any]
    budget_stop: bool
    then: Callable[[Observation], None]
    tickets: list[int] = field(default_factory=list)
    #: its place in a batch's journal order (None: recorded when its trial ends)
    order: int | None = None


class PipelineObjective:
    """Evaluate requests on fixed splits; answer repeated requests from a cache.

    Parameters
    ----------
    ctx : TrialContext
        Data, splits, space and metric.
    executor : SerialExecutor, ProcessExecutor or DaskExecutor
        Where trials run (started here).
    journal : Journal
        Receives one record per new evaluation before the observation is returned; the records
        of a resumed journal are replayed (module docstring).
    worst_loss : float
        Loss given to failed, timed-out and memory-exhausted pipelines.
    policy : TrialPolicy, optional
        The trials' timeout and probe rules (default: none but the end of the time budget).
    deadline : Deadline, optional
        The run's clock (:class:`~admm_automl.clock.Deadline`): the records' ``time`` is its
        elapsed seconds (default: a clock started now); a resumed journal's times continue after
        its last one.
    observers : sequence of Observer
        Told of every recorded evaluation, and of the replayed ones now.
    crash_marks : bool, default=True
        With an executor that runs trials in this process (``in_process``) and a journal file,
        mark each trial's start in the journal. A trial an earlier session started and never
        finished is run again when the search asks for it, so that a killed run resumes to the
        history of an uninterrupted one; one during which the process died
        :data:`CRASHES_TO_FAIL` times is recorded as failed instead (crash-only trials,
        :mod:`admm_automl.journal`): an estimator that kills the process (a segmentation fault)
        would otherwise kill every resume at the same pipeline. Off for benchmark functions that
        cannot crash, where the mark would cost as much as the evaluation.
    """

    def __init__(
        self,
        ctx: TrialContext,
        executor: Any,
        journal: Journal,
        *,
        worst_loss: float,
        policy: TrialPolicy | None = None,
        deadline: Deadline | None = None,
        observers: Sequence[Observer] = (),
        crash_marks: bool = True,
    ) -> None:
        self.ctx = ctx
        self.executor = executor
        self.journal = journal
        self.worst_loss = float(worst_loss)
        self.policy = policy or TrialPolicy()
        self.observers = tuple(observers)
        self.cache: dict[str, Observation] = {}
        #: evaluations of a resumed journal not asked for yet in this session, by cache key
        self.replay: dict[str, Observation] = {
            rec["key"]: observation_of(rec)
            for rec in journal.records if rec.get("key") and not rec.get("budget_stop")
        }
        #: whether a pipeline succeeded on all rows (the automatic timeout starts then)
        self.succeeded = any(o.ok and o.fidelity >= 1.0 for o in self.replay.values())
        for rec in journal.records:
            if rec.get("key") and not rec.get("budget_stop") and self.observers:
                learner = int(ctx.space.encode(rec["config"])[0][-1])
                for observer in self.observers:
                    observer.observed(rec, observation_of(rec), learner, None)
        elapsed = max((float(r.get("time") or 0.0) for r in journal.records), default=0.0)
        self.deadline = Deadline(None) if deadline is None else deadline
        self._resumed_seconds = elapsed  # a resumed journal's times continue after its last
        self.crash_marks = (crash_marks and getattr(executor, "in_process", False)
                            and journal.path is not None)
        for mark in journal.unfinished:
            if mark["deaths"] >= CRASHES_TO_FAIL:
                self._record_crash(mark)
        self._keys: dict[tuple, str] = {}  # cache keys by the request's values (:meth:`_key`)
        self._tickets = itertools.count()
        self._flights: dict[int, _Flight] = {}  # by the executor's ticket
        self._in_flight: dict[str, _Flight] = {}  # the same, by cache key
        self._ready: list[tuple[int, Observation]] = []  # answered, not yet collected
        # a batch records its trials in the order they were asked: those that end early wait
        # here for the ones before them
        self._ordered = False
        self._orders = itertools.count()
        self._held: dict[int, tuple[_Flight, dict[str, Any]]] = {}
        self._released = 0
        executor.start(ctx)

    @property
    def n_failed(self) -> int:
        """Failed and memory-exhausted evaluations of the whole journal (cancelled trials are
        not evaluations; a trial stopped at its time limit is counted by :attr:`n_timeouts`)."""
        return sum(r.get("status") not in ("ok", "cancelled", "timeout")
                   for r in self.journal.records)

    @property
    def n_timeouts(self) -> int:
        """Evaluations stopped at their own time limit (the per-trial timeout): the limit
        working as meant, not a fault of the pipeline."""
        return sum(r.get("status") == "timeout" for r in self.journal.records)

    def close(self) -> None:
        self.executor.close()
        self.journal.close()

    def __call__(
        self,
        requests: Sequence[Request],
        time_left: float | None = None,
        tags: dict[str, Any] | None = None,
    ) -> list[Observation]:
        """Answer a batch: :meth:`submit` each request, :meth:`collect` until all are answered
        (answers to requests submitted before are kept for the next :meth:`collect`). The
        batch's trials are recorded in the order they were asked (its probes first), whatever
        order they end in, so that a seeded search with the same batch size writes the same
        journal on any executor."""
        # what an interrupted batch left is recorded as it ends; this batch's order starts anew
        for flight in self._flights.values():
            flight.order = None
        for order in sorted(self._held):
            self._finish(*self._held.pop(order))
        self._orders, self._released = itertools.count(), 0
        self._ordered = True
        try:
            tickets = [self.submit(request, time_left, tags) for request in requests]
            asked = set(tickets)
            mine: dict[int, Observation] = {}
            others: list[tuple[int, Observation]] = []
            while len(mine) < len(tickets):
                for ticket, observation in self.collect():
                    if ticket in asked:
                        mine[ticket] = observation
                    else:
                        others.append((ticket, observation))
        finally:
            self._ordered = False
        self._ready[:0] = others
        return [mine[t] for t in tickets]

    def submit(self, request: Request, time_left: float | None = None,
               tags: dict[str, Any] | None = None) -> int:
        """Ask for ``request`` without waiting: its trial starts as soon as a worker is free (a
        cache hit or a replayed evaluation is answered at once); :meth:`collect` hands back its
        observation, under the ticket returned here. ``time_left`` and ``tags`` as for a batch."""
        ticket = next(self._tickets)
        self._ask(request, time_left, dict(tags or {}), lambda obs: self._answer(ticket, obs),
                  ticket)
        return ticket

    def answered(self, ticket: int) -> bool:
        """Whether the request of ``ticket`` is answered and waits for :meth:`collect`: just
        after :meth:`submit`, whether it was answered at once (from the cache or the replay)
        without a trial, so that the caller need not count it as in flight."""
        return any(t == ticket for t, _ in reversed(self._ready))

    def collect(self, timeout: float | None = None) -> list[tuple[int, Observation]]:
        """Wait until at least one submitted request is answered (or ``timeout`` seconds pass,
        or none is pending) and return ``(ticket, observation)`` of every one answered since the
        last call, each recorded in the journal before it is returned."""
        end = None if timeout is None else time.monotonic() + timeout
        while not self._ready and self._flights:
            left = None if end is None else max(end - time.monotonic(), 0.0)
            if self.crash_marks:  # a serial executor runs the oldest submitted job now
                flight = self._flights[min(self._flights)]
                self.journal.start(flight.key, flight.request)
                try:
                    ended = self.executor.wait(left)
                except BaseException:  # Ctrl-C or an exit, not a crash: a resume runs it again
                    self.journal.interrupt(flight.key)
                    raise
            else:
                ended = self.executor.wait(left)
            for job_ticket, result in ended:
                flight = self._flights.pop(job_ticket)
                if flight.order is None:
                    self._finish(flight, result)
                else:
                    self._held[flight.order] = (flight, result)
            while self._released in self._held:  # a batch's, in the order they were asked
                self._finish(*self._held.pop(self._released))
                self._released += 1
            if end is not None and time.monotonic() >= end:
                break
        ready, self._ready = self._ready, []
        return ready

    @property
    def pending(self) -> int:
        """Submitted requests not yet handed back by :meth:`collect`."""
        flights = [*self._flights.values(), *(f for f, _ in self._held.values())]
        return len(self._ready) + sum(len(f.tickets) for f in flights)

    def _finish(self, flight: _Flight, result: dict[str, Any]) -> None:
        """Record an ended trial and hand its observation on."""
        del self._in_flight[flight.key]
        flight.then(self._observe(flight.key, flight.request, result, flight.tags,
                                  flight.budget_stop))

    def _ask(self, request: Request, time_left: float | None, tags: dict[str, Any],
             then: Callable[[Observation], None], ticket: int | None = None) -> None:
        """Answer ``request`` through ``then``: at once from the cache, the replay or a trial in
        flight, else by a trial sent to the executor (after its probe, when the policy probes
        it). ``ticket`` counts the request as pending until answered."""
        key = self._key(request)
        confirm = bool(tags.get("confirm")) and request.fidelity >= 1.0
        if confirm and key in self.cache and self.cache[key].fidelity < 1.0:
            del self.cache[key]  # the probe that stood in for it: now fit on all rows
        if key in self.replay:
            then(self.cache.setdefault(key, self.replay.pop(key)))
            return
        if key in self.cache:
            then(replace(self.cache[key], cached=True))
            return
        if self._attach(key, then, ticket):
            return
        timeout, budget_stop = self.policy.timeout(time_left, self.succeeded)
        deadline = None if time_left is None else time.monotonic() + time_left
        n_train = len(self.ctx.splits[0].train) if getattr(self.ctx, "splits", None) else 0
        if request.fidelity >= 1.0 and not confirm and self.policy.probes(n_train, timeout):
            probe = Request(request.z, request.theta, PROBE_FIDELITY, request.iterations)

            def decide(obs: Observation) -> None:
                if obs.ok and self.policy.full_duration(obs) <= timeout:
                    if not self._attach(key, then, ticket):
                        left = None if deadline is None else deadline - time.monotonic()
                        self._send(key, request, left, tags, then, ticket)
                    return
                logger.debug("not fitted on all rows: the probe %s", obs.status.value
                             if not obs.ok else f"took {obs.duration:.3g} s")
                if not obs.budget_stop:  # the end of the budget says nothing of the pipeline
                    self.cache[key] = obs
                then(obs)

            self._ask(probe, time_left, {**tags, "probe": True}, decide, ticket)
            return
        self._send(key, request, time_left, tags, then, ticket)

    def _attach(self, key: str, then: Callable[[Observation], None], ticket: int | None) -> bool:
        """Let the trial of ``key`` in flight, if there is one, answer ``then`` too (as a cache
        hit: a duplicate, as within a batch)."""
        flight = self._in_flight.get(key)
        if flight is None:
            return False
        first = flight.then

        def both(obs: Observation) -> None:
            first(obs)
            then(replace(obs, cached=True))

        flight.then = both
        flight.tickets += [] if ticket is None else [ticket]
        return True

    def _send(self, key: str, request: Request, time_left: float | None, tags: dict[str, Any],
              then: Callable[[Observation], None], ticket: int | None) -> None:
        """Hand the trial of ``request`` to the executor (one tagged ``confirm`` may take all
        the time left)."""
        timeout, budget_stop = self.policy.timeout(time_left, self.succeeded)
        if tags.get("confirm") and time_left is not None:
            timeout, budget_stop = max(time_left, 1e-3), True
        deadline = None if time_left is None else time.monotonic() + time_left
        job = ((request.z, request.theta, request.fidelity)
               + (() if request.iterations is None else (request.iterations,)))
        job_ticket = self.executor.submit(job, timeout, deadline)
        flight = _Flight(key, request, tags, budget_stop, then,
                         [] if ticket is None else [ticket],
                         next(self._orders) if self._ordered else None)
        self._flights[job_ticket] = self._in_flight[key] = flight

    def _answer(self, ticket: int, observation: Observation) -> None:
        self._ready.append((ticket, observation))

    def _record_crash(self, mark: dict[str, Any]) -> None:
        """Record a trial during which earlier sessions died :data:`CRASHES_TO_FAIL` times as
        failed; it is replayed like the other recorded evaluations when the search asks it."""
        request = Request(tuple(int(v) for v in mark["z"]), np.asarray(mark["theta"], dtype=float),
                          float(mark["fidelity"]), mark.get("iterations"))
        result = {"status": "failed", "loss": math.nan, "error": CRASHED}
        self._observe(mark["key"], request, result, {}, False)
        self.replay[mark["key"]] = self.cache.pop(mark["key"])

    def _key(self, request: Request) -> str:
        """The cache key: the pipeline, the data fidelity and, if given, the training length.
        Remembered by the request's values (up to :data:`KEYS_KEPT` of them): a z-step's
        bandit asks the same pipelines at one θ again and again, answered by the cache, and
        decoding a pipeline for its key was most of what such an answer cost."""
        theta = np.asarray(request.theta, dtype=float)
        memo = (tuple(int(j) for j in request.z), theta.tobytes(), request.fidelity,
                request.iterations)
        key = self._keys.get(memo)
        if key is None:
            key = f"{self.ctx.space.key(request.z, theta)}|fidelity={request.fidelity:.6g}"
            if request.iterations is not None:
                key = f"{key}|iterations={request.iterations}"
            if len(self._keys) >= KEYS_KEPT:
                self._keys.clear()
            self._keys[memo] = key
        return key

    def _observe(self, key: str, request: Request, result: dict[str, Any],
                 tags: dict[str, Any], budget_stop: bool) -> Observation:
        """Record a trial's result in the journal (its predictions in memory) and cache it."""
        predictions = result.pop("predictions", None)
        models = result.pop("models", None)
        cut = result.pop("budget_stop", False)  # the executor stopped it at the budget's end
        stopped = (result["status"] == "timeout" and (budget_stop or cut)
                   or result["status"] == "cancelled")
        status, loss = result.get("status", "failed"), result.get("loss", math.nan)
        if status != "ok" or not math.isfinite(loss):
            logger.debug("trial failed (%s): %s", status, result.get("error"))
        space = self.ctx.space
        config = space.decode(request.z, request.theta, request.iterations)
        record = make_record(
            self.journal.next_id(), key, request, result, config=config,
            pipeline=" -> ".join(config[m] for m in space.encoding.module_names),
            worst_loss=self.worst_loss, time=self.deadline.elapsed() + self._resumed_seconds,
            tags=tags, stopped=stopped,
        )
        observation = observation_of(record)
        # observers first: the library writes the predictions it keeps to the run directory
        # before the record that refers to them, so a process killed in between leaves a file
        # that the resumed run's evaluation of this id replaces, never a record without them
        for observer in self.observers:
            observer.observed(record, observation, int(request.z[-1]), predictions, models)
        self.journal.append(record)
        if not stopped:
            self.cache[key] = observation
        self.succeeded |= observation.ok and observation.fidelity >= 1.0
        return observation
