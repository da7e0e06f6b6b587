"""The black box ``(z, θ, fidelity) -> Observation`` over batches.

One evaluation path for every solver: cache look-up, the executor (with timeouts), failure capture
(the run's failure loss, error text kept), and the journal, written before an observation is used.

A resumed journal's evaluations are *replayed*: the first request for one of them is answered from
the journal as if it had just been evaluated (it counts for the budget, so the same seed and
evaluation budget retrace the same search and continue it), without running or recording it again.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import replace
from typing import Any, Sequence

from ..journal import Journal
from ..records import Observation, Request
from ..results import observation_of
from .worker import TrialContext

logger = logging.getLogger(__name__)


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
    ) -> None:
        self.ctx = ctx
        self.executor = executor
        self.journal = journal
        self.worst_loss = float(worst_loss)
        self.trial_timeout = trial_timeout
        self.cache: dict[str, Observation] = {}
        #: evaluations of a resumed journal not asked for yet in this session, by cache key
        self.replay: dict[str, Observation] = {
            rec["key"]: observation_of(rec)
            for rec in journal.records if rec.get("key") and not rec.get("budget_stop")
        }
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
        space = self.ctx.space
        keys = [f"{space.key(r.z, r.theta)}|fidelity={r.fidelity:.6g}" for r in requests]
        todo: dict[str, Request] = {}
        fresh: dict[str, Observation] = {}
        for key, request in zip(keys, requests):
            if key in self.replay:
                fresh[key] = self.cache[key] = self.replay.pop(key)
            elif key not in self.cache and key not in todo:
                todo[key] = request
        if todo:
            timeout, budget_stop = self.trial_timeout, False
            if time_left is not None and (timeout is None or time_left < timeout):
                timeout, budget_stop = max(time_left, 1e-3), True
            jobs = [(r.z, r.theta, r.fidelity) for r in todo.values()]
            results = self.executor.run(jobs, [timeout] * len(jobs))
            for (key, request), result in zip(todo.items(), results):
                stopped = budget_stop and result["status"] == "timeout"
                record = self._record(key, request, result, tags or {}, stopped)
                self.journal.append(record)
                fresh[key] = observation_of(record)
                if not stopped:
                    self.cache[key] = fresh[key]
        out = []
        for key in keys:
            if key in fresh:  # the first occurrence of a new request
                out.append(fresh.pop(key))
            else:  # a cache hit, or a duplicate within the batch
                source = self.cache[key] if key in self.cache else out[keys.index(key)]
                out.append(replace(source, cached=True))
        return out

    def _record(
        self, key: str, request: Request, result: dict[str, Any], tags: dict[str, Any], stopped: bool
    ) -> dict[str, Any]:
        status = result.get("status", "failed")
        loss = result.get("loss", math.nan)
        if status != "ok" or not math.isfinite(loss):
            logger.debug("trial failed (%s): %s", status, result.get("error"))
            loss = self.worst_loss
        space = self.ctx.space
        config = space.decode(request.z, request.theta)
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
        if result.get("traceback"):
            record["traceback"] = result["traceback"]
        if result.get("prefix_cache"):  # what the worker's prefix cache saved for this trial
            record["prefix_cache"] = dict(result["prefix_cache"])
        if stopped:
            record["budget_stop"] = True
        return record
