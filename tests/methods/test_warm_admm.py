"""The warm start inside ADMM and the schedule sized to the budget: the z-solver a user names
makes the first z-step, at the start of any budget, and different z-solvers make different
searches. Toy engine and a fake clock: milliseconds per run."""

from __future__ import annotations

import math

import numpy as np
import pytest

from admm_automl.methods.driver import AUTO_SHARE, Schedule
from admm_automl.constraints.ranking import Constraints
from admm_automl.records import Observation, Status
from admm_automl.testing import wide_space, wide_loss

SPACE = wide_space(extra_prep=3, extra_model=6)  # 6 x 8 = 48 pipelines
ENC = SPACE.encoding
#: readable configurations, in the order a portfolio would list them
PORTFOLIO = [
    {"prep": "p", "prep__w": 0.2, "model": "b", "model__lr": 0.01},
    {"prep": "q", "model": "m0"},
    {"prep": "none", "model": "m3"},
    {"prep": "p", "prep__w": 0.9, "model": "b", "model__lr": 0.3},  # the first's pipeline again
    {"prep": "p2", "model": "b", "model__lr": 0.5},  # b's lr held by the first: a θ-step point
    {"prep": "q", "model": "m5"},
]
Z_SOLVERS = ["cmab", "blds", "hyperband", "daub", "bo", "flash", "random"]


def warm_points():
    return [SPACE.encode(c) for c in PORTFOLIO]


class Tagged:
    """A toy engine that keeps the tags of every new evaluation beside it."""

    def __init__(self, engine):
        self.engine, self.log = engine, []

    def __call__(self, requests, time_left=None, tags=None):
        out = self.engine(requests, time_left=time_left, tags=tags)
        self.log += [(r.z, r.fidelity, dict(tags or {})) for r, o in zip(requests, out)
                     if not o.cached]
        return out


def run(make_engine, fake_clock, z_solver, *, budget=60.0, seconds=3.0, theta="bo", **kw):
    """A 60 s ADMM run (the estimator's schedule) whose evaluations take ``seconds`` each."""
    from admm_automl.methods.registry import make_optimizer

    engine = Tagged(make_engine(SPACE, duration=seconds, clock=fake_clock))
    kw.setdefault("warm_start", warm_points())
    result = make_optimizer(
        "admm", ENC, engine, theta_solver=theta, z_solver=z_solver, space=SPACE,
        schedule=Schedule.of("auto", 16, 128), time_budget=budget, clock=fake_clock,
        seed=0, n_train=3000, **kw).run()
    return engine, result


def test_the_schedule_sized_to_the_budget():
    auto = Schedule.of("auto", 16, 128)
    assert auto.share == AUTO_SHARE and auto(0) == 16
    assert auto.capped(16, 19) == 5 and auto.capped(16, 1) == 1 and auto.capped(16, 500) == 16
    assert auto.capped(16, math.inf) == 16
    assert Schedule(16, 16, 128).capped(16, 3) == 16  # a schedule given as numbers: the paper's
    assert Schedule(4, 0, 4, floor=8, share=0.25).capped(4, 2) == 8  # never below the workers


@pytest.mark.parametrize("z_solver", Z_SOLVERS)
def test_the_named_z_solver_makes_the_first_z_step_within_the_first_third(
        make_engine, fake_clock, z_solver):
    """60 s at 3 s an evaluation (20 evaluations): with the paper's schedule as numbers the first
    θ-step (16) would come before any z-step; sized to the budget, the first z-step is the second
    evaluation, made by the solver named, and every later z-step too."""
    engine, _ = run(make_engine, fake_clock, z_solver)
    steps = [(tags["phase"], tags.get("solver")) for _, _, tags in engine.log]
    first_z = next(i for i, (phase, _) in enumerate(steps) if phase == "z")
    assert first_z == 1 and steps[0] == ("initial", None)
    assert {solver for phase, solver in steps if phase == "z"} == {z_solver}
    assert {solver for phase, solver in steps if phase == "theta"} <= {"bo", "warm start"}
    assert sum(phase == "z" for phase, _ in steps) >= 4  # z-steps throughout, not one
    assert sum(phase == "theta" for phase, _ in steps) >= 4


def test_different_z_solvers_make_different_searches(make_engine, fake_clock):
    """At 2 s an evaluation (30 in 60 s), every pair of z-solvers makes different searches
    (at 3 s, bo's first asks after the warm start are its random design, which are random's).
    The θ-steps are random search's: the θ-solver is the same in every run, and bo's asks
    (Gaussian-process fits and the acquisition's optimisation) took nine tenths of the time."""
    from admm_automl.testing import FakeClock

    histories = {}
    for z_solver in Z_SOLVERS:
        engine, _ = run(make_engine, FakeClock(), z_solver, seconds=2.0, theta="random")
        histories[z_solver] = [(z, f) for z, f, _ in engine.log]
    for i, a in enumerate(Z_SOLVERS):
        for b in Z_SOLVERS[i + 1:]:
            assert histories[a] != histories[b], (a, b)


