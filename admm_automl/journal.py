"""The append-only trial journal: a run header, then one JSON object per evaluation.

The first line of ``journal.jsonl`` is ``{"run": {...}}``: what the recorded losses depend on (data
fingerprint, task, metric, splits and their seed, the models' seed, the space, the constraints'
measurements, the package version). Every evaluation is appended (and flushed) before it is used, so
a crash loses nothing; a line cut short by a crash is dropped on the next open.

Opening a journal that already has evaluations *resumes* it when its header equals the new run's;
a different header is refused with an error that names what differs, unless ``resume=False``, which
moves the old file aside (``journal-1.jsonl``, ``journal-2.jsonl``, ...) and starts afresh. So is a
record the resumed run cannot read back (:func:`record_problem`: a key missing, a value of the wrong
kind, from an edited or damaged file), naming its line.

A record's keys are written by :func:`make_record` and read back by :func:`observation_of`, the
journal's schema in one place.

*Crash-only trials.* A trial that runs in the process that writes the journal (the serial
executor) can take that process down with it (a segmentation fault in an estimator's compiled
code, the out-of-memory killer), and so does a kill of the process (SIGKILL, SIGTERM, a machine
going down) that has nothing to do with the trial. Before such a trial the journal gets a
``{"started": {...}}`` line with the request, and a ``{"interrupted": key}`` line if the trial is
interrupted (Ctrl-C); a resumed journal lists the trials started and never finished in
:attr:`Journal.unfinished`, each with how many times its process died during it (``deaths``: its
start marks without a record or an interrupt after them), so that the run decides whether to run
it again or record it as failed (:mod:`admm_automl.evaluation.objective`; Candea and Fox,
"Crash-Only Software", HotOS 2003: recovery is the start-up path). Trials in worker processes
need no marker: a crashed worker is recorded by the executor.
"""

from __future__ import annotations

import errno
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from ._files import open_appending, read_file
from .exceptions import ResumeError
from .records import Observation, Status

HEADER_KEY = "run"
STARTED_KEY, INTERRUPTED_KEY = "started", "interrupted"


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # JSON has no NaN/inf
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


