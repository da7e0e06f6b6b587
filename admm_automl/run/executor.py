"""The executor a run asks for by name (``executor=``, ``n_jobs``, ``memory_limit``,
``dask_address``): the factory sits here, above the engine, so that the engine's executors never
import one another; and a benchmark's executor, one BLAS thread a worker
(:func:`single_threaded_executor`)."""

from __future__ import annotations

from typing import Any

from joblib import effective_n_jobs

from ..evaluation.dask_executor import DaskExecutor
from ..evaluation.executors import ProcessExecutor, SerialExecutor
from ..exceptions import InvalidParameterError


def make_executor(
    kind: str, *, n_jobs: int, memory_limit_mb: int | None, needs_isolation: bool,
    dask_address: str | None = None, threads: int | None = 1,
) -> Any:
    """The executor of ``kind``: ``"serial"``, ``"process"`` (this machine's worker pool),
    ``"dask"`` (:class:`~admm_automl.evaluation.DaskExecutor` on ``dask_address``, else the current Dask
    client, else a local cluster of ``n_jobs`` workers), or ``"auto"``, which picks the process
    pool when a timeout, memory limit or ``n_jobs > 1`` needs it. A negative ``n_jobs`` counts from
    the cores this process may use, as in scikit-learn (-1, the estimator's default: all of
    them); ``"serial"`` takes it as one (it asks for as many as there may be, and serial is
    one), and refuses only a count above one. ``threads``: BLAS and OpenMP threads per worker
    (one by default, so that workers do not compete for the cores; None leaves the environment
    alone)."""
    asked, n_jobs = n_jobs, effective_n_jobs(n_jobs)
    if dask_address is not None and kind != "dask":
        raise InvalidParameterError(
            f"dask_address={dask_address!r} needs executor='dask', got executor={kind!r}"
        )
    if kind == "auto":
        kind = "process" if (needs_isolation or memory_limit_mb or n_jobs > 1) else "serial"
    if kind == "serial":
        if asked > 1 or memory_limit_mb:
            raise InvalidParameterError(
                "executor='serial' runs one trial at a time in this process: n_jobs > 1 and "
                "memory_limit need executor='process'"
            )
        return SerialExecutor()
    if kind == "process":
        return ProcessExecutor(n_workers=n_jobs, memory_limit_mb=memory_limit_mb, threads=threads)
    if kind == "dask":
        return DaskExecutor(address=dask_address, n_workers=n_jobs,
                            memory_limit_mb=memory_limit_mb, threads=threads)
    raise InvalidParameterError(
        f"executor must be 'auto', 'serial', 'process' or 'dask', got {kind!r}"
    )


def single_threaded_executor(kind: str = "process", n_workers: int = 1) -> Any:
    """The executor of a benchmark or experiment run, from :func:`make_executor`:
    ``kind`` (``"serial"``, ``"process"`` or ``"dask"``) with ``n_workers`` workers, no memory
    limit, and BLAS/OpenMP held to one thread in each worker, so that runs side by side, one core
    each, do not compete for the cores (``"serial"`` runs the trials in this process, under the
    threads the calling script set)."""
    return make_executor(kind, n_jobs=n_workers, memory_limit_mb=None,
                         needs_isolation=kind != "serial", threads=1)
