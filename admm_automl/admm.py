"""The ADMM outer loop of seed 001 (Algorithm 1), free of scikit-learn.

Variables (all on the unit-box encoding of :class:`~admm_automl.space.Encoding`):

* ``z`` — one algorithm choice per module;
* ``θ`` — every hyperparameter coordinate; discrete ones are relaxed (θ̃^d);
* ``δ`` — the integer copy of the discrete coordinates (admissible grid values);
* ``λ`` — the multiplier of the coupling θ̃^d = δ; ``ρ`` — the penalty.

One iteration t:

1. θ-min on the active set of z^t: min f̃(z^t, θ) + (ρ/2)‖θ̃^d − b‖², b = δ − λ/ρ, solved by the
   θ-solver; inactive discrete coordinates take the closed form clip(b, 0, 1).
2. δ-min: δ = P_D(θ̃^d + λ/ρ) (nearest admissible value).
3. z-min with θ fixed at θ^{t+1}, solved by the z-solver.
4. λ ← λ + ρ(θ̃^d − δ).

Sub-solvers run ``I_t`` evaluations per call: fixed ``I`` or adaptive ``min(I0 + F·t, Imax)``
(seed 001 §5, AdADMM-F). The incumbent is the best observation over *all* full-fidelity
evaluations, not only the iterates.

Black-box constraints (seed 001 Algorithm 2). Each constraint ``value ≤ t`` (or ``≥ t``) is made
unit-free, ``h = (value − t) / |t|`` (``(t − value) / |t|`` for ``≥``; ``|t| = 1`` when t = 0), so
that ρ weighs a latency in seconds and an AUROC gap alike, and written in the paper's form
``g ≤ ε`` with ``g = max(h + 1, 0)`` and ``ε = 1``. With slack ``u ∈ [0, ε]`` and multiplier μ:

* θ-min adds (ρ/2) Σ (g − ε + u + μ/ρ)² with, per evaluation, the optimal slack in closed form
  ``u = clip(ε − g − μ/ρ, 0, ε)`` (the paper searches u with BO; the closed form is exact);
* z-min adds the same term with u fixed at the θ-min winner's slack u^{t+1};
* μ ← μ + ρ (g(z^{t+1}, θ^{t+1}) − ε + u^{t+1}).

A failed evaluation has no constraint values; it counts as violating each constraint by 100 %
(h = 1). ``constraint_mode="penalty"`` replaces the ADMM terms by a fixed-weight penalty
``w Σ max(h, 0)``; ``"filter"`` ignores constraints during the search (both for comparisons). In
every mode the incumbent is the best *feasible* observation, or the least violating one.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from .exceptions import BudgetExhausted, InvalidParameterError
from .problem import ThetaProblem, ZProblem
from .records import Observation, Request, Suggestion
from .space.encoding import Encoding

logger = logging.getLogger(__name__)

#: ``evaluate(requests, time_left=seconds | None, tags=dict) -> observations``
Engine = Callable[..., list[Observation]]


@dataclass(frozen=True)
class Schedule:
    """Evaluations per sub-problem call: ``min(start + step * t, maximum)`` at ADMM iteration t.

    ``step=0`` is fixed-I ADMM; ``step=8`` or ``16`` with ``maximum=128`` is seed 001's AdADMM-F8/F16.
    """

    start: int = 16
    step: int = 16
    maximum: int = 128

    def __post_init__(self) -> None:
        if self.start < 1 or self.step < 0 or self.maximum < self.start:
            raise InvalidParameterError(
                "the iteration schedule needs start >= 1, step >= 0 and maximum >= start; got "
                f"start={self.start!r}, step={self.step!r}, maximum={self.maximum!r}"
            )

    def __call__(self, t: int) -> int:
        return int(min(self.start + self.step * t, self.maximum))


MISSING_VIOLATION = 1.0  # h of a constraint that could not be measured (failed pipeline)
CONSTRAINT_MODES = ("admm", "penalty", "filter")


@dataclass(frozen=True)
class Bound:
    """A black-box constraint as the ADMM loop sees it: ``value <= threshold`` (or ``>=``)."""

    name: str
    threshold: float
    sense: str = "<="

    def violation(self, value: float | None) -> float:
        """Unit-free violation h (≤ 0 when satisfied)."""
        if value is None or not math.isfinite(value):
            return MISSING_VIOLATION
        scale = abs(self.threshold) or 1.0
        diff = value - self.threshold if self.sense == "<=" else self.threshold - value
        return diff / scale

    def g(self, value: float | None) -> float:
        """The paper's g for ε = 1."""
        return max(self.violation(value) + 1.0, 0.0)

    def __str__(self) -> str:
        return f"{self.name} {self.sense} {self.threshold:g}"


