"""``smac``: SMAC3's random-forest Bayesian optimisation behind the ask/tell protocol."""

from __future__ import annotations

import logging
import math
import tempfile
import warnings
from typing import Any

import numpy as np

from ...exceptions import MissingDependencyError
from ..base import BaseThetaSolver
from ..registry import THETA_SOLVERS


def import_smac(user: str = "theta solver 'smac'"):
    """SMAC3's module and its trial records, or a :class:`MissingDependencyError` naming
    ``user`` and the install command."""
    try:
        import smac
        from smac.runhistory.dataclasses import TrialInfo, TrialValue
    except ImportError:
        raise MissingDependencyError(
            f"{user} needs SMAC3: pip install 'admm-automl[experiments]'") from None
    return smac, TrialInfo, TrialValue


def hpo_facade(configspace: Any, *, seed: int, n_trials: int, output_directory: str,
               n_initial: int, user: str = "theta solver 'smac'") -> Any:
    """SMAC3's hyperparameter-optimisation facade (a random forest with log-EI, the SMAC of
    Zhang et al. 2016 and auto-sklearn) for ask/tell, at its default settings but two.

    The initial design has ``n_initial`` configurations (SMAC's default, 10 per hyperparameter
    up to a quarter of ``n_trials``, would spend a short budget on a pipeline space's Sobol design
    alone), and the random forest is fitted single-threaded and without a leaf budget: SMAC's
    ``n_jobs=-1`` would compete with the evaluations for the cores, which every other solver
    leaves to them, and its ``max_leaf_nodes=2**20`` grows the same unlimited trees but makes
    scikit-learn allocate for a million leaves, ~0.4 s per tree.
    """
    smac, _, _ = import_smac(user)
    from smac.model.random_forest import RandomForest

    scenario = smac.Scenario(configspace, deterministic=True, seed=int(seed),
                             n_trials=int(n_trials), output_directory=output_directory)
    design = smac.HyperparameterOptimizationFacade.get_initial_design(
        scenario, n_configs=int(n_initial))
    model = RandomForest(scenario.configspace, log_y=True, n_trees=10, ratio_features=1.0,
                         min_samples_split=2, min_samples_leaf=1, seed=scenario.seed, n_jobs=1,
                         max_leaf_nodes=None)
    return smac.HyperparameterOptimizationFacade(
        scenario, lambda config, seed=0: 0.0, model=model, initial_design=design,
        overwrite=True, logging_level=logging.ERROR)


@THETA_SOLVERS.register("smac")
class SMACThetaSolver(BaseThetaSolver):
    """SMAC3 (Lindauer et al., JMLR 2022) on the active unit box: random-forest BO.

    The back end FLASH tunes its pruned space with (Zhang et al. 2016, "FLASH"; ``tpe`` is
    their "FLASH*"), as a thin adapter over SMAC3's hyperparameter-optimisation facade
    (:func:`hpo_facade`) driven by ask/tell. A continuous coordinate is a float on [0, 1]; a
    discrete one is an ordinal over its admissible unit values (``problem.grids``), so the
    forest splits on its order. SMAC's files go to a temporary directory that lives as long as
    the solver's problem.

    Warm start: every ``problem.history`` observation is told first, scored with
    ``problem.augment`` (SMAC's initial design still runs, as SMAC runs it after a warm start),
    and ``problem.start`` is asked first unless the history holds it. A new ADMM iterate
    (``update_problem``) builds a new facade told the new history: the duals changed every
    value. A value that is not finite is not told (SMAC's forest needs finite costs); a failed
    evaluation already carries the metric's worst loss. The seed is drawn from the rng given to
    ``setup``; SMAC3 also iterates Python sets of configurations, so its proposals depend on the
    interpreter's hash seed too: set ``PYTHONHASHSEED`` for a history that repeats across
    processes (within one process a seed repeats). SMAC proposes one configuration at a time
    (no batches).

    Parameters
    ----------
    n_initial : int, default=10
        Configurations of SMAC's Sobol initial design.

    References
    ----------
    M. Lindauer et al. SMAC3: A Versatile Bayesian Optimization Package for Hyperparameter
    Optimization. JMLR 23(54), 2022. F. Hutter, H. Hoos, K. Leyton-Brown. Sequential Model-Based
    Optimization for General Algorithm Configuration. LION 2011.
    """

    requires = (("smac", "'admm-automl[experiments]'"),)

    def __init__(self, n_initial: int = 10) -> None:
        self.n_initial = n_initial

    def _setup(self) -> None:
        import_smac()  # a clear error before ConfigSpace (SMAC3's dependency) is imported
        from ConfigSpace import ConfigurationSpace, Float, OrdinalHyperparameter

        problem = self.problem_
        seed = int(self.rng_.integers(2**31 - 1))
        grids = tuple(getattr(problem, "grids", ())) or (None,) * int(problem.dim)
        self.grids_ = grids
        cs = ConfigurationSpace(seed=seed)
        for k, grid in enumerate(grids):
            cs.add(Float(f"x{k}", (0.0, 1.0)) if grid is None else
                   OrdinalHyperparameter(f"x{k}", [float(v) for v in grid]))
        self.configspace_ = cs
        self.tmp_ = tempfile.TemporaryDirectory(prefix="admm-automl-smac-")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.smac_ = hpo_facade(cs, seed=seed, n_trials=10**9,
                                    output_directory=self.tmp_.name,
                                    n_initial=int(self.n_initial))
        #: SMAC's TrialInfo of each pending suggestion id (the start point has none)
        self.infos_: dict[int, Any] = {}
        for x, obs in problem.history:
            self._tell_value(None, x, problem.augment(x, obs))
        self.first_ = self._start_point()

    def update_problem(self, problem) -> None:
        """New ADMM iterate: a fresh facade told the new problem's history (re-scored with its
        duals); pending suggestions are forgotten."""
        super().update_problem(problem)
        self.pending_.clear()
        self._setup()

    def _tell_value(self, info: Any, x: Any, value: float) -> None:
        if not math.isfinite(value):
            return
        from ConfigSpace import Configuration

        _, TrialInfo, TrialValue = import_smac()
        if info is None:  # a point SMAC did not ask: the history, the start
            x = np.clip(np.asarray(x, dtype=float), 0.0, 1.0)
            values = {}
            for k, (v, grid) in enumerate(zip(x, self.grids_)):
                values[f"x{k}"] = float(v if grid is None else grid[np.abs(grid - v).argmin()])
            info = TrialInfo(Configuration(self.configspace_, values=values), seed=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.smac_.tell(info, TrialValue(cost=float(value)), save=False)

    def _ask(self) -> tuple[np.ndarray, None]:
        if self.first_ is not None:
            x, self.first_ = self.first_, None
            return x, None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            info = self.smac_.ask()
        self.infos_[self.n_asked_] = info  # the id _issue gives this suggestion
        values = dict(info.config)
        return np.array([float(values[f"x{k}"]) for k in range(len(self.grids_))]), None

    def _tell(self, suggestion, observation) -> None:
        value = float(self.problem_.augment(suggestion.config, observation))
        self._tell_value(self.infos_.pop(suggestion.id, None), suggestion.config, value)
