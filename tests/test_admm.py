"""The ADMM loop on synthetic problems: no scikit-learn, milliseconds per run."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from admm_automl.admm import ADMMOptimizer, Schedule
from admm_automl.exceptions import InvalidParameterError
from admm_automl.solvers import THETA_SOLVERS, Z_SOLVERS
from admm_automl.space import space_from_dict
from admm_automl.records import Observation, Status

SPACE = space_from_dict(
    {
        "name": "synthetic",
        "initial": {"classification": {"prep": "none", "model": "a"}},
        "modules": [
            {
                "name": "prep",
                "choices": [
                    {"name": "none"},
                    {
                        "name": "p",
                        "class": "fake.P",
                        "hyperparameters": {
                            "w": {"type": "float", "low": 0.0, "high": 1.0, "default": 0.5},
                            "k": {"type": "int", "low": 1, "high": 5, "default": 3},
                        },
                    },
                ],
            },
            {
                "name": "model",
                "choices": [
                    {
                        "name": "a",
                        "class": "fake.A",
                        "hyperparameters": {
                            "n": {"type": "int", "low": 1, "high": 9, "default": 5},
                            "c": {"type": "categorical", "choices": ["x", "y", "z"], "default": "x"},
                        },
                    },
                    {
                        "name": "b",
                        "class": "fake.B",
                        "hyperparameters": {
                            "lr": {"type": "float", "low": 1e-3, "high": 1.0, "log": True,
                                   "default": 0.1},
                        },
                    },
                    {"name": "c", "class": "fake.C"},
                ],
            },
        ],
    }
)
ENC = SPACE.encoding


def toy_loss(config: dict) -> float:
    """Best pipeline: prep=p (k=4, w near 0.2) with model=b (lr near 0.01)."""
    loss = {"a": 0.5, "b": 0.3, "c": 0.6}[config["model"]]
    if config["model"] == "a":
        loss += 0.02 * abs(config["model__n"] - 7) + (0.0 if config["model__c"] == "y" else 0.05)
    if config["model"] == "b":
        loss += 0.1 * abs(math.log10(config["model__lr"]) + 2)
    if config["prep"] == "p":
        loss -= 0.1 - 0.05 * abs(config["prep__k"] - 4) - 0.1 * abs(config["prep__w"] - 0.2)
    return loss


class Engine:
    """A black box with a cache, like the real objective: repeats are free and flagged."""

    def __init__(self, loss=toy_loss, duration=0.0, clock=None):
        self.loss = loss
        self.duration = duration
        self.clock = clock
        self.calls: list[tuple] = []
        self.time_left_seen: list = []
        self.cache: dict[str, Observation] = {}

    def __call__(self, requests, time_left=None, tags=None):
        self.time_left_seen.append(time_left)
        out = []
        for r in requests:
            key = SPACE.key(r.z, r.theta)
            if key in self.cache:
                out.append(Observation(**{**self.cache[key].__dict__, "cached": True}))
                continue
            self.calls.append((r.z, np.array(r.theta), tags["phase"]))
            if self.clock is not None:
                self.clock.now += self.duration
            obs = Observation(loss=self.loss(SPACE.decode(r.z, r.theta)), duration=self.duration)
            self.cache[key] = obs
            out.append(obs)
        return out


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def make_optimizer(engine=None, theta="random", z="random", **kwargs):
    kwargs.setdefault("max_evals", 60)
    kwargs.setdefault("schedule", Schedule(4, 0, 4))
    return ADMMOptimizer(
        ENC,
        engine or Engine(),
        lambda: THETA_SOLVERS.create(theta),
        lambda: Z_SOLVERS.create(z),
        seed=kwargs.pop("seed", 0),
        **kwargs,
    )


def test_schedule_fixed_and_adaptive():
    assert [Schedule(16, 0, 128)(t) for t in range(3)] == [16, 16, 16]
    assert [Schedule(16, 16, 128)(t) for t in range(9)] == [16, 32, 48, 64, 80, 96, 112, 128, 128]
    assert [Schedule(16, 8, 40)(t) for t in range(5)] == [16, 24, 32, 40, 40]
    with pytest.raises(InvalidParameterError, match="maximum >= start"):
        Schedule(32, 8, 16)
    with pytest.raises(InvalidParameterError, match="start >= 1"):
        Schedule(0, 8, 16)


def test_first_evaluation_is_the_initial_pipeline_at_its_defaults():
    engine = Engine()
    make_optimizer(engine, max_evals=5).run()
    z, theta, phase = engine.calls[0]
    assert phase == "initial"
    assert z == ENC.initial_z == (0, 0)
    config = SPACE.decode(z, theta)
    assert config == {"prep": "none", "model": "a", "model__n": 5, "model__c": "x"}


@pytest.mark.parametrize("rho", [1.0, 0.5, 3.0])
def test_delta_projection_and_dual_update_follow_the_formulas(rho):
    result = make_optimizer(rho=rho, max_evals=80).run()
    assert len(result.states) >= 3
    disc = np.flatnonzero(ENC.discrete)
    lam_prev = np.zeros(len(disc))
    for state in result.states:
        theta_d = state["theta"][disc]
        expected_delta = ENC.project(theta_d + lam_prev / rho, disc)
        np.testing.assert_array_equal(state["delta"], expected_delta)
        np.testing.assert_allclose(state["lam"], lam_prev + rho * (theta_d - expected_delta))
        lam_prev = state["lam"]
    # δ only takes admissible (grid) values
    for state in result.states:
        np.testing.assert_array_equal(state["delta"], ENC.project(state["delta"], disc))


def test_inactive_discrete_coordinates_take_the_closed_form():
    rho = 2.0
    result = make_optimizer(rho=rho, max_evals=80).run()
    disc = np.flatnonzero(ENC.discrete)
    z_prev, delta_prev, lam_prev = ENC.initial_z, ENC.initial_theta[disc], np.zeros(len(disc))
    for state in result.states:
        inactive = np.setdiff1d(disc, ENC.active(z_prev))
        pos = np.searchsorted(disc, inactive)
        expected = np.clip(delta_prev[pos] - lam_prev[pos] / rho, 0.0, 1.0)
        np.testing.assert_allclose(state["theta"][inactive], expected)
        z_prev, delta_prev, lam_prev = state["z"], state["delta"], state["lam"]


def test_trace_reports_residual_and_multiplier_norms():
    result = make_optimizer(max_evals=60).run()
    disc = ENC.discrete
    for row, state in zip(result.trace, result.states):
        assert row["primal_residual"] == pytest.approx(
            np.linalg.norm(state["theta"][disc] - state["delta"])
        )
        assert row["lambda_norm"] == pytest.approx(np.linalg.norm(state["lam"]))
        assert row["rho"] == 1.0
    assert [r["iteration"] for r in result.trace] == list(range(len(result.trace)))
    best = [r["best_loss"] for r in result.trace]
    assert best == sorted(best, reverse=True)  # the incumbent never gets worse


@pytest.mark.parametrize("budget", [1, 7, 33])
def test_max_evals_is_exact(budget):
    engine = Engine()
    result = make_optimizer(engine, max_evals=budget).run()
    assert result.n_evals == budget == len(engine.calls)
    assert result.stop_reason == "max_evals"


def test_cache_hits_do_not_use_the_budget():
    engine = Engine()
    result = make_optimizer(engine, max_evals=40).run()
    hits = [e for e in result.evaluated if e.observation.cached]
    assert hits, "random z-min on a 6-pipeline space must repeat itself"
    assert len(engine.calls) == 40 == len(result.evaluated) - len(hits)


def test_time_budget_never_starts_an_evaluation_that_cannot_finish():
    clock = FakeClock()
    engine = Engine(duration=1.0, clock=clock)
    result = make_optimizer(engine, max_evals=None, time_budget=10.5, clock=clock).run()
    assert result.stop_reason == "time_budget"
    assert len(engine.calls) == 10  # at 10 s, 0.5 s are left and every evaluation takes 1 s
    assert clock.now <= 10.5
    assert all(t is not None and t > 0 for t in engine.time_left_seen)


def test_incumbent_is_the_best_over_all_evaluations():
    result = make_optimizer(max_evals=70).run()
    losses = [e.observation.loss for e in result.evaluated]
    assert result.incumbent.observation.loss == min(losses)


def test_failed_observations_do_not_stop_the_run():
    def sometimes_fails(config):
        return 1.0 if config["model"] == "c" else toy_loss(config)

    engine = Engine(loss=sometimes_fails)
    original = engine.__call__

    def failing(requests, time_left=None, tags=None):
        out = original(requests, time_left, tags)
        return [replace(o, status=Status.FAILED) if o.loss == 1.0 else o for o in out]

    result = make_optimizer(failing, max_evals=50).run()
    assert result.n_evals == 50
    assert result.incumbent.observation.ok


def test_same_seed_same_history_and_different_seed_differs():
    def history(seed):
        engine = Engine()
        make_optimizer(engine, max_evals=50, seed=seed).run()
        return [(z, tuple(np.round(t, 12)), p) for z, t, p in engine.calls]

    assert history(3) == history(3)
    assert history(3) != history(4)


@pytest.mark.parametrize("seed", range(5))
def test_random_solvers_find_the_best_pipeline_of_a_toy_problem(seed):
    result = make_optimizer(max_evals=300, seed=seed, schedule=Schedule(8, 8, 32)).run()
    best = SPACE.decode(result.incumbent.z, result.incumbent.theta)
    assert (best["prep"], best["model"]) == ("p", "b")
    assert best["prep__k"] == 4


def test_an_exhausted_space_stops_the_run():
    space = space_from_dict(
        {
            "name": "finite",
            "modules": [
                {"name": "m", "choices": [{"name": "none"}, {"name": "a", "class": "f.A"}]},
                {"name": "e", "choices": [{"name": "b", "class": "f.B"}, {"name": "c", "class": "f.C"}]},
            ],
        }
    )
    calls = []

    def engine(requests, time_left=None, tags=None):
        out = []
        for r in requests:
            cached = r.z in calls
            calls.append(r.z)
            out.append(Observation(loss=0.1 * sum(r.z), cached=cached))
        return out

    result = ADMMOptimizer(
        space.encoding, engine, lambda: THETA_SOLVERS.create("random"),
        lambda: Z_SOLVERS.create("random"), max_evals=1000, seed=0, schedule=Schedule(4, 0, 4),
    ).run()
    assert result.stop_reason == "exhausted"
    assert result.n_evals == 4


def test_callback_can_stop_the_run():
    seen = []
    result = make_optimizer(max_evals=500, callback=lambda row: seen.append(row) or len(seen) == 2).run()
    assert result.stop_reason == "callback"
    assert len(result.trace) == 2


def test_invalid_settings_are_rejected():
    with pytest.raises(InvalidParameterError, match="rho must be > 0"):
        make_optimizer(rho=0.0)
    with pytest.raises(InvalidParameterError, match="max_evals or time_budget"):
        make_optimizer(max_evals=None)


def test_admm_module_does_not_import_scikit_learn():
    import subprocess
    import sys

    code = "import sys, admm_automl.admm; print('sklearn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_batch_capable_solvers_ask_one_batch_per_worker_round():
    sizes = []
    engine = Engine()

    def batched(requests, time_left=None, tags=None):
        sizes.append((tags["phase"], len(requests)))
        return engine(requests, time_left, tags)

    result = make_optimizer(batched, max_evals=40, batch_size=3, schedule=Schedule(7, 0, 7)).run()
    assert sizes[0] == ("initial", 1)
    # 7 evaluations per sub-problem: batches of 3, 3 and 1
    assert [n for phase, n in sizes[1:4]] == [3, 3, 1]
    assert result.n_evals == 40
