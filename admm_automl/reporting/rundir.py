"""The run directory: what a finished ``fit`` leaves in ``output_dir``, and reading it back.

``output_dir`` holds

* ``journal.jsonl`` — the run header and one record per evaluation, appended as they happen (by
  :mod:`admm_automl.journal`; the only file of a run that was stopped before its end);
* ``trace.csv`` — one row per iteration (``admm_trace_``: best loss, evaluations, time; for ADMM ρ,
  ‖θ̃d − δ‖, ‖λ‖, u and μ per constraint);
* ``summary.json`` — the result (best pipeline, its loss and score, feasibility, evaluations,
  failures, stop reason, times), the metric, the constraints with their thresholds, and the
  machine;
* ``config.resolved.yaml`` — every estimator parameter (and, from the command line, the data);
* ``best_pipeline.pkl`` — the refitted best pipeline (a plain scikit-learn object);
* ``model.pkl`` — the fitted estimator itself, whose ``predict`` is the model that was scored:
  the ensemble when there is one, else the best pipeline (see :func:`write_run`).

:func:`write_run` writes them (the estimator at the end of ``fit``, the command line again with the
data and the test score); :func:`read_run` / :meth:`RunData.from_estimator` give the
:class:`RunData` that the report and the plots read, from the files or from a fitted estimator.
"""

from __future__ import annotations

import datetime
import functools
import inspect
import io
import json
import os
import pickle
import platform
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Mapping

from sklearn.utils.validation import check_is_fitted

from .._files import read_file, write_file
from ..exceptions import InvalidParameterError
from .._yaml import config_node, estimator_params, write_config
from ..journal import Journal, observation_of

#: packages whose versions a summary records (those installed; xgboost-cpu is the boost
#: extra's XGBoost on Linux)
PACKAGES = ("admm-automl", "numpy", "scipy", "scikit-learn", "pandas", "lightgbm", "xgboost",
            "xgboost-cpu", "scikit-optimize", "rbfopt", "flaml", "optuna", "matplotlib")



#: the file of the run directory that holds the fitted estimator (what ``predict`` uses)
MODEL_FILE = "model.pkl"


#: how a person reads each ADMM phase of the journal
_PHASES = {"theta": "θ-steps", "z": "z-steps", "initial": "initial pipeline",
           "confirm": "confirmed on all rows"}


def step_counts(history: Any) -> list[dict[str, Any]]:
    """Which step and solver made the evaluations, in order of their first evaluation:
    ``[{"step": "z-steps", "solver": "blds", "evaluations": 12, "first": 2}, ...]`` (``first``:
    the 1-based position of its first evaluation), from the journal's ``phase`` and ``solver``
    (a run of another method: its phases; journals before the ``solver`` tag: none)."""
    if "phase" not in history or not len(history):
        return []
    frame = history.reset_index(drop=True)
    solver = frame["solver"] if "solver" in frame else None
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for i, phase in enumerate(frame["phase"]):
        name = solver.iloc[i] if solver is not None else None
        name = name if isinstance(name, str) and name else ""
        key = (_PHASES.get(str(phase), str(phase)), name)
        if key not in out:
            out[key] = {"step": key[0], "solver": name, "evaluations": 0, "first": i + 1}
        out[key]["evaluations"] += 1
    return list(out.values())


def steps_note(steps: list[dict[str, Any]]) -> str:
    """``"1 initial pipeline; 6 z-steps by cmab (from evaluation 2); 10 θ-steps by bo (from
    evaluation 8)"``."""
    return "; ".join(f"{s['evaluations']} {s['step']}" + (f" by {s['solver']}" if s["solver"]
                                                          else "")
                     + (f" (from evaluation {s['first']})" if s["first"] > 1 else "")
                     for s in steps)


