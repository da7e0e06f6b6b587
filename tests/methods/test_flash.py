"""FLASH as a whole-problem method (admm_automl/flash.py): INIT with the D-optimal design, PRUNE
with EIPS to the top-r sub-graph, TUNE the pruned space with a θ-solver; its parameters and their
errors; ``method="flash"`` from Python, YAML and the command line."""

from __future__ import annotations

import numpy as np
import pytest

from admm_automl.exceptions import InvalidParameterError
from admm_automl.methods.flash import FlashOptimizer, FlashSettings, sample_prior
from admm_automl.solvers.theta.random import RandomThetaSolver
from admm_automl._numerics import flash as F
from admm_automl.testing import general_theta_solvers, wide_space

BIG = wide_space(3, 4)  # prep {none, p(w), q, p0..p2} x model {a(n, c), b(lr), m0..m3}: 36 paths
ENC = BIG.encoding
RANK = F.path_rank(ENC.n_choices)  # 6 + 6 - 2 + 1 = 11


def flash(make_optimizer, engine, params=None, **kw):
    method = "flash" if params is None else {"name": "flash", "params": params}
    return make_optimizer(method, engine=engine, space=BIG, **kw)


def test_the_three_phases_in_order_with_their_budgets(make_engine, make_optimizer):
    """n_init = n_prune = N − K + 1 by default; INIT, PRUNE, TUNE follow each other, every trace
    row belongs to one phase, and the budget is exact."""
    engine = make_engine(BIG)
    result = flash(make_optimizer, engine, max_evals=40).run()
    phases = [c[3] for c in engine.calls]
    assert phases == ["init"] * RANK + ["prune"] * RANK + ["tune"] * (40 - 2 * RANK)
    assert result.n_evals == 40 and result.stop_reason == "max_evals"
    done = 0
    for row in result.trace:  # each row's evaluations are of its phase, phases in order
        assert set(phases[done:row["n_evals"]]) == {row["phase"]}
        done = row["n_evals"]
    assert result.incumbent.observation.loss == min(e.observation.loss for e in result.evaluated)


def test_init_evaluates_the_d_optimal_design_with_random_hyperparameters(make_engine,
                                                                         make_optimizer):
    engine = make_engine(BIG)
    flash(make_optimizer, engine, max_evals=RANK).run()
    zs = np.array([c[0] for c in engine.calls])
    assert len({tuple(z) for z in zs}) == RANK
    assert np.linalg.matrix_rank(F.encode_paths(zs, ENC.n_choices)) == RANK
    lr = ENC.theta_names.index("model:b:lr")
    drawn = [c[1][lr] for c in engine.calls if c[0][1] == 1]
    assert drawn and all(x != ENC.initial_theta[lr] for x in drawn)  # not the defaults


def test_prune_keeps_the_best_algorithms_and_tune_stays_inside(make_engine, make_optimizer):
    """G′ holds the best prep (p) and model (b) of the additive toy loss; every TUNE evaluation
    is a pipeline of G′; the trace reports its size."""
    engine = make_engine(BIG)
    opt = flash(make_optimizer, engine, {"top_r": 2}, max_evals=50, seed=3)
    result = opt.run()
    kept = opt.subgraph_.kept()
    assert 1 in kept[0] and 1 in kept[1]
    tune = [c[0] for c in engine.calls if c[3] == "tune"]
    assert tune and all(z[0] in kept[0] and z[1] in kept[1] for z in tune)
    assert result.trace[-1]["pipelines_kept"] == len(kept[0]) * len(kept[1]) <= 4


class Spy(RandomThetaSolver):
    """Random search that remembers the problem it was given."""

    problems: list = []

    def _setup(self):
        Spy.problems.append(self.problem_)


@pytest.mark.parametrize("warm_start", [True, False])
def test_tune_is_warm_started_with_the_evaluations_inside_the_pruned_space(
        make_engine, warm_start):
    from admm_automl.methods.registry import make_optimizer

    Spy.problems = []
    engine = make_engine(BIG)
    opt = make_optimizer({"name": "flash", "params": {"top_r": 3, "warm_start": warm_start}},
                         ENC, engine, theta_solver=Spy(), max_evals=2 * RANK + 1, seed=0)
    opt.run()
    (problem,) = Spy.problems
    kept = opt.subgraph_.kept()
    inside = [c for c in engine.calls[:2 * RANK] if all(j in k for j, k in zip(c[0], kept))]
    assert inside  # the top paths come from what was evaluated
    assert len(problem.history) == (len(inside) if warm_start else 0)
    assert (problem.start is not None) == warm_start
    assert problem.names[0].startswith("module:") and problem.dim == len(problem.names)


