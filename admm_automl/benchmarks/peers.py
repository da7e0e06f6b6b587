"""Peer optimisers driven over the same pipeline space and the same evaluation engine as ADMM.

Optuna (a define-by-run conditional space), FLAML's BlendSearch / CFO (a hierarchical space: one
``tune.choice`` of per-algorithm dictionaries per module) and SMAC3 (a ConfigSpace with
conditions) propose configurations in their own terms; each is turned into the ``(z, θ)`` of
:class:`~admm_automl.space.PipelineSpace` and evaluated through the engine every ADMM run uses
(cache, executor, time budget, journal). So the comparison differs only in the search, not in how
a pipeline is trained, scored or timed.

Optuna and FLAML are the extras ``[optuna]`` and ``[flaml]`` (FLAML's searchers are also the
``cfo`` and ``blendsearch`` θ-solvers); SMAC3 is in ``[experiments]``.
"""

from __future__ import annotations

import inspect
import logging
import math
import warnings
from typing import Any, Callable, Sequence

import numpy as np

from ..constraints.ranking import Constraints
from ..methods.driver import Budget, Recorder
from ..exceptions import BudgetExhausted, InvalidParameterError, MissingDependencyError
from ..space import Categorical, Float, Int, PipelineSpace
from ..solvers.theta.smac import hpo_facade, import_smac
from ..space.flaml import flaml_point, flaml_space

OPTUNA_SAMPLERS = ("tpe", "random", "gp")
FLAML_SEARCHERS = ("blendsearch", "cfo")
SMAC_FACADES = ("hpo",)
#: configurations of SMAC3's initial design (see :func:`run_smac`)
SMAC_INITIAL_DESIGN = 20


class _Evaluator:
    """Evaluate one configuration at a time through the shared recorder (engine, budget, journal
    tags); remembers when the budget has ended so the peer's own loop can be stopped."""

    def __init__(self, space: PipelineSpace, engine: Callable[..., Any], budget: Budget,
                 phase: str, constraints: Constraints | None = None) -> None:
        self.constraints = constraints if constraints is not None else Constraints()
        self.recorder = Recorder(space.encoding, engine, budget, self.constraints)
        self.phase = phase
        self.stopped = False
        self.stop_reason = "time_budget"
        self.last: Any = None  # the last Observation (None when the budget stopped it)

    def __call__(self, z: tuple[int, ...], theta: np.ndarray) -> float:
        self.last = None
        try:
            (self.last,) = self.recorder.evaluate([(z, theta, 1.0)], self.phase)
        except BudgetExhausted as stop:
            self.stopped, self.stop_reason = True, str(stop)
            return math.inf
        return self.last.loss

    def violations(self) -> list[float]:
        """The relative constraint violations of the last evaluation (<= 0 where met; 1 where
        not measured: a failed pipeline, or one the budget stopped)."""
        if self.last is None:
            return [1.0] * len(self.constraints)
        return [float(v) for v in self.constraints.h(self.last)]

    def done(self) -> bool:
        budget, n = self.recorder.budget, self.recorder.n_evals
        left = budget.time_left()
        return self.stopped or (left is not None and left <= 1e-3) or (
            budget.max_evals is not None and n >= budget.max_evals)

    def outcome(self) -> tuple[int, str]:
        budget, n = self.recorder.budget, self.recorder.n_evals
        if budget.max_evals is not None and n >= budget.max_evals:
            return n, "max_evals"
        return n, self.stop_reason


def _ordered(algo: Any) -> list[tuple[int, Any]]:
    """(θ position, hyperparameter) of an algorithm, unconditional ones first (parents before
    the children whose condition reads them)."""
    tunable = list(enumerate(algo.tunable))
    return [p for p in tunable if not p[1].condition] + [p for p in tunable if p[1].condition]


# ------------------------------------------------------------------------------------- Optuna
def _optuna_point(trial: Any, space: PipelineSpace) -> tuple[tuple[int, ...], np.ndarray]:
    """Sample a pipeline define-by-run: a module's choice, then only that algorithm's active
    hyperparameters (each parameter named ``module:algorithm:hyperparameter``)."""
    enc = space.encoding
    theta = enc.initial_theta.copy()
    z = []
    for i, module in enumerate(space.modules):
        name = trial.suggest_categorical(module.name, list(enc.choice_names[i]))
        j = enc.choice_names[i].index(name)
        z.append(j)
        algo = module.choices[j]
        values = {h.name: h.default for h in algo.hyperparameters if not h.tunable}
        slot = enc.slots[i][j]
        for k, hp in _ordered(algo):
            if not algo.is_active(hp, values):
                continue
            key = enc.theta_names[slot[k]]
            if isinstance(hp, Float):
                value = trial.suggest_float(key, hp.low, hp.high, log=hp.log)
            elif isinstance(hp, Int):
                value = trial.suggest_int(key, hp.low, hp.high, log=hp.log)
            elif isinstance(hp, Categorical):
                value = hp.choices[trial.suggest_categorical(key, list(range(len(hp.choices))))]
            else:  # pragma: no cover - every tunable domain is handled above
                raise TypeError(f"no Optuna distribution for {type(hp).__name__}")
            values[hp.name] = value
            theta[slot[k]] = hp.to_unit(value)
    return tuple(z), theta


