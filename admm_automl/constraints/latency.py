"""Prediction latency: seconds per row of ``predict`` on a fixed validation batch, on the CPU
clock by default (stable on a busy machine)."""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable

import numpy as np

from ..exceptions import InvalidParameterError
from .registry import CONSTRAINTS
from .base import BaseConstraint, check_confidence


_TINY = np.finfo(float).tiny
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

    ``confidence`` (e.g. 0.9) asks that the limit hold for the next reading of the model, not
    only for the readings the search took: the value is then an upper prediction bound of one
    new reading. Why a bound: a reading is not a fixed property of the model. On a 2-core VM
    one model's median of 5 calls stayed within a few per cent from call to call but moved by up
    to 2× between readings a second apart (the other core's work, the CPU's state), and a
    pipeline whose readings met a limit by a few per cent read 1.2-1.5× over it on new rows in
    another process. With a limit met by several pipelines within that noise, the one chosen is
    the one that read lowest: a best reading is biased low, and its next reading misses. The
    readings are multiplicative, so the bound is taken on their logarithm: with the readings
    of k splits (each a fold model, read between fits, so at different moments) it is
    ``exp(m + t·s·√(1 + 1/k))`` — m and s the mean and standard deviation of the log readings,
    t Student's quantile at ``confidence`` with k − 1 degrees of freedom — never below their
    mean; s is at least the spread of one reading's own calls (the median's standard error,
    1.2533 × their robust deviation / √repeats), which is also the whole spread with one split
    (a holdout). ``history_`` records the bound as the value and the mean reading as
    ``constraint:latency:point``.

    Parameters
    ----------
    threshold : float
        Maximum seconds per row (Liu et al. 2020 use 1-20 µs).
    batch_size, repeats, warmup : int
        Rows per call, timed calls, untimed calls.
    clock : {"cpu", "wall"}, default="cpu"
        The process's CPU time (:func:`time.process_time`) or wall time
        (:func:`time.perf_counter`).
    confidence : float or None, default=None
        In [0.5, 1): constrain the upper prediction bound of a new reading at this level (see
        above) instead of the mean reading.
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
        confidence: float | None = None,
        timer: Callable[[], float] | None = None,
    ) -> None:
        self.threshold = threshold
        self.sense = sense
        self.batch_size = batch_size
        self.repeats = repeats
        self.warmup = warmup
        self.clock = clock
        self.confidence = confidence
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
        check_confidence("latency", self.confidence)

    def measure(self, pipeline: Any, X: Any, y: np.ndarray, rows: np.ndarray) -> float:
        return statistics.median(self.readings(pipeline, X, rows))

    def measure_point(self, pipeline: Any, X: Any, y: np.ndarray,
                      rows: np.ndarray) -> tuple[float, float | None]:
        if self.confidence is None:
            return float(self.measure(pipeline, X, y, rows)), None
        from scipy.stats import norm

        times = self.readings(pipeline, X, rows)
        point = statistics.median(times)
        # one reading's bound of a new reading: its log error counted twice (√2), once for the
        # reading and once for the new one; ``combine_bounds`` recovers that error from it
        z = max(float(norm.ppf(self.confidence)), 0.0) * np.sqrt(2.0)
        return point * float(np.exp(z * _median_log_error(times))), point

    def readings(self, pipeline: Any, X: Any, rows: np.ndarray) -> list[float]:
        """Seconds per row of each of the ``repeats`` timed calls (see the class docstring)."""
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
                times.append((timer() - start) / n)
        return times

    def combine_bounds(self, bounds: np.ndarray, points: np.ndarray, distinct: float) -> float:
        """The upper prediction bound of a new reading from the splits' readings ``points``
        (the class docstring), with one reading's own log error recovered from the splits'
        ``bounds`` (``measure_point``). Every split is a reading of its own, repeats of the
        folds included, so ``distinct`` does not apply."""
        from scipy.stats import norm, t

        points = np.maximum(np.asarray(points, float), _TINY)  # a coarse timer can read 0
        bounds = np.maximum(np.asarray(bounds, float), points)
        logs = np.log(points)
        k = len(logs)
        z = norm.ppf(self.confidence) * np.sqrt(2.0)
        within = float(np.sqrt(np.mean((np.log(bounds / points) / z) ** 2))) if z > 0 else 0.0
        spread = max(float(np.std(logs, ddof=1)) if k > 1 else 0.0, within)
        q = t.ppf(self.confidence, k - 1) if k > 1 else norm.ppf(self.confidence)
        bound = float(np.exp(np.mean(logs) + q * spread * np.sqrt(1.0 + 1.0 / k)))
        return max(bound, float(np.mean(points)))


def _median_log_error(times: list[float]) -> float:
    """The standard error of the log of the median of ``times``: 1.2533 × their robust standard
    deviation (1.4826 × the median absolute deviation of their logs) / √n; 0 for one call."""
    if len(times) < 2:
        return 0.0
    logs = np.log(np.maximum(times, _TINY))
    mad = float(np.median(np.abs(logs - np.median(logs))))
    return 1.2533 * 1.4826 * mad / np.sqrt(len(logs))
