"""Every registered θ- and z-solver passes the public protocol checks of
:mod:`admm_automl.testing.solver_checks` (the same ones a plug-in author runs).

A newly registered solver is checked automatically. Give it cheap settings in ``FAST_PARAMS`` and,
if a check cannot pass yet, an entry with a written reason in ``EXPECTED_XFAILS``.
"""

from __future__ import annotations

import pytest

from admm_automl.solvers import THETA_SOLVERS, Z_SOLVERS
from admm_automl.testing import THETA_CHECKS, Z_CHECKS, make_theta_problem

#: cheap constructor parameters, keyed "theta:<name>" or "z:<name>"
FAST_PARAMS: dict[str, dict] = {
    "theta:bo": {"n_initial_points": 3, "n_candidates": 128, "n_restarts": 1, "gp_restarts": 0},
    "theta:skopt": {"n_initial_points": 3, "n_points": 500, "n_restarts_optimizer": 1,
                    "gp_restarts": 0},
    # one cost unit per trial: FLAML's choices then depend on nothing but the seed
    "theta:blendsearch": {"cost": "evaluations"},
    "theta:cfo": {"cost": "evaluations"},
    "z:blds": {"disc": 2},
    "z:bo": {"n_initial_points": 3, "n_candidates": 200},
    "z:flash": {"n_init": 4},  # reach the EIPS phase within every check's few asks
}

#: known failures, keyed "<kind>:<name>::<check name>", with the reason
EXPECTED_XFAILS: dict[str, str] = {}

CASES = [("theta", name, check) for name in THETA_SOLVERS.names() for check in THETA_CHECKS] + [
    ("z", name, check) for name in Z_SOLVERS.names() for check in Z_CHECKS]


@pytest.mark.parametrize("kind,name,check", CASES,
                         ids=[f"{k}:{n}::{c.__name__[6:]}" for k, n, c in CASES])
def test_solver_passes_the_protocol_checks(request, kind, name, check):
    key = f"{kind}:{name}"
    if f"{key}::{check.__name__}" in EXPECTED_XFAILS:
        request.node.add_marker(pytest.mark.xfail(
            reason=EXPECTED_XFAILS[f"{key}::{check.__name__}"], strict=True))
    registry = THETA_SOLVERS if kind == "theta" else Z_SOLVERS
    check(lambda: registry.create({"name": name, "params": FAST_PARAMS.get(key, {})}))


def test_fast_params_and_xfails_name_registered_solvers():
    registered = {f"theta:{n}" for n in THETA_SOLVERS.names()} | {
        f"z:{n}" for n in Z_SOLVERS.names()}
    assert set(FAST_PARAMS) <= registered
    assert {k.split("::")[0] for k in EXPECTED_XFAILS} <= registered


def test_a_broken_solver_fails_the_checks():
    """The checks can fail: a θ-solver that asks outside the box, and one that ignores its seed."""
    from admm_automl.solvers import BaseThetaSolver
    from admm_automl.testing import check_theta_solver

    class OutOfBox(BaseThetaSolver):
        def _ask(self):
            return self.rng_.uniform(0.5, 1.5, size=self.problem_.dim), None

    class Unseeded(BaseThetaSolver):
        def __init__(self):
            import numpy as np

            self._global = np.random.default_rng()

        def _ask(self):
            return self._global.uniform(size=self.problem_.dim), None

    for broken in (OutOfBox, Unseeded):
        with pytest.raises(AssertionError):
            check_theta_solver(broken)
    problem, _ = make_theta_problem(2)  # the helpers themselves are usable directly
    assert problem.dim == 2
