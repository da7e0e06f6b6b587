"""The zygote: a process that has imported what every worker imports, and forks the workers.

A worker started as a fresh interpreter spends about 1.5 s of CPU importing scikit-learn (through
SciPy's statistics and pandas) before it can load its task, and a run pays that again for every
worker that replaces one stopped at its time limit: with one worker, the search waits. The zygote
pays it once: :class:`~.child_process.WorkerProcess` asks it, over a socket, for a
worker, and it forks one — a child that shares the imported modules copy-on-write and runs
:func:`.child_main.main` on the descriptors sent along with the request (``SCM_RIGHTS``): the
worker's socket to the parent, the run's task file and the worker's log, which becomes its standard
output and error.

This is :mod:`multiprocessing`'s ``forkserver`` with ``set_forkserver_preload``, written here
because that server's children import the parent's main module (a script without a main guard
would start a search in every worker) and take no log of the parent's choosing.

* One zygote per setting of the thread caps: BLAS and OpenMP read them from the environment when
  numpy loads, so a worker must come from a zygote started with the caps it would have had (the
  zygotes of other settings that no longer have workers are closed when a new one starts). The
  rest of the environment is the parent's as it is when the worker is forked.
* The zygote keeps a worker's exit status until the parent asks for it (:meth:`Zygote.status`), so
  a pid the parent may still signal is not reused in between — what :class:`subprocess.Popen`
  guarantees for its own child.
* Lifetimes: the zygote kills its workers and exits when the parent's end of its socket closes
  (the parent exited or was killed), and exits after :data:`IDLE_TIMEOUT` seconds without
  workers; a worker is killed by the kernel when its zygote dies.
"""

from __future__ import annotations

import os
import pickle
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import NoReturn

#: environment variables that cap the BLAS/OpenMP threads of a worker before numpy is imported
THREAD_VARIABLES = (
    "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS",
)
#: seconds the zygote may take to import what it preloads before it is declared unable to start
START_TIMEOUT = 120.0
#: seconds one request to a started zygote may take (a fork or a status: milliseconds)
REQUEST_TIMEOUT = 10.0
#: seconds a zygote without workers waits for a request before it exits (as loky's idle workers
#: do), so that a session that ran one search does not keep it; the next search starts another
IDLE_TIMEOUT = 300.0
#: the modules every trial needs (scikit-learn, pandas and SciPy come with them)
PRELOAD = ("admm_automl.evaluation.child_main", "admm_automl.evaluation.trial", "sklearn.pipeline")
#: a worker the zygote could not report on because the zygote died: the kernel killed it
LOST = -int(signal.SIGKILL)
#: how a zygote starts: the root this package was imported from goes first on its path (so it
#: imports the same package as the parent), unless the path already holds it — an installed
#: package's site-packages keeps its place after PYTHONPATH, as it has in the parent
BOOTSTRAP = (
    "import sys; sys.argv[1] in sys.path or sys.path.insert(0, sys.argv[1]); "
    "from admm_automl.evaluation.zygote import serve; sys.exit(serve(int(sys.argv[2])))"
)
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_MESSAGE = 1 << 16

_zygotes: dict[tuple[str | None, ...], Zygote] = {}
_lock = threading.Lock()


def fork_worker(env: dict[str, str], fds: tuple[int, int, int], memory_limit_mb: int) -> Forked:
    """A worker with the environment ``env``, forked by the zygote of its thread caps, on the
    descriptors ``(socket, task file, log)``.

    Raises
    ------
    OSError
        The zygote cannot start (its error quoted) or does not answer.
    """
    key = tuple(env.get(name) for name in THREAD_VARIABLES)
    with _lock:
        zygote = _zygotes.get(key)
        fresh = zygote is None or not zygote.alive()
        if fresh:
            zygote = _new_zygote(key, env)
    try:
        return Forked(zygote, zygote.fork(fds, memory_limit_mb, env))
    except OSError:
        if fresh:
            raise
    with _lock:  # it ended meanwhile (idle for IDLE_TIMEOUT): once more, with a new one
        zygote = _new_zygote(key, env)
    return Forked(zygote, zygote.fork(fds, memory_limit_mb, env))


def _new_zygote(key: tuple[str | None, ...], env: dict[str, str]) -> Zygote:
    """Start the zygote of ``key``, closing those of other keys that have no workers left."""
    for other in [k for k, z in _zygotes.items() if k == key or not z.children or not z.alive()]:
        _zygotes.pop(other).close()
    zygote = _zygotes[key] = Zygote(env)
    return zygote


