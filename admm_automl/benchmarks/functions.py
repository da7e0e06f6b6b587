"""Synthetic test functions for θ-solvers, in unit-box coordinates, with their known optima.

``BRANIN`` (2-d) and ``HARTMANN6`` (6-d) are the classic global-optimisation benchmarks (Dixon &
Szegő, 1978; the forms of Surjanovic & Bingham's Virtual Library of Simulation Experiments). Each
is a :class:`TestFunction`: call it on a point of [0, 1]^dim (or on the rows of a 2-d array), read
``optimum`` (the global minimum value) and ``minimizers`` (unit-box coordinates), and turn a value
into a regret with :meth:`TestFunction.regret`. :func:`make_theta_problem` wraps one as an ADMM
:class:`~admm_automl.problem.ThetaProblem`, optionally with a quadratic penalty and a history, so
θ-solvers can be exercised without any data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ..problem import QuadraticPenalty, ThetaProblem
from ..records import Observation

__all__ = [
    "BRANIN",
    "FUNCTIONS",
    "HARTMANN6",
    "TestFunction",
    "branin",
    "get_function",
    "hartmann6",
    "make_theta_problem",
]

_BRANIN_LOW = np.array([-5.0, 0.0])
_BRANIN_HIGH = np.array([10.0, 15.0])


def _rows(x: np.ndarray, dim: int) -> tuple[np.ndarray, bool]:
    x = np.asarray(x, dtype=float)
    single = x.ndim == 1
    x = np.atleast_2d(x)
    if x.shape[-1] != dim:
        raise ValueError(f"expected points of dimension {dim}, got shape {x.shape}")
    return x, single


def branin(x: np.ndarray) -> "float | np.ndarray":
    """Branin-Hoo on the unit square (mapped to x1 ∈ [−5, 10], x2 ∈ [0, 15]); minimum 0.397887."""
    u, single = _rows(x, 2)
    p = _BRANIN_LOW + u * (_BRANIN_HIGH - _BRANIN_LOW)
    x1, x2 = p[:, 0], p[:, 1]
    a, b, c = 1.0, 5.1 / (4 * math.pi**2), 5.0 / math.pi
    r, s, t = 6.0, 10.0, 1.0 / (8 * math.pi)
    f = a * (x2 - b * x1**2 + c * x1 - r) ** 2 + s * (1 - t) * np.cos(x1) + s
    return float(f[0]) if single else f


_H6_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
_H6_A = np.array(
    [
        [10.0, 3.0, 17.0, 3.5, 1.7, 8.0],
        [0.05, 10.0, 17.0, 0.1, 8.0, 14.0],
        [3.0, 3.5, 1.7, 10.0, 17.0, 8.0],
        [17.0, 8.0, 0.05, 10.0, 0.1, 14.0],
    ]
)
_H6_P = 1e-4 * np.array(
    [
        [1312, 1696, 5569, 124, 8283, 5886],
        [2329, 4135, 8307, 3736, 1004, 9991],
        [2348, 1451, 3522, 2883, 3047, 6650],
        [4047, 8828, 8732, 5743, 1091, 381],
    ]
)


def hartmann6(x: np.ndarray) -> "float | np.ndarray":
    """Hartmann-6 on [0, 1]^6 (its native domain); minimum −3.32237."""
    u, single = _rows(x, 6)
    inner = np.einsum("kj,nkj->nk", _H6_A, (u[:, None, :] - _H6_P[None, :, :]) ** 2)
    f = -np.exp(-inner) @ _H6_ALPHA
    return float(f[0]) if single else f


@dataclass(frozen=True)
class TestFunction:
    """A deterministic test function on [0, 1]^dim with its known global minimum."""

    name: str
    dim: int
    fn: Callable[[np.ndarray], "float | np.ndarray"] = field(repr=False)
    optimum: float
    minimizers: np.ndarray = field(repr=False)

    __test__ = False  # not a pytest test class

    def __call__(self, x: np.ndarray) -> "float | np.ndarray":
        return self.fn(x)

    def regret(self, value: "float | np.ndarray") -> "float | np.ndarray":
        """``value − optimum`` (≥ 0 up to the rounding of the published optimum)."""
        if np.ndim(value):
            return np.asarray(value, dtype=float) - self.optimum
        return float(value) - self.optimum


BRANIN = TestFunction(
    "branin",
    2,
    branin,
    optimum=0.397887357729739,
    minimizers=(np.array([[-math.pi, 12.275], [math.pi, 2.275], [9.42477796, 2.475]]) - _BRANIN_LOW)
    / (_BRANIN_HIGH - _BRANIN_LOW),
)
HARTMANN6 = TestFunction(
    "hartmann6",
    6,
    hartmann6,
    optimum=-3.322368011415515,
    minimizers=np.array([[0.20168952, 0.15001069, 0.47687398, 0.27533243, 0.31165162, 0.65730054]]),
)
FUNCTIONS: dict[str, TestFunction] = {f.name: f for f in (BRANIN, HARTMANN6)}


def get_function(name: str) -> TestFunction:
    """The test function called ``name`` (``"branin"`` or ``"hartmann6"``)."""
    from ..exceptions import UnknownComponentError, unknown_name_message

    if name not in FUNCTIONS:
        raise UnknownComponentError(unknown_name_message("test function", name, FUNCTIONS))
    return FUNCTIONS[name]


def make_theta_problem(
    function: "TestFunction | str",
    *,
    rho: float = 0.0,
    b: Sequence[float] | None = None,
    discrete: Sequence[bool] | None = None,
    history: Sequence[tuple[np.ndarray, Observation]] = (),
    start: np.ndarray | None = None,
    batch_size: int = 1,
) -> ThetaProblem:
    """A :class:`ThetaProblem` whose loss is ``function`` and whose penalty is
    ``(rho/2)·‖x_d − b‖²`` on the ``discrete`` coordinates (all of them when ``discrete`` is None;
    ``b`` has one value per discrete coordinate, default 0.5).

    The problem keeps every evaluated ``(x, observation)`` in ``problem.evaluated`` (a list
    attribute added for callers that need the trajectory).
    """
    fn = get_function(function) if isinstance(function, str) else function
    dim = fn.dim
    mask = np.ones(dim, dtype=bool) if discrete is None else np.asarray(discrete, dtype=bool)
    target = np.full(int(mask.sum()), 0.5) if b is None else np.asarray(b, dtype=float)
    if mask.shape != (dim,) or target.shape != (int(mask.sum()),):
        raise ValueError(
            f"discrete needs {dim} flags and b one value per discrete coordinate; got "
            f"{mask.shape[0]} flags and {target.size} values"
        )
    evaluated: list[tuple[np.ndarray, Observation]] = []

    def evaluate(suggestions):
        out = []
        for s in suggestions:
            x = np.clip(np.asarray(s.config, dtype=float), 0.0, 1.0)
            obs = Observation(loss=float(fn(x)), eval_id=len(evaluated))
            evaluated.append((x, obs))
            out.append(obs)
        return out

    # the coupling term as ADMM passes it: vectorised over rows, with its gradient
    penalty = QuadraticPenalty(float(rho), mask, target)

    def augment(x, obs):
        return obs.loss + penalty(x)

    problem = ThetaProblem(
        dim=dim,
        evaluate=evaluate,
        augment=augment,
        penalty=penalty,
        discrete=mask,
        names=tuple(f"x{i}" for i in range(dim)),
        history=list(history),
        start=None if start is None else np.asarray(start, dtype=float),
        batch_size=batch_size,
    )
    problem.evaluated = evaluated  # type: ignore[attr-defined]
    return problem