def test_a_hyperparameter_free_path_is_not_picked_twice_in_prune(make_engine, make_optimizer):
    """q -> m0 has no hyperparameter and the lowest loss: PRUNE evaluates it once, then looks
    elsewhere (a second pick would be a cache hit that teaches nothing)."""

    def loss(config):
        return 0.0 if (config["prep"], config["model"]) == ("q", "m0") else 0.5

    engine = make_engine(BIG, loss=loss)
    result = flash(make_optimizer, engine, {"xi": 0.0}, max_evals=2 * RANK).run()
    prune = [e for e in result.evaluated if e.phase == "prune"]
    assert len(prune) == RANK and not any(e.observation.cached for e in prune)
    assert sum(e.z == (2, 2) for e in result.evaluated) == 1


def test_flash_is_reproducible_and_the_seed_matters(make_engine, make_optimizer):
    def calls(seed):
        engine = make_engine(BIG)
        flash(make_optimizer, engine, max_evals=30, seed=seed).run()
        return [(c[0], c[1].tolist()) for c in engine.calls]

    assert calls(4) == calls(4) and calls(4) != calls(5)


@pytest.mark.parametrize("theta_solver", general_theta_solvers())  # bapi: its own tests
def test_any_theta_solver_tunes_the_pruned_space(make_engine, make_optimizer, theta_solver):
    engine = make_engine(BIG)
    result = flash(make_optimizer, engine, {"n_init": 3, "n_prune": 2},
                   theta=theta_solver, max_evals=12).run()
    assert result.n_evals == 12 and [c[3] for c in engine.calls].count("tune") == 7


def test_random_design_and_no_prune_phase(make_engine, make_optimizer):
    engine = make_engine(BIG)
    flash(make_optimizer, engine, {"design": "random", "n_init": 5, "n_prune": 0},
          max_evals=8).run()
    assert [c[3] for c in engine.calls] == ["init"] * 5 + ["tune"] * 3


def phase_counts(engine):
    phases = [c[3] for c in engine.calls]
    return {p: phases.count(p) for p in ("init", "prune", "tune")}


def test_a_short_time_budget_leaves_prune_and_tune_their_time(make_engine, make_optimizer,
                                                                fake_clock):
    """At 1 s an evaluation and 100 s, the paper's 30 + 30 evaluations would leave TUNE 40 s:
    INIT ends at 20 % of the budget and PRUNE at 40 %, each phase in order, TUNE has the rest."""
    engine = make_engine(BIG, duration=1.0, clock=fake_clock)
    result = flash(make_optimizer, engine, {"n_init": 30, "n_prune": 30}, max_evals=None,
                   time_budget=100.0, clock=fake_clock).run()
    assert phase_counts(engine) == {"init": 20, "prune": 20, "tune": result.n_evals - 40}
    assert result.n_evals >= 95 and result.stop_reason == "time_budget"
    phases = [c[3] for c in engine.calls]
    assert phases == sorted(phases, key=["init", "prune", "tune"].index)


def test_the_papers_counts_hold_where_the_time_budget_allows_them(make_engine, make_optimizer,
                                                                  fake_clock):
    engine = make_engine(BIG, duration=0.1, clock=fake_clock)
    flash(make_optimizer, engine, {"n_init": 30, "n_prune": 30}, max_evals=None,
          time_budget=100.0, clock=fake_clock).run()
    counts = phase_counts(engine)
    assert counts["init"] == 30 and counts["prune"] == 30 and counts["tune"] > 800


def test_an_evaluation_longer_than_the_init_share_ends_init_and_prune(make_engine,
                                                                      make_optimizer, fake_clock):
    """INIT makes one evaluation whatever it costs (the models need one); past both shares
    PRUNE makes none and TUNE starts on what INIT learnt."""
    engine = make_engine(BIG, duration=45.0, clock=fake_clock)
    opt = flash(make_optimizer, engine, max_evals=None, time_budget=100.0, clock=fake_clock)
    opt.run()
    assert phase_counts(engine) == {"init": 1, "prune": 0, "tune": 1}
    assert opt.subgraph_ is not None


