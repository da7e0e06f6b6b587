"""YAML shared by spaces, configurations and run directories: reading that is safe and strict
about duplicate keys, and writing an estimator's parameters as a configuration."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import IO, Any, Mapping

from ._files import write_file
from .exceptions import ConfigError


@functools.cache
def _strict_loader() -> type:
    """The loader class, made on first use: PyYAML is imported by the first read or write, not by
    ``import admm_automl``."""
    import yaml

    class _StrictLoader(yaml.SafeLoader):
        """``SafeLoader`` that rejects a key repeated within one mapping (PyYAML keeps the last)."""

        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if key in seen:
                    raise ConfigError(
                        f"duplicate key {key!r} at line {key_node.start_mark.line + 1}"
                    )
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    # PyYAML follows YAML 1.1, whose floats need a dot: ``1e-12`` would be read as the text
    # "1e-12", and a hyperparameter's bound written so would be refused as "not a real number".
    # YAML 1.2 (and every other reader a user knows) takes it as a number, so the loader does too.
    _StrictLoader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
        list("-+0123456789"),
    )
    return _StrictLoader


def read_yaml(stream: "str | IO[str]") -> Any:
    """Parse YAML text or a file object; syntax errors become :class:`ConfigError`."""
    import yaml

    try:
        return yaml.load(stream, Loader=_strict_loader())  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as err:
        raise ConfigError(f"not valid YAML: {err}") from None


def plain(value: Any, lenient: bool = False) -> Any:
    """Plain Python types for ``yaml.safe_dump`` (it rejects numpy scalars and tuples); a solver
    or constraint object as ``{name, params}``. ``lenient`` writes what YAML cannot hold (a
    function, a space object) as its repr instead of raising :class:`ConfigError`."""
    import numpy as np

    if isinstance(value, Mapping):
        return {str(k): plain(v, lenient) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, lenient) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if hasattr(value, "get_params") and getattr(value, "name", ""):
        return {"name": value.name, "params": plain(value.get_params(), lenient)}
    if lenient:
        return repr(value)
    raise ConfigError(f"cannot write {value!r} ({type(value).__name__}) to YAML")


def estimator_params(est: Any) -> dict[str, Any]:
    """An estimator's parameters as a configuration holds them (``task`` of a fixed-task one;
    not ``callbacks``, which are code)."""
    params = dict(est.get_params(deep=False))
    params.pop("callbacks", None)
    if getattr(est, "_fixed_task", None):
        params["task"] = est._fixed_task
    return params


def config_node(estimator: Mapping[str, Any], data: Mapping[str, Any] | None = None,
                lenient: bool = False) -> dict[str, Any]:
    """``{"estimator": ..., "data": ...}`` in plain types (see :func:`plain`)."""
    out: dict[str, Any] = {"estimator": plain(estimator, lenient)}
    if data:
        out["data"] = plain(data, lenient)
    return out


def write_config(estimator: Mapping[str, Any], data: Mapping[str, Any] | None,
                 path: "str | Path", lenient: bool = False) -> None:
    """Write a configuration as YAML; ``lenient`` writes what YAML cannot hold as its repr, and a
    comment on the file's first line says that it records the run but cannot be loaded again.
    The file is replaced whole, a symbolic link at ``path`` included (:mod:`._files`)."""
    try:
        node, note = config_node(estimator, data), ""
    except ConfigError as err:
        if not lenient:
            raise
        node, note = config_node(estimator, data, lenient=True), \
            f"# not loadable as a configuration: {err}\n"
    import yaml

    write_file(path, note + yaml.safe_dump(node, sort_keys=False))
