"""One writer per run directory.

Two ``fit`` calls on one ``output_dir`` at the same time would append to one journal (duplicate
``eval_id``\\ s, a later resume reading each evaluation twice) and overwrite each other's model
and report. :func:`run_lock` holds an operating-system lock on ``output_dir/.lock`` for the whole
``fit``, from before the journal is opened until the model and report are written; a second
``fit`` on the directory is refused at once with the holder's process id and host.

The lock is the ``filelock`` package's (``fcntl.flock`` on POSIX, ``msvcrt.locking`` on Windows),
so the operating system releases it when the holding process ends in any way, SIGKILL included:
a killed run never leaves a stale lock and its directory can be resumed at once. Worker processes
are started with ``spawn`` and do not inherit it. The holder's process id, host and start time
go to ``lock.json`` beside it while it is held, only for the message (the lock file itself is
truncated by every attempt to take it). Neither is followed if it is a symbolic link
(:mod:`admm_automl._files`): a link planted at ``.lock`` is refused, one at ``lock.json`` replaced.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._files import check_file, read_file, write_file
from ..exceptions import InvalidParameterError, RunDirectoryError, RunLockedError

LOCK_FILE, HOLDER_FILE = ".lock", "lock.json"


def run_directory(output_dir: Any) -> Path:
    """``output_dir`` as a directory path (created if missing); a file there is refused."""
    path = Path(output_dir)
    if path.exists() and not path.is_dir():
        raise InvalidParameterError(f"output_dir {str(output_dir)!r} is a file; give a directory "
                                    "(it is created if it does not exist)")
    path.mkdir(parents=True, exist_ok=True)
    return path


#: what ``flock`` raises on a file system that has no locks (NFS without lockd: ENOLCK)
_NO_LOCKS = frozenset({errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP})


def _file_system(path: Path) -> str:
    """`` (nfs4, mounted at /mnt/shared)`` for the file system holding ``path``, read from the
    mount table where there is one (Linux); empty where there is none."""
    try:
        with open("/proc/self/mounts", encoding="utf-8") as fh:
            mounts = [line.split()[1:3] for line in fh if len(line.split()) > 2]
    except OSError:
        return ""
    target = str(path.resolve())
    inside = [(point, kind) for point, kind in mounts
              if target == point or target.startswith(point.rstrip("/") + "/")]
    if not inside:
        return ""
    point, kind = max(inside, key=lambda mount: len(mount[0]))
    return f" ({kind}, mounted at {point})"


def _holder(path: Path) -> str:
    try:
        info = json.loads(read_file(path / HOLDER_FILE) or b"")
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(info["started"])))
        return f"process {int(info['pid'])} on {info['host']} (since {started})"
    # written a moment later, or by hand (RunDirectoryError: a link or a FIFO, never read)
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


@contextmanager
def run_lock(output_dir: Any) -> Iterator[Path | None]:
    """Hold ``output_dir``'s lock for the body (None: no directory, nothing to hold)."""
    if output_dir is None:
        yield None
        return
    from filelock import FileLock, Timeout

    path = run_directory(output_dir)
    check_file(path / LOCK_FILE)  # a planted link: older filelocks open (and truncate) its target
    lock = FileLock(str(path / LOCK_FILE), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise RunLockedError(
            f"output_dir {str(output_dir)!r} is in use by {_holder(path)}: one fit at a time "
            "writes a run directory. Wait for it to end (a killed process frees it at once) or "
            "give another output_dir."
        ) from None
    except OSError as err:  # after Timeout, which is an OSError too
        if err.errno not in _NO_LOCKS:
            raise
        raise RunDirectoryError(
            f"output_dir {str(output_dir)!r} is on a file system{_file_system(path)} that cannot "
            f"lock files ({errno.errorcode[err.errno]}: {err.strerror}; NFS without its lock "
            "service, lockd, does this). The lock is what keeps two fits from writing one run "
            "directory at once: give an output_dir on a local file system, or have the lock "
            "service started."
        ) from None
    try:
        holder = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}
        write_file(path / HOLDER_FILE, json.dumps(holder))
        yield path
    finally:
        (path / HOLDER_FILE).unlink(missing_ok=True)
        lock.release()
