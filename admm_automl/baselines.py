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

import abc
from typing import Any, Callable, Sequence

import numpy as np

from ._lagrangian import Constraints
from ._recorder import Engine, Recorder, Result, RunOptions
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


class _SingleSolverMethod(abc.ABC):
    """Shared set-up of the two baselines: budget, recorder, the initial evaluation, one solver
    driven in chunks of ``schedule(t)`` new evaluations, one trace row per chunk. ``options`` are
    the run's :class:`~admm_automl._recorder.RunOptions` (``constraint_mode`` ``"penalty"`` by
    default; ``"admm"`` is refused)."""

    name = ""

    def __init__(self, encoding: Encoding, engine: Engine, **options: Any) -> None:
        self.options = RunOptions(**options)
        if self.options.constraint_mode == "admm":
            raise InvalidParameterError(
                f"{self.name} has no ADMM split, so constraint_mode='admm' (slack variables and "
                "multipliers) does not apply: use 'penalty' or 'filter'"
            )
        self.encoding = encoding
        self.engine = engine
        opts = self.options
        self.constraints = Constraints(opts.constraints, opts.constraint_mode or "penalty",
                                       opts.penalty_weight)

    def _value(self, config: Any, obs: Observation) -> float:
        """The sub-problem value: the loss plus the constraint penalty (none in filter mode)."""
        return obs.loss + self.constraints.term(obs)

    @abc.abstractmethod
    def _solver(self, recorder: Recorder, first: Observation) -> Any:
        """The set-up solver of this method, given the initial observation."""

    def run(self) -> Result:
        recorder = self.options.recorder(self.encoding, self.engine, self.constraints)
        enc = self.encoding
        z0, theta0 = enc.check_z(enc.initial_z), enc.project(enc.initial_theta)
        solver: list[Any] = []

        def start() -> None:
            (first,) = recorder.evaluate([(z0, theta0, 1.0)], "initial")
            solver.append(self._solver(recorder, first))

        trace, stop = self.options.drive(recorder, lambda n: solver[0].run(n), recorder.row,
                                         start, self.name)
        return Result(recorder.incumbent, trace, recorder.evaluated, recorder.n_evals, stop)


class JointOptimizer(_SingleSolverMethod):
    """JOPT: one θ-solver over the joint box of every module choice and every hyperparameter.

    A joint point is :func:`joint_encode`'s: one relaxed categorical coordinate per module followed
    by every θ coordinate of every algorithm (the inactive ones included: that is the difficulty
    the ADMM split removes). It decodes to ``(z, θ)`` by rounding the module coordinates and is
    evaluated at full fidelity. The θ-solver (a factory) lives for the whole run; its history
    starts with the initial pipeline. The problem also carries the low-cost point and the grids of
    the joint coordinates (a module coordinate declares no low cost) and, when ``space`` (the
    :class:`~admm_automl.space.PipelineSpace` of ``encoding``) is given, the space itself, so that a
    solver which searches the conditional space natively (``cfo``, ``blendsearch``: FLAML's nested
    choices, the setting of Wang et al., ICLR 2021) can. ``options`` as
    :class:`_SingleSolverMethod`.
    """

    name = "JOPT"

    def __init__(self, encoding: Encoding, engine: Engine, theta_solver: Callable[[], Any], *,
                 space: Any = None, **kwargs: Any) -> None:
        super().__init__(encoding, engine, **kwargs)
        self.theta_solver = theta_solver
        self.space = space

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
            history=[(x0, first)], start=x0.copy(), batch_size=self.options.batch_size,
            low_cost=np.concatenate([np.full(len(enc.n_choices), np.nan), enc.low_cost]),
            grids=tuple(np.linspace(0.0, 1.0, k) if k > 1 else None for k in enc.n_choices)
            + tuple(enc.grids),
            pipeline_space=self.space,
        )
        solver = self.theta_solver()
        solver.setup(problem, np.random.default_rng(self.options.solver_seeds()[0]))
        return solver


class SelectionOptimizer(_SingleSolverMethod):
    """Algorithm selection only: the z-solver with every hyperparameter at its default.

    One z-solver and one :class:`ZProblem` for the whole run (so multi-fidelity caches stay valid);
    the initial pipeline, evaluated first at full data, is its history and start. ``n_train`` is
    the number of training rows at full fidelity (for multi-fidelity solvers). ``options`` as
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
            start=z0, n_train=self.n_train, batch_size=self.options.batch_size,
        )
        solver = self.z_solver()
        solver.setup(problem, np.random.default_rng(self.options.solver_seeds()[1]))
        return solver
