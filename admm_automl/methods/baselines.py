"""The methods without the ADMM split, composed from the same recorder, budget and driver as ADMM.

* :class:`JointOptimizer` — JOPT: one θ-solver over the joint space of every choice and every
  hyperparameter (the baseline of the split in Liu et al., AAAI 2020, §5.4).
* :class:`SelectionOptimizer` — algorithm selection alone, every hyperparameter at its default (the
  setting of Kishimoto et al., BLDS, AutoML workshop at ICML 2021).

Both evaluate through the same engine, record into the same journal and stop by the same rules as
ADMM, so their histories and traces compare directly. :func:`joint_problem` (a θ-problem over a
:class:`~admm_automl.space.joint.JointSpace`) and :func:`split_free_constraints` are shared with FLASH's method
(:mod:`admm_automl.methods.flash`). Without the split there are no multipliers:
constraints are handled as a fixed-weight penalty (``constraint_mode="penalty"``, the default here)
or ignored during the search (``"filter"``); ``"admm"`` is refused. Free of scikit-learn.
"""

from __future__ import annotations

import abc
from typing import Any, Callable, Sequence

import numpy as np

from ..constraints.ranking import Constraints
from .lagrangian import constraint_value
from .driver import Engine, Recorder, Result, RunOptions, metric_worst
from ..exceptions import InvalidParameterError
from ..problem import QuadraticPenalty, ThetaProblem, ZProblem
from ..records import Observation, Suggestion
from ..space.encoding import Encoding
from ..space.joint import JointSpace

__all__ = ["JointOptimizer", "SelectionOptimizer", "joint_problem", "split_free_constraints"]

#: the initial pipelines of :class:`SelectionOptimizer`
INITIAL_PIPELINES = ("default", "random")


def split_free_constraints(options: RunOptions, name: str) -> Constraints:
    """The constraint algebra of a method without the ADMM split: ``constraint_mode`` "penalty"
    by default, "filter" on request, "admm" refused (there are no multipliers to update)."""
    if options.constraint_mode == "admm":
        raise InvalidParameterError(
            f"{name} has no ADMM split, so constraint_mode='admm' (slack variables and "
            "multipliers) does not apply: use 'penalty' or 'filter'"
        )
    return Constraints(options.constraints, options.constraint_mode or "penalty",
                       options.penalty_weight)


def joint_problem(
    joint: JointSpace, recorder: Recorder, phase: str,
    value: Callable[[Any, Observation], float], history: list[tuple[np.ndarray, Observation]],
    start: np.ndarray | None, options: RunOptions, pipeline_space: Any = None,
) -> ThetaProblem:
    """The θ-problem of one solver over ``joint``: its points are decoded and evaluated at full
    fidelity through ``recorder`` (tagged ``phase``) and scored by ``value``; no ADMM penalty. It
    carries the joint coordinates' low-cost point and grids, and ``pipeline_space`` when the box is
    the whole space's (JOPT), for solvers that search the conditional space natively, and, when
    the space has iterative learners, each point's training length and the run's time left (for
    ``bapi``). From the run's ``options``: the batch size, the cheap proposals that a solver whose
    asks cost more than the evaluations may add, the help ADMM's sub-problems get under a time
    budget (:attr:`~admm_automl.methods.driver.RunOptions.cheap_proposals`), and the
    asynchronous evaluation hooks (:meth:`RunOptions.asynchronous_hooks`): every method of a run
    gets the same."""
    enc = joint.encoding

    def point(s: Suggestion) -> tuple:
        return ((*joint.decode(s.config), 1.0 if s.fidelity is None else s.fidelity)
                + (() if s.iterations is None else (s.iterations,)))

    def evaluate(suggestions: Sequence[Suggestion]) -> list[Observation]:
        return recorder.evaluate([point(s) for s in suggestions], phase)


    return ThetaProblem(
        dim=joint.dim, evaluate=evaluate, augment=value,
        # no coupling term over the joint space: zero, vectorised (a model-based solver adds it
        # to every candidate it scores)
        penalty=QuadraticPenalty(0.0, np.zeros(joint.dim, dtype=bool), np.zeros(0)),
        discrete=joint.discrete, names=joint.names, history=history,
        start=None if start is None else start.copy(), batch_size=options.batch_size,
        low_cost=joint.low_cost, grids=joint.grids, pipeline_space=pipeline_space,
        training_length=(lambda x: enc.training_length(joint.decode(x)[0]))
        if enc.has_training_length else None,
        time_left=recorder.budget.time_left, **options.loop_fields(recorder),
        **options.asynchronous_hooks(recorder, phase, point, lambda s, obs: None),
    )


