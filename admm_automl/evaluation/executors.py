"""Where trials run: in this process, or in a pool of worker processes that can be stopped.

The executor contract (what :class:`~admm_automl.evaluation.PipelineObjective` uses)::

    executor.start(task)           # task: has .space and .run(z, θ, fidelity) -> result dict
    executor.run(jobs, timeouts, deadline=None)   # jobs [(z, θ, fidelity[, iterations])] -> results
    ticket = executor.submit(job, timeout=None, deadline=None)   # asynchronous: returns at once
    executor.wait(timeout=None)    # [(ticket, result)] of the jobs that ended since the last wait
    executor.pending               # jobs submitted and not yet returned by ``wait``
    executor.close()
    executor.name, executor.enforces_timeout

``run`` returns one result dict per job, in order (see :mod:`.trial`), with ``duration``: the wall
time of that trial alone (measured around ``task.run`` where it ran; for a trial stopped at its
timeout or lost with its worker, from the moment the worker began it to its end). ``submit`` and
``wait`` are the same trials one at a time: a job starts as soon as a worker is free, and
``wait`` blocks until at least one submitted job has ended (or ``timeout`` seconds pass, or none
is pending) and returns every one that has, in the order they ended — what a search that hands
a free worker its next trial at once needs, instead of waiting for a batch's slowest trial.
``run`` is ``submit`` for each job and ``wait`` until they have all ended; results of jobs
submitted before it are kept for the next ``wait``.

Why our own pool
----------------
:class:`ProcessExecutor` is a small pool of our own, not Pebble, ``concurrent.futures`` or loky.
Pebble 5 starts workers with :mod:`multiprocessing` ``spawn``: the parent writes the start-up data
(the task, with X) into the new worker's pipe and blocks there for ever if that worker dies while
starting; its management thread can also fail on a worker killed mid-trial ("Unexpected error within
the Pool"); and every worker re-imports the user's main module, which hangs or fails for a script
without a main guard or read from standard input. ``concurrent.futures.ProcessPoolExecutor`` and
loky cannot stop one runaway trial (no per-task timeout), and a worker that dies breaks the whole
pool, failing every pending trial. What a search needs is narrower and easy to make robust:

* each worker is forked by a zygote (:mod:`.zygote`: a process that has imported scikit-learn
  once, so a worker starts in milliseconds, a replacement too) and runs :mod:`.child_main` with
  one socket to the parent; it never imports the user's script (unless the task names an object
  by a ``"__main__."`` path, and then only the way ``spawn`` does);
* the task is pickled once per run (cloudpickle, so functions and classes of ``__main__`` travel by
  value) into an unlinked temporary file whose descriptor every worker, replacements included,
  inherits and reads; a trial sends only ``(z, θ, fidelity)`` and receives a small dict;
* the parent waits on all sockets at once with a deadline (the next trial timeout or start-up
  deadline, at most :data:`POLL_INTERVAL`); a worker's death shows as end of file on its socket (and
  is checked with the zygote's ``waitpid`` at every wake-up), every socket operation has a
  timeout, and nothing else blocks.

Faults: a trial that overruns its timeout has its worker SIGKILLed (status ``timeout``). A worker
acknowledges each job as it begins the trial. If it dies in a trial (killed, segfault,
``os._exit``), that trial is ``failed`` with the error ``"the worker process (pid …) died during this
trial: killed by signal 9 (SIGKILL)"`` (and the start of its crash report, if it wrote one); it is
**not retried**,
as a trial that kills its worker would kill the next one too. If it dies before it began the trial
(idle, or with the job on its way), the job goes to another worker. Either way a replacement starts
at once while the others go on. A worker that reports an error while starting (it cannot import or
unpickle the task, the memory limit is below what it already uses, the main module it must import
fails) or exits by itself stops the pool with that error; one killed by a signal while starting is
replaced, up to :attr:`ProcessExecutor.max_start_failures` in a row. ``start`` raises
:class:`~admm_automl.exceptions.WorkerError` with the workers' own reason; if no worker is left
during ``run``, the jobs not yet run come back ``failed`` (``"not evaluated: …"``) and the next
``run`` raises. The memory limit is ``RLIMIT_AS`` in each worker (status ``memout``); BLAS and
OpenMP threads are capped per worker through the environment, before numpy loads. POSIX only.
"""

from __future__ import annotations

import itertools
import os
import time
import weakref
from collections import deque
from typing import TYPE_CHECKING, Any, NamedTuple, Sequence

