"""The library of a run's kept validation predictions, and the refit estimates behind the time
budget's reserve.

The objective tells its observers of every evaluation as it is recorded (a resumed journal's
evaluations too, without predictions). :class:`PredictionLibrary` is the run's observer:

* it keeps the validation predictions of the best ``size`` evaluations (by the run's ``rank``)
  and of the best evaluation of each learner (the last step of the pipeline) for the ensemble
  (:mod:`.ensemble`), never in the journal: the best of every learner keeps the ensemble's
  library diverse when one learner's variants fill the top places (Caruana et al. 2004 select
  from a library of diverse models). With a run directory they are also kept on disk, one
  ``predictions/<eval_id>.npy`` per kept evaluation (written before the objective journals the
  record, removed when it leaves the library), and a resumed journal's evaluations get theirs
  back from there, so that a resumed or re-run ``fit`` builds the same ensemble as an
  uninterrupted one: the library is bounded (``size`` plus one per learner), and the best
  ``size`` of a run are among the best ``size`` of its parts, so nothing a resumed run needs was
  ever removed. The files are plain ``.npy`` arrays, read without pickle;
* it estimates the seconds a refit on all rows takes for every successful full-data evaluation
  (:func:`refit_seconds_estimate`), so that :meth:`PredictionLibrary.refit_estimate` can say what
  a time-budgeted search keeps back for its refit and its ensemble
  (:func:`~admm_automl.run.deadline.refit_reserve`).
"""

from __future__ import annotations

import io
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .._files import make_folder, read_file, write_file
from ..exceptions import RunDirectoryError, RunDirectoryWarning
from ..records import Observation

#: the run directory's folder of kept validation predictions
PREDICTIONS_DIR = "predictions"

#: the validation predictions kept for the ensemble: of the best this many evaluations (the e_max
#: of Liu et al. 2020, appendix on ensembles), and of the best evaluation of each learner
ENSEMBLE_POOL = 32


def refit_seconds(fit_time: float, seconds_saved: float, n_train: int | None, n_rows: int,
                  n_splits: int) -> float:
    """The seconds a refit on all ``n_rows`` rows should take of a pipeline whose evaluation fitted
    for ``fit_time`` seconds over ``n_splits`` validation splits of ``n_train`` training rows each
    (None: all rows), the prefix cache saving it ``seconds_saved``: its mean fit time per split
    (with what the cache saved added back) scaled linearly from the split's training rows to all
    rows."""
    per_split = (fit_time + seconds_saved) / max(n_splits, 1)
    return per_split * n_rows / max(int(n_train or n_rows), 1)


def refit_seconds_estimate(record: dict[str, Any], n_rows: int, n_splits: int) -> float:
    """:func:`refit_seconds` of the pipeline of the journal record ``record``."""
    saved = float((record.get("prefix_cache") or {}).get("seconds_saved") or 0.0)
    return refit_seconds(float(record.get("fit_time") or 0.0), saved, record.get("n_train"),
                         n_rows, n_splits)


