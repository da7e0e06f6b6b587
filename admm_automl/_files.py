"""The files of a run directory, written and read without following a link or opening a special
file.

A run directory may be shared (a cluster's scratch space, a colleague's results), so whoever can
write in it can plant a symbolic link where a run writes a file — ``summary.json`` pointing at
``~/.bashrc`` — and a run that opened the name would overwrite the link's target; or a FIFO where
a run reads a file, and the run would block on it forever. So:

* a whole file is written by :func:`write_file`: to a new temporary file in the same folder
  (``O_CREAT | O_EXCL | O_NOFOLLOW``: it is never an existing file, nor a link), then renamed onto
  the name with ``os.replace``, which replaces a link itself, never its target; a killed process
  leaves the old file or the new one, never half of one;
* a file used in place (the lock) is opened by :func:`open_file`, which refuses a link or a
  special file with a :class:`~admm_automl.exceptions.RunDirectoryError` naming the path; a file
  appended to (the journal) is opened the same way by :func:`open_appending`, which also returns
  the complete lines it already holds, or moves an old file aside;
* a file read back is read by :func:`read_file`, which refuses the same, so nothing blocks on a
  FIFO: its type is checked with ``os.lstat`` before it is opened (and again on the descriptor);
* a folder of the run (``predictions/``, a report's figures) is made by :func:`make_folder`,
  which refuses a link where the folder should be (the files written in it would land in the
  link's target).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path

from .exceptions import RunDirectoryError

__all__ = ["check_file", "make_folder", "open_appending", "open_file", "read_file", "write_file"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO swapped in after the check cannot block open
_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation


def _refusal(path: Path, mode: int, kind: str = "file") -> RunDirectoryError:
    if stat.S_ISLNK(mode):
        try:
            target = f" (to {os.readlink(path)!r})"
        except OSError:
            target = ""
        what = (f"is a symbolic link{target}", "it is not followed, so that a link planted in a "
                "run directory cannot make the run write or read another file")
    elif stat.S_ISDIR(mode) or stat.S_ISREG(mode):
        what = ("is a folder" if stat.S_ISDIR(mode) else "is a file", "it is left as it is")
    else:
        what = ("is a special file (a FIFO, a socket or a device)",
                "it is not opened, since opening one can block forever")
    return RunDirectoryError(f"{str(path)!r} {what[0]} where the run keeps a {kind} of its own: "
                             f"{what[1]}. Remove it, or use another output directory.")


def check_file(path: "str | os.PathLike[str]") -> bool:
    """Whether ``path`` is a regular file (False: nothing there); anything else (a link, a
    folder, a special file) is refused with a :class:`RunDirectoryError` naming the path."""
    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(mode):
        raise _refusal(path, mode)
    return True


def open_file(path: "str | os.PathLike[str]", flags: int, mode: int = 0o666) -> int:
    """``os.open(path, flags)`` for a file used in place, refusing a symbolic link or a special
    file (:class:`RunDirectoryError` naming the path); returns a blocking descriptor."""
    path = Path(path)
    check_file(path)
    try:
        fd = os.open(path, flags | _NOFOLLOW | _NONBLOCK | _BINARY, mode)
    except OSError as err:  # replaced by a link or a FIFO since the check
        if err.errno in (errno.ELOOP, errno.EMLINK, errno.ENXIO):
            raise _refusal(path, os.lstat(path).st_mode) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refusal(path, st.st_mode)
        if _NONBLOCK and hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_appending(path: "str | os.PathLike[str]", *, move_aside: bool = False
                   ) -> tuple[int, bytes | None]:
    """A descriptor to append to the file ``path`` used in place (made if missing; a symbolic
    link or a special file refused, as by :func:`open_file`), and the complete lines the file
    already holds — None when it holds nothing. A last line cut short (by a crash) is cut off
    the file. With ``move_aside``, a file that holds anything is first renamed beside it, to the
    first free name of ``name-1.ext``, ``name-2.ext``, ..., and a new, empty one begun."""
    path = Path(path)
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT
    fd = open_file(path, flags)
    if move_aside and os.fstat(fd).st_size > 0:
        os.close(fd)
        k = 1
        while os.path.lexists(aside := path.with_name(f"{path.stem}-{k}{path.suffix}")):
            k += 1
        path.rename(aside)  # a link is renamed itself, never followed
        fd = open_file(path, flags)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        data = b"".join(chunks)
        if not data:
            return fd, None
        complete = data[: data.rfind(b"\n") + 1]
        if len(complete) < len(data):
            os.ftruncate(fd, len(complete))
    except BaseException:
        os.close(fd)
        raise
    return fd, complete


def read_file(path: "str | os.PathLike[str]") -> bytes | None:
    """The bytes of the regular file ``path`` (None when there is none); a symbolic link or a
    special file is refused (:class:`RunDirectoryError`) without being opened."""
    path = Path(path)
    if not check_file(path):
        return None
    try:
        fd = open_file(path, os.O_RDONLY)
    except FileNotFoundError:  # removed since the check
        return None
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def write_file(path: "str | os.PathLike[str]", data: "bytes | str") -> None:
    """Write ``data`` (text as UTF-8) to ``path`` whole: to a new temporary file beside it, then
    renamed onto it, so that a symbolic link at ``path`` is replaced, never followed (module
    docstring). The file gets the permissions the user's umask gives a new file. An ``OSError``
    names ``path``."""
    path = Path(path)
    blob = data.encode("utf-8") if isinstance(data, str) else data
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY
    for _ in range(100):
        temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.partial")
        try:
            fd = os.open(temporary, flags, 0o666)
            break
        except FileExistsError:
            continue
        except OSError as err:
            raise OSError(err.errno, err.strerror or str(err), str(path)) from err
    else:
        raise FileExistsError(errno.EEXIST, "no free temporary name beside it", str(path))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
        os.replace(temporary, path)
    except BaseException as err:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        if isinstance(err, OSError) and err.filename != str(path):
            raise OSError(err.errno, err.strerror or str(err), str(path)) from err
        raise


def make_folder(path: "str | os.PathLike[str]") -> Path:
    """Make the folder ``path`` (and its parents) if missing; a symbolic link or a file there is
    refused (:class:`RunDirectoryError`): files written into a linked folder would land in its
    target."""
    path = Path(path)
    if not os.path.lexists(path):
        path.mkdir(parents=True, exist_ok=True)
    mode = os.lstat(path).st_mode
    if not stat.S_ISDIR(mode):
        raise _refusal(path, mode, "folder")
    return path
