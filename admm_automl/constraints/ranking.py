"""How far an observation is from meeting the black-box constraints, and how observations are
ranked: what the methods, the result tables, the reports and the benchmarks share (numpy only).

Each constraint ``value ≤ t`` (or ``≥ t``) is made unit-free, ``h = (value − t) / |t|``
(``(t − value) / |t|`` for ``≥``; ``|t| = 1`` when t = 0), so that a latency in seconds and an
AUROC gap weigh alike, and written in the form ``g ≤ ε`` of Liu et al. (AAAI 2020, Algorithm 2)
with ``g = max(h + 1, 0)`` and ``ε = 1``. (The paper is silent on scaling; without it a latency in
seconds has no weight against the loss.) A constraint whose value could not be measured (a failed
pipeline, a NaN) counts as violated by 100 % (h = 1).

The modes say how a search treats the constraints: ``"admm"`` (the augmented-Lagrangian terms of
:mod:`admm_automl.methods.lagrangian`), ``"penalty"`` (a fixed weight times the total violation
Σ max(h, 0), for comparisons and for the methods without the split) and ``"filter"`` (constraints
ignored during the search, the paper's UCST baseline). In every mode the best observation is the
best *feasible* one, or else the least violating one (:meth:`Constraints.rank`).
"""

from __future__ import annotations

import math
from typing import Any, Iterator, Sequence

import numpy as np

from ..exceptions import InvalidParameterError
from ..records import POINT, Observation

#: h of a constraint that could not be measured (failed pipeline, non-finite value)
MISSING_VIOLATION = 1.0
#: a pipeline whose evidence (:meth:`Constraints.evidence_order`) says it violates by more than
#: this (h, half the threshold) is tried after those that may meet the constraints
EVIDENCE_MARGIN = 0.5
CONSTRAINT_MODES = ("admm", "penalty", "filter")


def _as_float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


