"""The methods without the ADMM split (admm_automl/baselines.py): JOPT over the joint space and
algorithm selection with θ at its defaults; and their ``method`` switch in the estimator, YAML and
the command line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from admm_automl.methods.driver import RunOptions
from admm_automl.methods.baselines import JointOptimizer
from admm_automl.space.joint import JointSpace
from admm_automl.exceptions import InvalidParameterError
from admm_automl.solvers import THETA_SOLVERS
from admm_automl.solvers.z import fidelity_levels
from admm_automl.testing import general_theta_solvers, wide_space

SPACE = wide_space()  # 3 x 2 = 6 pipelines
BIG = wide_space(3, 4)  # 6 x 6 = 36 pipelines
ENC = SPACE.encoding


# ----------------------------------------------------------------------------- JOPT
def test_joint_encoding_places_choices_like_categorical_hyperparameters(make_optimizer):
    opt = make_optimizer("jopt", space=SPACE)
    assert isinstance(opt, JointOptimizer) and opt.dim == 2 + ENC.theta_dim
    joint = opt.joint
    theta = ENC.project(ENC.initial_theta)
    for z in [(0, 0), (1, 1), (2, 0), (2, 1)]:
        x = joint.encode(z, theta)
        assert x[0] == z[0] / 2 and x[1] == z[1] / 1
        z2, theta2 = joint.decode(x)
        assert z2 == z and np.array_equal(theta2, theta)
    assert joint.decode(np.r_[0.26, 0.49, theta])[0] == (1, 0)  # nearest choice
    assert joint.decode(np.r_[0.24, 0.51, theta])[0] == (0, 1)
    assert joint.names[:2] == ("module:prep", "module:model") and joint.discrete[:2].all()


def test_a_joint_space_over_kept_choices_has_only_their_coordinates():
    """Pruned: a module with one kept choice has no coordinate, and only the kept algorithms'
    θ coordinates are in the box; decoding maps back to the kept choices."""
    joint = JointSpace(ENC, ((0, 1), (1,)))  # prep {none, p(w)} x model {b(lr)}
    assert joint.names == ("module:prep", "prep:p:w", "model:b:lr")
    assert joint.dim == 3 and joint.discrete.tolist() == [True, False, False]
    theta = ENC.initial_theta.copy()
    theta[ENC.theta_names.index("prep:p:w")] = 0.7
    x = joint.encode((1, 1), theta)
    np.testing.assert_allclose(x, [1.0, 0.7, theta[ENC.theta_names.index("model:b:lr")]])
    z, theta2 = joint.decode(x)
    assert z == (1, 1) and np.array_equal(theta2, theta)
    assert joint.decode(np.r_[0.2, 0.5, 0.5])[0] == (0, 1)
    with pytest.raises(InvalidParameterError, match="at least one valid choice"):
        JointSpace(ENC, ((0,), ()))


@pytest.mark.parametrize("theta_solver", general_theta_solvers())  # bapi: its own tests
def test_jopt_runs_one_theta_solver_over_the_joint_space(make_engine, make_optimizer,
                                                         theta_solver):
    """Any registered θ-solver drives JOPT: the budget is exact, every evaluation after the initial
    one is a full-fidelity 'joint' one, and the incumbent is the best of them."""
    engine = make_engine(SPACE)
    result = make_optimizer("jopt", engine=engine, space=SPACE, theta=theta_solver,
                            max_evals=12).run()
    assert result.n_evals == 12 == len(engine.calls)
    assert [c[3] for c in engine.calls] == ["initial"] + ["joint"] * 11
    assert all(c[2] == 1.0 for c in engine.calls)
    losses = [e.observation.loss for e in result.evaluated]
    assert result.incumbent.observation.loss == min(losses)
    assert result.stop_reason == "max_evals"
    assert [row["iteration"] for row in result.trace] == list(range(len(result.trace)))
    assert "primal_residual" not in result.trace[0]  # no split, no ADMM columns


def test_jopt_explores_algorithms_and_hyperparameters_together(make_engine, make_optimizer):
    engine = make_engine(SPACE)
    make_optimizer("jopt", engine=engine, space=SPACE, max_evals=40, seed=1).run()
    zs = {c[0] for c in engine.calls}
    assert len(zs) == 6  # every pipeline of the 3 × 2 space is reached
    thetas = np.array([c[1] for c in engine.calls])
    assert len(np.unique(thetas[:, ENC.theta_names.index("model:b:lr")])) > 10


def test_jopt_is_reproducible_and_the_seed_matters(make_engine, make_optimizer):
    def calls(seed):
        engine = make_engine(SPACE)
        make_optimizer("jopt", engine=engine, space=SPACE, seed=seed).run()
        return [(c[0], c[1].tolist()) for c in engine.calls]

    assert calls(5) == calls(5) and calls(5) != calls(6)


def test_jopt_callback_stops_the_run(make_optimizer):
    rows = []
    stop = lambda row: rows.append(row) or len(rows) == 2  # noqa: E731
    result = make_optimizer("jopt", space=SPACE, max_evals=100, callback=stop).run()
    assert result.stop_reason == "callback" and len(result.trace) == 2


@pytest.mark.parametrize("method", ["jopt", "select", "flash"])
def test_the_methods_without_the_split_refuse_admm_constraint_mode(make_optimizer, method):
    with pytest.raises(InvalidParameterError, match="no ADMM split, so constraint_mode='admm'"):
        make_optimizer(method, space=SPACE, constraint_mode="admm")


@pytest.mark.parametrize("method", ["jopt", "flash"])
def test_jopt_and_flash_penalise_violations_with_a_fixed_weight(make_optimizer, method):
    """The value JOPT's θ-solver and FLASH's models see is loss + w × total violation, and the
    trace rows carry no μ."""
    from admm_automl.records import Observation

    class Size:
        key, threshold, sense = "size", 1.0, "<="

    def engine(requests, time_left=None, tags=None):
        return [Observation(loss=0.1, constraints={"size": 3.0}) for _ in requests]

    opt = make_optimizer(method, engine=engine, space=SPACE, constraints=[Size()],
                         penalty_weight=2.0, max_evals=3)
    obs = Observation(loss=0.1, constraints={"size": 3.0})
    assert opt._value(None, obs) == pytest.approx(0.1 + 2.0 * (3.0 - 1.0) / 1.0)
    result = opt.run()
    assert all(not any(k.startswith("mu:") for k in row) for row in result.trace)


# ----------------------------------------------------------------------------- selection only
@pytest.mark.parametrize("z_solver", ["random", "cmab", "blds", "hyperband", "daub", "bo",
                                      "flash"])
def test_selection_keeps_theta_at_the_defaults(make_engine, make_optimizer, z_solver):
    engine = make_engine(BIG)
    result = make_optimizer("select", engine=engine, z=z_solver, space=BIG, max_evals=15,
                            n_train=1600).run()
    default = BIG.encoding.project(BIG.encoding.initial_theta)
    assert result.n_evals == 15 == len(engine.calls)
    assert all(np.array_equal(BIG.encoding.project(c[1]), default) for c in engine.calls)
    assert [c[3] for c in engine.calls] == ["initial"] + ["z"] * 14
    full = [e.observation.loss for e in result.evaluated if e.observation.fidelity >= 1.0]
    assert result.incumbent.observation.loss == min(full)


def test_selection_keeps_one_z_problem_so_blds_never_repeats_a_request(make_engine,
                                                                       make_optimizer):
    """One z-solver and one z-problem for the whole run: BLDS's cache stays valid, nothing is
    asked twice, and partial fidelities are used."""
    engine = make_engine(BIG, fidelity_bias=0.1)
    result = make_optimizer("select", engine=engine, z="blds", space=BIG, max_evals=60,
                            n_train=1600).run()
    assert engine.calls[0][0] == ENC.initial_z
    keys = [(c[0], c[2]) for c in engine.calls]
    assert len(set(keys)) == len(keys) == 60
    assert min(c[2] for c in engine.calls) == pytest.approx(200 / 1600)  # the first level, bη
    assert not any(e.observation.cached for e in result.evaluated)


# ----------------------------------------------------------------------------- the start
FIRST = fidelity_levels(1600)[0]  # 200 of 1600 training rows
Z_SOLVERS_OF_THE_PAPER = ["blds", "cmab", "daub", "hyperband", "random"]


def _random_start(make_engine, make_optimizer, z_solver, seed, n=4):
    """The engine's calls of a select run that starts from a random pipeline at the first level."""
    engine = make_engine(BIG, fidelity_bias=0.1)
    make_optimizer("select", engine=engine, z=z_solver, space=BIG, max_evals=n, n_train=1600,
                   seed=seed, initial="random", initial_fidelity=FIRST).run()
    return engine.calls


