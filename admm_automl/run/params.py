"""The estimator's parameters, declared once: name, default, the rules a value must meet, and the
option of ``admm-automl fit`` that sets it.

Read by the estimator's validation (:func:`validate`), by the search settings
(:data:`SearchSettings`, a frozen dataclass made from this table, so it has no defaults of its
own) and by the command line (:func:`add_fit_options`, :func:`fit_overrides`). The estimator's
``__init__`` still spells its keyword arguments out, as scikit-learn requires of every estimator
(``get_params`` reads the signature); a test holds the signature, its defaults and the
docstring's Parameters section equal to this table, as scikit-learn holds its estimators'
signatures to their ``_parameter_constraints``.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .. import _validation as v
from ..evaluation.prefix_cache import DEFAULT_CACHE_MB
from ..methods.registry import METHODS


def _cv_option(text: str) -> Any:
    """``--cv``: "auto", "holdout" (one holdout split) or a number of folds (at least 2)."""
    if text in ("auto", "holdout"):
        return text
    try:
        folds = int(text)
    except ValueError:
        folds = 0
    if folds < 2:
        raise argparse.ArgumentTypeError(f"expected 'auto', 'holdout' or a number of folds >= 2, "
                                         f"got {text!r}")
    return folds


def _auto_or_count(text: str) -> Any:
    """``--inner-iter``: "auto" or a number of evaluations (at least 1)."""
    if text == "auto":
        return text
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a number >= 1, got {text!r}")
    return count


@dataclass(frozen=True)
class Param:
    """One parameter of the estimator.

    ``rules``: the values it accepts (empty: checked where its name is resolved, such as a
    solver or a space name); ``option``: the ``admm-automl fit`` option's flag and its argparse
    keywords (None: only in Python and configuration files); ``from_option``: the parameter's
    value of the option's value, where they differ."""

    name: str
    default: Any
    rules: tuple[v.Rule, ...] = ()
    option: tuple[str, dict[str, Any]] | None = None
    from_option: Callable[[Any], Any] | None = None


def _p(name: str, default: Any, *rules: v.Rule, flag: str | None = None,
       from_option: Callable[[Any], Any] | None = None, **cli: Any) -> Param:
    return Param(name, default, tuple(rules), None if flag is None else (flag, cli), from_option)


