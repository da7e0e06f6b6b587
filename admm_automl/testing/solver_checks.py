"""The ask/tell protocol checks every solver must pass, for this package and for plug-ins,
gated by the capabilities a solver declares (as scikit-learn gates its estimator checks by the
estimator's tags).

Each check takes ``make``, a function returning a fresh solver with cheap settings, and raises
``AssertionError`` (or the solver's own error) when the solver breaks the protocol of
:mod:`admm_automl.solvers.base`. Run every check that applies to a solver with
:func:`check_theta_solver` or :func:`check_z_solver`, or list them with
:func:`yield_solver_checks` and run them one by one, e.g. with pytest (the failing check is then
named in the test id)::

    from admm_automl.testing import yield_solver_checks

    @pytest.mark.parametrize("check", list(yield_solver_checks(MyThetaSolver)),
                             ids=lambda c: c.__name__)
    def test_my_solver(check):
        check(lambda: MyThetaSolver(n_initial_points=3))

**General checks** (every solver; :data:`THETA_CHECKS`, :data:`Z_CHECKS`): asks lie in the unit
box (θ) or are valid choices (z) with fidelities in range; bad observations (NaN, inf, failed,
timed out, out of memory) are accepted; ``run(n)`` makes exactly n new evaluations (cache hits are
free but bounded); the same seed gives the same asks and another seed others; ``tell`` refuses
unknown ids; ``best`` minimises ``problem.augment`` over the history and the trials; ``clone``
and ``get_params``/``set_params`` work; a z-solver's first ask is the first pipeline of the
problem's warm start.

**Capabilities** are class attributes of the solver, read by :func:`solver_capabilities` (an
attribute the class lacks counts as False). Each gates checks that run only when it is declared,
and some gate checks that run only when it is not, so that a declaration is neither missing nor
false (:data:`THETA_CAPABILITY_CHECKS`, :data:`Z_CAPABILITY_CHECKS`):

``supports_batch`` (θ and z) — ``ask`` may be called several times before ``tell``.
    Declared: ``batch_size`` asks in a row, and ``ask_batch(batch_size)``, are valid, with
    distinct ids (θ: distinct points of the box, also once the model is in use), are accepted when told in reverse order, and
    ``run(n)`` hands the problem batches of up to ``problem.batch_size`` suggestions, at least
    one of them larger than one, with n evaluations in all (:func:`check_theta_batch_asks`,
    :func:`check_z_batch_asks`; a z batch may repeat a pipeline: random and Thompson-sampling
    draws are independent and the cache answers repeats). With suggestions pending and trials
    in flight for an earlier step (``problem.in_flight``), ``ask_batch(k)`` repeats none of
    them and nothing twice (:func:`check_theta_batch_with_pending`,
    :func:`check_z_batch_with_pending`). Asynchronous (a problem with
    ``submit``/``collect`` whose answers come back in random order): ``run(n)`` keeps up to
    ``batch_size`` suggestions in flight, never submits one that repeats a suggestion in flight,
    and makes n evaluations (:func:`check_theta_asynchronous`, :func:`check_z_asynchronous`).
    Not declared: ``run`` hands over one suggestion at a time whatever ``batch_size`` is, in
    batches and asynchronously (:func:`check_theta_asks_one_at_a_time`,
    :func:`check_z_asks_one_at_a_time`).
``supports_fidelity`` (z) — suggestions may carry a fidelity (a fraction of the training rows)
    below 1. Declared: the solver does ask partial data on a 1000-row problem, and ``best`` never
    returns a partial-data observation, even where partial-data losses look better (the z-step's
    winner must be a full-data choice: :func:`check_z_fidelity_uses_partial_data`,
    :func:`check_z_fidelity_best_is_full_data`). Not declared: every fidelity is ``None`` or 1
    (:func:`check_z_full_data_only`). θ-problems declare no fidelity range: no θ check.
``keeps_state`` (θ) — the ADMM loop keeps one instance per algorithm selection and calls
    ``update_problem`` when it returns to it, so the solver must re-score what it keeps with the
    new ``problem.augment`` (the duals changed). Declared: on a problem whose penalty centre
    moves from one corner of the box to the other (which reverses the order of the earlier
    observations by augmented value), after ``update_problem`` ``best`` is the best observation
    under the new duals and the next asks lie nearer to it, on average, than to the best under
    the old ones; a solver that also needs a training length is checked on a learning-curve
    problem too (:func:`check_theta_keeps_state_rescores`). (A z-solver is always kept by the
    ADMM loop and given ``update_problem``; ``keeps_state`` is a θ-solver capability only.)
``needs_training_length`` (θ) — the solver chooses how long an iterative learner trains
    (``Suggestion.iterations``, e.g. ``bapi``, Belakaria, Doppa, Fusi and Sheth 2022) and drives
    its own loop. Declared, on the learning-curve problem of :func:`make_curve_problem`: every
    suggestion of a point with a training length carries an integer ``iterations`` in
    ``[t_min, t_max]`` of its :class:`~admm_automl.space.Iterations`, some below ``t_max``, and a
    point without one (JOPT's joint space) carries none; ``run`` evaluates at least once and
    ``best`` minimises ``augment`` (:func:`check_theta_training_lengths_in_range`); no length
    falls below a ``t_min`` above a fifth of ``t_max``
    (:func:`check_theta_training_lengths_respect_t_min`); the same seed gives the same
    configurations and lengths (:func:`check_theta_training_length_reproducible`); a problem
    without a training length is refused with an error that names it, or solved without lengths
    as a plain θ-problem, exactly n evaluations (:func:`check_theta_without_training_length`;
    ``bapi`` documents the latter: it is then ``bo``). Not declared: no suggestion carries
    ``iterations``, even where the learner has a training length
    (:func:`check_theta_sets_no_training_length`).
``supports_cheap_proposals`` (θ and z) — :meth:`~admm_automl.solvers.base.BaseSolver.ask_cheap`
    works, so that an overhead-aware ``run`` can add cheap proposals to a batch. Declared:
    ``ask_cheap(n)`` returns n valid suggestions marked ``cheap`` with new ids without evaluating
    anything, ``tell`` accepts them, the same seed gives the same ones, and an overhead-aware
    ``run(n)`` (``problem.overhead_aware``) still makes exactly n evaluations of valid
    suggestions (:func:`check_theta_cheap_proposals`, :func:`check_z_cheap_proposals`). Not
    declared: ``ask_cheap`` is refused and an overhead-aware run asks nothing cheap
    (:func:`check_theta_no_cheap_proposals`, :func:`check_z_no_cheap_proposals`).

The general checks use problems without a training length, so a solver with
``needs_training_length`` must accept them (or every general check fails on it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..exceptions import InvalidParameterError, SolverError, UnknownSuggestionError
from ..records import Observation, Status, Suggestion
from .problems import BAD_KINDS, make_curve_problem, make_theta_problem, make_z_problem

Make = Callable[[], Any]
Check = Callable[[Make], None]


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
    """Fidelities stay in (0, 1] and inside ``problem.fidelity`` (that a multi-fidelity solver
    does use partial data is :func:`check_z_fidelity_uses_partial_data`, gated on
    ``supports_fidelity``)."""
    for fidelity in (None, (0.05, 0.8)):
        solver = make()
        problem, _ = make_z_problem((3, 4, 2), fidelity=fidelity, n_train=1000)
        solver.setup(problem, np.random.default_rng(0))
        for s in _drive(solver, problem, 30):
            _assert_z(s, (3, 4, 2), fidelity)


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


def check_z_starts_from_the_warm_start(make: Make) -> None:
    """With ``problem.warm_start`` (pipelines found good elsewhere), the first ask is its first
    pipeline, with or without fidelities; a warm start that is done (empty) changes nothing
    else: the asks stay valid."""
    for fidelity in (None, (0.05, 1.0)):
        solver = make()
        problem, log = make_z_problem((3, 4, 2), fidelity=fidelity, n_train=1000)
        warm = [(2, 3, 1), (0, 1, 0)]
        problem.warm_start = lambda: [z for z in warm if z not in {c for c, _ in log.configs}]
        solver.setup(problem, np.random.default_rng(0))
        asked = _drive(solver, problem, 12)
        assert tuple(asked[0].config) == warm[0], (asked[0].config, warm[0])
        for s in asked:
            _assert_z(s, (3, 4, 2), fidelity)


THETA_CHECKS = (
    check_theta_asks_in_the_unit_box, check_theta_accepts_bad_observations,
    check_theta_all_failed, check_theta_run_counts_new_evaluations, check_theta_reproducible,
    check_theta_tell_unknown_id, check_theta_best, check_theta_params,
)
Z_CHECKS = (
    check_z_asks_are_valid_choices, check_z_fidelity_in_range, check_z_accepts_bad_observations,
    check_z_all_failed, check_z_run_counts_new_evaluations, check_z_reproducible,
    check_z_tell_unknown_id, check_z_best, check_z_params, check_z_starts_from_the_warm_start,
)


# ------------------------------------------------------------------------------- capabilities
@dataclass(frozen=True)
class SolverCapabilities:
    """What a solver declares beyond the protocol, read from its class attributes (the analogue
    of scikit-learn's estimator tags): the checks that apply to it are chosen from these."""

    kind: str
    supports_batch: bool = False
    supports_fidelity: bool = False
    keeps_state: bool = False
    supports_cheap_proposals: bool = False
    needs_training_length: bool = False


#: the capability attributes, in the order of :class:`SolverCapabilities`
CAPABILITIES = tuple(f.name for f in fields(SolverCapabilities) if f.name != "kind")


def solver_capabilities(solver: Any) -> SolverCapabilities:
    """The capabilities that ``solver`` (a class or an instance) declares; an attribute it lacks
    counts as False. Raises ``ValueError`` when its ``kind`` is neither "theta" nor "z"."""
    kind = getattr(solver, "kind", "")
    if kind not in ("theta", "z"):
        raise ValueError(f"{solver!r} is not a solver: kind {kind!r} is neither 'theta' nor 'z'")
    return SolverCapabilities(kind, **{name: bool(getattr(solver, name, False))
                                       for name in CAPABILITIES})


#: how many asks a batch-capable solver makes at once in the checks
BATCH_SIZE = 4


def _spy(problem: Any) -> list[tuple[Suggestion, Observation]]:
    """Wrap ``problem.evaluate`` (in place) to record every ``(suggestion, observation)``."""
    seen: list[tuple[Suggestion, Observation]] = []
    evaluate = problem.evaluate

    def spying(suggestions):
        observations = evaluate(suggestions)
        seen.extend(zip(suggestions, observations))
        return observations

    problem.evaluate = spying
    return seen


def _tell_reversed(solver: Any, problem: Any, batch: list[Suggestion]) -> None:
    observations = problem.evaluate(batch)
    for s, obs in reversed(list(zip(batch, observations))):
        solver.tell(s, obs)


# ---------------------------------------------------------------- supports_batch
def check_theta_batch_asks(make: Make) -> None:
    """``supports_batch``: ``batch_size`` asks before any tell are distinct points of the box
    with distinct ids (in the initial design and once the model is in use), accepted when told in
    reverse order; ``run(n)`` hands the problem batches of up to ``batch_size`` (at least one
    larger than one) and makes n evaluations."""
    from ..solvers.base import DUPLICATE_TOL

    dim = 3

    def check(batch: list[Suggestion]) -> None:
        for s in batch:
            _assert_theta(s, dim)
        X = np.array([np.asarray(s.config, dtype=float) for s in batch])
        gaps = [np.linalg.norm(X[i] - X[j]) for i in range(len(X)) for j in range(i)]
        assert min(gaps) > DUPLICATE_TOL, f"a batch asks one point twice: {X}"

    _check_batch_rounds(make, lambda: make_theta_problem(dim, batch_size=BATCH_SIZE), check)


def _check_batch_rounds(make: Make, make_problem: Callable[[], tuple[Any, Any]],
                        check: Callable[[list[Suggestion]], None]) -> None:
    """Four rounds of ``BATCH_SIZE`` asks before any tell — ``ask`` in a row and
    ``ask_batch(BATCH_SIZE)`` in turn — each batch passing ``check`` with distinct ids, all
    pending, and told in reverse order; then ``run(10)`` on a fresh problem makes 10
    evaluations in batches of up to ``BATCH_SIZE``, at least one larger than one."""
    solver = make()
    problem, _ = make_problem()
    solver.setup(problem, np.random.default_rng(21))
    for round_ in range(4):
        batch = (solver.ask_batch(BATCH_SIZE) if round_ % 2
                 else [solver.ask() for _ in range(BATCH_SIZE)])
        check(batch)
        assert len({s.id for s in batch}) == BATCH_SIZE, [s.id for s in batch]
        assert all(s.id in solver.pending_ for s in batch), "ask_batch left a suggestion unpending"
        _tell_reversed(solver, problem, batch)
        _drive(solver, problem, 3)
    problem, log = make_problem()
    solver = make()
    solver.setup(problem, np.random.default_rng(22))
    solver.run(10)
    assert len(log) == 10, len(log)
    assert 1 < max(log.batches) <= BATCH_SIZE, f"batch sizes {log.batches}"


def check_z_batch_asks(make: Make) -> None:
    """``supports_batch``: ``batch_size`` asks before any tell are valid choices with distinct
    ids, accepted when told in reverse order; ``run(n)`` hands the problem batches of up to
    ``batch_size`` (at least one larger than one) and makes n evaluations. (A batch may repeat a
    pipeline: random and Thompson-sampling draws are independent; the cache answers repeats.)"""
    n_choices = (6, 5, 4)

    def check(batch: list[Suggestion]) -> None:
        for s in batch:
            _assert_z(s, n_choices)

    _check_batch_rounds(make, lambda: make_z_problem(n_choices, batch_size=BATCH_SIZE), check)


def _check_batch_with_pending(make: Make, make_problem: Callable[[], tuple[Any, Any]],
                              warm: int) -> None:
    """``ask_batch(k)`` with suggestions pending and trials in flight for an earlier step
    (``problem.in_flight``): no suggestion of the batch repeats a pending one, one in flight or
    another of the batch, by the solver's identity (what the engine evaluates). The trials in
    flight are the very batch a twin of the solver (same seed, same history) asks, so a solver
    that ignored them would repeat them."""
    def prepared(in_flight: Callable[[], list] | None) -> Any:
        solver = make()
        problem, _ = make_problem()
        problem.in_flight = in_flight
        solver.setup(problem, np.random.default_rng(26))
        _drive(solver, problem, warm)  # past the initial design: the model, if any, is in use
        return solver, problem

    twin, _ = prepared(None)
    flying = [(s.config, s.fidelity) for s in twin.ask_batch(BATCH_SIZE)]
    solver, problem = prepared(lambda: list(flying))
    pending = solver.ask_batch(BATCH_SIZE)
    batch = solver.ask_batch(BATCH_SIZE)
    identity = solver._identity
    seen = {identity(c, f) for c, f in flying}
    assert len({identity(s.config, s.fidelity) for s in pending} | seen) == 2 * BATCH_SIZE, \
        f"a batch repeats a trial in flight: {[s.config for s in pending]} against {flying}"
    seen |= {identity(s.config, s.fidelity) for s in pending}
    for s in batch:
        key = identity(s.config, s.fidelity)
        assert key not in seen, f"a batch with suggestions pending repeats one: {s.config}"
        seen.add(key)
    assert all(s.id in solver.pending_ for s in (*pending, *batch))


def check_theta_batch_with_pending(make: Make) -> None:
    """``supports_batch``: once the model is in use (12 observations), ``ask_batch(k)`` with k
    suggestions pending and k trials in flight for an earlier step repeats none of them and
    no point twice (:func:`_check_batch_with_pending`)."""
    _check_batch_with_pending(make, lambda: make_theta_problem(3, batch_size=BATCH_SIZE), 12)


def check_z_batch_with_pending(make: Make) -> None:
    """``supports_batch``: after 12 pulls, ``ask_batch(k)`` with k suggestions pending and k
    trials in flight for an earlier step repeats none of them and no pipeline twice, among the
    120 of the problem (:func:`_check_batch_with_pending`)."""
    _check_batch_with_pending(make, lambda: make_z_problem((6, 5, 4), batch_size=BATCH_SIZE), 12)


class _InFlight:
    """Makes ``problem`` asynchronous (in place): ``submit`` keeps a suggestion in flight and
    ``collect`` evaluates one of those in flight, picked at random, through the problem's own
    ``evaluate`` (answers come back out of order, as trials of different costs end). Records the
    number in flight after each submit and every submit that repeats a suggestion in flight."""

    def __init__(self, problem: Any, workers: int, seed: int) -> None:
        from ..solvers.base import _identity

        self.rng = np.random.default_rng(seed)
        self.flying: dict[int, Suggestion] = {}
        self.widths: list[int] = []
        self.repeats: list[Any] = []
        self.identity = _identity
        self.evaluate = problem.evaluate
        self.workers = workers
        problem.submit, problem.collect = self.submit, self.collect
        problem.free_workers = lambda: self.workers - len(self.flying)

    def submit(self, suggestion: Suggestion) -> int:
        ident = self.identity(suggestion.config, suggestion.fidelity)
        if any(self.identity(s.config, s.fidelity) == ident for s in self.flying.values()):
            self.repeats.append(suggestion.config)
        ticket = suggestion.id
        self.flying[ticket] = suggestion
        self.widths.append(len(self.flying))
        return ticket

    def collect(self) -> list[tuple[int, Observation]]:
        if not self.flying:
            return []
        ticket = list(self.flying)[int(self.rng.integers(len(self.flying)))]
        (observation,) = self.evaluate([self.flying.pop(ticket)])
        return [(ticket, observation)]


def _check_asynchronous(make: Make, make_problem: Callable[[], tuple[Any, Any]],
                        width: int) -> None:
    solver = make()
    problem, log = make_problem()
    flight = _InFlight(problem, BATCH_SIZE, seed=24)
    solver.setup(problem, np.random.default_rng(24))
    solver.run(12)
    assert len(log) == 12, f"{len(log)} evaluations, not 12"
    # one at a time: a solver that drives its own loop evaluates through ``evaluate`` instead
    widest = max(flight.widths, default=0 if width == 1 else None)
    assert widest is not None and (widest == width if width > 1 else widest <= 1), \
        f"in flight after each submit: {flight.widths}"
    assert not flight.repeats, f"submitted while the same suggestion was in flight: {flight.repeats}"
    # with ``overlap`` a run may end with up to half its evaluations in flight; the next run
    # tells their answers when they come, without counting them among its own evaluations
    solver = make()
    problem, log = make_problem()
    flight = _InFlight(problem, BATCH_SIZE, seed=25)
    problem.overlap = True
    solver.setup(problem, np.random.default_rng(25))
    for run in (1, 2):
        solver.run(12)
        assert len(flight.flying) <= 6, f"{len(flight.flying)} of 12 left in flight"
        assert len(log) == 12 * run - len(flight.flying), \
            f"{len(log)} evaluations after run {run}, {len(flight.flying)} in flight"
        assert len(solver.trials_) == len(log), \
            f"{len(log)} answers, {len(solver.trials_)} told to the solver"
    assert not flight.repeats, f"submitted while the same suggestion was in flight: {flight.repeats}"


def check_theta_asynchronous(make: Make) -> None:
    """``supports_batch``, asynchronously: ``run(12)`` keeps ``batch_size`` suggestions in flight
    while answers come back out of order, never submits a repeat of one in flight, and makes 12
    evaluations; with ``problem.overlap`` it leaves at most 6 in flight and a second ``run(12)``
    tells their answers."""
    _check_asynchronous(make, lambda: make_theta_problem(3, batch_size=BATCH_SIZE), BATCH_SIZE)


def check_z_asynchronous(make: Make) -> None:
    """``supports_batch``, asynchronously: as :func:`check_theta_asynchronous`, on a z-problem."""
    _check_asynchronous(make, lambda: make_z_problem((6, 5, 4), batch_size=BATCH_SIZE),
                        BATCH_SIZE)


def check_theta_asks_one_at_a_time(make: Make) -> None:
    """Without ``supports_batch``: ``run`` hands the problem one suggestion at a time although
    ``batch_size`` is larger (also on a learning-curve problem, for a solver that needs a
    training length and drives its own loop)."""
    solver = make()
    problem, log = make_theta_problem(3, batch_size=BATCH_SIZE)
    solver.setup(problem, np.random.default_rng(23))
    solver.run(8)
    assert len(log) == 8 and set(log.batches) == {1}, f"batch sizes {log.batches}"
    if not solver_capabilities(solver).needs_training_length:
        _check_asynchronous(make, lambda: make_theta_problem(3, batch_size=BATCH_SIZE), 1)
    if solver_capabilities(solver).needs_training_length:
        solver = make()
        problem, log = make_curve_problem(2, batch_size=BATCH_SIZE)
        solver.setup(problem, np.random.default_rng(23))
        solver.run(2)
        assert log.batches and set(log.batches) == {1}, f"batch sizes {log.batches}"


def check_z_asks_one_at_a_time(make: Make) -> None:
    """Without ``supports_batch``: ``run`` hands the problem one suggestion at a time although
    ``batch_size`` is larger."""
    solver = make()
    problem, log = make_z_problem((6, 5, 4), batch_size=BATCH_SIZE)
    solver.setup(problem, np.random.default_rng(23))
    solver.run(8)
    assert len(log) == 8 and set(log.batches) == {1}, f"batch sizes {log.batches}"
    _check_asynchronous(make, lambda: make_z_problem((6, 5, 4), batch_size=BATCH_SIZE), 1)


# ---------------------------------------------------------------- supports_fidelity (z)
def check_z_fidelity_uses_partial_data(make: Make) -> None:
    """``supports_fidelity``: on a 1000-row problem the solver asks less than the top fidelity
    (the whole data, or the top of ``problem.fidelity``)."""
    for fidelity in (None, (0.05, 0.8)):
        solver = make()
        problem, _ = make_z_problem((3, 4, 2), fidelity=fidelity, n_train=1000)
        solver.setup(problem, np.random.default_rng(0))
        asked = _drive(solver, problem, 30)
        hi = fidelity[1] if fidelity else 1.0
        used = [1.0 if s.fidelity is None else s.fidelity for s in asked]
        assert min(used) < hi, f"a multi-fidelity solver never used less than {hi} ({fidelity})"


def check_z_fidelity_best_is_full_data(make: Make) -> None:
    """``supports_fidelity``: ``best`` is ``None`` or a full-data observation (at the top
    fidelity), even where partial-data losses look better (here 0.5·(1 − fidelity) lower): the
    z-step's winner must be a full-data choice, comparable with full-data losses."""
    for fidelity in (None, (0.05, 0.8)):
        solver = make()
        problem, _ = make_z_problem((3, 4, 2), fidelity=fidelity, n_train=1000)
        evaluate = problem.evaluate

        def optimistic(suggestions, evaluate=evaluate):
            return [replace(o, loss=o.loss - 0.5 * (1.0 - o.fidelity)) if o.ok else o
                    for o in evaluate(suggestions)]

        problem.evaluate = optimistic
        solver.setup(problem, np.random.default_rng(1))
        solver.run(30)
        best = solver.best()
        hi = fidelity[1] if fidelity else 1.0
        assert best is None or best[1].fidelity >= hi - 1e-9, (
            f"best() returned an observation at fidelity {best[1].fidelity} < {hi} ({fidelity})")


def check_z_full_data_only(make: Make) -> None:
    """Without ``supports_fidelity``: every suggestion is at full data (fidelity ``None`` or 1),
    also on a problem that allows less."""
    for fidelity in (None, (0.05, 0.8)):
        solver = make()
        problem, _ = make_z_problem((3, 4, 2), fidelity=fidelity, n_train=1000)
        solver.setup(problem, np.random.default_rng(0))
        for s in _drive(solver, problem, 20):
            assert s.fidelity is None or s.fidelity >= 1.0, (
                f"fidelity {s.fidelity} from a solver that does not declare supports_fidelity")


# ---------------------------------------------------------------- keeps_state (θ)
def _keeps_state_scenario(make: Make, with_length: bool) -> None:
    """ADMM back at a selection after the duals moved the penalty centre from (0.2, 0.2) to
    (0.8, 0.8), with a large ρ: the order of the earlier observations by augmented value is
    reversed. The history holds (0.3, 0.3) and (0.7, 0.7), so that the best point under the new
    duals is not yet known (a solver that knows its optimum was evaluated may explore anywhere).
    A learning-curve run costs more: fewer evaluations."""
    dim, old_centre, new_centre, rho = 2, 0.2, 0.8, 50.0
    n_first, n_second = (3, 2) if with_length else (8, 6)
    where = "a learning-curve problem" if with_length else "a plain problem"

    def build(centre):
        if with_length:
            return make_curve_problem(dim, rho=rho, centre=centre)
        return make_theta_problem(dim, rho=rho, centre=centre)

    scratch, _ = build(old_centre)
    corners = [np.full(dim, 0.3), np.full(dim, 0.7)]
    seeds = scratch.evaluate([Suggestion(-1 - i, x) for i, x in enumerate(corners)])
    first, log = build(old_centre)
    first.history = list(zip(corners, seeds))
    told = _spy(first)  # the ADMM loop's history of the selection: every evaluation
    solver = make()
    solver.setup(first, np.random.default_rng(31))
    solver.run(n_first)
    known = list(first.history) + [(s.config, o) for s, o in told]
    old = min(known, key=lambda pair: first.augment(*pair))
    second, _ = build(new_centre)
    second = replace(second, evaluate=first.evaluate, history=known,
                     start=np.array(old[0], dtype=float))
    new = min(known, key=lambda pair: second.augment(*pair))
    assert second.augment(*old) > second.augment(*new) + 1.0  # the scenario: the order flipped
    solver.update_problem(second)
    best = solver.best()
    assert best is not None and second.augment(*best) <= second.augment(*new) + 1e-9, (
        f"on {where}, best() after update_problem has the value "
        f"{None if best is None else second.augment(*best)} under the new duals, not the best "
        f"{second.augment(*new)}: it still ranks by the old ones")
    before = len(told)
    solver.run(n_second)
    asked = np.array([np.asarray(s.config, dtype=float) for s, _ in told[before:]])
    assert len(asked), f"on {where}, run({n_second}) after update_problem evaluated nothing"
    to_new = float(np.mean(np.linalg.norm(asked - np.asarray(new[0], dtype=float), axis=1)))
    to_old = float(np.mean(np.linalg.norm(asked - np.asarray(old[0], dtype=float), axis=1)))
    assert to_new < to_old, (
        f"on {where}, the asks after update_problem lie nearer the best point under the old "
        f"duals (mean distance {to_old:.3f}) than under the new ones ({to_new:.3f})")


def check_theta_keeps_state_rescores(make: Make) -> None:
    """``keeps_state``: after ``update_problem`` with new duals that reverse the order of the
    earlier observations, ``best`` is the best of them under the new ``augment`` and the next
    asks lie nearer to it than to the best under the old duals (on a learning-curve problem too
    for a solver that needs a training length)."""
    _keeps_state_scenario(make, with_length=False)
    if solver_capabilities(make()).needs_training_length:
        _keeps_state_scenario(make, with_length=True)


# ---------------------------------------------------------------- needs_training_length (θ)
def _assert_iterations(s: Suggestion, length: Any) -> None:
    it = s.iterations
    assert it is not None, f"no iterations for a point with a training length: {s}"
    assert isinstance(it, (int, np.integer)) and not isinstance(it, bool), type(it)
    assert length.t_min <= it <= length.t_max, (
        f"iterations={it} outside [t_min, t_max] = [{length.t_min}, {length.t_max}]")


def check_theta_training_lengths_in_range(make: Make) -> None:
    """``needs_training_length``: every suggestion of a point with a training length carries an
    integer ``iterations`` in ``[t_min, t_max]``, some below ``t_max`` (the solver chooses
    lengths); where some points have none (JOPT's joint space: here those with x_0 < 0.5), they
    carry none; ``run`` evaluates at least once and ``best`` minimises ``augment``."""
    for no_length in (None, lambda x: x[0] < 0.5):
        solver = make()
        problem, _ = make_curve_problem(2, t_max=100, no_length=no_length)
        told = _spy(problem)
        solver.setup(problem, np.random.default_rng(41))
        solver.run(4)
        assert told, "run(4) evaluated nothing"
        for s, _ in told:
            _assert_theta(s, 2)
            length = problem.training_length(np.asarray(s.config, dtype=float))
            if length is None:
                assert s.iterations is None, (
                    f"iterations={s.iterations} for a point without a training length")
            else:
                _assert_iterations(s, length)
        if no_length is None:
            assert min(s.iterations for s, _ in told) < 100, "every training went to t_max"
        best = solver.best()
        values = [problem.augment(s.config, o) for s, o in told]
        assert best is not None and problem.augment(*best) == min(values), (
            "best() does not minimise augment over the evaluations")


def check_theta_training_lengths_respect_t_min(make: Make) -> None:
    """``needs_training_length``: no ``iterations`` below the learner's ``t_min`` (the smallest
    training length its :class:`~admm_automl.space.Iterations` declares), here 40 of 100: above a
    fifth of ``t_max``, so a first step of a fixed fraction of ``t_max`` would fall below it."""
    solver = make()
    problem, _ = make_curve_problem(2, t_min=40, t_max=100)
    told = _spy(problem)
    solver.setup(problem, np.random.default_rng(42))
    solver.run(3)
    assert told, "run(3) evaluated nothing"
    length = problem.training_length(np.full(2, 0.5))
    for s, _ in told:
        _assert_iterations(s, length)


def _curve_sequence(solver: Any, seed: int) -> list:
    problem, log = make_curve_problem(2)
    solver.setup(problem, np.random.default_rng(seed))
    solver.run(3)
    return [(np.asarray(x).tolist(), t) for x, t in log.configs]


def check_theta_training_length_reproducible(make: Make) -> None:
    """``needs_training_length``: on a learning-curve problem the same seed gives the same
    configurations and lengths, another seed others, and ``setup`` restarts."""
    a, b, c = (_curve_sequence(make(), s) for s in (123, 123, 124))
    assert a == b, "the same seed gave different configurations or lengths"
    assert a != c, "a different seed gave the same configurations and lengths"
    solver = make()
    _curve_sequence(solver, 5)
    assert _curve_sequence(solver, 123) == a, "setup() did not restart the solver"


def check_theta_without_training_length(make: Make) -> None:
    """``needs_training_length``, on a problem without one: refused at ``setup`` or ``run`` with
    an ``InvalidParameterError`` or ``SolverError`` that names the training length, before any
    evaluation; or solved as a plain θ-problem: exactly n evaluations, none with ``iterations``."""
    solver = make()
    problem, log = make_theta_problem(3)
    told = _spy(problem)
    try:
        solver.setup(problem, np.random.default_rng(43))
        solver.run(6)
    except (InvalidParameterError, SolverError) as err:
        assert "training length" in str(err), f"the refusal does not say why: {err}"
        assert len(log) == 0, f"refused after {len(log)} evaluations"
        return
    assert len(log) == 6, len(log)
    assert all(s.iterations is None for s, _ in told), "iterations on a problem without lengths"


def check_theta_sets_no_training_length(make: Make) -> None:
    """Without ``needs_training_length``: no suggestion carries ``iterations``, even where the
    learner has a training length (it is trained as configured)."""
    solver = make()
    problem, log = make_curve_problem(2)
    told = _spy(problem)
    solver.setup(problem, np.random.default_rng(44))
    solver.run(5)
    assert len(log) == 5, len(log)
    chosen = [s.iterations for s, _ in told if s.iterations is not None]
    assert not chosen, (f"iterations {chosen} from a solver that does not declare "
                        "needs_training_length")


# ---------------------------------------------------------------- supports_cheap_proposals
def _check_cheap(make: Make, build: Callable[[], Any], valid: Callable[[Suggestion], None]) -> None:
    def cheap_after(seed):
        solver = make()
        problem, log = build()
        solver.setup(problem, np.random.default_rng(seed))
        asked = _drive(solver, problem, 5)
        n_before = len(log)
        cheap = solver.ask_cheap(6)
        assert len(log) == n_before, "ask_cheap evaluated"
        assert len(cheap) == 6, len(cheap)
        for s in cheap:
            assert s.cheap, f"a suggestion of ask_cheap is not marked cheap: {s}"
            valid(s)
        ids = [s.id for s in cheap]
        assert len(set(ids)) == 6 and not set(ids) & {s.id for s in asked}, ids
        assert solver.ask_cheap(0) == []
        _tell_reversed(solver, problem, cheap)
        valid(solver.ask())
        return [np.asarray(s.config).tolist() for s in cheap]

    assert cheap_after(51) == cheap_after(51), "the same seed gave other cheap suggestions"
    solver = make()
    problem, log = build()
    problem.overhead_aware = True
    told = _spy(problem)
    solver.setup(problem, np.random.default_rng(52))
    solver.run(12)
    assert len(log) == 12, f"an overhead-aware run(12) made {len(log)} evaluations"
    for s, _ in told:
        valid(s)


def _check_no_cheap(make: Make, build: Callable[[], Any]) -> None:
    solver = make()
    problem, log = build()
    problem.overhead_aware = True
    told = _spy(problem)
    solver.setup(problem, np.random.default_rng(53))
    _raises(SolverError, "cheap", lambda: solver.ask_cheap(3))
    solver.run(8)
    assert len(log) == 8, len(log)
    assert not any(s.cheap for s, _ in told), "cheap suggestions from a solver that does not " \
        "declare supports_cheap_proposals"


def check_theta_cheap_proposals(make: Make) -> None:
    """``supports_cheap_proposals``: ``ask_cheap(n)`` returns n suggestions of the box marked
    ``cheap``, with new distinct ids, without evaluating; ``tell`` accepts them; the same seed
    gives the same ones; an overhead-aware ``run(n)`` makes exactly n evaluations of valid
    suggestions."""
    _check_cheap(make, lambda: make_theta_problem(3), lambda s: _assert_theta(s, 3))


def check_z_cheap_proposals(make: Make) -> None:
    """``supports_cheap_proposals``: as :func:`check_theta_cheap_proposals`, with valid
    choices."""
    _check_cheap(make, lambda: make_z_problem((6, 5, 4)), lambda s: _assert_z(s, (6, 5, 4)))


def check_theta_no_cheap_proposals(make: Make) -> None:
    """Without ``supports_cheap_proposals``: ``ask_cheap`` is refused (``SolverError``) and an
    overhead-aware run asks nothing cheap."""
    _check_no_cheap(make, lambda: make_theta_problem(3))


def check_z_no_cheap_proposals(make: Make) -> None:
    """Without ``supports_cheap_proposals``: as :func:`check_theta_no_cheap_proposals`."""
    _check_no_cheap(make, lambda: make_z_problem((6, 5, 4)))


# ---------------------------------------------------------------- gating
#: capability → (checks for the θ-solvers that declare it, checks for those that do not)
THETA_CAPABILITY_CHECKS: dict[str, tuple[tuple[Check, ...], tuple[Check, ...]]] = {
    "supports_batch": ((check_theta_batch_asks, check_theta_batch_with_pending,
                        check_theta_asynchronous),
                       (check_theta_asks_one_at_a_time,)),
    "keeps_state": ((check_theta_keeps_state_rescores,), ()),
    "needs_training_length": (
        (check_theta_training_lengths_in_range, check_theta_training_lengths_respect_t_min,
         check_theta_training_length_reproducible, check_theta_without_training_length),
        (check_theta_sets_no_training_length,),
    ),
    "supports_cheap_proposals": ((check_theta_cheap_proposals,),
                                 (check_theta_no_cheap_proposals,)),
}
#: capability → (checks for the z-solvers that declare it, checks for those that do not)
Z_CAPABILITY_CHECKS: dict[str, tuple[tuple[Check, ...], tuple[Check, ...]]] = {
    "supports_batch": ((check_z_batch_asks, check_z_batch_with_pending, check_z_asynchronous),
                       (check_z_asks_one_at_a_time,)),
    "supports_fidelity": ((check_z_fidelity_uses_partial_data, check_z_fidelity_best_is_full_data),
                          (check_z_full_data_only,)),
    "supports_cheap_proposals": ((check_z_cheap_proposals,), (check_z_no_cheap_proposals,)),
}


def yield_solver_checks(solver: Any) -> Iterator[Check]:
    """Every check that applies to ``solver`` (a class or an instance), the way scikit-learn's
    ``_yield_all_checks`` chooses estimator checks by tags: the general checks of its kind, then,
    per capability, the checks for solvers that declare it or those for solvers that do not."""
    caps = solver_capabilities(solver)
    general, gated = ((THETA_CHECKS, THETA_CAPABILITY_CHECKS) if caps.kind == "theta"
                      else (Z_CHECKS, Z_CAPABILITY_CHECKS))
    yield from general
    for capability, (declared, undeclared) in gated.items():
        yield from declared if getattr(caps, capability) else undeclared


def general_theta_solvers() -> list[str]:
    """Names of the registered θ-solvers that run on any space: all but those that need a
    training length (``needs_training_length``, such as ``bapi``), which are refused on a space
    without one."""
    from ..solvers import THETA_SOLVERS

    return [name for name in THETA_SOLVERS.names()
            if not getattr(THETA_SOLVERS.get(name), "needs_training_length", False)]


def _check_solver(make: Make, kind: str) -> None:
    caps = solver_capabilities(make())
    assert caps.kind == kind, f"a {caps.kind}-solver given to check_{kind}_solver"
    for check in yield_solver_checks(make()):
        check(make)


def check_theta_solver(make: Make) -> None:
    """Run every check that applies to the θ-solvers ``make()`` returns
    (:func:`yield_solver_checks`)."""
    _check_solver(make, "theta")


def check_z_solver(make: Make) -> None:
    """Run every check that applies to the z-solvers ``make()`` returns
    (:func:`yield_solver_checks`)."""
    _check_solver(make, "z")
