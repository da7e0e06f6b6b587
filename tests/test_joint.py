"""The baselines without the ADMM split (admm_automl/joint.py): JOPT over the joint space and
algorithm selection with θ at its defaults; and their ``method`` switch in the estimator, YAML and
the command line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from admm_automl.admm import ADMMOptimizer, Schedule
from admm_automl.exceptions import InvalidParameterError
from admm_automl.joint import OPTIMIZERS, JointOptimizer, SelectionOptimizer
from admm_automl.solvers import THETA_SOLVERS, Z_SOLVERS
from admm_automl.space import space_from_dict
from admm_automl.records import Observation

def _space(extra_prep: int = 0, extra_model: int = 0):
    """prep {none, p(w), q, + extra} x model {a(n, c), b(lr), + extra}; extra choices are plain."""
    prep = [
        {"name": "none"},
        {"name": "p", "class": "fake.P", "hyperparameters": {
            "w": {"type": "float", "low": 0.0, "high": 1.0, "default": 0.5}}},
        {"name": "q", "class": "fake.Q"},
    ] + [{"name": f"p{i}", "class": f"fake.P{i}"} for i in range(extra_prep)]
    model = [
        {"name": "a", "class": "fake.A", "hyperparameters": {
            "n": {"type": "int", "low": 1, "high": 9, "default": 5},
            "c": {"type": "categorical", "choices": ["x", "y", "z"], "default": "x"}}},
        {"name": "b", "class": "fake.B", "hyperparameters": {
            "lr": {"type": "float", "low": 1e-3, "high": 1.0, "log": True, "default": 0.1}}},
    ] + [{"name": f"m{i}", "class": f"fake.M{i}"} for i in range(extra_model)]
    return space_from_dict({
        "name": "synthetic_joint",
        "initial": {"classification": {"prep": "none", "model": "a"}},
        "modules": [{"name": "prep", "choices": prep}, {"name": "model", "choices": model}],
    })


SPACE = _space()  # 3 x 2 = 6 pipelines
BIG = _space(3, 4)  # 6 x 6 = 36 pipelines
ENC = SPACE.encoding


def toy_loss(config: dict) -> float:
    model, prep = config["model"], config["prep"]
    loss = {"a": 0.5, "b": 0.3}.get(model, 0.4 + 0.01 * len(model)) + {"none": 0.1, "p": 0.0}.get(
        prep, 0.2
    )
    if model == "a":
        loss += 0.02 * abs(config["model__n"] - 7)
    if model == "b":
        loss += 0.05 * abs(np.log10(config["model__lr"]) + 2)
    if prep == "p":
        loss += 0.1 * abs(config["prep__w"] - 0.2)
    return float(loss)


class Engine:
    """A cached black box that records every new request (z, θ, fidelity, phase)."""

    def __init__(self, fidelity_bias: float = 0.0, space=SPACE):
        self.calls: list[tuple] = []
        self.cache: dict[str, Observation] = {}
        self.fidelity_bias = fidelity_bias
        self.space = space

    def __call__(self, requests, time_left=None, tags=None):
        out = []
        for r in requests:
            key = f"{self.space.key(r.z, r.theta)}|{r.fidelity:.6g}"
            if key in self.cache:
                out.append(Observation(**{**self.cache[key].__dict__, "cached": True}))
                continue
            self.calls.append((r.z, np.array(r.theta), r.fidelity, tags["phase"]))
            config = self.space.decode(r.z, r.theta)
            loss = toy_loss(config) + self.fidelity_bias * (1 - r.fidelity)
            obs = Observation(loss=loss, fidelity=r.fidelity)
            self.cache[key] = obs
            out.append(obs)
        return out


def make(cls, engine=None, theta="random", z="random", space=SPACE, **kwargs):
    kwargs.setdefault("max_evals", 30)
    kwargs.setdefault("schedule", Schedule(4, 0, 4))
    return cls(
        space.encoding, engine or Engine(space=space),
        lambda: THETA_SOLVERS.create(theta), lambda: Z_SOLVERS.create(z),
        seed=kwargs.pop("seed", 0), **kwargs,
    )


# ----------------------------------------------------------------------------- JOPT
def test_joint_encoding_places_choices_like_categorical_hyperparameters():
    opt = make(JointOptimizer)
    assert opt.dim == 2 + ENC.theta_dim
    theta = ENC.project(ENC.initial_theta)
    for z in [(0, 0), (1, 1), (2, 0), (2, 1)]:
        x = opt.encode(z, theta)
        assert x[0] == z[0] / 2 and x[1] == z[1] / 1
        z2, theta2 = opt.decode(x)
        assert z2 == z and np.array_equal(theta2, theta)
    assert opt.decode(np.r_[0.26, 0.49, theta])[0] == (1, 0)  # nearest choice
    assert opt.decode(np.r_[0.24, 0.51, theta])[0] == (0, 1)


@pytest.mark.parametrize("theta_solver", THETA_SOLVERS.names())
def test_jopt_runs_one_theta_solver_over_the_joint_space(theta_solver):
    """Any registered θ-solver drives JOPT: the budget is exact, every evaluation after the initial
    one is a full-fidelity 'joint' one, and the incumbent is the best of them."""
    engine = Engine()
    result = make(JointOptimizer, engine, theta=theta_solver, max_evals=12).run()
    assert result.n_evals == 12 == len(engine.calls)
    assert [c[3] for c in engine.calls] == ["initial"] + ["joint"] * 11
    assert all(c[2] == 1.0 for c in engine.calls)
    losses = [e.observation.loss for e in result.evaluated]
    assert result.incumbent.observation.loss == min(losses)
    assert result.stop_reason == "max_evals"
    assert [row["iteration"] for row in result.trace] == list(range(len(result.trace)))


def test_jopt_explores_algorithms_and_hyperparameters_together():
    engine = Engine()
    make(JointOptimizer, engine, max_evals=40, seed=1).run()
    zs = {c[0] for c in engine.calls}
    assert len(zs) == 6  # every pipeline of the 3 × 2 space is reached
    thetas = np.array([c[1] for c in engine.calls])
    assert len(np.unique(thetas[:, ENC.theta_names.index("model:b:lr")])) > 10


def test_jopt_is_reproducible_and_the_seed_matters():
    a = [c[:1] + (c[1].tolist(),) for c in _calls(JointOptimizer, seed=5)]
    b = [c[:1] + (c[1].tolist(),) for c in _calls(JointOptimizer, seed=5)]
    c = [c[:1] + (c[1].tolist(),) for c in _calls(JointOptimizer, seed=6)]
    assert a == b and a != c


def _calls(cls, **kwargs):
    engine = Engine()
    make(cls, engine, **kwargs).run()
    return engine.calls


def test_jopt_callback_stops_the_run():
    rows = []
    stop = lambda row: rows.append(row) or len(rows) == 2  # noqa: E731
    result = make(JointOptimizer, max_evals=100, callback=stop).run()
    assert result.stop_reason == "callback" and len(result.trace) == 2


# ----------------------------------------------------------------------------- selection only
@pytest.mark.parametrize("z_solver", ["random", "cmab", "blds", "hyperband", "daub", "bo"])
def test_selection_keeps_theta_at_the_defaults(z_solver):
    engine = Engine(space=BIG)
    result = make(SelectionOptimizer, engine, z=z_solver, space=BIG, max_evals=15,
                  n_train=1600).run()
    default = BIG.encoding.project(BIG.encoding.initial_theta)
    assert result.n_evals == 15 == len(engine.calls)
    assert all(np.array_equal(BIG.encoding.project(c[1]), default) for c in engine.calls)
    assert [c[3] for c in engine.calls] == ["initial"] + ["z"] * 14
    full = [e.observation.loss for e in result.evaluated if e.observation.fidelity >= 1.0]
    assert result.incumbent.observation.loss == min(full)


def test_selection_keeps_one_z_problem_so_blds_never_repeats_a_request():
    """One z-solver and one z-problem for the whole run: BLDS's cache stays valid, nothing is
    asked twice, and partial fidelities are used."""
    engine = Engine(fidelity_bias=0.1, space=BIG)
    opt = make(SelectionOptimizer, engine, z="blds", space=BIG, max_evals=60, n_train=1600)
    result = opt.run()
    assert opt._z_solver_instance.problem_.history[0][0] == ENC.initial_z
    keys = [(c[0], c[2]) for c in engine.calls]
    assert len(set(keys)) == len(keys) == 60
    assert min(c[2] for c in engine.calls) == pytest.approx(100 / 1600)
    assert not any(e.observation.cached for e in result.evaluated)


def test_selection_stops_when_the_space_is_exhausted():
    result = make(SelectionOptimizer, z="blds", max_evals=500).run()  # 6 pipelines, full only
    assert result.stop_reason == "exhausted" and result.n_evals == 6


def test_optimizer_classes_share_the_admm_budget_logic():
    assert OPTIMIZERS == {"admm": ADMMOptimizer, "jopt": JointOptimizer,
                          "select": SelectionOptimizer}
    assert issubclass(JointOptimizer, ADMMOptimizer)
    assert issubclass(SelectionOptimizer, ADMMOptimizer)
    assert JointOptimizer._evaluate is ADMMOptimizer._evaluate


# ----------------------------------------------------------------------------- estimator, YAML, CLI
@pytest.fixture(scope="module")
def data():
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    return X[:, :8], y


def _tiny():
    from admm_automl.testing import tiny_space

    return tiny_space()


@pytest.mark.parametrize("method", ["admm", "jopt", "select"])
def test_estimator_method(data, method):
    from admm_automl import ADMM

    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ADMM(search_space=_tiny(), method=method, z_solver="blds", max_evals=10,
                     random_state=0).fit(X, y)
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

    with pytest.raises(InvalidParameterError, match="method must be 'admm', 'jopt' or 'select'"):
        ADMM(method="joint", max_evals=2).fit(*data)


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
                     random_state=0).fit(X, y)
    history = model.history_
    assert len(history) == 60 and not history["key"].duplicated().any()
    assert history["fidelity"].min() == pytest.approx(100 / history["n_train"].max(), rel=0.02)
    assert model.best_loss_ < 0.05 and model.predict(X).shape == (len(y),)


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
