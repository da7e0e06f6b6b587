"""Search-space tests: hyperparameter domains, the (z, θ) encoding, conditions, strict YAML loading
and the built-in spaces (construction only; one tiny fit of the initial pipeline)."""

from __future__ import annotations

import copy
import math
import re
import warnings

import numpy as np
import pytest
import yaml

from admm_automl.exceptions import ConfigError, InvalidParameterError, UnknownComponentError
from admm_automl.space import (
    Categorical,
    Fixed,
    Float,
    Int,
    PipelineSpace,
    list_spaces,
    load_space,
    space_from_dict,
)
from admm_automl.testing import tiny_space

BUILTINS = ("blds", "paper_large", "paper_small")


# ----------------------------------------------------------------------------- helpers / factories
def make_space_dict() -> dict:
    """A small space with every domain type, a log-int alias and a condition."""
    return {
        "name": "handmade",
        "initial": {"classification": {"scaler": "none", "estimator": "nb"}},
        "modules": [
            {
                "name": "scaler",
                "choices": [
                    {"name": "none"},
                    {
                        "name": "quantile",
                        "class": "sklearn.preprocessing.QuantileTransformer",
                        "hyperparameters": {
                            "n_quantiles": {"type": "log-int", "low": 10, "high": 1000, "default": 100},
                            "output_distribution": {
                                "type": "categorical",
                                "choices": ["uniform", "normal"],
                                "default": "uniform",
                            },
                        },
                    },
                ],
            },
            {
                "name": "estimator",
                "choices": [
                    {"name": "nb", "class": "sklearn.naive_bayes.GaussianNB", "task": "classification"},
                    {
                        "name": "lr",
                        "class": "sklearn.linear_model.LogisticRegression",
                        "task": "classification",
                        "hyperparameters": {
                            "C": {"type": "float", "low": 0.01, "high": 100.0, "log": True, "default": 1.0},
                            "penalty": {
                                "type": "categorical",
                                "choices": ["l2", "elasticnet"],
                                "default": "l2",
                            },
                            "l1_ratio": {
                                "type": "float",
                                "low": 0.0,
                                "high": 1.0,
                                "default": 0.5,
                                "condition": {"penalty": ["elasticnet"]},
                            },
                            "fit_intercept": {
                                "type": "categorical",
                                "choices": [True, False],
                                "default": True,
                            },
                            "solver": {"type": "fixed", "value": "saga"},
                            "max_iter": {"type": "int", "low": 50, "high": 500, "default": 100},
                        },
                    },
                    {
                        "name": "ridge",
                        "class": "sklearn.linear_model.Ridge",
                        "task": "regression",
                        "hyperparameters": {
                            "alpha": {"type": "log-float", "low": 1e-3, "high": 10.0, "default": 1.0}
                        },
                    },
                ],
            },
        ],
    }


@pytest.fixture
def space() -> PipelineSpace:
    return space_from_dict(make_space_dict())


def _theta_key(enc, i: int) -> str:
    module, _, hp = enc.theta_names[i].split(":")
    return f"{module}__{hp}"


# ----------------------------------------------------------------------------- Float
@pytest.mark.parametrize(
    "low, high, log",
    [(0.0, 1.0, False), (-3.0, 7.5, False), (1e-4, 1e2, True), (0.03125, 32768.0, True)],
)
def test_float_round_trip_and_exact_ends(low, high, log):
    """Float maps [low, high] onto [0, 1] and back to 1e-12 relative; the ends are exact."""
    hp = Float("x", low=low, high=high, default=low, log=log)
    assert hp.to_unit(low) == 0.0 and hp.to_unit(high) == 1.0
    assert hp.from_unit(0.0) == low and hp.from_unit(1.0) == high
    rng = np.random.default_rng(0)
    if log:
        values = np.exp(rng.uniform(math.log(low), math.log(high), size=50))
    else:
        values = rng.uniform(low, high, size=50)
    for v in values:
        assert hp.from_unit(hp.to_unit(v)) == pytest.approx(v, rel=1e-12, abs=1e-15)
    for u in rng.uniform(size=50):
        assert hp.to_unit(hp.from_unit(u)) == pytest.approx(u, rel=1e-12, abs=1e-15)


def test_float_linear_and_log_scales():
    """The unit midpoint is the arithmetic mean on a linear scale and the geometric mean on a log one."""
    assert Float("x", low=2.0, high=10.0, default=2.0).from_unit(0.5) == pytest.approx(6.0)
    assert Float("x", low=1e-2, high=1e2, default=1.0, log=True).from_unit(0.5) == pytest.approx(1.0)
    assert Float("x", low=1e-2, high=1e2, default=1.0, log=True).to_unit(10.0) == pytest.approx(0.75)