def evaluations_note(n_failed: int, n_timeouts: int,
                     seconds: tuple[float, float] | None = None) -> str:
    """``"2 failed"``, or ``"2 failed, 3 stopped at their time limit"``: a trial stopped by
    its own timeout is the time policy working, not a failure of the pipeline. Given
    ``seconds`` (:func:`timeout_seconds`), also what those trials cost: ``"(14.0 s, 23% of
    the trials' seconds)"`` — the part of a budget spent on trials that gave no result."""
    note = f"{n_failed} failed"
    if not n_timeouts:
        return note
    note += f", {n_timeouts} stopped at their time limit"
    if seconds is not None and seconds[1] > 0:
        note += f" ({seconds[0]:.1f} s, {seconds[0] / seconds[1]:.0%} of the trials' seconds)"
    return note


def timeout_seconds(history: Any) -> tuple[float, float]:
    """The seconds of a run's evaluations stopped at a time limit, and of all its evaluations
    (with several workers, worker-seconds)."""
    durations = history["duration"].fillna(0.0)
    return (float(durations[history["status"] == "timeout"].sum()), float(durations.sum()))

def machine_info() -> dict[str, Any]:
    """Where a run ran: Python, operating system, processor, cores, memory, package versions."""
    from importlib import metadata

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            cpu = next((line.split(":", 1)[1].strip() for line in fh
                        if line.startswith("model name")), cpu)
    except OSError:
        pass
    try:
        memory = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (AttributeError, ValueError, OSError):
        memory = None
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return {"python": platform.python_version(), "platform": platform.platform(),
            "processor": cpu, "cores": os.cpu_count(), "memory_gib": memory,
            "packages": versions}


def run_summary(model: Any) -> dict[str, Any]:
    """The result of a fitted estimator as JSON-ready data (see the module docstring)."""
    from ..evaluation.metrics import get_metric
    from ..final.results import describe_constraints

    history, trace = model.history_, model.admm_trace_
    best = history.loc[history["eval_id"] == model.best_eval_id_].iloc[0]
    target = ("continuous" if model.task_ == "regression"
              else "binary" if len(model.classes_) == 2 else "multiclass")
    from .._yaml import plain

    space = model.search_space
    return {
        "finished": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "method": model.method,
        "search_space": space if isinstance(space, str) else getattr(space, "name", str(space)),
        "theta_solver": plain(model.theta_solver, lenient=True),
        "z_solver": plain(model.z_solver, lenient=True),
        "time_budget": model.time_budget,
        "max_evals": model.max_evals,
        "task": model.task_,
        "metric": model.metric_,
        "metric_offset": get_metric(model.scoring, model.task_, target).offset,
        "best_eval_id": int(model.best_eval_id_),
        "best_pipeline": best["pipeline"],
        "best_params": {k: repr(v) if isinstance(v, tuple) else v
                        for k, v in model.best_params_.items()},
        "best_rounds": getattr(model, "best_rounds_", None),
        "best_loss": model.best_loss_,
        "validation_score": model.best_score_,
        "feasible": bool(model.feasible_),
        "deployed_constraints": {k: float(v) for k, v in
                                 (getattr(model, "deployed_constraints_", None) or {}).items()},
        "n_evals": int(model.n_evals_),
        "n_failed": int(model.n_failed_),
        "n_timeouts": int(getattr(model, "n_timeouts_", 0)),
        "timeout_seconds": timeout_seconds(history),
        "steps": step_counts(history),
        "stop_reason": model.stop_reason_,
        "search_time": float(trace["time"].iloc[-1]) if len(trace) else None,
        "refit_time": model.refit_time_,
        "prefix_cache": model.prefix_cache_,
        "constraint_mode": model.constraint_mode_,
        "rho": model.rho,
        "constraints": [{"key": c.key, "sense": c.sense, "threshold": float(c.threshold),
                         "text": str(c), "validation": line}
                        for c, line in zip(model.constraints_, describe_constraints(model))],
        "ensemble": ensemble_summary(model),
        "machine": machine_info(),
    }


