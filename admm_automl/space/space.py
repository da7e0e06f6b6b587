"""The pipeline space: modules of algorithm choices, each a scikit-learn class with hyperparameters.

A configuration is written two ways:

* encoded, as ``(z, θ)`` for the optimisers (see :class:`~admm_automl.space.encoding.Encoding`);
* readable, as a flat dict in scikit-learn's ``step__param`` style:
  ``{"scaler": "robust_scaler", "scaler__with_centering": True, "estimator": "random_forest", ...}``.

Nothing here imports scikit-learn at module level; classes are imported when a pipeline is built.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ..exceptions import InvalidParameterError, unknown_name_message
from .encoding import Encoding
from .hyperparameters import Categorical, Hyperparameter

PASSTHROUGH = "none"
TASKS = ("classification", "regression")


@functools.lru_cache(maxsize=None)
def import_class(path: str) -> type:
    """Import ``package.module.Class``; errors name the path."""
    module_name, _, attr = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError) as err:
        raise InvalidParameterError(f"cannot import class {path!r}: {err}") from None


def instantiate(value: Any) -> Any:
    """Turn ``{"class": path, "params": {...}}`` values (possibly nested) into objects and
    ``{"function": path}`` into the function."""
    if isinstance(value, Mapping) and set(value) == {"function"}:
        return import_class(value["function"])
    if isinstance(value, Mapping) and "class" in value:
        params = {k: instantiate(v) for k, v in dict(value.get("params") or {}).items()}
        return import_class(value["class"])(**params)
    return value


@dataclass(frozen=True)
class Algorithm:
    """One choice of a module: a scikit-learn class and its hyperparameters.

    ``class_path=None`` is the passthrough choice (named ``"none"``).
    """

    name: str
    class_path: str | None = None
    hyperparameters: tuple[Hyperparameter, ...] = ()
    task: str = "any"

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
        """Instantiate the class with ``params``; ``a__b`` names go through ``set_params``."""
        if self.class_path is None:
            return "passthrough"
        cls = import_class(self.class_path)
        direct = {k: instantiate(v) for k, v in params.items() if "__" not in k}
        nested = {k: instantiate(v) for k, v in params.items() if "__" in k}
        if random_state is not None and "random_state" not in direct:
            if "random_state" in inspect.signature(cls).parameters:
                direct["random_state"] = random_state
        obj = cls(**direct)
        if nested:
            obj.set_params(**nested)
        return obj


@dataclass(frozen=True)
class Module:
    """A pipeline stage with named algorithm choices."""

    name: str
    choices: tuple[Algorithm, ...]

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
    """An ordered sequence of modules; the search space of one AutoML run."""

    name: str
    modules: tuple[Module, ...]
    initial: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    description: str = ""

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
            modules.append(Module(module.name, kept))
        initial = {task: self.initial[task]} if task in self.initial else {}
        return PipelineSpace(self.name, tuple(modules), initial, self.description)

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
        theta0 = np.array(
            [hp.default_unit for m in self.modules for a in m.choices for hp in a.tunable],
            dtype=float,
        )
        return Encoding(
            module_names=tuple(m.name for m in self.modules),
            choice_names=tuple(tuple(a.name for a in m.choices) for m in self.modules),
            theta_names=tuple(names),
            grids=tuple(grids),
            slots=tuple(slots),
            initial_z=self._initial_z(),
            initial_theta=theta0,
        )

    def _initial_z(self) -> tuple[int, ...]:
        """The configured initial pipeline if exactly one task is left, else the first choices."""
        chosen = next(iter(self.initial.values())) if len(self.initial) == 1 else {}
        return tuple(m.index(chosen[m.name]) if m.name in chosen else 0 for m in self.modules)

    # ------------------------------------------------------------------ (z, θ) <-> params
    def decode(self, z: Sequence[int], theta: np.ndarray) -> dict[str, Any]:
        """Readable flat configuration of ``(z, θ)``; discrete coordinates are projected."""
        enc = self.encoding
        z = enc.check_z(z)
        theta = enc.check_theta(theta)
        config: dict[str, Any] = {}
        for i, (module, j) in enumerate(zip(self.modules, z)):
            algo = module.choices[j]
            config[module.name] = algo.name
            units = theta[enc.slots[i][j]]
            for key, value in algo.params_from_unit(units).items():
                config[f"{module.name}__{key}"] = value
        return config

    def encode(
        self, config: Mapping[str, Any], theta: np.ndarray | None = None
    ) -> tuple[tuple[int, ...], np.ndarray]:
        """``(z, θ)`` of a flat configuration; coordinates it does not mention come from ``theta``
        (default: every algorithm at its defaults)."""
        enc = self.encoding
        theta = (enc.initial_theta if theta is None else np.asarray(theta, dtype=float)).copy()
        unknown = set(config) - {m.name for m in self.modules} - {
            k for k in config if "__" in k and k.split("__", 1)[0] in enc.module_names
        }
        if unknown:
            raise InvalidParameterError(f"unknown configuration keys {sorted(unknown)!r}")
        z = []
        for i, module in enumerate(self.modules):
            j = module.index(config[module.name]) if module.name in config else 0
            z.append(j)
            algo = module.choices[j]
            slot = enc.slots[i][j]
            by_name = {hp.name: k for k, hp in enumerate(algo.tunable)}
            prefix = f"{module.name}__"
            for key, value in config.items():
                if not key.startswith(prefix):
                    continue
                hp_name = key[len(prefix):]
                fixed = {h.name: h for h in algo.hyperparameters if not h.tunable}
                if hp_name in by_name:
                    theta[slot[by_name[hp_name]]] = algo.tunable[by_name[hp_name]].to_unit(value)
                elif hp_name in fixed:
                    if fixed[hp_name].value != value:
                        raise InvalidParameterError(
                            f"{algo.name!r} in module {module.name!r}: hyperparameter "
                            f"{hp_name!r} is fixed to {fixed[hp_name].value!r}, got {value!r}"
                        )
                else:
                    raise InvalidParameterError(
                        f"{algo.name!r} in module {module.name!r}: "
                        + unknown_name_message(
                            "hyperparameter", hp_name, [h.name for h in algo.hyperparameters]
                        )
                    )
        return tuple(z), theta

    def key(self, z: Sequence[int], theta: np.ndarray) -> str:
        """A canonical string of the pipeline that ``(z, θ)`` evaluates (for caching)."""
        return repr(sorted(self.decode(z, theta).items()))

    # ------------------------------------------------------------------ scikit-learn
    def steps(
        self, z: Sequence[int], theta: np.ndarray, random_state: int | None = None
    ) -> list[tuple[str, Any]]:
        """``(name, estimator | "passthrough")`` per module for ``(z, θ)``."""
        config = self.decode(z, theta)
        steps = []
        for module, j in zip(self.modules, z):
            prefix = f"{module.name}__"
            params = {k[len(prefix):]: v for k, v in config.items() if k.startswith(prefix)}
            steps.append((module.name, module.choices[j].build(params, random_state)))
        return steps

    def to_pipeline(
        self,
        z: Sequence[int],
        theta: np.ndarray,
        *,
        preprocessor: Any = None,
        random_state: int | None = None,
    ) -> Any:
        """A plain scikit-learn ``Pipeline`` (``preprocessor`` first when given)."""
        from sklearn.pipeline import Pipeline

        steps = self.steps(z, theta, random_state)
        if preprocessor is not None:
            steps.insert(0, ("preprocess", preprocessor))
        return Pipeline(steps)