def test_float_is_continuous_and_clips():
    """A float has no grid; project only clips to the unit box; from_unit clips to [low, high]."""
    hp = Float("x", low=0.0, high=2.0, default=1.0)
    assert hp.grid() is None and not hp.discrete and hp.tunable
    assert hp.project(0.3) == 0.3
    assert hp.project(1.7) == 1.0 and hp.project(-0.2) == 0.0
    assert hp.from_unit(1.5) == 2.0 and hp.from_unit(-1.0) == 0.0
    assert hp.default_unit == pytest.approx(0.5)


# ----------------------------------------------------------------------------- Int
INT_DOMAINS = [(1, 10, False), (-3, 4, False), (1, 10, True), (2, 17, True), (50, 500, True)]


@pytest.mark.parametrize("low, high, log", INT_DOMAINS)
def test_int_round_trip_is_exact_for_every_value(low, high, log):
    """from_unit(to_unit(k)) == k for every admissible integer, returned as a Python int."""
    hp = Int("k", low=low, high=high, default=low, log=log)
    for k in range(low, high + 1):
        back = hp.from_unit(hp.to_unit(k))
        assert back == k and type(back) is int
    assert hp.to_unit(low) == 0.0 and hp.to_unit(high) == 1.0


@pytest.mark.parametrize("low, high, log", INT_DOMAINS)
def test_int_grid_and_projection(low, high, log):
    """grid() holds to_unit of every integer; project returns the nearest grid value, idempotently."""
    hp = Int("k", low=low, high=high, default=low, log=log)
    grid = hp.grid()
    np.testing.assert_array_equal(grid, [hp.to_unit(k) for k in range(low, high + 1)])
    assert hp.discrete
    for u in np.linspace(0.0, 1.0, 401):
        p = hp.project(u)
        assert p in grid
        assert abs(p - u) == pytest.approx(np.abs(grid - u).min(), abs=1e-12)
        assert hp.project(p) == p


def test_int_log_scale():
    """A log integer puts 10 in the middle of [1, 100]."""
    hp = Int("k", low=1, high=100, default=1, log=True)
    assert hp.to_unit(10) == pytest.approx(0.5)
    assert hp.from_unit(0.5) == 10
    assert Int("k", low=0, high=100, default=0).from_unit(0.5) == 50


# ----------------------------------------------------------------------------- Categorical
def test_categorical_round_trip_grid_and_projection():
    """Choice k sits at k/(K-1); projection snaps to the nearest choice and is idempotent."""
    hp = Categorical("c", choices=["a", "b", "c", "d", "e"], default="c")
    grid = hp.grid()
    np.testing.assert_allclose(grid, [0.0, 0.25, 0.5, 0.75, 1.0])
    np.testing.assert_array_equal(grid, [hp.to_unit(c) for c in hp.choices])
    for c in hp.choices:
        assert hp.from_unit(hp.to_unit(c)) == c
    assert hp.default_unit == 0.5
    assert hp.from_unit(0.3) == "b" and hp.from_unit(0.9) == "e"
    for u in np.linspace(0.0, 1.0, 401):
        p = hp.project(u)
        assert p in grid
        assert abs(p - u) == pytest.approx(np.abs(grid - u).min(), abs=1e-12)
        assert hp.project(p) == p


def test_categorical_list_choices_become_tuples():
    """YAML lists in choices and default are frozen to (hashable) tuples; lists still encode."""
    hp = Categorical("q", choices=[[25.0, 75.0], [10.0, 90.0]], default=[25.0, 75.0])
    assert hp.choices == ((25.0, 75.0), (10.0, 90.0))
    assert hp.default == (25.0, 75.0) and isinstance(hp.default, tuple)
    assert hp.to_unit([10.0, 90.0]) == 1.0
    assert hp.from_unit(1.0) == (10.0, 90.0) and isinstance(hp.from_unit(1.0), tuple)


def test_categorical_bool_choices_decode_to_real_bools():
    """Boolean choices come back as the bool objects themselves."""
    hp = Categorical("b", choices=[True, False], default=True)
    assert hp.to_unit(True) == 0.0 and hp.to_unit(False) == 1.0
    assert hp.from_unit(0.0) is True and hp.from_unit(1.0) is False
    assert hp.from_unit(0.4) is True and hp.from_unit(0.6) is False


def test_categorical_unknown_value_names_it():
    hp = Categorical("c", choices=["a", "b"], default="a")
    with pytest.raises(InvalidParameterError, match=r"'zz' is not one of \['a', 'b'\]"):
        hp.to_unit("zz")


def test_fixed_is_not_a_coordinate():
    hp = Fixed("solver", value="saga")
    assert not hp.tunable and hp.default == "saga"