class PredictionLibrary:
    """Kept validation predictions and refit estimates of one run (module docstring).

    Parameters
    ----------
    n_rows, n_splits : int
        The rows a refit fits on and the validation splits a record's fit time is summed over.
    size : int
        How many evaluations' predictions are kept besides the best of each learner (0: none).
    rank : callable, optional
        Sort key of an :class:`Observation` (default: its loss).
    run_dir : str or Path, optional
        The run directory whose ``predictions`` folder mirrors the kept predictions (module
        docstring); None keeps them in memory only.
    models_dir : str or Path, optional
        The folder the trials write their fold models to (:mod:`.bagging`): the files of the
        evaluations the library keeps are in :attr:`models`, the others deleted.
    shape : tuple of int, optional
        The shape of an evaluation's validation predictions: a file read back from ``run_dir``
        of another shape is damaged, and treated as missing.
    """

    def __init__(self, n_rows: int, n_splits: int, size: int = 0,
                 rank: Callable[[Observation], Any] | None = None, run_dir: Any = None,
                 models_dir: Any = None, shape: tuple[int, ...] | None = None) -> None:
        self.n_rows, self.n_splits, self.size, self.shape = n_rows, n_splits, size, shape
        self.rank = rank or (lambda obs: obs.loss)
        self.folder = None if run_dir is None else Path(run_dir) / PREDICTIONS_DIR
        #: eval_id -> validation predictions
        self.predictions: dict[int, Any] = {}
        self.models_dir = None if models_dir is None else Path(models_dir)
        #: eval_id -> the file of its fold models in ``models_dir`` (kept evaluations only)
        self.models: dict[int, str] = {}
        self._ranks: dict[int, Any] = {}
        self._best_of_learner: dict[int, int] = {}  # learner (z[-1]) -> eval_id
        #: eval_id -> estimated seconds to refit it on all rows (successful full-data ones)
        self._refit: dict[int, float] = {}
        self._best: tuple[Any, int] | None = None  # (rank, eval_id) of the best so far
        #: eval_id -> (learner, rank) of replayed evaluations whose file was not there
        self._absent: dict[int, tuple[int, Any]] = {}

    def observed(self, record: dict[str, Any], observation: Observation, learner: int | None,
                 predictions: Any, models: str | None = None) -> None:
        """An evaluation was recorded (``predictions`` None for a replayed one: read back from
        the run directory when it was kept; ``models``: its fold models' file)."""
        eval_id = observation.eval_id
        if models is not None:
            self.models[eval_id] = models  # dropped below unless the evaluation is kept
        try:
            self._observed(record, observation, learner, predictions)
        finally:
            if eval_id not in self.predictions:
                self._drop_models(eval_id)

    def _observed(self, record: dict[str, Any], observation: Observation, learner: int | None,
                  predictions: Any) -> None:
        eval_id = observation.eval_id
        if not (observation.ok and observation.fidelity >= 1.0):
            if self.size > 0:
                self._unlink(eval_id)  # a file left by a process killed before this id's record
            return
        self._refit[eval_id] = refit_seconds_estimate(record, self.n_rows, self.n_splits)
        rank = self.rank(observation)
        if self._best is None or rank < self._best[0]:
            self._best = (rank, eval_id)
        if self.size == 0:  # no ensemble: the run directory's files are left as they are
            return
        live = predictions is not None
        if not live:
            predictions, lost = self._read(eval_id)
            if lost and learner is not None:
                self._absent[eval_id] = (learner, rank)
        if predictions is not None and learner is not None:
            self._keep(learner, eval_id, rank, predictions)
        if eval_id not in self.predictions:
            self._unlink(eval_id)
        elif live:
            self._write(eval_id, predictions)

    def refit_estimate(self, others: int = 0) -> tuple[float, float]:
        """Estimated seconds to refit the best evaluation so far, and the next ``others`` best
        of those whose predictions are kept (together; none for those kept as bags), on all
        rows; zeros before any success."""
        if self._best is None:
            return 0.0, 0.0
        best = self._best[1]
        ranked = sorted((i for i in self._ranks if i != best), key=self._ranks.__getitem__)
        # an evaluation whose fold models are kept joins the ensemble as a bag, without a refit
        return self._refit[best], sum(self._refit.get(i, 0.0) for i in ranked[:others]
                                      if i not in self.models)

    def _keep(self, learner: int, eval_id: int, rank: Any, predictions: Any) -> None:
        """Keep ``predictions`` if the evaluation is among the best ``size`` or the best of its
        learner; drop what no longer is."""
        self.predictions[eval_id] = predictions
        self._ranks[eval_id] = rank
        best = self._best_of_learner.get(learner)
        if best is None or rank < self._ranks[best]:
            self._best_of_learner[learner] = eval_id
        protected = set(self._best_of_learner.values())
        spare = [i for i in self._ranks if i not in protected]
        while len(spare) > self.size:
            worst = max(spare, key=self._ranks.__getitem__)
            spare.remove(worst)
            del self.predictions[worst], self._ranks[worst]
            self._unlink(worst)
            self._drop_models(worst)

    def missing(self) -> list[int]:
        """The replayed evaluations whose kept predictions file was not there, or damaged,
        although the library keeps them now (the best ``size``, or the best of their learner): a
        resumed run never needs a file its earlier session removed (module docstring), so such
        a file was deleted or damaged by something else (:meth:`restore_lost`)."""
        spare = sorted(self._ranks[i] for i in self._ranks
                       if i not in set(self._best_of_learner.values()))
        out = []
        for eval_id, (learner, rank) in sorted(self._absent.items()):
            best = self._best_of_learner.get(learner)
            if best is None or rank < self._ranks[best] or len(spare) < self.size \
                    or rank < spare[-1]:
                out.append(eval_id)
        return out

    def restore_lost(self, records: dict[int, dict[str, Any]], space: Any, executor: Any,
                     time_left: float | None) -> list[int]:
        """Evaluate again, on ``executor``, the :meth:`missing` evaluations (``records`` by
        eval_id), best first, while their measured durations fit in ``time_left`` (None: no
        limit), and keep their predictions as if never lost: a trial is seeded, so its
        predictions are the lost ones and the ensemble is an uninterrupted run's. Returns the
        evaluations left out (not run, or not the same evaluation any more), each named in a
        warning."""
        left_out = []
        for eval_id in sorted(self.missing(), key=lambda i: self._absent[i][1]):
            record = records[eval_id]
            duration = float(record.get("duration") or 0.0)
            result = None
            if time_left is None or duration <= time_left:
                z, theta = space.encode(record["config"])
                iterations = record.get("iterations")
                job = (tuple(int(j) for j in z), theta, float(record["fidelity"])) + (
                    () if iterations is None else (int(iterations),))
                start = time.monotonic()
                result = executor.run([job], [None if time_left is None else
                                              max(2.0 * duration, 1.0)])[0]
                if time_left is not None:
                    time_left -= time.monotonic() - start
            predictions = None if result is None else result.get("predictions")
            if predictions is None or result.get("status") != "ok" or not np.isclose(
                    float(result.get("loss", np.nan)), float(record["loss"])):
                left_out.append(eval_id)
                why = ("the time budget had no room to evaluate it again" if result is None
                       else "evaluating it again did not give its recorded result")
                warnings.warn(
                    f"The kept validation predictions of evaluation {eval_id} "
                    f"({self._path(eval_id)}) are missing from the run directory or damaged "
                    f"(since its session wrote them), and {why}: it is left out of the "
                    "ensemble, which can differ from an uninterrupted run's.",
                    RunDirectoryWarning, stacklevel=3)
                continue
            learner, rank = self._absent.pop(eval_id)
            if result.get("models"):
                self.models[eval_id] = result["models"]
            self._keep(learner, eval_id, rank, predictions)
            if eval_id in self.predictions:
                self._write(eval_id, predictions)
            else:
                self._drop_models(eval_id)
        return left_out

    def _drop_models(self, eval_id: int) -> None:
        """Delete the fold models' file of ``eval_id``, if it has one."""
        name = self.models.pop(eval_id, None)
        if name is not None and self.models_dir is not None:
            (self.models_dir / name).unlink(missing_ok=True)

    # ------------------------------------------------------------------ the run directory
    def _path(self, eval_id: int) -> Path:
        assert self.folder is not None
        return self.folder / f"{int(eval_id)}.npy"

    def _read(self, eval_id: int) -> tuple[np.ndarray | None, bool]:
        """The kept predictions of a replayed evaluation (None when it has none), and whether
        its file is lost: absent, or damaged (not an array, another shape, a link or a special
        file, which is never opened), the latter with a warning naming it. The run goes on; a
        lost file the ensemble needs is made again (:meth:`restore_lost`)."""
        if self.folder is None:
            return None, False
        path = self._path(eval_id)
        try:
            blob = read_file(path)
            if blob is None:
                return None, True
            array = np.load(io.BytesIO(blob), allow_pickle=False)
            if not isinstance(array, np.ndarray) or not np.issubdtype(array.dtype, np.floating):
                raise ValueError(f"it holds {type(array).__name__} "
                                 f"{getattr(array, 'dtype', '')}, not an array of numbers")
            if self.shape is not None and array.shape != tuple(self.shape):
                raise ValueError(f"its shape is {array.shape}, the run's validation predictions' "
                                 f"{tuple(self.shape)}")
        except (OSError, ValueError, EOFError) as err:
            what = (str(err) if isinstance(err, RunDirectoryError) else
                    f"The kept validation predictions {str(path)!r} cannot be used ({err}).")
            warnings.warn(f"{what} It is treated as missing: evaluation {eval_id} is evaluated "
                          "again if the ensemble needs it.", RunDirectoryWarning, stacklevel=2)
            return None, True
        return array, False

    def _write(self, eval_id: int, predictions: Any) -> None:
        """Write atomically (a temporary file renamed), so a killed process leaves either the
        whole array or none, and a link at the name is replaced, never followed."""
        if self.folder is None:
            return
        make_folder(self.folder)
        buffer = io.BytesIO()
        np.save(buffer, np.asarray(predictions), allow_pickle=False)
        write_file(self._path(eval_id), buffer.getvalue())

    def _unlink(self, eval_id: int) -> None:
        if self.folder is not None:
            self._path(eval_id).unlink(missing_ok=True)
