"""``bapi``: budget-aware planning for iterative learners (Belakaria, Doppa, Fusi and Sheth, 2022).

The solver of the θ-problem of a learner that declares a training length (``iterations`` in the
space): it chooses configurations *and* how long to train them, stops poor ones early and
continues promising ones later. The numerics are :mod:`admm_automl._numerics.bapi`; this module
is the loop of the paper's Algorithm 2 on the ask/tell protocol, over the evaluation engine's
training-length fidelity (learning curves and continuation,
:mod:`admm_automl.evaluation.iterative`). The bookkeeping of the observed learning curves
(:class:`_Curve` and the functions beside it) stays outside the solver class, which only adapts.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, ClassVar

import numpy as np

from ...exceptions import InvalidParameterError, SolverFallbackWarning
from ..._validation import (BOOL, NON_NEGATIVE_NUMBER, POSITIVE_NUMBER, Rule, int_at_least, options,
                            validate_params)
from ...records import Observation, Suggestion
from ..._numerics import gp as _gp
from ..registry import THETA_SOLVERS
from ..._numerics import bapi as _bapi
from ..._numerics.bapi import defaults
from .bo import GPBayesOptThetaSolver

#: cost units: measured training seconds, or trained iterations (deterministic)
COSTS = ("time", "iterations")
#: τ (the horizon's growth) and the share of a training after which stopping is checked
AT_LEAST_ONE = Rule(lambda v: NON_NEGATIVE_NUMBER.accepts(v) and v >= 1, "a number >= 1")
UP_TO_ONE = Rule(lambda v: POSITIVE_NUMBER.accepts(v) and v <= 1, "a number in (0, 1]")


class _Curve:
    """What is known of one configuration: its learning curve (lengths in iterations), the cost
    spent training it so far, the value offset of the constraint terms and its training length."""

    def __init__(self, x: np.ndarray, length: Any) -> None:
        self.x = x
        self.length = length
        self.points: dict[int, float] = {}
        self.cost = 0.0
        self.trained = 0  # the longest training length evaluated (the model the engine may hold)
        self.failed = False  # a training failed: not continued, not a cost example
        self.offset = 0.0

    @property
    def t_max(self) -> int:
        return self.length.t_max if self.length is not None else 1

    def curve(self) -> tuple[np.ndarray, np.ndarray]:
        """Training fractions and running-best values (loss + offset), increasing in t."""
        t = np.array(sorted(self.points), dtype=float)
        y = np.array([self.points[int(k)] for k in t], dtype=float)
        return t / self.t_max, _bapi.running_best(y) + self.offset

    def add(self, obs: Observation, offset: float, cost: str) -> None:
        """Record an observation of this configuration: ``offset`` is the value of its constraint
        terms (augmented value − penalty − loss), ``cost`` the unit (:data:`COSTS`). A cached
        result adds nothing; a failed training marks the curve failed."""
        self.offset = offset if math.isfinite(offset) else 0.0
        t = obs.iterations if obs.iterations is not None else self.t_max
        if obs.cached:
            return
        points = obs.curve if obs.curve and obs.ok else ((t, obs.loss),)
        for length, loss in points:
            self.points[int(length)] = float(loss)
        if not obs.ok:
            self.failed = True
            return
        spent = float(obs.fit_time) if cost == "time" else float(t - obs.continued_from)
        self.cost = (self.cost if obs.continued_from else 0.0) + max(spent, 0.0)
        self.trained = max(self.trained, int(t))


def _merge_curves(records, length, offset, cost: str) -> list[_Curve]:
    """One curve per configuration of ``records`` (pairs ``(x, obs)``, in order) with its
    observations merged; ``length(x)`` is its training length, ``offset(x, obs)`` the value of
    an observation's constraint terms, ``cost`` the unit."""
    curves: list[_Curve] = []
    for x, obs in records:
        x = np.asarray(x, dtype=float)
        curve = _find(curves, x)
        if curve is None:
            curve = _Curve(x, length(x))
            curves.append(curve)
        curve.add(obs, offset(x, obs), cost)
    return curves


def _find(curves: list[_Curve], x: np.ndarray, tol: float = 1e-9) -> _Curve | None:
    """The first curve of a configuration within ``tol`` (Euclidean) of ``x``."""
    for curve in curves:
        if np.linalg.norm(curve.x - x) <= tol:
            return curve
    return None


