"""The program a worker process of :class:`~admm_automl.evaluation.ProcessExecutor` runs.

The worker's zygote (:mod:`.zygote`) forks it and calls :func:`main` with ``<socket fd> <task fd>
<zygote pid> <memory limit MiB>``: a process with scikit-learn imported that never imports the
user's script (so a script needs no ``if __name__ == "__main__":`` guard and may come from standard
input). It holds two descriptors:

* a socket to the parent, framed by :class:`multiprocessing.connection.Connection`. The worker sends
  ``(READY, None)`` once it is loaded, or ``(ERROR, text)`` if it cannot start; then it answers each
  message ``(job, (seconds, budget_end))`` — the job ``(z, θ, fidelity)`` and the seconds it may
  take (:func:`.policy.trial_limit`) — with ``STARTED`` as it begins the trial and one result
  dict (with the trial's ``duration``) at its end, until the socket closes;
* the run's task file (an unlinked temporary file, see :func:`write_task_file`): an 8-byte length, a
  pickled *boot* header (the parent's ``sys.path``, ``sys.argv`` and working directory, and, only
  when the task names an object by a ``"__main__."`` import path, how to load the parent's main
  module, as :mod:`multiprocessing` does for ``spawn``), then the task pickled by cloudpickle, which
  carries functions and classes defined in ``__main__`` by value.

Once the task is loaded, its ``warm_up()`` (if it has one) runs, then the memory limit
(``RLIMIT_AS``) is set: the worker knows its own size by then, so a limit too low to even hold
Python, numpy, scikit-learn and the data is reported as such. The worker's standard output and error
go to a log file that is emptied before every trial; the parent quotes its end when the worker dies.
"""

from __future__ import annotations

import os
import pickle
import re
import signal
import sys
import time
from typing import Any

from ..exceptions import InvalidParameterError, WorkerError

#: first message of a worker: loaded and waiting for jobs, or could not start (with the reason)
READY, ERROR = "ready", "error"
#: a worker's acknowledgement that it received a job and begins the trial
STARTED = "started"
#: True while a worker imports the user's main module (a script that starts a search then has no
#: main guard)
LOADING_MAIN = False
MAIN_GUARD_HINT = (
    "put the code that calls fit under `if __name__ == '__main__':` so that importing the script "
    "does not start a search"
)


def write_task_file(task: Any) -> int:
    """Write the boot header and ``task`` to an unlinked temporary file; return its descriptor.

    The file has no name (nothing is left behind, whatever happens to the parent) and is read by
    every worker of the run, replacements included.

    Raises
    ------
    InvalidParameterError
        ``task`` cannot be pickled, or it names an object of a main module that workers cannot
        import (a script read from standard input, an interactive session).
    WorkerError
        The temporary file cannot be written.
    """
    import tempfile

    body = pickle_task(task)
    names = sorted({m.decode() for m in re.findall(rb"__main__\.[A-Za-z_][\w.]*", body)})
    header = pickle.dumps(_boot_header(names))
    try:
        with tempfile.TemporaryFile() as handle:
            handle.write(len(header).to_bytes(8, "little") + header)
            handle.write(body)
            handle.flush()
            return os.dup(handle.fileno())
    except OSError as err:
        raise WorkerError(
            f"cannot write the task ({len(body) / 2**20:.1f} MiB) for the worker processes to a "
            f"temporary file in {tempfile.gettempdir()} (set TMPDIR to change it): {err}"
        ) from None