# ----------------------------------------------------------------------------- invalid domains
@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: Float("x", low=1.0, high=1.0, default=1.0), r"'x': low=1.0 must be < high=1.0"),
        (lambda: Float("x", low=2.0, high=1.0, default=1.5), r"low=2.0 must be < high=1.0"),
        (lambda: Float("x", low=0.0, high=1.0, default=0.5, log=True), r"log scale needs low > 0"),
        (lambda: Float("x", low=-1.0, high=1.0, default=0.5, log=True), r"log scale needs low > 0"),
        (lambda: Float("x", low=0.0, high=1.0, default=2.0), r"default 2.0 is outside \[0.0, 1.0\]"),
        (lambda: Int("k", low=5, high=5, default=5), r"low=5 must be < high=5"),
        (lambda: Int("k", low=0, high=10, default=1, log=True), r"log scale needs low > 0"),
        (lambda: Int("k", low=1, high=10, default=11), r"default 11 is outside \[1, 10\]"),
        (lambda: Int("k", low=1.5, high=10, default=2), r"low=1.5 must be an integer"),
        (lambda: Categorical("c", choices=["a", "b"], default="z"), r"default 'z' is not one of"),
        (lambda: Categorical("c", choices=["a"], default="a"), r"at least 2 choices"),
        (lambda: Categorical("c", choices=[], default=None), r"at least 2 choices"),
    ],
)
def test_invalid_domains_raise(make, message):
    with pytest.raises(InvalidParameterError, match=message):
        make()


def test_float_rejects_infinite_bounds():
    with pytest.raises(InvalidParameterError, match="finite"):
        Float("x", low=0.0, high=math.inf, default=1.0)


def test_categorical_rejects_duplicate_choices():
    with pytest.raises(InvalidParameterError, match="duplicate"):
        Categorical("c", choices=["a", "a", "b"], default="a")


# ----------------------------------------------------------------------------- Encoding
def test_encoding_structure(space):
    """θ holds one coordinate per tunable hyperparameter; active(z) lists the chosen algorithm's."""
    enc = space.encoding
    assert enc.theta_names == (
        "scaler:quantile:n_quantiles",
        "scaler:quantile:output_distribution",
        "estimator:lr:C",
        "estimator:lr:penalty",
        "estimator:lr:l1_ratio",
        "estimator:lr:fit_intercept",
        "estimator:lr:max_iter",
        "estimator:ridge:alpha",
    )
    assert enc.theta_dim == 8 == space.n_hyperparameters
    assert enc.n_choices == (2, 3) and enc.n_pipelines == 6 == space.n_pipelines
    np.testing.assert_array_equal(enc.discrete, [1, 1, 0, 1, 0, 1, 1, 0])
    np.testing.assert_array_equal(enc.active((0, 0)), [])
    np.testing.assert_array_equal(enc.active((1, 0)), [0, 1])
    np.testing.assert_array_equal(enc.active((0, 1)), [2, 3, 4, 5, 6])
    np.testing.assert_array_equal(enc.active((1, 2)), [0, 1, 7])
    assert enc.initial_z == (0, 0)
    np.testing.assert_allclose(
        enc.initial_theta, [0.5, 0.0, 0.5, 0.0, 0.5, 0.0, (100 - 50) / 450, 0.75], atol=1e-12
    )


def test_encoding_project_nearest_and_idempotent(space):
    """project clips to [0, 1], snaps discrete coordinates to their grid, and is idempotent."""
    enc = space.encoding
    rng = np.random.default_rng(1)
    for _ in range(50):
        theta = rng.uniform(-0.3, 1.3, size=enc.theta_dim)
        p = enc.project(theta)
        assert np.all((p >= 0.0) & (p <= 1.0))
        np.testing.assert_array_equal(enc.project(p), p)
        for i in range(enc.theta_dim):
            clipped = min(max(theta[i], 0.0), 1.0)
            grid = enc.grids[i]
            if grid is None:
                assert p[i] == clipped
            else:
                assert p[i] in grid
                assert abs(p[i] - clipped) == pytest.approx(np.abs(grid - clipped).min(), abs=1e-12)


def test_encoding_project_with_indices(space):
    """With indices, project works on the sub-vector of those coordinates."""
    enc = space.encoding
    idx = enc.active((0, 1))  # C, penalty, l1_ratio, fit_intercept, max_iter
    p = enc.project(np.array([0.33, 0.4, 0.77, 0.6, 0.001]), idx)
    np.testing.assert_allclose(p, [0.33, 0.0, 0.77, 1.0, 0.0])
    full = enc.project(np.full(enc.theta_dim, 0.4))
    np.testing.assert_array_equal(enc.project(np.full(len(idx), 0.4), idx), full[idx])


@pytest.mark.parametrize("z", [(0,), (0, 0, 0), (2, 0), (0, 3), (-1, 0)])
def test_check_z_rejects_bad_choice_vectors(space, z):
    with pytest.raises(ValueError, match=r"invalid algorithm choice .* for module sizes \(2, 3\)"):
        space.encoding.check_z(z)


def test_check_z_returns_plain_int_tuple(space):
    z = space.encoding.check_z(np.array([1, 2]))
    assert z == (1, 2) and all(type(j) is int for j in z)


def test_check_z_rejects_non_integer_indices(space):
    with pytest.raises(ValueError, match="invalid algorithm choice"):
        space.encoding.check_z((1.5, 0))