def optimal_slack(g: np.ndarray, mu: np.ndarray, rho: float) -> np.ndarray:
    """argmin over u ∈ [0, 1] of (g − 1 + u + μ/ρ)²: ``clip(1 − g − μ/ρ, 0, 1)``."""
    return np.clip(1.0 - g - mu / rho, 0.0, 1.0)


def constraint_term(g: np.ndarray, u: np.ndarray, mu: np.ndarray, rho: float) -> float:
    """(ρ/2) Σ (g − 1 + u + μ/ρ)²."""
    r = g - 1.0 + u + mu / rho
    return 0.5 * rho * float(r @ r)


def update_multipliers(mu: np.ndarray, g: np.ndarray, u: np.ndarray, rho: float) -> np.ndarray:
    """μ + ρ (g − 1 + u)."""
    return mu + rho * (g - 1.0 + u)


@dataclass
class Evaluated:
    """One observation with the point it was asked at (θ relaxed, as the solver proposed it)."""

    z: tuple[int, ...]
    theta: np.ndarray
    observation: Observation
    phase: str
    admm_iter: int


@dataclass
class ADMMResult:
    incumbent: Evaluated | None
    trace: list[dict[str, Any]]
    evaluated: list[Evaluated]
    n_evals: int
    stop_reason: str
    #: per completed iteration: z, θ (relaxed), δ and λ after the iteration
    states: list[dict[str, Any]] = field(default_factory=list)


