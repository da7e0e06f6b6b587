"""A space that runs out of configurations ends the search at once, whatever the solver costs per
ask: otherwise every later sub-problem keeps asking for configurations that are all cache hits, and
a solver with a costly ask pays for each (bo, a GP fit per ask, once took 68 s for the 4 pipelines
of a tiny space where random took 0.3 s)."""

from __future__ import annotations

import numpy as np
import pytest

from admm_automl.methods.driver import Schedule
from admm_automl.space.loader import space_from_dict
from admm_automl.testing import make_theta_problem, make_z_problem

#: one estimator with two discrete hyperparameters: 2 x 2 = 4 pipelines
TINY = space_from_dict({"name": "tiny_discrete", "modules": [{"name": "estimator", "choices": [{
    "name": "tree", "class": "sklearn.tree.DecisionTreeClassifier", "hyperparameters": {
        "criterion": {"type": "categorical", "choices": ["gini", "entropy"], "default": "gini"},
        "max_depth": {"type": "int", "low": 1, "high": 2, "default": 1}}}]}]}).for_task(
    "classification")


def loss(config):
    return 0.1 * config["estimator__max_depth"] + (config["estimator__criterion"] == "gini")


@pytest.mark.parametrize("theta,z", [("bo", "cmab"), ("random", "random"), ("bo", "bo")])
def test_an_exhausted_space_stops_the_search_after_a_few_asks(make_engine, make_optimizer,
                                                               theta, z):
    engine = make_engine(TINY, loss=loss)
    result = make_optimizer(engine=engine, space=TINY, theta=theta, z=z, max_evals=20,
                            schedule=Schedule(16, 16, 128)).run()
    assert result.stop_reason == "exhausted" and result.n_evals == 4
    # every later sub-problem call stops at its first cache hit: before, each one spent
    # max(100, 10 * n) of them (thousands of bo asks, each a GP fit)
    assert len(engine.tags_seen) <= 20


def test_a_finite_z_problem_stops_at_the_first_cache_hit_once_every_choice_was_told():
    from admm_automl.solvers import Z_SOLVERS

    problem, log = make_z_problem((2, 2), repeats_cached=True)
    solver = Z_SOLVERS.create("random").setup(problem, np.random.default_rng(0))
    solver.run(4)
    assert len(log) == 4 and solver.n_asked_ >= 4
    asked = solver.n_asked_
    solver.run(10)
    assert solver.n_asked_ == asked + 1  # one cache hit, then nothing new is left


def test_a_problem_without_a_cache_is_evaluated_again():
    from admm_automl.solvers import THETA_SOLVERS

    problem, log = make_theta_problem(2, discrete=[True, True])
    problem.grids = (np.array([0.0, 1.0]), np.array([0.0, 1.0]))
    solver = THETA_SOLVERS.create("random").setup(problem, np.random.default_rng(0))
    solver.run(12)  # only 4 configurations, but every ask is a new evaluation here
    assert len(log) == 12
