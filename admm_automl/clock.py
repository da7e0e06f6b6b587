"""The one clock of a run: :class:`Deadline`.

A run is timed once. ``fit`` starts a :class:`Deadline` before anything else; the set-up, the
objective's record times, the search's :class:`~admm_automl.methods.driver.Budget` and the refit
all read that one object, instead of each keeping a start time of its own that could drift apart
(set-up and worker start-up count against the budget because they are on the same clock). The
time policy it drives (timeouts, reserve, the end-of-run checks) is :mod:`admm_automl.run.deadline`.

It sits in the vocabulary layer, with the records, so that every layer that reads the time can
take it: the driver, the objective and the refit below the run set-up that starts it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

__all__ = ["Deadline"]


@dataclass(frozen=True)
class Deadline:
    """``budget`` seconds (None: no time budget) on ``clock`` from ``start``, a ``clock()`` value
    (default: now). ``clock`` is :func:`time.monotonic` unless a test simulates time."""

    budget: float | None
    start: float | None = None
    clock: Callable[[], float] = field(default=time.monotonic, compare=False)

    def __post_init__(self) -> None:
        if self.start is None:
            object.__setattr__(self, "start", self.clock())

    def elapsed(self) -> float:
        """Seconds since ``start``."""
        return self.clock() - self.start

    def left(self) -> float | None:
        """Seconds left of the budget (negative once it is over; None: no budget)."""
        return None if self.budget is None else self.budget - self.elapsed()
