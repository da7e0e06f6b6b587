"""The methods without the ADMM split, composed from the same recorder, budget and driver as ADMM.

* :class:`JointOptimizer` — JOPT: one θ-solver over the joint space of every choice and every
  hyperparameter (the baseline of the split in Liu et al., AAAI 2020, §5.4).
* :class:`SelectionOptimizer` — algorithm selection alone, every hyperparameter at its default (the
  setting of Kishimoto et al., BLDS, AutoML workshop at ICML 2021).

Both evaluate through the same engine, record into the same journal and stop by the same rules as
ADMM, so their histories and traces compare directly. Without the split there are no multipliers:
constraints are handled as a fixed-weight penalty (``constraint_mode="penalty"``, the default here)
or ignored during the search (``"filter"``); ``"admm"`` is refused. Free of scikit-learn.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

import numpy as np

from ._lagrangian import Constraints
from ._recorder import Budget, Engine, Recorder, Result, Schedule, drive, solver_rngs
from .exceptions import InvalidParameterError
from .problem import ThetaProblem, ZProblem
from .records import Observation, Suggestion
from .space.encoding import Encoding

__all__ = ["JointOptimizer", "SelectionOptimizer", "joint_decode", "joint_encode"]


def joint_encode(encoding: Encoding, z: Sequence[int], theta: np.ndarray) -> np.ndarray:
    """The joint point of ``(z, θ)``: one relaxed categorical coordinate per module (choice k of K
    at k/(K − 1), like a categorical hyperparameter), then every θ coordinate."""
    units = [j / (k - 1) if k > 1 else 0.0 for j, k in zip(z, encoding.n_choices)]
    return np.concatenate([np.array(units, dtype=float), np.asarray(theta, dtype=float)])


def joint_decode(encoding: Encoding, x: np.ndarray) -> tuple[tuple[int, ...], np.ndarray]:
    """``(z, θ)`` of a joint point (module coordinates rounded to the nearest choice)."""
    x = np.clip(np.asarray(x, dtype=float), 0.0, 1.0)
    m = len(encoding.n_choices)
    z = tuple(int(np.rint(x[i] * (k - 1))) if k > 1 else 0 for i, k in enumerate(encoding.n_choices))
    return z, x[m:].copy()


class _SingleSolverMethod:
    """Shared set-up of the two baselines: budget, recorder, the initial evaluation, one solver
    driven in chunks of ``schedule(t)`` new evaluations, one trace row per chunk."""

    name = ""

    def __init__(
        self,
        encoding: Encoding,
        engine: Engine,
        *,
        schedule: Schedule = Schedule(),
        max_evals: int | None = None,
        time_budget: float | None = None,
        seed: "int | np.random.SeedSequence | None" = None,
        callback: Callable[[dict[str, Any]], Any] | None = None,
        constraints: Sequence[Any] = (),
        constraint_mode: str = "penalty",
        penalty_weight: float = 1.0,
        max_idle_iterations: int = 5,
        batch_size: int = 1,
        clock: Callable[[], float] = time.monotonic,
        start_time: float | None = None,
    ) -> None:
        if constraint_mode == "admm":
            raise InvalidParameterError(
                f"{self.name} has no ADMM split, so constraint_mode='admm' (slack variables and "
                "multipliers) does not apply: use 'penalty' or 'filter'"
            )
        if max_evals is None and time_budget is None:
            raise InvalidParameterError("give max_evals or time_budget (or both)")
        self.encoding = encoding
        self.engine = engine
        self.schedule = schedule
        self.max_evals = max_evals
        self.time_budget = time_budget
        self.theta_seed, self.z_seed = solver_rngs(seed)
        self.callback = callback
        self.constraints = Constraints(constraints, constraint_mode, penalty_weight)
        self.max_idle_iterations = max_idle_iterations
        self.batch_size = batch_size
        self.clock = clock
        self.start_time = start_time

    def _value(self, config: Any, obs: Observation) -> float:
        """The sub-problem value: the loss plus the constraint penalty (none in filter mode)."""
        return obs.loss + self.constraints.term(obs)

    def _solver(self, recorder: Recorder, first: Observation) -> Any:
        """The set-up solver of this method, given the initial observation."""
        raise NotImplementedError

    def run(self) -> Result:
        budget = Budget(self.max_evals, self.time_budget, clock=self.clock,
                        start_time=self.start_time)
        recorder = Recorder(self.encoding, self.engine, budget, self.constraints)
        enc = self.encoding
        z0, theta0 = enc.check_z(enc.initial_z), enc.project(enc.initial_theta)
        solver: list[Any] = []

        def start() -> None:
            (first,) = recorder.evaluate([(z0, theta0, 1.0)], "initial")
            solver.append(self._solver(recorder, first))

        trace, stop = drive(
            recorder, self.schedule, lambda n: solver[0].run(n), recorder.row, start=start,
            callback=self.callback, max_idle_iterations=self.max_idle_iterations, name=self.name,
        )
        return Result(recorder.incumbent, trace, recorder.evaluated, recorder.n_evals, stop)


class JointOptimizer(_SingleSolverMethod):
    """JOPT: one θ-solver over the joint box of every module choice and every hyperparameter.

    A joint point is :func:`joint_encode`'s: one relaxed categorical coordinate per module followed
    by every θ coordinate of every algorithm (the inactive ones included: that is the difficulty
    the ADMM split removes). It decodes to ``(z, θ)`` by rounding the module coordinates and is
    evaluated at full fidelity. The θ-solver (a factory) lives for the whole run; its history
    starts with the initial pipeline. Other parameters as :class:`_SingleSolverMethod` (and
    :class:`~admm_automl.admm.ADMMOptimizer`).
    """

    name = "JOPT"

    def __init__(self, encoding: Encoding, engine: Engine, theta_solver: Callable[[], Any],
                 **kwargs: Any) -> None:
        super().__init__(encoding, engine, **kwargs)
        self.theta_solver = theta_solver

    @property
    def dim(self) -> int:
        return len(self.encoding.n_choices) + self.encoding.theta_dim

    def _solver(self, recorder: Recorder, first: Observation) -> Any:
        enc = self.encoding
        x0 = joint_encode(enc, enc.check_z(enc.initial_z), enc.project(enc.initial_theta))

        def evaluate(suggestions: Sequence[Suggestion]) -> list[Observation]:
            points = [(*joint_decode(enc, s.config), 1.0 if s.fidelity is None else s.fidelity)
                      for s in suggestions]
            return recorder.evaluate(points, "joint")

        problem = ThetaProblem(
            dim=self.dim, evaluate=evaluate, augment=self._value, penalty=lambda x: 0.0,
            discrete=np.concatenate([np.ones(len(enc.n_choices), dtype=bool), enc.discrete]),
            names=tuple(f"module:{m}" for m in enc.module_names) + tuple(enc.theta_names),
            history=[(x0, first)], start=x0.copy(), batch_size=self.batch_size,
        )
        solver = self.theta_solver()
        solver.setup(problem, np.random.default_rng(self.theta_seed))
        return solver


class SelectionOptimizer(_SingleSolverMethod):
    """Algorithm selection only: the z-solver with every hyperparameter at its default.

    One z-solver and one :class:`ZProblem` for the whole run (so multi-fidelity caches stay valid);
    the initial pipeline, evaluated first at full data, is its history and start. ``n_train`` is
    the number of training rows at full fidelity (for multi-fidelity solvers). Other parameters as
    :class:`_SingleSolverMethod`.
    """

    name = "select"

    def __init__(self, encoding: Encoding, engine: Engine, z_solver: Callable[[], Any], *,
                 n_train: int | None = None, **kwargs: Any) -> None:
        super().__init__(encoding, engine, **kwargs)
        self.z_solver = z_solver
        self.n_train = n_train

    def _solver(self, recorder: Recorder, first: Observation) -> Any:
        enc = self.encoding
        z0, theta = enc.check_z(enc.initial_z), enc.project(enc.initial_theta)

        def evaluate(suggestions: Sequence[Suggestion]) -> list[Observation]:
            points = [(enc.check_z(s.config), theta, 1.0 if s.fidelity is None else s.fidelity)
                      for s in suggestions]
            return recorder.evaluate(points, "z")

        problem = ZProblem(
            n_choices=enc.n_choices, evaluate=evaluate, augment=self._value,
            module_names=enc.module_names, choice_names=enc.choice_names, history=[(z0, first)],
            start=z0, n_train=self.n_train, batch_size=self.batch_size,
        )
        solver = self.z_solver()
        solver.setup(problem, np.random.default_rng(self.z_seed))
        return solver
