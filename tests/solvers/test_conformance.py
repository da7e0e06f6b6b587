"""Conformance of every registered θ- and z-solver to the ask/tell protocol (solvers/base.py).

The tests are parametrized over ``THETA_SOLVERS.names()`` and ``Z_SOLVERS.names()``, so a newly
registered solver is checked automatically. Give it cheap settings in ``FAST_PARAMS`` and, if a
check cannot pass yet, an entry with a written reason in ``EXPECTED_XFAILS``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.base import clone

from admm_automl.exceptions import SolverError, UnknownSuggestionError
from admm_automl.problem import ThetaProblem, ZProblem
from admm_automl.records import Observation, Status, Suggestion
from admm_automl.solvers import THETA_SOLVERS, Z_SOLVERS

#: cheap constructor parameters, keyed "theta:<name>" or "z:<name>"
FAST_PARAMS: dict[str, dict] = {
    "theta:random": {},
    "theta:bo": {"n_initial_points": 3, "n_candidates": 128, "n_restarts": 1, "gp_restarts": 0},
    "theta:skopt": {"n_initial_points": 3, "n_points": 500, "n_restarts_optimizer": 1, "gp_restarts": 0},
    "theta:rbfopt": {},
    "z:random": {},
    "z:cmab": {},
    "z:blds": {"disc": 2},
    "z:daub": {},
    "z:hyperband": {},
    "z:bo": {"n_initial_points": 3, "n_candidates": 200},
}

#: known failures, keyed "theta:<name>" (every check) or "theta:<name>::<test function name>"
EXPECTED_XFAILS: dict[str, str] = {}

REGISTRIES = {"theta": THETA_SOLVERS, "z": Z_SOLVERS}
THETA_NAMES = THETA_SOLVERS.names()
Z_NAMES = Z_SOLVERS.names()


@pytest.fixture
def make_solver(request):
    """Factory ``make_solver(kind, name)``: a fresh solver with FAST_PARAMS; applies EXPECTED_XFAILS."""

    def factory(kind: str, name: str):
        key = f"{kind}:{name}"
        for k in (key, f"{key}::{request.node.originalname}"):
            if k in EXPECTED_XFAILS:
                request.node.add_marker(pytest.mark.xfail(reason=EXPECTED_XFAILS[k], strict=True))
        return REGISTRIES[kind].create({"name": name, "params": FAST_PARAMS.get(key, {})})

    return factory


# ----------------------------------------------------------------------------- problems
class Recorder:
    """Counts evaluations and keeps the evaluated configurations."""

    def __init__(self) -> None:
        self.configs: list = []
        self.batches: list[int] = []

    def __len__(self) -> int:
        return len(self.configs)


def _bad_observation(kind: str) -> Observation:
    return {
        "nan": Observation(loss=math.nan, status=Status.FAILED, error="NaN score"),
        "nan-ok": Observation(loss=math.nan),
        "inf": Observation(loss=math.inf, status=Status.FAILED, error="inf score"),
        "failed": Observation(loss=1.0, status=Status.FAILED, error="RuntimeError: boom"),
        "timeout": Observation(loss=1.0, status=Status.TIMEOUT, error="timed out"),
        "memout": Observation(loss=1.0, status=Status.MEMOUT, error="memory"),
    }[kind]


def make_theta_problem(dim: int, *, bad=None, history=(), discrete=None, rho=2.0):
    """A quadratic θ-problem: loss ‖x − 0.3‖², penalty (ρ/2)‖x − 0.8‖² (so augment ≠ loss order).

    ``bad(i)`` may return the kind of a bad observation for evaluation ``i``.
    """
    rec = Recorder()
    target, b = np.full(dim, 0.3), np.full(dim, 0.8)

    def evaluate(suggestions):
        rec.batches.append(len(suggestions))
        out = []
        for s in suggestions:
            x = np.array(s.config, dtype=float, copy=True)
            i = len(rec.configs)
            rec.configs.append(x)
            kind = bad(i) if bad is not None else None
            if kind:
                out.append(_bad_observation(kind))
            else:
                out.append(Observation(loss=float(np.sum((x - target) ** 2)), eval_id=i))
        return out

    def penalty(x):
        return 0.5 * rho * float(np.sum((np.asarray(x, dtype=float) - b) ** 2))

    def augment(x, obs):
        return obs.loss + penalty(x)

    problem = ThetaProblem(
        dim=dim,
        evaluate=evaluate,
        augment=augment,
        penalty=penalty,
        discrete=np.zeros(dim, dtype=bool) if discrete is None else np.asarray(discrete, dtype=bool),
        names=tuple(f"x{i}" for i in range(dim)),
        history=list(history),
        start=np.full(dim, 0.5),
    )
    return problem, rec


def make_z_problem(n_choices=(3, 4, 2), *, bad=None, history=(), fidelity=None):
    """A separable z-problem: loss Σ_i |z_i − best_i| / n_i plus a per-pipeline penalty in augment."""
    rec = Recorder()
    best = tuple(k // 2 for k in n_choices)

    def loss_of(z):
        return float(sum(abs(j - b) / k for j, b, k in zip(z, best, n_choices)))

    def evaluate(suggestions):
        rec.batches.append(len(suggestions))
        out = []
        for s in suggestions:
            z = tuple(s.config)
            i = len(rec.configs)
            rec.configs.append((z, s.fidelity))
            kind = bad(i) if bad is not None else None
            out.append(_bad_observation(kind) if kind else Observation(loss=loss_of(z), eval_id=i))
        return out

    def augment(z, obs):
        return obs.loss + 0.1 * float(z[0])

    problem = ZProblem(
        n_choices=tuple(n_choices),
        evaluate=evaluate,
        augment=augment,
        module_names=tuple(f"m{i}" for i in range(len(n_choices))),
        choice_names=tuple(tuple(f"c{j}" for j in range(k)) for k in n_choices),
        history=list(history),
        start=tuple(0 for _ in n_choices),
        fidelity=fidelity,
    )
    return problem, rec


def _drive(solver, problem, n):
    """Ask / evaluate / tell n times; returns the suggestions."""
    suggestions = []
    for _ in range(n):
        s = solver.ask()
        suggestions.append(s)
        (obs,) = problem.evaluate([s])
        solver.tell(s, obs)
    return suggestions


def _check_theta(s: Suggestion, dim: int) -> None:
    x = np.asarray(s.config)
    assert isinstance(s, Suggestion)
    assert x.shape == (dim,), x.shape
    assert np.issubdtype(x.dtype, np.floating)
    assert np.all(np.isfinite(x)) and np.all((x >= 0.0) & (x <= 1.0)), x


def _check_z(s: Suggestion, n_choices, fidelity=None) -> None:
    z = s.config
    assert isinstance(z, tuple) and len(z) == len(n_choices), z
    for j, k in zip(z, n_choices):
        assert isinstance(j, (int, np.integer)) and not isinstance(j, bool), type(j)
        assert 0 <= j < k, (z, n_choices)
    if fidelity is None:
        assert s.fidelity is None or s.fidelity == 1.0
    elif s.fidelity is not None:
        assert fidelity[0] <= s.fidelity <= fidelity[1]


theta_names = pytest.mark.parametrize("name", THETA_NAMES)
z_names = pytest.mark.parametrize("name", Z_NAMES)


# ----------------------------------------------------------------------------- θ-solvers
@theta_names
@pytest.mark.parametrize("dim", [1, 3, 8])
def test_theta_asks_stay_in_the_unit_box(make_solver, name, dim):
    solver = make_solver("theta", name)
    problem, rec = make_theta_problem(dim)
    solver.setup(problem, np.random.default_rng(0))
    for s in _drive(solver, problem, 25):
        _check_theta(s, dim)
    assert len(rec) == 25


@theta_names
def test_theta_asks_with_discrete_coordinates(make_solver, name):
    """Discrete coordinates may stay relaxed, but every ask is in the box with the right shape."""
    solver = make_solver("theta", name)
    problem, _ = make_theta_problem(4, discrete=[True, False, True, False])
    solver.setup(problem, np.random.default_rng(1))
    for s in _drive(solver, problem, 20):
        _check_theta(s, 4)


@theta_names
@pytest.mark.parametrize("bad_kind", ["nan", "nan-ok", "inf", "failed", "timeout", "memout"])
def test_theta_bad_observations_are_accepted(make_solver, name, bad_kind):
    solver = make_solver("theta", name)
    problem, rec = make_theta_problem(3, bad=lambda i: bad_kind if i % 2 == 0 else None)
    solver.setup(problem, np.random.default_rng(2))
    for s in _drive(solver, problem, 12):
        _check_theta(s, 3)
    solver.run(4)
    assert len(rec) == 16


@theta_names
def test_theta_all_failed_history(make_solver, name):
    solver = make_solver("theta", name)
    problem, rec = make_theta_problem(2, bad=lambda i: "failed")
    solver.setup(problem, np.random.default_rng(3))
    solver.run(10)
    assert len(rec) == 10
    _check_theta(solver.ask(), 2)
    best = solver.best()
    assert best is not None and best[1].status is Status.FAILED


@theta_names
@pytest.mark.parametrize("n", [1, 7, 20])
def test_theta_run_performs_exactly_n_evaluations(make_solver, name, n):
    solver = make_solver("theta", name)
    problem, rec = make_theta_problem(3)
    solver.setup(problem, np.random.default_rng(4))
    solver.run(n)
    assert len(rec) == n
    assert len(solver.trials_) == n
    for x in rec.configs:
        assert x.shape == (3,) and np.all((x >= 0) & (x <= 1))


def _theta_sequence(solver, seed, n=15):
    problem, rec = make_theta_problem(3)
    solver.setup(problem, np.random.default_rng(seed))
    _drive(solver, problem, n)
    return np.array(rec.configs)


@theta_names
def test_theta_reproducible(make_solver, name):
    """The same rng seed gives identical asks; a different seed gives different ones."""
    a = _theta_sequence(make_solver("theta", name), 123)
    b = _theta_sequence(make_solver("theta", name), 123)
    c = _theta_sequence(make_solver("theta", name), 124)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    # setup() restarts the solver: reusing an instance with the same seed repeats the sequence
    solver = make_solver("theta", name)
    _theta_sequence(solver, 5)
    np.testing.assert_array_equal(_theta_sequence(solver, 123), a)


@theta_names
def test_theta_tell_unknown_id(make_solver, name):
    solver = make_solver("theta", name)
    problem, _ = make_theta_problem(2)
    solver.setup(problem, np.random.default_rng(0))
    obs = Observation(loss=0.5)
    with pytest.raises(UnknownSuggestionError, match=r"suggestion id 999, which was not asked"):
        solver.tell(Suggestion(999, np.full(2, 0.5)), obs)
    s = solver.ask()
    solver.tell(s, obs)
    with pytest.raises(UnknownSuggestionError, match=rf"suggestion id {s.id}, .*already told"):
        solver.tell(s, obs)


@theta_names
def test_theta_ask_before_setup(make_solver, name):
    with pytest.raises(SolverError, match=r"ask\(\) called before setup\(\)"):
        make_solver("theta", name).ask()


@theta_names
def test_theta_best_minimises_augment_over_history_and_trials(make_solver, name):
    # the history point has a low loss but a large penalty; the augment order must decide
    hist_x = np.full(3, 0.3)
    history = [(hist_x, Observation(loss=0.0)), (np.full(3, 0.8), Observation(loss=0.75))]
    solver = make_solver("theta", name)
    problem, rec = make_theta_problem(3, history=history)
    solver.setup(problem, np.random.default_rng(6))
    solver.run(15)
    candidates = list(problem.history) + list(solver.trials_)
    assert len(candidates) == 17
    scores = [problem.augment(x, o) for x, o in candidates]
    best_x, best_obs = solver.best()
    assert problem.augment(best_x, best_obs) == min(scores)
    assert any(best_obs is o for _, o in candidates)
    assert min(scores) < problem.augment(hist_x, history[0][1])  # not simply the lowest loss


@theta_names
def test_theta_best_prefers_history(make_solver, name):
    """A history entry better than every trial is returned by best()."""
    great = (np.full(2, 0.8), Observation(loss=-100.0))
    solver = make_solver("theta", name)
    problem, _ = make_theta_problem(2, history=[great])
    solver.setup(problem, np.random.default_rng(7))
    solver.run(5)
    x, obs = solver.best()
    assert obs is great[1]
    np.testing.assert_array_equal(x, great[0])


@theta_names
def test_theta_best_ignores_nan_scores(make_solver, name):
    solver = make_solver("theta", name)
    problem, _ = make_theta_problem(2, bad=lambda i: "nan-ok" if i == 0 else None)
    solver.setup(problem, np.random.default_rng(8))
    solver.run(6)
    _, obs = solver.best()
    assert math.isfinite(obs.loss)


@theta_names
def test_theta_clone_and_params(make_solver, name):
    solver = make_solver("theta", name)
    params = solver.get_params()
    assert set(FAST_PARAMS.get(f"theta:{name}", {})) <= set(params)
    problem, _ = make_theta_problem(2)
    solver.setup(problem, np.random.default_rng(0))
    solver.run(3)
    copy = clone(solver)
    assert type(copy) is type(solver) and copy is not solver
    assert copy.get_params() == params
    assert not hasattr(copy, "problem_") and not hasattr(copy, "trials_")
    assert solver.set_params(**params) is solver
    with pytest.raises(ValueError, match=r"Invalid parameter 'no_such_param'"):
        solver.set_params(no_such_param=1)
    assert type(solver).name == name and solver.kind == "theta"


# ----------------------------------------------------------------------------- z-solvers
@z_names
@pytest.mark.parametrize("n_choices", [(3,), (2, 5, 1, 4), (1, 1), (7, 2)])
def test_z_asks_are_valid_choices(make_solver, name, n_choices):
    solver = make_solver("z", name)
    problem, rec = make_z_problem(n_choices)
    solver.setup(problem, np.random.default_rng(0))
    for s in _drive(solver, problem, 25):
        _check_z(s, n_choices)
    assert len(rec) == 25


@z_names
def test_z_fidelity_stays_in_range(make_solver, name):
    solver = make_solver("z", name)
    problem, _ = make_z_problem((3, 4), fidelity=(0.1, 1.0))
    solver.setup(problem, np.random.default_rng(0))
    for s in _drive(solver, problem, 20):
        _check_z(s, (3, 4), fidelity=(0.1, 1.0))


@z_names
@pytest.mark.parametrize("bad_kind", ["nan", "nan-ok", "inf", "failed", "timeout", "memout"])
def test_z_bad_observations_are_accepted(make_solver, name, bad_kind):
    solver = make_solver("z", name)
    problem, rec = make_z_problem((3, 4), bad=lambda i: bad_kind if i % 2 == 0 else None)
    solver.setup(problem, np.random.default_rng(2))
    for s in _drive(solver, problem, 12):
        _check_z(s, (3, 4))
    solver.run(4)
    assert len(rec) == 16


@z_names
def test_z_all_failed_history(make_solver, name):
    solver = make_solver("z", name)
    problem, rec = make_z_problem((3, 2), bad=lambda i: "failed")
    solver.setup(problem, np.random.default_rng(3))
    solver.run(10)
    assert len(rec) == 10
    _check_z(solver.ask(), (3, 2))
    best = solver.best()
    assert best is not None and best[1].status is Status.FAILED


@z_names
@pytest.mark.parametrize("n", [1, 7, 20])
def test_z_run_performs_exactly_n_evaluations(make_solver, name, n):
    solver = make_solver("z", name)
    problem, rec = make_z_problem((3, 4, 2))
    solver.setup(problem, np.random.default_rng(4))
    solver.run(n)
    assert len(rec) == n
    assert len(solver.trials_) == n


def _z_sequence(solver, seed, n=20):
    problem, rec = make_z_problem((5, 4, 3))
    solver.setup(problem, np.random.default_rng(seed))
    _drive(solver, problem, n)
    return [z for z, _ in rec.configs]


@z_names
def test_z_reproducible(make_solver, name):
    a = _z_sequence(make_solver("z", name), 123)
    b = _z_sequence(make_solver("z", name), 123)
    c = _z_sequence(make_solver("z", name), 124)
    assert a == b
    assert a != c
    solver = make_solver("z", name)
    _z_sequence(solver, 5)
    assert _z_sequence(solver, 123) == a


@z_names
def test_z_tell_unknown_id(make_solver, name):
    solver = make_solver("z", name)
    problem, _ = make_z_problem((3, 2))
    solver.setup(problem, np.random.default_rng(0))
    obs = Observation(loss=0.5)
    with pytest.raises(UnknownSuggestionError, match=r"suggestion id 7, which was not asked"):
        solver.tell(Suggestion(7, (0, 0)), obs)
    s = solver.ask()
    solver.tell(s, obs)
    with pytest.raises(UnknownSuggestionError, match=rf"suggestion id {s.id}, .*already told"):
        solver.tell(s, obs)


@z_names
def test_z_ask_before_setup(make_solver, name):
    with pytest.raises(SolverError, match=r"ask\(\) called before setup\(\)"):
        make_solver("z", name).ask()


@z_names
def test_z_best_minimises_augment_over_history_and_trials(make_solver, name):
    # augment adds 0.1 * z[0], so the order by augment differs from the order by loss
    history = [((1, 2, 1), Observation(loss=0.0)), ((0, 0, 0), Observation(loss=5.0))]
    solver = make_solver("z", name)
    problem, _ = make_z_problem((3, 4, 2), history=history)
    solver.setup(problem, np.random.default_rng(6))
    solver.run(15)
    candidates = list(problem.history) + list(solver.trials_)
    assert len(candidates) == 17
    scores = [problem.augment(z, o) for z, o in candidates]
    best_z, best_obs = solver.best()
    assert problem.augment(best_z, best_obs) == min(scores)
    assert any(best_obs is o for _, o in candidates)


@z_names
def test_z_best_prefers_history(make_solver, name):
    great = ((2, 1), Observation(loss=-100.0))
    solver = make_solver("z", name)
    problem, _ = make_z_problem((3, 2), history=[great])
    solver.setup(problem, np.random.default_rng(7))
    solver.run(5)
    z, obs = solver.best()
    assert obs is great[1] and tuple(z) == (2, 1)


@z_names
def test_z_best_ignores_nan_scores(make_solver, name):
    solver = make_solver("z", name)
    problem, _ = make_z_problem((3, 2), bad=lambda i: "nan-ok" if i == 0 else None)
    solver.setup(problem, np.random.default_rng(8))
    solver.run(6)
    _, obs = solver.best()
    assert math.isfinite(obs.loss)


@z_names
def test_z_clone_and_params(make_solver, name):
    solver = make_solver("z", name)
    params = solver.get_params()
    assert set(FAST_PARAMS.get(f"z:{name}", {})) <= set(params)
    problem, _ = make_z_problem((3, 2))
    solver.setup(problem, np.random.default_rng(0))
    solver.run(3)
    copy = clone(solver)
    assert type(copy) is type(solver) and copy is not solver
    assert copy.get_params() == params
    assert not hasattr(copy, "problem_") and not hasattr(copy, "trials_")
    with pytest.raises(ValueError, match=r"Invalid parameter 'no_such_param'"):
        solver.set_params(no_such_param=1)
    assert type(solver).name == name and solver.kind == "z"


def test_every_registered_solver_is_covered():
    """FAST_PARAMS / EXPECTED_XFAILS only name registered solvers (no stale entries)."""
    registered = {f"theta:{n}" for n in THETA_NAMES} | {f"z:{n}" for n in Z_NAMES}
    assert set(FAST_PARAMS) <= registered
    assert {k.split("::")[0] for k in EXPECTED_XFAILS} <= registered
    assert THETA_NAMES and Z_NAMES


@z_names
@pytest.mark.parametrize("fidelity", [None, (0.05, 0.8)])
def test_z_multi_fidelity_asks_stay_in_range(make_solver, name, fidelity):
    """Solvers with ``supports_fidelity`` ask fractions in (0, 1], inside ``problem.fidelity``
    when given, and use partial data on a 1000-row problem."""
    solver = make_solver("z", name)
    if not getattr(solver, "supports_fidelity", False):
        pytest.skip("single-fidelity solver")
    problem, rec = make_z_problem((3, 4, 2), fidelity=fidelity)
    problem.n_train = 1000
    solver.setup(problem, np.random.default_rng(0))
    lo, hi = fidelity or (0.0, 1.0)
    asked = [s.fidelity for s in _drive(solver, problem, 30)]
    assert all(f is not None and 0.0 < f <= 1.0 and lo <= f <= hi for f in asked), asked
    assert min(asked) < hi
