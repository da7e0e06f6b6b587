"""A task for the executor's fault tests: it imports nothing heavy (no scikit-learn), so a worker
process that loads it starts in a fraction of a second; tests/evaluation/test_faults.py uses it."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import numpy as np

OK, RAISE, SEGFAULT, THREADS = range(4)


class ProbeTask:
    """``z[0]`` picks what trial ``(z, θ, fidelity)`` does: ``OK`` sleeps ``fidelity`` seconds and
    returns loss ``θ[0]``; ``RAISE`` raises; ``SEGFAULT`` kills its own process with SIGSEGV;
    ``THREADS`` returns the largest BLAS/OpenMP thread count of its process as the loss. Every
    result carries the worker's process id as ``constraints["pid"]`` and the value of its
    environment variable ``PROBE_VALUE`` as ``constraints["env"]``. ``warm_up`` sleeps
    ``warm_up_seconds`` and raises ``RuntimeError(warm_up_error)`` when that is given."""

    space = None

    def __init__(self, warm_up_seconds: float = 0.0, warm_up_error: str | None = None) -> None:
        self.warm_up_seconds = warm_up_seconds
        self.warm_up_error = warm_up_error

    def warm_up(self) -> None:
        time.sleep(self.warm_up_seconds)
        if self.warm_up_error is not None:
            raise RuntimeError(self.warm_up_error)

    def run(self, z: tuple[int, ...], theta: np.ndarray, fidelity: float) -> dict[str, Any]:
        loss = float(theta[0])
        if z[0] == RAISE:
            raise RuntimeError("probe failure")
        if z[0] == SEGFAULT:
            os.kill(os.getpid(), signal.SIGSEGV)
        if z[0] == THREADS:
            from threadpoolctl import threadpool_info

            loss = float(max(info["num_threads"] for info in threadpool_info()))
        time.sleep(fidelity)
        return {
            "status": "ok", "loss": loss, "error": None, "fit_time": fidelity,
            "predict_time": 0.0, "n_train": None,
            "constraints": {"pid": os.getpid(), "env": os.environ.get("PROBE_VALUE")},
        }


def job(kind: int = OK, seconds: float = 0.0, loss: float = 0.5) -> tuple:
    """A job for :class:`ProbeTask`."""
    return ((kind,), np.array([loss]), seconds)
