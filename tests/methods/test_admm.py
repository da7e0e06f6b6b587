"""The ADMM loop (admm.py) on synthetic problems: no scikit-learn, milliseconds per run."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from admm_automl.methods.driver import Schedule
from admm_automl.methods.admm import ADMMOptimizer
from admm_automl.exceptions import InvalidParameterError
from admm_automl.records import Observation, Status
from admm_automl.solvers import THETA_SOLVERS, Z_SOLVERS
from admm_automl.solvers.theta.random import RandomThetaSolver
from admm_automl.space import space_from_dict
from admm_automl.testing import SYNTHETIC, synthetic_loss

ENC = SYNTHETIC.encoding
DISC = np.flatnonzero(ENC.discrete)


def test_schedule_fixed_and_adaptive():
    assert [Schedule(16, 0, 128)(t) for t in range(3)] == [16, 16, 16]
    assert [Schedule(16, 16, 128)(t) for t in range(9)] == [16, 32, 48, 64, 80, 96, 112, 128, 128]
    assert [Schedule(16, 8, 40)(t) for t in range(5)] == [16, 24, 32, 40, 40]
    with pytest.raises(InvalidParameterError, match="maximum >= start"):
        Schedule(32, 8, 16)
    with pytest.raises(InvalidParameterError, match="start >= 1"):
        Schedule(0, 8, 16)


def test_first_evaluation_is_the_initial_pipeline_at_its_defaults(make_engine, make_optimizer):
    engine = make_engine()
    make_optimizer(engine=engine, max_evals=5).run()
    z, theta, _, phase = engine.calls[0]
    assert phase == "initial" and z == ENC.initial_z == (0, 0)
    assert SYNTHETIC.decode(z, theta) == {"prep": "none", "model": "a", "model__n": 5,
                                          "model__c": "x"}


@pytest.mark.parametrize("rho", [1.0, 0.5, 3.0])
def test_delta_projection_and_dual_update_follow_the_formulas(make_optimizer, rho):
    result = make_optimizer(rho=rho, max_evals=80).run()
    assert len(result.states) >= 3
    lam_prev = np.zeros(len(DISC))
    for state in result.states:
        theta_d = state.theta[DISC]
        expected_delta = ENC.project(theta_d + lam_prev / rho, DISC)
        np.testing.assert_array_equal(state.delta, expected_delta)
        np.testing.assert_allclose(state.lam, lam_prev + rho * (theta_d - expected_delta))
        np.testing.assert_array_equal(state.delta, ENC.project(state.delta, DISC))  # admissible
        lam_prev = state.lam


def test_inactive_discrete_coordinates_take_the_closed_form(make_optimizer):
    rho = 2.0
    result = make_optimizer(rho=rho, max_evals=80).run()
    z_prev, delta_prev, lam_prev = ENC.initial_z, ENC.initial_theta[DISC], np.zeros(len(DISC))
    for state in result.states:
        inactive = np.setdiff1d(DISC, ENC.active(z_prev))
        pos = np.searchsorted(DISC, inactive)
        expected = np.clip(delta_prev[pos] - lam_prev[pos] / rho, 0.0, 1.0)
        np.testing.assert_allclose(state.theta[inactive], expected)
        z_prev, delta_prev, lam_prev = state.z, state.delta, state.lam


def test_the_theta_step_returns_its_winner_as_the_current_observation(make_engine, make_optimizer):
    """After each iteration the state's observation is the one of (z, θ) itself: equal to what
    the engine says of that pipeline."""
    engine = make_engine()
    result = make_optimizer(engine=engine, max_evals=80).run()
    assert len(result.states) > 1  # one per θ-step: the loop below checks something
    for state in result.states:
        assert state.current is not None
        assert state.current.loss == pytest.approx(synthetic_loss(SYNTHETIC.decode(
            state.z, ENC.project(state.theta))))


def _run_recording_theta_problems(make_engine, rho=1.0, max_evals=120):
    """An ADMM run (random θ- and z-solvers) whose θ-solver records the sub-problem of every
    θ-step (one fresh solver per θ-step: ``random`` keeps no state)."""
    seen = []

    class Recording(RandomThetaSolver):
        def _setup(self):
            seen.append(self.problem_)

    result = ADMMOptimizer(ENC, make_engine(), Recording, lambda: Z_SOLVERS.create("random"),
                           rho=rho, max_evals=max_evals, seed=0,
                           schedule=Schedule(4, 0, 4)).run()
    return result, seen


def _tuned_z(result, t):
    """The selection the θ-step of iteration t tuned (its θ-phase evaluations)."""
    (z,) = {e.z for e in result.evaluated if e.phase == "theta" and e.iteration == t}
    return z


def test_theta_min_penalises_the_distance_to_delta_minus_lambda_over_rho(make_engine):
    """Algorithm 1 of Liu et al. (2020), θ-min: the sub-problem value is
    f̃ + (ρ/2)‖θ̃^d − b‖² with b = δ^(t) − λ^(t)/ρ on the active discrete coordinates (the
    iterate before iteration t; δ^(0) the initial point, λ^(0) = 0)."""
    rho = 2.0
    result, seen = _run_recording_theta_problems(make_engine, rho=rho)
    theta0 = ENC.project(ENC.initial_theta)
    before = [(theta0[DISC], np.zeros(len(DISC)))] + [(s.delta, s.lam) for s in result.states]
    assert len(result.states) >= 5
    assert any(np.any(lam != 0) for _, lam in before[: len(seen)])  # else b = δ would pass
    rng = np.random.default_rng(0)
    for problem, (delta, lam) in zip(seen, before):
        active = np.array([ENC.theta_names.index(n) for n in problem.names])
        b = (delta - lam / rho)[np.searchsorted(DISC, active[problem.discrete])]
        x = rng.uniform(size=problem.dim)
        expected = 0.5 * rho * float(np.sum((x[problem.discrete] - b) ** 2))
        assert problem.penalty(x) == pytest.approx(expected)
        assert problem.augment(x, Observation(loss=0.25)) == pytest.approx(0.25 + expected)


def test_z_min_scores_every_pipeline_at_the_theta_of_its_iteration(make_engine, make_optimizer):
    """Algorithm 1, z-min: argmin over z of f̃(z, θ^(t+1)). Every pull of iteration t is
    evaluated at the θ the θ-step left, the whole vector: the winner for the algorithms it tuned,
    and the other algorithms' continuous hyperparameters as earlier iterations left them."""
    result = make_optimizer(engine=make_engine(), max_evals=120, z="cmab").run()
    done = len(result.states)
    pulls = [e for e in result.evaluated if e.phase == "z" and e.iteration < done]
    assert len({e.iteration for e in pulls}) >= 5
    for e in pulls:
        np.testing.assert_array_equal(e.theta, result.states[e.iteration].theta)
    continuous = np.flatnonzero(~ENC.discrete)
    assert any(not np.array_equal(s.theta, ENC.project(ENC.initial_theta))
               for s in result.states)
    for t in range(1, done):
        kept = np.setdiff1d(continuous, ENC.active(_tuned_z(result, t)))
        np.testing.assert_array_equal(result.states[t].theta[kept],
                                      result.states[t - 1].theta[kept])


