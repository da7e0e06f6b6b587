"""Prediction latency: seconds per row of ``predict`` on a fixed validation batch, on the CPU
clock by default (stable on a busy machine)."""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable

import numpy as np

from ..exceptions import InvalidParameterError
from .registry import CONSTRAINTS
from .base import BaseConstraint


#: the clocks a latency can be read on: CPU seconds of the predicting process, or wall seconds
CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


@CONSTRAINTS.register("latency")
class PredictionLatency(BaseConstraint):
    """Prediction latency in seconds per row: the median of repeated single-threaded ``predict``
    calls on a fixed validation batch, on the process's CPU clock.

    The first ``batch_size`` validation rows are the batch; ``warmup`` untimed calls, then
    ``repeats`` timed calls of ``predict`` under a one-thread BLAS/OpenMP limit (a model deployed
    behind a service usually gets one core per request); the value is the median time divided by
    the number of rows.

    Why the CPU clock by default: a wall-clock reading includes the time other processes hold
    the core, so on a busy machine (parallel trials, a neighbour's job) the same model reads
    twice as slow, and the search would reject or accept pipelines by the machine's load rather
    than by their cost. The CPU time of the predicting process is what the model costs one core,
    whatever else runs: what a dedicated single-threaded deployment takes. Work done on other
    threads of the process is counted too, so a model that predicts on several threads is never
    read as faster than its total work. ``clock="wall"`` reads the wall clock (a model that waits
    on I/O or sleeps, which costs no CPU). The median of the repeats discards a stray slow call
    (a page fault, a collection). Wall-clock and CPU readings are not bit-for-bit reproducible.

    Parameters
    ----------
    threshold : float
        Maximum seconds per row (Liu et al. 2020 use 1-20 µs).
    batch_size, repeats, warmup : int
        Rows per call, timed calls, untimed calls.
    clock : {"cpu", "wall"}, default="cpu"
        The process's CPU time (:func:`time.process_time`) or wall time
        (:func:`time.perf_counter`).
    timer : callable, optional
        Returns seconds; replaces ``clock`` (for tests).
    """

    of_the_model = True

    def __init__(
        self,
        threshold: float = 1e-4,
        sense: str = "<=",
        batch_size: int = 1000,
        repeats: int = 5,
        warmup: int = 1,
        clock: str = "cpu",
        timer: Callable[[], float] | None = None,
    ) -> None:
        self.threshold = threshold
        self.sense = sense
        self.batch_size = batch_size
        self.repeats = repeats
        self.warmup = warmup
        self.clock = clock
        self.timer = timer

    def validate(self) -> None:
        super().validate()
        for name in ("batch_size", "repeats"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise InvalidParameterError(f"latency: {name} must be an integer >= 1")
        if not isinstance(self.warmup, int) or self.warmup < 0:
            raise InvalidParameterError("latency: warmup must be an integer >= 0")
        if self.clock not in CLOCKS:
            raise InvalidParameterError(
                f"latency: clock must be one of {', '.join(map(repr, CLOCKS))}, got {self.clock!r}")

    def measure(self, pipeline: Any, X: Any, y: np.ndarray, rows: np.ndarray) -> float:
        from threadpoolctl import threadpool_limits

        timer = self.timer if self.timer is not None else CLOCKS[self.clock]
        n = min(self.batch_size, len(rows))
        batch = X.iloc[:n] if hasattr(X, "iloc") else X[:n]
        with threadpool_limits(1):
            for _ in range(self.warmup):
                pipeline.predict(batch)
            times = []
            for _ in range(self.repeats):
                start = timer()
                pipeline.predict(batch)
                times.append(timer() - start)
        return statistics.median(times) / n