@pytest.mark.parametrize("length", [0, 9])
def test_decode_rejects_theta_of_wrong_length(space, length):
    with pytest.raises(ValueError, match="8"):
        space.decode((1, 1), np.full(length, 0.5))


# ----------------------------------------------------------------------------- decode / encode
@pytest.mark.parametrize(
    "name,task",
    [("handmade", None)] + [(b, t) for b in BUILTINS for t in ("classification", "regression")],
)
def test_decode_encode_round_trip(name, task, space):
    """encode(decode(z, θ)) returns z and, on the (conditionally) active coordinates, project(θ)."""
    space = space if name == "handmade" else load_space(name).for_task(task)
    enc = space.encoding
    rng = np.random.default_rng(42)
    for _ in range(60):
        z = tuple(int(rng.integers(k)) for k in enc.n_choices)
        theta = rng.uniform(size=enc.theta_dim)
        config = space.decode(z, theta)
        z2, theta2 = space.encode(config)
        assert z2 == z
        act = enc.active(z)
        projected = enc.project(theta[act], act)
        for k, i in enumerate(act):
            if _theta_key(enc, i) not in config:  # dropped by a condition
                continue
            assert theta2[i] == pytest.approx(projected[k], rel=1e-12, abs=1e-12), enc.theta_names[i]
        # decoding the re-encoded point gives the same readable configuration
        assert _same_config(space.decode(z2, theta2), config)


def _same_config(a: dict, b: dict) -> bool:
    if a.keys() != b.keys():
        return False
    for k in a:
        if isinstance(a[k], float) and isinstance(b[k], float):
            if a[k] != pytest.approx(b[k], rel=1e-12):
                return False
        elif a[k] != b[k]:
            return False
    return True


def test_decode_names_and_types(space):
    """decode gives step__param keys, Python types, and the fixed values."""
    enc = space.encoding
    theta = enc.initial_theta.copy()
    config = space.decode((1, 1), theta)
    assert config == {
        "scaler": "quantile",
        "scaler__n_quantiles": 100,
        "scaler__output_distribution": "uniform",
        "estimator": "lr",
        "estimator__C": pytest.approx(1.0, rel=1e-12),
        "estimator__penalty": "l2",
        "estimator__fit_intercept": True,
        "estimator__solver": "saga",
        "estimator__max_iter": 100,
    }
    assert type(config["scaler__n_quantiles"]) is int
    assert config["estimator__fit_intercept"] is True


def test_encode_fills_unmentioned_coordinates(space):
    """Unmentioned modules take choice 0; unmentioned coordinates come from θ (default: defaults)."""
    enc = space.encoding
    z, theta = space.encode({"estimator": "lr", "estimator__C": 100.0})
    assert z == (0, 1)
    i = enc.theta_names.index("estimator:lr:C")
    assert theta[i] == 1.0
    others = np.delete(np.arange(enc.theta_dim), i)
    np.testing.assert_array_equal(theta[others], enc.initial_theta[others])
    base = np.full(enc.theta_dim, 0.123)
    _, theta = space.encode({"estimator": "lr"}, base)
    np.testing.assert_array_equal(theta, base)


def test_encode_accepts_lists_for_tuple_choices():
    space = load_space("paper_small")
    z, theta = space.encode({"scaler": "robust_scaler", "scaler__quantile_range": [10.0, 90.0]})
    assert space.decode(z, theta)["scaler__quantile_range"] == (10.0, 90.0)


@pytest.mark.parametrize(
    "config, message",
    [
        ({"bogus": 1}, r"unknown configuration keys \['bogus'\]"),
        ({"scalr__x": 1}, r"unknown configuration keys \['scalr__x'\]"),
        ({"estimator": "lrr"}, r"module 'estimator': Unknown choice 'lrr'\. Did you mean 'lr'\?"),
        (
            {"estimator": "lr", "estimator__CC": 1.0},
            r"'lr' in module 'estimator': Unknown hyperparameter 'CC'\. Did you mean 'C'\?",
        ),
        ({"estimator": "nb", "estimator__C": 1.0}, r"'nb' in module 'estimator': Unknown hyperparameter 'C'"),
        ({"estimator": "lr", "estimator__penalty": "l1"}, r"'l1' is not one of \['l2', 'elasticnet'\]"),
    ],
)
def test_encode_rejects_unknown_names(space, config, message):
    with pytest.raises(InvalidParameterError, match=message):
        space.encode(config)


def test_encode_rejects_a_different_value_for_a_fixed_hyperparameter(space):
    space.encode({"estimator": "lr", "estimator__solver": "saga"})  # same value: fine
    with pytest.raises(InvalidParameterError, match="solver"):
        space.encode({"estimator": "lr", "estimator__solver": "lbfgs"})


