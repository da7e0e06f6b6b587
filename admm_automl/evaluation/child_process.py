"""One worker process as the parent sees it: start it, talk to it, kill it, say why it died.

Nothing here can block without bound: the socket to the worker has send and receive timeouts
(:data:`IO_TIMEOUT`), the parent only reads when :func:`multiprocessing.connection.wait` says a
message (or end of file: the worker died) is there, and reaping a worker waits a bounded time.
"""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import struct
import subprocess
import tempfile
from multiprocessing.connection import Connection
from typing import Any

from .zygote import THREAD_VARIABLES, fork_worker

#: seconds one send or one partial read on a worker's socket may block before the worker is
#: declared lost (messages are small; only a stopped or wedged worker reaches this)
IO_TIMEOUT = 10.0


class WorkerProcess:
    """A started worker (see :mod:`admm_automl.evaluation.child_main`).

    Parameters
    ----------
    task_fd : int
        Descriptor of the run's task file (:func:`~.child_main.write_task_file`).
    memory_limit_mb : int, optional
        Address-space limit set in the worker once it has loaded the task.
    threads : int, optional
        BLAS/OpenMP threads of the worker (environment variables set before it starts).

    Attributes
    ----------
    pid : int
    state : {"starting", "idle", "sent", "busy", "dead"}
        Loading the task; waiting; a job was sent; the worker acknowledged it and is in the trial.
    job : int or None
        Ticket of the job it was sent (:meth:`.executors.ProcessExecutor.submit`).
    trial_start, deadline : float or None
        ``time.monotonic()`` when the job was sent, then when the worker acknowledged it; and when
        the worker must have answered (its start-up deadline while starting, the trial's timeout
        from ``trial_start`` while in a trial).
    """

    def __init__(self, task_fd: int, memory_limit_mb: int | None, threads: int | None) -> None:
        ours, theirs = socket.socketpair()
        timeout = struct.pack("ll", int(IO_TIMEOUT), 0)
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeout)
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, timeout)
        self._log = tempfile.TemporaryFile()  # the worker's stdout and stderr, emptied per trial
        flags = fcntl.fcntl(self._log.fileno(), fcntl.F_GETFL)
        fcntl.fcntl(self._log.fileno(), fcntl.F_SETFL, flags | os.O_APPEND)
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        if threads:
            env.update({name: str(threads) for name in THREAD_VARIABLES})
        try:
            self.proc = fork_worker(env, (theirs.fileno(), task_fd, self._log.fileno()),
                                    memory_limit_mb or 0)
        except BaseException:
            ours.close()
            self._log.close()
            raise
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        self.pid = self.proc.pid
        self.state = "starting"
        self.job: int | None = None
        self.trial_start: float | None = None
        self.deadline: float | None = None

    def fileno(self) -> int:
        """The socket's descriptor, so that ``multiprocessing.connection.wait`` can watch it."""
        return self.conn.fileno()

    def send(self, job: Any) -> None:
        self.conn.send(job)

    def recv(self) -> Any:
        """The next message; raises ``EOFError`` or ``OSError`` if the worker died or is wedged."""
        return self.conn.recv()

    def exited(self) -> bool:
        return self.proc.poll() is not None

    def kill(self) -> None:
        """SIGKILL (a fit inside a long C call ends at once) and mark dead; idempotent."""
        if self.proc.returncode is None:
            self.proc.kill()
        self.state = "dead"

    def death(self, wait: float = 2.0) -> str:
        """How the worker ended: ``"killed by signal 9 (SIGKILL)"``, ``"exited with code 1"``
        (it is killed first if it still runs: a worker that stopped answering)."""
        try:
            code = self.proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            self.kill()
            return "stopped answering and was killed"
        if code >= 0:
            return f"exited with code {code}"
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "unknown"
        return f"killed by signal {-code} ({name})"

    def output_tail(self, size: int = 2000) -> str:
        """What the worker wrote to stdout/stderr during its current trial or start-up: the start
        of a crash report of :mod:`faulthandler` (without its list of extension modules), else the
        end of the output; at most ``size`` characters."""
        try:
            fd = self._log.fileno()
            end = os.fstat(fd).st_size
            text = os.pread(fd, 8 * size, max(0, end - 8 * size)).decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""
        crash = text.rfind("Fatal Python error")
        if crash >= 0:
            lines = [line for line in text[crash:].splitlines()
                     if not line.startswith("Extension modules:")]
            return "\n".join(lines)[:size]
        return text.strip()[-size:]

    def close(self, wait: float = 2.0) -> None:
        """Kill the worker, reap it (bounded wait) and release its socket and log."""
        self.kill()
        try:
            self.proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            pass
        self.conn.close()
        self._log.close()
