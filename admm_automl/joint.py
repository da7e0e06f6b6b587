"""Baselines without the ADMM split: one optimiser over the joint space (JOPT), and algorithm
selection alone with the hyperparameters fixed at their defaults (seed 000's experiment).

Both reuse :class:`~admm_automl.admm.ADMMOptimizer`'s budget accounting, evaluation path and
incumbent tracking (``_evaluate``), so their histories, traces and results are directly comparable
with ADMM's. Like the ADMM loop they are free of scikit-learn.
"""

from __future__ import annotations

import logging
from typing import Any, Sequence

import numpy as np

from .admm import ADMMOptimizer, ADMMResult
from .exceptions import BudgetExhausted
from .problem import ThetaProblem, ZProblem
from .records import Observation, Suggestion

logger = logging.getLogger(__name__)


class _LoopMixin:
    """The loop shared by the two baselines (run state comes from ``ADMMOptimizer._start``)."""

    def _value(self, obs: Observation) -> float:
        """Sub-problem value without the split: the loss plus ``penalty_weight`` × the total
        constraint violation (no multipliers: there is no dual update without ADMM)."""
        if not getattr(self, "constraints", ()) or self.constraint_mode == "filter":
            return obs.loss
        return obs.loss + self.penalty_weight * self.violation(obs)

    def _row(self, theta: np.ndarray, n: int) -> dict[str, Any]:
        disc = self.encoding.discrete
        lam = np.zeros(int(disc.sum()))
        u = np.ones(len(getattr(self, "constraints", ())))
        return self._trace_row(theta, theta[disc], lam, n, u)

    def _loop(self, solver: Any, current: Any) -> ADMMResult:
        """Call ``solver.run(schedule(t))`` until a budget, the callback or exhaustion stops it.

        ``current()`` returns the ``(z, θ)`` of the solver's best point, for the trace.
        """
        trace: list[dict[str, Any]] = []
        states: list[dict[str, Any]] = []
        stop_reason = "budget"
        try:
            while True:
                self._new_in_iteration = 0
                n = self.schedule(self.iteration)
                solver.run(n)
                z, theta = current()
                row = self._row(theta, n)
                trace.append(row)
                states.append({"z": z, "theta": theta.copy()})
                logger.info(
                    "%s iter %d: best loss %.5g, evals %d", type(self).__name__,
                    row["iteration"], row["best_loss"], row["n_evals"],
                )
                stop = self._end_iteration(row)
                if stop:
                    stop_reason = stop
                    break
        except BudgetExhausted as stop:
            stop_reason = str(stop) or "budget"
            if not trace or trace[-1]["iteration"] != self.iteration:
                z, theta = current()
                trace.append(self._row(theta, self.schedule(self.iteration)))
        return ADMMResult(
            incumbent=self.incumbent,
            trace=trace,
            evaluated=self.evaluated,
            n_evals=self.n_evals,
            stop_reason=stop_reason,
            states=states,
        )