class Forked:
    """A worker forked by a zygote, as much of :class:`subprocess.Popen` as a pool needs."""

    def __init__(self, zygote: Zygote, pid: int) -> None:
        self.zygote, self.pid = zygote, pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """The exit code (negative: the signal that killed it) once the worker has ended."""
        if self.returncode is None:
            self.returncode = self.zygote.status(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() >= end:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout)
            time.sleep(0.005)
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None and not self.zygote.alive():
            self.returncode = LOST  # the kernel killed it with its zygote; its pid may be reused
        if self.returncode is None:  # not reaped, so the pid is still this worker's
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class Zygote:
    """The parent's side of one zygote process: start it, ask it for workers and their ends."""

    def __init__(self, env: dict[str, str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._log = tempfile.TemporaryFile()  # the zygote's own output, quoted if it cannot start
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", BOOTSTRAP, _PACKAGE_ROOT, str(theirs.fileno())],
                stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log, env=env,
                pass_fds=(theirs.fileno(),), start_new_session=True,
            )
        except BaseException:
            ours.close()
            self._log.close()
            raise
        finally:
            theirs.close()
        self._sock = ours
        self._lock = threading.Lock()
        self.env = env
        self.children: set[int] = set()  # forked, their ends not yet reported to the parent
        ours.settimeout(START_TIMEOUT)
        try:
            self._receive()  # ready: it has imported what it preloads
        except OSError as err:  # it could not import them (its traceback quoted), or timed out
            self.close()
            raise OSError(f"the worker zygote could not start: {err}") from None
        ours.settimeout(REQUEST_TIMEOUT)

    def alive(self) -> bool:
        return self.proc.poll() is None and self._sock.fileno() >= 0

    def fork(self, fds: tuple[int, int, int], memory_limit_mb: int, env: dict[str, str]) -> int:
        reply = self._ask(("fork", memory_limit_mb, None if env == self.env else env), fds)
        if reply[0] != "forked":
            raise OSError(f"the worker zygote could not fork a worker: {reply[1]}")
        self.children.add(reply[1])
        return reply[1]

    def status(self, pid: int) -> int | None:
        """The worker's exit code once it has ended (the zygote then forgets it), else None;
        :data:`LOST` if the zygote died (the kernel killed its workers with it)."""
        try:
            code = self._ask(("status", pid))[1]
        except OSError:
            code = LOST
        if code is not None:
            self.children.discard(pid)
        return code

    def close(self) -> None:
        """End the zygote (it kills the workers it still has) and reap it."""
        self._sock.close()
        try:
            self.proc.wait(timeout=REQUEST_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()

    def _ask(self, request: tuple, fds: tuple[int, ...] = ()) -> tuple:
        with self._lock:
            if self._sock.fileno() < 0:
                raise OSError("the worker zygote was closed")
            try:
                socket.send_fds(self._sock, [pickle.dumps(request)], list(fds))
                return self._receive()
            except OSError:
                self._sock.close()  # no later request may read this one's late answer
                raise

    def _receive(self) -> tuple:
        data = self._sock.recv(_MESSAGE)
        if not data:
            self._log.seek(0)
            output = self._log.read().decode("utf-8", "replace").strip()
            raise OSError("it exited" + (f"; its output: {output[-2000:]}" if output else ""))
        return pickle.loads(data)


# ---------------------------------------------------------------------------- the zygote process
def serve(fd: int) -> int:
    """The zygote's program: preload, then fork workers and report their ends until the parent's
    end of socket ``fd`` closes; then kill the workers left and exit."""
    import importlib

    sock = socket.socket(fileno=fd)
    for name in PRELOAD:  # an import that fails ends the zygote with its traceback in the log
        importlib.import_module(name)
    sock.send(pickle.dumps(("ready", None)))
    zygote = os.getpid()
    children: set[int] = set()
    while True:
        sock.settimeout(None if children else IDLE_TIMEOUT)
        try:
            data, fds, _, _ = socket.recv_fds(sock, _MESSAGE, 3)
        except OSError:  # idle too long (a timeout), or the parent died
            data = b""
        if not data:  # the parent closed its end or died, or no worker is left and none asked for
            break
        request = pickle.loads(data)
        if request[0] == "fork":
            try:
                pid = os.fork()
            except OSError as err:
                reply: tuple = ("error", str(err))
            else:
                if pid == 0:
                    _worker(sock, fds, zygote, *request[1:])
                children.add(pid)
                reply = ("forked", pid)
            for descriptor in fds:
                os.close(descriptor)
        else:
            reply = ("status", _reap(request[1], children))
        try:
            sock.send(pickle.dumps(reply))
        except OSError:  # the parent is gone
            break
    for pid in children:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return 0


def _reap(pid: int, children: set[int]) -> int | None:
    if pid not in children:  # reported already, or never ours
        return LOST
    done, status = os.waitpid(pid, os.WNOHANG)
    if not done:
        return None
    children.discard(pid)
    return os.waitstatus_to_exitcode(status)


def _worker(sock: socket.socket, fds: list[int], zygote: int, memory_limit_mb: int,
            env: dict[str, str] | None) -> NoReturn:
    """The forked child: a session of its own (a terminal's Ctrl-C reaches the parent only), the
    log as standard output and error, the parent's environment (``env``, if not the zygote's),
    then :func:`.child_main.main`; never returns to the zygote's loop."""
    from . import child_main

    code = 1
    try:
        sock.close()
        os.setsid()
        worker_socket, task_fd, log = fds
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        code = child_main.main([str(worker_socket), str(task_fd), str(zygote),
                                str(memory_limit_mb)])
    except BaseException:  # noqa: BLE001 - written to the log the parent quotes
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
