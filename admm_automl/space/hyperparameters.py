"""Hyperparameter domains and their map to the unit interval.

Every tunable hyperparameter is one coordinate of θ in [0, 1]. Floats map linearly or
logarithmically; integers and categoricals are *discrete*: their coordinate may be relaxed to any
value in [0, 1] (the relaxed θ̃^d of Liu et al., AAAI 2020) and :meth:`project` returns the
nearest admissible value (the closed-form δ-projection). Categoricals are integers 0..K-1 placed
at k / (K - 1), as in that paper.

A tunable domain may carry a *low-cost* value (``low_cost``): the value at which fitting the algorithm is
cheapest, where a cost-frugal search starts (CFO and BlendSearch, Wu et al., AAAI 2021; Wang et al.,
ICLR 2021: for example the fewest trees or the shallowest depth). ``None`` means that the hyperparameter
declares none, so ``None`` itself cannot be a low-cost value.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..exceptions import InvalidParameterError


@dataclass(frozen=True)
class Hyperparameter:
    """Base of the domains: a name, a default and an optional condition on a categorical sibling."""

    name: str
    condition: dict[str, tuple[Any, ...]] = field(default_factory=dict, kw_only=True)
    #: the value of the cheapest fit (``None``: not declared); validated against the domain
    low_cost: Any = field(default=None, kw_only=True)

    #: whether the coordinate is integer-valued (relaxed in θ-min, projected in δ-min)
    discrete = False
    #: whether the hyperparameter is a θ coordinate at all (``Fixed`` is not)
    tunable = True

    def to_unit(self, value: Any) -> float:
        raise NotImplementedError

    def from_unit(self, u: float) -> Any:
        raise NotImplementedError

    def project(self, u: float) -> float:
        """Nearest admissible unit coordinate (identity for continuous domains)."""
        return min(max(float(u), 0.0), 1.0)

    def grid(self) -> np.ndarray | None:
        """Admissible unit coordinates of a discrete domain, ``None`` for a continuous one."""
        return None

    @property
    def default_unit(self) -> float:
        return self.to_unit(self.default)  # type: ignore[attr-defined]

    @property
    def low_cost_unit(self) -> float | None:
        """Unit coordinate of :attr:`low_cost`, ``None`` when the domain declares none."""
        return None if self.low_cost is None else self.to_unit(self.low_cost)


def _is_int(value: Any) -> bool:
    """A whole number (a Python or NumPy integer), not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _check_number(name: str, key: str, value: Any, low: float, high: float) -> None:
    """``value`` must be a real number (not a bool) in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise InvalidParameterError(f"hyperparameter {name!r}: {key}={value!r} must be a finite number")
    if not low <= value <= high:
        raise InvalidParameterError(
            f"hyperparameter {name!r}: {key} {value!r} is outside [{low!r}, {high!r}]"
        )


def _check_range(name: str, low: float, high: float, log: bool) -> None:
    if not (math.isfinite(low) and math.isfinite(high)):
        raise InvalidParameterError(
            f"hyperparameter {name!r}: bounds must be finite, got [{low!r}, {high!r}]"
        )
    if not low < high:
        raise InvalidParameterError(f"hyperparameter {name!r}: low={low!r} must be < high={high!r}")
    if log and low <= 0:
        raise InvalidParameterError(f"hyperparameter {name!r}: a log scale needs low > 0, got {low!r}")


@dataclass(frozen=True)
class Float(Hyperparameter):
    """A real value in [low, high], on a linear or logarithmic scale."""

    low: float = 0.0
    high: float = 1.0
    default: float = 0.0
    log: bool = False

    def __post_init__(self) -> None:
        _check_range(self.name, self.low, self.high, self.log)
        if not self.low <= self.default <= self.high:
            raise InvalidParameterError(
                f"hyperparameter {self.name!r}: default {self.default!r} is outside "
                f"[{self.low!r}, {self.high!r}]"
            )
        if self.low_cost is not None:
            _check_number(self.name, "low_cost", self.low_cost, self.low, self.high)
        object.__setattr__(self, "_default_u", self.to_unit(self.default))
        object.__setattr__(self, "_low_cost_u", self.low_cost_unit)

    def to_unit(self, value: Any) -> float:
        v = float(value)
        if self.log:
            u = (math.log(v) - math.log(self.low)) / (math.log(self.high) - math.log(self.low))
        else:
            u = (v - self.low) / (self.high - self.low)
        return min(max(u, 0.0), 1.0)

    def from_unit(self, u: float) -> float:
        u = min(max(float(u), 0.0), 1.0)
        if u == self._default_u:  # exact round trip of the default despite rounding in exp/log
            return float(self.default)
        if u == self._low_cost_u:  # ... and of the low-cost value, where a cost-frugal search starts
            return float(self.low_cost)
        if u == 0.0:
            return float(self.low)
        if u == 1.0:
            return float(self.high)
        if self.log:
            lo, hi = math.log(self.low), math.log(self.high)
            v = math.exp(lo + u * (hi - lo))
        else:
            v = self.low + u * (self.high - self.low)
        return min(max(v, float(self.low)), float(self.high))


@dataclass(frozen=True)
class Int(Hyperparameter):
    """An integer in [low, high], on a linear or logarithmic scale; relaxed to [0, 1] in θ."""

    low: int = 0
    high: int = 1
    default: int = 0
    log: bool = False
    discrete = True

    def __post_init__(self) -> None:
        keys = ("low", "high", "default") + (("low_cost",) if self.low_cost is not None else ())
        for key in keys:
            value = getattr(self, key)
            if (
                isinstance(value, bool)
                or not isinstance(value, numbers.Real)
                or not float(value).is_integer()
            ):
                raise InvalidParameterError(
                    f"hyperparameter {self.name!r}: {key}={value!r} must be an integer"
                )
        _check_range(self.name, self.low, self.high, self.log)
        if not self.low <= self.default <= self.high:
            raise InvalidParameterError(
                f"hyperparameter {self.name!r}: default {self.default!r} is outside "
                f"[{self.low!r}, {self.high!r}]"
            )
        if self.low_cost is not None:
            _check_number(self.name, "low_cost", self.low_cost, self.low, self.high)

    def _scale(self, v: float) -> float:
        return math.log(v) if self.log else float(v)

    def to_unit(self, value: Any) -> float:
        lo, hi = self._scale(self.low), self._scale(self.high)
        u = (self._scale(min(max(value, self.low), self.high)) - lo) / (hi - lo)
        return min(max(u, 0.0), 1.0)

    def from_unit(self, u: float) -> int:
        """The integer whose unit coordinate is nearest to ``u`` (so decoding projects)."""
        u = min(max(float(u), 0.0), 1.0)
        lo, hi = self._scale(self.low), self._scale(self.high)
        x = lo + u * (hi - lo)
        v = math.exp(x) if self.log else x
        below = min(max(math.floor(v), self.low), self.high)
        above = min(max(math.ceil(v), self.low), self.high)
        if abs(self.to_unit(above) - u) < abs(self.to_unit(below) - u):
            return int(above)
        return int(below)

    def project(self, u: float) -> float:
        return self.to_unit(self.from_unit(u))

    def grid(self) -> np.ndarray:
        return np.array([self.to_unit(k) for k in range(self.low, self.high + 1)])


def _freeze(value: Any) -> Any:
    """YAML lists become tuples so that choices are hashable and scikit-learn-friendly."""
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


@dataclass(frozen=True)
class Categorical(Hyperparameter):
    """One of ``choices``; encoded as the integer index k at k / (K - 1)."""

    choices: tuple[Any, ...] = ()
    default: Any = None
    discrete = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "choices", tuple(_freeze(c) for c in self.choices))
        object.__setattr__(self, "default", _freeze(self.default))
        object.__setattr__(self, "low_cost", _freeze(self.low_cost))
        if len(set(map(repr, self.choices))) != len(self.choices):
            raise InvalidParameterError(
                f"hyperparameter {self.name!r}: duplicate choices in {list(self.choices)!r}"
            )
        if len(self.choices) < 2:
            raise InvalidParameterError(
                f"hyperparameter {self.name!r}: a categorical needs at least 2 choices "
                f"(use type 'fixed' for one), got {list(self.choices)!r}"
            )
        if self.default not in self.choices:
            raise InvalidParameterError(
                f"hyperparameter {self.name!r}: default {self.default!r} is not one of "
                f"{list(self.choices)!r}"
            )
        if self.low_cost is not None and self.low_cost not in self.choices:
            raise InvalidParameterError(
                f"hyperparameter {self.name!r}: low_cost {self.low_cost!r} is not one of "
                f"{list(self.choices)!r}"
            )

    def index(self, value: Any) -> int:
        for k, c in enumerate(self.choices):
            if c == _freeze(value) and type(c) is type(_freeze(value)):
                return k
        for k, c in enumerate(self.choices):
            if c == _freeze(value):
                return k
        raise InvalidParameterError(
            f"hyperparameter {self.name!r}: {value!r} is not one of {list(self.choices)!r}"
        )

    def to_unit(self, value: Any) -> float:
        return self.index(value) / (len(self.choices) - 1)

    def from_unit(self, u: float) -> Any:
        u = min(max(float(u), 0.0), 1.0)
        return self.choices[int(round(u * (len(self.choices) - 1)))]

    def project(self, u: float) -> float:
        return self.to_unit(self.from_unit(u))

    def grid(self) -> np.ndarray:
        return np.linspace(0.0, 1.0, len(self.choices))


@dataclass(frozen=True)
class Fixed(Hyperparameter):
    """A constant constructor argument: not a θ coordinate."""

    value: Any = None
    tunable = False

    def __post_init__(self) -> None:
        if self.low_cost is not None:
            raise InvalidParameterError(
                f"hyperparameter {self.name!r}: a fixed value is not a coordinate and has no low_cost"
            )

    @property
    def default(self) -> Any:
        return self.value
