"""Black-box constraints (Liu et al. 2020, Section 4.2): latency, disparate impact and fairlearn's
group-fairness metrics, metric bounds, model size and user callables, reachable by name through
:data:`CONSTRAINTS`; fairlearn's mitigations as choices of the space (:mod:`.mitigation`)."""

from . import bounds, fairness, latency  # noqa: F401  (registers the built-ins)
from .base import BaseConstraint, CallableConstraint
from .bounds import MetricBound, ModelSize
from .fairness import (DemographicParityDifference, DemographicParityRatio, DisparateImpact,
                       EqualizedOddsDifference, EqualizedOddsRatio, EqualOpportunityDifference,
                       EqualOpportunityRatio, make_groups)
from .latency import PredictionLatency
from .mitigation import (START_ROUNDS, ExponentiatedGradientClassifier,
                         ThresholdOptimizerClassifier, is_mitigated, mitigated_starts,
                         mitigation_module)
from .parse import make_constraints, parse_expression, with_group_by
from .registry import CONSTRAINTS


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