def _incumbent(curves: list[_Curve], penalty, exclude: _Curve | None = None) -> float | None:
    """Best observed value (loss + constraint terms + ``penalty``) of the curves but ``exclude``."""
    values = [float(c.curve()[1].min()) + float(penalty(c.x)[0])
              for c in curves if c is not exclude and c.points]
    values = [v for v in values if math.isfinite(v)]
    return min(values) if values else None


def _full_cost(curves: list[_Curve], cost: str) -> float:
    """The median predicted cost of training an observed configuration to ``t_max`` (a unit
    placeholder before any training was measured)."""
    rows = [c for c in curves if c.cost > 0 and c.trained > 0 and not c.failed]
    full = _bapi.full_training_cost([c.cost for c in rows], [c.trained / c.t_max for c in rows])
    if full is None:
        return 1.0 if cost == "iterations" else 1e-3
    return full


def _resumable(curves: list[_Curve]) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The configurations whose partly trained models are held, and their training fractions."""
    rows = [c for c in curves if 0 < c.trained < c.t_max and not c.failed]
    if not rows:
        return None, None
    return np.array([c.x for c in rows]), np.array([c.trained / c.t_max for c in rows])


def _cost_examples(curves: list[_Curve]) -> tuple[np.ndarray, ...] | None:
    """GP_c's data: configurations trained without failure, their fractions and costs."""
    rows = [c for c in curves if c.trained > 0 and not c.failed]
    if not rows:
        return None
    return (np.array([c.x for c in rows]),
            np.array([max(c.trained, 1) / c.t_max for c in rows]),
            np.array([c.cost for c in rows]))


