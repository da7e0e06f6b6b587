"""FLASH's first layer as the z-step: a linear model over pipeline paths with EIPS (Zhang et al.,
KDD 2016), plugged into ADMM as a block solver."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ...exceptions import InvalidParameterError
from ...records import Observation, Status, Suggestion
from ..base import BaseZSolver, random_z
from ..registry import Z_SOLVERS
from ..._numerics import flash as F


def observation_seconds(obs: Observation) -> float:
    """The cost of one evaluation in seconds: its fit and predict time, or, for an evaluation that
    did not succeed and reported none (a timeout, a memory error, a lost worker), its wall time —
    the paper keeps the measured time of a failed run. A successful evaluation that reports 0 s
    (an analytic benchmark function) costs 0: its wall time would make the models, and so the
    run, depend on the machine's timing."""
    seconds = obs.fit_time + obs.predict_time
    if seconds > 0 or obs.status is Status.OK:
        return float(seconds)
    return float(max(obs.duration, 0.0))


def usable(obs: Observation) -> bool:
    """Whether an evaluation enters FLASH's models: a full-data result that the end of the time
    budget did not cut short, and not a cache hit (which repeats an earlier evaluation)."""
    return obs.fidelity >= 1.0 and not obs.budget_stop and not obs.cached


def fit_models(
    pairs: Sequence[tuple[tuple[int, ...], Observation]],
    value: Callable[[tuple[int, ...], Observation], float],
    n_choices: Sequence[int], *, alpha: float, transform: str, cost_scale: float = 1.0,
    censor_timeouts: bool = False,
) -> F.PathModels:
    """Both of FLASH's ridge models on ``(z, observation)`` pairs (the :func:`usable` ones, of
    which there must be at least one): ``value(z, observation)`` is the performance target,
    :func:`observation_seconds` times ``cost_scale`` the cost. With ``censor_timeouts``, a run
    its time limit stopped informs the cost model only (``censored`` of
    :func:`~admm_automl._numerics.flash.fit_path_models`); otherwise it enters both with the
    failure loss, the paper's rule."""
    data = [(tuple(int(j) for j in z), obs) for z, obs in pairs if usable(obs)]
    censored = (np.array([obs.status is Status.TIMEOUT for _, obs in data])
                if censor_timeouts else None)
    return F.fit_path_models(
        np.array([z for z, _ in data]), np.array([value(z, obs) for z, obs in data], dtype=float),
        cost_scale * np.array([observation_seconds(obs) for _, obs in data]), n_choices,
        alpha=alpha, transform=transform, censored=censored,
    )


class NewEntries:
    """What a list that only grows gained since the last :meth:`read` (all of it when it is
    another list object or shorter: a new problem's history, a reset)."""

    def __init__(self) -> None:
        self.source: Sequence | None = None
        self.n_read = 0

    def read(self, items: Sequence) -> tuple[bool, Sequence]:
        """``(fresh, new entries)``: ``fresh`` when everything is new."""
        fresh = items is not self.source or self.n_read > len(items)
        start = 0 if fresh else self.n_read
        self.source, self.n_read = items, len(items)
        return fresh, items[start:]


