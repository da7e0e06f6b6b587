"""Warm-start portfolios: a handful of configurations, good across datasets, evaluated first.

A portfolio is YAML data (``portfolios/<space>.yaml`` beside the built-in spaces for a built-in
space, or any file)::

    space: default                 # the space its configurations belong to
    description: ...
    classification:                # one list per task; a configuration is a flat mapping as in
      - {scaler: none, estimator: lightgbm, estimator__num_leaves: 31, ...}   # best_params_
    regression: []

It is learned offline by greedy portfolio construction (Feurer et al., JMLR 2022:
``experiments/portfolio.py``). The ADMM method starts from it: after the initial pipeline the
configurations are θ's values for their algorithms and their pipelines the first z-step's
(:meth:`admm_automl.methods.admm.ADMMOptimizer`, ``warm_start``).
"""

from __future__ import annotations

import functools
import logging
from importlib import resources
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from .._yaml import read_yaml
from ..exceptions import ConfigError, InvalidParameterError
from .space import TASKS, PipelineSpace

logger = logging.getLogger(__name__)

_KEYS = {"space", "description", *TASKS}


def _portfolio_dir():
    return resources.files(__package__).joinpath("portfolios")


def builtin_portfolio(space_name: str) -> dict[str, Any] | None:
    """The parsed portfolio shipped for the built-in space ``space_name`` (None if there is none)."""
    path = _portfolio_dir().joinpath(f"{space_name}.yaml")
    return _read_builtin(space_name) if path.is_file() else None


@functools.lru_cache(maxsize=None)
def _read_builtin(space_name: str) -> dict[str, Any]:
    text = _portfolio_dir().joinpath(f"{space_name}.yaml").read_text(encoding="utf-8")
    return check_portfolio(read_yaml(text), f"portfolio of {space_name!r}")


def check_portfolio(node: Any, where: str = "portfolio") -> dict[str, Any]:
    """A parsed portfolio mapping with its keys and lists checked (configurations are checked
    against a space by :func:`portfolio_points`)."""
    if not isinstance(node, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {type(node).__name__}")
    unknown = set(node) - _KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)!r}; allowed: {sorted(_KEYS)}")
    for task in TASKS:
        configs = node.get(task) or []
        if not isinstance(configs, list) or not all(isinstance(c, Mapping) for c in configs):
            raise ConfigError(f"{where}: {task!r} must be a list of configuration mappings")
    return dict(node)


def resolve_portfolio(spec: Any, space: PipelineSpace, task: str) -> list[dict[str, Any]]:
    """The configurations of ``spec`` for ``task``.

    ``spec`` is ``"auto"`` (the portfolio shipped for a built-in space of that name — also when
    the space extends it by a wrapping module such as the fairness mitigations,
    :attr:`~.space.PipelineSpace.base_name` — none for other spaces, also a user's space that
    bears a built-in name: the portfolio's configurations were chosen in the shipped one), None (none), a YAML file
    path, a parsed portfolio mapping, or a list of configurations.
    """
    if spec is None:
        return []
    if isinstance(spec, str) and spec == "auto":
        node = builtin_portfolio(space.base_name) if space.shipped else None
        if node is None or node.get("space") != space.base_name:
            return []
    elif isinstance(spec, (str, Path)):
        path = Path(spec)
        if not path.is_file():
            raise InvalidParameterError(f"portfolio file {str(spec)!r} does not exist")
        node = check_portfolio(read_yaml(path.read_text(encoding="utf-8")), str(path))
    elif isinstance(spec, Mapping):
        node = check_portfolio(spec)
    elif isinstance(spec, Sequence):
        node = check_portfolio({task: list(spec)})
    else:
        raise InvalidParameterError(
            f"portfolio must be 'auto', None, a YAML path, a mapping or a list of configurations, "
            f"got {spec!r}"
        )
    return [dict(c) for c in node.get(task) or []]


def kept_configs(configs: Sequence[Mapping[str, Any]], space: PipelineSpace) -> list[dict]:
    """The configurations whose algorithms ``space`` keeps: one that names an algorithm the space
    left out (a package in ``requires`` is missing, or the data exceed ``max_rows``) is dropped
    with a log message."""
    skipped = {(module, choice) for module, choice, _ in space.skipped}
    kept = []
    for config in configs:
        left_out = [f"{m}={config[m]}" for m in space.encoding.module_names
                    if (m, config.get(m)) in skipped]
        if left_out:
            logger.info("portfolio configuration skipped (%s not in the space)", ", ".join(left_out))
            continue
        kept.append(dict(config))
    return kept


def portfolio_points(
    configs: Sequence[Mapping[str, Any]], space: PipelineSpace
) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """``(z, θ)`` of each configuration in ``space`` (the task's sub-space).

    A configuration that names an algorithm the space left out (a package in ``requires`` is
    missing, or the data exceed ``max_rows``) is dropped with a log message; any other invalid
    configuration raises :class:`InvalidParameterError` naming it.
    """
    points = []
    for config in kept_configs(configs, space):
        try:
            z, theta = space.encode(config)
        except InvalidParameterError as err:
            raise InvalidParameterError(f"portfolio configuration {dict(config)!r}: {err}") from None
        points.append((z, space.encoding.project(theta)))
    return points
