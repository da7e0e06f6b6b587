"""The records that flow between the optimisers, the solvers and the evaluation engine.

All are frozen: a request, a suggestion and an observation never change once made; a cache hit is a
copy with ``cached=True``.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

import numpy as np


class Status(str, enum.Enum):
    """Outcome of one evaluation."""

    OK = "ok"
    FAILED = "failed"  # an exception, or a NaN/inf score
    TIMEOUT = "timeout"  # stopped by the per-trial timeout or the end of the time budget
    MEMOUT = "memout"  # the memory limit was hit
    #: cut by the end of the time budget, or never begun (the budget ended while it waited for
    #: a worker, or no worker was left): it says nothing of the pipeline, is not counted as an
    #: evaluation or a failure, and runs again when a resumed run has budget left
    CANCELLED = "cancelled"


#: how the error of a trial cancelled because no worker process was left to run it begins (the
#: pool's workers died over and over and none could start): the run ends for want of workers, not
#: for its budget
NO_WORKER_LEFT = "not begun: no worker process is left"


@dataclass(frozen=True)
class Request:
    """One black-box query: algorithm choice per module, the full relaxed θ, and the fidelity.

    ``theta`` lives in the unit box; discrete coordinates may be relaxed (the objective evaluates at
    their projection: the surrogate loss f̃ of Liu et al. 2020). ``fidelity`` is the fraction of
    training rows used, in (0, 1]. ``iterations`` is the second fidelity, the training length t of
    the pipeline's iterative learner (its ``Iterations`` in the space): ``None`` fits the pipeline
    as configured; an int trains it for t iterations, records its learning curve and may continue a
    partly trained model (:mod:`admm_automl.evaluation.iterative`).
    """

    z: tuple[int, ...]
    theta: np.ndarray
    fidelity: float = 1.0
    iterations: int | None = None


@dataclass(frozen=True)
class Suggestion:
    """A configuration proposed by a solver: a θ vector (unit box) or a z tuple, a fidelity (data
    fraction) and, for a learner with a training length, the number of iterations to train."""

    id: int
    config: "np.ndarray | tuple[int, ...]"
    fidelity: float | None = None
    iterations: int | None = None
    #: proposed by the overhead-aware loop's cheap rule (random or a local perturbation), not by
    #: the solver's own model (:meth:`~admm_automl.solvers.loop.RunLoop.run`)
    cheap: bool = False


#: the suffix of the constraint key under which a value that is a confidence bound has its point
#: value recorded (``"demographic_parity_difference:point"``)
POINT = ":point"


@dataclass(frozen=True)
class Observation:
    """The raw result of one evaluation (never penalised: the ADMM terms are added by ``augment``).

    ``loss`` is always minimised. A failed pipeline gets the run's failure loss (the metric's worst
    value, or the loss of a constant predictor for unbounded metrics); it is NaN only where the
    caller chose NaN as the failure loss (the artificial benchmark objective, which never fails).
    ``constraints`` holds raw constraint values by name. ``budget_stop`` marks an evaluation that
    the end of the time budget interrupted: it is recorded, but never cached or reused.

    With a training length (``iterations``, the request's): ``curve`` is the learning curve,
    ``((t, loss), ...)`` at the checkpoints of :func:`admm_automl.evaluation.iterative.checkpoints`
    up to ``iterations`` (the last entry is ``loss``); ``continued_from`` is the length a held,
    partly trained model was continued from (0: trained from scratch), so ``fit_time`` covers only
    ``iterations − continued_from`` iterations. A trial shrunk to fit its time limit
    (:mod:`admm_automl.evaluation.shrink`) has ``iterations`` too, with no curve: the length it
    ran at instead of the configured one, which the refit trains.

    ``rounds``: the boosting rounds early stopping kept on each split's validation rows, when the
    pipeline's estimator stops early (:mod:`admm_automl.evaluation.stopping`); empty otherwise.
    """

    loss: float
    status: Status = Status.OK
    constraints: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    fidelity: float = 1.0
    fit_time: float = 0.0
    predict_time: float = 0.0
    duration: float = 0.0
    cached: bool = False
    eval_id: int = -1
    budget_stop: bool = False
    iterations: int | None = None
    curve: tuple[tuple[int, float], ...] = ()
    continued_from: int = 0
    rounds: tuple[int, ...] = ()

    @property
    def refit_rounds(self) -> int | None:
        """The rounds a refit on all rows trains: the splits' early-stopped rounds, their mean
        rounded (None without early stopping)."""
        if not self.rounds:
            return None
        return max(1, int(round(sum(self.rounds) / len(self.rounds))))

    @property
    def ok(self) -> bool:
        return self.status is Status.OK and math.isfinite(self.loss)
