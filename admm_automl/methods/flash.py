"""FLASH (Zhang et al., KDD 2016) as a whole-problem method: its Algorithm 1, composed from the
recorder, budget and driver every method shares (numpy only).

* :class:`FlashSettings` — FLASH's own parameters, validated (what ``method={"name": "flash",
  "params": {...}}`` carries).
* :class:`FlashOptimizer` — INIT with the greedy D-optimal design, PRUNE with EIPS to the top-r
  sub-graph, TUNE the pruned space with a θ-solver.

The numerics (path encoding, ridge models, EIPS, design, pruning) are in
:mod:`admm_automl._numerics.flash`; the z-solver ``flash`` uses the same ones inside ADMM.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from .driver import Engine, Result, RunOptions
from .lagrangian import constraint_value
from ..space.joint import JointSpace
from .baselines import joint_problem, split_free_constraints
from ..exceptions import InvalidParameterError
from ..records import Observation
from .._numerics import flash as F
from ..solvers.z.flash import fit_models, usable
from ..space.encoding import Encoding

__all__ = ["FlashOptimizer", "FlashSettings", "sample_prior"]

#: how the Phase-1 paths are chosen: the paper's greedy D-optimal design, or uniform paths (its
#: ablation, Fig. 5a)
DESIGNS = ("d-optimal", "random")
#: the units of τ in the cost model (:class:`FlashSettings`)
COST_UNITS = ("budget", "seconds")
#: the paper's time budget in seconds (Table 2's longest, 10 hours): ``cost_unit="budget"``
#: measures τ in its seconds
PAPER_BUDGET = 36_000.0
#: the three phases of Algorithm 1, as the journal's ``phase`` of their evaluations
PHASES = ("init", "prune", "tune")
#: what ``phase_minimum`` may name: the path model's coefficient count, or the paper's counts
PHASE_MINIMA = ("identifiable", "paper")


@dataclass(frozen=True)
class FlashSettings:
    """FLASH's parameters (the defaults are the paper's, or its code's where the paper is silent).

    Parameters
    ----------
    n_init : int, optional
        Phase-1 evaluations (paths of the initial design), >= 1. Default N − K + 1, the rank of
        the path vectors (the paper's 30 on its 4/2/13/14 layout; it calls 30 "the number of
        algorithms", but that layout has 33 — 30 is N − K + 1, the largest design the D-criterion
        tells apart).
    n_prune : int, optional
        Phase-2 evaluations (paths of highest EIPS), >= 0. Default N − K + 1 (the paper: 30).
    top_r : int, optional
        r, the number of best paths whose algorithms form the pruned space, at most the number of
        paths ranked. Default: the paper's 10, or every path of a space with fewer.
    xi : float, default=1.0
        ξ of Phase 2 in loss units: the paper's ξ = 100 on percent error is 1.0 on a [0, 1]
        error. It makes Phase 2 mostly probe under-observed algorithms, as in the paper.
    xi_select : float, default=0.0
        ξ when ranking paths for the pruned space (paper: 0, pure exploitation).
    ridge_alpha : float, default=1.0
        Ridge penalty of both models, on the unscaled sum of squares with an unpenalised
        intercept (the paper gives no value; its code uses scikit-learn's ``Ridge(alpha=1.0)``).
    cost_transform : {"log1p", "log", "identity"}, default="log1p"
        Target of the cost model. The paper divides EI by E[log τ], which is ≤ 0 for sub-second
        runs; log(1 + τ) stays positive and is ≈ log τ for slow runs.
    init_share, prune_share : float, default=0.2, 0.2
        Under a time budget, the largest part of it INIT, and PRUNE after it, may take: a phase
        ends at its evaluation count or when the run has used ``init_share`` (INIT) or
        ``init_share + prune_share`` (INIT and PRUNE) of the budget, whichever comes first, so
        TUNE keeps at least the rest (60 % by default). The paper's Table 2 runs 30 + 30
        evaluations before tuning within 3, 5 and 10 hours, a small part of each; its counts are
        kept wherever the budget holds them, and a short budget gets as many design and EIPS
        evaluations as its measured costs allow — a design that ate the budget would leave FLASH
        no tuning at all. Without a time budget the counts alone decide. INIT makes at least
        one evaluation (the models need one).
    phase_minimum : {None, "identifiable", "paper"} or int, default=None
        Evaluations that INIT and PRUNE together make before their time shares may end them, when
        the budget allows. The paper's phases are counts: "we set both T_init and T_prune as 30
        iterations (equal to the number of algorithms in the pipeline), which can be naturally
        generalized to other budgeted resources such as wall-clock time" — on a path model of 33
        one-hot coefficients and rank 30, so the data determine the performance model when Phase 2
        starts, and G′ is built from about 1.8 observations per coefficient (60 for 33). Under a
        time budget the shares above end the phases first wherever an evaluation costs more than
        ``init_share`` of the budget over ``n_init``: at 180 s the phases ended after a median 16 +
        12 evaluations for N − K + 1 = 48 coefficients, a model that the data do not determine (the
        ridge penalty alone picks it). ``None`` keeps the shares as they are. ``"identifiable"``
        gives the phases at least N − K + 1 evaluations (the rank of the path vectors, the number of
        coefficients the data must determine), ``"paper"`` at least ``n_init + n_prune`` (the
        paper's 30 + 30 scaled to the space: 2 (N − K + 1) by default), an integer that many; never
        more than ``n_init + n_prune``. INIT's share does not end INIT while it is below the minimum
        (up to ``n_init``), and the phases' joint share does not end PRUNE while INIT and PRUNE
        together are below it. "When the budget allows": the minimum holds only while the
        evaluations still missing, at the mean wall time per evaluation of the run so far, fit in
        the time left; otherwise the shares rule, so a budget too short for the design still tunes.
        Evaluations are counted as asked (as the phases count them). Without a time budget the
        counts alone decide and this has no effect. The share of the budget the phases took is in
        the trace (``phases_share``, ``phases_evals``) and in ``phases_`` of the optimiser.
    cost_unit : {"budget", "seconds"}, default="budget"
        The unit of τ in the cost model. The paper measures τ in seconds, and its E[log τ] damps
        cost differences by what they are on that scale: with runs of ~10 s to its 15-minute
        limit inside 10 hours, log τ spans ~2.3 to ~6.8, so a path 90 times slower has its EI
        divided by ~3. At a budget of minutes the same relative costs are sub-second, where
        log(1 + τ) ≈ τ no longer damps: a path 90 times slower is ~35 times less attractive, and
        the ranking keeps only the cheapest learners (measured: at 180 s every pruned space of
        30 runs on three datasets held no random forest). ``"budget"`` measures τ in the
        paper's units scaled to the run — seconds × 36 000 / the time budget, the paper's
        10 hours — so a run taking the same share of the budget is damped as in the paper;
        without a time budget it is seconds. ``"seconds"`` is the paper's unit at every budget.
    censor_timeouts : bool, default=True
        A run that its per-trial time limit stopped informs the cost model (its time is a lower
        bound of the path's cost) and is left out of the performance model: its loss is not
        known, and entering it as the worst loss (the authors' code's rule for every failed run)
        condemns a learner whose sampled hyperparameters were too slow for the limit — at the
        paper's 15 minutes a rare event, at a few seconds the fate of most random forests of a
        random design. False applies the authors' rule to time-outs too. Failures (an exception,
        a memory error) keep the rule either way.
    prune : bool, default=True
        False drops PRUNE: no EIPS evaluations and G′ is the whole space, so TUNE starts right
        after INIT over every algorithm (the paper's Fig. 5b ablation, "SMAC immediately after
        Phase 1").
    design : {"d-optimal", "random"}, default="d-optimal"
        Phase-1 paths: the greedy D-optimal design, or uniform paths (the paper's ablation).
    warm_start : bool, default=True
        Give the TUNE solver every earlier evaluation inside the pruned space (the paper's
        Algorithm 1; the authors' code starts Phase 3 cold, ``warm_start=False``).
    max_enumerate, n_candidates : int, default=100000, 5000
        Rank every path up to ``max_enumerate``; larger spaces rank a stratified sample of
        ``n_candidates`` paths (every algorithm represented), drawn once per run.
    """

    n_init: int | None = None
    n_prune: int | None = None
    top_r: int | None = None
    xi: float = F.DEFAULT_XI
    xi_select: float = F.DEFAULT_XI_SELECT
    ridge_alpha: float = F.DEFAULT_RIDGE_ALPHA
    cost_transform: str = F.DEFAULT_COST_TRANSFORM
    cost_unit: str = "budget"
    censor_timeouts: bool = True
    init_share: float = 0.2
    prune_share: float = 0.2
    prune: bool = True
    phase_minimum: "str | int | None" = None
    design: str = "d-optimal"
    warm_start: bool = True
    max_enumerate: int = F.DEFAULT_MAX_ENUMERATE
    n_candidates: int = F.DEFAULT_N_CANDIDATES

    def __post_init__(self) -> None:
        if self.n_init is not None:
            F.check_n_init(self.n_init)
        if self.n_prune is not None:
            F.check_n_prune(self.n_prune)
        if self.top_r is not None and (isinstance(self.top_r, bool) or not isinstance(
                self.top_r, (int, np.integer)) or self.top_r < 1):
            raise InvalidParameterError(f"top_r must be an integer >= 1, got {self.top_r!r}")
        F.check_xi(self.xi)
        F.check_xi(self.xi_select, "xi_select")
        F.check_ridge_alpha(self.ridge_alpha)
        F.check_cost_transform(self.cost_transform)
        for name in ("init_share", "prune_share"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not (
                    0.0 < value <= 1.0):
                raise InvalidParameterError(f"{name} must be a number in (0, 1], got {value!r}")
        if self.init_share + self.prune_share > 1.0:
            raise InvalidParameterError(
                "init_share + prune_share must be at most 1 (the parts of the time budget INIT "
                f"and PRUNE may take), got {self.init_share} + {self.prune_share}")
        minimum = self.phase_minimum
        if not (minimum is None or isinstance(minimum, str) and minimum in PHASE_MINIMA
                or F._is_int(minimum) and minimum >= 1):
            raise InvalidParameterError(
                f"phase_minimum must be None, {', '.join(map(repr, PHASE_MINIMA))} or an "
                f"integer >= 1, got {minimum!r}")
        if self.cost_unit not in COST_UNITS:
            raise InvalidParameterError(
                f"cost_unit must be one of {', '.join(map(repr, COST_UNITS))}, "
                f"got {self.cost_unit!r}")
        if self.design not in DESIGNS:
            raise InvalidParameterError(
                f"design must be one of {', '.join(map(repr, DESIGNS))}, got {self.design!r}")
        for name in ("warm_start", "prune", "censor_timeouts"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise InvalidParameterError(f"{name} must be a bool, got {getattr(self, name)!r}")
        for name in ("max_enumerate", "n_candidates"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise InvalidParameterError(f"{name} must be an integer >= 1, got {value!r}")

    @classmethod
    def from_params(cls, params: "FlashSettings | Mapping[str, Any] | None") -> "FlashSettings":
        """Settings from a mapping of parameters (unknown names are errors that list the valid
        ones), or the settings themselves."""
        if isinstance(params, FlashSettings):
            return params
        params = dict(params or {})
        valid = list(cls.__dataclass_fields__)
        unknown = sorted(set(params) - set(valid))
        if unknown:
            raise InvalidParameterError(
                f"unknown FLASH parameter(s) {unknown!r}; valid: {', '.join(valid)}")
        return cls(**params)


def sample_prior(encoding: Encoding, z: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """θ with the hyperparameters of path ``z`` drawn from their priors (the paper's Phases 1 and
    2 draw them at random, not at their defaults), the others at their defaults.

    A continuous coordinate is uniform on its unit interval (log-uniform for a log-scale
    hyperparameter); a discrete one picks one of its admissible values uniformly (every integer or
    category equally likely, as the authors' code's truncated uniform draws of integers).
    """
    theta = np.array(encoding.initial_theta, dtype=float)
    for k in encoding.active(z):
        grid = encoding.grids[k]
        theta[k] = rng.random() if grid is None else grid[rng.integers(len(grid))]
    return theta


class FlashOptimizer:
    """FLASH's Algorithm 1: INIT → PRUNE → TUNE, over the whole problem (no ADMM split).

    1. **INIT** (``n_init`` evaluations, or ``init_share`` of a time budget if that ends
       first): the paths of the greedy D-optimal design over the
       candidate paths (the paper's Algorithm 2: its first path uniform, ties at random, repeats
       allowed beyond the rank), each with hyperparameters drawn from their priors
       (:func:`sample_prior`).
    2. **PRUNE** (``n_prune`` evaluations, or until ``init_share + prune_share`` of a time
       budget is used): refit the ridge performance and cost models on every
       evaluation so far and evaluate the path of highest EIPS (ξ = ``xi``; re-picking a path is
       allowed, with fresh random hyperparameters), one at a time.
    3. Build G′: the product of the per-module sets of algorithms used by the ``top_r`` paths of
       highest EIPS with ξ = ``xi_select`` (the paper's top-r sub-graph as its code builds it).
    4. **TUNE** until the budget ends: ``theta_solver`` over the joint box of G′ (one relaxed
       categorical coordinate per module that kept several algorithms, and the hyperparameters of
       the kept algorithms), warm-started with the earlier evaluations inside G′.

    The result is the best evaluation of the whole run, G′ or not (the paper returns the best in
    G′; its code's merged logs, like this, the best overall).

    Parameters
    ----------
    encoding : Encoding
        The (z, θ) bookkeeping of the space.
    engine : callable
        The black box, ``engine(requests, time_left=..., tags=...)``.
    theta_solver : callable
        A factory of the TUNE back end, a θ-solver (the run's ``theta_solver``). The paper tunes
        G′ with SMAC (its "FLASH", ``theta_solver="smac"``) or TPE ("FLASH*", ``"tpe"``); the
        run's default θ-solver, our GP-BO, tunes it otherwise.
    settings : FlashSettings or mapping, optional
        FLASH's parameters.
    **options
        The run's :class:`~admm_automl.methods.driver.RunOptions`. Without the split there are no
        multipliers: constraints are a fixed-weight penalty (``constraint_mode="penalty"``, the
        default) or ignored during the search (``"filter"``); ``"admm"`` is refused.

    Raises
    ------
    InvalidParameterError
        On a bad setting, or ``top_r`` larger than the number of paths ranked.

    Attributes
    ----------
    subgraph_ : Subgraph or None
        G′ of the last run (None if the run ended before pruning).

    Notes
    -----
    Choices where the paper is silent or ambiguous, with the reason:

    * Phase budgets are counted in evaluations asked (a failed one counts, as in the authors'
      code; a repeat answered from the cache, which only a path whose hyperparameters are all
      discrete can produce, counts too, so a phase always ends): PRUNE ends ``n_prune``
      evaluations after INIT, and TUNE has the rest of the run's budget. Under a time budget
      the phases also end at their shares of it (``init_share``, ``prune_share``), checked
      before each evaluation, so one evaluation started just before may overrun a share; a
      per-trial timeout bounds that. The run's time budget is wall clock with the optimiser's
      overhead (the models, the design) included.
    * In PRUNE a path none of whose algorithms has a hyperparameter is not picked again once
      evaluated: a repeat would be a cache hit that teaches the models nothing.
    * Values are the loss plus the constraint penalty; a failed evaluation keeps the run's failure
      loss (the metric's worst value, the paper's 100 %) and its measured seconds, and enters
      both models (:func:`~admm_automl.solvers.z.flash.fit_models`); a timed-out one enters
      the cost model only (``censor_timeouts``).
    * Costs are measured in the paper's seconds scaled to the budget (``cost_unit``), so that
      EIPS trades accuracy against cost as the paper's did at 10 hours.
    * Unlike the other methods, the space's initial pipeline is not evaluated first: the paper's
      first path is a uniform draw.
    * Evaluations are sequential within PRUNE (the paper is sequential); INIT and TUNE ask
      ``batch_size`` at a time when run in parallel.

    References
    ----------
    Y. Zhang, M. T. Bahadori, H. Su, J. Sun. FLASH: Fast Bayesian Optimization for Data Analytic
    Pipelines. KDD 2016 (arXiv:1602.06468).
    """

    name = "FLASH"

    def __init__(self, encoding: Encoding, engine: Engine, theta_solver: Callable[[], Any],
                 settings: "FlashSettings | Mapping[str, Any] | None" = None,
                 **options: Any) -> None:
        self.options = RunOptions(**options)
        self.constraints = split_free_constraints(self.options, self.name)
        self.encoding = encoding
        self.engine = engine
        self.theta_solver = theta_solver
        self.settings = s = FlashSettings.from_params(settings)
        self.n_init = F.check_n_init(s.n_init, encoding.n_choices)
        self.n_prune = F.check_n_prune(s.n_prune, encoding.n_choices) if s.prune else 0
        n_ranked = F.n_paths(encoding.n_choices)
        if n_ranked > s.max_enumerate:  # the stratified sample (fewer if it drew duplicates)
            n_ranked = max(s.n_candidates, *encoding.n_choices)
        self.top_r = F.check_top_r(min(F.DEFAULT_TOP_R, n_ranked) if s.top_r is None
                                   else s.top_r, n_ranked)
        self.phase_minimum = self._phase_minimum()
        self.subgraph_: F.Subgraph | None = None
        #: how INIT and PRUNE ended in the last run (``None`` before TUNE): ``evals`` asked,
        #: ``seconds`` of the run, ``share`` of the time budget (``None`` without one), the
        #: ``minimum`` they were given
        self.phases_: dict[str, Any] | None = None

    def _phase_minimum(self) -> int:
        """Evaluations INIT and PRUNE make before their shares may end them (0: none)."""
        minimum, most = self.settings.phase_minimum, self.n_init + self.n_prune
        if minimum is None:
            return 0
        if minimum == "identifiable":
            minimum = F.path_rank(self.encoding.n_choices)
        elif minimum == "paper":
            minimum = most
        return min(int(minimum), most)

    def _value(self, config: Any, obs: Observation) -> float:
        """The value FLASH minimises: the loss plus the constraint penalty (none in filter mode)."""
        return obs.loss + constraint_value(self.constraints, obs)

    def run(self) -> Result:
        run = _FlashRun(self)
        result = run.run()
        self.subgraph_ = run.subgraph
        self.phases_ = run.phases
        return result


class _FlashRun:
    """The state of one run of :class:`FlashOptimizer`."""

    def __init__(self, method: FlashOptimizer) -> None:
        self.method, self.options, self.settings = method, method.options, method.settings
        enc = self.encoding = method.encoding
        self.recorder = self.options.recorder(enc, method.engine, method.constraints)
        theta_seed, path_seed = self.options.solver_seeds()
        self.theta_rng = np.random.default_rng(theta_seed)
        self.rng = np.random.default_rng(path_seed)
        s = self.settings
        self.paths = F.candidate_paths(enc.n_choices, self.rng, max_enumerate=s.max_enumerate,
                                       n_candidates=s.n_candidates)
        self.path_tuples = [tuple(p) for p in self.paths.tolist()]
        # paths with no hyperparameter at all: a second evaluation of one is a cache hit
        dims = [np.array([len(slot) for slot in module]) for module in enc.slots]
        self.fixed = sum(d[self.paths[:, i]] for i, d in enumerate(dims)) == 0
        if s.design == "d-optimal":
            X = F.encode_paths(self.paths, enc.n_choices)
            self.design = F.greedy_d_optimal_design(X, method.n_init, self.rng).indices
        else:
            self.design = self.rng.integers(len(self.paths), size=method.n_init)
        self.phase = "init"
        self.asked = 0  # evaluations asked in INIT and PRUNE
        self.init_end = 0  # evaluations asked when INIT ended
        self.subgraph: F.Subgraph | None = None
        self.tuner: Any = None
        self.row_phase = self.phase
        self.started = self.recorder.budget.elapsed()  # the run's clock when INIT starts
        self.phases: dict[str, Any] | None = None  # how INIT and PRUNE ended (:meth:`prune`)

    def run(self) -> Result:
        trace, stop = self.options.drive(self.recorder, self.iterate, self.summarize, None,
                                         self.method.name)
        rec = self.recorder
        return Result(rec.incumbent, trace, rec.evaluated, rec.n_evals, stop)

    # ------------------------------------------------------------------ the phases
    def iterate(self, n: int) -> None:
        """Up to ``n`` evaluations of the current phase (a phase's last chunk may be shorter)."""
        self.row_phase = self.phase
        if self.phase == "init":
            self.initialise(min(n, self.method.n_init - self.asked))
        elif self.phase == "prune":
            self.explore(min(n, self.init_end + self.method.n_prune - self.asked))
        elif self.tuner is not None:
            self.tuner.run(n)

    def evaluate(self, zs: list[tuple[int, ...]]) -> None:
        points = [(z, sample_prior(self.encoding, z, self.rng), 1.0) for z in zs]
        self.asked += len(points)
        self.recorder.evaluate(points, self.phase)

    def used(self, share: float, floor: int = 0) -> bool:
        """Whether the run has used ``share`` of its time budget (never without one) and has a
        result the models can learn from, and INIT and PRUNE have asked ``floor`` evaluations
        or the rest of them would not fit in the time left (:meth:`below_minimum`)."""
        budget = self.recorder.budget
        if budget.time_budget is None:
            return False
        elapsed, left = budget.elapsed(), budget.time_left()
        return (elapsed >= share * (elapsed + max(left, 0.0))
                and any(usable(obs) for _, obs in self.recorder.observations())
                and not self.below_minimum(floor))

    def below_minimum(self, floor: int) -> bool:
        """``phase_minimum``: fewer than ``floor`` evaluations asked in INIT and PRUNE, and the
        missing ones, at the run's mean wall time per evaluation so far, fit in the time left."""
        if self.asked >= floor:
            return False
        budget = self.recorder.budget
        per_eval = (budget.elapsed() - self.started) / max(self.asked, 1)
        return (floor - self.asked) * per_eval <= max(budget.time_left() or 0.0, 0.0)

    def initialise(self, n: int) -> None:
        """INIT: the next ``n`` paths of the design, ``batch_size`` at a time, until the design
        is done or INIT's share of the time budget is used."""
        s, batch = self.settings, max(1, self.options.batch_size)
        floor = min(self.method.phase_minimum, self.method.n_init)
        while n > 0 and not self.used(s.init_share, floor):
            k = min(batch, n)
            self.evaluate([self.path_tuples[i] for i in self.design[self.asked:self.asked + k]])
            n -= k
        if self.asked >= self.method.n_init or self.used(s.init_share, floor):
            self.phase, self.init_end = "prune", self.asked
            if self.method.n_prune == 0:
                self.prune()

    def explore(self, n: int) -> None:
        """PRUNE: ``n`` times, refit both models and evaluate the path of highest EIPS, until
        PRUNE's count or INIT's and PRUNE's share of the time budget is used."""
        s = self.settings
        share, floor = s.init_share + s.prune_share, self.method.phase_minimum
        for _ in range(n):
            if self.used(share, floor):
                break
            models = self.models()
            seen = {tuple(z) for z, _ in self.recorder.observations()}
            scores = models.log_eips(self.paths, s.xi)
            scores[self.fixed & [p in seen for p in self.path_tuples]] = -np.inf
            self.evaluate([self.path_tuples[F.rank_with_random_ties(scores, self.rng)[0]]])
        if self.asked >= self.init_end + self.method.n_prune or self.used(share, floor):
            self.prune()

    def models(self) -> F.PathModels:
        """Both ridge models on every usable evaluation of the run so far."""
        s, budget = self.settings, self.recorder.budget.time_budget
        scale = PAPER_BUDGET / budget if s.cost_unit == "budget" and budget else 1.0
        return fit_models(self.recorder.observations(), self.method._value,
                          self.encoding.n_choices, alpha=s.ridge_alpha,
                          transform=s.cost_transform, cost_scale=scale,
                          censor_timeouts=s.censor_timeouts)

    def prune(self) -> None:
        """Build G′ from the top-r paths (ξ = ``xi_select``; the whole space without pruning) and
        set up the TUNE solver on it."""
        s, budget = self.settings, self.recorder.budget
        seconds = budget.elapsed() - self.started
        self.phases = {"evals": self.asked, "seconds": seconds,
                       "share": seconds / budget.time_budget if budget.time_budget else None,
                       "minimum": self.method.phase_minimum}
        if s.prune:
            top_r = min(self.method.top_r, len(self.paths))  # a sample may hold a few less
            self.subgraph = self.models().subgraph(self.paths, top_r, self.rng, s.xi_select)
        else:
            self.subgraph = F.Subgraph(tuple(np.ones(k, dtype=bool) for k in
                                             self.encoding.n_choices), self.paths[:0])
        self.phase = "tune"
        joint = JointSpace(self.encoding, self.subgraph.kept())
        if joint.dim == 0:  # nothing left to tune: the driver ends the run as exhausted
            return
        history = []
        if s.warm_start:
            inside = [e for e in self.recorder.evaluated
                      if usable(e.observation)
                      and all(j in kept for j, kept in zip(e.z, joint.kept))]
            history = [(joint.encode(e.z, e.theta), e.observation) for e in inside]
        values = [self.method._value(None, obs) for _, obs in history]
        start = history[int(np.nanargmin(values))][0] if np.isfinite(values).any() else None
        problem = joint_problem(joint, self.recorder, "tune", self.method._value, history, start,
                                self.options)
        self.tuner = self.method.theta_solver()
        self.tuner.setup(problem, self.theta_rng)

    # ------------------------------------------------------------------ trace
    def summarize(self, n: int) -> dict[str, Any]:
        """The trace row of the current iteration: the shared columns, the phase it ran in and,
        once pruned, the number of pipelines G′ keeps."""
        row = self.recorder.row(n)
        row["phase"] = self.row_phase
        if self.subgraph is not None:
            row["pipelines_kept"] = int(np.prod(self.subgraph.n_choices))
        if self.phases is not None:  # how much INIT and PRUNE took, once they are over
            row["phases_evals"] = self.phases["evals"]
            if self.phases["share"] is not None:
                row["phases_share"] = self.phases["share"]
        return row