def test_theta_min_is_warm_started_with_every_earlier_observation_of_its_selection(make_engine):
    """The θ-solver of a later θ-step on the same selection z gets every earlier θ-step
    observation of z, the initial one and the z-steps' new full-data ones of z as its history,
    so BO goes on from what it has learnt instead of a fresh initial design."""
    result, seen = _run_recording_theta_problems(make_engine)
    repeated = 0
    for t, problem in enumerate(seen[: len(result.states)]):
        z = _tuned_z(result, t)
        active = ENC.active(z)
        earlier = [e for e in result.evaluated if e.z == z and (
            (e.phase == "theta" and e.iteration < t)
            or (e.phase == "z" and e.iteration < t and not e.observation.cached
                and e.observation.fidelity >= 1.0)
            or (e.phase == "initial" and not e.observation.cached))]
        repeated += bool(earlier)
        assert len(problem.history) == len(earlier)
        for (x, obs), e in zip(problem.history, earlier):
            np.testing.assert_array_equal(x, e.theta[active])
            assert obs.loss == e.observation.loss
    assert repeated >= 3


#: the best pipeline (naive Bayes) has no hyperparameters; logistic regression has C
NB_OR_LR = space_from_dict({"name": "nb_or_lr", "modules": [
    {"name": "scaler", "choices": [
        {"name": "none"}, {"name": "standard", "class": "sklearn.preprocessing.StandardScaler"}]},
    {"name": "estimator", "choices": [
        {"name": "nb", "class": "sklearn.naive_bayes.GaussianNB"},
        {"name": "lr", "class": "sklearn.linear_model.LogisticRegression", "hyperparameters": {
            "C": {"type": "float", "low": 0.01, "high": 100.0, "log": True, "default": 1.0}}}]}],
    "initial": {"classification": {"scaler": "none", "estimator": "nb"}}}).for_task(
    "classification")