#: every parameter of :class:`admm_automl.ADMM`, in the order of its signature
PARAMETERS: tuple[Param, ...] = (
    _p("search_space", "default", flag="--search-space", help="built-in space name or YAML file"),
    _p("theta_solver", "bo", flag="--theta-solver", help="θ-min solver name"),
    _p("z_solver", "cmab", flag="--z-solver", help="z-min solver name"),
    _p("method", "admm", v.options(*METHODS), v.MAPPING, flag="--method",
       choices=list(METHODS),
       help="search method (default admm; `admm-automl list` describes them)"),
    _p("max_evals", None, v.int_at_least(1), v.NONE, flag="--max-evals", type=int,
       help="number of pipeline evaluations"),
    _p("time_budget", None, v.POSITIVE_NUMBER, v.NONE, flag="--time-budget", type=float,
       help="seconds for the search and the refit after it"),
    _p("rho", 1.0, v.POSITIVE_NUMBER),
    _p("inner_iter", "auto", v.options("auto"), v.int_at_least(1), flag="--inner-iter",
       type=_auto_or_count, metavar="{auto,I}",
       help="evaluations per sub-problem (I or I0); 'auto' (the default): 16, at most a "
       "quarter of what the budget has left"),
    _p("inner_iter_step", 16, v.int_at_least(0), flag="--inner-iter-step", type=int,
       help="adaptive step F (0 = fixed I)"),
    _p("inner_iter_max", 128, v.int_at_least(1), flag="--inner-iter-max", type=int,
       help="cap of the adaptive schedule"),
    _p("constraints", None, flag="--constraint", action="append", metavar="EXPR",
       help="a black-box constraint such as 'latency <= 2e-5' or 'fpr <= 0.1' (repeatable)"),
    _p("constraint_mode", "auto", v.options("auto", "admm", "penalty", "filter"),
       flag="--constraint-mode", choices=["auto", "admm", "penalty", "filter"]),
    _p("penalty_weight", 1.0, v.POSITIVE_NUMBER),
    _p("fairness_mitigation", "auto", v.options("auto"), v.BOOL, flag="--no-fairness-mitigation",
       action="store_false",
       help="do not add fairlearn's mitigations to the space for a group-fairness constraint"),
    _p("scoring", None, flag="--scoring",
       help="the metric: a built-in name (roc_auc, log_loss, rmse, ...; `admm-automl list`) or "
       "a scikit-learn scorer name (default: roc_auc for two classes, log_loss for more, rmse)"),
    _p("cv", "auto", v.options("auto", "holdout"), v.int_at_least(2), v.NONE, flag="--cv",
       type=_cv_option, metavar="{auto,holdout,K}",
       from_option=lambda value: None if value == "holdout" else value,
       help="K-fold cross-validation, one holdout split, or 'auto' (the default: 5 folds below "
       "5000 rows or while the time budget affords them, else a holdout)"),
    _p("validation_size", 0.2, v.FRACTION),
    _p("executor", "auto", v.options("auto", "serial", "process", "dask"), flag="--executor",
       choices=["auto", "serial", "process", "dask"],
       help="where trials run (dask: on --dask-address, else a local Dask cluster of --n-jobs "
       "workers)"),
    _p("n_jobs", -1, v.N_JOBS, flag="--n-jobs", type=int,
       help="trials at once (the default -1: one per core this process may use; 1: a run "
       "its seed repeats exactly)"),
    _p("dask_address", None, v.TEXT, v.NONE, flag="--dask-address",
       help="a Dask scheduler address, e.g. tcp://10.0.0.5:8786"),
    _p("asynchronous", True, v.BOOL, flag="--asynchronous",
       action=argparse.BooleanOptionalAction,
       help="with several workers, hand a worker its next trial as soon as it is free (the "
       "default); --no-asynchronous: batches of n_jobs trials that wait for their slowest, "
       "whose history a seed fixes"),
    _p("trial_timeout", None, v.POSITIVE_NUMBER, v.NONE, flag="--trial-timeout", type=float,
       help="seconds one evaluation may take (default with a time budget: a quarter of the "
       "time left)"),
    _p("shrink_to_fit", "auto", v.options("auto"), v.BOOL, flag="--shrink-to-fit",
       action=argparse.BooleanOptionalAction,
       help="size a forest's trial to its time limit before it starts: at fewer trees when a "
       "throwaway fit on an eighth of the rows predicts it past half of the limit, or not at "
       "all when even its fewest trees would not fit (default: from 3 000 training rows on)"),
    _p("boost_to_fit", "auto", v.options("auto"), v.BOOL, flag="--boost-to-fit",
       action=argparse.BooleanOptionalAction,
       help="stop a boosted learner's rounds at its fold's share of its trial's time limit, "
       "keeping the best round so far, instead of the trial being stopped with no model "
       "(default: from 3 000 training rows on)"),
    _p("memory_limit", None, v.int_at_least(1), v.NONE, flag="--memory-limit", type=int,
       help="MiB one worker process may use"),
    _p("cache_size", DEFAULT_CACHE_MB, v.NON_NEGATIVE_NUMBER),
    _p("output_dir", None, v.PATH, v.NONE, flag="--output",
       help="run directory: journal, trace, summary, resolved config, pipeline and the report "
       "(report.html, report.md)"),
    _p("resume", True, v.BOOL, flag="--no-resume", action="store_false",
       help="keep an existing journal in --output as journal-1.jsonl and start afresh (by "
       "default a journal of the same run is resumed, one of another run refused)"),
    _p("random_state", None, v.SEED, flag="--seed", type=int, help="random seed (random_state)"),
    _p("verbose", 0, v.int_at_least(0)),
    _p("progress", None, v.BOOL, v.NONE),
    _p("task", "auto", v.options("auto", "classification", "regression"), flag="--task",
       choices=["auto", "classification", "regression"],
       help="the task (default auto: text or few distinct values are classes, else regression)"),
    _p("portfolio", "auto", flag="--portfolio", metavar="{auto,none,FILE}",
       from_option=lambda value: None if value == "none" else value,
       help="configurations ADMM evaluates first: 'auto' (the one shipped for a built-in "
       "space), 'none', or a YAML file"),
    _p("ensemble_size", 16, v.int_at_least(0), flag="--ensemble-size", type=int,
       help="steps of greedy ensemble selection (0: the best pipeline alone)"),
    _p("stacking", True, v.BOOL, flag="--no-stacking", action="store_false",
       help="never fit a second layer on the ensemble members' out-of-fold predictions (by "
       "default one replaces the weighted ensemble when its own out-of-fold loss is lower)"),
    _p("ensemble_check", "in_sample", v.options("in_sample", "held_out"),
       flag="--ensemble-check", choices=["in_sample", "held_out"],
       help="judge an ensemble against the best pipeline on the validation rows it was chosen "
       "on (in_sample, the default) or also on rows it was not chosen on (held_out)"),
    _p("ensemble_bags", 1, v.int_at_least(1), flag="--ensemble-bags", type=int,
       help="above 1, choose the weighted ensemble by bagged selection: that many greedy "
       "selections over random halves of the candidates, averaged (default 1: one selection)"),
    _p("bagging", True, v.BOOL, flag="--no-bagging", action="store_false",
       help="refit every ensemble member on all rows (by default, with cross-validation and no "
       "constraints, the members are the bags of their fold models from the search)"),
    _p("callbacks", None, v.CALLABLES, v.NONE),
)