# ----------------------------------------------------------------------------- conditions
def test_condition_controls_presence(space):
    """l1_ratio is passed only when penalty is elasticnet; its θ coordinate always exists."""
    enc = space.encoding
    theta = enc.initial_theta.copy()
    i_pen = enc.theta_names.index("estimator:lr:penalty")
    i_l1 = enc.theta_names.index("estimator:lr:l1_ratio")
    theta[i_l1] = 0.25
    theta[i_pen] = 0.0
    config = space.decode((0, 1), theta)
    assert config["estimator__penalty"] == "l2" and "estimator__l1_ratio" not in config
    theta[i_pen] = 0.9
    config = space.decode((0, 1), theta)
    assert config["estimator__penalty"] == "elasticnet"
    assert config["estimator__l1_ratio"] == pytest.approx(0.25)
    # and the built pipeline receives it
    step = dict(space.steps((0, 1), theta))["estimator"]
    assert step.penalty == "elasticnet" and step.l1_ratio == pytest.approx(0.25)
    step = dict(space.steps((0, 1), enc.initial_theta))["estimator"]
    from sklearn.linear_model import LogisticRegression

    assert step.l1_ratio == LogisticRegression().l1_ratio  # not passed: the class default applies


def test_builtin_condition_on_kernel():
    """paper_large's nystroem passes degree only for the polynomial kernel."""
    space = load_space("paper_large")
    enc = space.encoding
    mod = enc.module_names.index("transformer")
    j = enc.choice_names[mod].index("nystroem")
    z = list(enc.initial_z)
    z[mod] = j
    kernel = space.modules[mod].choices[j]
    kernel_hp = next(h for h in kernel.hyperparameters if h.name == "kernel")
    i_kernel = enc.theta_names.index("transformer:nystroem:kernel")
    for choice in kernel_hp.choices:
        theta = enc.initial_theta.copy()
        theta[i_kernel] = kernel_hp.to_unit(choice)
        config = space.decode(z, theta)
        assert config["transformer__kernel"] == choice
        assert ("transformer__degree" in config) == (choice == "poly")


def test_condition_on_list_valued_choice():
    d = {
        "name": "cond",
        "modules": [
            {
                "name": "scaler",
                "choices": [
                    {
                        "name": "robust",
                        "class": "sklearn.preprocessing.RobustScaler",
                        "hyperparameters": {
                            "quantile_range": {
                                "type": "categorical",
                                "choices": [[25.0, 75.0], [10.0, 90.0]],
                                "default": [25.0, 75.0],
                            },
                            "unit_variance": {
                                "type": "categorical",
                                "choices": [False, True],
                                "default": False,
                                "condition": {"quantile_range": [[25.0, 75.0]]},
                            },
                        },
                    }
                ],
            }
        ],
    }
    space = space_from_dict(d)
    assert "scaler__unit_variance" in space.decode((0,), np.array([0.0, 1.0]))
    assert "scaler__unit_variance" not in space.decode((0,), np.array([1.0, 1.0]))


# ----------------------------------------------------------------------------- YAML strictness
def _mutate(fn):
    d = make_space_dict()
    fn(d)
    return d


def _hp(d, name):
    return d["modules"][1]["choices"][1]["hyperparameters"][name]


