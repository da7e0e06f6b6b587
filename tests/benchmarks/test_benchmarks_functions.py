"""Synthetic test functions: known optima in unit-box coordinates, vectorisation, θ-problem wrapper."""

from __future__ import annotations

import numpy as np
import pytest

from admm_automl.benchmarks import BRANIN, FUNCTIONS, HARTMANN6, get_function, make_theta_problem
from admm_automl.exceptions import UnknownComponentError
from admm_automl.records import Suggestion


@pytest.mark.parametrize("fn", list(FUNCTIONS.values()), ids=list(FUNCTIONS))
def test_known_minimizers_reach_the_optimum(fn):
    for x in fn.minimizers:
        assert np.all((x >= 0) & (x <= 1))
        assert fn(x) == pytest.approx(fn.optimum, abs=1e-6)
        assert fn.regret(fn(x)) == pytest.approx(0.0, abs=1e-6)
    # nothing on a fine random sample beats the published optimum
    sample = np.random.default_rng(0).uniform(size=(20000, fn.dim))
    assert fn(sample).min() > fn.optimum


def test_published_values():
    # Branin at the corner (x1, x2) = (-5, 0): (0 - 5.1/(4π²)·25 - 25/π - 6)² + 10(1-1/(8π))cos(-5) + 10
    a = (-5.1 / (4 * np.pi**2) * 25 - 25 / np.pi - 6) ** 2
    assert BRANIN(np.zeros(2)) == pytest.approx(a + 10 * (1 - 1 / (8 * np.pi)) * np.cos(-5) + 10)
    assert BRANIN.optimum == pytest.approx(0.397887, abs=1e-6)
    assert HARTMANN6.optimum == pytest.approx(-3.32237, abs=1e-5)
    # Hartmann-6's best local minimum that is not global
    local = np.array([0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381])
    assert HARTMANN6(local) == pytest.approx(-3.2032, abs=2e-3)


@pytest.mark.parametrize("fn", list(FUNCTIONS.values()), ids=list(FUNCTIONS))
def test_vectorised_calls_agree_with_single_points(fn):
    X = np.random.default_rng(1).uniform(size=(7, fn.dim))
    np.testing.assert_allclose(fn(X), [fn(x) for x in X])
    assert isinstance(fn(X[0]), float)
    with pytest.raises(ValueError, match="dimension"):
        fn(np.zeros(fn.dim + 1))


def test_get_function_names_the_choices():
    assert get_function("hartmann6") is HARTMANN6
    with pytest.raises(UnknownComponentError, match=r"Did you mean 'branin'"):
        get_function("branni")


def test_make_theta_problem_penalty_and_trajectory():
    problem = make_theta_problem("branin", rho=4.0, b=[0.5], discrete=[True, False])
    x = np.array([0.75, 0.1])
    (obs,) = problem.evaluate([Suggestion(0, x)])
    assert obs.loss == pytest.approx(BRANIN(x))
    assert problem.penalty(x) == pytest.approx(0.5 * 4.0 * 0.25**2)
    assert problem.augment(x, obs) == pytest.approx(obs.loss + problem.penalty(x))
    assert len(problem.evaluated) == 1 and problem.dim == 2
    assert make_theta_problem(HARTMANN6).penalty(np.zeros(6)) == 0.0
    with pytest.raises(ValueError, match="one value per discrete coordinate"):
        make_theta_problem("branin", b=[0.5, 0.5], discrete=[True, False])
