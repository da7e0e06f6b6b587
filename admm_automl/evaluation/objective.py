"""The black box ``(z, θ, fidelity) -> Observation`` over batches.

One evaluation path for every solver: cache look-up, the executor (with timeouts), failure capture
(the run's failure loss, error text kept), and the journal, written before an observation is used.

A resumed journal's evaluations are *replayed*: the first request for one of them is answered from
the journal as if it had just been evaluated (it counts for the budget, so the same seed and
evaluation budget retrace the same search and continue it), without running or recording it again.

Time-aware trials (when a time budget or a trial timeout applies):

* **automatic timeout** — with ``timeout_fraction`` and no ``trial_timeout``, a trial may take at
  most that fraction of the time left (the estimator uses :data:`AUTO_TIMEOUT_FRACTION`), but never
  less than ``min_timeout`` (the estimator: a tenth of the whole budget, auto-sklearn's per-run
  limit, so that the end of a run still fits full-data trials of a few seconds), once a pipeline
  has succeeded on all rows: until then a trial may use all the time left, so that a run on slow
  data still returns a model;
* **subsample first** — on ``probe_min_rows`` training rows or more, a full-data request is first
  run on :data:`PROBE_FIDELITY` of the training rows; when that probe fails, or its duration with
  the fit time scaled linearly to all rows (prediction and scoring run on the same validation rows
  either way) exceeds the timeout, the full fit is not started and the probe's observation
  (fidelity < 1, so never the incumbent) answers the request.

With ``keep_predictions`` > 0 the validation predictions of the best evaluations (by ``rank``),
and of the best evaluation of each learner (the last step of the pipeline), are kept in memory for
the ensemble (:mod:`admm_automl.run.ensemble`), never in the journal: the best of every learner keeps
the ensemble's library diverse when one learner's variants fill the top places.

:meth:`PipelineObjective.refit_estimate` is the estimated refit time
(:func:`refit_seconds_estimate`) of the best evaluation so far and of the
next best whose predictions are kept: what the estimator keeps back from a time budget for its
refit and its ensemble.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import replace
from typing import Any, Sequence

from ..journal import Journal, observation_of
from ..records import Observation, Request
from .trial import TrialContext

logger = logging.getLogger(__name__)

#: a trial may take at most this fraction of the time left: with a quarter, at least three more
#: trials as slow as the slowest allowed one still fit after it, so no single pipeline can take a
#: run's last chances, while a good learner that needs a few seconds on large data still gets them
#: early in a run (auto-sklearn's fixed per-run limit, a tenth of the whole budget, would stop the
#: full-data boosted trees of a 60 s run on 45 000 rows after 6 s)
AUTO_TIMEOUT_FRACTION = 0.25
#: ... but at least this fraction of the whole budget (auto-sklearn's default per-run limit)
AUTO_MIN_TIMEOUT_FRACTION = 0.1
#: the fraction of the training rows a probe fits on (FLAML AutoML's first sample is 10 000 rows;
#: a tenth keeps the probe's cost at about a tenth of the full fit for learners linear in the rows)
PROBE_FIDELITY = 0.1
#: the training rows from which full-data requests are probed first (smaller data fit fast)
PROBE_MIN_ROWS = 10_000


def refit_seconds_estimate(record: dict[str, Any], n_rows: int, n_splits: int) -> float:
    """The seconds a refit of ``record``'s pipeline on all ``n_rows`` rows should take: its mean
    fit time per validation split (with what the prefix cache saved it added back) scaled linearly
    from the split's training rows to all rows."""
    saved = float((record.get("prefix_cache") or {}).get("seconds_saved") or 0.0)
    per_split = (float(record.get("fit_time") or 0.0) + saved) / max(n_splits, 1)
    n_train = record.get("n_train") or n_rows
    return per_split * n_rows / max(int(n_train), 1)