@pytest.mark.parametrize(
    "mutation, message",
    [
        (
            lambda d: d.update(modlues=[]),
            r"^modlues: unknown key\. Did you mean 'modules'\?",
        ),
        (
            lambda d: d["modules"][0].update(choice=[]),
            r"^modules\[0\]\.choice: unknown key\. Did you mean 'choices'\?",
        ),
        (
            lambda d: d["modules"][1]["choices"][1].update(hyperparameter={}),
            r"^modules\[1\]\.choices\[1\]\.hyperparameter: unknown key\. Did you mean 'hyperparameters'\?",
        ),
        (
            lambda d: _hp(d, "C").update(lgo=True),
            r"^modules\[1\]\.choices\[1\]\.hyperparameters\.C\.lgo: unknown key\. Did you mean 'low'\?",
        ),
        (
            lambda d: _hp(d, "penalty").update(choises=["a", "b"]),
            r"^modules\[1\]\.choices\[1\]\.hyperparameters\.penalty\.choises: unknown key\. "
            r"Did you mean 'choices'\?",
        ),
        (
            lambda d: d.update(initial={"clasification": {"estimator": "nb"}}),
            r"^initial\.clasification: unknown key\. Did you mean 'classification'\?",
        ),
        (
            lambda d: d.update(initial={"classification": {"estimatr": "nb"}}),
            r"^initial\.classification\.estimatr: unknown key\. Did you mean 'estimator'\?",
        ),
        (
            lambda d: d.update(initial={"classification": {"estimator": "nbb"}}),
            r"^initial\.classification\.estimator: .*Unknown choice 'nbb'\. Did you mean 'nb'\?",
        ),
        (
            lambda d: _hp(d, "C").update(type="flaot"),
            r"^modules\[1\]\.choices\[1\]\.hyperparameters\.C\.type: unknown type 'flaot'\. "
            r"Did you mean 'float'\?",
        ),
        (
            lambda d: _hp(d, "C").pop("default"),
            r"^modules\[1\]\.choices\[1\]\.hyperparameters\.C\.default: required key is missing",
        ),
        (
            lambda d: _hp(d, "C").update(low=1000.0),
            r"^modules\[1\]\.choices\[1\]\.hyperparameters\.C: .*low=1000\.0 must be < high=100\.0",
        ),
        (
            lambda d: _hp(d, "l1_ratio").update(condition={"penalti": ["elasticnet"]}),
            r"^modules\[1\]\.choices\[1\]\.hyperparameters\.l1_ratio\.condition: 'penalti' is not a "
            r"categorical hyperparameter",
        ),
        (
            lambda d: _hp(d, "l1_ratio").update(condition={"C": [1.0]}),
            r"l1_ratio\.condition: 'C' is not a categorical hyperparameter",
        ),
        (
            lambda d: _hp(d, "l1_ratio").update(condition={"penalty": ["l1"]}),
            r"l1_ratio\.condition: \['l1'\] not among the choices \['l2', 'elasticnet'\] of 'penalty'",
        ),
        (
            lambda d: _hp(d, "l1_ratio").update(condition=["penalty"]),
            r"l1_ratio\.condition: expected a mapping",
        ),
        (
            lambda d: d["modules"][1]["choices"].append(
                {"name": "nb", "class": "sklearn.naive_bayes.GaussianNB"}
            ),
            r"^modules\[1\]\.choices: duplicate choice names \['nb'\] for classification",
        ),
        (
            lambda d: d["modules"].append({"name": "scaler", "choices": [{"name": "none"}]}),
            r"^modules: duplicate module names in \['scaler', 'estimator', 'scaler'\]",
        ),
        (
            lambda d: d["modules"][0]["choices"][0].update({"class": "x.Y"}),
            r"^modules\[0\]\.choices\[0\]\.class: unknown key",
        ),
        (
            lambda d: d["modules"][1]["choices"][1].update(task="clf"),
            r"^modules\[1\]\.choices\[1\]\.task: 'clf' is not one of",
        ),
        (lambda d: d.update(name="Bad Name"), r"^name: name 'Bad Name' must match"),
        (lambda d: d.update(modules=[]), r"^modules: expected a non-empty list"),
    ],
)
def test_yaml_strictness(mutation, message):
    """Schema violations raise ConfigError naming the dotted key path (and a did-you-mean)."""
    with pytest.raises(ConfigError, match=message):
        space_from_dict(_mutate(mutation))


def test_yaml_unknown_key_lists_allowed_keys():
    with pytest.raises(ConfigError, match=r"Allowed: condition, default, high, log, low, low_cost, type$"):
        space_from_dict(_mutate(lambda d: _hp(d, "C").update(lgo=True)))


def test_load_space_from_yaml_path(tmp_path):
    """A YAML file path loads; errors in it carry the file name and the key path."""
    path = tmp_path / "my_space.yaml"
    path.write_text(yaml.safe_dump(make_space_dict()), encoding="utf-8")
    space = load_space(path)
    assert space.name == "handmade" and space.n_pipelines == 6
    assert load_space(str(path)).encoding.theta_names == space.encoding.theta_names
    bad = _mutate(lambda d: _hp(d, "C").update(lgo=True))
    path.write_text(yaml.safe_dump(bad), encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape(f"{path}: modules[1].choices[1].hyperparameters.C.lgo")):
        load_space(path)


def test_load_space_missing_yaml_file(tmp_path):
    with pytest.raises(InvalidParameterError, match=r"nope\.yaml' does not exist"):
        load_space(tmp_path / "nope.yaml")


def test_exponent_notation_without_a_dot_is_a_number_in_a_space_file(tmp_path):
    path = tmp_path / "tol.yaml"
    path.write_text("""\
name: tol
modules:
  - name: estimator
    choices:
      - name: lr
        class: sklearn.linear_model.LogisticRegression
        hyperparameters:
          tol: {type: float, low: 1e-12, high: 1E-2, log: true, default: 1e-4}
          C: {type: float, low: 0.5, high: 2e+1, default: 1}
""", encoding="utf-8")
    hps = {hp.name: hp for hp in load_space(path).modules[0].choices[0].hyperparameters}
    assert (hps["tol"].low, hps["tol"].high, hps["tol"].default) == (1e-12, 1e-2, 1e-4)
    assert hps["C"].high == 20.0


@pytest.mark.parametrize("name", ["x" * 5000, "x" * 5000 + ".yaml"])
def test_a_space_name_too_long_for_a_path_is_named_as_neither_space_nor_file(name):
    with pytest.raises(InvalidParameterError, match=r"search space 'x{40}'\.\.\. \(500[05] characters"
                                                    r"\) is neither a built-in space \(.*default"):
        load_space(name)


