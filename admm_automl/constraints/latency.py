"""Prediction latency: seconds per row of ``predict`` on a fixed validation batch."""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable

import numpy as np

from ..exceptions import InvalidParameterError
from .registry import CONSTRAINTS
from .base import BaseConstraint


@CONSTRAINTS.register("latency")
class PredictionLatency(BaseConstraint):
    """Prediction latency in seconds per row (median of repeats, single-threaded).

    The first ``batch_size`` validation rows are the batch; one warm-up call, then ``repeats``
    timed calls of ``predict`` under a one-thread BLAS/OpenMP limit; the value is the median time
    divided by the number of rows. ``timer`` is injectable for tests. Wall-clock measurements are
    not reproducible across runs.

    Parameters
    ----------
    threshold : float
        Maximum seconds per row (Liu et al. 2020 use 1-20 µs).
    batch_size, repeats, warmup : int
        Rows per call, timed calls, untimed calls.
    timer : callable
        Returns seconds (default ``time.perf_counter``).
    """

    def __init__(
        self,
        threshold: float = 1e-4,
        sense: str = "<=",
        batch_size: int = 1000,
        repeats: int = 5,
        warmup: int = 1,
        timer: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.threshold = threshold
        self.sense = sense
        self.batch_size = batch_size
        self.repeats = repeats
        self.warmup = warmup
        self.timer = timer

    def validate(self) -> None:
        super().validate()
        for name in ("batch_size", "repeats"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise InvalidParameterError(f"latency: {name} must be an integer >= 1")

    def measure(self, pipeline: Any, X: Any, y: np.ndarray, rows: np.ndarray) -> float:
        from threadpoolctl import threadpool_limits

        n = min(self.batch_size, len(rows))
        batch = X.iloc[:n] if hasattr(X, "iloc") else X[:n]
        with threadpool_limits(1):
            for _ in range(self.warmup):
                pipeline.predict(batch)
            times = []
            for _ in range(self.repeats):
                start = self.timer()
                pipeline.predict(batch)
                times.append(self.timer() - start)
        return statistics.median(times) / n
