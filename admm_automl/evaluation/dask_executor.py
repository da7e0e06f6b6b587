"""Trials on a Dask cluster (``executor="dask"``), with the process pool's semantics.

The executor contract is that of :mod:`.executors` (``start(task)``, ``run(jobs, timeouts)`` →
results in job order, ``submit(job, timeout)`` → ticket and ``wait()`` → the tickets and results
of the trials that ended, ``close()``, ``name``, ``enforces_timeout``); the objective above it keeps
the cache and writes the journal in the driver, before an observation is used, as with every
executor. ``submit`` is one ``client.submit`` and ``wait`` returns the trials in the order the
scheduler reports them done (a done-callback per future, as ``distributed.as_completed`` is
built), gathering the finished ones' results in one round trip.

Where the cluster comes from
----------------------------
``client`` (a connected :class:`distributed.Client`, left open), else ``address`` (a scheduler
address such as ``"tcp://10.0.0.5:8786"``: a client of our own, closed by :meth:`close`), else the
current Dask client if the caller has one (``Client(...)`` makes itself current, as Dask's joblib
backend and dask-ml expect), else a local cluster of ``n_workers`` single-threaded worker processes
bound to 127.0.0.1 that the executor starts and closes. Trials are spread over the cluster's
threads: :attr:`DaskExecutor.n_workers` is their number once started, and the search asks for
batches of that size.

How the semantics are kept
--------------------------
* **Data sent once.** The task is pickled once (cloudpickle, as for the process pool) into a Dask
  worker plugin (:class:`.dask_plugin.TaskPlugin`). The scheduler keeps it and hands it to every
  worker once, new and replacement workers included; a trial sends only ``(z, θ, fidelity)``.
* **Timeouts, memory limit, crashes.** Each trial runs in a trial process that the Dask worker
  starts and reuses (a one-process :class:`~.executors.ProcessExecutor`, see :mod:`.dask_plugin`),
  so the pool's guarantees hold as they are: a trial past its timeout is SIGKILLed (status
  ``timeout``) and its Dask worker is free at once; ``memory_limit`` is ``RLIMIT_AS`` of the trial
  process (``memout``), not Dask's worker memory limit, which is polled, counts only the worker
  process and would restart the whole worker; a pipeline that raises or scores NaN is ``failed``
  with its error; one that crashes its process is ``failed`` with the reason and the worker goes
  on. As a backstop, the driver records ``timeout`` itself for a trial that has not answered
  :attr:`DaskExecutor.grace` seconds after its timeout (a wedged or unreachable worker) and
  cancels it.
* **A Dask worker that dies mid-trial** (killed, its machine lost) cannot have been killed by the
  trial, which runs in its own process: so its trials are **retried**: Dask's scheduler runs them
  again on another worker (or on the replacement its nanny starts), up to the scheduler's
  ``distributed.scheduler.allowed-failures`` (3 by default) deaths, after which the trial is
  recorded ``failed`` with Dask's ``KilledWorker`` error; the search goes on either way. A retried
  trial gives the same result as an uninterrupted one (trials are deterministic).
* **Start-up errors** (the trial processes cannot load the task, ``memory_limit`` below what they
  need, the package missing on a worker) stop :meth:`~DaskExecutor.start` with
  :class:`~admm_automl.exceptions.WorkerError` naming the worker and its reason, as the process pool
  does.
* **Reproducibility.** A trial's result depends only on ``(z, θ, fidelity)`` and the task, so the
  losses equal the serial executor's; with the same batch size (one Dask thread per process-pool
  worker) a seeded search has the same history.

A local cluster starts its workers with :mod:`multiprocessing` ``spawn``, which imports the
caller's main script in each of them: a script that uses it needs the ``if __name__ ==
"__main__":`` guard (Dask's own rule; the process pool does not need it).
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import os
import queue
import time
import uuid
from typing import Any, Iterator, Sequence

from ..exceptions import InvalidParameterError, MissingDependencyError, WorkerError
from .executors import Job, refuse_nested_search
from .trial import executor_result
from .child_main import MAIN_GUARD_HINT, pickle_task

#: how the optional dependency is installed
INSTALL_HINT = "pip install 'admm-automl[dask]' (or 'dask[distributed]')"


def import_distributed() -> Any:
    """The ``distributed`` package, or :class:`MissingDependencyError` naming the extra."""
    try:
        import distributed
    except ImportError as err:
        raise MissingDependencyError(
            f"executor='dask' needs Dask's distributed scheduler: {INSTALL_HINT} ({err})"
        ) from None
    return distributed


def restore_environ(saved: dict[str, str]) -> None:
    """Put back the variables of ``os.environ`` that differ from ``saved``.

    A Dask nanny writes into *this* process's environment before it spawns a worker
    (``distributed.nanny.pre-spawn-environ``: ``OMP_NUM_THREADS=1`` and the like, and
    ``PYTHONHASHSEED``) and leaves them there, so every process the user started after ``fit``
    would inherit single-threaded BLAS and a fixed hash seed. The executor undoes that once its
    local cluster has started and again when it is closed (a nanny restarting a dead worker writes
    them again in between).
    """
    for key in [k for k in os.environ if k not in saved]:
        del os.environ[key]
    os.environ.update({k: v for k, v in saved.items() if os.environ.get(k) != v})


class DaskExecutor:
    """Run trials on a Dask cluster with per-trial timeouts and a memory limit (module docstring).

    Parameters
    ----------
    client : distributed.Client, optional
        A connected client; it is used and left open.
    address : str, optional
        A scheduler address to connect to (``"tcp://host:8786"``); not with ``client``.
    n_workers : int, default=1
        Workers of the local cluster started when there is neither ``client``, ``address`` nor a
        current Dask client (one thread each).
    memory_limit_mb : int, optional
        Address-space limit of each trial process in MiB.
    threads : int, optional
        BLAS/OpenMP threads per trial process (None leaves the environment alone).
    start_timeout : float, default=60
        Seconds to wait for a worker, for the local cluster to start, and for the trial
        processes to load the task.

    Attributes
    ----------
    n_workers : int
        Trials run at once: the threads of the cluster's workers once started.
    client : distributed.Client or None
        The client in use (None before ``start`` and after ``close``).
    """

    name = "dask"
    enforces_timeout = True
    #: seconds past a trial's timeout after which the driver gives up on its answer (a trial
    #: process starting on a new worker, transfers); the worker itself stops the trial on time
    grace = 10.0

    def __init__(
        self,
        client: Any = None,
        address: str | None = None,
        n_workers: int = 1,
        memory_limit_mb: int | None = None,
        threads: int | None = 1,
        start_timeout: float = 60.0,
    ) -> None:
        if client is not None and address is not None:
            raise InvalidParameterError("give a Dask client or a scheduler address, not both")
        if n_workers < 1:
            raise InvalidParameterError(f"n_workers must be >= 1, got {n_workers!r}")
        self._given = client
        self.address = address
        self.n_workers = n_workers
        self.memory_limit_mb = memory_limit_mb
        self.threads = threads
        self.start_timeout = start_timeout
        self.client: Any = None
        self._cluster: Any = None  # the local cluster we started, if any
        self._environ: dict[str, str] = {}  # os.environ before it started
        self._own_client = False
        self._plugin: str | None = None  # name of the run's worker plugin
        self._tickets = itertools.count()
        self._futures: dict[int, tuple[Any, float, float | None]] = {}  # future, sent, timeout
        self._late: dict[int, float] = {}  # when to give up on a trial's answer
        self._finished: queue.SimpleQueue[int] = queue.SimpleQueue()  # ended, by callback
        self._done: dict[int, dict[str, Any]] = {}  # ended, not yet returned

    # ------------------------------------------------------------------ contract
    def start(self, task: Any) -> None:
        """Connect (or start a local cluster), send the task to every worker, start one trial
        process per worker thread and wait until all have loaded the task.

        Raises
        ------
        MissingDependencyError
            ``distributed`` is not installed.
        InvalidParameterError
            The task cannot be pickled.
        WorkerError
            No worker, or trial processes cannot start; the message gives the worker's reason.
        """
        refuse_nested_search()
        distributed = import_distributed()
        if self.client is not None:
            raise WorkerError("this executor has already been started")
        blob = pickle_task(task)
        try:
            self._connect(distributed)
            self._send_task(blob)
        except BaseException:
            self.close()
            raise

    def run(self, jobs: Sequence[Job], timeouts: Sequence[float | None],
            deadline: float | None = None) -> list[dict[str, Any]]:
        """Run ``jobs`` on the cluster, each stopped after its timeout (``deadline``, the end of
        the time budget, is not enforced apart here: the objective's timeouts already end by it)."""
        tickets = [self.submit(job, timeout) for job, timeout in zip(jobs, timeouts)]
        done: dict[int, dict[str, Any]] = {}
        while any(t not in done for t in tickets):
            done.update(self.wait())
        self._done.update({t: r for t, r in done.items() if t not in tickets})
        return [done[t] for t in tickets]

    def submit(self, job: Job, timeout: float | None = None,
               deadline: float | None = None) -> int:
        """Send ``job`` to the cluster (it starts when a worker thread is free) and return its
        ticket; it is stopped after ``timeout`` seconds, and given up on :attr:`grace` seconds
        later if the cluster has not answered (``deadline`` is not enforced apart, as in
        :meth:`run`)."""
        from . import dask_plugin

        if self.client is None:
            raise WorkerError("start the executor before running trials")
        if self.client.status not in ("running", "connecting"):
            raise WorkerError(f"the Dask client is {self.client.status}: its scheduler is lost")
        ticket = next(self._tickets)
        future = self.client.submit(dask_plugin.run_trial, self._plugin, job, timeout,
                                    key=f"trial-{uuid.uuid4().hex}")
        sent = time.monotonic()
        self._futures[ticket] = (future, sent, timeout)
        if timeout is not None:
            self._late[ticket] = sent + timeout + self.grace
        future.add_done_callback(lambda _, ticket=ticket: self._finished.put(ticket))
        return ticket

    def wait(self, timeout: float | None = None) -> list[tuple[int, dict[str, Any]]]:
        """Block until a submitted trial has ended (or ``timeout`` seconds pass, or none is
        pending); return ``(ticket, result)`` of every trial that has ended since the last call
        (a trial the cluster has not answered :attr:`grace` seconds after its timeout is
        cancelled and returned as a ``timeout``)."""
        end = None if timeout is None else time.monotonic() + timeout
        ended: list[int] = []
        while self._futures and not ended and not self._done:
            waits = [at - time.monotonic() for at in self._late.values()]
            if end is not None:
                waits.append(end - time.monotonic())
            try:
                ended.append(self._finished.get(timeout=max(min(waits), 0.0) if waits else None))
            except queue.Empty:
                pass
            while True:  # every other one that has ended meanwhile
                try:
                    ended.append(self._finished.get_nowait())
                except queue.Empty:
                    break
            ended = [t for t in ended if t in self._futures]  # not one given up on as late
            now = time.monotonic()
            for ticket in [t for t, at in self._late.items() if now >= at and t not in ended]:
                future, sent, limit = self._futures.pop(ticket)
                del self._late[ticket]
                future.cancel()
                result = executor_result(
                    "timeout", f"no answer from the Dask cluster {limit:.3g} s + "
                    f"{self.grace:g} s after the trial was sent; cancelled")
                result["duration"] = now - sent
                self._done[ticket] = result
            if end is not None and now >= end:
                break
        finished = []
        for ticket in ended:
            future, _, _ = self._futures.pop(ticket)
            self._late.pop(ticket, None)
            if future.status == "finished":
                finished.append((ticket, future))
            else:
                self._done[ticket] = _failure(future)
        if finished:  # gathered all in one round trip
            results = self.client.gather([future for _, future in finished])
            self._done.update((ticket, r) for (ticket, _), r in zip(finished, results))
        done, self._done = list(self._done.items()), {}
        return done

    @property
    def pending(self) -> int:
        """Trials submitted and not yet returned by :meth:`wait` or :meth:`run`."""
        return len(self._futures) + len(self._done)

    def close(self) -> None:
        """Remove the task from the workers (their trial processes end) and close what this
        executor opened (its client, its local cluster); a given client stays open."""
        client, self.client = self.client, None
        for future, _, _ in self._futures.values():
            future.cancel()
        self._futures.clear()
        self._late.clear()
        if client is not None and self._plugin is not None:
            with contextlib.suppress(Exception):
                client.unregister_worker_plugin(self._plugin)
        self._plugin = None
        if client is not None and self._own_client:
            with contextlib.suppress(Exception):
                client.close()
        cluster, self._cluster = self._cluster, None
        if cluster is not None:
            with contextlib.suppress(Exception):
                cluster.close()
            restore_environ(self._environ)

    # ------------------------------------------------------------------ set-up
    def _connect(self, distributed: Any) -> None:
        if self._given is not None:
            self.client, self._own_client = self._given, False
            return
        if self.address is not None:
            try:
                self.client = distributed.Client(self.address, timeout=self.start_timeout,
                                                  set_as_default=False)
            except (OSError, TimeoutError) as err:
                raise WorkerError(
                    f"cannot connect to the Dask scheduler at {self.address!r}: {err}"
                ) from None
            self._own_client = True
            return
        with contextlib.suppress(ValueError):  # no current client
            self.client, self._own_client = distributed.Client.current(), False
            return
        if getattr(multiprocessing.current_process(), "_inheriting", False):
            raise WorkerError(  # this process is a local Dask worker importing the main script
                "the main module started a search when a Dask worker process imported it: "
                f"{MAIN_GUARD_HINT}"
            )
        self._environ = dict(os.environ)
        try:
            self._cluster = distributed.LocalCluster(
                n_workers=self.n_workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                dashboard_address="127.0.0.1:0", timeout=self.start_timeout,
            )
        except Exception as err:
            raise WorkerError(
                f"the local Dask cluster cannot start: {type(err).__name__}: {err} (its workers "
                f"import the main script: {MAIN_GUARD_HINT})"
            ) from err
        finally:
            restore_environ(self._environ)
        self.client = distributed.Client(self._cluster, set_as_default=False)
        self._own_client = True

    def _send_task(self, blob: bytes) -> None:
        """Register the task plugin and start the trial processes of every worker thread."""
        from . import dask_plugin

        try:
            self.client.wait_for_workers(1, timeout=self.start_timeout)
        except TimeoutError:
            raise WorkerError(
                f"the Dask cluster has no worker after {self.start_timeout:g} s"
            ) from None
        name = f"admm-automl-task-{uuid.uuid4().hex}"
        self.client.register_plugin(
            dask_plugin.TaskPlugin(name, blob, self.memory_limit_mb, self.threads,
                                   self.start_timeout),
            name=name,
        )
        self._plugin = name
        nthreads = self.client.nthreads()
        futures = [
            self.client.submit(dask_plugin.warm_up, name, count, workers=[address],
                               allow_other_workers=True, key=f"warm-up-{uuid.uuid4().hex}")
            for address, count in nthreads.items()
        ]
        deadline = time.monotonic() + 2 * self.start_timeout
        with contextlib.closing(_as_finished(futures, [deadline] * len(futures))) as finished:
            for i, in_time in finished:
                error = futures[i].exception() if in_time else None
                if isinstance(error, WorkerError):
                    raise WorkerError(str(error))
                if error is not None or not in_time:
                    why = f"{type(error).__name__}: {error}" if in_time else (
                        f"not done within {2 * self.start_timeout:g} s")
                    raise WorkerError(f"the Dask worker {list(nthreads)[i]} cannot start trial "
                                      f"processes: {why}")
        self.n_workers = sum(nthreads.values())


def _as_finished(
    futures: Sequence[Any], deadlines: Sequence[float | None]
) -> Iterator[tuple[int, bool]]:
    """Yield ``(index, True)`` for each future as it finishes, ``(index, False)`` for one whose
    deadline (``time.monotonic()``) passes first, which is cancelled; closing the generator cancels
    the futures not yielded yet."""
    finished: queue.SimpleQueue[int] = queue.SimpleQueue()
    for i, future in enumerate(futures):
        future.add_done_callback(lambda _, i=i: finished.put(i))
    pending = set(range(len(futures)))
    try:
        while pending:
            waits = [deadlines[i] - time.monotonic() for i in pending if deadlines[i] is not None]
            try:
                i = finished.get(timeout=max(min(waits), 0.0) if waits else None)
            except queue.Empty:
                i = None
            if i in pending:
                pending.discard(i)
                yield i, True
            now = time.monotonic()
            for late in [j for j in pending if deadlines[j] is not None and now >= deadlines[j]]:
                pending.discard(late)
                futures[late].cancel()
                yield late, False
    finally:
        for i in pending:
            futures[i].cancel()


def _failure(future: Any) -> dict[str, Any]:
    """The result of a trial future that erred or was cancelled: Dask could not run it."""
    if future.status == "cancelled":
        result = executor_result("failed", "the Dask trial was cancelled (its scheduler lost it)")
    else:
        error = future.exception()
        if isinstance(error, WorkerError):  # trial processes can no longer start there
            raise WorkerError(str(error))
        result = executor_result(
            "failed", f"Dask could not run the trial: {type(error).__name__}: {error}"
        )
    result["duration"] = 0.0
    return result
