"""What runs on a Dask worker for :class:`~admm_automl.evaluation.dask_executor.DaskExecutor`.

The driver registers one :class:`TaskPlugin` per run. Dask's scheduler keeps it and hands it to
every worker of the cluster, those that join later (or replace a dead one) included, so the task
(data, splits, metric, constraints), pickled once by the driver, reaches each worker once. A trial
is then a small Dask task, :func:`run_trial` ``(plugin name, (z, θ, fidelity), timeout)``, whose
answer is the result dict of :mod:`.trial`.

The plugin never runs a trial in the Dask worker itself: each trial runs in a *trial process* of the
package's own pool (a :class:`~admm_automl.evaluation.ProcessExecutor` of one process, started by
the worker and fed the pickled task from a local file). So a trial on Dask has exactly the process
pool's semantics: the timeout SIGKILLs the trial process (the Dask worker's thread returns at once
and takes the next trial), ``RLIMIT_AS`` bounds the trial process's memory (status ``memout``), BLAS
threads are capped, and a crash (segfault, ``os._exit``) fails that trial with its reason, while the
Dask worker, its connections and its other trials are untouched. Trial processes stay up between
trials (one per Dask thread that runs trials) and die with their Dask worker (their zygote ends
them when it exits, see :mod:`.zygote`).

This module imports ``distributed``; the driver imports it only once that is known to be
installed.
"""

from __future__ import annotations

import pickle
import threading
from typing import Any

from distributed import WorkerPlugin, get_worker

from ..exceptions import WorkerError
from .executors import ProcessExecutor


class PickledTask:
    """A task that the driver has already pickled: it pickles back to the same bytes, so a trial
    process's task file holds the driver's pickle as it is (the Dask worker never unpickles the
    task, and needs none of the user's modules for it)."""

    def __init__(self, blob: bytes) -> None:
        self.blob = blob

    def __reduce__(self) -> tuple[Any, tuple[bytes]]:
        return pickle.loads, (self.blob,)


class TaskPlugin(WorkerPlugin):
    """The run's pickled task on a Dask worker, and that worker's idle trial processes.

    Parameters
    ----------
    name : str
        Unique name of the run's plugin (the key under which the worker keeps it).
    blob : bytes
        The task, pickled by :func:`~.child_main.pickle_task`.
    memory_limit_mb, threads, start_timeout
        As for :class:`~admm_automl.evaluation.ProcessExecutor`, per trial process.
    """

    def __init__(
        self, name: str, blob: bytes, memory_limit_mb: int | None, threads: int | None,
        start_timeout: float,
    ) -> None:
        self.name = name
        self.blob = blob
        self.memory_limit_mb = memory_limit_mb
        self.threads = threads
        self.start_timeout = start_timeout

    def setup(self, worker: Any) -> None:
        self.address = worker.address
        self._lock = threading.Lock()
        self._idle: list[ProcessExecutor] = []

    def teardown(self, worker: Any) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for pool in idle:
            pool.close()

    def _take(self) -> ProcessExecutor:
        """An idle trial process, or a new one (started in the calling Dask thread, which lives as
        long as the worker)."""
        with self._lock:
            if self._idle:
                return self._idle.pop()
        pool = ProcessExecutor(1, memory_limit_mb=self.memory_limit_mb, threads=self.threads,
                               start_timeout=self.start_timeout)
        try:
            pool.start(PickledTask(self.blob))
        except WorkerError as err:
            raise WorkerError(f"Dask worker {self.address}: {err}") from None
        return pool

    def _give(self, pool: ProcessExecutor) -> None:
        with self._lock:
            self._idle.append(pool)

    def warm_up(self, count: int) -> int:
        """Start trial processes until ``count`` are idle; returns how many are."""
        pools = [self._take() for _ in range(count)]
        for pool in pools:
            self._give(pool)
        return len(self._idle)

    def run(self, job: tuple, timeout: float | None) -> dict[str, Any]:
        pool = self._take()
        try:
            (result,) = pool.run([job], [timeout])
        except WorkerError as err:  # its replacement processes cannot start
            pool.close()
            raise WorkerError(f"Dask worker {self.address}: {err}") from None
        self._give(pool)
        return result


def warm_up(name: str, count: int) -> int:
    """The Dask task that starts ``count`` trial processes of the run ``name`` on its worker."""
    return get_worker().plugins[name].warm_up(count)


def run_trial(name: str, job: tuple, timeout: float | None) -> dict[str, Any]:
    """The Dask task of one trial ``job = (z, θ, fidelity)`` of the run ``name``."""
    return get_worker().plugins[name].run(job, timeout)