@pytest.mark.parametrize("minimum, floor", [("identifiable", RANK), ("paper", 2 * RANK),
                                            (15, 15)])
def test_phase_minimum_reaches_the_identifiable_count_before_tune(make_engine, make_optimizer,
                                                                  fake_clock, minimum, floor):
    """At 4 s an evaluation and 100 s, INIT's 20 % ends it after 5 evaluations and PRUNE's 40 %
    after 10 in all, fewer than the N − K + 1 = 11 coefficients of the path model. With
    ``phase_minimum`` the phases make at least the minimum before TUNE (INIT its count first),
    and the trace and ``phases_`` say what share of the budget they took."""
    engine = make_engine(BIG, duration=4.0, clock=fake_clock)
    opt = flash(make_optimizer, engine, max_evals=None, time_budget=100.0, clock=fake_clock)
    result = opt.run()
    counts = phase_counts(engine)
    assert counts["init"] + counts["prune"] < RANK and counts["tune"] > 0
    assert opt.phases_["evals"] == counts["init"] + counts["prune"]
    assert opt.phases_["minimum"] == 0

    clock = type(fake_clock)()
    engine = make_engine(BIG, duration=4.0, clock=clock)
    opt = flash(make_optimizer, engine, {"phase_minimum": minimum}, max_evals=None,
                time_budget=100.0, clock=clock)
    result = opt.run()
    counts = phase_counts(engine)
    assert counts["init"] == min(floor, RANK)
    assert counts["init"] + counts["prune"] == floor and counts["tune"] > 0
    phases = [c[3] for c in engine.calls]
    assert phases == sorted(phases, key=["init", "prune", "tune"].index)
    assert opt.phases_ == {"evals": floor, "seconds": pytest.approx(4.0 * floor),
                           "share": pytest.approx(0.04 * floor), "minimum": floor}
    tuned = [row for row in result.trace if row["phase"] == "tune"]
    assert tuned and all(row["phases_evals"] == floor
                         and row["phases_share"] == pytest.approx(0.04 * floor) for row in tuned)


def test_phase_minimum_yields_to_a_budget_too_short_for_it(make_engine, make_optimizer,
                                                           fake_clock):
    """At 30 s an evaluation and 100 s the 2 (N − K + 1) = 22 evaluations of "paper" cannot
    fit: once the missing ones would overrun the time left the shares rule again, and TUNE
    still runs."""
    engine = make_engine(BIG, duration=30.0, clock=fake_clock)
    opt = flash(make_optimizer, engine, {"phase_minimum": "paper"}, max_evals=None,
                time_budget=100.0, clock=fake_clock)
    opt.run()
    counts = phase_counts(engine)
    assert counts["init"] + counts["prune"] < 2 * RANK and counts["tune"] >= 1, counts
    assert opt.phases_["minimum"] == 2 * RANK and opt.phases_["share"] < 1.0


def test_phase_minimum_never_exceeds_the_phase_counts(make_optimizer, make_engine):
    opt = flash(make_optimizer, make_engine(BIG), {"phase_minimum": 500, "n_init": 4,
                                                   "n_prune": 3})
    assert opt.phase_minimum == 7
    assert flash(make_optimizer, make_engine(BIG)).phase_minimum == 0


def slow_b(config):
    """Model b, the best, takes 2 s, and 8 s (past a 4.5 s limit) when its lr < 0.01; the others
    0.03 s: the random forests of the FLASH campaign at 180 s, in miniature."""
    if config["model"] != "b":
        return 0.03
    return 8.0 if config["model__lr"] < 0.01 else 2.0


@pytest.mark.parametrize("seed", range(4))
def test_a_learner_whose_slow_draws_time_out_is_not_pruned_for_it(make_engine, make_optimizer,
                                                                  fake_clock, seed):
    """Time-outs inform the cost model only: the best model, timed out on a third of its random
    draws, stays in G′; with the authors' rule (a time-out is the worst loss) and costs in
    seconds it is pruned on every seed."""
    def kept_b(params):
        clock = type(fake_clock)()
        engine = make_engine(BIG, duration=slow_b, clock=clock, timeout=4.5)
        opt = flash(make_optimizer, engine, params, max_evals=None, time_budget=180.0,
                    clock=clock, seed=seed)
        opt.run()
        assert any(o.status.value == "timeout" for o in engine.cache.values())
        return 1 in opt.subgraph_.kept()[1]

    assert kept_b({})
    assert not kept_b({"cost_unit": "seconds", "censor_timeouts": False})