def test_the_warm_start_is_the_first_z_step_s_pipelines_and_the_first_theta_steps_points(
        make_engine, fake_clock):
    """cmab proposes the warm start's pipelines first, in order, at the θ they set; the two
    configurations θ cannot hold beside the first (the same pipeline again; b's learning rate
    again) are evaluated next, before the first θ-step, and start their pipelines' θ-steps."""
    engine, result = run(make_engine, fake_clock, "cmab", budget=600.0)
    points = warm_points()
    arms = [points[i][0] for i in (0, 1, 2)]
    first_z = [z for z, _, tags in engine.log if tags["phase"] == "z"][:3]
    assert first_z == arms
    # the warm start's z-step is the warm start's: the z-solver's own pulls wait for the
    # first θ-step, however much budget is left
    assert [z for z, _, tags in engine.log if tags["phase"] == "z" and tags["admm_iter"] == 0] \
        == arms + [points[5][0]]  # the last configuration is a pipeline of its own too
    # each evaluated at the configuration the portfolio gives
    by_z = {e.z: e for e in result.evaluated if e.phase == "z"}
    for (z, theta) in points[:3]:
        active = ENC.active(z)
        np.testing.assert_allclose(by_z[z].theta[active], theta[active])
    # the two θ cannot hold: each evaluated at its own values right after the warm start's
    # z-step, before the first θ-step, into its pipeline's θ-history
    solvers = [tags.get("solver") for _, _, tags in engine.log]
    n_warm = 1 + len(arms) + 1
    assert solvers[n_warm:n_warm + 2] == ["warm start"] * 2
    assert "warm start" not in solvers[n_warm + 2:] and solvers[n_warm + 2] == "bo"
    warm = [e for e in result.evaluated if not e.observation.cached  # eval_id: the n-th new
            and engine.log[e.observation.eval_id][2].get("solver") == "warm start"]
    assert sorted(e.z for e in warm) == sorted(z for z, _ in points[3:5])
    for e in warm:
        i = [z for z, _ in points].index(e.z, 3)
        active = ENC.active(e.z)
        np.testing.assert_allclose(e.theta[active], points[i][1][active])
        first = next(x for x in result.evaluated if x.phase == "theta" and x.z == e.z
                     and x.iteration == e.iteration)
        assert first is e


def test_without_a_warm_start_the_first_iteration_is_a_theta_step(make_engine, fake_clock):
    engine, _ = run(make_engine, fake_clock, "cmab", warm_start=[])
    assert [tags["phase"] for _, _, tags in engine.log][:2] == ["initial", "theta"]


def test_an_evaluation_budget_sizes_the_steps_too(make_engine):
    """max_evals=30: every step at most a quarter of what is left (seeded: the same history
    twice)."""
    from admm_automl.methods.registry import make_optimizer

    logs = []
    for _ in range(2):
        engine = Tagged(make_engine(SPACE))
        make_optimizer("admm", ENC, engine, theta_solver="bo", z_solver="cmab", space=SPACE,
                       schedule=Schedule.of("auto", 16, 128), max_evals=30, seed=0,
                       warm_start=warm_points()).run()
        logs.append([(z, tags["phase"], tags["admm_iter"]) for z, _, tags in engine.log])
    assert logs[0] == logs[1] and len(logs[0]) == 30
    left, steps = 29, []
    for _, phase, t in logs[0][1:]:
        if not steps or steps[-1][:2] != (phase, t):
            steps.append([phase, t, 0, left])
        steps[-1][2] += 1
        left -= 1
    assert all(n <= math.ceil(0.25 * before) for _, _, n, before in steps)
    assert steps[0][:2] == ["z", 0]


# ----------------------------------------------------------------------------- the constraints
class Unfair:
    """Every plain pipeline (prep none/p/q ...) is 3 times over a limit ``c <= 0.1``; those with
    prep "q" meet it (they stand for the mitigated pipelines)."""

    def __init__(self, engine):
        self.engine, self.log, self.pipelines = engine, [], []

    def __call__(self, requests, time_left=None, tags=None):
        out = []
        for r, obs in zip(requests, self.engine(requests, time_left=time_left, tags=tags)):
            prep = ENC.choice_names[0][r.z[0]]
            value = 0.05 if prep == "q" else 0.3
            out.append(Observation(obs.loss, obs.status, {"c": value}, fidelity=obs.fidelity,
                                   duration=obs.duration, cached=obs.cached))
            if not obs.cached:
                self.log.append((prep, r.fidelity, dict(tags or {})))
                self.pipelines.append(tuple(r.z))
        return out


