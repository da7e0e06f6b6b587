"""Strict YAML loading of pipeline spaces (format: docs/search_space.md) and the built-in spaces."""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import logging
import re
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from .._yaml import read_yaml
from ..exceptions import ConfigError, InvalidParameterError, UnknownComponentError
from ..exceptions import did_you_mean, unknown_name_message
from .hyperparameters import Categorical, Fixed, Float, Hyperparameter, Int, _freeze
from .space import (
    CONTINUATIONS,
    PASSTHROUGH,
    TASKS,
    Algorithm,
    Iterations,
    Module,
    PipelineSpace,
    Stopping,
    iteration_parameter,
)

logger = logging.getLogger(__name__)

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_IMPORT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_HP_KEYS = {
    "float": {"type", "low", "high", "default", "log", "condition", "low_cost"},
    "int": {"type", "low", "high", "default", "log", "condition", "low_cost"},
    "categorical": {"type", "choices", "default", "condition", "low_cost"},
    "fixed": {"type", "value", "condition"},
}
_ALIASES = {"log-float": ("float", True), "log-int": ("int", True)}
_ALGORITHM_KEYS = {"name", "class", "task", "hyperparameters", "iterations", "requires", "max_rows",
                   "stopping", "categories", "category_parameter"}
_ITERATIONS_KEYS = {"parameter", "t_min", "t_max", "method"}
_STOPPING_KEYS = {"parameter", "method"}


def module_available(name: str) -> bool:
    """Whether the package ``name`` can be imported (found on the path; it is not imported)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a missing parent package of a dotted name
        return False


def _check_keys(node: Any, allowed: set[str], required: set[str], path: str) -> dict:
    if not isinstance(node, Mapping):
        raise ConfigError(f"{path or 'space'}: expected a mapping, got {type(node).__name__}")
    for key in node:
        if key not in allowed:
            raise ConfigError(
                f"{path + '.' if path else ''}{key}: unknown key.{did_you_mean(str(key), allowed)} "
                f"Allowed: {', '.join(sorted(allowed))}"
            )
    for key in sorted(required - set(node)):
        raise ConfigError(f"{path + '.' if path else ''}{key}: required key is missing")
    return dict(node)


def _check_name(name: Any, path: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(f"{path}: name {name!r} must match [a-z][a-z0-9_]*")
    return name


def _hyperparameter(name: str, node: Any, path: str) -> Hyperparameter:
    if not isinstance(node, Mapping) or "type" not in node:
        raise ConfigError(f"{path}: a hyperparameter needs a mapping with a 'type'")
    kind, log = _ALIASES.get(node["type"], (node["type"], None))
    if kind not in _HP_KEYS:
        raise ConfigError(
            f"{path}.type: unknown type {node['type']!r}."
            f"{did_you_mean(str(node['type']), list(_HP_KEYS) + list(_ALIASES))} "
            f"Allowed: {', '.join(list(_HP_KEYS) + list(_ALIASES))}"
        )
    required = {"type", "value"} if kind == "fixed" else (
        {"type", "choices", "default"} if kind == "categorical" else {"type", "low", "high", "default"}
    )
    spec = _check_keys(node, _HP_KEYS[kind], required, path)
    condition = spec.pop("condition", None) or {}
    if not isinstance(condition, Mapping):
        raise ConfigError(f"{path}.condition: expected a mapping {{sibling: [values]}}")
    condition = {
        k: tuple(_freeze(x) for x in v) if isinstance(v, list) else (_freeze(v),)
        for k, v in condition.items()
    }
    spec.pop("type")
    if log is not None:
        spec["log"] = log
    if "low_cost" in spec and spec["low_cost"] is None:
        raise ConfigError(
            f"{path}.low_cost: null is not a low-cost value (omit the key to declare none)"
        )
    cls = {"float": Float, "int": Int, "categorical": Categorical, "fixed": Fixed}[kind]
    try:
        return cls(name, condition=condition, **spec)
    except (InvalidParameterError, TypeError) as err:
        raise ConfigError(f"{path}: {err}") from None


def _iterations(node: Any, algorithm: str, hps: tuple[Hyperparameter, ...], path: str) -> Iterations:
    """``iterations:`` of an algorithm; ``t_min`` / ``t_max`` default to an int's range, or to 1 and
    a fixed value (the range is checked against the parameter when the Algorithm is built)."""
    spec = _check_keys(node, _ITERATIONS_KEYS, {"parameter", "method"}, path)
    try:
        hp = iteration_parameter(algorithm, hps, spec["parameter"])
    except InvalidParameterError as err:
        raise ConfigError(f"{path}: {err}") from None
    spec.setdefault("t_min", hp.low if isinstance(hp, Int) else 1)
    spec.setdefault("t_max", hp.high if isinstance(hp, Int) else hp.value)
    if spec["method"] not in CONTINUATIONS:
        raise ConfigError(
            f"{path}.method: {spec['method']!r} is not one of {', '.join(CONTINUATIONS)}."
            f"{did_you_mean(str(spec['method']), CONTINUATIONS)}"
        )
    try:
        return Iterations(spec["parameter"], spec["t_min"], spec["t_max"], spec["method"])
    except InvalidParameterError as err:
        raise ConfigError(f"{path}: {err}") from None


def _stopping(node: Any, algorithm: str, hps: tuple[Hyperparameter, ...], path: str) -> Stopping:
    """``stopping:`` of an algorithm: the number-of-rounds parameter and the library's method."""
    spec = _check_keys(node, _STOPPING_KEYS, _STOPPING_KEYS, path)
    try:
        iteration_parameter(algorithm, hps, spec["parameter"])
        return Stopping(spec["parameter"], spec["method"])
    except InvalidParameterError as err:
        raise ConfigError(f"{path}: {err}") from None


