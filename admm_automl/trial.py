"""The records that flow between the ADMM loop, the solvers and the evaluation engine."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


class Status(str, enum.Enum):
    """Outcome of one evaluation."""

    OK = "ok"
    FAILED = "failed"  # an exception, or a NaN/inf score
    TIMEOUT = "timeout"  # stopped by the per-trial timeout or the end of the time budget
    MEMOUT = "memout"  # the memory limit was hit


@dataclass(frozen=True)
class Request:
    """One black-box query: algorithm choice per module, the full relaxed θ, and the fidelity.

    ``theta`` lives in the unit box; discrete coordinates may be relaxed (the objective evaluates at
    their projection, seed 001's f̃). ``fidelity`` is the fraction of training rows used, in (0, 1].
    """

    z: tuple[int, ...]
    theta: np.ndarray
    fidelity: float = 1.0


@dataclass
class Observation:
    """The raw result of one evaluation (never penalised: the ADMM terms are added by ``augment``).

    ``loss`` is always minimised and always finite: a failed pipeline gets the metric's worst value.
    ``constraints`` holds raw constraint values by name.
    """

    loss: float
    status: Status = Status.OK
    constraints: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    fidelity: float = 1.0
    fit_time: float = 0.0
    predict_time: float = 0.0
    duration: float = 0.0
    cached: bool = False
    eval_id: int = -1
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status is Status.OK and math.isfinite(self.loss)
