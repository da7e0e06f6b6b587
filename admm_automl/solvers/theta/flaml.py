"""``cfo`` and ``blendsearch``: FLAML's own CFO and BlendSearch searchers as θ-solvers.

CFO (Wu, Wang and Huang, AAAI 2021) is the cost-frugal local search FLOW²: it starts at a low-cost
point and moves by randomised directions of an adaptive step, so that expensive configurations are
reached only when cheaper ones stop improving. BlendSearch (Wang, Wu, Huang and Saied, ICLR 2021)
blends a global search (Optuna's TPE) with FLOW² threads, prioritised by their cost-aware speed of
improvement, and vetoes global proposals outside the region the local threads have reached. Both
are FLAML's implementations, driven through their ``suggest(trial_id)`` /
``on_trial_complete(trial_id, result)`` interface: this module only translates (see
:class:`FlamlThetaSolver` for the mapping and every choice).
"""

from __future__ import annotations

import logging
import math
import warnings
from typing import Any, ClassVar

import numpy as np

from ...exceptions import MissingDependencyError
from ..._validation import BOOL, int_at_least, options, validate_params
from ...records import Observation, Suggestion
from ..base import BaseThetaSolver
from ..registry import THETA_SOLVERS

#: how a trial's cost is measured (``cost=``)
COSTS = ("time", "evaluations")
#: FLAML's metric and cost keys in a result
_METRIC, _COST = "loss", "cost"


def _flaml() -> dict[str, Any]:
    """FLAML's searcher classes and ``tune`` (imported on first use, with its own notice about the
    optional AutoML part silenced)."""
    try:
        with warnings.catch_warnings():  # "flaml.automl is not available": not needed here
            warnings.simplefilter("ignore", UserWarning)
            from flaml import tune
            from flaml.tune.searcher.blendsearch import CFO, BlendSearch
            from flaml.tune.searcher.flow2 import FLOW2
            from flaml.tune.searcher.suggestion import OptunaSearch
    except ImportError as err:
        raise MissingDependencyError(
            f"the cfo and blendsearch theta solvers need FLAML with Optuna: "
            f"pip install 'admm-automl[flaml]' ({err})"
        ) from None
    return {"tune": tune, "CFO": CFO, "BlendSearch": BlendSearch, "FLOW2": FLOW2,
            "OptunaSearch": OptunaSearch}


def _grid_flow2(flow2: type, keys: list[str], grids: list[np.ndarray]) -> type:
    """FLOW² whose step lower bound comes from the grids of the relaxed discrete coordinates.

    FLAML derives δ_lb from the integer domains it knows (1/(hi − lo) for a uniform integer,
    log(1 + 1/x)/log(hi/lo) at the incumbent x for a log-scaled one, times √d) and falls back to
    1e-4 for continuous ones. θ-min relaxes every discrete coordinate to a continuous one in
    [0, 1], which would leave the fallback and keep a thread from ever converging (Wang et al.,
    ICLR 2021 leave the relaxed case open): here the bound is the same rule on the
    δ-step's grid — the unit distance from the incumbent's grid value to the next one (the previous
    one at the top), the smallest over the discrete coordinates, times √d. Continuous-only
    problems keep FLAML's 1e-4. The grids live on the class because FLAML creates every new thread
    as ``self.__class__(...)``.
    """

    def step_lower_bound(self: Any) -> float:
        bound = math.inf
        for key, grid in zip(keys, grids):
            value = self.best_config.get(key)
            if value is None:
                continue
            i = int(np.abs(grid - float(value)).argmin())
            gap = grid[i + 1] - grid[i] if i + 1 < len(grid) else grid[i] - grid[i - 1]
            bound = min(bound, float(gap))
        return self.STEP_LOWER_BOUND if math.isinf(bound) else bound * self.step_ub

    return type("GridFLOW2", (flow2,), {"step_lower_bound": property(step_lower_bound)})


