"""The pipeline space: modules of algorithm choices, each a scikit-learn class with hyperparameters.

A configuration is written two ways:

* encoded, as ``(z, θ)`` for the optimisers (see :class:`~admm_automl.space.encoding.Encoding`);
* readable, as a flat dict in scikit-learn's ``step__param`` style:
  ``{"scaler": "robust_scaler", "scaler__with_centering": True, "estimator": "random_forest", ...}``.

:mod:`.configuration` translates one into the other (:meth:`PipelineSpace.decode`,
:meth:`PipelineSpace.encode`).

An algorithm may also declare how long it trains (:class:`Iterations`), which packages it needs
(``requires``; the loader leaves it out when one is missing and records why in
:attr:`PipelineSpace.skipped`) and the largest data it is worth fitting on (``max_rows``, applied by
:meth:`PipelineSpace.for_data`).

Nothing here imports scikit-learn at module level; classes are imported when a pipeline is built.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np

from ..exceptions import InvalidParameterError, did_you_mean, unknown_name_message
from . import configuration
from .encoding import Encoding
from .hyperparameters import Categorical, Fixed, Hyperparameter, Int, _is_int

PASSTHROUGH = "none"
TASKS = ("classification", "regression")
#: how a partly trained model is trained further (see :class:`Iterations`)
CONTINUATIONS = ("warm_start", "partial_fit")
#: how a choice takes the category columns when it is the estimator (:attr:`Algorithm.categories`)
CATEGORY_ENCODINGS = ("one_hot", "ordinal", "native")
#: the boosting libraries whose number of rounds a trial can stop early (see :class:`Stopping`)
STOPPING_METHODS = ("hist_gradient_boosting", "lightgbm", "xgboost", "catboost")


#: what a path in a space (or a configuration) may name, and what is asked of it before anything
#: is called: a space is data a user may download or share, so it names scikit-learn estimators,
#: parameter objects (such as a GP kernel) and functions an estimator calls, never a class whose
#: construction or a function whose call does something else
KINDS = {
    "estimator": "a scikit-learn estimator class (with fit, get_params and set_params)",
    "parameter": "a class with scikit-learn's get_params and set_params (an estimator, a kernel)",
    "function": "a function (not a class)",
}


def _in_standard_library(obj: Any) -> bool:
    """Whether ``obj`` comes from Python's standard library (os, subprocess, builtins, ...):
    nothing there is an estimator, and its functions can do anything."""
    module = (getattr(obj, "__module__", None) or "").split(".")[0]
    return module in sys.stdlib_module_names or module in ("builtins", "__builtin__")


def _is_kind(obj: Any, kind: str) -> bool:
    if _in_standard_library(obj):
        return False
    if kind == "function":
        return callable(obj) and not inspect.isclass(obj)
    has_params = inspect.isclass(obj) and all(
        callable(getattr(obj, name, None)) for name in ("get_params", "set_params"))
    return has_params and (kind == "parameter" or callable(getattr(obj, "fit", None)))


@functools.lru_cache(maxsize=None)
def import_class(path: str, kind: str = "estimator") -> Any:
    """Import ``package.module.Name`` and check, before anything is called, that it is of
    ``kind`` (:data:`KINDS`); errors name the path. Importing a module runs its top level, as any
    import does; the check keeps a space file from naming anything but estimators, their
    parameter objects and their functions (``subprocess.Popen``, ``os.system`` are refused)."""
    module_name, _, attr = path.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except (ImportError, ValueError) as err:
        raise InvalidParameterError(f"cannot import class {path!r}: {err}.") from None
    if not hasattr(module, attr):
        raise InvalidParameterError(
            f"cannot import class {path!r}: module {module_name!r} has no attribute {attr!r}."
            + did_you_mean(attr, [n for n in dir(module) if not n.startswith("_")])
        )
    obj = getattr(module, attr)
    if not _is_kind(obj, kind):
        raise InvalidParameterError(
            f"{path!r} is not {KINDS[kind]}: a search space names estimators, their parameter "
            "objects and the functions they call, nothing else, and it is refused before "
            "anything is called."
        )
    return obj


def instantiate(value: Any) -> Any:
    """Turn ``{"class": path, "params": {...}}`` values (possibly nested) into objects and
    ``{"function": path}`` into the function."""
    if isinstance(value, Mapping) and set(value) == {"function"}:
        return import_class(value["function"], "function")
    if isinstance(value, Mapping) and "class" in value:
        params = {k: instantiate(v) for k, v in dict(value.get("params") or {}).items()}
        return import_class(value["class"], "parameter")(**params)
    return value


def named_imports(value: Any) -> list[tuple[str, str]]:
    """The import paths a hyperparameter value names, with their kind (``{"class": ...}``:
    "parameter", ``{"function": ...}``: "function"), nested ones included."""
    if isinstance(value, Mapping):
        if set(value) == {"function"}:
            return [(value["function"], "function")]
        if "class" in value:
            nested = (named_imports(v) for v in dict(value.get("params") or {}).values())
            return [(value["class"], "parameter"), *(p for paths in nested for p in paths)]
    if isinstance(value, (list, tuple)):
        return [path for v in value for path in named_imports(v)]
    return []


@dataclass(frozen=True)
class Iterations:
    """The training length of an iterative learner and how training is continued.

    The training length t is the second fidelity of budget-aware planning for iterative learners
    (BAPI, Belakaria, Doppa, Fusi and Sheth, arXiv 2206.12708, 2022): a configuration is trained for
    t iterations, scored, and possibly continued to a larger t later without starting over.

    Parameters
    ----------
    parameter
        The integer hyperparameter (tunable ``int`` or ``fixed``) of the algorithm that sets the number
        of iterations when the model is fitted from scratch (``n_estimators``, ``max_iter``).
    t_min, t_max
        The smallest and the largest training length, ``1 <= t_min < t_max``.
    method
        How a fitted model is trained from t1 to t2 > t1:

        * ``"warm_start"``: set ``parameter`` to t2 on the fitted estimator, with ``warm_start=True``,
          and call ``fit`` again; only the new iterations are trained (scikit-learn's
          GradientBoosting, HistGradientBoosting, RandomForest, ExtraTrees);
        * ``"partial_fit"``: call ``partial_fit`` t2 - t1 times, one epoch per call (SGDClassifier /
          SGDRegressor, MLPClassifier / MLPRegressor).
    """

    parameter: str
    t_min: int
    t_max: int
    method: str

    def __post_init__(self) -> None:
        for key in ("t_min", "t_max"):
            if not _is_int(getattr(self, key)):
                raise InvalidParameterError(f"{key}={getattr(self, key)!r} must be an integer")
        if not 1 <= self.t_min < self.t_max:
            raise InvalidParameterError(
                f"need 1 <= t_min < t_max, got t_min={self.t_min!r}, t_max={self.t_max!r}"
            )
        if self.method not in CONTINUATIONS:
            raise InvalidParameterError(
                f"method {self.method!r} is not one of {', '.join(CONTINUATIONS)}"
            )


def iteration_parameter(
    algorithm: str, hyperparameters: Sequence[Hyperparameter], parameter: str
) -> Int | Fixed:
    """The hyperparameter named by ``iterations.parameter``: an unconditional ``Int`` or ``Fixed``
    integer of the same algorithm (the training length is always passed)."""
    hp = next((h for h in hyperparameters if h.name == parameter), None)
    if hp is None:
        raise InvalidParameterError(
            f"parameter {parameter!r} is not a hyperparameter of {algorithm!r}; declare it as an "
            "int (tuned) or a fixed integer (the full training length)"
        )
    if not (isinstance(hp, Int) or (isinstance(hp, Fixed) and _is_int(hp.value))):
        raise InvalidParameterError(
            f"parameter {parameter!r} must be an int or a fixed integer hyperparameter, got "
            f"{type(hp).__name__}"
        )
    if hp.condition:
        raise InvalidParameterError(
            f"parameter {parameter!r} has a condition; the training length must always be passed"
        )
    return hp


@dataclass(frozen=True)
class Stopping:
    """Early stopping of a boosted learner on each trial's own validation rows.

    The searched value of ``parameter`` (``n_estimators``, ``max_iter``) is the cap; a trial stops
    adding rounds once the loss on its validation rows has not improved for a while
    (:mod:`admm_automl.evaluation.stopping` says how long, and which loss), and the number of
    rounds it kept is recorded with the evaluation and used when the pipeline is refitted on all
    rows. AutoGluon does the same with its boosted models (a large cap, the rounds decided on its
    validation data); here a boosted trial at a large cap then costs what its useful rounds cost,
    and a searched cap that is too large is no longer a bad configuration.

    Parameters
    ----------
    parameter
        The integer hyperparameter (tunable ``int`` or ``fixed``, unconditional) that sets the number
        of boosting rounds.
    method
        The library's own way to stop (:data:`STOPPING_METHODS`): ``"hist_gradient_boosting"``
        (scikit-learn's ``early_stopping`` with ``X_val``), ``"lightgbm"`` (its
        ``early_stopping`` callback on ``eval_set``), ``"xgboost"`` (``early_stopping_rounds`` on
        ``eval_set``), ``"catboost"`` (``early_stopping_rounds`` on ``eval_set``).
    """

    parameter: str
    method: str

    def __post_init__(self) -> None:
        if self.method not in STOPPING_METHODS:
            raise InvalidParameterError(
                f"method {self.method!r} is not one of {', '.join(STOPPING_METHODS)}."
                + did_you_mean(str(self.method), STOPPING_METHODS)
            )


@dataclass(frozen=True)
class Algorithm:
    """One choice of a module: a scikit-learn class and its hyperparameters.

    ``class_path=None`` is the passthrough choice (named ``"none"``).

    Parameters
    ----------
    name, class_path, hyperparameters, task
        The choice's name, the import path of its class, its domains, and the task it serves
        (``"any"``, ``"classification"`` or ``"regression"``).
    iterations
        The training length of an iterative learner (``None`` for the others); its ``parameter`` must
        be an ``Int`` hyperparameter whose range holds ``t_max`` or a ``Fixed`` integer equal to
        ``t_max``.
    requires
        Import names of the packages the class needs beyond scikit-learn (for example
        ``("lightgbm",)``); the loader leaves the algorithm out when one is missing.
    max_rows
        The largest number of training rows the algorithm is worth fitting on (``None``: no limit);
        see :meth:`PipelineSpace.for_data`.
    stopping
        Early stopping of its number of rounds on each trial's validation rows (``None``: the
        rounds are fitted as configured); only on a pipeline's last (estimator) module.
    categories
        How the data's category columns reach it as the pipeline's estimator: ``"one_hot"``
        (a 0/1 column per value), ``"ordinal"`` (a column of codes: for tree learners;
        :func:`admm_automl.evaluation.data.ordinal_categories`) or ``"native"`` (pandas
        ``category`` columns of codes, first: for learners that split categories themselves;
        :func:`admm_automl.evaluation.data.native_categories`).
    category_parameter
        Under ``categories: native``, the constructor parameter that must be given the category
        columns' positions (CatBoost's ``cat_features``); None for a learner that finds them by
        their dtype (HistGradientBoosting, LightGBM, XGBoost).
    """

    name: str
    class_path: str | None = None
    hyperparameters: tuple[Hyperparameter, ...] = ()
    task: str = "any"
    iterations: Iterations | None = field(default=None, kw_only=True)
    requires: tuple[str, ...] = field(default=(), kw_only=True)
    max_rows: int | None = field(default=None, kw_only=True)
    stopping: Stopping | None = field(default=None, kw_only=True)
    categories: str = field(default="one_hot", kw_only=True)
    category_parameter: str | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if self.categories not in CATEGORY_ENCODINGS:
            raise InvalidParameterError(
                f"algorithm {self.name!r}: categories={self.categories!r}; expected one of "
                f"{list(CATEGORY_ENCODINGS)}")
        if self.category_parameter is not None and (not isinstance(self.category_parameter, str)
                                                    or self.categories != "native"):
            raise InvalidParameterError(
                f"algorithm {self.name!r}: category_parameter={self.category_parameter!r} must be "
                f"a parameter name, with categories: native (it has {self.categories!r})")
        if self.max_rows is not None and (not _is_int(self.max_rows) or self.max_rows < 1):
            raise InvalidParameterError(
                f"algorithm {self.name!r}: max_rows={self.max_rows!r} must be a positive integer"
            )
        if self.iterations is not None:
            self._check_iterations(self.iterations)
        if self.stopping is not None:
            iteration_parameter(self.name, self.hyperparameters, self.stopping.parameter)

    def _check_iterations(self, it: Iterations) -> None:
        """The training-length parameter's domain holds t_max (a fixed one equals it)."""
        hp = iteration_parameter(self.name, self.hyperparameters, it.parameter)
        if isinstance(hp, Int) and not hp.low <= it.t_max <= hp.high:
            raise InvalidParameterError(
                f"iterations: t_max={it.t_max!r} is outside the range [{hp.low}, {hp.high}] of "
                f"{it.parameter!r}"
            )
        if isinstance(hp, Fixed) and hp.value != it.t_max:
            raise InvalidParameterError(
                f"iterations: t_max={it.t_max!r} differs from the fixed value {hp.value!r} of "
                f"{it.parameter!r} (a fixed training length is the full one, t_max)"
            )

    def check_class(self) -> None:
        """Import the class and every class or function named in the hyperparameters' values
        (fixed values and categorical choices), and check that the class takes each
        hyperparameter (names with ``__`` go to a nested object and are not checked)."""
        if self.class_path is None:
            return
        values = [getattr(hp, "value", None) for hp in self.hyperparameters]
        values += [c for hp in self.hyperparameters for c in getattr(hp, "choices", ())]
        for path, kind in named_imports(values):
            import_class(path, kind)
        cls = import_class(self.class_path)
        try:
            accepted = inspect.signature(cls).parameters
        except (TypeError, ValueError):  # no signature to read
            return
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values()):
            return
        for hp in self.hyperparameters:
            if "__" not in hp.name and hp.name not in accepted:
                raise InvalidParameterError(
                    f"{cls.__name__} takes no parameter {hp.name!r}."
                    + did_you_mean(hp.name, [n for n in accepted if n != "self"])
                )

    @property
    def tunable(self) -> tuple[Hyperparameter, ...]:
        return tuple(h for h in self.hyperparameters if h.tunable)

    def is_active(self, hp: Hyperparameter, values: Mapping[str, Any]) -> bool:
        return all(values.get(parent) in allowed for parent, allowed in hp.condition.items())

    def params_from_unit(self, units: Sequence[float]) -> dict[str, Any]:
        """Hyperparameter values (conditions applied) from this algorithm's θ coordinates."""
        values: dict[str, Any] = {}
        tunable = iter(units)
        for hp in self.hyperparameters:
            values[hp.name] = hp.from_unit(next(tunable)) if hp.tunable else hp.default
        return {h.name: values[h.name] for h in self.hyperparameters if self.is_active(h, values)}

    def build(self, params: Mapping[str, Any], random_state: int | None = None) -> Any:
        """Instantiate the class with ``params``; ``a__b`` names go through ``set_params``.

        ``random_state`` is given to every object that has that parameter by ``get_params`` (not
        only by its signature: XGBoost's estimators take it through ``**kwargs``), unless
        ``params`` sets it.
        """
        if self.class_path is None:
            return "passthrough"
        cls = import_class(self.class_path)
        direct = {k: instantiate(v) for k, v in params.items() if "__" not in k}
        nested = {k: instantiate(v) for k, v in params.items() if "__" in k}
        obj = cls(**direct)
        if random_state is not None and "random_state" not in direct and _has_param(
            obj, "random_state"
        ):
            nested = {"random_state": random_state, **nested}
        if nested:
            obj.set_params(**nested)
        return obj