@THETA_SOLVERS.register("bapi")
class BAPIThetaSolver(GPBayesOptThetaSolver):
    """BAPI-4 (Belakaria et al. 2022) for the θ-problem of an iterative learner.

    **Models** (:mod:`admm_automl._numerics.bapi`): GP_f over ``(x, t)`` (``t`` the training
    fraction ``iterations / t_max``) with the product kernel ``K_x·K_t`` (ARD Matérn-5/2 ×
    exponential decay) and the monotonicity of the best-so-far loss in ``t`` imposed at virtual
    derivative points (``monotone=False`` is the paper's ablation BAPI-NM, the plain GP); GP_c,
    the cost, linear in ``t`` with a configuration-dependent rate. The GP models the black-box
    part of the ADMM sub-problem: every curve point's value is the loss plus the constraint terms
    of its configuration's latest observation; the known penalty ``problem.penalty(x)`` does not
    depend on ``t`` and is added analytically to every prediction (EI, q-EI, early termination).

    **Loop** (the paper's Algorithm 2), inside ``run(n)``:

    1. an initial design of ``max(3, d + 1)`` configurations (the problem's start first, then
       Sobol' points; configurations already observed count), each trained by step 3 (early
       termination once a model and an incumbent exist);
    2. NMO: a horizon of up to ``h_max`` configurations chosen greedily by Monte Carlo q-EI at
       ``t_max``, each charged the predicted cost of training it to its conservative stopping
       length (the first length whose predicted loss is within ``epsilon`` of the prediction at
       ``t_max``; only the extra iterations for a configuration trained before), while that fits
       in the remaining budget; the member run is the one with the largest EI at its stopping
       length per unit of predicted cost;
    3. Evaluate (Algorithm 5): train to ``p`` iterations (``p = check_fraction · t_max``; a
       configuration trained before is continued from where it stopped), then every ``p`` more,
       re-estimating the stopping length on the model conditioned on the new curve (hyperparameters
       fixed); stop when it is reached, or when the prediction there cannot beat the incumbent (the
       best value of the *other* configurations) and the model is within ``tau`` times as sure of it
       as of the length just observed;
    4. the curve's points (at most ``pts_per_curve``, by maximum variance, the last always) join the
       data and the cost of the new iterations is deducted. GP_c is refitted after every
       evaluation; GP_f's hyperparameters only when a new configuration has joined (the expensive
       part: the paper refits after every evaluation; a continued curve is conditioned on with the
       hyperparameters it had), warm-started from the previous fit, ``gp_restarts`` extra starts.

    Each training step is one evaluation of the engine (one journal record, counted by
    ``max_evals``), at ``Suggestion.iterations`` iterations; the engine continues the model it
    holds, so a step costs only its new iterations.

    **Budget.** ``run(n)`` spends the cost of ``n`` full trainings: ``n`` times the median over the
    observed configurations of the predicted cost of training to ``t_max`` (before any is observed,
    the first evaluation sets it). Inside ADMM this turns the θ-step's ``I_t`` evaluations into
    seconds, so a θ-step with ``bapi`` costs about as much as ``I_t`` evaluations of ``bo``. The
    horizon is planned against what is left of it, or, when the problem gives ``time_left`` (JOPT
    under a time budget, where one solver runs the whole search), against the time left in the
    run. ``run`` always makes at least one evaluation. Cost is the measured training time
    (``fit_time``, ``cost="time"``, the paper's choice: scoring and overhead are not charged), or
    the number of trained iterations (``cost="iterations"``: then the run is deterministic for a
    seed and an evaluation budget; with measured times the horizon and the member chosen depend on
    the timings).

    **Learners without a training length.** On a problem whose points declare no training length
    (an algorithm selection without an iterative learner, the synthetic problems of the protocol
    checks) the solver is the ``bo`` solver it extends: EI at the configured length, ``t_max``
    (``n_initial_points``, ``xi``, ``n_candidates``, ``n_restarts`` are ``bo``'s).
    Over the joint space of JOPT, a point whose algorithm has no training length is trained as
    configured and enters the model at ``t = 1``. ``ask``/``tell`` from outside ``run`` also give
    ``bo``'s suggestions. The ADMM loop keeps one instance per algorithm selection
    (``keeps_state``), so the fitted GP hyperparameters carry over; the data are rebuilt from the
    problem's history, re-scored with the current duals.

    Parameters
    ----------
    h_max : int, default=4
        Longest planning horizon (BAPI-4; 8 gives BAPI-8).
    monotone : bool, default=True
        Monotone GP in ``t`` (False: the ablation BAPI-NM).
    epsilon : float or "auto", default=0.01
        Tolerance of conservative stopping, in loss units: the paper's 1 % of accuracy, fit for
        error rates and 1 − AUROC; for a loss on another scale (RMSE, log-loss) give one on it.
        The paper sets ε = 0.01, "interpreted as at most 1 % degradation in accuracy", "except
        for CNN-SVHN, where it is set to 0.005 due the small variation in the validation error",
        and where "ε cannot be easily set ... it is automatically set as the smallest
        degradation in the function value at t_max in the evaluated data:
        ε = min{f(x, t_max) − f(x, t) ∀(x, t) ∈ D}". Where configurations differ by 0.001–0.002
        in loss, every curve comes within 0.01 of its end at the first check, so nearly every
        configuration stops there. ``"auto"`` is that rule, recomputed whenever the objective
        GP is conditioned on new data (``epsilon_`` holds the value in force). D is every
        observed point of the learning curves (best-so-far loss plus constraint terms), not
        only the GP's few per curve, which are often just the last point; the minimum is over
        the pairs that make it a degradation — read literally it is 0, at ``t = t_max``
        itself — the strictly positive ``loss(x, t) − loss(x, t_max)``, ``t < t_max``, of the
        configurations observed at ``t_max``
        (:func:`admm_automl._numerics.bapi.automatic_epsilon`). It is small (the gap at the
        last checkpoint before ``t_max`` of the flattest finished curve), so conservative
        stopping trains nearly to ``t_max`` and early termination rests on the comparison with
        the incumbent. Before D holds such a pair (no curve has reached ``t_max``, or every one
        is flat) ε is 0: no degradation is known, so none is tolerated.
    tau : float, default=2.0
        Uncertainty ratio of early termination.
    check_fraction : float, default=0.2
        ``p`` as a fraction of ``t_max``.
    pts_per_curve : int, default=3
        Points of a learning curve that enter GP_f (1 gives BAPI-4-L).
    cost : {"time", "iterations"}, default="time"
        What the budget counts (above).
    n_initial_points, xi, n_candidates, n_restarts
        ``bo``'s parameters, for the learners without a training length; ``n_candidates`` (Sobol'
        candidates per greedy step) also applies to BAPI's own models.
    gp_restarts : int, default=0
        Extra random starts of each hyperparameter fit of BAPI's own models (the objective and
        cost GPs).

    References
    ----------
    Belakaria, Doppa, Fusi, Sheth, "Bayesian Optimization over Iterative Learners with Structured
    Responses: A Budget-aware Planning Approach", arXiv 2206.12708 (2022; AISTATS 2023).
    """

    supports_batch = False
    keeps_state: ClassVar[bool] = True
    #: the run set-up refuses a search space where no algorithm declares a training length
    needs_training_length: ClassVar[bool] = True

    def __init__(
        self,
        h_max: int = defaults.H_MAX,
        monotone: bool = True,
        epsilon: float | str = defaults.EPSILON,
        tau: float = defaults.TAU,
        check_fraction: float = defaults.CHECK_FRACTION,
        pts_per_curve: int = defaults.PTS_PER_CURVE,
        cost: str = "time",
        n_initial_points: int = 10,
        xi: float = 0.0,
        n_candidates: int = defaults.N_CANDIDATES,
        n_restarts: int = 5,
        gp_restarts: int = 0,
    ) -> None:
        super().__init__(n_initial_points=n_initial_points, xi=xi, n_candidates=n_candidates,
                         n_restarts=n_restarts)
        self.gp_restarts = gp_restarts
        self.h_max = h_max
        self.monotone = monotone
        self.epsilon = epsilon
        self.tau = tau
        self.check_fraction = check_fraction
        self.pts_per_curve = pts_per_curve
        self.cost = cost

    # ------------------------------------------------------------------ set-up
    def _validate(self) -> None:
        super()._validate()
        validate_params(self.name, vars(self), {
            "h_max": [int_at_least(1)],
            "pts_per_curve": [int_at_least(1)],
            "gp_restarts": [int_at_least(0)],
            "epsilon": [NON_NEGATIVE_NUMBER, options("auto")],
            "tau": [AT_LEAST_ONE],
            "check_fraction": [UP_TO_ONE],
            "monotone": [BOOL],
            "cost": [options(*COSTS)],
        })

    def _setup(self) -> None:
        super()._setup()
        self.curve_model_ = None
        self.cost_model_ = None
        self.hyper_n_configs_ = -1  # configurations at the last hyperparameter fit
        self.fitted_n_obs_ = -1  # observations the models were last conditioned on
        self.last_horizon_: _bapi.Horizon | None = None
        #: ε in force: ``epsilon``, or with ``"auto"`` the rule's value on the GP's data
        self.epsilon_ = 0.0 if self.epsilon == "auto" else float(self.epsilon)

    def update_problem(self, problem: Any) -> None:
        """Back at this algorithm selection: the data are rebuilt from the new history with the
        new duals; the fitted hyperparameters stay as the warm start of the next fit."""
        super().update_problem(problem)
        self.fitted_n_obs_ = -1

    def _length(self, x: np.ndarray) -> Any:
        find = self.problem_.training_length
        return None if find is None else find(np.asarray(x, dtype=float))

    # ------------------------------------------------------------------ the loop
    def _run(self) -> None:
        if self.problem_.training_length is None:
            super()._run()  # no training length: EI at t_max, the bo solver
            return
        with _gp.single_threaded_blas():
            self._plan_and_train()

    def _plan_and_train(self) -> None:
        """``run(n)`` with a training length: Algorithm 2 until the call's budget is spent."""
        n_calls = self.fresh_left_
        if n_calls <= 0:
            return
        spent, budget = 0.0, None
        design = _bapi.initial_design(int(self.problem_.dim), len(self._curves()),
                                      self._start_point(), self.rng_)
        while True:
            curves = self._curves()
            if budget is None and curves:
                budget = n_calls * _full_cost(curves, self.cost)
            if budget is not None and spent >= budget and spent > 0:
                return
            if self.cached_left_ <= 0:
                return
            left = math.inf if budget is None else budget - spent
            if design:
                x, goal = design.pop(0), 1.0
            else:
                x, goal = self._plan_or_fallback(curves, left)
            spent += self._train(x, goal, curves, left)

    def _plan_or_fallback(self, curves: list[_Curve], left: float) -> tuple[np.ndarray, float]:
        """:meth:`_plan`, or a uniform random configuration to ``t_max`` if the models fail (with a
        :class:`SolverFallbackWarning` once per ``setup``)."""
        try:
            return self._plan(curves, left)
        except Exception as err:  # a broken model must not end the run
            if not self.fallback_warned_:
                self.fallback_warned_ = True
                warnings.warn(
                    f"bapi: planning failed ({type(err).__name__}: {err}); training random "
                    "configurations instead", SolverFallbackWarning, stacklevel=4,
                )
            return self.rng_.uniform(0.0, 1.0, size=self.problem_.dim), 1.0

    # ------------------------------------------------------------------ data
    def _curves(self) -> list[_Curve]:
        """Every configuration observed (history and trials), with its merged learning curve."""
        records = list(self.problem_.history) + list(self.trials_)
        return _merge_curves(records, self._length, self._offset, self.cost)

    def _offset(self, x: np.ndarray, obs: Observation) -> float:
        """The value of an observation's constraint terms: augmented value − penalty − loss."""
        problem = self.problem_
        return problem.augment(x, obs) - problem.penalty(x) - obs.loss

    def _fit(self, curves: list[_Curve]) -> None:
        """Condition GP_f on the data, refitting its hyperparameters only when the number of
        configurations changed (the expensive part: a continued curve is conditioned on with the
        hyperparameters it had); refit GP_c (small and cheap)."""
        n_obs = len(self.problem_.history) + len(self.trials_)
        if n_obs == self.fitted_n_obs_ and self.curve_model_ is not None:
            return  # nothing new since the last fit
        self.fitted_n_obs_ = n_obs
        optimize = len(curves) != self.hyper_n_configs_ or self.curve_model_ is None
        model = self.curve_model_
        if model is None:
            model = _bapi.LearningCurveGP(monotone=bool(self.monotone),
                                          t_min=float(self.check_fraction),
                                          n_restarts=int(self.gp_restarts))
        X, T, Y = _bapi.curve_dataset(self.curve_model_, [(c.x, *c.curve()) for c in curves],
                                      int(self.pts_per_curve))
        model.fit(X, T, Y, rng=self.rng_, optimize=optimize)
        self.curve_model_ = model
        if self.epsilon == "auto":
            self.epsilon_ = _bapi.automatic_epsilon([c.curve() for c in curves]) or 0.0
        cost_model = self.cost_model_ or _bapi.CostGP(n_restarts=int(self.gp_restarts))
        examples = _cost_examples(curves)
        if examples is not None:
            cost_model.fit(*examples, rng=self.rng_)
            self.cost_model_ = cost_model
        if optimize:
            self.hyper_n_configs_ = len(curves)

    def _grid(self, t_max: int) -> np.ndarray:
        return defaults.check_grid(t_max, float(self.check_fraction))

    def _penalty(self, X: np.ndarray) -> np.ndarray:
        return _gp.penalty_rows(self.problem_.penalty, X)  # ADMM's penalty in one call

    # ------------------------------------------------------------------ NMO and selection
    def plan(self, budget: float) -> _bapi.Horizon:
        """NMO on the data so far: the greedy q-EI horizon that ``budget`` (cost units) allows.

        Needs a setup solver on a problem with a training length and at least one observation.
        """
        curves = self._curves()
        if self.problem_.training_length is None or not curves:
            raise InvalidParameterError("bapi: plan needs observations of a learner with a "
                                        "training length")
        with _gp.single_threaded_blas():
            return self._horizon(curves, budget)

    def stopping_length(self, x: np.ndarray) -> int:
        """The conservative stopping length of ``x`` in iterations under the current model: the
        first length whose predicted loss is within ``epsilon`` of the prediction at ``t_max``."""
        x = np.asarray(x, dtype=float)
        t_max = self._length(x).t_max
        with _gp.single_threaded_blas():
            self._fit(self._curves())
            frac = _bapi.stopping_lengths(self.curve_model_, x[None], self._grid(t_max),
                                          self.epsilon_)[0]
        return int(round(frac * t_max))

    def _horizon(self, curves: list[_Curve], budget: float) -> _bapi.Horizon:
        self._fit(curves)
        model = self.curve_model_
        t_max = max(c.t_max for c in curves)
        resumable_X, resumable_t = _resumable(curves)
        horizon = _bapi.plan_horizon(
            model, self.cost_model_, budget, incumbent=self._incumbent_or_worst(curves),
            t_grid=self._grid(t_max), rng=self.rng_, epsilon=self.epsilon_,
            penalty=self._penalty, resumable_X=resumable_X, resumable_t=resumable_t,
            h_max=int(self.h_max), n_candidates=int(self.n_candidates),
        )
        self.last_horizon_ = horizon
        return horizon

    def _incumbent_or_worst(self, curves: list[_Curve]) -> float:
        incumbent = _incumbent(curves, self._penalty)
        return incumbent if incumbent is not None else float(np.max(self.curve_model_.y_))

    def _plan(self, curves: list[_Curve], left: float) -> tuple[np.ndarray, float]:
        """The configuration to train next and its conservative stopping fraction: the member of
        the horizon with the largest EI per unit of cost (the paper's Sec. 3.4)."""
        time_left = self.problem_.time_left() if (
            self.problem_.time_left is not None and self.cost == "time") else None
        budget = left if time_left is None else max(time_left, 0.0)
        horizon = self._horizon(curves, budget)
        member = _bapi.select_member(self.curve_model_, self.cost_model_, horizon,
                                     incumbent=self._incumbent_or_worst(curves),
                                     penalty=self._penalty)
        x = np.clip(horizon.X[member], 0.0, 1.0)
        known = _find(curves, x, tol=1e-6)
        if known is not None:
            if known.trained >= known.t_max or known.failed:  # nothing to train: explore
                return self.rng_.uniform(0.0, 1.0, size=self.problem_.dim), 1.0
            x = known.x
        return x, float(horizon.t_stop[member])

    # ------------------------------------------------------------------ Evaluate (Alg. 5)
    def _suggest(self, x: np.ndarray, iterations: int | None) -> Suggestion:
        suggestion = Suggestion(self.n_asked_, np.array(x, dtype=float), None, iterations=iterations)
        self.n_asked_ += 1
        self.pending_[suggestion.id] = suggestion
        return suggestion

    def _train(self, x: np.ndarray, goal: float, curves: list[_Curve], left: float) -> float:
        """Train ``x`` towards the fraction ``goal`` with early termination; returns the cost.

        Without data yet there is no model to check against: the first configuration is trained
        to ``goal`` in one step. Otherwise training goes ``p`` iterations at a time from where
        ``x`` stopped, with the termination check after each step."""
        length = self._length(x)
        if length is None:  # a point without a training length (JOPT): trained as configured
            (obs,) = self._evaluate([self._suggest(x, None)])
            return float(obs.fit_time) if self.cost == "time" else 1.0
        t_max = length.t_max
        p = defaults.check_interval(t_max, float(self.check_fraction))
        known = _find(curves, x)
        curve = known or _Curve(np.array(x, dtype=float), length)
        began = curve.trained
        model = None
        if curves:
            self._fit(curves)  # the model before this curve, for the termination checks
            model = self.curve_model_
        target = _bapi.first_length(t_max, began, p, goal, checked=model is not None)
        spent = 0.0
        while True:
            (obs,) = self._evaluate([self._suggest(curve.x, int(target))])
            curve.add(obs, self._offset(curve.x, obs), self.cost)
            spent += float(obs.fit_time) if self.cost == "time" else float(
                target - obs.continued_from)
            if obs.cached or not obs.ok or target >= t_max or model is None or spent >= left:
                return spent
            t_all, y_all = curve.curve()
            new = t_all > began / t_max
            check = _bapi.check_termination(
                model, curve.x, t_all[new], y_all[new], t_grid=self._grid(t_max),
                incumbent=_incumbent(curves, self._penalty, exclude=known),
                epsilon=self.epsilon_, tau=float(self.tau),
                check_every=p / t_max, pts_per_curve=int(self.pts_per_curve),
                penalty=self._penalty,
            )
            if check.stop:
                return spent
            target = _bapi.next_length(t_max, int(target), check.t_next)