def _requires(node: Any, path: str) -> tuple[str, ...]:
    if not isinstance(node, list) or not node:
        raise ConfigError(f"{path}: expected a non-empty list of import names, e.g. [lightgbm]")
    for name in node:
        if not isinstance(name, str) or not _IMPORT_NAME.match(name):
            raise ConfigError(f"{path}: {name!r} is not an import name")
    return tuple(node)


def _algorithm(node: Any, path: str) -> Algorithm:
    if isinstance(node, Mapping) and node.get("name") == PASSTHROUGH:
        _check_keys(node, {"name"}, {"name"}, path)
        return Algorithm(PASSTHROUGH)
    spec = _check_keys(node, _ALGORITHM_KEYS, {"name", "class"}, path)
    name = _check_name(spec["name"], f"{path}.name")
    task = spec.get("task", "any")
    if task not in ("any",) + TASKS:
        raise ConfigError(f"{path}.task: {task!r} is not one of any, classification, regression")
    hps_node = spec.get("hyperparameters") or {}
    if not isinstance(hps_node, Mapping):
        raise ConfigError(f"{path}.hyperparameters: expected a mapping name -> domain")
    hps = tuple(
        _hyperparameter(str(k), v, f"{path}.hyperparameters.{k}") for k, v in hps_node.items()
    )
    by_name = {h.name: h for h in hps}
    for hp in hps:
        for parent, allowed in hp.condition.items():
            parent_hp = by_name.get(parent)
            if not isinstance(parent_hp, Categorical):
                raise ConfigError(
                    f"{path}.hyperparameters.{hp.name}.condition: {parent!r} is not a "
                    "categorical hyperparameter of the same algorithm"
                )
            bad = [v for v in allowed if v not in parent_hp.choices]
            if bad:
                raise ConfigError(
                    f"{path}.hyperparameters.{hp.name}.condition: {bad!r} not among the "
                    f"choices {list(parent_hp.choices)!r} of {parent!r}"
                )
    if not isinstance(spec["class"], str) or "." not in spec["class"]:
        raise ConfigError(f"{path}.class: expected an import path such as 'sklearn.svm.SVC'")
    iterations = None
    if "iterations" in spec:
        iterations = _iterations(spec["iterations"], name, hps, f"{path}.iterations")
    stopping = (_stopping(spec["stopping"], name, hps, f"{path}.stopping")
                if "stopping" in spec else None)
    requires = _requires(spec["requires"], f"{path}.requires") if "requires" in spec else ()
    try:  # the Algorithm checks the rest (categories, max_rows, the iterations' range)
        return Algorithm(
            name, spec["class"], hps, task,
            iterations=iterations, requires=requires, max_rows=spec.get("max_rows"),
            stopping=stopping, categories=spec.get("categories", "one_hot"),
            category_parameter=spec.get("category_parameter"),
        )
    except InvalidParameterError as err:
        raise ConfigError(f"{path}: {err}") from None


def _drop_unavailable(
    module: str, algos: tuple[Algorithm, ...], path: str
) -> tuple[tuple[Algorithm, ...], list[tuple[str, str, str]]]:
    """Leave out the choices whose required packages are missing; a task left without a choice in
    the module is an error that names the packages."""
    missing = [[p for p in a.requires if not module_available(p)] for a in algos]
    for task in TASKS:
        serves = [gone for a, gone in zip(algos, missing) if a.task in ("any", task)]
        if serves and all(serves):
            packages = sorted({p for gone in serves for p in gone})
            raise ConfigError(
                f"{path}: no {task} choice is left: every one requires a missing package "
                f"({', '.join(packages)})"
            )
    skipped: list[tuple[str, str, str]] = []
    for a, gone in zip(algos, missing):
        entry = (module, a.name, f"requires {', '.join(gone)}, not installed")
        if gone and entry not in skipped:  # one entry for a name's two task variants
            skipped.append(entry)
            logger.info("search space: left out %s:%s (%s)", *entry)
    return tuple(a for a, gone in zip(algos, missing) if not gone), skipped