class ADMMOptimizer:
    """Alternate θ-min, δ-min and z-min until a budget runs out.

    Parameters
    ----------
    encoding : Encoding
        The (z, θ) bookkeeping of the search space.
    engine : callable
        ``engine(requests, time_left=..., tags=...) -> list[Observation]``, the black box.
    theta_solver, z_solver : callable
        Factories returning a fresh solver instance (a θ-solver is created per θ-min call; one
        z-solver lives for the whole run, so bandit statistics persist).
    rho : float
        ADMM penalty ρ > 0 (seed 001 uses 1).
    schedule : Schedule
        Evaluations per sub-problem call.
    max_evals, time_budget : int or None, float or None
        Stop after this many (non-cached) evaluations / seconds of wall clock, overhead included.
        An evaluation is not started when the time left is below the fastest evaluation so far, and
        the engine stops one that would overrun.
    seed : int or numpy.random.SeedSequence
        Source of the θ- and z-solvers' random streams.
    callback : callable, optional
        Called with each trace row; returning True stops the run.
    constraints : sequence of Bound
        Black-box constraints, measured by the engine into ``observation.constraints[name]``.
    constraint_mode : {"admm", "penalty", "filter"}
        How the search treats them (see the module docstring); ``penalty_weight`` is w.
    max_idle_iterations : int
        Stop when this many consecutive iterations produce no new evaluation (space exhausted).
    batch_size : int
        Suggestions per batch for batch-capable solvers (the number of parallel workers).
    n_train : int, optional
        Training rows at full fidelity, passed to z-problems for multi-fidelity solvers.
    start_time : float, optional
        ``clock()`` value from which the time budget runs (default: the start of ``run``), so a
        caller can count its own set-up, such as starting worker processes.
    """

    def __init__(
        self,
        encoding: Encoding,
        engine: Engine,
        theta_solver: Callable[[], Any],
        z_solver: Callable[[], Any],
        *,
        rho: float = 1.0,
        schedule: Schedule = Schedule(),
        max_evals: int | None = None,
        time_budget: float | None = None,
        seed: "int | np.random.SeedSequence | None" = None,
        callback: Callable[[dict[str, Any]], Any] | None = None,
        constraints: Sequence[Bound] = (),
        constraint_mode: str = "admm",
        penalty_weight: float = 1.0,
        max_idle_iterations: int = 5,
        batch_size: int = 1,
        n_train: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        start_time: float | None = None,
    ) -> None:
        if not rho > 0:
            raise InvalidParameterError(f"rho must be > 0, got {rho!r}")
        if max_evals is None and time_budget is None:
            raise InvalidParameterError("give max_evals or time_budget (or both)")
        if constraint_mode not in CONSTRAINT_MODES:
            raise InvalidParameterError(
                f"constraint_mode must be one of {CONSTRAINT_MODES!r}, got {constraint_mode!r}"
            )
        self.constraints = tuple(constraints)
        self.constraint_mode = constraint_mode
        self.penalty_weight = float(penalty_weight)
        self.encoding = encoding
        self.engine = engine
        self.theta_solver = theta_solver
        self.z_solver = z_solver
        self.rho = float(rho)
        self.schedule = schedule
        self.max_evals = max_evals
        self.time_budget = time_budget
        seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        theta_seq, z_seq = seq.spawn(2)
        self.theta_rng = np.random.default_rng(theta_seq)
        self.z_rng = np.random.default_rng(z_seq)
        self.callback = callback
        self.max_idle_iterations = max_idle_iterations
        self.batch_size = batch_size
        self.n_train = n_train
        self.clock = clock
        self.start_time = start_time

    # ------------------------------------------------------------------ budget + evaluation
    def _time_left(self) -> float | None:
        if self.time_budget is None:
            return None
        return self.time_budget - (self.clock() - self._t0)

    def _evaluate(
        self, points: Sequence[tuple[tuple[int, ...], np.ndarray, float]], phase: str
    ) -> list[Observation]:
        """Evaluate ``(z, θ, fidelity)`` points within the budget; record every observation."""
        if self.max_evals is not None:
            room = self.max_evals - self.n_evals
            if room <= 0:
                raise BudgetExhausted("max_evals")
            points = points[:room]
        time_left = self._time_left()
        if time_left is not None and time_left <= max(self._fastest, 1e-3):
            raise BudgetExhausted("time_budget")
        requests = [Request(z, self.encoding.project(theta), fid) for z, theta, fid in points]
        tags = {"phase": phase, "admm_iter": self.iteration}
        tags.update({f"mu:{b.name}": float(m) for b, m in zip(self.constraints, self.mu)})
        observations = self.engine(requests, time_left=time_left, tags=tags)
        for (z, theta, _), obs in zip(points, observations):
            self.evaluated.append(Evaluated(z, np.array(theta), obs, phase, self.iteration))
            if not obs.cached:
                self.n_evals += 1
                self._new_in_iteration += 1
                if obs.duration > 0:
                    self._fastest = min(self._fastest or obs.duration, obs.duration)
            if obs.fidelity >= 1.0 and (
                self.incumbent is None or self.rank(obs) < self.rank(self.incumbent.observation)
            ):
                self.incumbent = self.evaluated[-1]
        if len(observations) < len(points) or any(o.budget_stop for o in observations):
            raise BudgetExhausted("time_budget")
        return observations

    # ------------------------------------------------------------------ constraints
    def g(self, obs: Observation) -> np.ndarray:
        """The paper's g of every constraint for an observation (ε = 1)."""
        return np.array([b.g(obs.constraints.get(b.name)) for b in self.constraints])

    def violation(self, obs: Observation) -> float:
        """Total violation Σ max(h, 0); 0 means feasible."""
        return float(sum(max(b.violation(obs.constraints.get(b.name)), 0.0) for b in self.constraints))

    def rank(self, obs: Observation) -> tuple:
        """Sort key of observations: feasible ones by loss, then the least violating successful
        ones, then failed ones."""
        if not obs.ok:
            return (2, obs.loss)
        violation = self.violation(obs)
        return (0, obs.loss) if violation == 0.0 else (1, violation, obs.loss)

    def _constraint_value(self, obs: Observation, u: np.ndarray | None) -> float:
        """The constraint part of a sub-problem value (u=None: optimal slack per evaluation)."""
        if not self.constraints or self.constraint_mode == "filter":
            return 0.0
        if self.constraint_mode == "penalty":
            return self.penalty_weight * self.violation(obs)
        g = self.g(obs)
        slack = optimal_slack(g, self.mu, self.rho) if u is None else u
        return constraint_term(g, slack, self.mu, self.rho)

    # ------------------------------------------------------------------ sub-problems
    def _theta_min(self, z: tuple[int, ...], theta: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
        enc = self.encoding
        active = enc.active(z)
        dpos = self._dpos[active]  # position in δ of each active coordinate, -1 if continuous
        is_d = dpos >= 0
        rho = self.rho

        def penalty(x: np.ndarray) -> float:
            diff = np.asarray(x, dtype=float)[is_d] - b[dpos[is_d]]
            return 0.5 * rho * float(diff @ diff)

        def augment(x: np.ndarray, obs: Observation) -> float:
            return obs.loss + penalty(x) + self._constraint_value(obs, None)

        def evaluate(suggestions: Sequence[Suggestion]) -> list[Observation]:
            points = []
            for s in suggestions:
                full = theta.copy()
                full[active] = np.clip(np.asarray(s.config, dtype=float), 0.0, 1.0)
                points.append((z, full, 1.0 if s.fidelity is None else s.fidelity))
            observations = self._evaluate(points, "theta")
            for s, obs in zip(suggestions, observations):
                self._theta_history.setdefault(z, []).append((np.array(s.config), obs))
            return observations

        history = list(self._theta_history.get(z, []))
        problem = ThetaProblem(
            dim=len(active),
            evaluate=evaluate,
            augment=augment,
            penalty=penalty,
            discrete=is_d,
            names=tuple(enc.theta_names[i] for i in active),
            history=history,
            start=theta[active].copy(),
            batch_size=self.batch_size,
        )
        result = theta.copy()
        if len(active) == 0:
            return result
        solver = self.theta_solver()
        solver.setup(problem, self.theta_rng)
        try:
            solver.run(n)
        finally:
            best = solver.best()
            if best is not None:
                result[active] = np.clip(np.asarray(best[0], dtype=float), 0.0, 1.0)
        return result

    def _z_evaluator(self, theta: np.ndarray) -> Callable[[Sequence[Suggestion]], list[Observation]]:
        """``evaluate`` of a z-problem: each suggested z with θ fixed, at its fidelity."""
        enc = self.encoding

        def evaluate(suggestions: Sequence[Suggestion]) -> list[Observation]:
            points = [
                (enc.check_z(s.config), theta, 1.0 if s.fidelity is None else s.fidelity)
                for s in suggestions
            ]
            return self._evaluate(points, "z")

        return evaluate

    def _z_min(
        self, z: tuple[int, ...], theta: np.ndarray, incumbent_obs: Observation | None, n: int,
        u: np.ndarray,
    ) -> tuple[tuple[int, ...], Observation | None]:
        enc = self.encoding
        evaluate = self._z_evaluator(theta)

        def augment(zc: tuple[int, ...], obs: Observation) -> float:
            # With θ fixed the coupling penalty does not depend on z; the constraint terms use
            # the slack u^{t+1} of the θ-min winner.
            return obs.loss + self._constraint_value(obs, u)

        problem = ZProblem(
            n_choices=enc.n_choices,
            evaluate=evaluate,
            augment=augment,
            module_names=enc.module_names,
            choice_names=enc.choice_names,
            history=[(z, incumbent_obs)] if incumbent_obs is not None else [],
            start=z,
            n_train=self.n_train,
            batch_size=self.batch_size,
        )
        if self._z_solver_instance is None:
            self._z_solver_instance = self.z_solver()
            self._z_solver_instance.setup(problem, self.z_rng)
        else:
            self._z_solver_instance.update_problem(problem)
        solver = self._z_solver_instance
        try:
            solver.run(n)
        finally:
            best = solver.best()
            self._z_best = (enc.check_z(best[0]), best[1]) if best is not None else (z, incumbent_obs)
        return self._z_best

    # ------------------------------------------------------------------ main loop
    def _start(self) -> None:
        """Reset the run state: clock, counters, records, histories and multipliers."""
        enc = self.encoding
        self._t0 = self.clock() if self.start_time is None else self.start_time
        self.n_evals = 0
        self.iteration = 0
        self.evaluated: list[Evaluated] = []
        self.incumbent: Evaluated | None = None
        self._fastest = 0.0
        self._new_in_iteration = 0
        self._theta_history: dict[tuple[int, ...], list[tuple[np.ndarray, Observation]]] = {}
        self._z_solver_instance = None
        self._dpos = np.full(enc.theta_dim, -1)
        self._dpos[enc.discrete] = np.arange(int(enc.discrete.sum()))
        self.mu = np.zeros(len(self.constraints))
        self._idle = 0

    def _end_iteration(self, row: dict[str, Any]) -> str | None:
        """After an iteration: the stop reason (callback, or no new evaluation for
        ``max_idle_iterations`` iterations), else advance the iteration counter."""
        if self.callback is not None and self.callback(row):
            return "callback"
        self._idle = self._idle + 1 if self._new_in_iteration == 0 else 0
        if self._idle >= self.max_idle_iterations:
            return "exhausted"
        self.iteration += 1
        return None

    def run(self) -> ADMMResult:
        enc = self.encoding
        self._start()
        rho = self.rho

        z = enc.check_z(enc.initial_z)
        theta = enc.project(enc.initial_theta)
        delta = theta[enc.discrete].copy()
        lam = np.zeros_like(delta)
        u = np.ones(len(self.constraints))
        trace: list[dict[str, Any]] = []
        states: list[dict[str, Any]] = []
        stop_reason = "budget"
        try:
            (first,) = self._evaluate([(z, theta, 1.0)], "initial")
            self._theta_history[z] = [(theta[enc.active(z)].copy(), first)]
            while True:
                self._new_in_iteration = 0
                n = self.schedule(self.iteration)
                # θ-min (active set by the solver, inactive discrete coordinates in closed form)
                b = delta - lam / rho
                inactive = np.setdiff1d(np.flatnonzero(enc.discrete), enc.active(z))
                theta[inactive] = np.clip(b[self._dpos[inactive]], 0.0, 1.0)
                theta = self._theta_min(z, theta, b, n)
                # δ-min: projection onto the admissible integer values
                a = theta[enc.discrete] + lam / rho
                delta = enc.project(a, np.flatnonzero(enc.discrete))
                # slack of the θ-min winner, then z-min with θ (and u) fixed
                current = self._observation_at(z, theta)
                if current is not None:
                    u = optimal_slack(self.g(current), self.mu, rho)
                z, chosen = self._z_min(z, theta, current, n, u)
                # dual updates: λ for the integer coupling, μ for the constraints (ADMM mode)
                lam = lam + rho * (theta[enc.discrete] - delta)
                if self.constraints and self.constraint_mode == "admm" and chosen is not None:
                    self.mu = update_multipliers(self.mu, self.g(chosen), u, rho)
                row = self._trace_row(theta, delta, lam, n, u)
                trace.append(row)
                states.append({
                    "z": z, "theta": theta.copy(), "delta": delta.copy(), "lam": lam.copy(),
                    "u": u.copy(), "mu": self.mu.copy(),
                })
                logger.info(
                    "ADMM iter %d: best loss %.5g, evals %d, |θd-δ| %.3g, |λ| %.3g",
                    row["iteration"], row["best_loss"], row["n_evals"], row["primal_residual"],
                    row["lambda_norm"],
                )
                stop = self._end_iteration(row)
                if stop:
                    stop_reason = stop
                    break
        except BudgetExhausted as stop:
            stop_reason = str(stop) or "budget"
            if not trace or trace[-1]["iteration"] != self.iteration:
                trace.append(self._trace_row(theta, delta, lam, self.schedule(self.iteration), u))
        return ADMMResult(
            incumbent=self.incumbent,
            trace=trace,
            evaluated=self.evaluated,
            n_evals=self.n_evals,
            stop_reason=stop_reason,
            states=states,
        )

    def _observation_at(self, z: tuple[int, ...], theta: np.ndarray) -> Observation | None:
        """The full-fidelity observation of ``z`` at the current θ (the θ-min winner), if any."""
        active = self.encoding.active(z)
        for x, obs in reversed(self._theta_history.get(z, [])):
            if obs.fidelity >= 1.0 and np.array_equal(np.clip(x, 0.0, 1.0), theta[active]):
                return obs
        for item in reversed(self.evaluated):
            if (item.z == z and item.observation.fidelity >= 1.0
                    and np.array_equal(item.theta[active], theta[active])):
                return item.observation
        return None

    def _trace_row(
        self, theta: np.ndarray, delta: np.ndarray, lam: np.ndarray, n: int, u: np.ndarray
    ) -> dict:
        residual = theta[self.encoding.discrete] - delta
        inc = self.incumbent
        row = {
            "iteration": self.iteration,
            "rho": self.rho,
            "primal_residual": float(np.linalg.norm(residual)),
            "lambda_norm": float(np.linalg.norm(lam)),
            "best_loss": inc.observation.loss if inc is not None else math.inf,
            "n_evals": self.n_evals,
            "inner_iter": n,
            "time": self.clock() - self._t0,
        }
        if self.constraints:
            row["feasible_found"] = inc is not None and self.rank(inc.observation)[0] == 0
            for b, u_m, mu_m in zip(self.constraints, u, self.mu):
                row[f"u:{b.name}"] = float(u_m)
                row[f"mu:{b.name}"] = float(mu_m)
        return row