def _has_param(obj: Any, name: str) -> bool:
    """Whether scikit-learn's ``get_params`` of ``obj`` lists ``name``, or its signature does
    (CatBoost's ``get_params`` lists only the parameters that were set)."""
    try:
        if name in obj.get_params(deep=False):
            return True
    except Exception:  # not a scikit-learn estimator: its signature decides
        pass
    return name in inspect.signature(type(obj)).parameters


@dataclass(frozen=True)
class Module:
    """A pipeline stage with named algorithm choices.

    ``wraps``: the chosen algorithm is a meta-estimator around the pipeline the modules before it
    make (given to it as ``estimator``; the preprocessor included), such as a fairness mitigation
    (:mod:`admm_automl.constraints.mitigation`) or a calibration; its ``none`` choice leaves that
    pipeline as it is. Only the last module may wrap. A wrapped pipeline is fitted as one step,
    so it shares no fitted prefix with others (:mod:`admm_automl.evaluation.prefix_cache`).
    """

    name: str
    choices: tuple[Algorithm, ...]
    wraps: bool = False

    def index(self, choice: str) -> int:
        matches = [j for j, algo in enumerate(self.choices) if algo.name == choice]
        if len(matches) > 1:
            raise InvalidParameterError(
                f"module {self.name!r}: choice {choice!r} has one variant per task; select the "
                "task first with space.for_task(...)"
            )
        if matches:
            return matches[0]
        raise InvalidParameterError(
            f"module {self.name!r}: "
            + unknown_name_message("choice", choice, [a.name for a in self.choices])
        )


