"""Strict YAML configuration <-> estimator parameters.

```yaml
estimator:                 # keys are exactly the parameters of ADMM.__init__
  search_space: paper_small
  theta_solver: random     # or {name: random, params: {}}
  z_solver: random
  max_evals: 100
  random_state: 0
data:                      # used by the command line
  dataset: breast_cancer   # a scikit-learn bundled set, openml:NAME / openml:ID (cached after the
  # data_dir: ../shared/data #   first download), or, with data_dir, a file NAME.csv[.gz] of that
  #                        #   directory (target column 'target'), or
  # csv: path/to/file.csv  # a CSV file with
  # target: label          # its target column
  test_size: 0.25          # held-out test fraction
```

Unknown keys are errors that name the key path and suggest the nearest valid key.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ._yaml import config_node, estimator_params, read_yaml, write_config
from .exceptions import ConfigError, InvalidParameterError, did_you_mean, unknown_name_message

DATA_KEYS = {"dataset", "data_dir", "csv", "target", "test_size"}
TOP_KEYS = {"estimator", "data"}


def estimator_param_names() -> list[str]:
    from .estimator import ADMM

    return sorted(p for p in inspect.signature(ADMM.__init__).parameters if p != "self")


def _check_keys(node: Any, allowed: set[str] | list[str], path: str) -> dict[str, Any]:
    if node is None:
        return {}
    if not isinstance(node, Mapping):
        raise ConfigError(f"{path}: expected a mapping, got {type(node).__name__}")
    for key in node:
        if key not in allowed:
            where = f"{path}.{key}" if path else str(key)
            raise ConfigError(
                f"{where}: unknown key.{did_you_mean(str(key), allowed)} "
                f"Allowed: {', '.join(sorted(allowed))}"
            )
    return dict(node)


@dataclass
class Config:
    """A run configuration: estimator parameters and (for the CLI) where the data comes from."""

    estimator: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)

    def make_estimator(self):
        """The estimator these parameters describe (validated, so a bad value fails now)."""
        from .estimator import ADMM, ADMMClassifier, ADMMRegressor

        params = dict(self.estimator)
        cls = {"classification": ADMMClassifier, "regression": ADMMRegressor}.get(
            params.get("task", "auto"), ADMM
        )
        if cls is not ADMM:
            params.pop("task", None)
        est = cls(**params)
        try:
            est._validate_params()
        except InvalidParameterError as err:
            raise ConfigError(f"estimator: {err}") from None
        return est

    def to_dict(self, lenient: bool = False) -> dict[str, Any]:
        """Plain types for YAML; ``lenient`` writes what YAML cannot hold (a function, a space
        object) as its repr instead of raising :class:`ConfigError`."""
        return config_node(self.estimator, self.data, lenient)


def config_from_dict(node: Any) -> Config:
    top = _check_keys(node, TOP_KEYS, "")
    estimator = _check_keys(top.get("estimator"), estimator_param_names(), "estimator")
    data = _check_keys(top.get("data"), DATA_KEYS, "data")
    if "dataset" in data and "csv" in data:
        raise ConfigError("data: give either 'dataset' or 'csv', not both")
    if "csv" in data and "target" not in data:
        raise ConfigError("data.target: required with data.csv (the name of the target column)")
    if "data_dir" in data and "dataset" not in data:
        raise ConfigError("data.dataset: required with data.data_dir (a file name in it)")
    if "dataset" in data and "data_dir" not in data:
        from .datasets import BUNDLED, OPENML_PREFIX

        if data["dataset"] not in BUNDLED and not str(data["dataset"]).startswith(OPENML_PREFIX):
            raise ConfigError("data.dataset: " + unknown_name_message("dataset", data["dataset"], BUNDLED))
    if "test_size" in data:
        size = data["test_size"]
        if isinstance(size, bool) or not isinstance(size, (int, float)) or not 0 < size < 1:
            raise ConfigError(f"data.test_size: must be a number in (0, 1), got {size!r}")
    config = Config(estimator, data)
    config.make_estimator()  # validates values and component names
    return config


def load_config(source: "str | Path | Mapping[str, Any]") -> Config:
    """Read and validate a YAML file (or an already parsed mapping)."""
    if isinstance(source, Mapping):
        return config_from_dict(source)
    path = Path(source)
    if not path.is_file():
        raise ConfigError(f"configuration file {str(path)!r} does not exist")
    try:
        with open(path, encoding="utf-8") as fh:
            node = read_yaml(fh)
        return config_from_dict(node or {})
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None


def config_from_estimator(est: Any, data: Mapping[str, Any] | None = None) -> Config:
    """The configuration of an estimator (all parameters, defaults included)."""
    return Config(estimator_params(est), dict(data or {}))


def dump_config(config: Config, path: "str | Path", lenient: bool = False) -> None:
    """Write ``config`` as YAML; ``lenient`` as :meth:`Config.to_dict` (the file then records the
    run but cannot be loaded again, which a comment on its first line says)."""
    write_config(config.estimator, config.data, path, lenient=lenient)