class JointOptimizer(_LoopMixin, ADMMOptimizer):
    """JOPT: one θ-solver over the whole joint space (seed 001 §5.4, the baseline of the split).

    The joint unit box has one relaxed categorical coordinate per module — choice k of K at
    k/(K − 1), exactly like a categorical hyperparameter — followed by every θ coordinate of every
    algorithm (the inactive ones included: that is the difficulty the ADMM split removes). A point
    decodes to ``(z, θ)`` by rounding the module coordinates and is evaluated at full fidelity
    through the same engine and budget as ADMM. The θ-solver (a factory, as for ADMM) lives for the
    whole run and is driven in chunks of ``schedule(t)`` evaluations, one trace row per chunk.

    Takes the same arguments as :class:`ADMMOptimizer`; ``z_solver`` and ``rho`` are unused.
    """

    def __init__(self, encoding, engine, theta_solver, z_solver=None, **kwargs: Any) -> None:
        super().__init__(encoding, engine, theta_solver, z_solver, **kwargs)

    @property
    def dim(self) -> int:
        return len(self.encoding.n_choices) + self.encoding.theta_dim

    def encode(self, z: Sequence[int], theta: np.ndarray) -> np.ndarray:
        """The joint point of ``(z, θ)``."""
        units = [j / (k - 1) if k > 1 else 0.0 for j, k in zip(z, self.encoding.n_choices)]
        return np.concatenate([np.array(units, dtype=float), np.asarray(theta, dtype=float)])

    def decode(self, x: np.ndarray) -> tuple[tuple[int, ...], np.ndarray]:
        """``(z, θ)`` of a joint point (module coordinates rounded to the nearest choice)."""
        x = np.clip(np.asarray(x, dtype=float), 0.0, 1.0)
        m = len(self.encoding.n_choices)
        z = tuple(
            int(np.rint(x[i] * (k - 1))) if k > 1 else 0
            for i, k in enumerate(self.encoding.n_choices)
        )
        return z, x[m:].copy()

    def run(self) -> ADMMResult:
        enc = self.encoding
        self._start()
        m = len(enc.n_choices)
        z0 = enc.check_z(enc.initial_z)
        theta0 = enc.project(enc.initial_theta)
        x0 = self.encode(z0, theta0)

        def evaluate(suggestions: Sequence[Suggestion]) -> list[Observation]:
            points = [
                (*self.decode(s.config), 1.0 if s.fidelity is None else s.fidelity)
                for s in suggestions
            ]
            return self._evaluate(points, "joint")

        def augment(x: np.ndarray, obs: Observation) -> float:
            return self._value(obs)

        def current() -> tuple[tuple[int, ...], np.ndarray]:
            if self.incumbent is not None:
                return self.incumbent.z, self.incumbent.theta.copy()
            return z0, theta0.copy()

        try:
            (first,) = self._evaluate([(z0, theta0, 1.0)], "initial")
        except BudgetExhausted as stop:
            return ADMMResult(self.incumbent, [], self.evaluated, self.n_evals, str(stop))
        problem = ThetaProblem(
            dim=self.dim,
            evaluate=evaluate,
            augment=augment,
            penalty=lambda x: 0.0,
            discrete=np.concatenate([np.ones(m, dtype=bool), enc.discrete]),
            names=tuple(f"module:{name}" for name in enc.module_names) + tuple(enc.theta_names),
            history=[(x0, first)],
            start=x0.copy(),
            batch_size=self.batch_size,
        )
        solver = self.theta_solver()
        solver.setup(problem, self.theta_rng)
        return self._loop(solver, current)


class SelectionOptimizer(_LoopMixin, ADMMOptimizer):
    """Algorithm selection only: the z-solver with θ fixed at the defaults (seed 000's setting).

    Every hyperparameter stays at its default (the space's initial θ, projected); the z-solver
    (one instance, one :class:`ZProblem` for the whole run, so multi-fidelity caches stay valid)
    is driven in chunks of ``schedule(t)`` asks until a budget ends. The initial pipeline is
    evaluated first at full data, as in ADMM, and is the z-problem's history and start.

    Takes the same arguments as :class:`ADMMOptimizer`; ``theta_solver`` and ``rho`` are unused.
    """

    def __init__(self, encoding, engine, theta_solver=None, z_solver=None, **kwargs: Any) -> None:
        super().__init__(encoding, engine, theta_solver, z_solver, **kwargs)

    def run(self) -> ADMMResult:
        enc = self.encoding
        self._start()
        z0 = enc.check_z(enc.initial_z)
        theta = enc.project(enc.initial_theta)
        evaluate = self._z_evaluator(theta)

        def augment(z: tuple[int, ...], obs: Observation) -> float:
            return self._value(obs)

        def current() -> tuple[tuple[int, ...], np.ndarray]:
            z = self.incumbent.z if self.incumbent is not None else z0
            return z, theta.copy()

        try:
            (first,) = self._evaluate([(z0, theta, 1.0)], "initial")
        except BudgetExhausted as stop:
            return ADMMResult(self.incumbent, [], self.evaluated, self.n_evals, str(stop))
        problem = ZProblem(
            n_choices=enc.n_choices,
            evaluate=evaluate,
            augment=augment,
            module_names=enc.module_names,
            choice_names=enc.choice_names,
            history=[(z0, first)],
            start=z0,
            n_train=self.n_train,
            batch_size=self.batch_size,
        )
        solver = self.z_solver()
        solver.setup(problem, self.z_rng)
        self._z_solver_instance = solver
        return self._loop(solver, current)


#: optimiser class of each ``method`` of the estimator
OPTIMIZERS = {"admm": ADMMOptimizer, "jopt": JointOptimizer, "select": SelectionOptimizer}