from ..exceptions import InvalidParameterError, WorkerError
from ..records import NO_WORKER_LEFT
from . import child_main
from .policy import trial_limit
from .trial import error_result, executor_result

#: why a trial past its timeout was stopped, in its journal record's error
TIME_LIMIT = ("its time limit (trial_timeout; under a time budget by default a quarter of the "
              "time left)")

if TYPE_CHECKING:
    from .child_process import WorkerProcess

#: ``(z, θ, fidelity)``, or ``(z, θ, fidelity, iterations)`` with a training length;
#: ``task.run(*job)`` runs it
Job = tuple
#: longest sleep of the pool between checks that its workers are alive (seconds)
POLL_INTERVAL = 1.0


def refuse_nested_search() -> None:
    """Raise when called while a worker process imports the user's main module (a script
    without a main guard would otherwise start a search inside every worker)."""
    if child_main.LOADING_MAIN:
        raise WorkerError(
            "the main module started a search when a worker process imported it: "
            f"{child_main.MAIN_GUARD_HINT}"
        )


class SerialExecutor:
    """Run trials one after another in this process (no timeout or memory limit can be enforced).

    ``submit`` only queues a job; ``wait`` runs the oldest one and returns it."""

    name = "serial"
    enforces_timeout = False
    #: a trial that crashes takes the caller's process with it (see crash-only trials)
    in_process = True

    def start(self, task: Any) -> None:
        refuse_nested_search()
        self.task = task
        self._queue: deque[tuple[int, Job, float | None, float | None]] = deque()  # ticket, job, timeout, deadline
        self._tickets = itertools.count()
        self._reports_crashes = _report_crashes()

    def run(self, jobs: Sequence[Job], timeouts: Sequence[float | None],
            deadline: float | None = None) -> list[dict[str, Any]]:
        """Run every job to its end (a serial trial cannot be stopped: timeouts and the deadline
        are not enforced)."""
        return [self._run_one(job) for job in jobs]  # no limits: a batch runs to its end

    def submit(self, job: Job, timeout: float | None = None,
               deadline: float | None = None) -> int:
        """Queue ``job``; :meth:`wait` runs it (``timeout`` and ``deadline`` cannot stop a fit:
        the trial stops between its folds when they project its end past them)."""
        ticket = next(self._tickets)
        self._queue.append((ticket, job, timeout, deadline))
        return ticket

    def wait(self, timeout: float | None = None) -> list[tuple[int, dict[str, Any]]]:
        """Run the oldest queued job to its end and return it (nothing when none is queued)."""
        if not self._queue:
            return []
        ticket, job, timeout, deadline = self._queue.popleft()
        return [(ticket, self._run_one(job, trial_seconds(timeout, deadline)))]

    @property
    def pending(self) -> int:
        return len(self._queue)

    def _run_one(self, job: Job, limit: tuple[float | None, bool] = (None, False)
                 ) -> dict[str, Any]:
        start = time.perf_counter()
        try:
            with trial_limit(*limit):
                result = self.task.run(*job)
        except Exception as err:  # the same answer as a worker process gives
            result = error_result(err)
        result["duration"] = time.perf_counter() - start
        return result

    def close(self) -> None:
        self.task = None
        if getattr(self, "_reports_crashes", False):
            import faulthandler

            faulthandler.disable()
            self._reports_crashes = False


def _report_crashes() -> bool:
    """Have a crash of compiled code in a serial trial (a segfault, an abort) print Python's
    "Fatal Python error" and the stack of the fit it happened in to standard error before the
    process dies, instead of the shell's bare exit status 139 (:mod:`faulthandler`; a signal
    handler can run no Python code, so this is the message there can be). The journal marked
    the trial started, so the same fit again runs it once more and records a second crash as a
    failure. True when this call turned the handler on (and :meth:`SerialExecutor.close` turns
    it off); False when it was on already or standard error has no file to write to."""
    import faulthandler
    import sys

    if faulthandler.is_enabled():
        return False
    for stream in (sys.stderr, sys.__stderr__):
        try:
            faulthandler.enable(file=stream, all_threads=False)
            return True
        except (AttributeError, ValueError, OSError):  # no file descriptor (a notebook's)
            continue
    return False