def _differences(old: Any, new: Any, path: str = "") -> list[str]:
    """Readable differences between two JSON-like headers."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in sorted(set(old) | set(new)):
            where = f"{path}.{key}" if path else str(key)
            if key not in old or key not in new:
                out.append(f"{where}: only in the {'new' if key in new else 'recorded'} run")
            else:
                out.extend(_differences(old[key], new[key], where))
        return out
    if old != new:
        show = lambda v: (s if len(s := json.dumps(v)) <= 60 else s[:57] + "...")  # noqa: E731
        return [f"{path}: recorded {show(old)}, now {show(new)}"]
    return []


class Journal:
    """Records of every evaluation, in memory and (with a path) in a JSONL file.

    Parameters
    ----------
    path : str or Path, optional
        The JSONL file. None keeps records in memory only.
    header : dict, optional
        What the recorded values depend on (JSON-like); written as the first line of a new file,
        compared with the first line of an existing one.
    resume : bool, default=True
        Continue an existing journal whose header equals ``header`` (its records are loaded; a
        different header raises :class:`~admm_automl.exceptions.ResumeError`). False moves an
        existing file aside and starts a new one.
    """

    def __init__(
        self, path: "str | Path | None" = None, header: dict[str, Any] | None = None,
        *, resume: bool = True,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.header = _jsonable(header or {})
        self.records: list[dict[str, Any]] = []
        #: how many of ``records`` an earlier session wrote
        self.n_resumed = 0
        #: the requests (``key``, ``z``, ``theta``, ``fidelity``, ``iterations``) of trials an
        #: earlier session started in its own process and never finished, with ``deaths``: how
        #: many sessions died during that trial (module docstring)
        self.unfinished: list[dict[str, Any]] = []
        self._next_id = 0
        self._fh = None
        self._write_failed = False  # a write raised (a full disk): close() then raises no more
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # opened in place, so a link or a special file is refused, never followed; a line cut
        # short by a crash is cut off; without ``resume`` an old journal is moved aside
        fd, held = open_appending(self.path, move_aside=not resume)
        try:
            if held is not None:
                self._resume(held)
        except BaseException:
            os.close(fd)
            raise
        self._fh = os.fdopen(fd, "a", encoding="utf-8")
        if held is None:
            self._write({HEADER_KEY: self.header})

    def _resume(self, complete: bytes) -> None:
        """Load the records of the journal's ``complete`` lines, refusing another run's header
        or a record this version cannot read back (:class:`ResumeError`)."""
        recorded, records, self.unfinished = _parse(complete.decode("utf-8"))
        if recorded is None:
            raise ResumeError(
                f"{self.path} has no run header (it was written by an older version or by "
                "something else); use a new output directory or resume=False to move it aside"
            )
        diff = _differences(recorded, self.header)
        if diff:
            raise ResumeError(
                f"{self.path} records a different run, so its results cannot be reused: "
                + "; ".join(diff[:6]) + ". Use another output directory, or resume=False "
                "(CLI: --no-resume) to keep the old journal beside a new one."
            )
        for record in records:
            problem = record_problem(record)
            if problem is not None:
                line = next((f", line {n}" for n, text in
                             enumerate(complete.decode("utf-8").splitlines(), 1)
                             if _loads(text) == record), "")  # a NaN is equal to no NaN
                raise ResumeError(
                    f"{self.path}{line}: the evaluation recorded there cannot be resumed: "
                    f"{problem}. The file was changed by something other than admm-automl, or is "
                    "damaged: remove or repair that line, or use resume=False (CLI: --no-resume) "
                    "to keep the journal aside and start afresh."
                )
        self.records = records
        self.n_resumed = len(records)
        self._next_id = max((int(r["eval_id"]) for r in records), default=-1) + 1

    def _write(self, obj: dict[str, Any]) -> None:
        if self._fh is not None:
            try:
                self._fh.write(json.dumps(obj, sort_keys=True) + "\n")
                self._fh.flush()
            except OSError as err:  # a full disk: say which file (the OS error names none)
                self._write_failed = True
                raise OSError(err.errno, f"cannot append to the journal: {err.strerror or err}",
                              str(self.path)) from err

    def start(self, key: str, request: Any) -> None:
        """Mark the trial of ``request`` (cache key ``key``) as started in this process."""
        self._write({STARTED_KEY: {
            "key": key, "z": list(request.z), "theta": _jsonable(list(request.theta)),
            "fidelity": request.fidelity, "iterations": request.iterations,
        }})

    def interrupt(self, key: str) -> None:
        """The trial of ``key`` was interrupted (not crashed): a resume runs it again."""
        self._write({INTERRUPTED_KEY: key})

    def next_id(self) -> int:
        """The ``eval_id`` of the next record (ids continue across sessions)."""
        return self._next_id

    def append(self, record: dict[str, Any]) -> None:
        record = _jsonable(record)
        self._write(record)
        self.records.append(record)
        if "eval_id" in record:
            self._next_id = max(self._next_id, int(record["eval_id"]) + 1)

    def close(self) -> None:
        if self._fh is not None:
            fh, self._fh = self._fh, None
            try:
                fh.close()  # the file is closed even when its last flush fails
            except OSError as err:
                if self._write_failed:
                    # the write that failed has raised, naming the journal; the lines it left
                    # in the buffer cannot be flushed either, and a second error here would
                    # hide the first (closing runs in a `finally`)
                    return
                raise OSError(err.errno, f"cannot close the journal: {err.strerror or err}",
                              str(self.path)) from err

    def __len__(self) -> int:
        return len(self.records)

    @staticmethod
    def read(path: "str | Path") -> list[dict[str, Any]]:
        """The evaluation records of a journal file (the header, the trials' start and interrupt
        marks and a cut-short line skipped)."""
        return _parse(_text(path))[1]

    @staticmethod
    def read_header(path: "str | Path") -> dict[str, Any] | None:
        return _parse(_text(path))[0]


def _text(path: "str | Path") -> str:
    """The text of the journal file ``path``, refusing a link or a special file (``_files``)."""
    data = read_file(path)
    if data is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
    return data.decode("utf-8")


def _loads(line: str) -> Any:
    """The JSON value of one line (None for a line that is not JSON)."""
    try:
        return json.loads(line)
    except json.JSONDecodeError:
        return None


def _parse(text: str) -> tuple[dict[str, Any] | None, list[dict[str, Any]], list[dict[str, Any]]]:
    """The header, the evaluation records, and the trials started and never finished, each with
    the number of its start marks followed by neither a record nor an interrupt (``deaths``)."""
    header, records, started = None, [], {}
    for line in text.splitlines():
        obj = _loads(line)
        if not isinstance(obj, dict):
            continue
        if set(obj) == {HEADER_KEY}:
            header = obj[HEADER_KEY]
        elif set(obj) == {STARTED_KEY}:
            mark = obj[STARTED_KEY]
            deaths = started[mark["key"]]["deaths"] if mark["key"] in started else 0
            started[mark["key"]] = {**mark, "deaths": deaths + 1}
        elif set(obj) == {INTERRUPTED_KEY}:
            # the last start of that trial was not a death; earlier ones still count
            mark = started.pop(obj[INTERRUPTED_KEY], None)
            if mark is not None and mark["deaths"] > 1:
                started[mark["key"]] = {**mark, "deaths": mark["deaths"] - 1}
        else:
            records.append(obj)
            started.pop(obj.get("key"), None)
    return header, records, list(started.values())


def make_record(eval_id: int, key: str, request: Any, result: dict[str, Any], *,
                config: dict[str, Any], pipeline: str, worst_loss: float, time: float,
                tags: dict[str, Any], stopped: bool) -> dict[str, Any]:
    """The journal record of one trial's ``result`` for ``request`` (``z``, ``θ``, ``fidelity``,
    ``iterations``): what :func:`observation_of` reads back. A failed trial, or one whose loss is
    not finite, is recorded with ``worst_loss`` (its own loss stays in ``raw_loss``); ``stopped``
    marks a trial cut by the end of the time budget or never begun, which says nothing of the
    pipeline: its status is ``cancelled`` and it carries ``budget_stop`` (not replayed). A trial
    shrunk to fit its time limit (``shrunk_from`` in its result) records the iterations it ran,
    which the refit trains, and the configured ones as ``shrunk_from``; its ``config`` stays the
    one asked for, as its key does."""
    status = "cancelled" if stopped else result.get("status", "failed")
    loss = result.get("loss", math.nan)
    if status != "ok" or not math.isfinite(loss):
        loss = worst_loss
    record = {
        "eval_id": eval_id,
        **tags,
        "pipeline": pipeline,
        "config": config,
        "fidelity": request.fidelity,
        "n_train": result.get("n_train"),
        "loss": loss,
        "raw_loss": result.get("loss"),
        "status": status,
        "error": result.get("error"),
        "constraints": result.get("constraints", {}),
        "fit_time": result.get("fit_time", 0.0),
        "predict_time": result.get("predict_time", 0.0),
        "duration": result.get("duration", 0.0),
        "time": time,
        "key": key,
    }
    if request.iterations is not None:  # the training-length fidelity
        record["iterations"] = request.iterations
        record["curve"] = result.get("curve", [])
        record["continued_from"] = result.get("continued_from", 0)
    elif result.get("shrunk_from") is not None:  # run at fewer iterations to fit its time limit
        record["iterations"] = int(result["iterations"])
        record["shrunk_from"] = int(result["shrunk_from"])
    if result.get("rounds"):  # early stopping's rounds, one per split (evaluation.stopping)
        record["rounds"] = [int(r) for r in result["rounds"]]
    if result.get("boxed"):  # splits whose rounds stopped at their share of the time limit
        record["boxed"] = int(result["boxed"])
    if result.get("traceback"):
        record["traceback"] = result["traceback"]
    if result.get("prefix_cache"):  # what the worker's prefix cache saved for this trial
        record["prefix_cache"] = dict(result["prefix_cache"])
    if stopped:
        record["budget_stop"] = True
    return record


#: the keys every evaluation record has (:func:`make_record`) and a resumed run reads
RECORD_KEYS = ("eval_id", "config", "fidelity", "loss", "status")


def record_problem(record: dict[str, Any]) -> str | None:
    """What makes ``record`` unusable by a resumed run (a key missing, a value of the wrong kind:
    a journal edited or damaged by something else), or None. ``eval_id`` must be a whole number
    (it names the record's files, ``predictions/<eval_id>.npy``)."""
    missing = [k for k in RECORD_KEYS if k not in record]
    if missing:
        return "it has no " + ", ".join(repr(k) for k in missing)
    eval_id = record["eval_id"]
    if type(eval_id) is not int or eval_id < 0:
        return f"its eval_id {eval_id!r} is not a whole number"
    if not isinstance(record["config"], dict):
        return f"its config {record['config']!r} is not a mapping"
    if record.get("key") is not None and not isinstance(record["key"], str):
        return f"its key {record['key']!r} is not a string"
    try:
        observation_of(record)
    except (TypeError, ValueError) as err:  # e.g. "'done' is not a valid Status"
        return f"a value is of the wrong kind ({err})"
    return None


def observation_of(record: dict[str, Any], *, cached: bool = False) -> Observation:
    """The :class:`Observation` a journal record holds."""
    return Observation(
        loss=float(record["loss"]),
        status=Status(record["status"]),
        constraints=dict(record.get("constraints") or {}),
        error=record.get("error"),
        fidelity=float(record["fidelity"]),
        fit_time=float(record.get("fit_time") or 0.0),
        predict_time=float(record.get("predict_time") or 0.0),
        duration=float(record.get("duration") or 0.0),
        cached=cached,
        eval_id=int(record["eval_id"]),
        budget_stop=bool(record.get("budget_stop", False)),
        iterations=record.get("iterations"),
        curve=tuple((int(t), float(v)) for t, v in record.get("curve") or ()),
        continued_from=int(record.get("continued_from") or 0),
        rounds=tuple(int(r) for r in record.get("rounds") or ()),
    )