def pickle_task(task: Any) -> bytes:
    """``task`` pickled by cloudpickle (functions and classes of ``__main__`` travel by value).

    Raises
    ------
    InvalidParameterError
        ``task`` cannot be pickled.
    """
    import cloudpickle

    try:
        return cloudpickle.dumps(task, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as err:
        raise InvalidParameterError(
            "the task (data, metric, constraints) must be picklable to run trials in worker "
            f"processes: {type(err).__name__}: {err}"
        ) from None


def _boot_header(main_names: list[str]) -> dict[str, Any]:
    """What :func:`multiprocessing.spawn.prepare` needs to make a worker look like the parent, and
    the main module to load, only when the task names objects by ``"__main__."`` import paths."""
    from multiprocessing import process

    cwd = os.getcwd()
    header: dict[str, Any] = {
        "sys_path": [p if p else cwd for p in sys.path],
        "sys_argv": list(sys.argv),
        "dir": cwd,
    }
    if not main_names:
        return header
    main = sys.modules["__main__"]
    name = getattr(getattr(main, "__spec__", None), "name", None)
    path = getattr(main, "__file__", None)
    if name is not None:
        header["init_main_from_name"] = name
    elif path is not None and os.path.isfile(path):
        header["init_main_from_path"] = os.path.normpath(
            os.path.join(process.ORIGINAL_DIR or cwd, path)
        )
    else:
        source = "standard input" if path == "<stdin>" else "a command line or interactive session"
        raise InvalidParameterError(
            f"the task names {', '.join(map(repr, main_names))}, defined in a main module read "
            f"from {source}, which worker processes cannot import: move it to an importable module "
            "(a .py file on sys.path) and name it by that module's path"
        )
    header["main_names"] = main_names
    return header


# ---------------------------------------------------------------------------- in the worker
class StartError(Exception):
    """Why this worker cannot start, in words for the user (sent to the parent as it is)."""


def main(argv: list[str]) -> int:
    """Run one worker; returns its exit code."""
    import faulthandler
    from multiprocessing.connection import Connection

    sock_fd, task_fd, zygote_pid, memory_limit_mb = (int(a) for a in argv)
    faulthandler.enable()  # a crash in C code leaves its Python stack in the log
    _die_with_parent(zygote_pid)
    os.set_inheritable(sock_fd, False)  # processes the trials start must not hold the socket
    conn = Connection(sock_fd)
    try:
        task = _load_task(task_fd)
        if hasattr(task, "warm_up"):
            task.warm_up()
        if memory_limit_mb:
            _limit_address_space(memory_limit_mb)
    except StartError as err:
        conn.send((ERROR, str(err)))
        return 1
    except BaseException as err:  # noqa: BLE001 - everything is reported to the parent
        conn.send((ERROR, f"{type(err).__name__}: {err}"))
        return 1
    conn.send((READY, None))
    _serve(conn, task)
    return 0


def _die_with_parent(parent_pid: int) -> None:
    """Let the kernel kill this worker when its parent dies (Linux), and exit if it already has."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, int(signal.SIGKILL))
    if os.getppid() != parent_pid:
        os._exit(1)


def _load_task(task_fd: int) -> Any:
    import mmap

    with mmap.mmap(task_fd, 0, prot=mmap.PROT_READ) as data:
        size = int.from_bytes(data[:8], "little")
        _prepare(pickle.loads(data[8 : 8 + size]))
        with memoryview(data) as view, view[8 + size :] as body:
            task = pickle.loads(body)
    os.close(task_fd)
    return task


def _prepare(header: dict[str, Any]) -> None:
    """Take the parent's sys.path, argv and working directory; load its main module if needed."""
    from multiprocessing import spawn

    global LOADING_MAIN
    main = {k: header.pop(k) for k in ("init_main_from_name", "init_main_from_path") if k in header}
    names = header.pop("main_names", [])
    spawn.prepare(header)
    if not main:
        return
    LOADING_MAIN = True
    try:
        spawn.prepare(main)
    except BaseException as err:  # noqa: BLE001 - reported to the parent, named
        raise StartError(
            f"importing the main module {next(iter(main.values()))!r} in a worker process (the "
            f"task names {', '.join(names)}) failed: {type(err).__name__}: {err}"
        ) from None
    finally:
        LOADING_MAIN = False


def _limit_address_space(megabytes: int) -> None:
    import resource

    limit = megabytes * 2**20
    used = _address_space()
    if used is not None and used >= limit:
        raise StartError(
            f"memory_limit={megabytes} MiB is below the {used / 2**20:.0f} MiB of address space a "
            "worker process already uses once it has loaded Python, its imports (numpy, "
            "scikit-learn, ...) and the data: raise memory_limit"
        )
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _address_space() -> int | None:
    """This process's virtual memory size in bytes (what ``RLIMIT_AS`` bounds), if known."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _serve(conn: Any, task: Any) -> None:
    from .policy import trial_limit
    from .trial import error_result

    while True:
        try:
            job, limit = conn.recv()  # the job and the seconds it may take (policy.trial_limit)
        except (EOFError, OSError):  # the parent closed the socket or died
            return
        try:
            conn.send(STARTED)
        except (EOFError, OSError):
            return
        os.ftruncate(2, 0)  # the log keeps this trial's output only (it is opened for appending)
        start = time.perf_counter()
        try:
            with trial_limit(*limit):
                result = task.run(*job)
        except BaseException as err:  # noqa: BLE001 - a task's failure is a result, never a crash
            result = error_result(err)
        result["duration"] = time.perf_counter() - start
        try:
            conn.send(result)
        except (EOFError, OSError):
            return
        except Exception as err:  # noqa: BLE001 - the result could not be pickled
            failure = error_result(err)
            failure["duration"] = result["duration"]
            conn.send(failure)
