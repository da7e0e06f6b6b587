"""The black box ``(z, θ, fidelity) -> Observation`` over batches.

One evaluation path for every solver: cache look-up, the executor (with the trial policy's
timeouts and probes, :mod:`.policy`), failure capture (the run's failure loss, error text kept),
and the journal, written before an observation is used (its records' schema:
:func:`admm_automl.journal.make_record`).

A resumed journal's evaluations are *replayed*: the first request for one of them is answered from
the journal as if it had just been evaluated (it counts for the budget, so the same seed and
evaluation budget retrace the same search and continue it), without running or recording it again.

Observers (such as the run's library of kept predictions, :mod:`admm_automl.run.library`) are
told of every evaluation just before it is recorded, with its validation predictions when the
trial returned them, and of the replayed ones (with the index of their learner, without
predictions) at the start.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import replace
from typing import Any, Protocol, Sequence

import numpy as np

from ..journal import Journal, make_record, observation_of
from ..records import Observation, Request
from .policy import PROBE_FIDELITY, TrialPolicy
from .trial import TrialContext

logger = logging.getLogger(__name__)

#: the error of a trial whose process died while it ran (crash-only trials, :mod:`..journal`)
CRASHED = ("the process died during this evaluation (a crash in the estimator, such as a "
           "segmentation fault, or the process was killed); it is not run again. "
           "executor='process' runs each trial in a worker process, where a crash is recorded "
           "and the search goes on")


class Observer(Protocol):
    """Told of every evaluation the objective records (``learner`` is the index of the
    pipeline's last step; ``predictions`` its validation predictions, None when the trial kept
    none or the evaluation is replayed from a resumed journal; ``models`` the name of the file
    of its fold models, :mod:`.fold_models`, None without one). Called just before the record
    is journaled."""

    def observed(self, record: dict[str, Any], observation: Observation, learner: int | None,
                 predictions: Any, models: str | None = None) -> None: ...

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
    start_time : float, optional
        ``time.monotonic()`` value from which the records' ``time`` runs (default: now); a resumed
        journal's times continue after its last one.
    observers : sequence of Observer
        Told of every recorded evaluation, and of the replayed ones now.
    crash_marks : bool, default=True
        With an executor that runs trials in this process (``in_process``) and a journal file,
        mark each trial's start in the journal, and record the trials an earlier session started
        and never finished as failed instead of running them again (crash-only trials,
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
        start_time: float | None = None,
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
        self._t0 = (time.monotonic() if start_time is None else start_time) - elapsed
        self.crash_marks = (crash_marks and getattr(executor, "in_process", False)
                            and journal.path is not None)
        for mark in journal.unfinished:
            self._record_crash(mark)
        executor.start(ctx)

    @property
    def n_failed(self) -> int:
        """Failed, timed-out and memory-exhausted evaluations of the whole journal (cancelled
        trials are not evaluations)."""
        return sum(r.get("status") not in ("ok", "cancelled") for r in self.journal.records)

    def close(self) -> None:
        self.executor.close()
        self.journal.close()

    def __call__(
        self,
        requests: Sequence[Request],
        time_left: float | None = None,
        tags: dict[str, Any] | None = None,
    ) -> list[Observation]:
        keys = [self._key(r) for r in requests]
        todo: dict[str, Request] = {}
        fresh: dict[str, Observation] = {}
        for key, request in zip(keys, requests):
            if key in self.replay:
                fresh[key] = self.cache[key] = self.replay.pop(key)
            elif key not in self.cache and key not in todo:
                todo[key] = request
        if todo:
            called = time.monotonic()
            todo = self._probe(todo, time_left, tags or {}, fresh)
            if time_left is not None:
                time_left -= time.monotonic() - called
            timeout, budget_stop = self.policy.timeout(time_left, self.succeeded)
            jobs = [(r.z, r.theta, r.fidelity) + (() if r.iterations is None else (r.iterations,))
                    for r in todo.values()]
            deadline = None if time_left is None else time.monotonic() + time_left
            if self.crash_marks:  # lazily: each trial between its start mark and its record
                results = (self._run_marked(key, request, job, timeout, deadline)
                           for (key, request), job in zip(todo.items(), jobs))
            else:
                results = (self.executor.run(jobs, [timeout] * len(jobs), deadline=deadline)
                           if jobs else [])
            for (key, request), result in zip(todo.items(), results):
                fresh[key] = self._observe(key, request, result, tags or {}, budget_stop)
        out = []
        for key in keys:
            if key in fresh:  # the first occurrence of a new request
                out.append(fresh.pop(key))
            else:  # a cache hit, or a duplicate within the batch
                source = self.cache[key] if key in self.cache else out[keys.index(key)]
                out.append(replace(source, cached=True))
        return out

    def _run_marked(self, key: str, request: Request, job: tuple, timeout: float | None,
                    deadline: float | None) -> dict[str, Any]:
        """Run one trial in this process between a start mark and its record (crash-only)."""
        self.journal.start(key, request)
        try:
            return self.executor.run([job], [timeout], deadline=deadline)[0]
        except BaseException:  # Ctrl-C or an exit, not a crash: a resume runs it again
            self.journal.interrupt(key)
            raise

    def _record_crash(self, mark: dict[str, Any]) -> None:
        """Record a trial an earlier session started in its own process and never finished as
        failed; it is replayed like the other recorded evaluations when the search asks it."""
        request = Request(tuple(int(v) for v in mark["z"]), np.asarray(mark["theta"], dtype=float),
                          float(mark["fidelity"]), mark.get("iterations"))
        result = {"status": "failed", "loss": math.nan, "error": CRASHED}
        self._observe(mark["key"], request, result, {}, False)
        self.replay[mark["key"]] = self.cache.pop(mark["key"])

    def _key(self, request: Request) -> str:
        """The cache key: the pipeline, the data fidelity and, if given, the training length."""
        key = f"{self.ctx.space.key(request.z, request.theta)}|fidelity={request.fidelity:.6g}"
        return key if request.iterations is None else f"{key}|iterations={request.iterations}"

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
            worst_loss=self.worst_loss, time=time.monotonic() - self._t0, tags=tags,
            stopped=stopped,
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

    def _probe(self, todo: dict[str, Request], time_left: float | None, tags: dict[str, Any],
               fresh: dict[str, Observation]) -> dict[str, Request]:
        """Run full-data requests on a subsample first (module docstring); answer those that
        could not finish on all rows by their probe (in ``fresh``) and return the others."""
        n_train = len(self.ctx.splits[0].train) if getattr(self.ctx, "splits", None) else 0
        timeout, _ = self.policy.timeout(time_left, self.succeeded)
        if not self.policy.probes(n_train, timeout):
            return todo
        probes = {key: Request(r.z, r.theta, PROBE_FIDELITY, r.iterations) for key, r in todo.items()
                  if r.fidelity >= 1.0}
        if not probes:
            return todo
        answers = dict(zip(probes, self(list(probes.values()), time_left, {**tags, "probe": True})))
        kept = {}
        for key, request in todo.items():
            probe = answers.get(key)
            if probe is None or (probe.ok and self.policy.full_duration(probe) <= timeout):
                kept[key] = request
                continue
            logger.debug("not fitted on all rows: the probe %s", probe.status.value
                         if not probe.ok else f"took {probe.duration:.3g} s")
            fresh[key] = probe
            if not probe.budget_stop:  # the end of the budget says nothing of the pipeline
                self.cache[key] = probe
        return kept
