"""How long one trial may take, and when a full-data trial is probed on a subsample first.

The objective applies a :class:`TrialPolicy`; its values are the run's time policy
(:mod:`admm_automl.run.deadline`), so the engine holds the mechanism and the run the numbers.

* **timeout** — a fixed ``trial_timeout``; or, with ``timeout_fraction`` and no fixed timeout, a
  trial may take at most that fraction of the time left, never less than ``min_timeout``, once a
  pipeline has succeeded on all rows: until then a trial may use all the time left, so that a run
  on slow data still returns a model. A trial never runs past the end of the time budget.
* **probe** — on ``probe_min_rows`` training rows or more, a full-data request is first run on
  :data:`PROBE_FIDELITY` of the training rows; when that probe fails, or its duration with the fit
  time scaled linearly to all rows (:meth:`TrialPolicy.full_duration`) exceeds the timeout, the
  full fit is not started and the probe's observation (fidelity < 1, so never the incumbent)
  answers the request.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..records import Observation

#: the fraction of the training rows a probe fits on (FLAML AutoML's first sample is 10 000 rows;
#: a tenth keeps the probe's cost at about a tenth of the full fit for learners linear in the rows)
PROBE_FIDELITY = 0.1


@dataclass(frozen=True)
class TrialPolicy:
    """The timeout and probe rules of a run's trials (module docstring); the defaults apply none
    of them but the end of the time budget."""

    trial_timeout: float | None = None
    timeout_fraction: float | None = None
    min_timeout: float = 0.0
    probe_min_rows: int | None = None

    def timeout(self, time_left: float | None, succeeded: bool) -> tuple[float | None, bool]:
        """The timeout of the next trials given the seconds left of the budget (None: no time
        budget) and whether a pipeline has succeeded on all rows yet; and whether that timeout
        is the end of the time budget."""
        timeout = self.trial_timeout
        if (timeout is None and self.timeout_fraction is not None and time_left is not None
                and succeeded):
            timeout = max(self.timeout_fraction * time_left, self.min_timeout, 1e-3)
        if time_left is not None and (timeout is None or time_left < timeout):
            return max(time_left, 1e-3), True
        return timeout, False

    def probes(self, n_train: int, timeout: float | None) -> bool:
        """Whether full-data requests on ``n_train`` training rows are probed first."""
        return (self.probe_min_rows is not None and n_train >= self.probe_min_rows
                and timeout is not None)

    @staticmethod
    def full_duration(probe: Observation) -> float:
        """The duration a probe predicts for the full-data trial: its fit time scaled linearly to
        all training rows (exact for learners linear in the rows, optimistic for superlinear
        ones), the rest (prediction, scoring, overhead) as measured."""
        return probe.duration + probe.fit_time * (1.0 / PROBE_FIDELITY - 1.0)