def ensemble_summary(model: Any) -> dict[str, Any] | None:
    """The ensemble ``predict`` uses (None when the best pipeline alone is used): its kind
    (``"weighted"`` or ``"stack"``), its members (evaluation id, pipeline, weight as a fraction,
    whether it is the bag of its fold models), its validation loss and its constraint values,
    measured on the ensemble itself."""
    weights = getattr(model, "ensemble_weights_", None) or {}
    if getattr(model, "ensemble_", None) is None or not weights:
        return None
    history = model.history_.set_index("eval_id")
    total = sum(weights.values())
    return {
        "kind": getattr(model, "ensemble_kind_", None) or "weighted",
        "validation_loss": float(model.ensemble_loss_),
        "constraints": {k: float(v) for k, v in
                        (getattr(model, "ensemble_constraints_", None) or {}).items()},
        "members": [{"eval_id": int(i), "pipeline": str(history.loc[i, "pipeline"]),
                     "weight": count / total, "bag": _is_bag(model.ensemble_, i)}
                    for i, count in sorted(weights.items(), key=lambda kv: -kv[1])],
    }


def _is_bag(ensemble: Any, eval_id: int) -> bool:
    """Whether the ensemble's member of ``eval_id`` is the bag of its fold models."""
    from ..final.bagging import BaggedClassifier, BaggedRegressor

    member = dict(ensemble.named_estimators_).get(f"eval{eval_id}")
    return isinstance(getattr(member, "estimator", member), (BaggedClassifier, BaggedRegressor))


def write_run(model: Any, directory: "str | Path", *, data: Mapping[str, Any] | None = None,
              **extra: Any) -> Path:
    """Write ``trace.csv``, ``summary.json`` (with ``extra`` entries, such as a test score),
    ``config.resolved.yaml`` (with the ``data`` section), ``best_pipeline.pkl`` and ``model.pkl``
    of a fitted estimator beside its journal; returns the directory.

    ``model.pkl`` is the whole fitted estimator, not only the object it predicts with
    (``ensemble_`` or ``best_pipeline_``): its ``predict`` conforms the columns to the kinds seen
    in ``fit`` (numbers stored as text made numbers, as the search saw them) and, where the model
    learned label indices (the bags of fold models a cross-validated search's ensemble reuses),
    maps them back to the labels. The predicting object alone would skip both and could predict
    other values than the estimator that was scored; loaded, ``model.pkl`` predicts what
    ``model.predict`` did. It needs this package to load (so does a pipeline with one of its
    steps) and carries the search's record (``history_``, ``admm_trace_``), which predicting
    does not use. ``best_pipeline.pkl`` stays: the best single pipeline, a scikit-learn
    ``Pipeline`` that predicts the labels itself.
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    # each file is written whole and renamed onto its name: a symbolic link planted there is
    # replaced, never followed (:mod:`admm_automl._files`); an OSError names the file
    write_file(out / "trace.csv", model.admm_trace_.to_csv(index=False))
    summary = {**run_summary(model), **extra}
    write_file(out / "summary.json", json.dumps(summary, indent=2, default=str))
    write_config(estimator_params(model), data, out / "config.resolved.yaml", lenient=True)
    try:
        blob = pickle.dumps(model.best_pipeline_)
    except (pickle.PicklingError, AttributeError, TypeError) as err:
        warnings.warn(f"best_pipeline.pkl not written: the pipeline cannot be pickled ({err})",
                      RuntimeWarning, stacklevel=2)
    else:
        write_file(out / "best_pipeline.pkl", blob)
    try:
        blob = pickle.dumps(model)
    except (pickle.PicklingError, AttributeError, TypeError) as err:  # e.g. a lambda callback
        warnings.warn(f"model.pkl not written: the estimator cannot be pickled ({err})",
                      RuntimeWarning, stacklevel=2)
    else:
        write_file(out / MODEL_FILE, blob)
    return out


@dataclass
class RunData:
    """What the report and the plots read about one run.

    Attributes
    ----------
    history : pandas.DataFrame
        One row per evaluation, as ``history_``.
    trace : pandas.DataFrame
        One row per iteration, as ``admm_trace_`` (empty if the run did not finish).
    summary : dict
        :func:`run_summary` (empty if the run did not finish).
    config : dict
        ``{"estimator": {...}, "data": {...}}``.
    header : dict
        The journal's run header (what the losses depend on), when read from a directory.
    source : str
        Where it was read from.
    """

    history: Any
    trace: Any
    summary: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    header: dict[str, Any] = field(default_factory=dict)
    source: str = ""

    @classmethod
    def from_estimator(cls, model: Any) -> "RunData":
        """The run of a fitted estimator (from memory; nothing is read from disk)."""
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(model, "history_")
        config = config_node(estimator_params(model), lenient=True)
        header = {}
        if model.output_dir is not None and (Path(model.output_dir) / "journal.jsonl").exists():
            header = Journal.read_header(Path(model.output_dir) / "journal.jsonl") or {}
        return cls(model.history_, model.admm_trace_, run_summary(model), config, header,
                   f"{type(model).__name__} fitted in this session")

    @property
    def metric(self) -> tuple[str, float]:
        """``(name, offset)`` of the run's metric (loss = offset − score)."""
        from ..evaluation.metrics import _BUILTIN

        name = self.summary.get("metric") or str(self.header.get("metric", "loss")).split(" ")[0]
        offset = self.summary.get("metric_offset")
        if offset is None:
            offset = _BUILTIN[name].offset if name in _BUILTIN else 0.0
        return name, float(offset)

    @property
    def constraints(self) -> list[dict[str, Any]]:
        """``[{"key", "sense", "threshold", "text"}]`` of the run's constraints."""
        return list(self.summary.get("constraints") or [])