@Z_SOLVERS.register("flash")
class FlashZSolver(BaseZSolver):
    """FLASH's path model for z-min: a greedy D-optimal start, then the path of highest EIPS.

    A pipeline path (one algorithm per module) is a one-hot vector; two ridge models over those
    vectors predict the value (``problem.augment``: the loss plus the current constraint terms)
    and the cost (fit + predict seconds) of a path, hyperparameters being treated as noise, and
    the next path is the one with the highest expected improvement per unit of predicted cost
    (EIPS). This is mode (b) of plugging FLASH into ADMM: FLASH's surrogate and acquisition for the
    discrete block, with no pruning and no hyperparameter tuning of its own (the θ-steps do that).

    * **Every evaluation of the run feeds both models** when the optimiser provides
      ``problem.observations`` (ADMM and ``method="select"`` do): θ-steps at any θ and every
      earlier z-step, not only this z-problem. The models are refitted at each ask; values are
      recomputed with the current ``problem.augment`` (the multipliers move). Without it, the
      solver uses the histories of its problems and its own trials. Partial-data, interrupted
      and cached evaluations are left out (:func:`usable`).
    * **Initial design**: while fewer than ``n_init`` distinct paths have been observed (asked ones
      pending included), the next path is the greedy D-optimal pick given all of them (the paper's
      Algorithm 2, online version; its first pick, with nothing observed, is uniform).
    * **EIPS** (the paper's Eq. 4) is ranked in log space, ties broken at random; the argmax runs
      over the candidate paths not yet asked under the current θ (re-asking one would only return
      the cached result). When all have been asked, a random path is asked (a free cache hit).
    * Failed evaluations enter both models: with the run's failure loss as value (the metric's
      worst, as the paper's 100 % error) and their measured time as cost
      (:func:`observation_seconds`); a timed-out one enters the cost model only
      (``censor_timeouts``).

    Parameters
    ----------
    n_init : int, optional
        Distinct paths of the initial design; default N − K + 1 (the rank of the path vectors: 30
        on the paper's benchmark layout, where the paper uses 30).
    xi : float, default=1.0
        EI exploration offset in loss units (the paper's ξ = 100 on percent error is 1.0 on a
        [0, 1] error). With it EIPS mostly probes under-observed algorithms, as in the paper's
        Phase 2; ``xi=0`` exploits the model.
    ridge_alpha : float, default=1.0
        Ridge penalty of both models (with an unpenalised intercept, as the authors' code).
    cost_transform : {"log1p", "log", "identity"}, default="log1p"
        Target of the cost model: log(1 + τ) (positive for sub-second runs; the paper's log τ is
        ``"log"``; see :func:`~admm_automl._numerics.flash.transform_cost`).
    censor_timeouts : bool, default=True
        A run its per-trial time limit stopped teaches the cost model only (its loss is not
        known); False scores it as the worst loss, the authors' rule for every failed run
        (see :class:`~admm_automl.methods.flash.FlashSettings` for why).
    max_enumerate : int, default=100000
        Score every path up to this many; larger spaces use a stratified sample.
    n_candidates : int, default=5000
        Size of that sample (drawn once per run, every algorithm represented).

    References
    ----------
    Y. Zhang, M. T. Bahadori, H. Su, J. Sun. FLASH: Fast Bayesian Optimization for Data Analytic
    Pipelines. KDD 2016. S. Liu et al. An ADMM Based Framework for AutoML Pipeline Configuration.
    AAAI 2020.
    """

    supports_batch = True

    def __init__(
        self,
        n_init: int | None = None,
        xi: float = F.DEFAULT_XI,
        ridge_alpha: float = F.DEFAULT_RIDGE_ALPHA,
        cost_transform: str = F.DEFAULT_COST_TRANSFORM,
        censor_timeouts: bool = True,
        max_enumerate: int = F.DEFAULT_MAX_ENUMERATE,
        n_candidates: int = F.DEFAULT_N_CANDIDATES,
    ) -> None:
        self.n_init = n_init
        self.xi = xi
        self.ridge_alpha = ridge_alpha
        self.cost_transform = cost_transform
        self.censor_timeouts = censor_timeouts
        self.max_enumerate = max_enumerate
        self.n_candidates = n_candidates

    def _setup(self) -> None:
        n_choices = F.check_n_choices(self.problem_.n_choices)
        self.n_init_ = F.check_n_init(self.n_init, n_choices)
        self.xi_ = F.check_xi(self.xi)
        self.ridge_alpha_ = F.check_ridge_alpha(self.ridge_alpha)
        self.cost_transform_ = F.check_cost_transform(self.cost_transform)
        if not isinstance(self.censor_timeouts, (bool, np.bool_)):
            raise InvalidParameterError(
                f"censor_timeouts must be a bool, got {self.censor_timeouts!r}")
        self.paths_ = F.candidate_paths(n_choices, self.rng_, max_enumerate=self.max_enumerate,
                                        n_candidates=self.n_candidates)
        self.path_tuples_ = [tuple(p) for p in self.paths_.tolist()]
        #: the candidate paths' rows, and their one-hot vectors, encoded once for every ask
        self.path_index_ = {p: i for i, p in enumerate(self.path_tuples_)}
        self.encoded_paths_ = F.encode_paths(self.paths_, n_choices)
        self.path_columns_ = F.path_columns(self.paths_, n_choices)
        #: (z, observation) of every problem's history and every trial (without observations)
        self.own_: list[tuple[tuple[int, ...], Observation]] = list(self.problem_.history)
        #: the usable observations as arrays (:meth:`_observed`), and which candidate paths
        #: were asked under the current θ (:meth:`_asked`): both grown at each ask from the
        #: entries added since the last, not rebuilt from all of them
        self.observed_ = self.asked_ = None
        self.observed_reader_, self.history_reader_, self.trials_reader_ = (
            NewEntries(), NewEntries(), NewEntries())

    def update_problem(self, problem) -> None:
        super().update_problem(problem)
        self.own_.extend(problem.history)

    def _tell(self, suggestion: Suggestion, observation: Observation) -> None:
        self.own_.append((tuple(suggestion.config), observation))

    def _observed(self) -> F.ObservedPaths:
        """The :func:`usable` observations (``problem.observations()`` or :attr:`own_`, both
        lists that only grow) as arrays: the entries added since the last ask are appended, and
        the whole list is read again only when it is another list or shorter, so that an ask
        does not convert every entry again."""
        source = self.problem_.observations
        fresh, new = self.observed_reader_.read(source() if source is not None else self.own_)
        if fresh:
            self.observed_ = F.ObservedPaths(self.problem_.n_choices)
        for z, obs in new:
            if usable(obs):
                self.observed_.append(tuple(int(j) for j in z), observation_seconds(obs),
                                      obs.status is Status.TIMEOUT, obs)
        return self.observed_

    def _asked(self) -> np.ndarray:
        """Which candidate paths (rows of :attr:`paths_`) were asked under the current θ: in the
        problem's history or told to this solver since :meth:`update_problem`. Kept from ask to
        ask; the entries added since are marked, and all read again when the history or
        :attr:`trials_` is another list or shorter."""
        fresh_history, history = self.history_reader_.read(self.problem_.history)
        fresh_trials, trials = self.trials_reader_.read(self.trials_)
        if fresh_history or fresh_trials:
            self.asked_ = np.zeros(len(self.paths_), dtype=bool)
            history, trials = self.problem_.history, self.trials_
        for z, _ in [*history, *trials]:
            i = self.path_index_.get(tuple(z))
            if i is not None:
                self.asked_[i] = True
        return self.asked_

    def _ask(self) -> tuple[tuple[int, ...], None]:
        n_choices = self.problem_.n_choices
        # pending here, and in flight for an earlier step: neither is proposed again
        pending = [tuple(s.config) for s in self.pending_.values()]
        pending += [tuple(int(j) for j in c) for c, _ in self._in_flight_elsewhere()]
        open_ = ~self._asked()
        for p in pending:
            i = self.path_index_.get(p)
            if i is not None:
                open_[i] = False
        free = self.paths_[open_]
        if len(free) == 0:
            return random_z(self.rng_, n_choices), None
        observed = self._observed()
        distinct = observed.distinct
        n_seen = len(distinct) + len(set(pending).difference(distinct))
        if n_seen < self.n_init_ or not len(observed):
            seen = distinct.union(pending)
            observed_paths = F.encode_paths(np.array(sorted(seen)), n_choices) if seen else None
            design = F.greedy_d_optimal_design(F.encode_paths(free, n_choices), 1, self.rng_,
                                               observed=observed_paths)
            return tuple(int(j) for j in free[design.indices[0]]), None
        censored = observed.censored.array if self.censor_timeouts else None
        values = observed.values(self.problem_.augment, self.problem_)
        if pending:
            # trials in flight (many workers): both models from the Gram matrices kept as rows
            # arrive and the scores by gathers (K + K² numbers a path, where the one-hot
            # products move (n × N) and (paths × N) matrices), so that the ask's cost does not
            # grow with the observations; equal up to rounding, hence only with trials in
            # flight: a serial run (nothing pending) keeps its exact history
            models = F.fit_path_models_columns(
                observed.columns.array, values, observed.seconds.array, n_choices,
                observed.gram, alpha=self.ridge_alpha_, transform=self.cost_transform_,
                censored=censored, censored_gram=observed.censored_gram)
            scores = models.log_eips_columns(self.path_columns_[open_], self.xi_)
        else:
            models = F.fit_path_models(
                observed.paths.array, values, observed.seconds.array, n_choices,
                alpha=self.ridge_alpha_, transform=self.cost_transform_, censored=censored)
            scores = models.log_eips_encoded(self.encoded_paths_[open_], self.xi_)
        best = F.rank_with_random_ties(scores, self.rng_)[0]
        return tuple(int(j) for j in free[best]), None