def space_from_dict(node: Any, source: str = "space") -> PipelineSpace:
    """Build a :class:`PipelineSpace` from a parsed YAML mapping; errors name the key path.

    Algorithms whose ``requires`` names a package that is not installed are left out and listed in
    :attr:`PipelineSpace.skipped` (and logged at INFO level).
    """
    spec = _check_keys(node, {"name", "description", "initial", "modules"}, {"name", "modules"}, "")
    name = _check_name(spec["name"], "name")
    if not isinstance(spec["modules"], list) or not spec["modules"]:
        raise ConfigError("modules: expected a non-empty list")
    modules, skipped = [], []
    for i, m in enumerate(spec["modules"]):
        mpath = f"modules[{i}]"
        mspec = _check_keys(m, {"name", "choices", "wraps"}, {"name", "choices"}, mpath)
        wraps = mspec.get("wraps", False)
        if not isinstance(wraps, bool):
            raise ConfigError(f"{mpath}.wraps: expected true or false, got {wraps!r}")
        if wraps and i != len(spec["modules"]) - 1:
            raise ConfigError(f"{mpath}.wraps: only the last module may wrap the pipeline "
                              "before it")
        mname = _check_name(mspec["name"], f"{mpath}.name")
        if not isinstance(mspec["choices"], list) or not mspec["choices"]:
            raise ConfigError(f"{mpath}.choices: expected a non-empty list")
        algos = tuple(_algorithm(a, f"{mpath}.choices[{j}]") for j, a in enumerate(mspec["choices"]))
        for task in TASKS:  # a name may repeat across tasks (one variant per task), not within one
            names = [a.name for a in algos if a.task in ("any", task)]
            if len(set(names)) != len(names):
                dup = sorted({n for n in names if names.count(n) > 1})
                raise ConfigError(
                    f"{mpath}.choices: duplicate choice names {dup!r} for {task} (a name may "
                    "repeat only with task: classification and task: regression)"
                )
        algos, left_out = _drop_unavailable(mname, algos, f"{mpath}.choices")
        skipped += left_out
        modules.append(Module(mname, algos, wraps))
    if len({m.name for m in modules}) != len(modules):
        raise ConfigError(f"modules: duplicate module names in {[m.name for m in modules]!r}")
    initial = _check_keys(spec.get("initial") or {}, set(TASKS), set(), "initial")
    space = PipelineSpace(
        name, tuple(modules), initial, str(spec.get("description", "")), tuple(skipped)
    )
    for task, chosen in initial.items():
        _check_keys(chosen, {m.name for m in modules}, set(), f"initial.{task}")
        for module in modules:
            if module.name in chosen:
                reason = next(
                    (r for mod, c, r in skipped if mod == module.name and c == chosen[module.name]),
                    None,
                )
                if reason is not None:
                    raise ConfigError(
                        f"initial.{task}.{module.name}: {chosen[module.name]!r} was left out "
                        f"({reason}); the initial pipeline must not need an optional package"
                    )
                served = tuple(a for a in module.choices if a.task in ("any", task))
                try:  # a name may have one variant per task: look it up among this task's choices
                    Module(module.name, served).index(chosen[module.name])
                except InvalidParameterError as err:
                    raise ConfigError(f"initial.{task}.{module.name}: {err}") from None
    return space


def _builtin_dir():
    return resources.files(__package__).joinpath("builtin")


def list_spaces() -> list[str]:
    """Names of the built-in search spaces."""
    return sorted(p.name[:-5] for p in _builtin_dir().iterdir() if p.name.endswith(".yaml"))


def load_space(spec: "str | Path | Mapping[str, Any] | PipelineSpace") -> PipelineSpace:
    """A built-in space by name, a YAML file path, a parsed mapping, or a space (returned as is)."""
    if isinstance(spec, PipelineSpace):
        return spec
    if isinstance(spec, Mapping):
        return space_from_dict(spec)
    text = str(spec)
    try:
        is_file = Path(text).is_file()
    except OSError as err:  # such as a name longer than a path may be
        shown = repr(text) if len(text) <= 60 else f"{text[:40]!r}... ({len(text)} characters)"
        raise InvalidParameterError(
            f"search space {shown} is neither a built-in space ({', '.join(list_spaces())}) nor "
            f"a file that can be read: {err.strerror}") from None
    if text.endswith((".yaml", ".yml")) or is_file:
        path = Path(text)
        if not is_file:
            raise InvalidParameterError(f"search space file {text!r} does not exist")
        try:
            with open(path, encoding="utf-8") as fh:
                node = read_yaml(fh)
            return space_from_dict(node)
        except ConfigError as err:
            raise ConfigError(f"{path}: {err}") from None
    if text not in list_spaces():
        raise UnknownComponentError(unknown_name_message("search space", text, list_spaces()))
    return _load_builtin(text)


@functools.lru_cache(maxsize=None)
def _load_builtin(name: str) -> PipelineSpace:
    node = read_yaml(_builtin_dir().joinpath(f"{name}.yaml").read_text(encoding="utf-8"))
    return dataclasses.replace(space_from_dict(node), shipped=True)
