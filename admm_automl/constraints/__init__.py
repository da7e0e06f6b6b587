"""Black-box constraints (Liu et al. 2020, Section 4.2): latency, disparate impact and fairlearn's
group-fairness metrics, metric bounds, model size and user callables, reachable by name through
:data:`CONSTRAINTS`; fairlearn's mitigations as choices of the space (:mod:`.mitigation`); how far
an observation is from meeting them and how observations rank (:mod:`.ranking`).

The mitigations' names are imported lazily, so that the numpy-only methods can rank observations
(:mod:`.ranking`) without pulling in scikit-learn.
"""

import importlib

from . import bounds, fairness, latency  # noqa: F401  (registers the built-ins)
from .base import BaseConstraint, CallableConstraint
from .bounds import MetricBound, ModelSize
from .fairness import (DemographicParityDifference, DemographicParityRatio, DisparateImpact,
                       EqualizedOddsDifference, EqualizedOddsRatio, EqualOpportunityDifference,
                       EqualOpportunityRatio, make_groups)
from .latency import PredictionLatency
from .parse import make_constraints, parse_expression, with_group_by
from .registry import CONSTRAINTS

#: the names of :mod:`.mitigation` (which imports scikit-learn), imported on first use
_LAZY = ("START_ROUNDS", "ExponentiatedGradientClassifier", "ThresholdOptimizerClassifier",
         "is_mitigated", "mitigated_starts", "mitigation_module")


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(".mitigation", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def list_constraints() -> list[str]:
    """Names of the registered constraints (plug-ins included)."""
    return CONSTRAINTS.names()


__all__ = [
    "CONSTRAINTS",
    "BaseConstraint",
    "CallableConstraint",
    "DemographicParityDifference",
    "DemographicParityRatio",
    "DisparateImpact",
    "EqualOpportunityDifference",
    "EqualOpportunityRatio",
    "EqualizedOddsDifference",
    "EqualizedOddsRatio",
    "ExponentiatedGradientClassifier",
    "MetricBound",
    "ModelSize",
    "PredictionLatency",
    "START_ROUNDS",
    "ThresholdOptimizerClassifier",
    "is_mitigated",
    "list_constraints",
    "make_constraints",
    "make_groups",
    "mitigated_starts",
    "mitigation_module",
    "parse_expression",
    "with_group_by",
]