def _full_duration(probe: Observation) -> float:
    """The duration a probe predicts for the full-data trial: its fit time scaled linearly to all
    training rows (exact for learners linear in the rows, optimistic for superlinear ones), the
    rest (prediction, scoring, overhead) as measured."""
    return probe.duration + probe.fit_time * (1.0 / PROBE_FIDELITY - 1.0)


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
    trial_timeout : float, optional
        Seconds one trial may take (needs an executor that enforces it).
    start_time : float, optional
        ``time.monotonic()`` value from which the records' ``time`` runs (default: now); a resumed
        journal's times continue after its last one.
    timeout_fraction, min_timeout : float, optional
        Without ``trial_timeout``, a trial's timeout is this fraction of the time left, at least
        ``min_timeout`` seconds.
    probe_min_rows : int, optional
        Training rows from which full-data requests run on a subsample first (module docstring);
        None: never.
    keep_predictions : int
        How many evaluations' validation predictions :attr:`predictions` keeps (the best by
        ``rank``, and the best of each learner besides; 0: none).
    rank : callable, optional
        Sort key of an :class:`Observation` for ``keep_predictions`` and the incumbent (default:
        its loss).
    """

    def __init__(
        self,
        ctx: TrialContext,
        executor: Any,
        journal: Journal,
        *,
        worst_loss: float,
        trial_timeout: float | None = None,
        start_time: float | None = None,
        timeout_fraction: float | None = None,
        min_timeout: float = 0.0,
        probe_min_rows: int | None = None,
        keep_predictions: int = 0,
        rank: Any = None,
    ) -> None:
        self.ctx = ctx
        self.executor = executor
        self.journal = journal
        self.worst_loss = float(worst_loss)
        self.trial_timeout = trial_timeout
        self.timeout_fraction = timeout_fraction
        self.min_timeout = min_timeout
        self.probe_min_rows = probe_min_rows
        self.keep_predictions = keep_predictions
        self.rank = rank or (lambda obs: obs.loss)
        #: eval_id -> validation predictions of the best ``keep_predictions`` evaluations and of
        #: the best of each learner
        self.predictions: dict[int, Any] = {}
        self._ranks: dict[int, Any] = {}
        self._best_of_learner: dict[int, int] = {}  # learner (z[-1]) -> eval_id
        #: eval_id -> estimated seconds to refit it on all rows (successful full-data ones)
        self._refit: dict[int, float] = {}
        self._incumbent: tuple[Any, int] | None = None  # (rank, eval_id) of the best so far
        self.cache: dict[str, Observation] = {}
        #: evaluations of a resumed journal not asked for yet in this session, by cache key
        self.replay: dict[str, Observation] = {
            rec["key"]: observation_of(rec)
            for rec in journal.records if rec.get("key") and not rec.get("budget_stop")
        }
        #: whether a pipeline succeeded on all rows (the automatic timeout starts then)
        self.succeeded = any(o.ok and o.fidelity >= 1.0 for o in self.replay.values())
        for rec in journal.records:
            if rec.get("key") and not rec.get("budget_stop"):
                self._track(rec, observation_of(rec))
        elapsed = max((float(r.get("time") or 0.0) for r in journal.records), default=0.0)
        self._t0 = (time.monotonic() if start_time is None else start_time) - elapsed
        executor.start(ctx)

    @property
    def n_failed(self) -> int:
        """Failed, timed-out and memory-exhausted evaluations of the whole journal."""
        return sum(r.get("status") != "ok" for r in self.journal.records)

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
            timeout, budget_stop = self._timeout(time_left)
            jobs = [(r.z, r.theta, r.fidelity) + (() if r.iterations is None else (r.iterations,))
                    for r in todo.values()]
            deadline = None if time_left is None else time.monotonic() + time_left
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

    def _key(self, request: Request) -> str:
        """The cache key: the pipeline, the data fidelity and, if given, the training length."""
        key = f"{self.ctx.space.key(request.z, request.theta)}|fidelity={request.fidelity:.6g}"
        return key if request.iterations is None else f"{key}|iterations={request.iterations}"

    def _timeout(self, time_left: float | None) -> tuple[float | None, bool]:
        """The timeout of the next trials, and whether it is the end of the time budget."""
        timeout = self.trial_timeout
        if (timeout is None and self.timeout_fraction is not None and time_left is not None
                and self.succeeded):
            timeout = max(self.timeout_fraction * time_left, self.min_timeout, 1e-3)
        if time_left is not None and (timeout is None or time_left < timeout):
            return max(time_left, 1e-3), True
        return timeout, False

    def _observe(self, key: str, request: Request, result: dict[str, Any],
                 tags: dict[str, Any], budget_stop: bool) -> Observation:
        """Record a trial's result in the journal (its predictions in memory) and cache it."""
        predictions = result.pop("predictions", None)
        cut = result.pop("budget_stop", False)  # the executor stopped it at the budget's end
        stopped = result["status"] == "timeout" and (budget_stop or cut)
        record = self._record(key, request, result, tags, stopped)
        self.journal.append(record)
        observation = observation_of(record)
        if not stopped:
            self.cache[key] = observation
        self.succeeded |= observation.ok and observation.fidelity >= 1.0
        self._track(record, observation)
        if predictions is not None and observation.ok and observation.fidelity >= 1.0:
            self._keep(int(request.z[-1]), observation, predictions)
        return observation

    def _track(self, record: dict[str, Any], observation: Observation) -> None:
        """Note the refit estimate of a successful full-data evaluation, and the best so far."""
        y = getattr(self.ctx, "y", None)  # a benchmark problem's context has no rows to refit on
        if y is None or not (observation.ok and observation.fidelity >= 1.0):
            return
        eval_id = observation.eval_id
        self._refit[eval_id] = refit_seconds_estimate(record, len(y), len(self.ctx.splits))
        rank = self.rank(observation)
        if self._incumbent is None or rank < self._incumbent[0]:
            self._incumbent = (rank, eval_id)

    def refit_estimate(self, others: int = 0) -> tuple[float, float]:
        """Estimated seconds to refit the best evaluation so far, and the next ``others`` best
        of those whose predictions are kept (together), on all rows; zeros before any success."""
        if self._incumbent is None:
            return 0.0, 0.0
        best = self._incumbent[1]
        ranked = sorted((i for i in self._ranks if i != best), key=self._ranks.__getitem__)
        return self._refit[best], sum(self._refit.get(i, 0.0) for i in ranked[:others])

    def _keep(self, learner: int, observation: Observation, predictions: Any) -> None:
        """Keep ``predictions`` if ``observation`` is among the best ``keep_predictions`` or the
        best of its learner; drop what no longer is."""
        if self.keep_predictions <= 0:
            return
        eval_id = observation.eval_id
        self.predictions[eval_id] = predictions
        self._ranks[eval_id] = self.rank(observation)
        best = self._best_of_learner.get(learner)
        if best is None or self._ranks[eval_id] < self._ranks[best]:
            self._best_of_learner[learner] = eval_id
        protected = set(self._best_of_learner.values())
        spare = [i for i in self._ranks if i not in protected]
        while len(spare) > self.keep_predictions:
            worst = max(spare, key=self._ranks.__getitem__)
            spare.remove(worst)
            del self.predictions[worst], self._ranks[worst]

    def _probe(self, todo: dict[str, Request], time_left: float | None, tags: dict[str, Any],
               fresh: dict[str, Observation]) -> dict[str, Request]:
        """Run full-data requests on a subsample first (module docstring); answer those that
        could not finish on all rows by their probe (in ``fresh``) and return the others."""
        n_train = len(self.ctx.splits[0].train) if getattr(self.ctx, "splits", None) else 0
        timeout, _ = self._timeout(time_left)
        if self.probe_min_rows is None or n_train < self.probe_min_rows or timeout is None:
            return todo
        probes = {key: Request(r.z, r.theta, PROBE_FIDELITY, r.iterations) for key, r in todo.items()
                  if r.fidelity >= 1.0}
        if not probes:
            return todo
        answers = dict(zip(probes, self(list(probes.values()), time_left, {**tags, "probe": True})))
        kept = {}
        for key, request in todo.items():
            probe = answers.get(key)
            if probe is None or (probe.ok and _full_duration(probe) <= timeout):
                kept[key] = request
                continue
            logger.debug("not fitted on all rows: the probe %s", probe.status.value
                         if not probe.ok else f"took {probe.duration:.3g} s")
            fresh[key] = probe
            if not probe.budget_stop:  # the end of the budget says nothing of the pipeline
                self.cache[key] = probe
        return kept

    def _record(
        self, key: str, request: Request, result: dict[str, Any], tags: dict[str, Any], stopped: bool
    ) -> dict[str, Any]:
        status = result.get("status", "failed")
        loss = result.get("loss", math.nan)
        if status != "ok" or not math.isfinite(loss):
            logger.debug("trial failed (%s): %s", status, result.get("error"))
            loss = self.worst_loss
        space = self.ctx.space
        config = space.decode(request.z, request.theta, request.iterations)
        record = {
            "eval_id": self.journal.next_id(),
            **tags,
            "pipeline": " -> ".join(config[m] for m in space.encoding.module_names),
            "config": config,
            "fidelity": request.fidelity,
            "n_train": result.get("n_train"),
            "loss": loss,
            "raw_loss": result.get("loss"),
            "status": status,
            "error": result.get("error"),
            "constraints": result.get("constraints", {}),
            "fit_time": result.get("fit_time", 0.0),
            "predict_time": result.get("predict_time", 0.0),
            "duration": result.get("duration", 0.0),
            "time": time.monotonic() - self._t0,
            "key": key,
        }
        if request.iterations is not None:  # the training-length fidelity
            record["iterations"] = request.iterations
            record["curve"] = result.get("curve", [])
            record["continued_from"] = result.get("continued_from", 0)
        if result.get("traceback"):
            record["traceback"] = result["traceback"]
        if result.get("prefix_cache"):  # what the worker's prefix cache saved for this trial
            record["prefix_cache"] = dict(result["prefix_cache"])
        if stopped:
            record["budget_stop"] = True
        return record