def test_every_z_solver_starts_from_the_same_random_pipeline_per_seed(make_engine,
                                                                     make_optimizer):
    """The start is drawn from the run's start stream, which depends on the seed only, so every
    method of one seed starts from the same pipeline (Kishimoto et al. 2021 draw it at random),
    trained on the first level's rows; then each solver goes its own way at its own fidelity."""
    for seed in (0, 7):
        calls = {z: _random_start(make_engine, make_optimizer, z, seed)
                 for z in Z_SOLVERS_OF_THE_PAPER}
        firsts = {(c[0][0], c[0][2], c[0][3]) for c in calls.values()}
        assert len(firsts) == 1
        (z0, fidelity, phase), = firsts
        assert fidelity == FIRST and phase == "initial"
        assert all(c[1][2] == 1.0 for z, c in calls.items() if z in ("cmab", "random"))
        blds_next = calls["blds"][1]  # a neighbour of the start at the first level
        assert sum(a != b for a, b in zip(blds_next[0], z0)) == 1 and blds_next[2] == FIRST


def test_the_random_start_changes_with_the_seed_and_not_with_the_method(make_engine,
                                                                        make_optimizer):
    starts = [_random_start(make_engine, make_optimizer, "random", seed, n=1)[0][0]
              for seed in range(8)]
    assert len(set(starts)) > 1
    again = _random_start(make_engine, make_optimizer, "cmab", 5, n=1)[0][0]
    assert again == starts[5]
    default = make_optimizer("select", space=BIG, z="blds", n_train=1600, seed=5)
    opt = make_optimizer("select", space=BIG, z="blds", n_train=1600, seed=5, initial="random")
    assert opt.initial_z() == starts[5] and default.initial_z() == ENC.initial_z


