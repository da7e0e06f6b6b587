"""The asynchronous run loop (:meth:`RunLoop._run_async`) on simulated workers: how many
suggestions it asks at a time, and that it submits each of them once."""

from __future__ import annotations

import heapq

import numpy as np
import pytest

from admm_automl.problem import ThetaProblem
from admm_automl.records import Observation
from admm_automl.solvers.loop import ASK_AHEAD
from admm_automl.solvers.theta.random import RandomThetaSolver


class Workers:
    """``width`` simulated workers: a submitted trial ends ``cost`` later on a clock that moves
    to the first end when collected; records each submission."""

    def __init__(self, width: int, seed: int = 0) -> None:
        self.width, self.now, self.rng = width, 0.0, np.random.default_rng(seed)
        self.running: list[tuple[float, int]] = []
        self.submitted: list[int] = []

    def submit(self, suggestion) -> int:
        assert len(self.running) < self.width, "submitted to a busy cluster"
        ticket = len(self.submitted)
        self.submitted.append(suggestion.id)
        heapq.heappush(self.running, (self.now + self.rng.exponential(1.0), ticket))
        return ticket

    def collect(self):
        end, ticket = heapq.heappop(self.running)
        self.now = end
        return [(ticket, Observation(loss=float(self.rng.uniform())))]

    def free(self) -> int:
        return self.width - len(self.running)


class Counting(RandomThetaSolver):
    """Records the size of every ``ask_batch``."""

    supports_batch = True

    def ask_batch(self, n):
        self.asks_.append(n)
        return super().ask_batch(n)


def _run(width: int, n_evals: int) -> tuple[Counting, Workers]:
    workers = Workers(width)
    problem = ThetaProblem(dim=3, evaluate=None, augment=lambda x, o: o.loss,
                           penalty=lambda x: 0.0, batch_size=width, submit=workers.submit,
                           collect=workers.collect, free_workers=workers.free)
    solver = Counting().setup(problem, np.random.default_rng(0))
    solver.asks_ = []
    solver.run(n_evals)
    return solver, workers


@pytest.mark.parametrize("width", [16, 64])
def test_a_call_holding_every_worker_still_asks_ahead_of_the_next_free_one(width):
    """With all ``W`` workers its own, a freed worker's ask also makes the ``W // 16`` next
    ones (queued, pending): one search per 1 + W // 16 proposals, where asking one per freed
    worker made the driver the bottleneck at 64 workers."""
    solver, workers = _run(width, 400)
    ahead = width // ASK_AHEAD
    steady = solver.asks_[1:-2]  # after the first fill, before the evaluations run out
    assert solver.asks_[0] == width + ahead
    assert steady and all(n == 1 + ahead for n in steady)
    # every suggestion asked is submitted once, and exactly the evaluations asked for are made
    assert len(workers.submitted) == len(set(workers.submitted)) == 400
    assert sum(solver.asks_) == 400 and not solver.pending_


def test_below_16_workers_each_freed_worker_gets_one_fresh_proposal():
    solver, workers = _run(8, 100)
    assert solver.asks_[0] == 8 and set(solver.asks_[1:]) == {1}
    assert len(workers.submitted) == 100
