"""scikit-learn style parameters for the package's components (solvers, constraints)."""

from __future__ import annotations

import inspect
from typing import Any


class ParamsMixin:
    """scikit-learn style ``get_params``/``set_params`` from the ``__init__`` signature, so that
    :func:`sklearn.base.clone` and nested ``set_params(theta_solver__x=...)`` work."""

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return sorted(
            p.name for p in sig.parameters.values() if p.name != "self" and p.kind != p.VAR_KEYWORD
        )

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> "ParamsMixin":
        valid = self._param_names()
        for key, value in params.items():
            if key not in valid:
                raise ValueError(
                    f"Invalid parameter {key!r} for {type(self).__name__}. Valid: {valid!r}"
                )
            setattr(self, key, value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