def run_optuna(
    space: PipelineSpace, engine: Callable[..., Any], budget: Budget, *, seed: int,
    option: str = "tpe", constraints: Sequence[Any] = (),
) -> tuple[int, str]:
    """Optuna's TPE (default settings), random or GP sampler until the budget runs out; returns
    the number of new evaluations and the stop reason. The GP sampler needs torch, which is no
    dependency of this package (``pip install torch``).

    With ``constraints`` (objects with ``key``, ``threshold`` and ``sense``, as the run set-up's
    ``prepared.constraints``), the sampler is Optuna's constrained one: each trial reports its
    relative violations through ``constraints_func`` (Optuna's TPE and GP samplers model feasible
    trials as the good ones and infeasible ones by their total violation; the random sampler takes
    no constraints), and the recorder ranks observations feasible first, as the ``filter``
    constraint mode does. A failed pipeline reports a violation of 1 for every constraint.
    """
    sampler = option
    try:
        import optuna
    except ImportError:
        raise MissingDependencyError(
            "the Optuna peer needs optuna: pip install 'admm-automl[optuna]'"
        ) from None
    if sampler not in OPTUNA_SAMPLERS:
        raise InvalidParameterError(f"Optuna sampler must be one of {OPTUNA_SAMPLERS!r}, got {sampler!r}")
    optuna.logging.set_verbosity(logging.WARNING)
    if sampler == "gp":
        try:
            import torch  # noqa: F401
        except ImportError:
            raise MissingDependencyError("Optuna's GP sampler needs torch: pip install torch") from None
    make = {"tpe": optuna.samplers.TPESampler, "random": optuna.samplers.RandomSampler,
            "gp": optuna.samplers.GPSampler}[sampler]
    options: dict[str, Any] = {"seed": seed}
    if constraints and sampler != "random":
        if "constraints_func" not in inspect.signature(make).parameters:
            raise InvalidParameterError(
                f"Optuna {optuna.__version__}'s {make.__name__} takes no constraints (its GP "
                "sampler does from Optuna 4.2); use the tpe sampler")
        options["constraints_func"] = lambda trial: trial.user_attrs["violations"]
    with warnings.catch_warnings():  # constraints_func is "experimental" in Optuna 3 and 4
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study = optuna.create_study(direction="minimize", sampler=make(**options))
    evaluator = _Evaluator(space, engine, budget, f"optuna-{sampler}",
                           Constraints(constraints, mode="filter"))

    def objective(trial: Any) -> float:
        loss = evaluator(*_optuna_point(trial, space))
        trial.set_user_attr("violations", evaluator.violations())
        if evaluator.done():
            trial.study.stop()
        return loss

    if not evaluator.done():
        study.optimize(objective, n_trials=None, timeout=budget.time_left())
    return evaluator.outcome()


# -------------------------------------------------------------------------------------- FLAML
def run_flaml(
    space: PipelineSpace, engine: Callable[..., Any], budget: Budget, *, seed: int,
    option: str = "blendsearch",
) -> tuple[int, str]:
    """FLAML's BlendSearch (global TPE + local CFO) or CFO alone, in-process, until the budget runs
    out; returns the number of new evaluations and the stop reason."""
    searcher = option
    try:
        with warnings.catch_warnings():  # "flaml.automl is not available": not needed here
            warnings.simplefilter("ignore", UserWarning)
            from flaml import CFO, BlendSearch, tune
    except ImportError:
        raise MissingDependencyError(
            "the FLAML peer needs FLAML: pip install 'admm-automl[flaml]'"
        ) from None
    if searcher not in FLAML_SEARCHERS:
        raise InvalidParameterError(f"FLAML searcher must be one of {FLAML_SEARCHERS!r}, got {searcher!r}")
    cls = BlendSearch if searcher == "blendsearch" else CFO
    evaluator = _Evaluator(space, engine, budget, f"flaml-{searcher}")

    def evaluate(config: dict[str, Any]) -> dict[str, float]:
        return {"loss": evaluator(*flaml_point(config, space))}

    left = budget.time_left()
    if not evaluator.done():
        logging.getLogger("flaml").setLevel(logging.WARNING)
        tune.run(
            evaluate,
            search_alg=cls(metric="loss", mode="min", space=flaml_space(space), seed=seed),
            time_budget_s=left,
            num_samples=budget.max_evals if budget.max_evals is not None else -1,
            verbose=0,
        )
    return evaluator.outcome()


