"""Where trials run: in this process, or in a pool of worker processes that can be stopped.

The process pool is Pebble's ``ProcessPool``: a trial that overruns its timeout has its worker
process terminated and replaced, so a runaway fit really stops; the memory limit is an address-space
rlimit set in each worker, so an oversized allocation fails inside that trial alone.
"""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Sequence

import numpy as np

from ..exceptions import InvalidParameterError
from .worker import TrialContext, init_worker, run_in_worker

Job = tuple[tuple[int, ...], np.ndarray, float]
_MAIN_GUARD_HINT = (
    "Worker processes are started with 'spawn' and import your main module again: in a script, "
    "put the code that calls fit under `if __name__ == '__main__':`."
)


class SerialExecutor:
    """Run trials one after another in this process (no timeout or memory limit can be enforced)."""

    name = "serial"
    enforces_timeout = False

    def start(self, ctx: TrialContext) -> None:
        self.ctx = ctx

    def run(self, jobs: Sequence[Job], timeouts: Sequence[float | None]) -> list[dict[str, Any]]:
        results = []
        for z, theta, fidelity in jobs:
            start = time.perf_counter()
            result = self.ctx.run(z, theta, fidelity)
            result["duration"] = time.perf_counter() - start
            results.append(result)
        return results

    def close(self) -> None:
        self.ctx = None  # type: ignore[assignment]


class ProcessExecutor:
    """Run trials in ``n_workers`` worker processes with per-trial timeouts and a memory limit.

    Parameters
    ----------
    n_workers : int
        Worker processes (trials of one batch run concurrently).
    memory_limit_mb : int, optional
        Address-space limit of each worker in MiB.
    threads : int, optional
        BLAS/OpenMP threads per worker (1 keeps workers from competing for cores).
    start_method : str
        ``"spawn"`` (safe with threaded BLAS) or ``"fork"``/``"forkserver"``.
    """

    name = "process"
    enforces_timeout = True

    def __init__(
        self,
        n_workers: int = 1,
        memory_limit_mb: int | None = None,
        threads: int | None = 1,
        start_method: str = "spawn",
    ) -> None:
        if n_workers < 1:
            raise InvalidParameterError(f"n_workers must be >= 1, got {n_workers!r}")
        self.n_workers = n_workers
        self.memory_limit_mb = memory_limit_mb
        self.threads = threads
        self.start_method = start_method
        self.pool: Any = None

    #: seconds a new worker may take to start before the pool is declared broken
    start_timeout = 120.0

    def start(self, ctx: TrialContext) -> None:
        import os
        import pickle

        from pebble import ProcessPool

        if getattr(multiprocessing.current_process(), "_inheriting", False):
            raise RuntimeError(_MAIN_GUARD_HINT)
        try:
            pickle.dumps(ctx)
        except Exception as err:
            raise InvalidParameterError(
                "the data, metric and constraints must be picklable to run trials in worker "
                f"processes (use module-level functions, not lambdas): {err}"
            ) from None
        self.pool = ProcessPool(
            max_workers=self.n_workers,
            initializer=init_worker,
            initargs=(ctx, self.memory_limit_mb, self.threads),
            context=multiprocessing.get_context(self.start_method),
        )
        # A worker that dies while starting (typically: a script without a main guard, re-run by
        # every spawned worker) would be restarted forever; fail clearly instead.
        try:
            self.pool.schedule(os.getpid).result(timeout=self.start_timeout)
        except Exception as err:
            self.close()
            raise RuntimeError(f"worker processes could not start ({err!r}). {_MAIN_GUARD_HINT}") from None

    def run(self, jobs: Sequence[Job], timeouts: Sequence[float | None]) -> list[dict[str, Any]]:
        from pebble import ProcessExpired

        started = time.perf_counter()
        futures = [
            self.pool.schedule(run_in_worker, args=job, timeout=t) for job, t in zip(jobs, timeouts)
        ]
        results = []
        for future, timeout in zip(futures, timeouts):
            try:
                result = future.result()
            except FutureTimeout:
                result = {"status": "timeout", "error": f"stopped after {timeout:.3g} s"}
            except ProcessExpired as err:
                result = {
                    "status": "failed",
                    "error": f"worker process died (exit code {err.exitcode}): {err}",
                }
            except MemoryError:
                result = {"status": "memout", "error": "MemoryError in the worker"}
            except Exception as err:  # e.g. the result could not be pickled back
                result = {"status": "failed", "error": f"{type(err).__name__}: {err}"}
            result["duration"] = time.perf_counter() - started
            results.append(result)
        return results

    def close(self) -> None:
        if self.pool is not None:
            self.pool.stop()
            self.pool.join()
            self.pool = None


def make_executor(
    kind: str, *, n_jobs: int, memory_limit_mb: int | None, needs_isolation: bool
) -> SerialExecutor | ProcessExecutor:
    """``"auto"`` picks the process pool when a timeout, memory limit or n_jobs > 1 needs it."""
    if kind == "auto":
        kind = "process" if (needs_isolation or memory_limit_mb or n_jobs > 1) else "serial"
    if kind == "serial":
        if n_jobs > 1 or memory_limit_mb:
            raise InvalidParameterError(
                "executor='serial' runs one trial at a time in this process: n_jobs > 1 and "
                "memory_limit need executor='process'"
            )
        return SerialExecutor()
    if kind == "process":
        return ProcessExecutor(n_workers=n_jobs, memory_limit_mb=memory_limit_mb)
    raise InvalidParameterError(
        f"executor must be 'auto', 'serial' or 'process', got {kind!r}"
    )