def test_the_default_start_is_unchanged(make_engine, make_optimizer):
    """Without the options, select starts from the encoding's initial pipeline on all rows."""
    for z_solver in Z_SOLVERS_OF_THE_PAPER:
        engine = make_engine(BIG)
        make_optimizer("select", engine=engine, z=z_solver, space=BIG, max_evals=2,
                       n_train=1600).run()
        assert engine.calls[0][0] == BIG.encoding.initial_z and engine.calls[0][2] == 1.0


def test_a_start_on_all_rows_may_still_be_random(make_engine, make_optimizer):
    engine = make_engine(BIG)
    result = make_optimizer("select", engine=engine, z="blds", space=BIG, max_evals=3,
                            n_train=1600, seed=5, initial="random").run()
    assert engine.calls[0][2] == 1.0 and result.evaluated[0].z == engine.calls[0][0]
    assert result.incumbent is not None


def test_the_start_stream_is_a_third_child_leaving_the_solvers_streams_unchanged():
    """RunOptions spawned two children of the seed (the θ- and the z-solver's); the start's is
    the third, and spawning three leaves the first two as they were."""
    for seed in (0, 12345, np.random.SeedSequence(9).spawn(2)[1]):
        options = RunOptions(seed=seed, max_evals=1)
        if isinstance(seed, np.random.SeedSequence):
            before = np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key).spawn(2)
        else:
            before = np.random.SeedSequence(seed).spawn(2)
        theta, z = options.solver_seeds()
        assert [s.generate_state(4).tolist() for s in (theta, z)] == [
            s.generate_state(4).tolist() for s in before]
        start = options.start_seed()
        assert start.spawn_key[-1] == 2
        assert start.generate_state(4).tolist() == options.start_seed().generate_state(4).tolist()


def test_the_start_options_are_checked(make_optimizer):
    with pytest.raises(InvalidParameterError, match="initial must be one of"):
        make_optimizer("select", space=BIG, initial="best")
    for bad in (0.0, 1.5, -0.1):
        with pytest.raises(InvalidParameterError, match="initial_fidelity"):
            make_optimizer("select", space=BIG, initial_fidelity=bad)
    for method in ("admm", "jopt"):
        with pytest.raises(InvalidParameterError, match="apply to method 'select' only"):
            make_optimizer(method, space=BIG, initial="random")


