"""The sub-problems that ADMM hands to its solvers (plain data; no scikit-learn).

A solver sees only a problem: it asks configurations, evaluates them through ``problem.evaluate``
(so caching, budgets, failure capture and the journal live in one place) and scores raw observations
with ``problem.augment``, which applies the *current* ADMM terms. Earlier observations therefore stay
valid when the duals change, and solvers can be warm-started with ``problem.history``.

A problem of an asynchronous run also has ``submit`` (one suggestion, answered later),
``collect`` (wait for answers) and ``free_workers`` (how many trials may start now): the solver
hands a free worker its next suggestion at once instead of evaluating in batches
(:meth:`admm_automl.solvers.loop.RunLoop.run`). With ``overlap`` the solver's run may end
while the last of its trials are still in flight, so that the optimiser's next step takes the
idle workers; the optimiser records those trials when they end.

The pipelines of a z-problem are enumerated here too (:func:`all_pipelines`, in the order of
:func:`pipeline_index`), so that a z-solver needs nothing of the space.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from .records import Observation, Suggestion

Evaluate = Callable[[Sequence[Suggestion]], list[Observation]]
#: asynchronous evaluation (``problem.submit``): one suggestion -> a ticket, answered later
Submit = Callable[[Suggestion], int]
#: ``problem.collect()``: wait for answers -> ``[(ticket, observation)]`` of every trial answered
#: now (other sub-problems' trials included: a solver keeps the tickets it submitted)
Collect = Callable[[], list[tuple[int, Observation]]]


@dataclass(frozen=True)
class QuadraticPenalty:
    """``p(x) = (ρ/2)·‖x[mask] − centre‖²``: the ADMM coupling term of a θ-problem as a callable
    that also works on the rows of a matrix (``rows``) and has a ``gradient``, so a model-based
    solver can add it to its surrogate without one Python call per candidate."""

    rho: float
    mask: np.ndarray
    centre: np.ndarray

    def __call__(self, x: np.ndarray) -> float:
        diff = np.asarray(x, dtype=float)[self.mask] - self.centre
        return 0.5 * self.rho * float(diff @ diff)

    def rows(self, X: np.ndarray) -> np.ndarray:
        diff = np.atleast_2d(np.asarray(X, dtype=float))[:, self.mask] - self.centre
        return 0.5 * self.rho * (diff * diff).sum(axis=1)

    def gradient(self, X: np.ndarray) -> np.ndarray:
        X = np.atleast_2d(np.asarray(X, dtype=float))
        grad = np.zeros_like(X)
        grad[:, self.mask] = self.rho * (X[:, self.mask] - self.centre)
        return grad


@dataclass
class ThetaProblem:
    """θ-min on the active set of one algorithm selection (Liu et al. 2020, problem (10)).

    ``x`` is the vector of active coordinates in [0, 1]^dim. ``augment(x, obs)`` is the sub-problem
    value f̃ + (ρ/2)‖x_d − b‖² (+ constraint terms); ``penalty(x)`` is its analytic part alone (ADMM
    passes a :class:`QuadraticPenalty`; any callable of one point is allowed).
    ``history`` holds earlier ``(x, observation)`` pairs of the same selection; ``start`` is the
    current iterate.

    What cost-frugal solvers (CFO, BlendSearch) also read: ``low_cost``, the unit value of each
    coordinate's declared low-cost point (NaN where it declares none; ``None``: no coordinate
    does); ``grids``, the admissible unit values of each relaxed discrete coordinate (``None`` for a
    continuous one; empty when unknown), whose spacing is the resolution the δ-step projects to;
    and, for a joint problem (JOPT), ``pipeline_space``, the
    :class:`~admm_automl.space.PipelineSpace` whose :func:`~admm_automl.methods.baselines.joint_encode`
    points ``x`` are, so a solver can search its conditional structure natively.

    ``training_length(x)`` is the :class:`~admm_automl.space.Iterations` of the iterative learner
    that point ``x`` trains, or ``None`` (``None`` for the field: no point has one); a solver that
    chooses training lengths (``bapi``) sets ``Suggestion.iterations`` for such points.
    ``time_left()``, when given, is the wall-clock time left in the run (seconds, ``None`` without
    a time budget): set by the whole-problem methods (JOPT), whose θ-solver plans over the run.
    """

    dim: int
    evaluate: Evaluate
    augment: Callable[[np.ndarray, Observation], float]
    penalty: Callable[[np.ndarray], float]
    discrete: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    names: tuple[str, ...] = ()
    history: list[tuple[np.ndarray, Observation]] = field(default_factory=list)
    start: np.ndarray | None = None
    #: suggestions a batch-capable solver should ask at once (the number of parallel workers)
    batch_size: int = 1
    low_cost: np.ndarray | None = None
    grids: tuple[np.ndarray | None, ...] = ()
    pipeline_space: Any = None
    training_length: Callable[[np.ndarray], Any] | None = None
    time_left: Callable[[], float | None] | None = None
    #: add cheap proposals when asks cost more than evaluations (``BaseSolver.run``)
    overhead_aware: bool = False
    #: the run's clock (seconds), on which the overhead-aware loop times its asks against its
    #: evaluations: an optimiser passes its budget's, so a simulated clock times both alike
    clock: Callable[[], float] = time.perf_counter
    #: asynchronous evaluation (module docstring); None: ``evaluate`` in batches
    submit: Submit | None = None
    collect: Collect | None = None
    free_workers: Callable[[], int] | None = None
    #: asynchronous: a run may return with its last trials in flight (module docstring)
    overlap: bool = False
    #: asynchronous: ``(config, fidelity)`` of the trials in flight that answer this problem's
    #: points, earlier steps' included, so that a solver does not propose them again (an
    #: optimiser passes a live view kept by its engine, whose ``identities(identity)`` gives
    #: their identities as a multiset without walking them at every ask)
    in_flight: Callable[[], Sequence[tuple[Any, float | None]]] | None = None


@dataclass
class ZProblem:
    """z-min: one choice per module with θ fixed (Liu et al. 2020, problem (12)).

    ``n_choices[i]`` is the number of choices of module ``i``. ``fidelity`` is the admissible range
    of training-data fractions for multi-fidelity solvers (``None``: full data only).
    ``observations``, when the optimiser provides it, returns every new evaluation of the whole run
    so far as ``(z, observation)`` pairs — other ADMM iterations, θ-steps and other θ included —
    for solvers whose model spans the run (``flash``); ``history`` holds only the current θ's.
    ``warm_start``, ``metric_worst``: see the fields.
    """

    n_choices: tuple[int, ...]
    evaluate: Evaluate
    augment: Callable[[tuple[int, ...], Observation], float]
    module_names: tuple[str, ...] = ()
    choice_names: tuple[tuple[str, ...], ...] = ()
    history: list[tuple[tuple[int, ...], Observation]] = field(default_factory=list)
    start: tuple[int, ...] | None = None
    fidelity: tuple[float, float] | None = None
    #: rows of the (first) training split: fidelity f trains on ceil(f * n_train) of them
    n_train: int | None = None
    #: suggestions a batch-capable solver should ask at once (the number of parallel workers)
    batch_size: int = 1
    #: every new evaluation of the run so far, oldest first (None: the solver sees only its own)
    observations: Callable[[], Sequence[tuple[tuple[int, ...], Observation]]] | None = None
    #: add cheap proposals when asks cost more than evaluations (``BaseSolver.run``)
    overhead_aware: bool = False
    #: the run's clock (seconds), on which the overhead-aware loop times its asks against its
    #: evaluations: an optimiser passes its budget's, so a simulated clock times both alike
    clock: Callable[[], float] = time.perf_counter
    #: asynchronous evaluation (module docstring); None: ``evaluate`` in batches
    submit: Submit | None = None
    collect: Collect | None = None
    free_workers: Callable[[], int] | None = None
    #: asynchronous: a run may return with its last trials in flight (module docstring)
    overlap: bool = False
    #: asynchronous: ``(config, fidelity)`` of the trials in flight that answer this problem's
    #: points, earlier steps' included, so that a solver does not propose them again (an
    #: optimiser passes a live view kept by its engine, whose ``identities(identity)`` gives
    #: their identities as a multiset without walking them at every ask)
    in_flight: Callable[[], Sequence[tuple[Any, float | None]]] | None = None
    #: the metric's worst value, the upper bound of the loss where the metric has one (1 for
    #: 1 − AUROC and the other bounded losses); None where it has none (RMSE, log-loss, a
    #: benchmark function) or the optimiser does not know the metric. The failure loss is not
    #: it: for an unbounded metric that is a constant predictor's loss, which a pipeline may
    #: exceed. (``cmab``'s ``loss_bound="auto"`` reads it.)
    metric_worst: float | None = None
    #: the warm start: pipelines found good elsewhere (a portfolio learned across datasets), in
    #: the order to try them, those not yet tried (read at every ask: the optimiser reorders them
    #: as the constraints' evidence comes in). A solver proposes them where its own method puts
    #: a start: before its own proposals (``cmab``, ``bo``, ``flash``, ``random``), as the first
    #: bracket's draws (``hyperband``), first in the bootstrap (``daub``), as the starts of the
    #: local searches (``blds``).
    warm_start: Callable[[], Sequence[tuple[int, ...]]] | None = None


# ------------------------------------------------------------------ the pipelines of a z-problem
def all_pipelines(n_choices: Sequence[int]) -> np.ndarray:
    """Every choice vector, in lexicographic (pipeline-index) order, as an (L, m) int array."""
    grids = np.meshgrid(*[np.arange(k) for k in n_choices], indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=1).astype(int)


def pipeline_index(z: Sequence[int], n_choices: Sequence[int]) -> int:
    """Lexicographic index of a pipeline.

    Used to break ties deterministically (our choice where the paper is silent), so runs are
    reproducible.
    """
    return int(np.ravel_multi_index(tuple(int(j) for j in z), tuple(n_choices)))
