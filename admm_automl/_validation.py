"""Declarative checks of the estimator's parameters, with scikit-learn style messages.

scikit-learn's own ``_param_validation`` is private, so the package keeps this small equivalent: a
parameter is valid when one of its rules accepts it; otherwise ``InvalidParameterError`` says which
parameter, what it must be and what it got.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .exceptions import InvalidParameterError


@dataclass(frozen=True)
class Rule:
    """A predicate and how a message describes the values it accepts."""

    accepts: Callable[[Any], bool]
    text: str


def _integer(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _real(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and np.isfinite(v)


def int_at_least(low: int) -> Rule:
    text = "a positive integer" if low == 1 else f"an integer >= {low}"
    return Rule(lambda v: _integer(v) and v >= low, text)


def options(*values: Any) -> Rule:
    return Rule(lambda v: isinstance(v, (str, bool)) and v in values,
                "one of " + ", ".join(repr(v) for v in values))


#: scikit-learn's ``n_jobs``: a positive count, or -1 for every core, -2 for all but one, ...
N_JOBS = Rule(lambda v: _integer(v) and v != 0, "a non-zero integer (-1: every core)")
POSITIVE_NUMBER = Rule(lambda v: _real(v) and v > 0, "a positive number")
NON_NEGATIVE_NUMBER = Rule(lambda v: _real(v) and v >= 0, "a number >= 0")
FRACTION = Rule(lambda v: _real(v) and 0 < v < 1, "a number in (0, 1)")
NONE = Rule(lambda v: v is None, "None")
BOOL = Rule(lambda v: isinstance(v, (bool, np.bool_)), "a bool")
MAPPING = Rule(lambda v: isinstance(v, Mapping), "a mapping {'name': ..., 'params': {...}}")
TEXT = Rule(lambda v: isinstance(v, str) and bool(v.strip()), "a non-empty string")
#: an empty string is refused: it would name the working directory without saying so
PATH = Rule(lambda v: isinstance(v, Path) or (isinstance(v, str) and bool(v.strip())),
            "a non-empty path")
SEED = Rule(lambda v: v is None or _integer(v) or isinstance(v, np.random.RandomState),
            "None, an int or a numpy RandomState")
ANY = Rule(lambda v: True, "anything")
CALLABLES = Rule(lambda v: isinstance(v, (list, tuple)) and all(callable(f) for f in v),
                 "a list of callables")


def validate_params(owner: str, params: Mapping[str, Any],
                    rules: Mapping[str, Sequence[Rule]]) -> None:
    """Raise :class:`InvalidParameterError` for the first parameter no rule accepts."""
    for name, accepted in rules.items():
        value = params[name]
        if not any(rule.accepts(value) for rule in accepted):
            wanted = " or ".join(rule.text for rule in accepted)
            raise InvalidParameterError(
                f"The {name!r} parameter of {owner} must be {wanted}. Got {value!r} instead."
            )