class FlamlThetaSolver(BaseThetaSolver):
    """Base of the FLAML adapters (``searcher`` names the FLAML class).

    **Space.** A θ-problem's unit box becomes FLAML's ``tune.uniform(0, 1)`` per coordinate (keys
    ``x000``, ``x001``, … in coordinate order); relaxed discrete coordinates stay continuous, as
    θ-min requires, and FLOW²'s step lower bound is set from their grids (:func:`_grid_flow2`). A
    joint problem that carries its ``pipeline_space`` (``method="jopt"``) is searched in FLAML's
    own hierarchical form instead — per module a choice of per-algorithm dictionaries
    (:mod:`admm_automl.space.flaml`), the conditional space of the paper — and FLAML's
    configurations are mapped to joint points and back.

    **Low-cost point.** ``low_cost_partial_config`` is the problem's declared low-cost coordinates
    (the controlled dimensions, which also span BlendSearch's admissible region); for the joint
    space, every algorithm's declared values. At the solver's first problem (a z's first θ-step,
    or JOPT's whole run) the search starts there, as the paper's does, even when the history holds
    other points (the initial pipeline at its defaults): the first configuration is the low-cost
    point with its other coordinates at ``problem.start`` (the ADMM iterate: the defaults at a
    first visit); without a start, and in the joint space, FLAML completes it at random (FLAML's
    own rule; the paper leaves them to the global search). ``low_cost=False`` is the "agnostic" mode of the paper's ablation (its Fig. 11): no
    controlled dimension, and a random first configuration; a problem that declares no low-cost
    coordinate runs in that mode too (the paper's rule: no controlled dimension, random start).

    **Warm start and the duals.** From the second problem on (ADMM back at a z), every point of
    ``problem.history`` is handed to FLAML as ``points_to_evaluate`` with ``evaluated_rewards`` =
    its value under the *current* ``problem.augment``: FLAML starts its local search at the best of
    them, the previous θ* re-scored. BlendSearch's global search (Optuna's TPE, built here so that
    it can take them) learns from the whole history from the first problem on (FLAML's own
    global search over the joint space is define-by-run and cannot). Because FLAML cannot change a value it has
    been told, a new problem (``update_problem``: new duals) rebuilds the searcher from the
    re-scored history; what does not depend on the objective — BlendSearch's admissible region
    F.R, which only grows — is carried over. ``keeps_state`` is set, so the ADMM loop keeps one
    solver per z (one searcher state per z: a z revisited resumes its own search).

    **Cost.** ``cost="time"`` (the default, the paper's choice) charges each trial its measured
    fit + predict time (training plus validation), in milliseconds; a cache hit costs nothing.
    Milliseconds, because FLAML floors the denominator of a thread's speed at one cost unit when it
    is given no time budget. Time-based cost makes the history depend on timings, like a time
    budget does: the same seed repeats a run only when the fit times repeat.
    ``cost="evaluations"`` charges one unit per trial (deterministic).

    **Randomness.** FLAML's ``seed`` (which seeds every FLOW² thread, its random completions and
    restarts) and the TPE sampler's seed are drawn from the ``rng`` given to ``setup``, afresh for
    every rebuilt searcher.

    **Protocol details.** FLAML may decline to suggest (a duplicate of a known configuration,
    whose result it then feeds to the thread itself, or a thread that has just converged); ``ask``
    asks again, up to ``max_skips`` times, then asks a uniform random point that FLAML is not told
    about. A non-finite value is told as the worst finite value seen (0 if none). Values and costs
    are FLAML's only input.

    **Several trials in flight** (``supports_batch``): FLAML's searchers are written for Ray
    Tune's concurrent trials — ``suggest`` may be called for new trial ids while others run;
    BlendSearch records which thread proposed each, keeps a pending configuration in its result
    cache (so it declines to propose it again) and lets a FLOW² thread propose around its
    incumbent a bounded number of times concurrently. So a batch, or an asynchronous run, asks
    FLAML once per free worker: its own pending mechanism. A FLAML suggestion the driver drops
    (a repeat of a trial in flight, which the engine would not run) is completed as failed
    (``error=True``, FLAML's way to withdraw a trial), so its thread and its cache forget it.

    Parameters
    ----------
    low_cost : bool, default=True
        Start from the problem's low-cost point (False: the agnostic mode, a random start).
    cost : {"time", "evaluations"}, default="time"
        What a trial costs: its measured fit + predict time, or one unit.
    max_skips : int, default=100
        Declined suggestions per ask before a random point is asked instead.
    """

    requires = (("flaml", "'admm-automl[flaml]'"), ("optuna", "'admm-automl[flaml]'"))

    keeps_state = True
    supports_batch = True
    #: the FLAML class: "BlendSearch" or "CFO"
    searcher: ClassVar[str] = ""

    def __init__(self, low_cost: bool = True, cost: str = "time", max_skips: int = 100) -> None:
        self.low_cost = low_cost
        self.cost = cost
        self.max_skips = max_skips

    # ------------------------------------------------------------------ set-up
    def _validate(self) -> None:
        validate_params(self.name, vars(self), {
            "low_cost": [BOOL],
            "cost": [options(*COSTS)],
            "max_skips": [int_at_least(1)],
        })

    def _setup(self) -> None:
        self._validate()
        self.flaml_ = _flaml()
        logging.getLogger("flaml").setLevel(logging.WARNING)
        logging.getLogger("optuna").setLevel(logging.WARNING)  # a line per study and trial
        # BlendSearch answers a global proposal that repeats a known configuration by telling the
        # global search that result, then proposes a random point under the same trial id, whose
        # completion the global search then refuses with a warning: FLAML's own bookkeeping
        logging.getLogger("flaml.tune.searcher.suggestion").setLevel(logging.ERROR)
        problem = self.problem_
        self.joint_ = getattr(problem, "pipeline_space", None)
        self.keys_ = [f"x{i:03d}" for i in range(int(problem.dim))]
        self.searcher_ = None
        self._build()

    def update_problem(self, problem: Any) -> None:
        """New ADMM iterate of the same z: rebuild FLAML's searcher from the re-scored history,
        keeping its admissible region."""
        super().update_problem(problem)
        self._build()

    def _build(self) -> None:
        """A FLAML searcher: at the first problem, started at the low-cost point (or at random);
        at later ones, warm-started with the history under the current ``augment``."""
        flaml, problem = self.flaml_, self.problem_
        known = list(problem.history) + list(self.trials_)
        history = [self._config(x) for x, _ in known]
        self.worst_ = None  # the worst value under the previous duals no longer applies
        values = self._finite([problem.augment(x, obs) for x, obs in known])
        self.worst_ = max(values, default=None)
        space = self._space()
        init = self._low_cost_config() if self.low_cost else {}
        points, rewards = history, values
        if self.searcher_ is None:  # first problem: a cost-frugal (or random) start, not θ*
            first = init and not self.joint_ and getattr(problem, "start", None) is not None
            points, rewards = ([self._config(self._first_point())] if first else []), []
        seed = int(self.rng_.integers(11, 2**31 - 1))  # FLAML's global search seed is seed - 10
        kwargs: dict[str, Any] = dict(
            metric=_METRIC, mode="min", space=space, low_cost_partial_config=init or None,
            points_to_evaluate=points or None, evaluated_rewards=rewards or None, seed=seed,
            cost_attr=_COST,
        )
        if self.searcher == "BlendSearch" and not self.joint_:
            kwargs["global_search_alg"] = self._global_search(space, seed - 10, history, values)
        cls = flaml[self.searcher]
        if not self.joint_:  # FLOW² with the step lower bound of the relaxed discrete coordinates
            local = _grid_flow2(flaml["FLOW2"], *self._discrete())
            cls = type(cls.__name__, (cls,), {"LocalSearch": local})
        old, self.searcher_ = self.searcher_, cls(**kwargs)
        if old is not None:
            self._carry_region(old, self.searcher_)
        self.flaml_trials_: dict[int, tuple[str, dict]] = {}
        self.n_flaml_ = 0

    def _global_search(self, space: dict, seed: int, points: list, rewards: list) -> Any:
        """BlendSearch's global search, Optuna's TPE with default settings (as FLAML builds it),
        over plain distributions so that it can be warm-started with the re-scored history
        (FLAML's own, define-by-run, cannot)."""
        import optuna

        distributions = {k: optuna.distributions.FloatDistribution(0.0, 1.0) for k in space}
        told = len(rewards)
        search = self.flaml_["OptunaSearch"](
            space=distributions, metric=_METRIC, mode="min",
            sampler=optuna.samplers.TPESampler(seed=seed),
            points_to_evaluate=points[:told] or None, evaluated_rewards=rewards or None,
        )
        search.space = space  # as FLAML does for the global search it builds itself
        return search

    @staticmethod
    def _carry_region(old: Any, new: Any) -> None:
        """Carry BlendSearch's admissible region F.R (the box of the local threads' points,
        objective-free) from ``old`` to ``new``: it only grows (Wang et al., ICLR 2021, §4)."""
        for name, pick in (("_ls_bound_min", min), ("_ls_bound_max", max)):
            before, after = getattr(old, name, None), getattr(new, name, None)
            if not isinstance(before, dict) or not isinstance(after, dict):
                return
            for key, value in before.items():
                if isinstance(value, float) and isinstance(after.get(key), float):
                    after[key] = pick(after[key], value)
        new._gs_admissible_min.update(new._ls_bound_min)
        new._gs_admissible_max.update(new._ls_bound_max)

    # ------------------------------------------------------------------ the two spaces
    def _space(self) -> dict[str, Any]:
        if self.joint_:
            from flaml.tune.space import add_cost_to_space

            from ...space.flaml import flaml_space

            space = flaml_space(self.joint_)
            # FLAML prepares a nested space (the constants that identify each choice) in the
            # searcher's constructor, but stops after the first module that has a low-cost list
            # (its AutoML has a single nested key, "ml"): prepare every module beforehand
            add_cost_to_space(space, {}, {})
            return space
        uniform = self.flaml_["tune"].uniform
        return {key: uniform(0.0, 1.0) for key in self.keys_}

    def _low_cost_values(self) -> np.ndarray:
        low = getattr(self.problem_, "low_cost", None)
        return np.full(self.problem_.dim, np.nan) if low is None else np.asarray(low, dtype=float)

    def _low_cost_config(self) -> dict[str, Any]:
        """FLAML's ``low_cost_partial_config``: the declared low-cost coordinates."""
        if self.joint_:
            from ...space.flaml import flaml_low_cost

            return flaml_low_cost(self.joint_)
        low = self._low_cost_values()
        return {k: float(v) for k, v in zip(self.keys_, low) if not np.isnan(v)}

    def _first_point(self) -> np.ndarray:
        """``problem.start`` with the declared coordinates at their low-cost values."""
        low = self._low_cost_values()
        start = np.clip(np.asarray(self.problem_.start, dtype=float), 0.0, 1.0)
        return np.where(np.isnan(low), start, low)

    def _discrete(self) -> tuple[list[str], list[np.ndarray]]:
        """Keys and sorted grids of the discrete coordinates with at least two values."""
        grids = getattr(self.problem_, "grids", ()) or ()
        pairs = [(k, np.sort(np.asarray(g, dtype=float))) for k, g in zip(self.keys_, grids)
                 if g is not None and len(g) > 1]
        return [k for k, _ in pairs], [g for _, g in pairs]

    def _config(self, x: Any) -> dict[str, Any]:
        """FLAML's configuration of a point of the problem."""
        x = np.clip(np.asarray(x, dtype=float), 0.0, 1.0)
        if self.joint_:
            from ...space.joint import joint_decode
            from ...space.flaml import flaml_config

            return flaml_config(self.joint_, *joint_decode(self.joint_.encoding, x))
        return {k: float(v) for k, v in zip(self.keys_, x)}

    def _point(self, config: dict[str, Any]) -> np.ndarray:
        """The point of the problem of a FLAML configuration."""
        if self.joint_:
            from ...space.joint import joint_encode
            from ...space.flaml import flaml_point

            return joint_encode(self.joint_.encoding, *flaml_point(config, self.joint_))
        return np.clip(np.array([float(config[k]) for k in self.keys_]), 0.0, 1.0)

    # ------------------------------------------------------------------ ask / tell
    def _ask(self) -> tuple[np.ndarray, None]:
        self._withdraw_dropped()
        for _ in range(int(self.max_skips)):
            trial_id = f"trial_{self.n_flaml_}"
            self.n_flaml_ += 1
            config = self.searcher_.suggest(trial_id)
            if config is not None:
                self.flaml_trials_[self.n_asked_] = (trial_id, config)
                return self._point(config), None
        return self.rng_.uniform(0.0, 1.0, size=self.problem_.dim), None

    def _withdraw_dropped(self) -> None:
        """Complete as failed the FLAML trials whose suggestions were never issued or were
        dropped unevaluated (no longer pending, never told: a tell pops its trial)."""
        for key in [k for k in self.flaml_trials_ if k not in self.pending_]:
            trial_id, config = self.flaml_trials_.pop(key)
            self.searcher_.on_trial_complete(trial_id, {"config": config}, error=True)

    def _tell(self, suggestion: Suggestion, observation: Observation) -> None:
        value = self._finite([self.problem_.augment(suggestion.config, observation)])[0]
        self.worst_ = value if self.worst_ is None else max(self.worst_, value)
        trial = self.flaml_trials_.pop(suggestion.id, None)
        if trial is None:  # a random point after declined suggestions: FLAML did not ask it
            return
        trial_id, config = trial
        self.searcher_.on_trial_complete(
            trial_id, {_METRIC: value, _COST: self._cost(observation), "config": config})

    def _cost(self, observation: Observation) -> float:
        if observation.cached:
            return 0.0
        if self.cost == "evaluations":
            return 1.0
        return 1000.0 * (float(observation.fit_time) + float(observation.predict_time))

    def _finite(self, values: list[float]) -> list[float]:
        """Non-finite values replaced by the worst finite value seen (0 if none)."""
        finite = [float(v) for v in values if math.isfinite(v)]
        worst = max(finite + ([self.worst_] if self.worst_ is not None else []), default=0.0)
        return [float(v) if math.isfinite(v) else worst for v in values]


@THETA_SOLVERS.register("cfo")
class CFOThetaSolver(FlamlThetaSolver):
    """CFO: FLAML's cost-frugal local search FLOW² from the low-cost point, restarted from a
    perturbed low-cost point when it converges (Wu, Wang and Huang, AAAI 2021).

    See :class:`FlamlThetaSolver` for the mapping and the parameters.
    """

    searcher = "CFO"


@THETA_SOLVERS.register("blendsearch")
class BlendSearchThetaSolver(FlamlThetaSolver):
    """BlendSearch: FLAML's blend of a global search (Optuna's TPE) and FLOW² local threads with a
    cost-aware priority and a config validator (Wang, Wu, Huang and Saied, ICLR 2021).

    See :class:`FlamlThetaSolver` for the mapping and the parameters.
    """

    searcher = "BlendSearch"
