"""Search-space extensions: low-cost points, training lengths of iterative learners, optional
algorithms (``requires``), data-size limits (``max_rows`` / ``for_data``) and the ``default`` and
``iterative`` built-in spaces (every algorithm fits at its defaults and at its low-cost point)."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import logging
import re
import warnings

import numpy as np
import pytest

from admm_automl._yaml import read_yaml
from admm_automl.cli import main
from admm_automl.exceptions import ConfigError, InvalidParameterError, MissingDependencyError
from admm_automl.space import (
    Algorithm,
    Categorical,
    Fixed,
    Float,
    Int,
    Iterations,
    load_space,
    space_from_dict,
)
from admm_automl.space import loader
from admm_automl.space.space import import_class

PAPER_SPACES = ("blds", "paper_large", "paper_small")
NEW_SPACES = ("default", "iterative")


# ----------------------------------------------------------------------------- helpers
def make_space_dict() -> dict:
    """A small space: a scaler module and an estimator module with an iterative forest, an SVM
    limited to 500 rows and an optional LightGBM."""
    return {
        "name": "ext",
        "initial": {
            "classification": {"scaler": "none", "estimator": "forest"},
            "regression": {"scaler": "none", "estimator": "forest"},
        },
        "modules": [
            {
                "name": "scaler",
                "choices": [
                    {"name": "none"},
                    {"name": "standard", "class": "sklearn.preprocessing.StandardScaler"},
                ],
            },
            {
                "name": "estimator",
                "choices": [
                    {
                        "name": "forest",
                        "class": "sklearn.ensemble.RandomForestClassifier",
                        "task": "classification",
                        "iterations": {"parameter": "n_estimators", "method": "warm_start"},
                        "hyperparameters": {
                            "n_estimators": {
                                "type": "log-int", "low": 4, "high": 512, "default": 100, "low_cost": 4,
                            },
                            "max_features": {
                                "type": "log-float", "low": 0.01, "high": 1.0, "default": 0.25,
                                "low_cost": 0.3,
                            },
                            "criterion": {
                                "type": "categorical", "choices": ["gini", "entropy"], "default": "gini",
                            },
                            "max_depth": {
                                "type": "categorical", "choices": [1, 4, 16, None], "default": None,
                                "low_cost": 1,
                            },
                            "n_jobs": {"type": "fixed", "value": 1},
                        },
                    },
                    {
                        "name": "forest",
                        "class": "sklearn.ensemble.RandomForestRegressor",
                        "task": "regression",
                        "hyperparameters": {
                            "n_estimators": {"type": "int", "low": 4, "high": 512, "default": 100},
                        },
                    },
                    {
                        "name": "svm",
                        "class": "sklearn.svm.SVC",
                        "task": "classification",
                        "max_rows": 500,
                        "hyperparameters": {
                            "C": {"type": "log-float", "low": 0.03125, "high": 32768.0, "default": 1.0,
                                  "low_cost": 0.03125},
                        },
                    },
                    {
                        "name": "lightgbm",
                        "class": "lightgbm.LGBMClassifier",
                        "task": "classification",
                        "requires": ["lightgbm"],
                    },
                ],
            },
        ],
    }


def _mutate(fn):
    d = make_space_dict()
    fn(d)
    return d


def _algo(d, j=0):
    return d["modules"][1]["choices"][j]


def _hp(d, name, j=0):
    return _algo(d, j)["hyperparameters"][name]


@pytest.fixture
def missing(monkeypatch):
    """Pretend that exactly the import names added to the returned set are not installed (so that
    the tests do not depend on the optional extras); the built-in cache is cleared before and
    after, so that no other test sees a space loaded under the pretence."""
    gone: set[str] = set()
    monkeypatch.setattr(loader, "module_available", lambda name: name not in gone)
    loader._load_builtin.cache_clear()
    yield gone
    loader._load_builtin.cache_clear()


@pytest.fixture
def space(missing):
    return space_from_dict(make_space_dict())


# ----------------------------------------------------------------------------- low_cost: domains
def test_low_cost_on_each_domain_type():
    f = Float("c", low=1e-3, high=10.0, log=True, default=1.0, low_cost=0.3)
    i = Int("n", low=4, high=512, log=True, default=100, low_cost=4)
    c = Categorical("h", choices=[[16], [32, 32]], default=[32, 32], low_cost=[16])
    assert f.low_cost == 0.3 and i.low_cost == 4 and c.low_cost == (16,)  # lists become tuples
    assert i.low_cost_unit == 0.0 and c.low_cost_unit == 0.0
    assert f.low_cost_unit == pytest.approx((np.log(0.3) - np.log(1e-3)) / (np.log(10.0) - np.log(1e-3)))
    # a float decodes its low-cost coordinate exactly, despite rounding in exp/log
    assert f.from_unit(f.low_cost_unit) == 0.3
    assert Float("x", low=0.0, high=1.0, default=0.5).low_cost is None
    assert Float("x", low=0.0, high=1.0, default=0.5).low_cost_unit is None


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: Float("c", low=0.1, high=10.0, default=1.0, low_cost=20.0),
         r"'c': low_cost 20\.0 is outside \[0\.1, 10\.0\]"),
        (lambda: Float("c", low=0.1, high=10.0, default=1.0, low_cost="low"),
         r"'c': low_cost='low' must be a finite number"),
        (lambda: Float("c", low=0.1, high=10.0, default=1.0, low_cost=True),
         r"'c': low_cost=True must be a finite number"),
        (lambda: Int("n", low=4, high=512, default=100, low_cost=2),
         r"'n': low_cost 2 is outside \[4, 512\]"),
        (lambda: Int("n", low=4, high=512, default=100, low_cost=4.5),
         r"'n': low_cost=4\.5 must be an integer"),
        (lambda: Categorical("k", choices=["a", "b"], default="a", low_cost="c"),
         r"'k': low_cost 'c' is not one of \['a', 'b'\]"),
        (lambda: Fixed("j", value=1, low_cost=1), r"'j': a fixed value .* has no low_cost"),
    ],
)
def test_low_cost_outside_the_domain_raises(make, message):
    with pytest.raises(InvalidParameterError, match=message):
        make()


# ----------------------------------------------------------------------------- low_cost: YAML
@pytest.mark.parametrize(
    "mutation, message",
    [
        (lambda d: _hp(d, "n_estimators").update(low_cost=1000),
         r"^modules\[1\]\.choices\[0\]\.hyperparameters\.n_estimators: .*low_cost 1000 is outside "
         r"\[4, 512\]"),
        (lambda d: _hp(d, "criterion").update(low_cost="log_loss"),
         r"^modules\[1\]\.choices\[0\]\.hyperparameters\.criterion: .*low_cost 'log_loss' is not one of"),
        (lambda d: _hp(d, "n_estimators").update(low_cost=None),
         r"^modules\[1\]\.choices\[0\]\.hyperparameters\.n_estimators\.low_cost: null is not a low-cost "
         r"value \(omit the key"),
        (lambda d: _hp(d, "n_jobs").update(low_cost=1),
         r"^modules\[1\]\.choices\[0\]\.hyperparameters\.n_jobs\.low_cost: unknown key\..* "
         r"Allowed: condition, type, value$"),
        (lambda d: _hp(d, "n_estimators").update(lowcost=4),
         r"n_estimators\.lowcost: unknown key\. Did you mean 'low_cost'\?"),
    ],
)
def test_low_cost_yaml_errors_name_the_key_path(mutation, message):
    with pytest.raises(ConfigError, match=message):
        space_from_dict(_mutate(mutation))


def test_encoding_low_cost_array_mask_and_start_point(space):
    clf = space.for_task("classification")
    enc = clf.encoding
    names = enc.theta_names
    expected = {
        "estimator:forest:n_estimators": 0.0,
        "estimator:forest:max_features": (np.log(0.3) - np.log(0.01)) / (0.0 - np.log(0.01)),
        "estimator:forest:max_depth": 0.0,
        "estimator:svm:C": 0.0,
    }
    assert [names[i] for i in np.flatnonzero(enc.has_low_cost)] == list(expected)
    np.testing.assert_allclose(enc.low_cost[enc.has_low_cost], list(expected.values()))
    assert np.isnan(enc.low_cost[names.index("estimator:forest:criterion")])
    assert enc.has_low_cost.dtype == bool and enc.low_cost.shape == (enc.theta_dim,)

    start = enc.with_low_cost(enc.initial_theta)
    config = clf.decode((0, 0), start)
    assert config["estimator__n_estimators"] == 4 and config["estimator__max_depth"] == 1
    assert config["estimator__max_features"] == 0.3
    assert config["estimator__criterion"] == "gini"  # no low-cost value: keeps its default
    # on an active set only
    active = enc.active((0, 1))
    np.testing.assert_array_equal(enc.with_low_cost(enc.initial_theta[active], active), [0.0])
    # a space without low-cost points: all NaN, and the start point is theta itself
    def without_low_cost(d):
        for algo in d["modules"][1]["choices"]:
            for domain in algo.get("hyperparameters", {}).values():
                domain.pop("low_cost", None)

    plain = space_from_dict(_mutate(without_low_cost))
    assert not plain.encoding.has_low_cost.any() and np.isnan(plain.encoding.low_cost).all()


# ----------------------------------------------------------------------------- low_cost: built-ins
_COST_RELATED = {"n_estimators", "max_iter", "n_neighbors", "max_depth", "max_leaf_nodes", "num_leaves",
                 "n_iter", "max_iter_predict", "estimator__max_depth"}


@pytest.mark.parametrize("name", PAPER_SPACES + NEW_SPACES)
def test_builtin_cost_related_integers_start_at_their_cheapest(name):
    """Every tunable trees / depth / leaves / iterations / neighbours integer of a built-in declares
    low_cost at its smallest value, and an integer n_components too (a kernel's degree does not
    change the kernel's cost and carries none)."""
    missing_low_cost = []
    for module in load_space(name).modules:
        for algo in module.choices:
            for hp in algo.tunable:
                cost_related = hp.name in _COST_RELATED or (hp.name == "n_components" and isinstance(hp, Int))
                if cost_related and isinstance(hp, Int):
                    if hp.low_cost != hp.low:
                        missing_low_cost.append((algo.name, hp.name, hp.low_cost))
                elif cost_related and isinstance(hp, Categorical):  # decision trees' max_depth
                    assert hp.low_cost == min(c for c in hp.choices if c is not None), (algo.name, hp.name)
    assert missing_low_cost == []


def test_builtin_low_cost_values_spot_checks():
    pytest.importorskip("lightgbm", reason="the default space's LightGBM ([boost] extra)")
    pytest.importorskip("xgboost", reason="the default space's XGBoost ([boost] extra)")

    def hp(space, algo_name, hp_name, task="classification"):
        est = load_space(space).for_task(task).modules[-1]
        return next(h for h in est.choices[est.index(algo_name)].hyperparameters if h.name == hp_name)

    assert hp("default", "lightgbm", "num_leaves").low_cost == 4
    assert hp("default", "xgboost", "max_depth").low_cost == 1
    assert hp("default", "svm", "estimator__C").low_cost == 0.03125
    assert hp("default", "svm", "regressor__C", "regression").low_cost == 0.03125
    assert hp("iterative", "mlp", "batch_size").low_cost == 512  # the largest batch is the cheapest epoch
    assert hp("iterative", "mlp", "hidden_layer_sizes").low_cost == (16,)
    poly = next(a for a in load_space("paper_large").modules[1].choices if a.name == "polynomial_features")
    assert {h.name: h.low_cost for h in poly.tunable} == {
        "degree": 2, "interaction_only": True, "include_bias": None,
    }


# ----------------------------------------------------------------------------- iterations
def test_iterations_defaults_come_from_the_parameter(space):
    """t_min / t_max default to an int's range, or to 1 and a fixed value."""
    forest = space.for_task("classification").modules[1].choices[0]
    assert forest.iterations == Iterations("n_estimators", 4, 512, "warm_start")
    with pytest.raises(dataclasses.FrozenInstanceError):
        forest.iterations.t_max = 5  # type: ignore[misc]

    def fixed_length(d):
        _algo(d, 1)["hyperparameters"]["n_estimators"] = {"type": "fixed", "value": 64}
        _algo(d, 1)["iterations"] = {"parameter": "n_estimators", "method": "partial_fit"}

    reg = space_from_dict(_mutate(fixed_length)).for_task("regression").modules[1].choices[0]
    assert reg.iterations == Iterations("n_estimators", 1, 64, "partial_fit")


def test_iterations_explicit_range(space):
    d = _mutate(lambda d: _algo(d)["iterations"].update(t_min=1, t_max=256))
    it = space_from_dict(d).modules[1].choices[0].iterations
    assert (it.t_min, it.t_max) == (1, 256)  # t_min may lie below the hyperparameter's low


@pytest.mark.parametrize(
    "mutation, message",
    [
        (lambda d: _algo(d)["iterations"].update(parameter="n_trees"),
         r"^modules\[1\]\.choices\[0\]\.iterations: parameter 'n_trees' is not a hyperparameter of "
         r"'forest'; declare it"),
        (lambda d: _algo(d)["iterations"].update(parameter="max_features"),
         r"iterations: parameter 'max_features' must be an int or a fixed integer hyperparameter, got Float"),
        (lambda d: _algo(d)["iterations"].update(parameter="criterion"),
         r"iterations: parameter 'criterion' must be an int .* got Categorical"),
        (lambda d: _algo(d)["iterations"].update(t_max=1024),
         r"iterations: t_max=1024 is outside the range \[4, 512\] of 'n_estimators'"),
        (lambda d: _algo(d)["iterations"].update(t_min=600),
         r"iterations: need 1 <= t_min < t_max, got t_min=600, t_max=512"),
        (lambda d: _algo(d)["iterations"].update(t_min=0),
         r"iterations: need 1 <= t_min < t_max, got t_min=0"),
        (lambda d: _algo(d)["iterations"].update(t_max=100.5),
         r"iterations: t_max=100\.5 must be an integer"),
        (lambda d: _algo(d)["iterations"].update(method="warmstart"),
         r"iterations\.method: 'warmstart' is not one of warm_start, partial_fit\. Did you mean "
         r"'warm_start'\?"),
        (lambda d: _algo(d)["iterations"].pop("method"),
         r"^modules\[1\]\.choices\[0\]\.iterations\.method: required key is missing"),
        (lambda d: _algo(d)["iterations"].update(tmax=5),
         r"iterations\.tmax: unknown key\. Did you mean 't_max'\?"),
        (lambda d: _algo(d).update(iterations="n_estimators"),
         r"^modules\[1\]\.choices\[0\]\.iterations: expected a mapping, got str"),
        (lambda d: _algo(d)["iterations"].update(parameter="n_jobs", t_max=10),
         r"iterations: t_max=10 differs from the fixed value 1 of 'n_jobs'"),
        (lambda d: _hp(d, "n_estimators").update(condition={"criterion": ["gini"]}),
         r"iterations: parameter 'n_estimators' has a condition"),
    ],
)
def test_iterations_yaml_errors(mutation, message):
    with pytest.raises(ConfigError, match=message):
        space_from_dict(_mutate(mutation))


def test_iterations_python_checks():
    n = Int("n_estimators", low=10, high=100, default=50)
    with pytest.raises(InvalidParameterError, match=r"method 'fit' is not one of warm_start, partial_fit"):
        Iterations("n_estimators", 1, 100, "fit")
    with pytest.raises(InvalidParameterError, match=r"t_max=200 is outside the range \[10, 100\]"):
        Algorithm("rf", "sklearn.ensemble.RandomForestClassifier", (n,),
                  iterations=Iterations("n_estimators", 1, 200, "warm_start"))
    algo = Algorithm("rf", "sklearn.ensemble.RandomForestClassifier", (n,),
                     iterations=Iterations("n_estimators", 10, 100, "warm_start"))
    assert algo.iterations.t_max == 100 and algo.requires == () and algo.max_rows is None


def test_space_queries_for_iterative_algorithms(space):
    clf = space.for_task("classification")
    assert [(m, a.name) for m, a in clf.iterative_algorithms()] == [("estimator", "forest")]
    assert clf.iterations((1, 0)) == {"estimator": Iterations("n_estimators", 4, 512, "warm_start")}
    assert clf.iterations((1, 1)) == {}  # the SVM declares none
    with pytest.raises(ValueError, match=r"invalid algorithm choice \(0, 5\)"):
        clf.iterations((0, 5))
    assert space.for_task("regression").iterative_algorithms() == ()


_EXPECTED_ITERATIVE = {
    "paper_small": {"gradient_boosting", "random_forest", "extra_trees", "gradient_boosting_regressor",
                    "random_forest_regressor", "extra_trees_regressor"},
    "paper_large": {"gradient_boosting", "random_forest", "extra_trees", "mlp",
                    "gradient_boosting_regressor", "random_forest_regressor", "extra_trees_regressor",
                    "mlp_regressor"},
    "blds": {"random_forest", "extra_trees", "random_forest_regressor", "extra_trees_regressor"},
    "default": {"hist_gradient_boosting", "random_forest", "extra_trees"},
    "iterative": {"hist_gradient_boosting", "mlp", "sgd"},
}


@pytest.mark.parametrize("name", sorted(_EXPECTED_ITERATIVE))
def test_builtin_iterations_where_scikit_learn_continues_training(name):
    """The declared algorithms are the expected ones, and each class supports its method: a
    warm_start parameter, or a partial_fit method."""
    declared = load_space(name).iterative_algorithms()
    assert {a.name for _, a in declared} == _EXPECTED_ITERATIVE[name]
    for _, algo in declared:
        cls = import_class(algo.class_path)
        if algo.iterations.method == "warm_start":
            assert "warm_start" in inspect.signature(cls).parameters, algo.class_path
        else:
            assert callable(getattr(cls, "partial_fit", None)), algo.class_path
        assert algo.iterations.parameter in inspect.signature(cls).parameters
    # the iterative space trains every learner to exactly t_max = 100 when nothing varies t
    if name == "iterative":
        for _, algo in declared:
            fixed = {h.name: h.value for h in algo.hyperparameters if isinstance(h, Fixed)}
            assert algo.iterations.t_max == fixed[algo.iterations.parameter] == 100
            assert algo.iterations.t_min == 1


# ----------------------------------------------------------------------------- requires
def test_module_available():
    assert loader.module_available("sklearn") and loader.module_available("sklearn.ensemble")
    assert not loader.module_available("no_such_package_xyz")
    assert not loader.module_available("no_such_package_xyz.sub")


def test_missing_package_leaves_the_algorithm_out(missing, caplog):
    missing.add("lightgbm")
    with caplog.at_level(logging.INFO, logger="admm_automl.space.loader"):
        space = space_from_dict(make_space_dict())
    assert [a.name for a in space.modules[1].choices] == ["forest", "forest", "svm"]
    assert space.skipped == (("estimator", "lightgbm", "requires lightgbm, not installed"),)
    assert "left out estimator:lightgbm (requires lightgbm, not installed)" in caplog.text
    assert space.for_task("classification").skipped == space.skipped
    # asked for by name (FLAML's estimator_list, a warm start), it names the missing package, not
    # a typo; a real typo is still one
    clf = space.for_task("classification")
    missing_lightgbm = (r"choice 'lightgbm' was left out of this space: requires lightgbm, not "
                        r"installed \(pip install it; pip install admm-automl\[boost\]")
    with pytest.raises(MissingDependencyError, match=missing_lightgbm):
        clf.restrict(estimator=["svm", "lightgbm"])
    with pytest.raises(MissingDependencyError, match=missing_lightgbm):
        clf.encode({"estimator": "lightgbm"})
    with pytest.raises(InvalidParameterError, match=r"Unknown choice 'lightgbn'") as typo:
        clf.encode({"estimator": "lightgbn"})
    assert not isinstance(typo.value, MissingDependencyError)


def test_installed_package_keeps_the_algorithm(space):
    algo = space.modules[1].choices[3]
    assert algo.name == "lightgbm" and algo.requires == ("lightgbm",)
    assert space.skipped == ()


def test_module_left_empty_names_the_missing_packages(missing):
    missing.update({"lightgbm", "xgboost"})
    d = _mutate(lambda d: d["modules"].append({"name": "booster", "choices": [
        {"name": "lgbm", "class": "lightgbm.LGBMClassifier", "requires": ["lightgbm"]},
        {"name": "xgb", "class": "xgboost.XGBClassifier", "requires": ["xgboost", "sklearn"]},
    ]}))
    with pytest.raises(ConfigError, match=r"^modules\[2\]\.choices: no classification choice is left: "
                                          r"every one requires a missing package \(lightgbm, xgboost\)"):
        space_from_dict(d)
    # one task's part emptied is an error too
    d = _mutate(lambda d: d["modules"][1]["choices"].__setitem__(
        1, {**_algo(d, 1), "requires": ["xgboost"]}))
    with pytest.raises(ConfigError, match=r"no regression choice is left: .* \(xgboost\)"):
        space_from_dict(d)


def test_initial_pipeline_may_not_need_a_missing_package(missing):
    missing.add("lightgbm")
    d = _mutate(lambda d: d["initial"]["classification"].update(estimator="lightgbm"))
    with pytest.raises(ConfigError, match=r"^initial\.classification\.estimator: 'lightgbm' was left out "
                                          r"\(requires lightgbm, not installed\)"):
        space_from_dict(d)


@pytest.mark.parametrize(
    "value, message",
    [("lightgbm", r"requires: expected a non-empty list"), ([], r"requires: expected a non-empty list"),
     (["light-gbm"], r"requires: 'light-gbm' is not an import name"), ([3], r"requires: 3 is not")],
)
def test_requires_validation(value, message):
    with pytest.raises(ConfigError, match=r"^modules\[1\]\.choices\[3\]\." + message):
        space_from_dict(_mutate(lambda d: _algo(d, 3).update(requires=value)))


def test_default_space_without_lightgbm_xgboost_and_catboost(missing):
    missing.update({"lightgbm", "xgboost", "catboost"})
    space = load_space("default")
    names = {a.name for a in space.modules[1].choices}
    assert not names & {"lightgbm", "xgboost", "catboost"} and "hist_gradient_boosting" in names
    assert space.skipped == (
        ("estimator", "lightgbm", "requires lightgbm, not installed"),
        ("estimator", "xgboost", "requires xgboost, not installed"),
        ("estimator", "catboost", "requires catboost, not installed"),
    )  # one entry per name, not per task variant
    assert space.for_task("regression").n_pipelines == 3 * 6


def test_cli_list_notes_left_out_algorithms(missing, capsys):
    assert main(["list"]) == 0
    assert "note:" not in capsys.readouterr().out
    loader._load_builtin.cache_clear()
    missing.add("xgboost")
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    notes = [line for line in out.splitlines() if "note:" in line]
    assert notes == [" " * 19 + "note: left out xgboost (requires xgboost, not installed)"]
    lines = out.splitlines()
    assert lines[lines.index(notes[0]) - 1].startswith("  default ")


# ----------------------------------------------------------------------------- max_rows / for_data
def test_for_data_drops_algorithms_over_their_limit(space):
    clf = space.for_task("classification")
    assert [a.name for a in clf.for_data(500).modules[1].choices] == ["forest", "svm", "lightgbm"]
    big = clf.for_data(501)
    assert [a.name for a in big.modules[1].choices] == ["forest", "lightgbm"]
    assert big.skipped == (("estimator", "svm", "max_rows=500 < 501 rows"),)
    with pytest.raises(InvalidParameterError, match=r"choice 'svm' was left out of this space: "
                                                    r"max_rows=500 < 501 rows") as left_out:
        big.restrict(estimator="svm")
    assert not isinstance(left_out.value, MissingDependencyError)
    assert big.initial == clf.initial and big.encoding.initial_z == (0, 0)
    assert big.modules[0] == clf.modules[0]
    assert big.encoding.theta_dim == clf.encoding.theta_dim - 1  # the SVM's C is gone


def test_for_data_never_empties_a_module():
    """When every choice serving a task exceeds its limit, those with the largest max_rows stay."""
    d = {"name": "limits", "initial": {"classification": {"estimator": "small"}}, "modules": [
        {"name": "estimator", "choices": [
            {"name": "small", "class": "sklearn.svm.SVC", "task": "classification", "max_rows": 100},
            {"name": "medium", "class": "sklearn.svm.SVC", "task": "classification", "max_rows": 1000},
            {"name": "also_medium", "class": "sklearn.svm.SVC", "task": "classification", "max_rows": 1000},
            {"name": "reg", "class": "sklearn.svm.SVR", "task": "regression", "max_rows": 50},
            {"name": "reg_free", "class": "sklearn.linear_model.Ridge", "task": "regression"},
        ]},
    ]}
    space = space_from_dict(d)
    sub = space.for_data(10_000)
    assert [a.name for a in sub.modules[0].choices] == ["medium", "also_medium", "reg_free"]
    assert {c for _, c, _ in sub.skipped} == {"small", "reg"}
    # the initial pipeline named a removed choice: it falls back to the first remaining one
    clf = space.for_task("classification").for_data(10_000)
    assert clf.initial == {"classification": {}} and clf.encoding.initial_z == (0,)
    assert clf.modules[0].choices[0].name == "medium"
    assert [a.name for a in space.for_data(100).modules[0].choices] == [
        "small", "medium", "also_medium", "reg_free"]


@pytest.mark.parametrize("value", [0, -1, "many", True, 1.5])
def test_max_rows_validation(value):
    with pytest.raises(ConfigError, match=rf"^modules\[1\]\.choices\[2\]: algorithm '\w+': "
                                          rf"max_rows={re.escape(repr(value))} must be a positive integer"):
        space_from_dict(_mutate(lambda d: _algo(d, 2).update(max_rows=value)))


@pytest.mark.parametrize("n_rows", [-1, 2.5, "10"])
def test_for_data_rejects_bad_row_counts(space, n_rows):
    with pytest.raises(InvalidParameterError, match=r"n_rows must be a non-negative integer"):
        space.for_data(n_rows)


def test_default_svm_is_for_small_data():
    for task in ("classification", "regression"):
        sub = load_space("default").for_task(task)
        assert "svm" in {a.name for a in sub.for_data(5000).modules[1].choices}
        assert "svm" not in {a.name for a in sub.for_data(5001).modules[1].choices}


# ----------------------------------------------------------------------------- default / iterative
@pytest.mark.parametrize("task", ["classification", "regression"])
def test_default_space_initial_pipeline_is_hist_gradient_boosting_at_its_defaults(task):
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    sub = load_space("default").for_task(task)
    enc = sub.encoding
    pipe = sub.to_pipeline(enc.initial_z, enc.initial_theta)
    assert pipe.steps[0][1] == "passthrough"
    est = pipe.steps[-1][1]
    assert type(est) is (HistGradientBoostingClassifier if task == "classification"
                         else HistGradientBoostingRegressor)
    changed = {k: v for k, v in est.get_params().items() if v != type(est)().get_params()[k]}
    # scikit-learn's defaults, except what the space states: auto-sklearn's 'off' early stopping
    # and 1e-10 (= none) L2 regularisation, since scikit-learn's 'auto' and 0 are not in the domains
    assert changed == {"early_stopping": False, "l2_regularization": 1e-10}
    boosters = {p for p in ("lightgbm", "xgboost", "catboost") if loader.module_available(p)}
    assert {a.name for a in sub.modules[1].choices} == boosters | {
        "hist_gradient_boosting", "random_forest", "extra_trees", "k_neighbors", "svm",
        "logistic_regression" if task == "classification" else "ridge"}
    assert [a.name for a in sub.modules[0].choices] == ["none", "standard_scaler", "quantile_transformer"]


def test_default_space_optional_learners_and_thread_counts():
    for algo in load_space("default").modules[1].choices:
        package = algo.class_path.split(".")[0]
        assert algo.requires == (() if package == "sklearn" else (package,)), algo.name
        params = inspect.signature(import_class(algo.class_path)).parameters
        fixed = {h.name: h.value for h in algo.hyperparameters if isinstance(h, Fixed)}
        # LightGBM / XGBoost take n_jobs through **kwargs, CatBoost names it thread_count;
        # LogisticRegression's n_jobs has no effect since scikit-learn 1.8 and warns
        threads = "thread_count" if package == "catboost" else "n_jobs"
        if ("n_jobs" in params or package != "sklearn") and algo.name != "logistic_regression":
            assert fixed.get(threads) == 1, algo.name


def _new_algorithms():
    for name in NEW_SPACES:
        for task in ("classification", "regression"):
            for module in load_space(name).for_task(task).modules:
                for algo in module.choices:
                    if algo.class_path is not None:
                        yield pytest.param(name, task, module.name, algo.name,
                                           id=f"{name}-{task}-{module.name}-{algo.name}")


def _get(space_name, task, module_name, algo_name):
    sub = load_space(space_name).for_task(task)
    module = next(m for m in sub.modules if m.name == module_name)
    return module.choices[module.index(algo_name)]


@pytest.mark.parametrize("space_name, task, module_name, algo_name", list(_new_algorithms()))
def test_new_builtin_choices_reach_the_estimator(space_name, task, module_name, algo_name):
    """Every categorical choice and the default/low-cost values are passed unchanged; construction
    warns nothing (no deprecated parameter)."""
    algo = _get(space_name, task, module_name, algo_name)
    defaults = np.array([h.default_unit for h in algo.tunable])
    points = [defaults]
    for k, hp in enumerate(algo.tunable):
        if isinstance(hp, Categorical):
            for choice in hp.choices:
                units = defaults.copy()
                units[k] = hp.to_unit(choice)
                points.append(units)
    for units in points:
        params = algo.params_from_unit(units)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            deep = algo.build(params, random_state=0).get_params(deep=True)
        for key, value in params.items():
            if not isinstance(value, dict):
                assert deep[key] == value, (key, value, deep[key])


@pytest.mark.parametrize("name", NEW_SPACES)
def test_new_builtin_defaults_decode_exactly(name):
    inexact = [(a.name, h.name) for m in load_space(name).modules for a in m.choices for h in a.tunable
               if h.from_unit(h.default_unit) != h.default
               or (h.low_cost is not None and h.from_unit(h.low_cost_unit) != h.low_cost)]
    assert inexact == []


@pytest.fixture(scope="module")
def small_data():
    from sklearn.datasets import make_classification, make_regression

    Xc, yc = make_classification(240, 8, n_informative=5, random_state=0)
    Xr, yr = make_regression(240, 8, n_informative=5, noise=5.0, random_state=0)
    return {"classification": (Xc, yc), "regression": (Xr, yr)}


@pytest.mark.parametrize("space_name, task, module_name, algo_name",
                         [p for p in _new_algorithms() if p.values[2] == "estimator"])
def test_new_builtin_algorithms_fit_at_default_and_low_cost(space_name, task, module_name, algo_name,
                                                            small_data):
    """Every estimator of `default` and `iterative` fits and predicts at its defaults and at its
    low-cost point (single-threaded), behind a standard scaler, on 240 rows."""
    from sklearn.metrics import r2_score, roc_auc_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_limits

    algo = _get(space_name, task, module_name, algo_name)
    X, y = small_data[task]
    defaults = np.array([h.default_unit for h in algo.tunable])
    low = np.array([h.default_unit if h.low_cost is None else h.low_cost_unit for h in algo.tunable])
    for units in (defaults, low):
        pipe = make_pipeline(StandardScaler(), algo.build(algo.params_from_unit(units), random_state=0))
        with threadpool_limits(1), warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)  # no deprecated parameter at fit
            warnings.simplefilter("error", DeprecationWarning)
            warnings.simplefilter("ignore", UserWarning)  # MLP: batch_size clipped to 240 rows
            pipe.fit(X, y)
        if task == "classification":
            proba = pipe.predict_proba(X)
            assert proba.shape == (len(y), 2) and np.allclose(proba.sum(axis=1), 1.0)
            assert roc_auc_score(y, proba[:, 1]) > 0.75, units
        else:
            pred = pipe.predict(X)
            assert pred.shape == (len(y),) and np.isfinite(pred).all()
            # SVR and the MLP regressor underfit an unscaled target (y spans hundreds): finite only
            if algo.name not in ("svm", "mlp"):
                assert r2_score(y, pred) > 0.3, units