# -------------------------------------------------------------------------------------- SMAC3
def smac_space(space: PipelineSpace, seed: int) -> Any:
    """SMAC3's ConfigSpace of ``space``: a categorical per module, each algorithm's
    hyperparameters (named ``module:algorithm:hyperparameter``) active only when the module picks
    that algorithm and when their own conditions hold. Categorical values are their indices."""
    from ConfigSpace import (AndConjunction, Categorical as CSCategorical, ConfigurationSpace,
                             EqualsCondition, Float as CSFloat, InCondition, Integer as CSInteger)

    enc = space.encoding
    cs = ConfigurationSpace(seed=seed)
    for i, module in enumerate(space.modules):
        chooser = CSCategorical(module.name, list(enc.choice_names[i]),
                                default=enc.choice_names[i][enc.initial_z[i]])
        cs.add(chooser)
        for j, algo in enumerate(module.choices):
            fixed = {h.name: h.default for h in algo.hyperparameters if not h.tunable}
            made: dict[str, Any] = {}
            for k, hp in _ordered(algo):
                name = enc.theta_names[enc.slots[i][j][k]]
                if isinstance(hp, Float):
                    made[hp.name] = CSFloat(name, (hp.low, hp.high), log=hp.log,
                                            default=hp.default)
                elif isinstance(hp, Int):
                    made[hp.name] = CSInteger(name, (hp.low, hp.high), log=hp.log,
                                              default=hp.default)
                else:
                    made[hp.name] = CSCategorical(name, list(range(len(hp.choices))),
                                                  default=hp.index(hp.default))
                conditions = [EqualsCondition(made[hp.name], chooser, algo.name)]
                for parent, allowed in hp.condition.items():
                    if parent in fixed:  # a constant parent: always or never active
                        if fixed[parent] not in allowed:
                            conditions = []
                            break
                        continue
                    if parent not in made:  # its parent is never active either
                        conditions = []
                        break
                    parent_hp = next(h for h in algo.tunable if h.name == parent)
                    conditions.append(InCondition(made[hp.name], made[parent],
                                                  [parent_hp.index(v) for v in allowed]))
                if not conditions:
                    del made[hp.name]  # never active: not searched
                    continue
                cs.add(made[hp.name])
                cs.add(conditions[0] if len(conditions) == 1 else AndConjunction(*conditions))
    return cs


def _smac_point(config: Any, space: PipelineSpace) -> tuple[tuple[int, ...], np.ndarray]:
    enc = space.encoding
    theta = enc.initial_theta.copy()
    values = dict(config)
    z = []
    for i, module in enumerate(space.modules):
        j = enc.choice_names[i].index(values[module.name])
        z.append(j)
        slot = enc.slots[i][j]
        for k, hp in enumerate(module.choices[j].tunable):
            name = enc.theta_names[slot[k]]
            if name in values:
                value = values[name]
                theta[slot[k]] = hp.to_unit(hp.choices[int(value)] if isinstance(hp, Categorical)
                                            else value)
    return tuple(z), theta


def run_smac(
    space: PipelineSpace, engine: Callable[..., Any], budget: Budget, *, seed: int,
    option: str = "hpo",
) -> tuple[int, str]:
    """SMAC3's hyperparameter-optimisation facade (a random forest with EI over the conditional
    space, the SMAC that Zhang et al. 2016 and auto-sklearn use) by ask/tell until the budget runs
    out; returns the number of new evaluations and the stop reason. The facade is the ``smac``
    θ-solver's (:func:`~admm_automl.solvers.theta.smac.hpo_facade`: default settings but a
    :data:`SMAC_INITIAL_DESIGN`-configuration initial design and a single-threaded forest);
    SMAC's files go to a temporary directory. Its proposals also depend on Python's hash seed
    (it iterates sets of configurations): a run repeats only under the same ``PYTHONHASHSEED``.
    """
    import tempfile

    if option not in SMAC_FACADES:
        raise InvalidParameterError(f"SMAC3 facade must be one of {SMAC_FACADES!r}, got {option!r}")
    _, _, TrialValue = import_smac("the SMAC3 peer")
    evaluator = _Evaluator(space, engine, budget, f"smac3-{option}")
    if evaluator.done():
        return evaluator.outcome()
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        smac = hpo_facade(smac_space(space, seed), seed=seed,
                          n_trials=budget.max_evals or 10**9, output_directory=tmp,
                          n_initial=SMAC_INITIAL_DESIGN, user="the SMAC3 peer")
        while not evaluator.done():
            info = smac.ask()
            loss = evaluator(*_smac_point(info.config, space))
            if math.isfinite(loss):
                smac.tell(info, TrialValue(cost=loss))
    return evaluator.outcome()
