"""The ADMM loop of Liu et al. (AAAI 2020), Algorithms 1 and 2, free of scikit-learn.

Variables (all on the unit-box encoding of :class:`~admm_automl.space.Encoding`):

* ``z`` — one algorithm choice per module;
* ``θ`` — every hyperparameter coordinate; discrete ones are relaxed (θ̃^d);
* ``δ`` — the integer copy of the discrete coordinates (admissible grid values);
* ``λ`` — the multiplier of the coupling θ̃^d = δ; ``ρ`` — the penalty;
* ``μ``, ``u`` — the multipliers and slacks of the black-box constraints (Algorithm 2; the algebra
  is in :mod:`admm_automl.methods.lagrangian`).

One iteration t (:meth:`_ADMMRun.iterate`):

1. θ-step on the active set of z^t: min f̃(z^t, θ) + (ρ/2)‖θ̃^d − b‖² (+ constraint terms),
   b = δ − λ/ρ, solved by the θ-solver, which returns its winner; inactive discrete coordinates
   take the closed form clip(b, 0, 1).
2. δ-step: δ = P_D(θ̃^d + λ/ρ) (nearest admissible value).
3. z-step with θ fixed at θ^{t+1}, solved by the z-solver; each candidate's constraint term at
   its own optimal slack u (below).
4. Dual step: λ ← λ + ρ(θ̃^d − δ); μ ← μ + ρ(g − 1 + u) at the new iterate, u its optimal slack:
   μ ← max(0, μ + ρ(g − 1)).

The slack in the z-step. Liu et al. (2020, eq. A32) fix u at the θ-step winner's. When that
winner is over a limit its slack is 0, and the z-step's term (ρ/2)(g − 1 + μ/ρ)² is then
two-sided: it charges a candidate well inside the limit as much as one over it (at μ = 0, a
pipeline at a tenth of the limit as much as one at 1.9 times it), and the dual step at that u
lowers μ below 0 after a feasible choice, which rewards violation in the steps after (60 s
fairness runs went to μ = −0.10). Minimising u with z, in closed form as the θ-step does per
evaluation, keeps the term one-sided and μ ≥ 0: the augmented Lagrangian of an inequality
constraint (Rockafellar 1973).

Sub-solvers run ``I_t`` new evaluations per call: fixed ``I`` or adaptive ``min(I0 + F·t, Imax)``
(AdADMM-F, §5 of the paper), capped, when the schedule has a ``share``, at that share of the
evaluations the budget has left (:meth:`~admm_automl.methods.driver.Schedule.capped`): Liu et
al. ran for an hour and more, and at 20-60 evaluations a first θ-step of 16 would come before any
z-step. The incumbent is the best observation over *all* full-fidelity evaluations, not only the
iterates.

A warm start (a portfolio of configurations found good across datasets) enters the loop, not
before it: after the initial point its configurations set θ's values for their algorithms
(θ^1, a θ-step done offline) and iteration 0 is the z-step alone, whose solver places their
pipelines where its method puts a start; a configuration θ cannot hold beside another is
evaluated at its own values after that z-step, before the first θ-step. Every full-data
evaluation of a z-step joins its pipeline's θ-history, so a θ-step starts from the portfolio's
observation of its pipeline. With constraints, the warm start's pipelines that the evaluations
so far show far over a limit wait behind the others
(:meth:`~admm_automl.constraints.ranking.Constraints.evidence_order`), and a pipeline that met
every limit only on a subsample is confirmed on all rows while no full-data evaluation meets them
(:meth:`_ADMMRun._confirm_feasible`).

With several workers the sub-solvers evaluate in parallel, in batches (each step waits for its
slowest trial, so the δ-, z- and dual steps see what a sequential run sees) or asynchronously
(``RunOptions.asynchronous``: a step ends once its evaluations are submitted and at most half
are still running, :data:`~admm_automl.solvers.loop.OVERLAP_TAIL`; the rest are recorded, and
told to the solvers that live on, when they end). Liu et al. (2020) write the loop sequentially;
with one worker the history is the sequential one. What each mode changes is on the
documentation's page of Liu et al. (2020), "Several workers".

The z-step scores every pipeline at θ^{t+1} (the initial θ for an algorithm never tuned), so a
tuned pipeline competes with untuned ones and the iterate can settle on one selection, as block
coordinate descent does; Algorithm 1 has no restart (how often it settles is on the same page).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

import numpy as np

from ..constraints.ranking import Constraints
from .lagrangian import constraint_value, optimal_slack, update_multipliers
from .driver import Engine, Result, RunOptions, Schedule, metric_worst
from ..exceptions import InvalidParameterError
from ..problem import QuadraticPenalty, ThetaProblem, ZProblem
from ..records import Observation, Suggestion
from ..space.encoding import Encoding

__all__ = ["ADMMOptimizer", "ADMMState", "Schedule"]


@dataclass
class ADMMState:
    """The iterate (z, θ, δ, λ, μ, u) after iteration ``t``, and the observation of (z, θ)."""

    z: tuple[int, ...]
    theta: np.ndarray
    delta: np.ndarray
    lam: np.ndarray
    mu: np.ndarray
    u: np.ndarray
    current: Observation | None = None
    t: int = 0

    def copy(self) -> "ADMMState":
        return replace(self, theta=self.theta.copy(), delta=self.delta.copy(),
                       lam=self.lam.copy(), mu=self.mu.copy(), u=self.u.copy())


class ADMMOptimizer:
    """Alternate the θ-, δ- and z-steps until a budget runs out.

    Parameters
    ----------
    encoding : Encoding
        The (z, θ) bookkeeping of the search space.
    engine : callable
        ``engine(requests, time_left=..., tags=...) -> list[Observation]``, the black box.
    theta_solver, z_solver : callable
        Factories returning a fresh solver instance. A θ-solver is created per θ-step, unless its
        class sets ``keeps_state``: then one instance per algorithm selection z is kept and given
        the new problem (``update_problem``) when ADMM returns to z. One z-solver lives for the
        whole run, so bandit statistics persist.
    rho : float
        ADMM penalty ρ > 0 (the paper uses 1).
    n_train : int, optional
        Training rows at full fidelity, passed to z-problems for multi-fidelity solvers.
    warm_start : sequence of (z, θ), optional
        Configurations found good elsewhere (a warm-start portfolio,
        :mod:`admm_automl.space.portfolio`): after the initial one they set θ's values for their
        algorithms, and iteration 0 is a z-step among their pipelines (the z-solver places them
        where its method puts a start); one θ cannot hold beside another is the first point of
        its pipeline's θ-step.
    **options
        The run's :class:`~admm_automl.methods.driver.RunOptions` (budgets, seed, schedule,
        constraints — ``constraint_mode`` ``"admm"`` by default —, callback, batch size, clock).
    """

    def __init__(self, encoding: Encoding, engine: Engine, theta_solver: Callable[[], Any],
                 z_solver: Callable[[], Any], *, rho: float = 1.0, n_train: int | None = None,
                 warm_start: Sequence[tuple[tuple[int, ...], np.ndarray]] = (),
                 **options: Any) -> None:
        if not rho > 0:
            raise InvalidParameterError(f"rho must be > 0, got {rho!r}")
        self.options = RunOptions(**options)
        self.encoding = encoding
        self.engine = engine
        self.theta_solver = theta_solver
        self.z_solver = z_solver
        self.rho = float(rho)
        self.n_train = n_train
        self.warm_start = [(encoding.check_z(z), encoding.project(np.asarray(theta, dtype=float)))
                           for z, theta in warm_start]
        opts = self.options
        self.constraints = Constraints(opts.constraints, opts.constraint_mode or "admm",
                                       opts.penalty_weight)

    def run(self) -> Result:
        return _ADMMRun(self).run()


class _ADMMRun:
    """The state of one run of :class:`ADMMOptimizer`."""

    def __init__(self, method: ADMMOptimizer) -> None:
        enc = method.encoding
        self.method, self.options = method, method.options
        self.encoding = enc
        self.rho = method.rho
        self.constraints = method.constraints
        self.recorder = self.options.recorder(enc, method.engine, self.constraints)
        theta_seed, z_seed = self.options.solver_seeds()
        self.theta_rng = np.random.default_rng(theta_seed)
        self.z_rng = np.random.default_rng(z_seed)
        # position in δ of each θ coordinate, -1 for continuous ones
        self.dpos = np.full(enc.theta_dim, -1)
        self.dpos[enc.discrete] = np.arange(int(enc.discrete.sum()))
        # every θ-step observation per algorithm selection: the warm start of later θ-steps
        self.theta_history: dict[tuple[int, ...], list[tuple[np.ndarray, Observation]]] = {}
        self.z_solver: Any = None
        #: the sub-solver whose ``run`` is under way (None between them)
        self.running: Any = None
        #: ``(solver, suggestion, observation)``: answers recorded while another solver ran
        self.late: list[tuple[Any, Suggestion, Observation]] = []
        # one θ-solver per algorithm selection, for solvers that keep their state (``keeps_state``)
        self.theta_solvers: dict[tuple[int, ...], Any] = {}
        theta = enc.project(enc.initial_theta)
        m = len(self.constraints)
        self.state = ADMMState(
            z=enc.check_z(enc.initial_z), theta=theta, delta=theta[enc.discrete].copy(),
            lam=np.zeros(int(enc.discrete.sum())), mu=np.zeros(m), u=np.ones(m),
        )
        self.states: list[ADMMState] = []
        #: evaluated sub-solver suggestions: [by the solvers' own rules, cheap (overhead-aware)]
        self.proposals = [0, 0]
        #: the warm start, once merged into θ (:meth:`_merge_warm_start`)
        self.warm_arms: list[tuple[int, ...]] = []
        self.warm_points: dict[tuple[int, ...], list[np.ndarray]] = {}
        #: pipelines confirmed on all rows after a subsample showed them feasible
        self.confirmed: set[tuple] = set()

    def run(self) -> Result:
        self._set_mu(self.state.mu)
        trace, stop = self.options.drive(self.recorder, self.iterate, self.summarize,
                                         self.evaluate_initial, "ADMM")
        rec = self.recorder
        return Result(rec.incumbent, trace, rec.evaluated, rec.n_evals, stop, self.states)

    def evaluate_initial(self) -> None:
        """The initial point (z^0, θ^0); then the warm start joins θ (:meth:`_merge_warm_start`)
        for the first z-step."""
        s, enc = self.state, self.encoding
        (obs,) = self.recorder.evaluate([(s.z, s.theta, 1.0)], "initial")
        if not obs.cached:
            self.theta_history.setdefault(s.z, []).append((s.theta[enc.active(s.z)].copy(), obs))
        s.current = obs
        self._merge_warm_start()

    def _merge_warm_start(self) -> None:
        """The warm start's configurations (a portfolio learned across datasets) become the
        first z-step's pipelines and the first θ-steps' initial points.

        θ holds one value per hyperparameter of every algorithm, so a configuration whose
        algorithms' values θ does not hold yet sets them: its pipeline is then one choice of z at
        θ, for the z-solver to take or leave (``warm_arms``). A configuration whose values
        disagree with those already set (a second one of the same learner, or of a scaler with
        other settings) is kept for the θ-step of its pipeline (``warm_points``), which
        evaluates it first. The initial pipeline's values stay: it is evaluated at them.
        """
        s, enc = self.state, self.encoding
        claimed = np.zeros(enc.theta_dim, dtype=bool)
        claimed[enc.active(s.z)] = True
        for z, theta in self.method.warm_start:
            active = enc.active(z)
            held = active[claimed[active]]
            if z != s.z and z not in self.warm_arms and np.allclose(theta[held], s.theta[held]):
                s.theta[active] = theta[active]
                claimed[active] = True
                self.warm_arms.append(z)
            else:
                self.warm_points.setdefault(z, []).append(theta[active].copy())
        s.delta = s.theta[enc.discrete].copy()

    def _warm_left(self) -> list[tuple[int, ...]]:
        """The warm start's pipelines not yet evaluated at the current θ (at any fidelity: a
        probe whose full fit was refused has been tried), in the order the constraints'
        evidence so far gives them (:meth:`Constraints.evidence_order`)."""
        enc, theta = self.encoding, self.state.theta
        done = {e.z for e in self.recorder.evaluated
                if np.array_equal(e.theta[enc.active(e.z)], theta[enc.active(e.z)])}
        left = [z for z in self.warm_arms if z not in done]
        return self.constraints.evidence_order(left, self.recorder.observations())

    def iterate(self, n: int) -> None:
        """One ADMM iteration with up to ``n`` new evaluations per sub-problem (fewer when the
        schedule is sized to the budget: :meth:`Schedule.capped`). With a warm start, iteration
        0 is its z-step: θ^1 is the warm start's θ (a θ-step done offline, across datasets), and
        the z-solver chooses among its pipelines and the rest (:meth:`z_step`)."""
        s = self.state
        s.t = self.recorder.iteration
        self._confirm_feasible()
        if s.t > 0 or not self.warm_arms:
            self._evaluate_warm_points()
            self.theta_step(self._size(n))
            self.delta_step()
        warm = s.t == 0 and bool(self.warm_arms)
        size = (min(self._size(n), max(len(self.warm_arms), self.options.batch_size)) if warm
                else self._size(n))
        s.z, chosen = self.z_step(size, warm)
        self.dual_step(chosen)
        s.current = chosen
        self.states.append(s.copy())

    def _confirm_feasible(self) -> None:
        """While no evaluation on all rows meets every constraint, the best pipeline that met
        them on a subsample (a probe on large data, a multi-fidelity z-solver's lower level) is
        evaluated on all rows, with all the time left if it needs it (``confirm``), when its
        subsample's duration scaled to all rows fits in that time. A pipeline that only a
        subsample showed feasible can never be the result (a subsample's loss is not
        comparable), so without this a fairness limit that a mitigated pipeline meets could be
        missed for want of a full fit. Each pipeline is confirmed at most once."""
        if not len(self.constraints):
            return
        feasible, enc = self.constraints.feasible, self.encoding
        found = [e for e in self.recorder.evaluated if feasible(e.observation)]
        if any(e.observation.fidelity >= 1.0 for e in found):
            return

        def key(e: Any) -> tuple:
            return e.z, tuple(np.round(e.theta[enc.active(e.z)], 9).tolist())

        found = [e for e in found if key(e) not in self.confirmed]
        if not found:
            return
        best = min(found, key=lambda e: (e.observation.loss, -e.observation.fidelity))
        self.confirmed.add(key(best))
        obs, left = best.observation, self.recorder.budget.time_left()
        if left is not None and obs.duration / max(obs.fidelity, 1e-3) > left:
            return
        (full,) = self.recorder.evaluate([(best.z, best.theta, 1.0)], "confirm",
                                         tags={"confirm": True, "solver": ""})
        if not full.cached:
            self.theta_history.setdefault(best.z, []).append(
                (best.theta[enc.active(best.z)].copy(), full))

    def _size(self, n: int) -> int:
        """The evaluations of one sub-problem call: ``n`` capped by the schedule's share of
        what the budget has left (:meth:`Schedule.capped`); the warm start's z-step makes at
        most as many as the warm start has pipelines (:meth:`iterate`), so that the
        z-solver's exploration of pipelines at their untuned θ waits for the evidence of the
        warm start and the first θ-step (on small data a 60 s run makes about 20 evaluations,
        and a first z-step of 16 — the warm start, then 9 pulls of learners at their defaults
        — left the θ-steps 1 to 5 of them: test AUROC 0.004-0.008 below on 5 of the 20
        datasets of the three-seed campaign)."""
        return self.options.schedule.capped(n, self.recorder.evaluations_left())

    def _tag_solver(self, solver: Any) -> None:
        """Write the solver that makes the next evaluations into their journal records."""
        self.recorder.tags["solver"] = getattr(solver, "name", "") or type(solver).__name__

    # ------------------------------------------------------------------ the four steps
    def theta_step(self, n: int) -> None:
        """θ^{t+1}: the θ-solver on the active set; inactive discrete coordinates in closed form.
        When z has no hyperparameters (Gaussian naive Bayes), the θ-solver tunes those of the best
        selection that has some, so that the next z-step has new points to try."""
        s, enc, rho = self.state, self.encoding, self.rho
        b = s.delta - s.lam / rho
        inactive = np.setdiff1d(np.flatnonzero(enc.discrete), enc.active(s.z))
        s.theta[inactive] = np.clip(b[self.dpos[inactive]], 0.0, 1.0)
        z = s.z
        active = enc.active(z)
        if len(active) == 0:  # else the z-step, with θ fixed, soon has nothing new to try
            z = self._best_tunable()
            if z is None:
                return
            active = enc.active(z)
        theta = s.theta.copy()
        length = enc.training_length(z)  # of the iterative learner of z, if it has one
        dpos = self.dpos[active]
        is_d = dpos >= 0

        penalty = QuadraticPenalty(rho, is_d, b[dpos[is_d]])

        def augment(x: np.ndarray, obs: Observation) -> float:
            return obs.loss + penalty(x) + constraint_value(self.constraints, obs, s.mu, rho)

        def point(sug: Suggestion) -> tuple:
            full = theta.copy()
            full[active] = np.clip(np.asarray(sug.config, dtype=float), 0.0, 1.0)
            return ((z, full, 1.0 if sug.fidelity is None else sug.fidelity)
                    + (() if sug.iterations is None else (sug.iterations,)))

        asked_by: list[Any] = []  # the solver, once chosen below

        def done(sug: Suggestion, obs: Observation) -> None:
            self._count([sug])
            self.theta_history.setdefault(z, []).append((np.array(sug.config), obs))
            if asked_by and getattr(asked_by[0], "keeps_state", False):
                self._answered_elsewhere(asked_by[0], sug, obs)

        def config(p: tuple) -> np.ndarray | None:  # the pipeline of z is set by θ[active]
            return p[1][active] if p[0] == z else None

        def evaluate(suggestions: Sequence[Suggestion]) -> list[Observation]:
            observations = self.recorder.evaluate([point(sug) for sug in suggestions], "theta")
            for sug, obs in zip(suggestions, observations):
                done(sug, obs)
            return observations

        problem = ThetaProblem(
            dim=len(active), evaluate=evaluate, augment=augment, penalty=penalty,
            discrete=is_d, names=tuple(enc.theta_names[i] for i in active),
            history=list(self.theta_history.get(z, [])), start=theta[active].copy(),
            batch_size=self.options.batch_size, low_cost=enc.low_cost[active].copy(),
            grids=tuple(enc.grids[i] for i in active),
            training_length=None if length is None else lambda x: length,
            **self.options.loop_fields(self.recorder),
            **self.options.asynchronous_hooks(self.recorder, "theta", point, done, config),
        )
        solver = self.theta_solvers.get(z)
        if solver is None:
            solver = self.method.theta_solver()
        self._tag_solver(solver)
        if self.theta_solvers.get(z) is not solver:
            solver.setup(problem, self.theta_rng)
            if getattr(solver, "keeps_state", False):
                self.theta_solvers[z] = solver
        else:  # back at z with a solver that keeps its state: the new duals, history and start
            solver.update_problem(problem)
        asked_by.append(solver)
        if n > 0:
            self._run_solver(solver, n)  # a budget stop ends the run here, the iterate unchanged
        winner = solver.best()
        if winner is not None:
            s.theta[active] = np.clip(np.asarray(winner[0], dtype=float), 0.0, 1.0)
            if z == s.z:
                s.current = winner[1]

    def _evaluate_warm_points(self) -> None:
        """Evaluate the warm start's configurations that θ could not hold
        (:meth:`_merge_warm_start`: a second configuration of a learner) once, each at its own
        values, before the first θ-step; each joins its pipeline's θ-history, so that pipeline's
        θ-steps start from it as from their own observation.

        Why all of them, not only the θ-step's pipeline's: the portfolio is a set, each
        configuration chosen where the others fall short (:mod:`admm_automl.space.portfolio`),
        and with the ensemble it is what a short run on small data lives on. With each
        kept for its own pipeline's θ-step, a 60 s run on a few hundred rows (~16 evaluations)
        evaluated at most one of them, and its test AUROC fell below the run that evaluated
        the whole warm start on 5 of the 8 smallest shared datasets (experiments/README.md,
        "ADMM at a user's budget")."""
        s, enc = self.state, self.encoding
        points = [(z, x) for z, xs in self.warm_points.items() for x in xs]
        self.warm_points.clear()
        if not points:
            return
        requests = []
        for z, x in points:
            theta = s.theta.copy()
            theta[enc.active(z)] = x
            requests.append((z, theta, 1.0))
        observations = self.recorder.evaluate(requests, "theta", tags={"solver": "warm start"})
        for (z, x), obs in zip(points, observations):
            if not obs.cached:
                self.theta_history.setdefault(z, []).append((x.copy(), obs))

    def _best_tunable(self) -> tuple[int, ...] | None:
        """The best evaluated algorithm selection (full data, by the constraints' rank) that has
        hyperparameters to tune, or None."""
        enc, rank = self.encoding, self.constraints.rank
        tunable = [e for e in self.recorder.evaluated
                   if e.observation.fidelity >= 1.0 and len(enc.active(e.z))]
        return min(tunable, key=lambda e: rank(e.observation)).z if tunable else None

    def delta_step(self) -> None:
        """δ^{t+1} = P_D(θ̃^d + λ/ρ): the nearest admissible values."""
        s, enc = self.state, self.encoding
        s.delta = enc.project(s.theta[enc.discrete] + s.lam / self.rho,
                              np.flatnonzero(enc.discrete))

    def z_step(self, n: int, warm: bool = False) -> tuple[tuple[int, ...], Observation | None]:
        """z^{t+1}: the z-solver with θ fixed, each candidate at its optimal slack (module
        docstring); returns its winner. With
        ``warm`` (the first z-step of a run with a warm start) its problem's ``warm_start`` is
        the warm start's pipelines not yet evaluated (:meth:`_warm_left`), which the z-solver
        places where its method puts a start."""
        s, enc = self.state, self.encoding
        theta, mu = s.theta.copy(), s.mu

        def point(sug: Suggestion) -> tuple:
            return (enc.check_z(sug.config), theta, 1.0 if sug.fidelity is None else sug.fidelity)

        def done(sug: Suggestion, obs: Observation) -> None:
            # a full-data evaluation of z at θ is one of z's θ-problem too: the warm start of
            # its θ-steps, as the portfolio's were the θ-solver's own observations before
            self._count([sug])
            if obs.fidelity >= 1.0 and not obs.cached:
                z = enc.check_z(sug.config)
                self.theta_history.setdefault(z, []).append((theta[enc.active(z)].copy(), obs))
            self._answered_elsewhere(self.z_solver, sug, obs)

        def evaluate(suggestions: Sequence[Suggestion]) -> list[Observation]:
            observations = self.recorder.evaluate([point(sug) for sug in suggestions], "z")
            for sug, obs in zip(suggestions, observations):
                done(sug, obs)
            return observations

        def config(p: tuple) -> tuple[int, ...] | None:  # z's pipeline at this θ
            active = enc.active(p[0])
            return p[0] if np.array_equal(p[1][active], theta[active]) else None

        def augment(zc: tuple[int, ...], obs: Observation) -> float:
            # with θ fixed the coupling penalty does not depend on z; u at its optimum
            return obs.loss + constraint_value(self.constraints, obs, mu, self.rho)

        problem = ZProblem(
            n_choices=enc.n_choices, evaluate=evaluate, augment=augment,
            module_names=enc.module_names, choice_names=enc.choice_names,
            history=[(s.z, s.current)] if s.current is not None else [], start=s.z,
            n_train=self.method.n_train, batch_size=self.options.batch_size,
            observations=self.recorder.observations,
            **self.options.loop_fields(self.recorder),
            warm_start=self._warm_left if warm else None,
            metric_worst=metric_worst(self.method.engine),
            **self.options.asynchronous_hooks(self.recorder, "z", point, done, config),
        )
        if self.z_solver is None:
            self.z_solver = self.method.z_solver()
            self.z_solver.setup(problem, self.z_rng)
        else:
            self.z_solver.update_problem(problem)
        self._tag_solver(self.z_solver)
        self._run_solver(self.z_solver, n)
        best = self.z_solver.best()
        return (enc.check_z(best[0]), best[1]) if best is not None else (s.z, s.current)

    def dual_step(self, chosen: Observation | None) -> None:
        """λ ← λ + ρ(θ̃^d − δ); in ADMM mode, μ ← μ + ρ(g(z^{t+1}, θ^{t+1}) − 1 + u) with u
        the chosen point's optimal slack (so μ stays ≥ 0; module docstring)."""
        s, enc, rho = self.state, self.encoding, self.rho
        s.lam = s.lam + rho * (s.theta[enc.discrete] - s.delta)
        if len(self.constraints) and self.constraints.mode == "admm" and chosen is not None:
            g = self.constraints.g(chosen)
            s.u = optimal_slack(g, s.mu, rho)
            self._set_mu(update_multipliers(s.mu, g, s.u, rho))

    def _run_solver(self, solver: Any, n: int) -> None:
        """``solver.run(n)``, after telling it the answers to its earlier trials that another
        step's call recorded (:meth:`_answered_elsewhere`)."""
        late, self.late = self.late, []
        for owner, sug, obs in late:
            if owner is not solver:
                self.late.append((owner, sug, obs))
            elif sug.id in solver.pending_:
                solver.tell(sug, obs)
        self.running = solver
        try:
            solver.run(n)
        finally:
            self.running = None

    def _answered_elsewhere(self, solver: Any, sug: Suggestion, obs: Observation) -> None:
        """An answer to a trial ``solver`` (one that lives on: the z-solver, a θ-solver that
        keeps its state) left in flight, recorded while another step's call ran: kept, and told
        to ``solver`` before its next call. Without it, such a suggestion stayed pending in its
        solver for good — at 64 workers 300 of cmab's pulls after 11 z-steps, each counted as a
        pull of reward 0 and never proposed again."""
        if solver is not None and self.running is not solver:
            self.late.append((solver, sug, obs))

    def _count(self, suggestions: Sequence[Suggestion]) -> None:
        for sug in suggestions:
            self.proposals[bool(sug.cheap)] += 1

    def _set_mu(self, mu: np.ndarray) -> None:
        self.state.mu = mu
        self.recorder.tags = {f"mu:{k}": float(m) for k, m in zip(self.constraints.keys, mu)}

    # ------------------------------------------------------------------ trace
    def summarize(self, n: int) -> dict[str, Any]:
        """The trace row of the current iteration, from the state."""
        s, enc = self.state, self.encoding
        row = self.recorder.row(n)
        row["rho"] = self.rho
        row["primal_residual"] = float(np.linalg.norm(s.theta[enc.discrete] - s.delta))
        row["lambda_norm"] = float(np.linalg.norm(s.lam))
        row["solver_proposals"], row["cheap_proposals"] = self.proposals
        for key, u_m, mu_m in zip(self.constraints.keys, s.u, s.mu):
            row[f"u:{key}"] = float(u_m)
            row[f"mu:{key}"] = float(mu_m)
        return row
