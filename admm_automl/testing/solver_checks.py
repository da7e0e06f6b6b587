"""The ask/tell protocol checks every solver must pass, for this package and for plug-ins.

Each check takes ``make``, a function returning a fresh solver with cheap settings, and raises
``AssertionError`` (or the solver's own error) when the solver breaks the protocol of
:mod:`admm_automl.solvers.base`. Run them all with :func:`check_theta_solver` or
:func:`check_z_solver`, or one by one (:data:`THETA_CHECKS`, :data:`Z_CHECKS`), e.g. with pytest::

    from admm_automl.testing import THETA_CHECKS

    @pytest.mark.parametrize("check", THETA_CHECKS, ids=lambda c: c.__name__)
    def test_my_solver(check):
        check(lambda: MyThetaSolver(n_initial_points=3))

The checks: asks lie in the unit box (θ) or are valid choices (z) with fidelities in range; bad
observations (NaN, inf, failed, timed out, out of memory) are accepted; ``run(n)`` makes exactly n
new evaluations (cache hits are free but bounded); the same seed gives the same asks and another
seed others; ``tell`` refuses unknown ids; ``best`` minimises ``problem.augment`` over the history
and the trials; ``clone`` and ``get_params``/``set_params`` work.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from ..exceptions import SolverError, UnknownSuggestionError
from ..records import Observation, Status, Suggestion
from .problems import BAD_KINDS, make_theta_problem, make_z_problem

Make = Callable[[], Any]


def _raises(error: type, fragment: str, fn: Callable[[], Any]) -> None:
    try:
        fn()
    except error as err:
        assert fragment in str(err), f"expected {fragment!r} in the message, got {str(err)!r}"
        return
    raise AssertionError(f"expected {error.__name__} ({fragment!r})")


def _drive(solver: Any, problem: Any, n: int) -> list[Suggestion]:
    """Ask / evaluate / tell one at a time, n times; returns the suggestions."""
    suggestions = []
    for _ in range(n):
        s = solver.ask()
        suggestions.append(s)
        (obs,) = problem.evaluate([s])
        solver.tell(s, obs)
    return suggestions


def _assert_theta(s: Suggestion, dim: int) -> None:
    x = np.asarray(s.config)
    assert isinstance(s, Suggestion), type(s)
    assert x.shape == (dim,), x.shape
    assert np.issubdtype(x.dtype, np.floating), x.dtype
    assert np.all(np.isfinite(x)) and np.all((x >= 0.0) & (x <= 1.0)), x


def _assert_z(s: Suggestion, n_choices: Sequence[int], fidelity=None) -> None:
    z = s.config
    assert isinstance(z, tuple) and len(z) == len(n_choices), z
    for j, k in zip(z, n_choices):
        assert isinstance(j, (int, np.integer)) and not isinstance(j, bool), type(j)
        assert 0 <= j < k, (z, n_choices)
    if s.fidelity is not None:
        lo, hi = fidelity or (0.0, 1.0)
        assert 0.0 < s.fidelity <= 1.0 and lo <= s.fidelity <= hi, s.fidelity


# ------------------------------------------------------------------------------- θ-solvers
def check_theta_asks_in_the_unit_box(make: Make) -> None:
    """25 asks per dimension (1, 3, 8; and with discrete coordinates) lie in [0, 1]^dim."""
    for dim, discrete in ((1, None), (3, None), (8, None), (4, [True, False, True, False])):
        solver = make()
        problem, log = make_theta_problem(dim, discrete=discrete)
        solver.setup(problem, np.random.default_rng(dim))
        for s in _drive(solver, problem, 25):
            _assert_theta(s, dim)
        assert len(log) == 25


def check_theta_accepts_bad_observations(make: Make) -> None:
    for kind in BAD_KINDS:
        solver = make()
        problem, log = make_theta_problem(3, bad=lambda i: kind if i % 2 == 0 else None)
        solver.setup(problem, np.random.default_rng(2))
        for s in _drive(solver, problem, 12):
            _assert_theta(s, 3)
        solver.run(4)
        assert len(log) == 16, (kind, len(log))


def check_theta_all_failed(make: Make) -> None:
    solver = make()
    problem, log = make_theta_problem(2, bad=lambda i: "failed")
    solver.setup(problem, np.random.default_rng(3))
    solver.run(10)
    assert len(log) == 10
    _assert_theta(solver.ask(), 2)
    best = solver.best()
    assert best is not None and best[1].status is Status.FAILED


def check_theta_run_counts_new_evaluations(make: Make) -> None:
    """``run(n)`` makes exactly n new evaluations, whether or not repeats are cache hits."""
    for n in (1, 7, 20):
        for cached in (False, True):
            solver = make()
            problem, log = make_theta_problem(3, repeats_cached=cached)
            solver.setup(problem, np.random.default_rng(4))
            solver.run(n)
            assert len(log) == n, (n, cached, len(log))
            assert sum(not o.cached for _, o in solver.trials_) == n


def _theta_sequence(solver: Any, seed: int, n: int = 15) -> np.ndarray:
    problem, log = make_theta_problem(3)
    solver.setup(problem, np.random.default_rng(seed))
    _drive(solver, problem, n)
    return np.array(log.configs)


def check_theta_reproducible(make: Make) -> None:
    """The same rng seed gives identical asks, another seed others, and ``setup`` restarts."""
    a, b, c = (_theta_sequence(make(), s) for s in (123, 123, 124))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c), "a different seed gave the same asks"
    solver = make()
    _theta_sequence(solver, 5)
    np.testing.assert_array_equal(_theta_sequence(solver, 123), a)


def check_theta_tell_unknown_id(make: Make) -> None:
    solver = make()
    problem, _ = make_theta_problem(2)
    solver.setup(problem, np.random.default_rng(0))
    obs = Observation(loss=0.5)
    _raises(UnknownSuggestionError, "suggestion id 999, which was not asked",
            lambda: solver.tell(Suggestion(999, np.full(2, 0.5)), obs))
    s = solver.ask()
    solver.tell(s, obs)
    _raises(UnknownSuggestionError, "already told", lambda: solver.tell(s, obs))
    _raises(SolverError, "ask() called before setup()", lambda: make().ask())


def check_theta_best(make: Make) -> None:
    """``best`` minimises ``augment`` over history and trials (not the loss), prefers a better
    history entry, and never returns a NaN score."""
    hist_x = np.full(3, 0.3)
    history = [(hist_x, Observation(loss=0.0)), (np.full(3, 0.8), Observation(loss=0.75))]
    solver = make()
    problem, _ = make_theta_problem(3, history=history)
    solver.setup(problem, np.random.default_rng(6))
    solver.run(15)
    candidates = list(problem.history) + list(solver.trials_)
    scores = [problem.augment(x, o) for x, o in candidates]
    best_x, best_obs = solver.best()
    assert problem.augment(best_x, best_obs) == min(scores)
    assert any(best_obs is o for _, o in candidates)
    assert min(scores) < problem.augment(hist_x, history[0][1])
    great = (np.full(2, 0.8), Observation(loss=-100.0))
    solver = make()
    problem, _ = make_theta_problem(2, history=[great])
    solver.setup(problem, np.random.default_rng(7))
    solver.run(5)
    x, obs = solver.best()
    assert obs is great[1]
    np.testing.assert_array_equal(x, great[0])
    solver = make()
    problem, _ = make_theta_problem(2, bad=lambda i: "nan-ok" if i == 0 else None)
    solver.setup(problem, np.random.default_rng(8))
    solver.run(6)
    assert math.isfinite(solver.best()[1].loss)


def _check_params(make: Make, kind: str, problem: Any) -> None:
    from sklearn.base import clone

    solver = make()
    params = solver.get_params()
    solver.setup(problem, np.random.default_rng(0))
    solver.run(3)
    copy = clone(solver)
    assert type(copy) is type(solver) and copy is not solver
    assert copy.get_params() == params
    assert not hasattr(copy, "problem_") and not hasattr(copy, "trials_")
    assert solver.set_params(**params) is solver
    _raises(ValueError, "Invalid parameter 'no_such_param'",
            lambda: solver.set_params(no_such_param=1))
    assert solver.kind == kind


def check_theta_params(make: Make) -> None:
    """``clone``, ``get_params`` and ``set_params`` work as in scikit-learn."""
    _check_params(make, "theta", make_theta_problem(2)[0])


# ------------------------------------------------------------------------------- z-solvers
def check_z_asks_are_valid_choices(make: Make) -> None:
    for n_choices in ((3,), (2, 5, 1, 4), (1, 1), (7, 2)):
        solver = make()
        problem, log = make_z_problem(n_choices)
        solver.setup(problem, np.random.default_rng(0))
        for s in _drive(solver, problem, 25):
            _assert_z(s, n_choices)
        assert len(log) == 25


def check_z_fidelity_in_range(make: Make) -> None:
    """Fidelities stay in (0, 1] and inside ``problem.fidelity``; a multi-fidelity solver uses
    partial data on a 1000-row problem."""
    for fidelity in (None, (0.05, 0.8)):
        solver = make()
        problem, _ = make_z_problem((3, 4, 2), fidelity=fidelity, n_train=1000)
        solver.setup(problem, np.random.default_rng(0))
        asked = _drive(solver, problem, 30)
        for s in asked:
            _assert_z(s, (3, 4, 2), fidelity)
        if getattr(solver, "supports_fidelity", False):
            hi = fidelity[1] if fidelity else 1.0
            assert min(s.fidelity for s in asked) < hi, "a multi-fidelity solver never used less"


def check_z_accepts_bad_observations(make: Make) -> None:
    for kind in BAD_KINDS:
        solver = make()
        problem, log = make_z_problem((3, 4), bad=lambda i: kind if i % 2 == 0 else None)
        solver.setup(problem, np.random.default_rng(2))
        for s in _drive(solver, problem, 12):
            _assert_z(s, (3, 4))
        solver.run(4)
        assert len(log) == 16, (kind, len(log))


def check_z_all_failed(make: Make) -> None:
    solver = make()
    problem, log = make_z_problem((3, 2), bad=lambda i: "failed")
    solver.setup(problem, np.random.default_rng(3))
    solver.run(5)
    assert len(log) == 5
    _assert_z(solver.ask(), (3, 2))
    best = solver.best()
    assert best is not None and best[1].status is Status.FAILED


def check_z_run_counts_new_evaluations(make: Make) -> None:
    """``run(n)`` makes exactly n new evaluations; when repeats are cache hits it still makes n
    new ones while the space has them, and stops when the space is exhausted."""
    for n in (1, 7, 20):
        for cached in (False, True):  # 120 pipelines: room for 20 new ones whatever the solver
            solver = make()
            problem, log = make_z_problem((6, 5, 4), repeats_cached=cached)
            solver.setup(problem, np.random.default_rng(4))
            solver.run(n)
            assert len(log) == n, (n, cached, len(log))
    solver = make()
    problem, log = make_z_problem((2, 2), repeats_cached=True)
    solver.setup(problem, np.random.default_rng(4))
    solver.run(50)  # only 4 pipelines (plus their fidelities): must end, with fewer than 50
    assert 0 < len(log) < 50


def _z_sequence(solver: Any, seed: int, n: int = 20) -> list:
    problem, log = make_z_problem((5, 4, 3))
    solver.setup(problem, np.random.default_rng(seed))
    _drive(solver, problem, n)
    return [z for z, _ in log.configs]


def check_z_reproducible(make: Make) -> None:
    a, b, c = (_z_sequence(make(), s) for s in (123, 123, 124))
    assert a == b, "the same seed gave different asks"
    assert a != c, "a different seed gave the same asks"
    solver = make()
    _z_sequence(solver, 5)
    assert _z_sequence(solver, 123) == a


def check_z_tell_unknown_id(make: Make) -> None:
    solver = make()
    problem, _ = make_z_problem((3, 2))
    solver.setup(problem, np.random.default_rng(0))
    obs = Observation(loss=0.5)
    _raises(UnknownSuggestionError, "suggestion id 7, which was not asked",
            lambda: solver.tell(Suggestion(7, (0, 0)), obs))
    s = solver.ask()
    solver.tell(s, obs)
    _raises(UnknownSuggestionError, "already told", lambda: solver.tell(s, obs))
    _raises(SolverError, "ask() called before setup()", lambda: make().ask())


def check_z_best(make: Make) -> None:
    history = [((1, 2, 1), Observation(loss=0.0)), ((0, 0, 0), Observation(loss=5.0))]
    solver = make()
    problem, _ = make_z_problem((3, 4, 2), history=history)
    solver.setup(problem, np.random.default_rng(6))
    solver.run(15)
    candidates = list(problem.history) + list(solver.trials_)
    scores = [problem.augment(z, o) for z, o in candidates]
    best_z, best_obs = solver.best()
    assert problem.augment(best_z, best_obs) == min(scores)
    assert any(best_obs is o for _, o in candidates)
    great = ((2, 1), Observation(loss=-100.0))
    solver = make()
    problem, _ = make_z_problem((3, 2), history=[great])
    solver.setup(problem, np.random.default_rng(7))
    solver.run(5)
    z, obs = solver.best()
    assert obs is great[1] and tuple(z) == (2, 1)
    solver = make()
    problem, _ = make_z_problem((3, 2), bad=lambda i: "nan-ok" if i == 0 else None)
    solver.setup(problem, np.random.default_rng(8))
    solver.run(6)
    assert math.isfinite(solver.best()[1].loss)


def check_z_params(make: Make) -> None:
    _check_params(make, "z", make_z_problem((3, 2))[0])


THETA_CHECKS = (
    check_theta_asks_in_the_unit_box, check_theta_accepts_bad_observations,
    check_theta_all_failed, check_theta_run_counts_new_evaluations, check_theta_reproducible,
    check_theta_tell_unknown_id, check_theta_best, check_theta_params,
)
Z_CHECKS = (
    check_z_asks_are_valid_choices, check_z_fidelity_in_range, check_z_accepts_bad_observations,
    check_z_all_failed, check_z_run_counts_new_evaluations, check_z_reproducible,
    check_z_tell_unknown_id, check_z_best, check_z_params,
)


def general_theta_solvers() -> list[str]:
    """Names of the registered θ-solvers that run on any space: all but those that need a
    training length (``needs_training_length``, such as ``bapi``), which are refused on a space
    without one."""
    from ..solvers import THETA_SOLVERS

    return [name for name in THETA_SOLVERS.names()
            if not getattr(THETA_SOLVERS.get(name), "needs_training_length", False)]


def check_theta_solver(make: Make) -> None:
    """Run every θ-solver check on the solvers ``make()`` returns."""
    for check in THETA_CHECKS:
        check(make)


def check_z_solver(make: Make) -> None:
    """Run every z-solver check on the solvers ``make()`` returns."""
    for check in Z_CHECKS:
        check(make)
