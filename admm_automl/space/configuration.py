"""A configuration's two writings, one into the other: ``(z, θ)`` and the readable flat dict.

:meth:`PipelineSpace.decode <admm_automl.space.PipelineSpace.decode>` and
:meth:`~admm_automl.space.PipelineSpace.encode` are these functions; a choice is named by
:func:`choice_index`, which tells a choice the space left out (its package missing, the data too
large for it) from a typo. The space is passed in (a :class:`~admm_automl.space.PipelineSpace`);
this module reads its modules and encoding and imports nothing of it.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..exceptions import InvalidParameterError, MissingDependencyError, unknown_name_message
from .hyperparameters import _is_int


def choice_index(space: Any, module: Any, choice: str) -> int:
    """``module.index(choice)``, except that a choice ``space`` left out (its ``skipped``) is
    named with its reason instead of as a typo: MissingDependencyError when its package is not
    installed, InvalidParameterError when the data are too large for it."""
    if all(a.name != choice for a in module.choices):
        for mod, name, reason in space.skipped:
            if (mod, name) != (module.name, choice):
                continue
            message = f"module {mod!r}: choice {choice!r} was left out of this space: {reason}"
            if reason.startswith("requires "):  # the loader's reason for a missing package
                hint = ("; pip install admm-automl[boost] brings LightGBM and XGBoost"
                        if choice in ("lightgbm", "xgboost") else "")
                raise MissingDependencyError(f"{message} (pip install it{hint})")
            raise InvalidParameterError(message)
    return module.index(choice)


def decode(space: Any, z: Sequence[int], theta: np.ndarray,
           iterations: int | None = None) -> dict[str, Any]:
    """The readable flat configuration of ``(z, θ)`` in ``space``
    (:meth:`~admm_automl.space.PipelineSpace.decode`)."""
    enc = space.encoding
    z = enc.check_z(z)
    theta = enc.check_theta(theta)
    length = None if iterations is None else training_length(space, z, iterations)
    config: dict[str, Any] = {}
    for i, (module, j) in enumerate(zip(space.modules, z)):
        algo = module.choices[j]
        config[module.name] = algo.name
        units = theta[enc.slots[i][j]]
        for key, value in algo.params_from_unit(units).items():
            config[f"{module.name}__{key}"] = value
        if length is not None and algo.iterations is length:
            config[f"{module.name}__{length.parameter}"] = int(iterations)
    return config


def training_length(space: Any, z: tuple[int, ...], iterations: int) -> Any:
    """The :class:`~admm_automl.space.Iterations` of the pipeline ``z`` that ``iterations``
    applies to, after checking its range."""
    try:
        length = space.encoding.training_length(z)
    except ValueError as err:
        raise InvalidParameterError(str(err)) from None
    if length is None:
        chosen = ", ".join(m.choices[j].name for m, j in zip(space.modules, z))
        raise InvalidParameterError(
            f"a training length (iterations={iterations!r}) was asked for the pipeline "
            f"{chosen}, but none of its algorithms declares `iterations`"
        )
    if not _is_int(iterations) or not 1 <= iterations <= length.t_max:
        raise InvalidParameterError(
            f"iterations must be an integer in [1, {length.t_max}] (t_max of "
            f"{length.parameter!r}), got {iterations!r}"
        )
    return length


def encode(space: Any, config: Mapping[str, Any],
           theta: np.ndarray | None = None) -> tuple[tuple[int, ...], np.ndarray]:
    """``(z, θ)`` of a flat configuration in ``space``
    (:meth:`~admm_automl.space.PipelineSpace.encode`)."""
    enc = space.encoding
    theta = (enc.initial_theta if theta is None else np.asarray(theta, dtype=float)).copy()
    unknown = set(config) - {m.name for m in space.modules} - {
        k for k in config if "__" in k and k.split("__", 1)[0] in enc.module_names
    }
    if unknown:
        raise InvalidParameterError(f"unknown configuration keys {sorted(unknown)!r}")
    z = []
    for i, module in enumerate(space.modules):
        j = choice_index(space, module, config[module.name]) if module.name in config else 0
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
                _check_fixed(algo, module, hp_name, fixed[hp_name].value, value)
            else:
                raise InvalidParameterError(
                    f"{algo.name!r} in module {module.name!r}: "
                    + unknown_name_message(
                        "hyperparameter", hp_name, [h.name for h in algo.hyperparameters]
                    )
                )
    return tuple(z), theta


def _check_fixed(algo: Any, module: Any, name: str, fixed: Any, value: Any) -> None:
    """A fixed hyperparameter is given its value, or — the training-length parameter — any
    length in ``[1, t_max]`` (the fidelity of an evaluation, not θ; what :func:`decode` writes
    for ``iterations``)."""
    length = algo.iterations
    a_length = (
        length is not None and name == length.parameter and _is_int(value)
        and 1 <= value <= length.t_max
    )
    if not _same_value(fixed, value) and not a_length:
        raise InvalidParameterError(
            f"{algo.name!r} in module {module.name!r}: hyperparameter "
            f"{name!r} is fixed to {fixed!r}, got {value!r}"
        )


def _same_value(a: Any, b: Any) -> bool:
    """``a == b``, with lists and tuples alike: a configuration read back from a journal (JSON)
    holds a list where the space holds a tuple, e.g. a fixed ``bins=(0, 26, 120)``."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    return a == b