class Limit:
    key, threshold, sense = "c", 0.1, "<="


def test_the_evidence_order_puts_what_can_meet_the_constraints_first():
    constraints = Constraints([Limit()])
    q, none, p = (ENC.choice_names[0].index(n) for n in ("q", "none", "p"))
    far = Observation(0.2, constraints={"c": 0.3})
    near = Observation(0.2, constraints={"c": 0.12})  # 20 % over: within the margin
    met = Observation(0.3, constraints={"c": 0.05})
    pipelines = [(none, 1), (p, 2), (q, 3), (p, 0)]
    assert constraints.evidence_order(pipelines, []) == pipelines  # no evidence: as given
    seen = [((none, 0), far), ((p, 1), far), ((q, 1), met)]
    assert constraints.evidence_order(pipelines, seen) == [(q, 3), (none, 1), (p, 2), (p, 0)]
    assert constraints.evidence_order(pipelines, [((none, 0), near)]) == pipelines
    assert Constraints([Limit()], mode="filter").evidence_order(pipelines, seen) == pipelines
    assert Constraints().evidence_order(pipelines, seen) == pipelines


def test_after_plain_pipelines_are_shown_infeasible_the_warm_start_s_feasible_kind_comes_first(
        make_engine):
    """The warm start lists two plain pipelines before one of the kind that meets the limit;
    the initial pipeline (plain) and the first plain one are far over it, so the first z-step
    takes the "q" pipelines next, before the other plain ones."""
    from admm_automl.methods.registry import make_optimizer

    portfolio = [{"prep": "p", "prep__w": 0.2, "model": "b", "model__lr": 0.01},
                 {"prep": "q", "model": "m0"},
                 {"prep": "none", "model": "m3"}, {"prep": "p", "prep__w": 0.2, "model": "m1"},
                 {"prep": "q", "model": "m2"}, {"prep": "q", "model": "m4"}]
    engine = Unfair(make_engine(SPACE))
    make_optimizer("admm", ENC, engine, theta_solver="bo", z_solver="cmab", space=SPACE,
                   schedule=Schedule(6, 0, 6), max_evals=7, seed=0, constraints=[Limit()],
                   warm_start=[SPACE.encode(c) for c in portfolio]).run()
    preps = [prep for prep, _, _ in engine.log]
    # initial (none), then p (plain, first in the list), then every q before the other plain
    assert preps[:2] == ["none", "p"]
    assert preps[2:5] == ["q", "q", "q"]


def test_a_pipeline_feasible_on_a_subsample_is_confirmed_on_all_rows(make_engine):
    """Hyperband's first bracket trains on subsamples; a "q" pipeline (feasible) is evaluated on
    all rows once, tagged ``confirm``, while no full-data evaluation meets the limit."""
    from admm_automl.methods.registry import make_optimizer

    engine = Unfair(make_engine(SPACE))
    make_optimizer("admm", ENC, engine, theta_solver="random", z_solver="hyperband",
                   space=SPACE, schedule=Schedule(8, 0, 8), max_evals=24, seed=0,
                   constraints=[Limit()], n_train=3000,
                   warm_start=[SPACE.encode(c) for c in PORTFOLIO]).run()
    confirms = [(prep, f) for prep, f, tags in engine.log if tags.get("confirm")]
    subsample_q = [i for i, (prep, f, _) in enumerate(engine.log) if prep == "q" and f < 1.0]
    assert subsample_q, "the test needs a feasible pipeline on a subsample"
    assert confirms and confirms[0] == ("q", 1.0)
    first = next(i for i, (_, _, tags) in enumerate(engine.log) if tags.get("confirm"))
    assert first > subsample_q[0]
    assert all(tags["phase"] == "confirm" for _, _, tags in engine.log if tags.get("confirm"))
    confirmed = [z for z, (_, _, tags) in zip(engine.pipelines, engine.log) if tags.get("confirm")]
    assert len(confirmed) == len(set(confirmed))  # each pipeline confirmed at most once


# ----------------------------------------------------------------------------- time-outs
def test_a_trial_stopped_at_its_time_limit_is_counted_as_such_not_as_failed(make_engine):
    from admm_automl.clock import Deadline
    from admm_automl.methods.driver import Budget, Recorder
    from admm_automl.reporting.rundir import evaluations_note

    engine = make_engine(SPACE, duration=lambda c: 50.0 if c["model"] == "m0" else 1.0,
                         timeout=5.0)
    recorder = Recorder(ENC, engine, Budget(10, Deadline(None)), Constraints())
    recorder.evaluate([SPACE.encode(c) + (1.0,) for c in PORTFOLIO[:3]], "z")
    assert (recorder.n_evals, recorder.n_failed, recorder.n_timeouts) == (3, 0, 1)
    assert evaluations_note(0, 1) == "0 failed, 1 stopped at their time limit"
    assert evaluations_note(2, 0) == "2 failed"
    assert evaluations_note(0, 1, (12.0, 48.0)) == (
        "0 failed, 1 stopped at their time limit (12.0 s, 25% of the trials' seconds)")
    assert evaluations_note(2, 0, (0.0, 48.0)) == "2 failed"