class _SingleSolverMethod(abc.ABC):
    """Shared set-up of the two baselines: budget, recorder, the initial evaluation, one solver
    driven in chunks of ``schedule(t)`` new evaluations, one trace row per chunk. ``options`` are
    the run's :class:`~admm_automl.methods.driver.RunOptions` (``constraint_mode`` ``"penalty"`` by
    default; ``"admm"`` is refused)."""

    name = ""

    def __init__(self, encoding: Encoding, engine: Engine, **options: Any) -> None:
        self.options = RunOptions(**options)
        self.constraints = split_free_constraints(self.options, self.name)
        self.encoding = encoding
        self.engine = engine

    def _value(self, config: Any, obs: Observation) -> float:
        """The sub-problem value: the loss plus the constraint penalty (none in filter mode)."""
        return obs.loss + constraint_value(self.constraints, obs)

    @abc.abstractmethod
    def _solver(self, recorder: Recorder, first: Observation) -> Any:
        """The set-up solver of this method, given the initial observation."""

    def _initial_point(self) -> tuple[tuple[int, ...], np.ndarray, float]:
        """``(z, θ, fidelity)`` evaluated first: the encoding's initial pipeline at its defaults,
        on all training rows."""
        enc = self.encoding
        return enc.check_z(enc.initial_z), enc.project(enc.initial_theta), 1.0

    def run(self) -> Result:
        recorder = self.options.recorder(self.encoding, self.engine, self.constraints)
        solver: list[Any] = []

        def start() -> None:
            (first,) = recorder.evaluate([self._initial_point()], "initial")
            solver.append(self._solver(recorder, first))

        trace, stop = self.options.drive(recorder, lambda n: solver[0].run(n), recorder.row,
                                         start, self.name)
        return Result(recorder.incumbent, trace, recorder.evaluated, recorder.n_evals, stop)


class JointOptimizer(_SingleSolverMethod):
    """JOPT: one θ-solver over the joint box of every module choice and every hyperparameter.

    A joint point is :class:`JointSpace`'s over all choices: one relaxed categorical coordinate
    per module (with more than one choice) followed by every θ coordinate of every algorithm (the
    inactive ones included: that is the difficulty the ADMM split removes). It decodes to
    ``(z, θ)`` by rounding the module coordinates and is evaluated at full fidelity. The θ-solver
    (a factory) lives for the whole run; its history starts with the initial pipeline. The problem
    also carries the low-cost point and the grids of the joint coordinates (a module coordinate
    declares no low cost) and, when ``space`` (the :class:`~admm_automl.space.PipelineSpace` of
    ``encoding``) is given, the space itself, so that a solver which searches the conditional space
    natively (``cfo``, ``blendsearch``: FLAML's nested choices, the setting of Wang et al., ICLR
    2021) can. ``options`` as :class:`_SingleSolverMethod`.
    """

    name = "JOPT"

    def __init__(self, encoding: Encoding, engine: Engine, theta_solver: Callable[[], Any], *,
                 space: Any = None, **kwargs: Any) -> None:
        super().__init__(encoding, engine, **kwargs)
        self.theta_solver = theta_solver
        self.space = space
        self.joint = JointSpace(encoding)

    @property
    def dim(self) -> int:
        return self.joint.dim

    def _solver(self, recorder: Recorder, first: Observation) -> Any:
        enc, joint = self.encoding, self.joint
        x0 = joint.encode(enc.check_z(enc.initial_z), enc.project(enc.initial_theta))
        problem = joint_problem(joint, recorder, "joint", self._value, [(x0, first)], x0,
                                self.options, pipeline_space=self.space)
        solver = self.theta_solver()
        solver.setup(problem, np.random.default_rng(self.options.solver_seeds()[0]))
        return solver


