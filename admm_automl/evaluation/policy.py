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
* **projection** — a trial that runs where its limit is known (:func:`trial_limit`, set by the
  executor that runs it) stops between its folds once the folds so far, at their mean time,
  project its end past that limit (:class:`FoldClock`): it would be stopped there anyway, and the
  seconds it would spend until then go to the next trials. AutoGluon's bagged models stop the
  same way after each fold. Under a 60 s budget a third of a run used to go to trials that
  reached their limit, each of them run to it.
* **shrink** — with the run's ``shrink_to_fit`` on, a trial whose learner's training length is
  tunable and does not stop early is sized to that limit before it starts, or not started
  (:mod:`.shrink`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
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


#: the running trial's limit in this process: its end (``time.perf_counter``) and whether that
#: end is the time budget's rather than the trial's own timeout; None: no limit known
_limit: tuple[float, bool] | None = None


@contextmanager
def trial_limit(seconds: float | None, budget_end: bool = False) -> Iterator[None]:
    """Run the block as a trial that may take ``seconds`` (None: no limit), ``budget_end`` when
    that limit is the end of the time budget; the executors that run trials set it."""
    global _limit
    saved = _limit
    _limit = None if seconds is None else (time.perf_counter() + seconds, budget_end)
    try:
        yield
    finally:
        _limit = saved


def current_limit() -> tuple[float, bool] | None:
    """The limit of the trial running in this process (:func:`trial_limit`): its end
    (``time.perf_counter``) and whether that end is the time budget's; None when none is known."""
    return _limit


class LimitProjected(Exception):
    """A trial's folds so far project its end past its limit (:class:`FoldClock`), or its
    shortest training is predicted past it (:func:`.shrink.shrink_to_limit`)."""

    def __init__(self, message: str, budget_end: bool) -> None:
        super().__init__(message)
        self.budget_end = budget_end


class FoldClock:
    """The time of a trial's folds, checked against the limit the trial runs under.

    :meth:`check` after each of ``total`` folds raises :class:`LimitProjected` when the time so
    far, scaled to all folds at the folds' mean, ends past the limit. The mean of the folds is
    the projection AutoGluon's bagged models make; folds have the same rows, so their fits cost
    about the same."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.limit = _limit

    def check(self, done: int, total: int) -> None:
        if self.limit is None or done >= total:
            return
        end, budget_end = self.limit
        elapsed = time.perf_counter() - self.start
        projected = elapsed * total / done
        if self.start + projected > end:
            why = "the time budget's end" if budget_end else "its time limit"
            raise LimitProjected(
                f"stopped after {done} of {total} folds ({elapsed:.3g} s): its folds project "
                f"{projected:.3g} s, past {why} ({end - self.start:.3g} s)", budget_end)