def test_load_space_rejects_duplicate_yaml_keys(tmp_path):
    text = """\
name: dup
modules:
  - name: estimator
    choices:
      - name: lr
        class: sklearn.linear_model.LogisticRegression
        hyperparameters:
          C: {type: float, low: 0.1, high: 10.0, default: 1.0}
          C: {type: float, low: 1.0, high: 2.0, default: 1.5}
"""
    path = tmp_path / "dup.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"duplicate.*'C'"):
        load_space(path)


def test_load_space_unknown_name():
    """An unknown name lists the built-ins and suggests the closest."""
    with pytest.raises(
        UnknownComponentError,
        match=r"Unknown search space 'paper_smal'\. Did you mean 'paper_small'\? "
        r"Available: 'blds', 'default', 'iterative', 'paper_large', 'paper_small'\.",
    ):
        load_space("paper_smal")
    assert issubclass(UnknownComponentError, ValueError)


def test_load_space_passes_spaces_and_mappings():
    space = tiny_space()
    assert load_space(space) is space
    assert load_space(make_space_dict()).name == "handmade"
    assert list_spaces() == sorted(BUILTINS + ("default", "iterative"))  # tests/space/test_space_extensions.py


def test_restrict_keeps_the_named_choices_and_moves_the_initial_pipeline(space):
    clf = space.for_task("classification")
    one = clf.restrict(scaler="quantile", estimator=["lr"])
    assert [[a.name for a in m.choices] for m in one.modules] == [["quantile"], ["lr"]]
    assert one.initial == {"classification": {"scaler": "quantile", "estimator": "lr"}}
    assert one.name == f"{clf.name}[scaler=quantile,estimator=lr]" and one.n_pipelines == 1
    assert clf.restrict(scaler="none").modules[1] is clf.modules[1]  # the others untouched
    with pytest.raises(InvalidParameterError, match=r"Unknown module 'scalar'. Did you mean "
                                                    r"'scaler'"):
        clf.restrict(scalar="none")
    with pytest.raises(InvalidParameterError, match=r"module 'estimator': Unknown choice 'svm'"):
        clf.restrict(estimator="svm")
    with pytest.raises(InvalidParameterError, match="give at least one choice"):
        clf.restrict(estimator=[])


def test_for_task(space):
    """for_task keeps the algorithms of that task (or 'any') and that task's initial pipeline."""
    clf = space.for_task("classification")
    assert [a.name for a in clf.modules[1].choices] == ["nb", "lr"]
    assert [a.name for a in clf.modules[0].choices] == ["none", "quantile"]
    assert clf.initial == {"classification": {"scaler": "none", "estimator": "nb"}}
    reg = space.for_task("regression")
    assert [a.name for a in reg.modules[1].choices] == ["ridge"]
    assert reg.initial == {}
    assert reg.encoding.theta_names[-1] == "estimator:ridge:alpha" and reg.encoding.theta_dim == 3
    with pytest.raises(InvalidParameterError, match=r"task must be one of .* got 'clustering'"):
        space.for_task("clustering")
    only_clf = _mutate(lambda d: d["modules"][1]["choices"].pop(2))
    with pytest.raises(InvalidParameterError, match=r"no regression algorithm in module 'estimator'"):
        space_from_dict(only_clf).for_task("regression")


# ----------------------------------------------------------------------------- built-in spaces
@pytest.mark.parametrize(
    "name, sizes, count",
    [("paper_small", [6, 3, 6], 108), ("paper_large", [8, 11, 7, 11], 6776), ("blds", [8, 8, 6, 8], 3072)],
)
def test_builtin_sizes(name, sizes, count):
    clf = load_space(name).for_task("classification")
    assert [len(m.choices) for m in clf.modules] == sizes
    assert clf.n_pipelines == count == clf.encoding.n_pipelines


@pytest.mark.parametrize("name", BUILTINS)
def test_builtin_initial_pipeline_is_gaussian_nb(name):
    clf = load_space(name).for_task("classification")
    enc = clf.encoding
    chosen = {m.name: m.choices[j].name for m, j in zip(clf.modules, enc.initial_z)}
    assert chosen.pop("estimator") == "gaussian_nb"
    assert set(chosen.values()) == {"none"}
    np.testing.assert_array_equal(
        enc.initial_theta,
        [h.default_unit for m in clf.modules for a in m.choices for h in a.tunable],
    )


def _builtin_algorithms():
    for name in BUILTINS:
        for module in load_space(name).modules:
            for algo in module.choices:
                if algo.class_path is not None:
                    yield pytest.param(name, module.name, algo.name, id=f"{name}-{module.name}-{algo.name}")


def _algorithm(space_name, module_name, algo_name):
    space = load_space(space_name)
    module = next(m for m in space.modules if m.name == module_name)
    return next(a for a in module.choices if a.name == algo_name)