def test_selection_stops_when_the_space_is_exhausted(make_optimizer):
    result = make_optimizer("select", space=SPACE, z="blds", max_evals=500).run()  # 6 pipelines
    assert result.stop_reason == "exhausted" and result.n_evals == 6


@pytest.mark.parametrize("method", ["admm", "jopt", "select", "flash"])
def test_every_method_stops_at_the_same_budget_rules(make_engine, make_optimizer, fake_clock,
                                                     method):
    """One budget for every method: exact evaluation counts, and never an evaluation started
    that the time left cannot fit."""
    engine = make_engine(BIG)
    assert make_optimizer(method, engine=engine, space=BIG, max_evals=9).run().n_evals == 9
    assert len(engine.calls) == 9
    engine = make_engine(BIG, duration=1.0, clock=fake_clock)
    result = make_optimizer(method, engine=engine, space=BIG, max_evals=None, time_budget=5.5,
                            clock=fake_clock).run()
    assert result.stop_reason == "time_budget" and len(engine.calls) == 5
    assert fake_clock.now <= 5.5


# ----------------------------------------------------------------------------- estimator, YAML, CLI
@pytest.fixture(scope="module")
def data(breast_cancer_full):
    X, y = breast_cancer_full
    return X[:, :8], y


def _tiny():
    from admm_automl.testing import tiny_space

    return tiny_space()


@pytest.mark.parametrize("method", ["admm", "jopt", "select"])
@pytest.mark.slow
def test_estimator_method(data, method):
    from admm_automl import ADMM

    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ADMM(search_space=_tiny(), method=method, z_solver="blds", max_evals=10,
                     random_state=0, cv=None).fit(X, y)
    phases = set(model.history_["phase"])
    if method == "admm":
        assert "z" in phases and phases <= {"initial", "theta", "z"}
    else:
        assert phases == {"initial", {"jopt": "joint", "select": "z"}[method]}
    if method == "select":
        assert model.best_params_.get("estimator__C", 1.0) == 1.0  # θ stays at its default
    assert model.n_evals_ == 10 and 0.0 <= model.best_loss_ < 0.2
    assert model.get_params()["method"] == method


def test_estimator_rejects_an_unknown_method(data):
    from admm_automl import ADMM

    with pytest.raises(InvalidParameterError, match="'method' parameter of ADMM must be one of 'admm', 'jopt', 'select'"):
        ADMM(method="joint", max_evals=2).fit(*data)


@pytest.mark.slow
def test_admm_with_bo_and_blds_fits_breast_cancer():
    """ADMM(theta_solver="bo", z_solver="blds") end to end; BLDS's requests are never repeated, so
    the journal has no duplicate key."""
    from sklearn.datasets import load_breast_cancer

    from admm_automl import ADMM

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    theta = "bo" if "bo" in THETA_SOLVERS else "random"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ADMM(search_space="blds", theta_solver=theta, z_solver="blds", max_evals=60,
                     random_state=0, cv=None).fit(X, y)
    history = model.history_
    assert len(history) == 60 and not history["key"].duplicated().any()
    # the first level is bη = 200 rows (Kishimoto et al., 2021, b = 100, η = 2)
    assert history["fidelity"].min() == pytest.approx(200 / history["n_train"].max(), rel=0.02)
    assert model.best_loss_ < 0.05 and model.predict(X).shape == (len(y),)


@pytest.mark.slow
def test_config_and_cli_accept_method(tmp_path, capsys):
    from admm_automl import load_config
    from admm_automl.cli import main

    config = load_config({"estimator": {"method": "select", "z_solver": "hyperband"}})
    assert config.make_estimator().method == "select"
    code = main(["fit", "--dataset", "breast_cancer", "--max-evals", "6", "--seed", "0",
                 "--method", "select", "--z-solver", "cmab", "--search-space", "paper_small",
                 "--output", str(tmp_path)])
    assert code == 0
    assert "method: select" in (tmp_path / "config.resolved.yaml").read_text()
    with pytest.raises(SystemExit):
        main(["fit", "--method", "nope"])
