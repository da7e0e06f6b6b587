"""The overhead-aware run loop: when a solver's ask costs more than an evaluation (a GP fit against
a pipeline that fits in microseconds), the batch is topped up with cheap proposals so that a time
budget goes to evaluations rather than to the solver; they are counted in the ADMM trace, and off
under an evaluation budget alone, where they would only change the seeded history."""

from __future__ import annotations

import time

import numpy as np
import pytest

from admm_automl.exceptions import SolverError
from admm_automl.problem import ThetaProblem
from admm_automl.records import Observation
from admm_automl.solvers import THETA_SOLVERS
from admm_automl.solvers.base import BaseThetaSolver
from admm_automl.solvers.loop import OverheadBalance


def test_balance_adds_as_many_cheap_proposals_as_an_ask_costs_evaluations():
    balance = OverheadBalance()
    assert balance.n_cheap(1) == 0  # nothing measured yet
    balance.observe(0.010, 0.001)
    assert balance.n_cheap(1) == 10 and balance.n_cheap(2) == 20
    balance.observe(0.0001, 0.001)  # a moving average: 0.3 · 0.0001 + 0.7 · 0.010
    assert balance.ask_seconds == pytest.approx(0.00703)
    assert balance.n_cheap(1) == 7
    assert OverheadBalance(max_cheap=4, ask_seconds=1.0, eval_seconds=0.0).n_cheap(2) == 8
    assert OverheadBalance(ask_seconds=0.001, eval_seconds=0.5).n_cheap(1) == 0  # slow evaluations


class SlowAsk(BaseThetaSolver):
    """Asks the centre after 20 ms of 'thinking'."""

    supports_cheap_proposals = True

    def _ask(self):
        time.sleep(0.02)
        return np.full(self.problem_.dim, 0.5), None


def problem(overhead_aware: bool) -> tuple[ThetaProblem, list]:
    seen: list = []

    def evaluate(suggestions):
        seen.extend(suggestions)
        return [Observation(loss=float(np.sum((np.asarray(s.config) - 0.2) ** 2)))
                for s in suggestions]

    return ThetaProblem(dim=2, evaluate=evaluate, augment=lambda x, o: o.loss,
                        penalty=lambda x: 0.0, overhead_aware=overhead_aware), seen


def test_slow_asks_get_cheap_proposals_in_the_same_batch():
    prob, seen = problem(True)
    solver = SlowAsk().setup(prob, np.random.default_rng(0))
    solver.run(40)
    cheap = [s for s in seen if s.cheap]
    assert len(seen) == 40 and len(cheap) >= 30  # 20 ms asks, microsecond evaluations
    assert not seen[0].cheap  # the first batch has no measurement yet
    X = np.array([s.config for s in cheap])
    assert np.all((X >= 0) & (X <= 1)) and len(np.unique(X, axis=0)) == len(X)


def test_the_loop_times_asks_and_evaluations_on_the_problems_clock():
    """On a simulated clock that only evaluations move (a toy engine's), a slow ask costs no
    time, so no cheap proposal is added however slow the machine: the history is the seed's."""
    prob, seen = problem(True)
    now = [0.0]

    def evaluate(suggestions, inner=prob.evaluate):
        now[0] += 3.0 * len(suggestions)
        return inner(suggestions)

    prob.evaluate, prob.clock = evaluate, lambda: now[0]
    SlowAsk().setup(prob, np.random.default_rng(0)).run(5)
    assert len(seen) == 5 and not any(s.cheap for s in seen) and now[0] == 15.0


def test_without_overhead_awareness_every_proposal_is_the_solvers():
    prob, seen = problem(False)
    SlowAsk().setup(prob, np.random.default_rng(0)).run(3)
    assert [s.cheap for s in seen] == [False] * 3


def test_ask_cheap_needs_a_solver_that_takes_them():
    prob, _ = problem(True)
    solver = THETA_SOLVERS.create("random").setup(prob, np.random.default_rng(0))
    with pytest.raises(SolverError, match="does not take cheap proposals"):
        solver.ask_cheap(1)


def test_admm_counts_cheap_proposals_under_a_time_budget_only(make_optimizer):
    """bo's ask costs milliseconds, the toy engine microseconds: under a time budget the trace
    shows cheap proposals; with an evaluation budget alone there are none, and the history is
    the same for the same seed."""
    timed = make_optimizer(theta="bo", z="cmab", max_evals=60, time_budget=600).run()
    last = timed.trace[-1]
    assert last["cheap_proposals"] > 0 and last["solver_proposals"] > 0
    assert last["cheap_proposals"] + last["solver_proposals"] == len(timed.evaluated) - 1

    runs = [make_optimizer(theta="bo", z="cmab", max_evals=40).run() for _ in range(2)]
    assert all(r.trace[-1]["cheap_proposals"] == 0 for r in runs)
    histories = [[(e.z, e.theta.tolist()) for e in r.evaluated] for r in runs]
    assert histories[0] == histories[1]


@pytest.mark.parametrize("overhead_aware", [True, False])
def test_jopt_gets_the_same_help_as_admm(make_optimizer, monkeypatch, overhead_aware):
    """JOPT's one θ-solver over the joint box is as overhead-aware as ADMM's sub-problems, so a
    comparison of the two under a time budget gives both the same cheap proposals (or none)."""
    from admm_automl.solvers.theta.bo import GPBayesOptThetaSolver

    asked = []
    original = GPBayesOptThetaSolver.ask_cheap

    def counting(self, n):
        asked.append(n)
        return original(self, n)

    monkeypatch.setattr(GPBayesOptThetaSolver, "ask_cheap", counting)
    make_optimizer("jopt", theta="bo", max_evals=60, time_budget=600,
                   overhead_aware=overhead_aware).run()
    assert (sum(asked) > 0) is overhead_aware