@dataclass(frozen=True, eq=False)
class PipelineSpace:
    """An ordered sequence of modules; the search space of one AutoML run.

    ``skipped`` lists the choices left out of the declared space, as ``(module, choice, reason)``:
    by the loader when a package in ``requires`` is missing, and by :meth:`for_data` when the data
    exceed ``max_rows``.
    """

    name: str
    modules: tuple[Module, ...]
    initial: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    description: str = ""
    skipped: tuple[tuple[str, str, str], ...] = ()
    #: one of the spaces shipped with the package (:func:`~.loader.load_space` by its name), not
    #: a user's space that happens to bear a built-in name: only a shipped space is given its
    #: shipped portfolio
    shipped: bool = False

    def __post_init__(self) -> None:
        if any(m.wraps for m in self.modules[:-1]):
            raise InvalidParameterError(
                f"search space {self.name!r}: only the last module may wrap the pipeline before "
                f"it; {[m.name for m in self.modules[:-1] if m.wraps]!r} do")
        estimators = [m for m in self.modules if not m.wraps][-1:]
        early = [f"{m.name}.{a.name}" for m in self.modules if m not in estimators
                 for a in m.choices if a.stopping is not None]
        if early:
            raise InvalidParameterError(
                f"search space {self.name!r}: only the estimator (the last module that does not "
                f"wrap) can stop its rounds early; {early!r} declare `stopping`")

    def __repr__(self) -> str:
        sizes = " x ".join(str(len(m.choices)) for m in self.modules)
        return f"PipelineSpace({self.name!r}, {sizes} = {self.n_pipelines} pipelines)"

    # ------------------------------------------------------------------ structure
    def for_task(self, task: str) -> "PipelineSpace":
        """The sub-space of algorithms usable for ``task`` ("classification" or "regression")."""
        if task not in TASKS:
            raise InvalidParameterError(f"task must be one of {TASKS!r}, got {task!r}")
        modules = []
        for module in self.modules:
            kept = tuple(a for a in module.choices if a.task in ("any", task))
            if not kept:
                raise InvalidParameterError(
                    f"search space {self.name!r} has no {task} algorithm in module {module.name!r}"
                )
            modules.append(replace(module, choices=kept))
        initial = {task: self.initial[task]} if task in self.initial else {}
        return PipelineSpace(self.name, tuple(modules), initial, self.description, self.skipped,
                             shipped=self.shipped)

    def restrict(self, **choices: "str | Sequence[str]") -> "PipelineSpace":
        """The sub-space that keeps only the named algorithms of the named modules, e.g.
        ``space.restrict(scaler="none", estimator="lightgbm")`` to tune one learner (FLAML's
        ``estimator_list``); other modules keep every choice. The initial pipeline falls back to
        a module's first kept choice where it named a removed one.

        Raises
        ------
        InvalidParameterError
            On an unknown module or choice (the message lists the valid ones), or a module
            given no choice.
        MissingDependencyError
            On a choice the space declares but left out because its package is not installed.
        """
        known = {m.name: m for m in self.modules}
        for name in choices:
            if name not in known:
                raise InvalidParameterError(
                    f"search space {self.name!r}: "
                    + unknown_name_message("module", name, list(known)))
        modules = []
        for module in self.modules:
            if module.name not in choices:
                modules.append(module)
                continue
            wanted = choices[module.name]
            wanted = [wanted] if isinstance(wanted, str) else list(wanted)
            if not wanted:
                raise InvalidParameterError(f"module {module.name!r}: give at least one choice")
            keep = {configuration.choice_index(self, module, name) for name in wanted}
            modules.append(replace(module, choices=tuple(
                a for j, a in enumerate(module.choices) if j in keep)))
        kept = {m.name: [a.name for a in m.choices] for m in modules}
        initial = {task: {k: (v if v in kept[k] else kept[k][0]) for k, v in chosen.items()
                          if k in kept}
                   for task, chosen in self.initial.items()}
        label = ",".join(f"{k}={v if isinstance(v, str) else '|'.join(v)}"
                         for k, v in choices.items())
        return PipelineSpace(f"{self.name}[{label}]", tuple(modules), initial, self.description,
                             self.skipped)

    def without_stopping(self) -> "PipelineSpace":
        """This space with no choice stopping its rounds early (:class:`Stopping`): every
        searched number of rounds is fitted as configured, as the papers' spaces do."""
        modules = tuple(replace(m, choices=tuple(replace(a, stopping=None) for a in m.choices))
                        for m in self.modules)
        return PipelineSpace(self.name, modules, self.initial, self.description, self.skipped,
                             shipped=self.shipped)

    @property
    def base_name(self) -> str:
        """The name of the space this one extends by a wrapping module (:meth:`wrapped` names it
        ``<base>+<module>``), else its own: a built-in space's portfolio serves both, its
        configurations leaving the wrapping module at its first choice."""
        suffix = f"+{self.modules[-1].name}" if self.modules else ""
        if suffix and self.modules[-1].wraps and self.name.endswith(suffix):
            return self.name[:-len(suffix)]
        return self.name

    def wrapped(self, module: Module) -> "PipelineSpace":
        """This space with ``module`` (one that :attr:`Module.wraps`) appended as its last
        module; the initial pipeline chooses its first choice (``none``: nothing wrapped)."""
        if not module.wraps:
            raise InvalidParameterError(f"module {module.name!r} does not wrap the pipeline")
        if self.modules[-1].wraps:
            raise InvalidParameterError(
                f"search space {self.name!r} already ends with the wrapping module "
                f"{self.modules[-1].name!r}")
        initial = {task: {**chosen, module.name: module.choices[0].name}
                   for task, chosen in self.initial.items()}
        return PipelineSpace(f"{self.name}+{module.name}", self.modules + (module,), initial,
                             self.description, self.skipped, shipped=self.shipped)

    def for_data(self, n_rows: int) -> "PipelineSpace":
        """The sub-space without the algorithms whose ``max_rows`` is below ``n_rows``.

        ``n_rows`` is the number of rows the pipelines are fitted on. A module is never emptied:
        when every choice of a module that serves a task (``"any"`` or that task) exceeds its limit,
        the ones with the largest ``max_rows`` among them stay. Removed choices are appended to
        :attr:`skipped`, and an initial pipeline that names one falls back to the module's first
        remaining choice.
        """
        if not _is_int(n_rows) or n_rows < 0:
            raise InvalidParameterError(f"n_rows must be a non-negative integer, got {n_rows!r}")
        modules, skipped = [], list(self.skipped)
        for module in self.modules:
            fits = [a.max_rows is None or n_rows <= a.max_rows for a in module.choices]
            for task in TASKS:
                serves = [a.task in ("any", task) for a in module.choices]
                if any(serves) and not any(f and s for f, s in zip(fits, serves)):
                    largest = max(a.max_rows for a, s in zip(module.choices, serves) if s)
                    fits = [
                        f or (s and a.max_rows == largest)
                        for a, f, s in zip(module.choices, fits, serves)
                    ]
            for algo, fit in zip(module.choices, fits):
                if not fit:
                    skipped.append(
                        (module.name, algo.name, f"max_rows={algo.max_rows} < {n_rows} rows")
                    )
            modules.append(replace(module, choices=tuple(
                a for a, f in zip(module.choices, fits) if f)))
        names = {m.name: {a.name for a in m.choices} for m in modules}
        initial = {
            task: {k: v for k, v in chosen.items() if v in names.get(k, ())}
            for task, chosen in self.initial.items()
        }
        return PipelineSpace(self.name, tuple(modules), initial, self.description, tuple(skipped),
                             shipped=self.shipped)

    def check_classes(self) -> None:
        """Import every class and function the space names and check its hyperparameter names
        (:meth:`Algorithm.check_class`), so that a wrong path or parameter is reported before any
        search, not as the failure of every pipeline that uses it.

        Raises
        ------
        InvalidParameterError
            Naming the module, the choice and what is wrong.
        """
        for module in self.modules:
            for algo in module.choices:
                try:
                    algo.check_class()
                except InvalidParameterError as err:
                    raise InvalidParameterError(
                        f"search space {self.name!r}, module {module.name!r}, choice "
                        f"{algo.name!r}: {err} Fix the space; a class of an optional package "
                        "can be declared with `requires: [package]`, so that the choice is left "
                        "out when the package is missing."
                    ) from None

    def iterative_algorithms(self) -> tuple[tuple[str, Algorithm], ...]:
        """``(module name, algorithm)`` of every choice that declares a training length, in order."""
        return tuple(
            (m.name, a) for m in self.modules for a in m.choices if a.iterations is not None
        )

    def stopping(self, z: Sequence[int]) -> tuple[str, Stopping] | None:
        """``(module name, Stopping)`` of the estimator of ``z`` when it stops its rounds early on
        a trial's validation rows; None when it does not. Where the last module wraps the
        pipeline (a fairness mitigation), the estimator is the wrapped pipeline's: the trial
        stops its rounds on the validation rows first and the meta-estimator then fits it at
        those rounds (:func:`~admm_automl.evaluation.trial.run_trial`), so a mitigated boosted
        learner does not fit every round of its cap."""
        z = self.encoding.check_z(z)
        i, module = [(i, m) for i, m in enumerate(self.modules) if not m.wraps][-1]
        stopping = module.choices[z[i]].stopping
        return None if stopping is None else (module.name, stopping)

    def categories(self, z: Sequence[int]) -> str:
        """How the category columns reach the estimator of ``z`` (:attr:`Algorithm.categories`;
        ``"one_hot"`` when the last module wraps the pipeline)."""
        choice = self._estimator_choice(z)
        return "one_hot" if choice is None else choice.categories

    def category_parameter(self, z: Sequence[int]) -> str | None:
        """The parameter of the estimator of ``z`` that takes the category columns' positions
        under ``categories: native`` (:attr:`Algorithm.category_parameter`), or None."""
        choice = self._estimator_choice(z)
        return None if choice is None else choice.category_parameter

    def _estimator_choice(self, z: Sequence[int]) -> Algorithm | None:
        """The chosen algorithm of the last module that does not wrap (the estimator of
        ``z``'s pipeline); None when the last module wraps the pipeline."""
        if self.wraps(z):
            return None
        z = self.encoding.check_z(z)
        i, module = [(i, m) for i, m in enumerate(self.modules) if not m.wraps][-1]
        return module.choices[z[i]]

    def iterations(self, z: Sequence[int]) -> dict[str, Iterations]:
        """Module name -> :class:`Iterations` of the chosen algorithms of ``z`` that declare one."""
        z = self.encoding.check_z(z)
        return {
            m.name: m.choices[j].iterations
            for m, j in zip(self.modules, z)
            if m.choices[j].iterations is not None
        }

    @property
    def n_pipelines(self) -> int:
        return int(np.prod([len(m.choices) for m in self.modules]))

    @property
    def n_hyperparameters(self) -> int:
        return sum(len(a.tunable) for m in self.modules for a in m.choices)

    @functools.cached_property
    def encoding(self) -> Encoding:
        names, grids, slots = [], [], []
        for module in self.modules:
            module_slots = []
            for algo in module.choices:
                start = len(names)
                for hp in algo.tunable:
                    names.append(f"{module.name}:{algo.name}:{hp.name}")
                    grids.append(hp.grid())
                module_slots.append(np.arange(start, len(names)))
            slots.append(tuple(module_slots))
        tunable = [hp for m in self.modules for a in m.choices for hp in a.tunable]
        theta0 = np.array([hp.default_unit for hp in tunable], dtype=float)
        low_cost = np.array(
            [np.nan if hp.low_cost is None else hp.low_cost_unit for hp in tunable], dtype=float
        )
        return Encoding(
            module_names=tuple(m.name for m in self.modules),
            choice_names=tuple(tuple(a.name for a in m.choices) for m in self.modules),
            theta_names=tuple(names),
            grids=tuple(grids),
            slots=tuple(slots),
            initial_z=self._initial_z(),
            initial_theta=theta0,
            low_cost=low_cost,
            lengths=tuple(tuple(a.iterations for a in m.choices) for m in self.modules),
        )

    def _initial_z(self) -> tuple[int, ...]:
        """The configured initial pipeline if exactly one task is left, else the first choices."""
        chosen = next(iter(self.initial.values())) if len(self.initial) == 1 else {}
        return tuple(m.index(chosen[m.name]) if m.name in chosen else 0 for m in self.modules)

    # ------------------------------------------------------------------ (z, θ) <-> params
    def decode(
        self, z: Sequence[int], theta: np.ndarray, iterations: int | None = None
    ) -> dict[str, Any]:
        """Readable flat configuration of ``(z, θ)``; discrete coordinates are projected.

        ``iterations`` (the training-length fidelity) sets the training-length parameter of the
        chosen iterative algorithm to that many iterations, ``1 <= iterations <= t_max``.
        """
        return configuration.decode(self, z, theta, iterations)

    def encode(
        self, config: Mapping[str, Any], theta: np.ndarray | None = None
    ) -> tuple[tuple[int, ...], np.ndarray]:
        """``(z, θ)`` of a flat configuration; coordinates it does not mention come from ``theta``
        (default: every algorithm at its defaults). A fixed training-length parameter may hold any
        length in ``[1, t_max]`` (what :meth:`decode` writes for ``iterations``)."""
        return configuration.encode(self, config, theta)

    def key(self, z: Sequence[int], theta: np.ndarray) -> str:
        """A canonical string of the pipeline that ``(z, θ)`` evaluates (for caching)."""
        return repr(sorted(self.decode(z, theta).items()))

    # ------------------------------------------------------------------ scikit-learn
    def steps(
        self, z: Sequence[int], theta: np.ndarray, random_state: int | None = None,
        iterations: int | None = None, rounds: int | None = None,
    ) -> list[tuple[str, Any]]:
        """``(name, estimator | "passthrough")`` per module for ``(z, θ)`` (and a training length,
        as :meth:`decode`); a wrapping module's step is its meta-estimator, not yet given the
        pipeline it wraps (:meth:`to_pipeline` does that). ``rounds`` sets the estimator's
        number of rounds to what early stopping chose (:meth:`stopping`): the refit of an
        early-stopped evaluation."""
        config = self.decode(z, theta, iterations)
        if rounds is not None:
            stopping = self.stopping(z)
            if stopping is None:
                raise InvalidParameterError(
                    f"rounds={rounds!r} was given for a pipeline whose estimator does not stop "
                    "early (its choice declares no `stopping`)")
            if not _is_int(rounds) or rounds < 1:
                raise InvalidParameterError(f"rounds must be a positive integer, got {rounds!r}")
            module, stop = stopping
            config[f"{module}__{stop.parameter}"] = int(rounds)
        steps = []
        for module, j in zip(self.modules, z):
            prefix = f"{module.name}__"
            params = {k[len(prefix):]: v for k, v in config.items() if k.startswith(prefix)}
            steps.append((module.name, module.choices[j].build(params, random_state)))
        return steps

    def wraps(self, z: Sequence[int]) -> bool:
        """Whether the pipeline of ``z`` is wrapped by its last module's choice
        (:attr:`Module.wraps`): then it is one step, fitted whole, with no prefix to share."""
        return self.modules[-1].wraps and self.modules[-1].choices[z[-1]].class_path is not None

    def to_pipeline(
        self,
        z: Sequence[int],
        theta: np.ndarray,
        *,
        preprocessor: Any = None,
        random_state: int | None = None,
        iterations: int | None = None,
        rounds: int | None = None,
    ) -> Any:
        """A plain scikit-learn ``Pipeline`` (``preprocessor`` first when given; ``iterations`` as
        :meth:`decode`, ``rounds`` as :meth:`steps`). Where the last module wraps (:attr:`Module.wraps`), the pipeline of the
        modules before it (the preprocessor included) is its ``estimator``, and the result a
        ``Pipeline`` of that one step; its ``none`` choice adds no step."""
        from sklearn.pipeline import Pipeline

        steps = self.steps(z, theta, random_state, iterations, rounds)
        if preprocessor is not None:
            steps.insert(0, ("preprocess", preprocessor))
        if not self.modules[-1].wraps:
            return Pipeline(steps)
        (name, wrapper), steps = steps[-1], steps[:-1]
        if not self.wraps(z):
            return Pipeline(steps)
        return Pipeline([(name, wrapper.set_params(estimator=Pipeline(steps)))])
