"""What a finished search hands to the code that builds the final model: the task it searched, the
optimiser's result and every evaluation, typed.

The journal's records (JSON objects, :mod:`admm_automl.journal`) are the search's memory; past
the search they are read once, here, into :class:`Evaluation`: its id, its configuration and
pipeline, its :class:`~admm_automl.records.Observation`, the seconds a refit of its pipeline on
all rows should take, and its point ``(z, θ)`` in the space (encoded on first use, at most
once). The best evaluation, the refit, the ensemble and its stack read evaluations only; the
records themselves stay in :attr:`SearchOutcome.records` for the tables that show them as they
were journaled (``history_``, ``cv_results_``).
"""

from __future__ import annotations

import functools
import shutil
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..constraints.base import BaseConstraint
from ..constraints.ranking import Constraints
from ..evaluation.metrics import Metric
from ..evaluation.trial import TrialContext
from ..journal import observation_of
from ..methods.driver import Result
from ..records import Observation, Status
from ..space.space import PipelineSpace
from .library import refit_seconds_estimate

__all__ = ["Evaluation", "SearchOutcome", "Task", "evaluations_of"]

#: a configuration's point ``(z, θ)``, θ projected onto the space's discrete values
Point = tuple[tuple[int, ...], np.ndarray]


@dataclass
class Task:
    """What :func:`~admm_automl.run.task.prepare_task` builds: the trial context, the metric, the
    constraints bound to the data, and the loss given to failed pipelines."""

    kind: str  # "classification" or "regression"
    context: TrialContext
    metric: Metric
    constraints: list[BaseConstraint]
    worst_loss: float
    split_seed: int


@dataclass(frozen=True, eq=False)
class Evaluation:
    """One evaluation of a finished search, read once from its journal record.

    ``point`` gives ``(z, θ)`` of ``config`` (θ projected), computed on first use: most of a
    run's evaluations are never refitted, and encoding all of them would cost the refit's time.
    """

    eval_id: int
    config: dict[str, Any]
    #: the pipeline's name, as the journal writes it
    pipeline: str
    observation: Observation
    #: the seconds the workers' prefix cache saved its fits
    seconds_saved: float
    #: the seconds a refit of its pipeline on all the run's rows should take, estimated from
    #: its fits as the library estimates them during the search
    #: (:func:`~.library.refit_seconds_estimate`)
    refit_seconds: float
    encode: Callable[[Mapping[str, Any]], Point] = field(repr=False)

    @functools.cached_property
    def point(self) -> Point:
        """``(z, θ)`` of :attr:`config`, θ projected (the refit's point)."""
        return self.encode(self.config)

    @property
    def z(self) -> tuple[int, ...]:
        return self.point[0]

    @property
    def theta(self) -> np.ndarray:
        return self.point[1]

    @property
    def full(self) -> bool:
        """Evaluated on all training rows and not cut by the end of the budget."""
        return self.observation.fidelity >= 1.0 and not self.observation.budget_stop

    @property
    def succeeded(self) -> bool:
        """Its status is ok (as the journal says: its loss is not looked at)."""
        return self.observation.status is Status.OK


def evaluations_of(records: Sequence[Mapping[str, Any]], space: PipelineSpace, n_rows: int,
                   n_splits: int) -> list[Evaluation]:
    """The :class:`Evaluation` of every journal record, in the journal's order, their points in
    ``space``, their refits estimated for ``n_rows`` rows from fits over ``n_splits`` validation
    splits."""
    def encode(config: Mapping[str, Any]) -> Point:
        z, theta = space.encode(config)
        return z, space.encoding.project(theta)

    return [Evaluation(
        eval_id=int(r["eval_id"]), config=r["config"], pipeline=r.get("pipeline", ""),
        observation=observation_of(r),
        seconds_saved=float((r.get("prefix_cache") or {}).get("seconds_saved") or 0.0),
        refit_seconds=refit_seconds_estimate(r, n_rows, n_splits), encode=encode)
        for r in records]


@dataclass
class SearchOutcome:
    """A finished search: its task, optimiser result, journal records and their evaluations,
    constraints algebra, ρ, the validation predictions kept for the ensemble (eval_id -> array),
    the thread limit the trials ran under, which the refit keeps (None: none), and the executor's
    name."""

    task: Task
    result: Result
    #: the journal's records, as written: what ``history_`` and ``cv_results_`` show
    records: list[dict[str, Any]]
    #: the same evaluations, typed (:func:`evaluations_of`): what the final model is built from
    evaluations: list[Evaluation]
    n_failed: int
    constraints: Constraints
    rho: float
    predictions: dict[int, np.ndarray] = field(default_factory=dict)
    refit_threads: int | None = None
    executor: str = "serial"
    #: the folder of the kept fold models (:mod:`.bagging`) and eval_id -> file in it; the
    #: caller removes the folder (:meth:`close`) once the ensemble is built
    models_dir: str | None = None
    models: dict[int, str] = field(default_factory=dict)
    #: evaluations stopped at their own time limit (not counted in ``n_failed``)
    n_timeouts: int = 0
    #: seconds spent in each of the user's callbacks (by name), within the search's time
    callback_seconds: dict[str, float] = field(default_factory=dict)

    @functools.cached_property
    def by_eval_id(self) -> dict[int, Evaluation]:
        """The evaluations by eval_id."""
        return {e.eval_id: e for e in self.evaluations}

    def close(self) -> None:
        """Remove the folder of kept fold models (nothing if there is none)."""
        if self.models_dir is not None:
            shutil.rmtree(self.models_dir, ignore_errors=True)
