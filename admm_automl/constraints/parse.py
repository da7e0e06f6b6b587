"""Turn user constraint specifications into constraint objects.

Accepted forms: ``"latency <= 2e-5"`` / ``"tpr >= 0.8"`` expressions, mappings
``{"name": "disparate_impact", "threshold": 0.1, "group_by": "age", "bins": [...]}``, a callable
``fn(pipeline, X_valid, y_valid, groups) -> float`` (bounded by ``<= 0``), or a constraint object.
"""

from __future__ import annotations

import copy
import re
from typing import Any, Iterable, Mapping

from ..exceptions import InvalidParameterError, UnknownComponentError, unknown_name_message
from .base import BaseConstraint, CallableConstraint
from .bounds import RATES, MetricBound, known_metric
from .registry import CONSTRAINTS

#: NAME, an operator, and (when given) a threshold that does not start with an operator character
_EXPRESSION = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<=|>=|<|>|==|=)\s*([^<>=\s]\S*)?\s*$")


def _create(name: str, params: dict[str, Any]) -> BaseConstraint:
    if name in CONSTRAINTS and name not in ("metric",):
        cls = CONSTRAINTS.get(name)
    elif name == "metric" or known_metric(name):
        cls = MetricBound
        if name != "metric":
            params = {"metric": name, **params}
    else:
        raise UnknownComponentError(
            unknown_name_message("constraint", name, CONSTRAINTS.names() + list(RATES))
            + " (or any scikit-learn scorer name as a metric bound)"
        )
    try:
        return cls(**params)
    except TypeError as err:
        raise InvalidParameterError(f"constraint {name!r}: {err}") from None


def parse_expression(text: str) -> BaseConstraint:
    match = _EXPRESSION.match(text)
    if not match:
        raise InvalidParameterError(
            f"malformed constraint {text!r}: expected 'NAME <= NUMBER' or 'NAME >= NUMBER'"
        )
    name, op, number = match.groups()
    if op not in ("<=", ">="):
        raise InvalidParameterError(
            f"malformed constraint {text!r}: use '<=' or '>=' (got {op!r})"
        )
    if number is None:
        raise InvalidParameterError(
            f"malformed constraint {text!r}: a number must follow {op!r} "
            f"(e.g. '{name} {op} 0.1')"
        )
    try:
        threshold = float(number)
    except ValueError:
        raise InvalidParameterError(
            f"malformed constraint {text!r}: {number!r} is not a number"
        ) from None
    return _create(name, {"threshold": threshold, "sense": op})


def make_constraints(specs: Iterable[Any] | None) -> list[BaseConstraint]:
    """Constraint objects for ``specs``, validated, with unique keys."""
    if specs is None:
        return []
    if isinstance(specs, (str, Mapping)) or callable(specs) or isinstance(specs, BaseConstraint):
        specs = [specs]
    out: list[BaseConstraint] = []
    for spec in specs:
        if isinstance(spec, str):
            constraint = parse_expression(spec)
        elif isinstance(spec, BaseConstraint):
            constraint = copy.deepcopy(spec)
        elif isinstance(spec, Mapping):
            if "name" not in spec:
                raise InvalidParameterError(f"constraint {dict(spec)!r} needs a 'name'")
            params = {k: v for k, v in spec.items() if k != "name"}
            if "threshold" not in params and spec["name"] != "callable":
                raise InvalidParameterError(f"constraint {spec['name']!r} needs a 'threshold'")
            constraint = _create(spec["name"], params)
        elif callable(spec):
            constraint = CallableConstraint(spec)
        else:
            raise InvalidParameterError(
                f"a constraint must be an expression such as 'latency <= 1e-4', a mapping with "
                f"'name' and 'threshold', a callable or a constraint object; got {spec!r}"
            )
        constraint.validate()
        out.append(constraint)
    keys = [c.key for c in out]
    duplicates = sorted({k for k in keys if keys.count(k) > 1})
    if duplicates:
        raise InvalidParameterError(f"two constraints measure the same quantity: {duplicates!r}")
    return out


def with_group_by(specs: Iterable[Any] | None, column: Any) -> list[Any]:
    """``specs`` with ``group_by=column`` given to each group-fairness constraint that has none
    (an expression becomes a mapping): the command line's ``--group-by COLUMN``, which makes
    ``--constraint "demographic_parity_difference <= 0.05"`` compare the groups of a column of
    the data. Other constraints are kept as they are.

    Raises
    ------
    InvalidParameterError
        Where no constraint takes the column.
    """
    if specs is None:
        specs = []
    elif isinstance(specs, (str, Mapping)) or callable(specs) or isinstance(specs, BaseConstraint):
        specs = [specs]
    out, used = [], False
    for spec, constraint in zip(specs, make_constraints(specs)):
        if getattr(constraint, "group_by", "") is not None:  # not a group constraint, or set
            out.append(spec)
            continue
        used = True
        if isinstance(spec, str):
            out.append({"name": constraint.name, "threshold": constraint.threshold,
                        "sense": constraint.sense, "group_by": column})
        elif isinstance(spec, Mapping):
            out.append({**spec, "group_by": column})
        else:
            out.append(constraint.set_params(group_by=column))
    if not used:
        raise InvalidParameterError(
            f"--group-by {column}: no group-fairness constraint without a group_by to compare "
            "its groups; give one, e.g. --constraint 'demographic_parity_difference <= 0.05'")
    return out