@pytest.mark.parametrize("theta,z", [("bo", "cmab"), ("random", "random")])
def test_an_incumbent_without_hyperparameters_does_not_end_the_search(make_engine, make_optimizer,
                                                                     theta, z):
    """With naive Bayes best, the θ-step tunes the best selection that has hyperparameters; before,
    the z-step with θ fixed ran out of new points and the run ended "exhausted" after 3 of 30."""
    def loss(config):
        return 0.1 if config["estimator"] == "nb" else 0.5 + 0.001 * config["estimator__C"]

    engine = make_engine(NB_OR_LR, loss=loss)
    result = make_optimizer(engine=engine, space=NB_OR_LR, theta=theta, z=z, max_evals=30).run()
    assert (result.stop_reason, result.n_evals) == ("max_evals", 30)
    assert result.incumbent.observation.loss == 0.1  # naive Bayes stays the best
    for state in result.states:  # the state's observation stays the one of its own z
        assert state.current.loss == pytest.approx(loss(NB_OR_LR.decode(
            state.z, NB_OR_LR.encoding.project(state.theta))))


def test_trace_rows_are_computed_from_the_state(make_optimizer):
    result = make_optimizer(max_evals=60).run()
    for row, state in zip(result.trace, result.states):
        assert row["primal_residual"] == pytest.approx(np.linalg.norm(state.theta[DISC] -
                                                                      state.delta))
        assert row["lambda_norm"] == pytest.approx(np.linalg.norm(state.lam))
        assert row["rho"] == 1.0
    assert [r["iteration"] for r in result.trace] == list(range(len(result.trace)))
    best = [r["best_loss"] for r in result.trace]
    assert best == sorted(best, reverse=True)  # the incumbent never gets worse


@pytest.mark.parametrize("budget", [1, 7, 33])
def test_max_evals_is_exact(make_engine, make_optimizer, budget):
    engine = make_engine()
    result = make_optimizer(engine=engine, max_evals=budget).run()
    assert result.n_evals == budget == len(engine.calls)
    assert result.stop_reason == "max_evals"


def test_cache_hits_do_not_use_the_budget(make_engine, make_optimizer):
    engine = make_engine()
    result = make_optimizer(engine=engine, max_evals=40).run()
    hits = [e for e in result.evaluated if e.observation.cached]
    assert hits, "random z-min on a 6-pipeline space must repeat itself"
    assert len(engine.calls) == 40 == len(result.evaluated) - len(hits)


def test_each_sub_problem_makes_its_new_evaluations(make_engine, make_optimizer):
    """run(n) means n new evaluations for every solver: with I = 5 the first iteration's θ-step
    and z-step each make 5 (the 6-pipeline space has enough for the first z-step)."""
    engine = make_engine()
    make_optimizer(engine=engine, max_evals=11, schedule=Schedule(5, 0, 5), z="cmab").run()
    phases = [c[3] for c in engine.calls]
    assert phases == ["initial"] + ["theta"] * 5 + ["z"] * 5


def test_time_budget_never_starts_an_evaluation_that_cannot_finish(make_engine, make_optimizer,
                                                                   fake_clock):
    engine = make_engine(duration=1.0, clock=fake_clock)
    result = make_optimizer(engine=engine, max_evals=None, time_budget=10.5,
                            clock=fake_clock).run()
    assert result.stop_reason == "time_budget"
    assert len(engine.calls) == 10  # at 10 s, 0.5 s are left and every evaluation takes 1 s
    assert fake_clock.now <= 10.5
    assert all(t is not None and t > 0 for t in engine.time_left_seen)