class SelectionOptimizer(_SingleSolverMethod):
    """Algorithm selection only: the z-solver with every hyperparameter at its default.

    One z-solver and one :class:`ZProblem` for the whole run (so multi-fidelity caches stay valid);
    the initial pipeline, evaluated first, is its history and start. ``options`` as
    :class:`_SingleSolverMethod`.

    Parameters
    ----------
    n_train : int, optional
        Training rows at full fidelity (for multi-fidelity solvers).
    initial : {"default", "random"}, default="default"
        The initial pipeline: the encoding's (Gaussian naive Bayes with no preprocessing in the
        built-in spaces, after Liu et al., AAAI 2020), or one choice per module drawn uniformly
        from the run's start stream (:meth:`~.driver.RunOptions.start_seed`), which depends on
        the seed only: every method and z-solver run with one seed starts from the same
        pipeline, drawn at random as FINDINITIALPIPELINE of Kishimoto et al. (2021) draws it.
    initial_fidelity : float, optional
        Fraction of the training rows the initial pipeline is first trained on; None is all of
        them. Kishimoto et al. (2021) train the random start on the first level of their ladder:
        pass ``fidelity_levels(n_train)[0]`` (:func:`admm_automl.solvers.z.fidelity_levels`,
        bη = 200 rows at b = 100, η = 2), which the multi-fidelity solvers then count as the
        start's first training (``blds``: its p_init at level 0; ``daub``: the first point of its
        curve; ``hyperband``: a cached rung), and the full-data solvers (``cmab``, ``random``,
        ...) leave out of their statistics and ``best()``. A start below full data is not a
        candidate for the run's incumbent, which counts full-data evaluations only. With
        ``blds``'s ``first_size="b"`` the first level is b = 100 rows:
        ``fidelity_levels(n_train, first_power=0)[0]``.
    """

    name = "select"

    def __init__(self, encoding: Encoding, engine: Engine, z_solver: Callable[[], Any], *,
                 n_train: int | None = None, initial: str = "default",
                 initial_fidelity: float | None = None, **kwargs: Any) -> None:
        super().__init__(encoding, engine, **kwargs)
        if initial not in INITIAL_PIPELINES:
            raise InvalidParameterError(
                f"select: initial must be one of {INITIAL_PIPELINES}, got {initial!r}"
            )
        if initial_fidelity is not None and not 0.0 < float(initial_fidelity) <= 1.0:
            raise InvalidParameterError(
                f"select: initial_fidelity must be None or in (0, 1], got {initial_fidelity!r}"
            )
        self.z_solver = z_solver
        self.n_train = n_train
        self.initial = initial
        self.initial_fidelity = initial_fidelity

    def initial_z(self) -> tuple[int, ...]:
        """The initial pipeline of ``initial`` (the same at every call)."""
        enc = self.encoding
        if self.initial == "random":  # one uniform choice per module
            rng = np.random.default_rng(self.options.start_seed())
            return tuple(int(rng.integers(k)) for k in enc.n_choices)
        return enc.check_z(enc.initial_z)

    def _initial_point(self) -> tuple[tuple[int, ...], np.ndarray, float]:
        fidelity = 1.0 if self.initial_fidelity is None else float(self.initial_fidelity)
        return self.initial_z(), self.encoding.project(self.encoding.initial_theta), fidelity

    def _solver(self, recorder: Recorder, first: Observation) -> Any:
        enc = self.encoding
        z0, theta = self.initial_z(), enc.project(enc.initial_theta)

        def point(s: Suggestion) -> tuple:
            return enc.check_z(s.config), theta, 1.0 if s.fidelity is None else s.fidelity

        def evaluate(suggestions: Sequence[Suggestion]) -> list[Observation]:
            return recorder.evaluate([point(s) for s in suggestions], "z")

        problem = ZProblem(
            n_choices=enc.n_choices, evaluate=evaluate, augment=self._value,
            module_names=enc.module_names, choice_names=enc.choice_names, history=[(z0, first)],
            start=z0, n_train=self.n_train, batch_size=self.options.batch_size,
            observations=recorder.observations, metric_worst=metric_worst(self.engine),
            **self.options.asynchronous_hooks(recorder, "z", point, lambda s, obs: None),
        )
        solver = self.z_solver()
        solver.setup(problem, np.random.default_rng(self.options.solver_seeds()[1]))
        return solver