def test_costs_are_damped_as_in_the_paper_at_any_budget():
    """cost_unit="budget" measures τ in the paper's seconds (× 36 000 / budget): at 180 s a path
    90 times slower divides EI by ~3, as at 10 hours; in plain seconds by ~35."""
    from admm_automl.records import Observation, Status
    from admm_automl.solvers.z.flash import fit_models

    pairs = [((0,), Observation(0.2, fit_time=0.05)), ((1,), Observation(0.1, fit_time=4.5)),
             ((1,), Observation(1.0, status=Status.TIMEOUT, duration=4.5))] * 3

    def damping(scale):
        models = fit_models(pairs, lambda z, o: o.loss, (2,), alpha=1e-6, transform="log1p",
                            cost_scale=scale, censor_timeouts=True)
        slow, fast = models.cost.mean(F.encode_paths(np.array([[1], [0]]), (2,)))
        return slow / fast, models

    assert damping(36_000 / 180)[0] == pytest.approx(np.log1p(900) / np.log1p(10), rel=1e-3)
    assert damping(1.0)[0] == pytest.approx(np.log1p(4.5) / np.log1p(0.05), rel=1e-3)
    models = damping(1.0)[1]  # the time-outs are censored: the slow path's mean is 0.1
    assert models.best == 0.1
    assert models.perf.predict(F.encode_paths(np.array([[1]]), (2,)))[0][0] == pytest.approx(
        0.1, abs=1e-3)


def test_without_pruning_tune_searches_the_whole_space_right_after_init(make_engine,
                                                                         make_optimizer):
    """The paper's Fig. 5b ablation: no EIPS evaluations, G′ keeps every algorithm."""
    engine = make_engine(BIG)
    opt = flash(make_optimizer, engine, {"prune": False, "n_init": 5}, max_evals=40)
    opt.run()
    assert phase_counts(engine) == {"init": 5, "prune": 0, "tune": 35}
    assert opt.subgraph_.n_choices == ENC.n_choices


def test_sample_prior_draws_only_the_path_hyperparameters():
    rng = np.random.default_rng(0)
    draws = np.array([sample_prior(ENC, (1, 0), rng) for _ in range(300)])
    active = ENC.active((1, 0))
    others = np.setdiff1d(np.arange(ENC.theta_dim), active)
    np.testing.assert_array_equal(draws[:, others], np.tile(ENC.initial_theta[others], (300, 1)))
    c = ENC.theta_names.index("model:a:c")  # a categorical: every category equally often
    counts = np.unique(draws[:, c], return_counts=True)[1]
    assert len(counts) == 3 and counts.min() > 70


# ----------------------------------------------------------------------------- parameters
@pytest.mark.parametrize("params, message", [
    ({"n_init": 0}, "n_init must be an integer >= 1, got 0"),
    ({"n_prune": -1}, "n_prune must be an integer >= 0, got -1"),
    ({"top_r": 0}, "top_r must be an integer >= 1, got 0"),
    ({"xi": -1}, "xi must be a finite number >= 0"),
    ({"xi_select": float("nan")}, "xi_select must be a finite number >= 0"),
    ({"ridge_alpha": -2.0}, "ridge_alpha must be a finite number > 0, got -2.0"),
    ({"cost_transform": "exp"}, "cost_transform must be one of 'log', 'log1p', 'identity'"),
    ({"design": "sobol"}, "design must be one of 'd-optimal', 'random', got 'sobol'"),
    ({"warm_start": "yes"}, "warm_start must be a bool, got 'yes'"),
    ({"prune": 0}, "prune must be a bool, got 0"),
    ({"censor_timeouts": 1}, "censor_timeouts must be a bool, got 1"),
    ({"cost_unit": "hours"}, "cost_unit must be one of 'budget', 'seconds', got 'hours'"),
    ({"init_share": 0}, r"init_share must be a number in \(0, 1\], got 0"),
    ({"prune_share": 1.5}, r"prune_share must be a number in \(0, 1\], got 1.5"),
    ({"init_share": 0.6, "prune_share": 0.5}, "init_share \\+ prune_share must be at most 1"),
    ({"phase_minimum": "rank"}, "phase_minimum must be None, 'identifiable', 'paper' or an "
                                "integer >= 1, got 'rank'"),
    ({"phase_minimum": 0}, "phase_minimum must be None"),
    ({"phase_minimum": True}, "phase_minimum must be None"),
    ({"n_candidates": 0}, "n_candidates must be an integer >= 1, got 0"),
    ({"r": 3}, r"unknown FLASH parameter\(s\) \['r'\]; valid: n_init, n_prune, top_r"),
])
def test_bad_parameters_get_clear_errors(params, message):
    with pytest.raises(InvalidParameterError, match=message):
        FlashSettings.from_params(params)