def read_run(directory: "str | Path") -> RunData:
    """The :class:`RunData` of a run directory; only ``journal.jsonl`` is required (a run stopped
    before its end has no summary or trace: its report shows what the journal holds)."""
    import pandas as pd
    import yaml

    from ..constraints.ranking import Constraints
    from ..final.results import history_frame

    folder = Path(directory)
    journal = folder / "journal.jsonl"
    if not os.path.lexists(journal):  # a link or a FIFO there is refused when it is read
        what = "does not exist" if not folder.exists() else f"has no journal.jsonl ({journal})"
        raise InvalidParameterError(f"{str(folder)!r} is not a run directory: it {what}")
    # read without following a link or opening a special file (:mod:`admm_automl._files`)
    summary = json.loads(read_file(folder / "summary.json") or b"{}")
    specs = [SimpleNamespace(**c) for c in summary.get("constraints") or []]
    constraints = Constraints(specs, summary.get("constraint_mode") or "filter")
    records = Journal.read(journal)
    # the violations need the records' observations (only a run with constraints has them)
    observations = [observation_of(r) for r in records] if len(constraints) else []
    history = history_frame(records, observations, constraints, float(summary.get("rho") or 1.0))
    trace_csv = read_file(folder / "trace.csv")
    trace = pd.read_csv(io.BytesIO(trace_csv)) if trace_csv is not None else pd.DataFrame()
    config = yaml.safe_load(read_file(folder / "config.resolved.yaml") or b"") or {}
    return RunData(history, trace, summary, config, Journal.read_header(journal) or {},
                   str(folder))


def as_method(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function(run, ...)`` as a method of the estimator, ``model.function(...)``, with the
    function's name, documentation and signature (less ``run``)."""

    @functools.wraps(function)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        check_is_fitted(self)  # NotFittedError, as predict before fit, not a missing attribute
        return function(self, *args, **kwargs)

    signature = inspect.signature(function)
    params = list(signature.parameters.values())
    method.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[params[0].replace(name="self"), *params[1:]])
    return method


def as_run(run: Any) -> RunData:
    """A :class:`RunData` from a fitted estimator, a run directory or a RunData."""
    if isinstance(run, RunData):
        return run
    if isinstance(run, (str, os.PathLike)):
        return read_run(run)
    if hasattr(run, "get_params"):
        return RunData.from_estimator(run)
    raise InvalidParameterError(
        f"expected a fitted ADMM estimator, a run directory or a RunData, got {run!r}"
    )