def test_iterative_space_structure():
    space = load_space("iterative")
    assert [m.name for m in space.modules] == ["scaler", "estimator"]
    for task in ("classification", "regression"):
        sub = space.for_task(task)
        assert [a.name for a in sub.modules[1].choices] == ["hist_gradient_boosting", "mlp", "sgd"]
        assert len(sub.iterative_algorithms()) == 3
        sgd = sub.modules[1].choices[2]
        fixed = {h.name: h.value for h in sgd.hyperparameters if isinstance(h, Fixed)}
        assert fixed["tol"] is None  # a fit from scratch runs exactly max_iter epochs


@pytest.mark.parametrize("estimator", ["mlp", "sgd"])
def test_iterative_learners_fitted_from_scratch_train_exactly_t_max_epochs(estimator):
    """Random search and BO fit these learners with fit(): scikit-learn's own convergence stop
    (the MLP's n_iter_no_change on the training loss, SGD's tol) must not end them before t_max,
    or the baselines that train to t_max would train less and cost less than BAPI's."""
    from sklearn.datasets import make_classification

    space = load_space("iterative").for_task("classification").restrict(estimator=estimator)
    enc = space.encoding
    theta = enc.initial_theta.copy()
    if estimator == "mlp":  # a fast learner on easy data: its training loss stalls by epoch ~35
        z, theta = space.encode({"scaler": "standard_scaler", "estimator": "mlp",
                                 "estimator__learning_rate_init": 0.1})
    else:
        z = enc.initial_z
    X, y = make_classification(1000, 5, n_informative=2, n_redundant=0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning at max_iter: expected
        pipe = space.to_pipeline(z, theta, preprocessor="passthrough", random_state=0).fit(X, y)
    assert pipe[-1].n_iter_ == 100


def test_builtin_yaml_files_are_not_mutated_by_loading():
    from importlib import resources

    text = resources.files("admm_automl.space").joinpath("builtin/default.yaml").read_text()
    node = read_yaml(text)
    before = copy.deepcopy(node)
    space_from_dict(node)
    assert node == before