def test_top_r_is_checked_against_the_number_of_paths(make_optimizer):
    with pytest.raises(InvalidParameterError,
                       match=r"top_r must be an integer between 1 and the number of paths "
                             r"\(36\), got 37"):
        make_optimizer({"name": "flash", "params": {"top_r": 37}}, space=BIG)
    opt = make_optimizer("flash", space=wide_space())  # 6 paths: the default r is all of them
    assert opt.top_r == 6 and make_optimizer("flash", space=BIG).top_r == 10


def test_method_specs():
    from admm_automl.methods.registry import method_spec

    assert method_spec("flash") == ("flash", {})
    assert method_spec({"name": "flash", "params": {"top_r": 3}}) == ("flash", {"top_r": 3})
    assert method_spec({"name": "jopt"}) == ("jopt", {})
    with pytest.raises(InvalidParameterError, match="method 'admm' takes no params"):
        method_spec({"name": "admm", "params": {"rho": 2}})
    with pytest.raises(InvalidParameterError, match="needs the key 'name'"):
        method_spec({"params": {}})
    with pytest.raises(InvalidParameterError, match="method must be one of"):
        method_spec({"name": "smac"})


# ----------------------------------------------------------------------------- estimator, YAML, CLI
def test_estimator_validates_flash_params_before_any_work():
    from admm_automl import ADMM

    X, y = np.zeros((20, 2)), np.r_[[0] * 10, [1] * 10]
    with pytest.raises(InvalidParameterError, match="n_init must be an integer >= 1, got 0"):
        ADMM(method={"name": "flash", "params": {"n_init": 0}}, max_evals=2).fit(X, y)
    with pytest.raises(InvalidParameterError, match="method='flash' has no ADMM split"):
        ADMM(method="flash", constraint_mode="admm", max_evals=2).fit(X, y)


@pytest.mark.slow
def test_flash_from_yaml_and_the_command_line(tmp_path):
    from admm_automl import load_config
    from admm_automl.cli import main

    config = load_config({"estimator": {"method": {"name": "flash", "params": {"top_r": 3}}}})
    assert config.make_estimator().method == {"name": "flash", "params": {"top_r": 3}}
    code = main(["fit", "--dataset", "breast_cancer", "--max-evals", "6", "--seed", "0",
                 "--method", "flash", "--theta-solver", "random", "--search-space", "paper_small",
                 "--output", str(tmp_path)])
    assert code == 0
    assert "method: flash" in (tmp_path / "config.resolved.yaml").read_text()
    phases = [line for line in (tmp_path / "journal.jsonl").read_text().splitlines()
              if '"phase": "init"' in line]
    assert len(phases) == 6  # n_init = 13 on paper_small: the whole budget is the design


@pytest.mark.slow
def test_estimator_flash_end_to_end(breast_cancer_full):
    from admm_automl import ADMM
    from admm_automl.testing import tiny_space

    X, y = breast_cancer_full
    model = ADMM(search_space=tiny_space(), method={"name": "flash", "params": {"top_r": 2}},
                 theta_solver="random", max_evals=12, random_state=0).fit(X[:, :8], y)
    assert list(model.history_["phase"]) == ["init"] * 3 + ["prune"] * 3 + ["tune"] * 6
    assert list(model.admm_trace_["phase"]) == ["init", "prune", "tune"]
    assert 0.0 <= model.best_loss_ < 0.2 and model.n_evals_ == 12