def test_time_budget_keeps_back_the_reserve_for_after_the_run(make_engine, make_optimizer,
                                                              fake_clock):
    engine = make_engine(duration=1.0, clock=fake_clock)
    reserve = lambda: 3.0  # noqa: E731  (the estimator's refit, say)
    result = make_optimizer(engine=engine, max_evals=None, time_budget=10.5, reserve=reserve,
                            clock=fake_clock).run()
    assert result.stop_reason == "time_budget"
    assert len(engine.calls) == 7  # at 7 s, 0.5 s are left before the 3 s kept back
    assert fake_clock.now <= 7.5
    assert max(engine.time_left_seen) <= 10.5 - 3.0


def test_incumbent_is_the_best_over_all_evaluations(make_optimizer):
    result = make_optimizer(max_evals=70).run()
    losses = [e.observation.loss for e in result.evaluated]
    assert result.incumbent.observation.loss == min(losses)


def test_the_recorders_incumbent_is_the_first_best_by_rank_at_every_record():
    """Observations feasible or not, failed, on a subsample, answered again from the cache: after
    each the incumbent is the first full-data one of the least rank (the rank of the incumbent is
    kept between records, and read again when someone else set the incumbent)."""
    from types import SimpleNamespace

    from admm_automl.constraints.ranking import Constraints
    from admm_automl.clock import Deadline
    from admm_automl.methods.driver import Budget, Recorder

    rng = np.random.default_rng(0)
    observations = [
        Observation(float(rng.choice([0.1, 0.2, 0.3, 0.5])),
                    Status.OK if rng.random() < 0.8 else Status.FAILED,
                    constraints={"size": float(rng.uniform(0, 2))},
                    fidelity=1.0 if rng.random() < 0.8 else 0.5, cached=bool(rng.random() < 0.3))
        for _ in range(300)]
    # a worse one than the incumbent of the first 150: a failed evaluation at full data
    outside = next(i for i, o in enumerate(observations[:150])
                   if o.fidelity >= 1.0 and not o.ok)
    feed = iter(observations)
    constraints = Constraints([SimpleNamespace(key="size", threshold=1.0, sense="<=")])
    recorder = Recorder(ENC, lambda requests, **kw: [next(feed) for _ in requests],
                        Budget(None, Deadline(1e9)), constraints)
    z = tuple(0 for _ in ENC.module_names)
    point = (z, ENC.project(np.zeros(len(ENC.discrete))), 1.0)
    for i in range(len(observations)):
        if i == 150:  # an incumbent set from outside is ranked afresh
            recorder.incumbent = recorder.evaluated[outside]
        recorder.evaluate([point], "z")
        full = [e for e in recorder.evaluated[(150 if i >= 150 else 0):]
                if e.observation.fidelity >= 1.0]
        if i >= 150:
            full = [recorder.evaluated[outside], *full]
        want = min(full, key=lambda e: constraints.rank(e.observation), default=None)
        assert recorder.incumbent is want, i


def test_failed_observations_do_not_stop_the_run(make_engine, make_optimizer):
    engine = make_engine(loss=lambda c: 1.0 if c["model"] == "c" else synthetic_loss(c))

    def failing(requests, time_left=None, tags=None):
        out = engine(requests, time_left, tags)
        return [replace(o, status=Status.FAILED) if o.loss == 1.0 else o for o in out]

    result = make_optimizer(engine=failing, max_evals=50).run()
    assert result.n_evals == 50
    assert result.incumbent.observation.ok
    assert any(not e.observation.ok for e in result.evaluated)


def test_same_seed_same_history_and_different_seed_differs(make_engine, make_optimizer):
    def history(seed):
        engine = make_engine()
        make_optimizer(engine=engine, max_evals=50, seed=seed).run()
        return [(z, tuple(np.round(t, 12)), p) for z, t, _, p in engine.calls]

    assert history(3) == history(3)
    assert history(3) != history(4)


def test_run_twice_gives_the_same_result(make_engine, make_optimizer):
    """The run state lives in the run, not in the optimiser: a second run on a fresh black box
    repeats the first."""
    engine = make_engine()
    optimizer = make_optimizer(engine=engine, max_evals=30)
    first = optimizer.run()
    calls, engine.calls, engine.cache = engine.calls, [], {}
    second = optimizer.run()
    assert [c[0] for c in calls] == [c[0] for c in engine.calls]
    assert [e.observation.loss for e in first.evaluated] == [
        e.observation.loss for e in second.evaluated]


