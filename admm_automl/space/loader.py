"""Strict YAML loading of pipeline spaces (format: docs/search_space.md) and the built-in spaces."""

from __future__ import annotations

import functools
import re
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from .._yaml import read_yaml
from ..exceptions import ConfigError, InvalidParameterError, UnknownComponentError
from ..exceptions import did_you_mean, unknown_name_message
from .hyperparameters import Categorical, Fixed, Float, Hyperparameter, Int, _freeze
from .space import PASSTHROUGH, TASKS, Algorithm, Module, PipelineSpace

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_HP_KEYS = {
    "float": {"type", "low", "high", "default", "log", "condition"},
    "int": {"type", "low", "high", "default", "log", "condition"},
    "categorical": {"type", "choices", "default", "condition"},
    "fixed": {"type", "value", "condition"},
}
_ALIASES = {"log-float": ("float", True), "log-int": ("int", True)}


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
    cls = {"float": Float, "int": Int, "categorical": Categorical, "fixed": Fixed}[kind]
    try:
        return cls(name, condition=condition, **spec)
    except (InvalidParameterError, TypeError) as err:
        raise ConfigError(f"{path}: {err}") from None


def _algorithm(node: Any, path: str) -> Algorithm:
    if isinstance(node, Mapping) and node.get("name") == PASSTHROUGH:
        _check_keys(node, {"name"}, {"name"}, path)
        return Algorithm(PASSTHROUGH)
    spec = _check_keys(node, {"name", "class", "task", "hyperparameters"}, {"name", "class"}, path)
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
    return Algorithm(name, spec["class"], hps, task)


def space_from_dict(node: Any, source: str = "space") -> PipelineSpace:
    """Build a :class:`PipelineSpace` from a parsed YAML mapping; errors name the key path."""
    spec = _check_keys(node, {"name", "description", "initial", "modules"}, {"name", "modules"}, "")
    name = _check_name(spec["name"], "name")
    if not isinstance(spec["modules"], list) or not spec["modules"]:
        raise ConfigError("modules: expected a non-empty list")
    modules = []
    for i, m in enumerate(spec["modules"]):
        mpath = f"modules[{i}]"
        mspec = _check_keys(m, {"name", "choices"}, {"name", "choices"}, mpath)
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
        modules.append(Module(mname, algos))
    if len({m.name for m in modules}) != len(modules):
        raise ConfigError(f"modules: duplicate module names in {[m.name for m in modules]!r}")
    initial = _check_keys(spec.get("initial") or {}, set(TASKS), set(), "initial")
    space = PipelineSpace(name, tuple(modules), initial, str(spec.get("description", "")))
    for task, chosen in initial.items():
        _check_keys(chosen, {m.name for m in modules}, set(), f"initial.{task}")
        for module in modules:
            if module.name in chosen:
                try:
                    module.index(chosen[module.name])
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
    if text.endswith((".yaml", ".yml")) or Path(text).is_file():
        path = Path(text)
        if not path.is_file():
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
    return space_from_dict(node)