class ProcessExecutor:
    """Run trials in ``n_workers`` worker processes, with per-trial timeouts and a memory limit.

    Parameters
    ----------
    n_workers : int
        Worker processes (trials of one batch run concurrently). They stay up between batches.
    memory_limit_mb : int, optional
        Address-space limit of each worker in MiB, set once it has loaded the task.
    threads : int, optional
        BLAS/OpenMP threads per worker (1 keeps workers from competing for cores); None leaves
        the environment alone.
    start_timeout : float
        Seconds a worker may take to load the task before the pool gives up.

    Notes
    -----
    :meth:`worker_pids` tells which processes are the workers and what they do (for tests and
    monitoring). The workers end with the executor, or with the parent process if it dies first
    (:mod:`.zygote`).
    """

    name = "process"
    enforces_timeout = True
    #: workers in a row that may be killed by a signal while starting before ``start`` gives up
    max_start_failures = 3

    def __init__(
        self,
        n_workers: int = 1,
        memory_limit_mb: int | None = None,
        threads: int | None = 1,
        start_timeout: float = 60.0,
    ) -> None:
        if n_workers < 1:
            raise InvalidParameterError(f"n_workers must be >= 1, got {n_workers!r}")
        self.n_workers = n_workers
        self.memory_limit_mb = memory_limit_mb
        self.threads = threads
        self.start_timeout = start_timeout
        self._workers: list[WorkerProcess] = []  # shared with the finalizer, never rebound
        self._task_fd = -1  # the task file, once started
        self._finalizer: weakref.finalize | None = None
        self._broken: str | None = None  # why no worker can start any more
        self._start_failures = 0  # workers killed while starting, in a row
        self._jobs: dict[int, _Submitted] = {}  # submitted, not ended, by ticket
        self._queue: deque[int] = deque()  # tickets waiting for a worker
        self._done: dict[int, dict[str, Any]] = {}  # ended, not yet returned, in order
        self._tickets = itertools.count()

    # ------------------------------------------------------------------ contract
    def start(self, task: Any) -> None:
        """Write the task once and start the workers; return when all have loaded it.

        Raises
        ------
        InvalidParameterError
            The task cannot be pickled, or names an object workers cannot import.
        WorkerError
            Workers cannot start; the message gives their own reason.
        """
        refuse_nested_search()
        if self._task_fd >= 0:
            raise WorkerError("this executor has already been started")
        self._task_fd = child_main.write_task_file(task)
        self._broken, self._start_failures = None, 0
        self._finalizer = weakref.finalize(self, _shut_down, self._workers, self._task_fd)
        try:
            for _ in range(self.n_workers):
                self._spawn()
            while self._broken is None and any(w.state == "starting" for w in self._workers):
                self._step()
        except BaseException:
            self.close()
            raise
        if self._broken is not None:
            cause = self._broken
            self.close()
            raise WorkerError(f"worker processes cannot start: {cause}")

    def run(self, jobs: Sequence[Job], timeouts: Sequence[float | None],
            deadline: float | None = None) -> list[dict[str, Any]]:
        """Run ``jobs``, each stopped after its timeout (from when its worker began it) and none
        running past ``deadline`` (a ``time.monotonic()`` value: the end of a time budget, however
        long a job waited for a worker to start); a job cut by the deadline is a ``timeout`` with
        ``result["budget_stop"]``, one not begun by it ``cancelled`` (with ``budget_stop``), as is
        one left when no worker is."""
        tickets = [self.submit(job, timeout, deadline) for job, timeout in zip(jobs, timeouts)]
        while any(t not in self._done for t in tickets):
            self._pump()
        return [self._done.pop(t) for t in tickets]

    def submit(self, job: Job, timeout: float | None = None,
               deadline: float | None = None) -> int:
        """Queue ``job`` and hand it to a worker at once if one is free; return its ticket.

        It is stopped after ``timeout`` seconds from when its worker began it, and not run past
        ``deadline`` (``time.monotonic()``), as in :meth:`run`."""
        if self._task_fd < 0:
            raise WorkerError("start the executor before running trials")
        if self._broken is not None and not self._live():
            raise WorkerError(f"no worker process is left and none can start: {self._broken}")
        ticket = next(self._tickets)
        self._jobs[ticket] = _Submitted(job, timeout, deadline)
        self._queue.append(ticket)
        self._dispatch_idle()
        return ticket

    def wait(self, timeout: float | None = None) -> list[tuple[int, dict[str, Any]]]:
        """Block until a submitted job has ended (or ``timeout`` seconds pass, or none is
        pending); return ``(ticket, result)`` of every job that has ended since the last call,
        in the order they ended."""
        end = None if timeout is None else time.monotonic() + timeout
        while not self._done and self._jobs:
            if end is not None and time.monotonic() >= end:
                break
            self._pump(end)
        done, self._done = list(self._done.items()), {}
        return done

    @property
    def pending(self) -> int:
        """Jobs submitted and not yet returned by :meth:`wait` or :meth:`run`."""
        return len(self._jobs) + len(self._done)

    def close(self) -> None:
        """Kill the workers and release the task file (also done when the executor is collected)."""
        if self._finalizer is not None:
            self._finalizer()
        self._task_fd = -1

    def worker_pids(self) -> dict[int, str]:
        """Process id -> state of the current workers: ``"starting"`` (loading the task),
        ``"idle"``, ``"sent"`` (a job is on its way) or ``"busy"`` (in a trial)."""
        return {w.pid: w.state for w in list(self._workers)}

    # ------------------------------------------------------------------ the pool
    def _live(self) -> list[WorkerProcess]:
        return [w for w in self._workers if w.state != "dead"]

    def _spawn(self) -> None:
        from .child_process import WorkerProcess

        try:
            worker = WorkerProcess(self._task_fd, self.memory_limit_mb, self.threads)
        except OSError as err:
            self._broken = f"a worker process could not be created: {err}"
            return
        worker.deadline = time.monotonic() + self.start_timeout
        self._workers.append(worker)

    def _in_trial(self) -> bool:
        return any(w.state in ("sent", "busy") for w in self._workers)

    def _finish(self, ticket: int, result: dict[str, Any]) -> None:
        del self._jobs[ticket]
        self._done[ticket] = result

    def _pump(self, end: float | None = None) -> None:
        """Cancel the queued jobs whose deadline has passed, hand the others to idle workers,
        and wait for the next message, death or deadline (not past ``end``)."""
        now = time.monotonic()
        for ticket in [t for t in self._queue if self._jobs[t].deadline is not None
                       and now >= self._jobs[t].deadline]:
            self._queue.remove(ticket)  # still waiting for a worker when the budget ended
            result = executor_result(
                "cancelled", "not begun: the time budget ended while it waited for a worker")
            result.update(duration=0.0, budget_stop=True)
            self._finish(ticket, result)
        self._dispatch_idle()
        if self._queue and not self._live():  # broken: nothing can run what is left
            while self._queue:
                result = executor_result(
                    "cancelled", f"{NO_WORKER_LEFT} ({self._broken})")
                result["duration"] = 0.0
                self._finish(self._queue.popleft(), result)
            return
        if self._queue or self._in_trial():
            self._step(end)

    def _dispatch_idle(self) -> None:
        for worker in [w for w in self._workers if w.state == "idle"]:
            if self._queue:
                self._dispatch(worker)

    def _dispatch(self, worker: WorkerProcess) -> None:
        ticket = self._queue.popleft()
        submitted = self._jobs[ticket]
        try:  # the job with its limit, so the trial can stop when its folds project past it
            worker.send((submitted.job, trial_seconds(submitted.timeout, submitted.deadline)))
        except OSError:  # it died while idle: the job never reached it
            self._queue.appendleft(ticket)
            self._lost(worker)
            return
        worker.state, worker.job = "sent", ticket
        self._set_deadline(worker)

    def _set_deadline(self, worker: WorkerProcess) -> None:
        """The trial's deadline: its timeout from now, but not past its job's deadline."""
        submitted = self._jobs[worker.job]
        worker.trial_start = time.monotonic()
        worker.deadline = (None if submitted.timeout is None
                           else worker.trial_start + submitted.timeout)
        end = submitted.deadline
        if end is not None and (worker.deadline is None or end < worker.deadline):
            worker.deadline = end

    def _step(self, end: float | None = None) -> None:
        """Wait for the next message, death or deadline (at most POLL_INTERVAL, not past
        ``end``) and handle it."""
        from multiprocessing.connection import wait

        now = time.monotonic()
        deadlines = [w.deadline - now for w in self._workers if w.deadline is not None]
        deadlines += [self._jobs[t].deadline - now for t in self._queue
                      if self._jobs[t].deadline is not None]
        if end is not None:
            deadlines.append(end - now)
        timeout = min([POLL_INTERVAL, *deadlines])
        ready = wait(list(self._workers), max(timeout, 0.0))
        for worker in ready:
            self._receive(worker)
            while worker.state == "busy" and worker.conn.poll():  # its result came too
                self._receive(worker)
        now = time.monotonic()
        for worker in list(self._workers):
            if worker.deadline is not None and now >= worker.deadline:
                self._expire(worker, now)
            elif worker not in ready and worker.exited():  # dead, its socket held elsewhere
                if worker.conn.poll(0):  # what it sent before dying (or end of file)
                    self._receive(worker)
                else:
                    self._lost(worker)

    def _receive(self, worker: WorkerProcess) -> None:
        try:
            message = worker.recv()
        except (EOFError, OSError):
            self._lost(worker)
            return
        except Exception as err:  # a message that arrived whole but cannot be unpickled here
            message = error_result(err)
            message["error"] = f"the result could not be read: {message['error']}"
        if worker.state == "starting":
            tag, payload = message if isinstance(message, tuple) else (None, message)
            if tag == child_main.READY:
                worker.state, worker.deadline = "idle", None
                self._start_failures = 0
            else:
                self._broken = str(payload)
                self._retire(worker)
        elif worker.state == "sent" and message == child_main.STARTED:
            worker.state = "busy"  # the trial's own time (and timeout) begins
            self._set_deadline(worker)
        elif worker.state in ("sent", "busy"):  # its result, with the trial's duration
            self._finish(worker.job, message)
            worker.state, worker.job, worker.deadline = "idle", None, None

    def _expire(self, worker: WorkerProcess, now: float) -> None:
        if worker.state in ("sent", "busy"):
            seconds = worker.deadline - worker.trial_start
            at_end = worker.deadline == self._jobs[worker.job].deadline  # not its timeout
            why = "the time budget ended" if at_end else TIME_LIMIT
            result = executor_result("timeout", f"stopped after {seconds:.3g} s: {why}")
            result["duration"] = now - worker.trial_start
            if at_end:
                result["budget_stop"] = True
            self._finish(worker.job, result)
        else:
            self._broken = _with_output(
                f"a worker process did not load the task within {self.start_timeout:g} s", worker
            )
        self._retire(worker)

    def _lost(self, worker: WorkerProcess) -> None:
        how = worker.death()
        if worker.state == "sent":  # it died before it began the trial: run it elsewhere
            self._queue.appendleft(worker.job)
        elif worker.state == "busy":
            output = worker.output_tail()
            error = f"the worker process (pid {worker.pid}) died during this trial: {how}"
            if output:  # a crash report says where it happened; the start of it, on one line
                error += f"; its output: {' '.join(output.split())[:300]}"
            result = executor_result("failed", error)
            result["traceback"] = output
            result["duration"] = time.monotonic() - worker.trial_start
            self._finish(worker.job, result)
        elif worker.state == "starting":
            if worker.proc.returncode is not None and worker.proc.returncode >= 0:
                # it ended by itself, so would the next one
                self._broken = _with_output(f"a worker process {how}", worker)
            else:
                self._start_failures += 1
                if self._start_failures >= self.max_start_failures:
                    self._broken = _with_output(
                        f"{self._start_failures} worker processes in a row died while starting "
                        f"(the last one was {how})", worker
                    )
        self._retire(worker)

    def _retire(self, worker: WorkerProcess) -> None:
        """Drop a dead (or failed) worker and start its replacement unless the pool is broken."""
        worker.close()
        self._workers.remove(worker)
        if self._broken is None and len(self._live()) < self.n_workers:
            self._spawn()


class _Submitted(NamedTuple):
    """A job waiting for a worker or in a trial: what to run, its timeout and deadline."""

    job: Job
    timeout: float | None
    deadline: float | None


def trial_seconds(timeout: float | None, deadline: float | None) -> tuple[float | None, bool]:
    """The seconds a trial begun now may take, given its timeout and the (monotonic) deadline
    it may not run past, and whether that limit is the deadline (the time budget's end)."""
    if deadline is not None and (timeout is None or deadline - time.monotonic() < timeout):
        return max(deadline - time.monotonic(), 0.0), True
    return timeout, False


def _with_output(text: str, worker: WorkerProcess) -> str:
    tail = worker.output_tail()
    return f"{text}; its last output: {tail}" if tail else text


def _shut_down(workers: list[WorkerProcess], task_fd: int) -> None:
    for worker in workers:
        worker.kill()
    for worker in workers:
        worker.close()
    workers.clear()
    os.close(task_fd)