BY_NAME: dict[str, Param] = {p.name: p for p in PARAMETERS}

#: the search's settings: every parameter, with the table's defaults
SearchSettings = dataclasses.make_dataclass(
    "SearchSettings", [(p.name, Any, field(default=p.default)) for p in PARAMETERS],
    frozen=True,
)
SearchSettings.__module__ = __name__
SearchSettings.__doc__ = ("The estimator's parameters as the run set-up reads them (see "
                          ":class:`admm_automl.ADMM` for their meaning).")


def settings_from(params: Mapping[str, Any]) -> Any:
    """A :data:`SearchSettings` of ``params`` (an estimator's ``get_params``); names not in the
    table are ignored, missing ones take the table's default."""
    return SearchSettings(**{k: params[k] for k in BY_NAME if k in params})


def validate(owner: str, params: Mapping[str, Any]) -> None:
    """Raise :class:`~admm_automl.exceptions.InvalidParameterError` for the first parameter that
    no rule of its accepts."""
    v.validate_params(owner, params, {p.name: p.rules for p in PARAMETERS if p.rules})


def check(owner: str, params: Mapping[str, Any]) -> None:
    """Check every parameter of an estimator, and resolve its names (method, constraints, space,
    portfolio, solvers), before any work: a bad value fails here, with its name."""
    from ..constraints import make_constraints
    from ..exceptions import InvalidParameterError
    from ..methods.driver import Schedule
    from ..methods.registry import check_training_length, method_spec
    from ..solvers import THETA_SOLVERS, Z_SOLVERS
    from ..space import load_space
    from ..space.portfolio import resolve_portfolio

    validate(owner, params)
    Schedule.of(params["inner_iter"], params["inner_iter_step"], params["inner_iter_max"])
    method, _ = method_spec(params["method"])
    if method != "admm" and params["constraint_mode"] == "admm":
        raise InvalidParameterError(
            f"method={method!r} has no ADMM split, so constraint_mode='admm' does not "
            "apply: use 'penalty' or 'filter' (or 'auto')"
        )
    make_constraints(params["constraints"])
    space = load_space(params["search_space"])
    resolve_portfolio(params["portfolio"], space, "classification")
    THETA_SOLVERS.create(params["theta_solver"]).check_requirements()
    if method != "select":
        check_training_length(params["theta_solver"], bool(space.iterative_algorithms()),
                              space.name)
    Z_SOLVERS.create(params["z_solver"]).check_requirements()


def add_fit_options(parser: argparse.ArgumentParser) -> None:
    """The ``admm-automl fit`` options of the parameters that have one; each stores into the
    parameter's name and defaults to None (not given: the configuration or the default holds)."""
    for p in PARAMETERS:
        if p.option is not None:
            flag, kwargs = p.option
            parser.add_argument(flag, dest=p.name, default=None, **kwargs)


def fit_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The parameters the ``fit`` options gave (an option left out is not in the result)."""
    given = {}
    for p in PARAMETERS:
        value = None if p.option is None else getattr(args, p.name, None)
        if value is not None:
            given[p.name] = value if p.from_option is None else p.from_option(value)
    return given


__all__ = ["BY_NAME", "PARAMETERS", "Param", "SearchSettings", "add_fit_options", "check",
           "fit_overrides", "settings_from", "validate"]
