"""``tpe``: Optuna's tree-structured Parzen estimator behind the ask/tell protocol."""

from __future__ import annotations

import math
import warnings

import numpy as np

from ...exceptions import MissingDependencyError
from ..base import BaseThetaSolver
from ..registry import THETA_SOLVERS


def _import_optuna():
    try:
        import optuna
    except ImportError as err:  # pragma: no cover - a core dependency
        raise MissingDependencyError(
            f"theta solver 'tpe' needs optuna >= 3.6: pip install 'admm-automl[optuna]' ({err})"
        ) from None
    return optuna


@THETA_SOLVERS.register("tpe")
class TPEThetaSolver(BaseThetaSolver):
    """Optuna's TPE sampler (Bergstra et al., NeurIPS 2011) on the active unit box.

    The model-based search that FLASH's "FLASH*" tunes its pruned space with (Zhang et al. 2016)
    and BlendSearch's global searcher and baseline (Wang et al. 2021): a thin adapter over
    :class:`optuna.samplers.TPESampler` through Optuna's ask/tell interface, an in-memory study
    per problem. A continuous coordinate is a ``FloatDistribution`` on [0, 1] (the unit scale
    already carries a hyperparameter's log scale); a discrete one is a categorical over its
    admissible unit values (``problem.grids``), which is how TPE models a choice.

    Warm start: every ``problem.history`` observation enters the study as a finished trial,
    scored with ``problem.augment`` (so TPE's random start-up is shortened or skipped), and
    ``problem.start`` (or the low-cost point, ``low_cost=True``) is asked first unless the
    history holds it. A new ADMM iterate
    (``update_problem``) rebuilds the study from the new history: the duals changed every value.
    Parallel batches use Optuna's constant liar (running trials count as bad, so a batch
    spreads out). A value that is not finite is told as a failed trial, which TPE leaves out; a
    failed evaluation already carries the metric's worst loss. The sampler's seed is drawn from
    the rng given to ``setup``.

    Parameters
    ----------
    n_startup_trials : int, default=10
        Random trials before TPE models (history trials count), Optuna's default.
    multivariate : bool, default=False
        Model the coordinates jointly (Falkner et al.'s multivariate TPE) instead of
        independently; Optuna's default is False.
    low_cost : bool, default=False
        Start from the problem's low-cost point (``problem.start`` with the coordinates that
        declare a low-cost value at it), where CFO and BlendSearch start: Wang et al. 2021 give
        their BO baseline the same low-cost start, so a comparison differs in the search only.

    References
    ----------
    J. Bergstra, R. Bardenet, Y. Bengio, B. Kégl. Algorithms for Hyper-Parameter Optimization.
    NeurIPS 2011. T. Akiba et al. Optuna: A Next-generation Hyperparameter Optimization Framework.
    KDD 2019.
    """

    supports_batch = True
    requires = (("optuna", "'admm-automl[optuna]'"),)

    def __init__(self, n_startup_trials: int = 10, multivariate: bool = False,
                 low_cost: bool = False) -> None:
        self.n_startup_trials = n_startup_trials
        self.multivariate = multivariate
        self.low_cost = low_cost

    def _setup(self) -> None:
        optuna = _import_optuna()
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        problem = self.problem_
        grids = tuple(getattr(problem, "grids", ())) or (None,) * int(problem.dim)
        self.distributions_ = {
            f"x{k}": (optuna.distributions.FloatDistribution(0.0, 1.0) if grid is None else
                      optuna.distributions.CategoricalDistribution(
                          tuple(float(v) for v in grid)))
            for k, grid in enumerate(grids)
        }
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler = optuna.samplers.TPESampler(
                n_startup_trials=int(self.n_startup_trials), multivariate=bool(self.multivariate),
                constant_liar=True, seed=int(self.rng_.integers(2**31 - 1)))
        self.study_ = optuna.create_study(direction="minimize", sampler=sampler)
        #: the Optuna trial of each pending suggestion id (the start point has none)
        self.trials_by_id_: dict[int, object] = {}
        for x, obs in problem.history:
            self._add(x, problem.augment(x, obs))
        self.first_ = self._start_point()
        low = getattr(problem, "low_cost", None)
        if self.low_cost and low is not None and problem.start is not None:
            start = np.clip(np.asarray(problem.start, dtype=float), 0.0, 1.0)
            self.first_ = np.where(np.isnan(np.asarray(low, dtype=float)), start, low)

    def update_problem(self, problem) -> None:
        """New ADMM iterate: a fresh study told the new problem's history (re-scored with its
        duals); pending suggestions are forgotten."""
        super().update_problem(problem)
        self.pending_.clear()
        self._setup()

    def _params(self, x) -> dict[str, float]:
        """Optuna's parameters of point ``x``: a discrete coordinate at its nearest value."""
        x = np.clip(np.asarray(x, dtype=float), 0.0, 1.0)
        params = {}
        for k, value in enumerate(x):
            dist = self.distributions_[f"x{k}"]
            if hasattr(dist, "choices"):
                choices = np.asarray(dist.choices, dtype=float)
                value = dist.choices[int(np.abs(choices - value).argmin())]
            params[f"x{k}"] = float(value)
        return params

    def _add(self, x, value: float) -> None:
        """A finished trial at ``x`` (a failed one if ``value`` is not finite)."""
        optuna = _import_optuna()
        finite = math.isfinite(value)
        self.study_.add_trial(optuna.trial.create_trial(
            params=self._params(x), distributions=self.distributions_,
            value=float(value) if finite else None,
            state=optuna.trial.TrialState.COMPLETE if finite else optuna.trial.TrialState.FAIL))

    def _ask(self) -> tuple[np.ndarray, None]:
        if self.first_ is not None:
            x, self.first_ = self.first_, None
            return x, None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Optuna's experimental-feature notes
            trial = self.study_.ask(self.distributions_)
        self.trials_by_id_[self.n_asked_] = trial  # the id _issue gives this suggestion
        x = np.array([trial.params[f"x{k}"] for k in range(len(self.distributions_))])
        return x, None

    def _tell(self, suggestion, observation) -> None:
        value = float(self.problem_.augment(suggestion.config, observation))
        trial = self.trials_by_id_.pop(suggestion.id, None)
        if trial is None:  # the start point: Optuna did not ask it
            self._add(suggestion.config, value)
            return
        optuna = _import_optuna()
        if math.isfinite(value):
            self.study_.tell(trial, value)
        else:
            self.study_.tell(trial, state=optuna.trial.TrialState.FAIL)
