"""Peer optimisers driven over the same pipeline space and the same evaluation engine as ADMM.

Optuna (a define-by-run conditional space) and FLAML's BlendSearch / CFO (a hierarchical space:
one ``tune.choice`` of per-algorithm dictionaries per module) propose configurations in their own
terms; each is turned into the ``(z, θ)`` of :class:`~admm_automl.space.PipelineSpace` and
evaluated through the engine every ADMM run uses (cache, executor, time budget, journal). So the
comparison differs only in the search, not in how a pipeline is trained, scored or timed.

Both libraries are optional (``pip install 'admm-automl[experiments]'``).
"""

from __future__ import annotations

import logging
import math
import warnings
from typing import Any, Callable

import numpy as np

from .._lagrangian import Constraints
from .._recorder import Budget, Recorder
from ..exceptions import BudgetExhausted, InvalidParameterError, MissingDependencyError
from ..space import Categorical, Float, Int, PipelineSpace

OPTUNA_SAMPLERS = ("tpe", "random", "gp")
FLAML_SEARCHERS = ("blendsearch", "cfo")


class _Evaluator:
    """Evaluate one configuration at a time through the shared recorder (engine, budget, journal
    tags); remembers when the budget has ended so the peer's own loop can be stopped."""

    def __init__(self, space: PipelineSpace, engine: Callable[..., Any], budget: Budget,
                 phase: str) -> None:
        self.recorder = Recorder(space.encoding, engine, budget, Constraints())
        self.phase = phase
        self.stopped = False
        self.stop_reason = "time_budget"

    def __call__(self, z: tuple[int, ...], theta: np.ndarray) -> float:
        try:
            (obs,) = self.recorder.evaluate([(z, theta, 1.0)], self.phase)
        except BudgetExhausted as stop:
            self.stopped, self.stop_reason = True, str(stop)
            return math.inf
        return obs.loss

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
    option: str = "tpe",
) -> tuple[int, str]:
    """Optuna's TPE (default settings), random or GP sampler until the budget runs out; returns
    the number of new evaluations and the stop reason. The GP sampler needs torch, which is no
    dependency of this package (``pip install torch``)."""
    sampler = option
    try:
        import optuna
    except ImportError:
        raise MissingDependencyError(
            "the Optuna peer needs optuna: pip install 'admm-automl[experiments]'"
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
    study = optuna.create_study(direction="minimize", sampler=make(seed=seed))
    evaluator = _Evaluator(space, engine, budget, f"optuna-{sampler}")

    def objective(trial: Any) -> float:
        loss = evaluator(*_optuna_point(trial, space))
        if evaluator.done():
            trial.study.stop()
        return loss

    if not evaluator.done():
        study.optimize(objective, n_trials=None, timeout=budget.time_left())
    return evaluator.outcome()


# -------------------------------------------------------------------------------------- FLAML
def flaml_space(space: PipelineSpace) -> dict[str, Any]:
    """FLAML's hierarchical space: per module a choice among ``{"choice": j, hp: domain, ...}``.

    FLAML has no conditions inside a dictionary, so a conditional hyperparameter is always sampled
    (it has no effect when inactive: the decoded pipeline ignores it)."""
    from flaml import tune

    def domain(hp: Any) -> Any:
        if isinstance(hp, Float):
            return (tune.loguniform if hp.log else tune.uniform)(hp.low, hp.high)
        if isinstance(hp, Int):  # FLAML's integer upper bounds are exclusive
            return (tune.lograndint if hp.log else tune.randint)(hp.low, hp.high + 1)
        return tune.choice(list(range(len(hp.choices))))

    return {
        module.name: tune.choice([
            {"choice": j, **{hp.name: domain(hp) for hp in algo.tunable}}
            for j, algo in enumerate(module.choices)
        ])
        for module in space.modules
    }


def _flaml_point(config: dict[str, Any], space: PipelineSpace) -> tuple[tuple[int, ...], np.ndarray]:
    enc = space.encoding
    theta = enc.initial_theta.copy()
    z = []
    for i, module in enumerate(space.modules):
        chosen = config[module.name]
        j = int(chosen["choice"])
        z.append(j)
        slot = enc.slots[i][j]
        for k, hp in enumerate(module.choices[j].tunable):
            value = chosen[hp.name]
            if isinstance(hp, Categorical):
                value = hp.choices[int(value)]
            theta[slot[k]] = hp.to_unit(value)
    return tuple(z), theta


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
            "the FLAML peer needs flaml[blendsearch]: pip install 'admm-automl[experiments]'"
        ) from None
    if searcher not in FLAML_SEARCHERS:
        raise InvalidParameterError(f"FLAML searcher must be one of {FLAML_SEARCHERS!r}, got {searcher!r}")
    cls = BlendSearch if searcher == "blendsearch" else CFO
    evaluator = _Evaluator(space, engine, budget, f"flaml-{searcher}")

    def evaluate(config: dict[str, Any]) -> dict[str, float]:
        return {"loss": evaluator(*_flaml_point(config, space))}

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
