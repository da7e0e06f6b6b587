"""The ``tpe`` and ``smac`` θ-solvers (Optuna's TPE and SMAC3's random-forest BO behind the
ask/tell protocol, FLASH's two TUNE back ends): they search better than random, keep discrete
coordinates on their admissible values, start from the problem's start and its history, and
re-score the history when the duals change."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from admm_automl.problem import ThetaProblem
from admm_automl.records import Observation
from admm_automl.solvers import THETA_SOLVERS


def _problem(loss, dim, *, start=None, history=(), grids=(), augment=None, low_cost=None):
    """A θ-problem over ``loss(x)`` that logs what it evaluates."""
    log: list[np.ndarray] = []

    def evaluate(suggestions):
        out = []
        for s in suggestions:
            log.append(np.array(s.config, dtype=float))
            out.append(Observation(loss=float(loss(log[-1])), eval_id=len(log) - 1))
        return out

    problem = ThetaProblem(dim=dim, evaluate=evaluate,
                           augment=augment or (lambda x, obs: obs.loss),
                           penalty=lambda x: 0.0, history=list(history), start=start, grids=grids,
                           low_cost=low_cost)
    return problem, log


NEEDS_SMAC = pytest.mark.skipif(importlib.util.find_spec("smac") is None,
                                reason="SMAC3 is not installed")
SOLVERS = ["tpe", pytest.param("smac", marks=NEEDS_SMAC)]


@pytest.mark.parametrize("name", SOLVERS)
def test_the_model_draws_the_search_to_the_minimum(name):
    """On a 3-d bowl, the last 20 of 40 asks (after the random start-up) of two seeds lie near
    the minimum: their median loss is below 0.2, where uniform points have a median of about
    0.35. (SMAC3's asks also depend on Python's hash seed, see the solver: hence two seeds and
    a margin.)"""
    centre = np.array([0.2, 0.7, 0.4])
    late = []
    for seed in (0, 1):
        problem, log = _problem(lambda x: float(np.sum((x - centre) ** 2)), 3)
        THETA_SOLVERS.create(name).setup(problem, np.random.default_rng(seed)).run(40)
        late += [np.sum((x - centre) ** 2) for x in log[-20:]]
    assert np.median(late) < 0.2


@pytest.mark.parametrize("name", SOLVERS)
def test_discrete_coordinates_take_only_admissible_values(name):
    grid = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
    problem, log = _problem(lambda x: abs(x[0] - 0.5) + abs(x[1] - 0.3), 2, grids=(grid, None))
    THETA_SOLVERS.create(name).setup(problem, np.random.default_rng(0)).run(30)
    assert all(x[0] in grid for x in log)
    # the continuous one is not gridded: it takes many more values than a grid of 5 (not one
    # per ask: a local-search neighbour may change only the discrete coordinate, as SMAC3's
    # did under one hash seed of 8 tried)
    assert len({tuple(x) for x in log}) == 30 and len({x[1] for x in log}) >= 20


@pytest.mark.parametrize("name", SOLVERS)
def test_the_start_is_asked_first_and_the_history_counts(name):
    """The start is the first point; a history holding the optimum is what ``best`` returns
    when nothing evaluated beats it."""
    history = [(np.full(2, 0.0), Observation(loss=-1.0))]
    problem, log = _problem(lambda x: float(x.sum()), 2, start=np.array([0.3, 0.3]),
                            history=history)
    solver = THETA_SOLVERS.create(name).setup(problem, np.random.default_rng(0))
    solver.run(5)
    np.testing.assert_allclose(log[0], [0.3, 0.3])
    assert solver.best()[1].loss == -1.0


@NEEDS_SMAC
def test_smac_is_told_the_history_scored_with_the_duals():
    history = [(np.full(2, v), Observation(loss=v)) for v in (0.1, 0.5)]
    problem, _ = _problem(lambda x: 0.0, 2, history=history,
                          augment=lambda x, obs: obs.loss + 2.0)
    solver = THETA_SOLVERS.create("smac").setup(problem, np.random.default_rng(0))
    costs = sorted(v.cost for v in solver.smac_.runhistory._data.values())
    assert costs == pytest.approx([2.1, 2.5])


def test_tpe_start_first_and_history_told_as_finished_trials():
    history = [(np.full(2, v), Observation(loss=v)) for v in (0.1, 0.5, 0.9)]
    problem, log = _problem(lambda x: float(x.sum()), 2, start=np.array([0.3, 0.3]),
                            history=history)
    solver = THETA_SOLVERS.create("tpe").setup(problem, np.random.default_rng(0))
    solver.run(4)
    np.testing.assert_allclose(log[0], [0.3, 0.3])
    trials = solver.study_.trials
    assert len(trials) == 3 + 4 and [t.value for t in trials[:3]] == [0.1, 0.5, 0.9]
    assert [t.value for t in trials[3:]] == [float(x.sum()) for x in log]


def test_a_new_iterate_rescores_the_history_with_its_duals():
    history = [(np.full(2, 0.5), Observation(loss=1.0))]
    problem, _ = _problem(lambda x: 0.0, 2, history=history)
    solver = THETA_SOLVERS.create("tpe").setup(problem, np.random.default_rng(0))
    moved, _ = _problem(lambda x: 0.0, 2, history=history,
                        augment=lambda x, obs: obs.loss + 2.0)
    solver.update_problem(moved)
    assert [t.value for t in solver.study_.trials] == [3.0]


def test_a_non_finite_value_is_a_failed_trial():
    problem, _ = _problem(lambda x: float("nan") if x[0] < 0.5 else x[0], 1)
    solver = THETA_SOLVERS.create("tpe").setup(problem, np.random.default_rng(1))
    solver.run(20)
    states = {t.state.name for t in solver.study_.trials}
    assert states == {"COMPLETE", "FAIL"}
    assert solver.best()[1].loss >= 0.5  # a NaN never wins


def test_tpe_starts_from_the_low_cost_point_when_asked():
    """The declared coordinates at their low-cost values, the others at the start."""
    low = np.array([0.0, np.nan, 0.1])
    for flag, first in ((True, [0.0, 0.5, 0.1]), (False, [0.5, 0.5, 0.5])):
        problem, log = _problem(lambda x: 0.0, 3, start=np.full(3, 0.5), low_cost=low)
        THETA_SOLVERS.create({"name": "tpe", "params": {"low_cost": flag}}).setup(
            problem, np.random.default_rng(0)).run(2)
        np.testing.assert_allclose(log[0], first)