@pytest.mark.parametrize("seed", range(5))
def test_random_solvers_find_the_best_pipeline_of_a_toy_problem(make_optimizer, seed):
    result = make_optimizer(max_evals=300, seed=seed, schedule=Schedule(8, 8, 32)).run()
    best = SYNTHETIC.decode(result.incumbent.z, result.incumbent.theta)
    assert (best["prep"], best["model"]) == ("p", "b")
    assert best["prep__k"] == 4


def test_an_exhausted_space_stops_the_run():
    space = space_from_dict({"name": "finite", "modules": [
        {"name": "m", "choices": [{"name": "none"}, {"name": "a", "class": "f.A"}]},
        {"name": "e", "choices": [{"name": "b", "class": "f.B"}, {"name": "c", "class": "f.C"}]},
    ]})
    calls = []

    def engine(requests, time_left=None, tags=None):
        out = []
        for r in requests:
            out.append(Observation(loss=0.1 * sum(r.z), cached=r.z in calls))
            calls.append(r.z)
        return out

    result = ADMMOptimizer(
        space.encoding, engine, lambda: THETA_SOLVERS.create("random"),
        lambda: Z_SOLVERS.create("random"), max_evals=1000, seed=0, schedule=Schedule(4, 0, 4),
    ).run()
    assert result.stop_reason == "exhausted"
    assert result.n_evals == 4


def test_callback_can_stop_the_run(make_optimizer):
    seen = []
    result = make_optimizer(max_evals=500,
                            callback=lambda row: seen.append(row) or len(seen) == 2).run()
    assert result.stop_reason == "callback"
    assert len(result.trace) == 2


def test_invalid_settings_are_rejected(make_optimizer):
    with pytest.raises(InvalidParameterError, match="rho must be > 0"):
        make_optimizer(rho=0.0)
    with pytest.raises(InvalidParameterError, match="max_evals or time_budget"):
        make_optimizer(max_evals=None)


@pytest.mark.parametrize("module", ["admm_automl.methods.admm", "admm_automl.methods.baselines",
                                    "admm_automl.methods.driver", "admm_automl.methods.lagrangian",
                                    "admm_automl.constraints.ranking"])
def test_the_optimisers_do_not_import_scikit_learn(module):
    code = f"import sys, {module}; print('sklearn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_batch_capable_solvers_ask_one_batch_per_worker_round(make_engine, make_optimizer):
    sizes = []
    engine = make_engine()

    def batched(requests, time_left=None, tags=None):
        sizes.append((tags["phase"], len(requests)))
        return engine(requests, time_left, tags)

    result = make_optimizer(engine=batched, max_evals=40, batch_size=3,
                            schedule=Schedule(7, 0, 7)).run()
    assert sizes[0] == ("initial", 1)
    assert [n for _, n in sizes[1:4]] == [3, 3, 1]  # 7 new evaluations: batches of 3, 3 and 1
    assert result.n_evals == 40


@pytest.mark.parametrize("error,time_budget,reason", [
    ("not begun: no worker process is left (3 worker processes in a row died while starting)",
     None, "no_workers"),
    ("not begun: no worker process is left (3 worker processes in a row died while starting)",
     60.0, "no_workers"),
    ("not begun: the time budget ended while it waited for a worker", 60.0, "time_budget"),
])
def test_a_run_left_without_workers_is_not_said_to_have_used_up_its_time_budget(
        error, time_budget, reason):
    """Workers killed over and over leave trials never begun: the run ends for want of workers,
    which stop_reason_ says, not "time_budget" (with max_evals and no time budget at all)."""
    from admm_automl.exceptions import BudgetExhausted
    from admm_automl.clock import Deadline
    from admm_automl.methods.driver import Budget, Recorder
    from admm_automl.constraints.ranking import Constraints

    def engine(requests, time_left=None, tags=None):
        ran = Observation(0.3, Status.OK, duration=1.0)
        cut = Observation(1.0, Status.CANCELLED, error=error, budget_stop=True)
        return [ran, *[cut] * (len(requests) - 1)]

    recorder = Recorder(ENC, engine, Budget(12, Deadline(time_budget)), Constraints())
    z = tuple(0 for _ in ENC.module_names)
    with pytest.raises(BudgetExhausted) as stop:
        recorder.evaluate([(z, ENC.project(np.zeros(len(ENC.discrete))), 1.0)] * 3, "z")
    assert str(stop.value) == reason
    assert recorder.n_evals == 1