class Constraints:
    """Bounds on the raw constraint values of observations, and how a search treats them.

    Parameters
    ----------
    constraints : sequence
        Objects with ``key`` (the name of the value in ``Observation.constraints``), ``threshold``
        and ``sense`` (``"<="`` or ``">="``), such as :class:`admm_automl.constraints.BaseConstraint`.
    mode : {"admm", "penalty", "filter"}
        How a search treats them (see the module docstring;
        :func:`admm_automl.methods.lagrangian.constraint_value` scores them in each mode).
    weight : float
        The weight of ``"penalty"`` mode.
    """

    def __init__(self, constraints: Sequence[Any] = (), mode: str = "admm", weight: float = 1.0):
        if mode not in CONSTRAINT_MODES:
            raise InvalidParameterError(
                f"constraint_mode must be one of {CONSTRAINT_MODES!r}, got {mode!r}"
            )
        self.items = tuple(constraints)
        self.mode = mode
        self.weight = float(weight)
        self.keys = tuple(str(c.key) for c in self.items)
        self._threshold = np.array([float(c.threshold) for c in self.items])
        self._upper = np.array([c.sense == "<=" for c in self.items], dtype=bool)
        self._scale = np.where(self._threshold != 0.0, np.abs(self._threshold), 1.0)

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.items)

    def __str__(self) -> str:
        return ", ".join(f"{c.key} {c.sense} {float(c.threshold):g}" for c in self.items)

    # -------------------------------------------------------------------- measures
    def h(self, obs: Observation, refitted: dict[str, float] | None = None) -> np.ndarray:
        """Unit-free violation of every constraint (≤ 0 when met; 1 when not measured); a value
        in ``refitted`` (measured on the model refitted on all rows) replaces the
        observation's."""
        found = {**obs.constraints, **refitted} if refitted else obs.constraints
        values = np.array([_as_float(found.get(k)) for k in self.keys], dtype=float)
        finite = np.isfinite(values)
        values = np.where(finite, values, 0.0)
        diff = np.where(self._upper, values - self._threshold, self._threshold - values)
        return np.where(finite, diff / self._scale, MISSING_VIOLATION)

    def g(self, obs: Observation) -> np.ndarray:
        """The paper's g of every constraint (ε = 1)."""
        return np.maximum(self.h(obs) + 1.0, 0.0)

    def violation(self, obs: Observation, refitted: dict[str, float] | None = None) -> float:
        """Total violation Σ max(h, 0); 0 means every constraint is met (``refitted``: as in
        :meth:`h`)."""
        if not self.keys:  # nothing to violate (every run without constraints ranks this way)
            return 0.0
        return float(sum(max(float(v), 0.0) for v in self.h(obs, refitted)))

    def rank(self, obs: Observation, refitted: dict[str, float] | None = None) -> tuple:
        """Sort key: feasible observations by loss, then the least violating successful ones,
        then failed ones (``refitted``: as in :meth:`h`)."""
        if not obs.ok:
            return (2, obs.loss)
        violation = self.violation(obs, refitted)
        return (0, obs.loss) if violation == 0.0 else (1, violation, obs.loss)

    def feasible(self, obs: Observation, refitted: dict[str, float] | None = None) -> bool:
        """A successful observation that meets every constraint (``refitted``: as in
        :meth:`h`)."""
        return self.rank(obs, refitted)[0] == 0

    def describe(self, obs: Observation,
                 refitted: dict[str, float] | None = None) -> list[str]:
        """One line per constraint for a person: its bound, the observation's value, and whether
        it is met or by how much it is not (relative to the threshold), e.g.
        ``"latency <= 2e-05: 3.1e-05, NOT met (55 % over)"``; a value that is a confidence bound
        is shown with the point value on the validation rows,
        ``"demographic_parity_difference <= 0.1: 0.083 (90 % bound; 0.052 on the validation
        rows), met"``; a value in ``refitted`` (measured on the model refitted on all rows)
        replaces the observation's, which is shown beside it,
        ``"model_size <= 21000: 2.47e+04 refitted (2.023e+04 in the search), NOT met (18 % over)"``."""
        refitted = refitted or {}
        values = {**obs.constraints, **refitted}
        lines = []
        for c, key, h in zip(self.items, self.keys, self.h(obs, refitted)):
            value = _as_float(values.get(key))
            point = _as_float(values.get(key + POINT))
            head = f"{key} {c.sense} {float(c.threshold):g}: "
            if not math.isfinite(value):
                lines.append(head + "not measured (the evaluation failed)")
                continue
            shown = f"{value:.4g}"
            if key in refitted:
                shown += (f" refitted ({_as_float(obs.constraints.get(key)):.4g} in the "
                          "search)")
            if math.isfinite(point):
                shown += (f" ({float(getattr(c, 'confidence', 0) or 0):.0%} bound; {point:.4g} "
                          "on the validation rows)")
            if h <= 0:
                lines.append(head + f"{shown}, met")
            else:
                side = "over" if c.sense == "<=" else "under"
                lines.append(head + f"{shown}, NOT met ({100 * h:.3g} % {side})")
        return lines

    def evidence_order(self, pipelines: Sequence[tuple[int, ...]],
                       seen: Sequence[tuple[tuple[int, ...], Observation]]
                       ) -> list[tuple[int, ...]]:
        """``pipelines`` (one choice per module) reordered by what the observations ``seen``
        (``(z, observation)``) say of their constraints: those predicted to violate by more
        than :data:`EVIDENCE_MARGIN` go last, each group in its given order.

        A pipeline's predicted violation is the largest, over its modules, of the least
        violation any successful observation with the same choice at that module had (0 for a
        choice not seen): one pipeline with that choice that met the constraints clears it.
        So after a few plain learners are shown far over a fairness limit while a mitigated
        one met it, every unmitigated pipeline waits behind the mitigated ones (the mitigation
        module's evidence); a learner shown too slow for a latency limit waits behind the
        others (the estimator module's). In every mode but ``"filter"``; without constraints,
        ``pipelines`` as given.
        """
        pipelines = [tuple(int(j) for j in z) for z in pipelines]
        if not self.items or self.mode == "filter":
            return pipelines
        least: dict[tuple[int, int], float] = {}
        for z, obs in seen:
            if obs.ok:
                v = self.violation(obs)
                for key in enumerate(z):
                    least[key] = min(least.get(key, math.inf), v)

        def over(z: tuple[int, ...]) -> bool:
            return max((least.get(key, 0.0) for key in enumerate(z)), default=0.0) > EVIDENCE_MARGIN

        return sorted(pipelines, key=over)
