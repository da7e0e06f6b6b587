"""Short texts of fitted pipelines and hyperparameters, for people to read.

An estimator's ``repr`` is scikit-learn's: every parameter a learner takes (XGBoost's twenty
``None`` values on twenty lines), and objects inside it by their default Python ``repr``, with a
memory address (``<make_column_selector object at 0x7f…>``) that says nothing and changes every
run. :func:`describe` writes a step as its class with the parameters that differ from the class's
defaults, nested steps the same way, numbers to four significant digits and any other object by its
name: what one would write to build it again. :func:`hyperparameters_text` writes the searched
values of an evaluation (``history_``'s ``param:`` columns) as ``name=value`` pairs.
"""

from __future__ import annotations

import inspect
import math
import numbers
from typing import Any, Mapping

__all__ = ["describe", "hyperparameters_text"]

#: longest list or mapping written out item by item; a longer one is said by its length
_SHORT = 6


def describe(step: Any) -> str:
    """``"LGBMClassifier(learning_rate=0.0383, n_estimators=9)"``: ``step`` (an estimator, a
    pipeline, a column transformer or a parameter value) without the parameters it leaves at
    their defaults and without object reprs; a step given by name (``"passthrough"``) as its
    name."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline

    if isinstance(step, str):
        return step
    if isinstance(step, Pipeline):
        return " → ".join(describe(s) for _, s in step.steps)
    if isinstance(step, ColumnTransformer):
        branches = "; ".join(f"{name}: {describe(est)} on {_columns(cols)}"
                             for name, est, cols in step.transformers)
        rest = _changed(step, skip=("transformers",))
        return f"{type(step).__name__}({branches}{', ' if rest else ''}{rest})"
    if hasattr(step, "get_params") and not isinstance(step, type):
        return f"{type(step).__name__}({_changed(step)})"
    return _value(step)


def hyperparameters_text(params: Mapping[str, Any]) -> str:
    """``"n_quantiles=256, learning_rate=0.0383"``: searched values by their names within their
    module (``scaler__n_quantiles`` → ``n_quantiles``); whole numbers that a table stored as
    floats (``256.0``) are written as whole numbers."""
    return ", ".join(f"{name.split('__', 1)[-1]}={_value(value)}" for name, value in params.items())


def _changed(estimator: Any, skip: tuple[str, ...] = ()) -> str:
    """``"a=1, b='x'"``: the parameters of ``estimator`` that differ from its class's defaults."""
    defaults = _defaults(type(estimator))
    out = []
    for name, value in sorted(estimator.get_params(deep=False).items()):
        if name in skip or _same(value, defaults.get(name, inspect.Parameter.empty)):
            continue
        out.append(f"{name}={_value(value)}")
    return ", ".join(out)


def _defaults(cls: type) -> dict[str, Any]:
    """The defaults of the constructor's parameters, those of a subclass over its bases' (XGBoost's
    classifier takes most of its parameters as ``**kwargs`` for its base class)."""
    out: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        try:
            params = inspect.signature(init).parameters.values()
        except (TypeError, ValueError):
            continue
        for p in params:
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                out[p.name] = p.default
    return out


def _same(value: Any, default: Any) -> bool:
    if default is inspect.Parameter.empty:
        return False  # a required parameter is always said
    if value is default:
        return True
    if isinstance(value, float) and isinstance(default, float) and math.isnan(value):
        return math.isnan(default)
    if hasattr(value, "get_params") or hasattr(default, "get_params"):
        return False  # a nested estimator differs from a default of None or another object
    try:
        return type(value) is type(default) and bool(value == default)
    except (TypeError, ValueError):  # arrays compare element-wise
        return False


def _columns(cols: Any) -> str:
    """A column transformer's column selection: names when few, else their count."""
    if isinstance(cols, (list, tuple)) or hasattr(cols, "tolist"):
        cols = list(cols.tolist() if hasattr(cols, "tolist") else cols)
        if len(cols) <= 3 and all(isinstance(c, str) for c in cols):
            return ", ".join(cols)
        return f"{len(cols)} column{'s' if len(cols) != 1 else ''}"
    return describe(cols)


def _value(value: Any) -> str:
    """A parameter value: numbers short, text quoted, anything else by its name, never a repr
    with a memory address."""
    if getattr(value, "shape", None) == () and hasattr(value, "item"):  # a NumPy scalar
        value = value.item()
    if value is None or isinstance(value, (bool, str)):
        return repr(value)
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        value = float(value)
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.4g}"
    if hasattr(value, "get_params"):
        return describe(value)
    if isinstance(value, (list, tuple)):
        if len(value) > _SHORT:
            return f"[{len(value)} items]"
        inner = ", ".join(_value(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
    if isinstance(value, Mapping):
        if len(value) > _SHORT:
            return f"{{{len(value)} items}}"
        return "{" + ", ".join(f"{_value(k)}: {_value(v)}" for k, v in value.items()) + "}"
    if hasattr(value, "shape"):  # an array
        return f"array of shape {tuple(value.shape)}"
    if inspect.isroutine(value) or inspect.isclass(value):
        return getattr(value, "__qualname__", getattr(value, "__name__", type(value).__name__))
    # an object such as make_column_selector: its name and its settings that are set
    fields = {k: v for k, v in vars(value).items()
              if not k.startswith("_") and v is not None} if hasattr(value, "__dict__") else {}
    simple = all(v is None or isinstance(v, (bool, str, numbers.Number)) for v in fields.values())
    if fields and simple and len(fields) <= _SHORT:
        return f"{type(value).__name__}({', '.join(f'{k}={_value(v)}' for k, v in fields.items())})"
    return type(value).__name__
