"""The constraint registry: built-ins by name, third-party ones via the entry-point group
``admm_automl.constraints``."""

from __future__ import annotations

from ..registry import Registry
from .base import BaseConstraint, CallableConstraint

CONSTRAINTS = Registry("constraint", BaseConstraint, "admm_automl.constraints")
CONSTRAINTS.register("callable")(CallableConstraint)