# ----------------------------------------------------------------------------- probes in a z-step
def test_cmab_takes_a_pull_answered_on_a_subsample_as_a_failed_one():
    """A full-data pull answered by a probe (its full fit refused: fidelity 0.1) gives reward 0
    and is not a z-step winner. With the probe's loss as the reward, its cached repeats raised
    its arms every time (adult at 60 s: 100 free repeats of a refused CatBoost a z-step)."""
    from dataclasses import replace as replace_
    from admm_automl.problem import ZProblem
    from admm_automl.solvers import Z_SOLVERS

    refused = (1, 1)
    seen = {}

    def evaluate(suggestions):
        out = []
        for s in suggestions:
            z = tuple(s.config)
            if z in seen:
                out.append(replace_(seen[z], cached=True))
                continue
            seen[z] = (Observation(0.01, fidelity=0.1) if z == refused
                       else Observation(0.3 + 0.1 * z[0], fidelity=1.0))
            out.append(seen[z])
        return out

    problem = ZProblem(n_choices=(2, 2), evaluate=evaluate, augment=lambda z, o: o.loss,
                       warm_start=lambda: [z for z in [refused] if z not in seen])
    solver = Z_SOLVERS.create("cmab").setup(problem, np.random.default_rng(0))
    solver.run(1)
    assert solver.trials_[0][0] == refused  # the warm start's pipeline came first
    assert solver.counts_[0][1] == 1 and solver.rewards_[0][1] == 0  # its arms: a failed pull
    assert solver.best() is None
    solver.run(3)
    assert solver.best()[0] != refused


def test_the_budget_left_is_measured_from_the_first_evaluation(make_engine, fake_clock):
    """Set-up before the first evaluation (data checks, worker start-up) is not an evaluation's
    cost: 30 s of it, then 2 s evaluations, leave 30 evaluations of a 120 s budget's 60 s left,
    not 60 / 16."""
    from admm_automl.clock import Deadline
    from admm_automl.methods.driver import Budget, Recorder

    fake_clock.now = 30.0
    engine = make_engine(SPACE, duration=2.0, clock=fake_clock)
    recorder = Recorder(ENC, engine, Budget(None, Deadline(120.0, start=0.0, clock=fake_clock)),
                        Constraints())
    assert recorder.evaluations_left() == math.inf
    recorder.evaluate([SPACE.encode(c) + (1.0,) for c in PORTFOLIO[:2]] * 1, "z")
    recorder.evaluate([SPACE.encode(c) + (1.0,) for c in PORTFOLIO[2:]], "z")
    # 6 evaluations of 2 s from t = 30: now 42 s, 78 s left at 2 s each
    assert fake_clock.now == pytest.approx(42.0)
    assert recorder.evaluations_left() == pytest.approx(39.0)


def test_the_multiplier_update_at_the_optimal_slack_is_the_inequality_one():
    """μ + ρ(g − 1 + u*) with u* the optimal slack is max(0, μ + ρ(g − 1)): never below 0."""
    from admm_automl.methods.lagrangian import optimal_slack, update_multipliers

    rng = np.random.default_rng(0)
    for rho in (0.1, 1.0, 10.0):
        g, mu = rng.uniform(0, 3, 200), rng.uniform(0, 2, 200)
        new = update_multipliers(mu, g, optimal_slack(g, mu, rho), rho)
        np.testing.assert_allclose(new, np.maximum(0.0, mu + rho * (g - 1.0)), atol=1e-12)


def test_the_multipliers_never_fall_below_zero_and_a_feasible_pipeline_wins_a_z_step(
        make_engine):
    """Plain pipelines three times over the limit, "q" ones well inside it: every z-step after
    the first is won by a "q" pipeline (a candidate inside the limit is not charged for its
    margin) and μ, read from every evaluation's tags, is never negative."""
    from admm_automl.methods.registry import make_optimizer

    engine = Unfair(make_engine(SPACE))
    result = make_optimizer("admm", ENC, engine, theta_solver="random", z_solver="cmab",
                            space=SPACE, schedule=Schedule(4, 0, 4), max_evals=40, seed=0,
                            constraints=[Limit()]).run()
    mus = [tags["mu:c"] for _, _, tags in engine.log if "mu:c" in tags]
    assert len(mus) == len(engine.log) and min(mus) >= 0.0
    winners = [ENC.choice_names[0][s.z[0]] for s in result.states[1:]]
    assert winners and all(w == "q" for w in winners)
