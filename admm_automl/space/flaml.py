"""A pipeline space as FLAML's hierarchical tune space (Wang et al., ICLR 2021), and back.

FLAML searches a conditional space as nested choices: per module one ``tune.choice`` among
per-algorithm dictionaries ``{"choice": j, hyperparameter: domain, ...}`` — the joint space of
BlendSearch's own AutoML setting. This module translates between that form and the ``(z, θ)`` of
:class:`~admm_automl.space.PipelineSpace`; the FLAML peer of the benchmark and the ``cfo`` /
``blendsearch`` θ-solvers over the joint space (``method="jopt"``) both use it. FLAML is imported
only when :func:`flaml_space` is called.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .hyperparameters import Categorical, Float, Hyperparameter, Int
from .space import PipelineSpace

__all__ = ["flaml_config", "flaml_low_cost", "flaml_point", "flaml_space"]


def flaml_space(space: PipelineSpace) -> dict[str, Any]:
    """FLAML's hierarchical space: per module a choice among ``{"choice": j, hp: domain, ...}``.

    FLAML has no conditions inside a dictionary, so a conditional hyperparameter is always sampled
    (it has no effect when inactive: the decoded pipeline ignores it). A categorical is a choice of
    its indices."""
    from flaml import tune

    def domain(hp: Hyperparameter) -> Any:
        if isinstance(hp, Float):
            return (tune.loguniform if hp.log else tune.uniform)(hp.low, hp.high)
        if isinstance(hp, Int):  # FLAML's integer upper bounds are exclusive
            return (tune.lograndint if hp.log else tune.randint)(hp.low, hp.high + 1)
        return tune.choice(list(range(len(hp.choices))))  # type: ignore[attr-defined]

    return {
        module.name: tune.choice([
            {"choice": j, **{hp.name: domain(hp) for hp in algo.tunable}}
            for j, algo in enumerate(module.choices)
        ])
        for module in space.modules
    }


def _flaml_value(hp: Hyperparameter, u: float) -> Any:
    """The FLAML value of unit coordinate ``u`` (a categorical's index)."""
    if isinstance(hp, Categorical):
        return hp.index(hp.from_unit(u))
    return hp.from_unit(u)


def flaml_point(config: dict[str, Any], space: PipelineSpace) -> tuple[tuple[int, ...], np.ndarray]:
    """``(z, θ)`` of a FLAML configuration; the coordinates of algorithms not chosen keep their
    initial (default) values."""
    enc = space.encoding
    theta = enc.initial_theta.copy()
    z = []
    for i, module in enumerate(space.modules):
        chosen = config[module.name]
        j = int(chosen["choice"])
        z.append(j)
        slot = enc.slots[i][j]
        for k, hp in enumerate(module.choices[j].tunable):
            value = chosen[hp.name]
            if isinstance(hp, Categorical):
                value = hp.choices[int(value)]
            theta[slot[k]] = hp.to_unit(value)
    return tuple(z), theta


def flaml_config(space: PipelineSpace, z: Sequence[int], theta: np.ndarray) -> dict[str, Any]:
    """The FLAML configuration of ``(z, θ)`` (the inverse of :func:`flaml_point` on the chosen
    algorithms; relaxed discrete coordinates are rounded to their value)."""
    enc = space.encoding
    theta = np.asarray(theta, dtype=float)
    config = {}
    for i, (module, j) in enumerate(zip(space.modules, enc.check_z(z))):
        slot = enc.slots[i][j]
        config[module.name] = {"choice": j, **{
            hp.name: _flaml_value(hp, theta[slot[k]])
            for k, hp in enumerate(module.choices[j].tunable)
        }}
    return config


def flaml_low_cost(space: PipelineSpace) -> dict[str, Any]:
    """FLAML's hierarchical ``low_cost_partial_config``: per module the list of every choice's
    declared low-cost values (empty for a choice that declares none).

    FLAML's AutoML also appends the index of the cheapest learner, which FLAML honours only for a
    choice ordered by costs (``cat_hp_cost``); a pipeline space knows no relative cost of its
    algorithms, so none is appended and FLAML picks each module's first choice at random (its own
    rule without one)."""
    return {
        module.name: [
            {hp.name: _flaml_value(hp, hp.low_cost_unit) for hp in algo.tunable
             if hp.low_cost is not None}
            for algo in module.choices
        ]
        for module in space.modules
    }
