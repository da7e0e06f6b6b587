"""The estimator's parameters are declared once (admm_automl/run/params.py): the signature,
the search settings, the command line and the docstring follow that table."""

import inspect

import pytest
from sklearn.datasets import load_iris

from admm_automl import ADMM, ADMMClassifier
from admm_automl.cli import _parser
from admm_automl.exceptions import InvalidParameterError
from admm_automl.run import params


def test_the_signature_is_the_table_in_order_with_the_same_defaults():
    signature = inspect.signature(ADMM.__init__).parameters
    names = [n for n in signature if n != "self"]
    assert names == [p.name for p in params.PARAMETERS]
    for p in params.PARAMETERS:
        assert signature[p.name].default == p.default, p.name


def test_every_parameter_is_documented():
    doc = ADMM.__doc__
    section = doc[doc.index("Parameters"):doc.index("Attributes")]
    for p in params.PARAMETERS:
        assert p.name in section, f"{p.name} is not in ADMM's Parameters section"


def test_the_settings_take_the_table_defaults_and_the_estimator_params():
    assert params.SearchSettings() == params.settings_from({})
    settings = params.settings_from(ADMMClassifier(max_evals=7, rho=2.0).get_params())
    assert (settings.max_evals, settings.rho, settings.ensemble_size) == (7, 2.0, 16)
    with pytest.raises(Exception):  # frozen
        settings.rho = 3.0


def test_fit_options_set_the_parameters_they_name():
    args = _parser().parse_args([
        "fit", "--dataset", "iris", "--time-budget", "5", "--seed", "3", "--cv", "holdout",
        "--no-resume", "--constraint", "latency <= 1e-3", "--constraint", "fpr <= 0.1",
        "--trial-timeout", "2", "--memory-limit", "900",
    ])
    assert params.fit_overrides(args) == {
        "time_budget": 5.0, "random_state": 3, "cv": None, "resume": False,
        "constraints": ["latency <= 1e-3", "fpr <= 0.1"], "trial_timeout": 2.0,
        "memory_limit": 900,
    }
    assert params.fit_overrides(_parser().parse_args(["fit", "--dataset", "iris"])) == {}


@pytest.mark.parametrize("name", ["shrink_to_fit", "boost_to_fit"])
def test_fitting_trials_to_their_limit_is_auto_by_default_and_an_option_of_fit_both_ways(name):
    flag = "--" + name.replace("_", "-")
    assert getattr(ADMM(), name) == "auto" and getattr(params.SearchSettings(), name) == "auto"
    args = _parser().parse_args(["fit", "--dataset", "iris", flag])
    assert params.fit_overrides(args) == {name: True}
    args = _parser().parse_args(["fit", "--dataset", "iris", flag.replace("--", "--no-")])
    assert params.fit_overrides(args) == {name: False}
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter"):
        ADMM(**{name: "yes"}).fit(*load_iris(return_X_y=True))


@pytest.mark.parametrize("name, value, message", [
    ("rho", 0.0, "'rho' parameter of ADMM must be a positive number"),
    ("cv", 1, "'cv' parameter"),
    ("method", "smac", "'method' parameter"),
    ("n_jobs", 0, "non-zero integer"),
])
def test_the_table_rules_reject_bad_values_by_name(name, value, message):
    with pytest.raises(InvalidParameterError, match=message):
        params.check("ADMM", {**ADMM().get_params(), name: value})


def test_cv_holdout_on_the_command_line_reaches_the_estimator():
    from admm_automl.cli import _config

    args = _parser().parse_args(["fit", "--dataset", "iris", "--cv", "holdout", "-v"])
    config = _config(args)
    assert config.estimator["cv"] is None and config.estimator["verbose"] == 1
    assert config.make_estimator().cv is None
    assert "cv" not in _config(_parser().parse_args(["fit", "--dataset", "iris"])).estimator
