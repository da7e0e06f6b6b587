"""The ``bapi`` θ-solver on a learner with a known learning curve (fast, no scikit-learn fits) and
end to end through ADMM, JOPT, YAML and the command line on the ``iterative`` space."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from threadpoolctl import threadpool_limits

from admm_automl.exceptions import InvalidParameterError
from admm_automl.solvers.theta.bapi import BAPIThetaSolver
from admm_automl.solvers.theta.bo import GPBayesOptThetaSolver
from admm_automl.testing import curve_loss, make_curve_problem, make_theta_problem


def _run(seed=0, n=6, **params):
    problem, log = make_curve_problem(2)
    solver = BAPIThetaSolver(cost="iterations", **params)
    solver.setup(problem, np.random.default_rng(seed))
    solver.run(n)
    return solver, log


@pytest.fixture(scope="module")
def finished():
    return _run()


def test_conservative_stopping_picks_the_first_length_within_epsilon(finished):
    """On a configuration trained to t_max, the stopping length under the fitted monotone model
    is the exact one of the true curve: the first t >= p with loss(t) - loss(t_max) <= 0.01."""
    solver, log = finished
    x = log.configs[0][0]  # the start point, trained to t_max first
    grid = np.arange(20, 101)
    losses = np.array([curve_loss(x, t) for t in grid])
    exact = int(grid[np.argmax(losses - losses[-1] <= 0.01)])
    assert exact == 58
    assert abs(solver.stopping_length(x) - exact) <= 2


def test_horizon_shrinks_as_the_budget_does(finished):
    solver, _ = finished
    sizes = [len(solver.plan(budget)) for budget in (np.inf, 1000.0, 100.0, 1.0)]
    assert sizes[0] == 4 and sizes[-1] == 1, sizes
    assert sizes == sorted(sizes, reverse=True), sizes
    horizon = solver.plan(150.0)
    assert horizon.cost.sum() <= 150.0 and len(horizon) < 4


def test_the_budget_of_n_full_trainings_is_spent_with_early_stops_and_continuations(finished):
    """run(6) trains about 6 x t_max iterations (one step over at most); poor configurations are
    stopped after p = 20 iterations; a configuration trained again is continued, never
    retrained, and its lengths grow."""
    _, log = finished
    lengths: dict[bytes, list[int]] = {}
    for x, t in log.configs:
        lengths.setdefault(np.round(x, 12).tobytes(), []).append(100 if t is None else t)
    trained = sum(ts[-1] for ts in lengths.values())
    assert 600 <= trained <= 700, trained
    assert all(ts == sorted(set(ts)) for ts in lengths.values()), lengths
    assert any(ts[-1] == 20 for ts in lengths.values()), "nothing was stopped early"
    assert any(20 < ts[-1] < 100 for ts in lengths.values()), "nothing stopped at t_opt"
    assert any(len(ts) >= 3 for ts in lengths.values()), "nothing was continued"


def test_same_seed_same_history_another_seed_another():
    a, b, c = (_run(seed, n=3)[1].configs for seed in (1, 1, 2))
    assert [(x.tolist(), t) for x, t in a] == [(x.tolist(), t) for x, t in b]
    assert [(x.tolist(), t) for x, t in a] != [(x.tolist(), t) for x, t in c]


def test_without_a_training_length_it_is_bo():
    """EI at the configured length: the asks of bo with the same parameters and seed."""
    params = {"n_initial_points": 3, "n_candidates": 64, "n_restarts": 1}
    logs = []
    for solver in (BAPIThetaSolver(gp_restarts=0, **params), GPBayesOptThetaSolver(**params)):
        problem, log = make_theta_problem(2)
        solver.setup(problem, np.random.default_rng(3))
        solver.run(6)
        logs.append(np.array(log.configs))
    np.testing.assert_array_equal(*logs)


def test_the_ablation_has_no_monotonicity_and_parameters_are_checked():
    solver, _ = _run(n=2, monotone=False)
    assert solver.curve_model_.monotone is False
    problem, _ = make_curve_problem(2)
    for bad, fragment in (({"h_max": 0}, "h_max"), ({"tau": 0.5}, "tau"),
                          ({"cost": "money"}, "parameter of bapi must be one of"),
                          ({"monotone": "yes"}, "monotone")):
        with pytest.raises(InvalidParameterError, match=fragment):
            BAPIThetaSolver(**bad).setup(problem, np.random.default_rng(0))


def _flat_run(epsilon, seed=0, n=6, scale=0.004):
    """:func:`_run` on the curves scaled by ``scale``: losses within 0.0024 of each other, each
    curve dropping at most 0.002 — every configuration is within 0.01 of its end at once."""
    from dataclasses import replace

    problem, log = make_curve_problem(2)
    evaluate = problem.evaluate

    def scaled(suggestions):
        return [replace(o, loss=o.loss * scale,
                        curve=tuple((t, v * scale) for t, v in o.curve) if o.curve else o.curve)
                for o in evaluate(suggestions)]

    problem.evaluate = scaled
    solver = BAPIThetaSolver(cost="iterations", epsilon=epsilon)
    solver.setup(problem, np.random.default_rng(seed))
    solver.run(n)
    lengths: dict[bytes, list[int]] = {}
    for x, t in log.configs:
        lengths.setdefault(np.round(x, 12).tobytes(), []).append(100 if t is None else t)
    return solver, [ts[-1] for ts in lengths.values()]


def test_automatic_epsilon_lets_configurations_of_a_flat_problem_train_past_the_first_check():
    """With ε = 0.01 every configuration the model checks is stopped at its first check (p =
    20; only the design's first ones, trained without a model, go further); with "auto" (the
    paper's smallest degradation from t_max in the data) several train on, and ε is the
    rule's value on the curves observed."""
    from admm_automl._numerics import bapi as _bapi

    fixed, lengths = _flat_run(0.01)
    assert fixed.epsilon_ == 0.01
    assert sum(t == 20 for t in lengths) >= len(lengths) - 2, lengths
    auto, lengths = _flat_run("auto")
    assert sum(t > 20 for t in lengths) >= 4, lengths
    expected = _bapi.automatic_epsilon([c.curve() for c in auto._curves()])
    assert 0 < auto.epsilon_ < 1e-4 and auto.epsilon_ == pytest.approx(expected)


@pytest.mark.parametrize("epsilon", ["max", -0.1, True])
def test_a_bad_epsilon_is_refused(epsilon):
    problem, _ = make_curve_problem(2)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        BAPIThetaSolver(epsilon=epsilon).setup(problem, np.random.default_rng(0))


# ----------------------------------------------------------------------------- end to end
#: a space whose one learner declares no training length
PLAIN = {"name": "plain", "modules": [{"name": "estimator", "choices": [
    {"name": "gaussian_nb", "class": "sklearn.naive_bayes.GaussianNB"}]}]}


def test_a_space_without_training_length_is_refused(make_optimizer, breast_cancer):
    from admm_automl import ADMM
    from admm_automl.testing import SYNTHETIC

    with pytest.raises(InvalidParameterError, match="no algorithm of the search space declares"):
        make_optimizer(space=SYNTHETIC, theta="bapi")
    with pytest.raises(InvalidParameterError,
                       match=r"theta_solver='bapi' chooses how many iterations .* no algorithm of "
                             r"search space 'plain' declares a training length: use "
                             r"search_space='iterative'"):
        ADMM(search_space=PLAIN, theta_solver="bapi", max_evals=3).fit(*breast_cancer)
    make_optimizer(space=SYNTHETIC, theta="bapi", method="select")  # no θ-solver there: fine


@pytest.fixture
def one_thread():
    with threadpool_limits(limits=1):
        yield


@pytest.mark.slow
@pytest.mark.parametrize("method", ["admm", "jopt"])
def test_admm_and_jopt_train_iterative_learners_for_chosen_lengths(
    one_thread, breast_cancer, method
):
    from admm_automl import ADMMClassifier

    model = ADMMClassifier(
        search_space="iterative",
        theta_solver={"name": "bapi", "params": {"cost": "iterations", "epsilon": 0.001}},
        z_solver="random", method=method, max_evals=14, inner_iter=3, inner_iter_step=0,
        inner_iter_max=3, random_state=0, executor="serial", ensemble_size=0,
    ).fit(*breast_cancer)
    history = model.history_
    assert len(history) == 14 and (history["status"] == "ok").all()
    chosen = history["iterations"].dropna()
    assert len(chosen) >= 5 and chosen.min() >= 20 and chosen.max() <= 100  # p = 20 at least
    assert (history["curve"].dropna().map(len) >= 1).all()
    params = model.best_params_
    assert params["estimator__max_iter"] == (model.best_iterations_ or 100)
    assert model.best_pipeline_[-1].get_params()["max_iter"] == params["estimator__max_iter"]


@pytest.mark.slow
def test_yaml_and_command_line(one_thread, tmp_path):
    import contextlib
    import io

    from admm_automl.cli import main
    from admm_automl.journal import Journal

    path = tmp_path / "bapi.yaml"
    path.write_text(yaml.safe_dump({
        "estimator": {"search_space": "iterative", "max_evals": 8, "random_state": 0,
                      "inner_iter": 3, "inner_iter_step": 0, "ensemble_size": 0,
                      "theta_solver": {"name": "bapi", "params": {"cost": "iterations"}}},
        "data": {"dataset": "breast_cancer"},
    }))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["fit", "--config", str(path), "--output", str(tmp_path / "run")]) == 0
    records = Journal.read(tmp_path / "run" / "journal.jsonl")
    assert len(records) == 8 and any(r.get("curve") for r in records)
    plain = tmp_path / "plain.yaml"
    plain.write_text(yaml.safe_dump(PLAIN))
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["fit", "--dataset", "breast_cancer", "--theta-solver", "bapi",
                     "--search-space", str(plain), "--max-evals", "3"])
    assert code == 2 and "declares a training length" in err.getvalue()