@pytest.mark.parametrize("space_name, module_name, algo_name", list(_builtin_algorithms()))
def test_builtin_algorithm_builds(space_name, module_name, algo_name):
    """At the defaults and at random θ, build() constructs a valid scikit-learn object."""
    from admm_automl.space.space import import_class

    algo = _algorithm(space_name, module_name, algo_name)
    cls = import_class(algo.class_path)
    rng = np.random.default_rng(7)
    n = len(algo.tunable)
    points = [np.array([h.default_unit for h in algo.tunable]), np.zeros(n), np.ones(n)]
    points += [rng.uniform(size=n) for _ in range(4)]
    for units in points:
        params = algo.params_from_unit(units)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            obj = algo.build(params, random_state=3)
        assert type(obj) is cls
        if hasattr(obj, "_validate_params"):
            obj._validate_params()  # scikit-learn's own parameter constraints, no fit
        deep = obj.get_params(deep=True)
        if "random_state" in deep and "random_state" not in params:
            assert deep["random_state"] == 3


@pytest.mark.parametrize("space_name, module_name, algo_name", list(_builtin_algorithms()))
def test_builtin_every_choice_reaches_the_estimator(space_name, module_name, algo_name):
    """Every categorical choice is passed through unchanged and warns nothing at construction."""
    algo = _algorithm(space_name, module_name, algo_name)
    defaults = np.array([h.default_unit for h in algo.tunable])
    for k, hp in enumerate(algo.tunable):
        if not isinstance(hp, Categorical):
            continue
        for choice in hp.choices:
            units = defaults.copy()
            units[k] = hp.to_unit(choice)
            params = algo.params_from_unit(units)
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                obj = algo.build(params)
            deep = obj.get_params(deep=True)
            for key, value in params.items():
                if not isinstance(value, dict):
                    assert deep[key] == value, (key, value, deep[key])


def test_nested_fixed_estimator_is_fresh_and_set_params_applies():
    """{class, params} values are instantiated anew per build; a__b names reach the nested object."""
    algo = _algorithm("paper_large", "estimator", "adaboost")
    units = np.array([h.default_unit for h in algo.tunable])
    i = [h.name for h in algo.tunable].index("estimator__max_depth")
    units[i] = 1.0
    params = algo.params_from_unit(units)
    a, b = algo.build(params), algo.build(params)
    assert a.estimator is not b.estimator
    assert type(a.estimator).__name__ == "DecisionTreeClassifier"
    assert a.estimator.max_depth == 10


def test_builtin_defaults_decode_exactly():
    """At initial θ every hyperparameter is exactly its declared (scikit-learn) default."""
    inexact = [
        (name, a.name, h.name, h.default, h.from_unit(h.default_unit))
        for name in BUILTINS
        for m in load_space(name).modules
        for a in m.choices
        for h in a.tunable
        if h.from_unit(h.default_unit) != h.default
    ]
    assert inexact == []


@pytest.mark.parametrize("name", BUILTINS)
def test_builtin_initial_pipeline_fits(name, breast_cancer):
    """The initial classification pipeline of each built-in fits and predicts on 100 rows."""
    from sklearn.naive_bayes import GaussianNB
    from sklearn.pipeline import Pipeline

    X, y = breast_cancer
    X, y = X[:100], y[:100]
    clf = load_space(name).for_task("classification")
    pipe = clf.to_pipeline(clf.encoding.initial_z, clf.encoding.initial_theta, random_state=0)
    assert isinstance(pipe, Pipeline)
    assert [s for _, s in pipe.steps[:-1]] == ["passthrough"] * (len(clf.modules) - 1)
    assert isinstance(pipe.steps[-1][1], GaussianNB)
    pipe.fit(X, y)
    pred = pipe.predict(X)
    assert pred.shape == (100,) and set(pred) <= {0, 1}
    assert (pred == y).mean() > 0.8


def test_to_pipeline_with_preprocessor(space):
    from sklearn.impute import SimpleImputer

    pipe = space.to_pipeline((1, 1), space.encoding.initial_theta, preprocessor=SimpleImputer())
    assert [n for n, _ in pipe.steps] == ["preprocess", "scaler", "estimator"]
    assert pipe.named_steps["scaler"].n_quantiles == 100
    assert pipe.named_steps["estimator"].solver == "saga"


def test_key_is_canonical(space):
    """Two θ with the same projection evaluate the same pipeline, so they share a key."""
    enc = space.encoding
    t1 = enc.initial_theta.copy()
    t2 = t1.copy()
    t2[enc.theta_names.index("estimator:lr:penalty")] = 0.2  # still projects to l2
    assert space.key((0, 1), t1) == space.key((0, 1), t2)
    t2[enc.theta_names.index("estimator:lr:C")] = 0.9
    assert space.key((0, 1), t1) != space.key((0, 1), t2)


def test_space_dict_is_not_mutated():
    d = make_space_dict()
    before = copy.deepcopy(d)
    space_from_dict(d)
    assert d == before
