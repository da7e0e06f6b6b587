"""Name -> class registries (solvers, constraints), with entry-point plug-ins.

Built-ins register with the :meth:`Registry.register` decorator at import time. Third-party packages
declare entry points in the groups ``admm_automl.theta_solvers``, ``admm_automl.z_solvers`` or
``admm_automl.constraints``; they are loaded on first use. A broken plug-in, or one that would shadow
a built-in, is skipped with a warning, so it cannot break ``import admm_automl``.
"""

from __future__ import annotations

import copy
import logging
import warnings
from importlib import metadata
from typing import Any, Callable, Generic, Mapping, TypeVar

from .exceptions import ADMMAutoMLWarning, InvalidParameterError, UnknownComponentError
from .exceptions import unknown_name_message

logger = logging.getLogger(__name__)
T = TypeVar("T")


class Registry(Generic[T]):
    """Registered classes of one kind, looked up by lowercase name."""

    def __init__(self, kind: str, base: type, entry_point_group: str) -> None:
        self.kind = kind
        self.base = base
        self.group = entry_point_group
        self._classes: dict[str, type] = {}
        self._plugins_loaded = False

    def register(self, name: str) -> Callable[[type], type]:
        """Class decorator: make the class reachable under ``name``."""

        def decorator(cls: type) -> type:
            if name in self._classes and self._classes[name] is not cls:
                raise RuntimeError(f"{self.kind} {name!r} is already registered")
            cls.name = name
            self._classes[name] = cls
            return cls

        return decorator

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        for ep in metadata.entry_points(group=self.group):
            if ep.name in self._classes:
                warnings.warn(
                    f"plug-in {ep.value!r} would shadow the built-in {self.kind} {ep.name!r}; "
                    "skipped",
                    ADMMAutoMLWarning,
                    stacklevel=2,
                )
                continue
            try:
                cls = ep.load()
                if not (isinstance(cls, type) and issubclass(cls, self.base)):
                    raise TypeError(f"{cls!r} is not a subclass of {self.base.__name__}")
            except Exception as err:  # a broken plug-in must not break the package
                warnings.warn(
                    f"{self.kind} plug-in {ep.name!r} ({ep.value}) could not be loaded: {err}",
                    ADMMAutoMLWarning,
                    stacklevel=2,
                )
                continue
            cls.name = ep.name
            self._classes[ep.name] = cls

    def names(self) -> list[str]:
        self._load_plugins()
        return sorted(self._classes)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names()

    def get(self, name: str) -> type:
        if name not in self._classes:
            self._load_plugins()
        if name not in self._classes:
            raise UnknownComponentError(unknown_name_message(self.kind, name, self.names()))
        return self._classes[name]

    def create(self, spec: Any) -> Any:
        """A fresh instance from a name, ``{"name": ..., "params": {...}}`` or an instance (copied)."""
        if isinstance(spec, str):
            return self.get(spec)()
        if isinstance(spec, Mapping):
            extra = set(spec) - {"name", "params"}
            if "name" not in spec or extra:
                raise InvalidParameterError(
                    f"a {self.kind} given as a mapping needs the keys 'name' and optionally "
                    f"'params'; got {sorted(spec)!r}"
                )
            cls = self.get(spec["name"])
            params = dict(spec.get("params") or {})
            try:
                return cls(**params)
            except TypeError as err:
                raise InvalidParameterError(f"{self.kind} {spec['name']!r}: {err}") from None
        if isinstance(spec, self.base):
            return copy.deepcopy(spec)
        raise InvalidParameterError(
            f"a {self.kind} must be a registered name, a mapping {{name, params}} or a "
            f"{self.base.__name__} instance; got {spec!r}"
        )

    def describe(self, name: str) -> str:
        """First line of the class docstring."""
        doc = (self.get(name).__doc__ or "").strip().splitlines()
        return doc[0] if doc else ""

