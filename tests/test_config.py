"""Strict YAML configuration: loading, unknown keys with paths and suggestions, bad values, round trip."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from admm_automl import ADMM, ADMMClassifier, ADMMRegressor, load_config
from admm_automl.config import Config, config_from_estimator, dump_config
from admm_automl.exceptions import ConfigError
from admm_automl.solvers import THETA_SOLVERS, Z_SOLVERS

GOOD = {
    "estimator": {
        "search_space": "paper_small",
        "theta_solver": "random",
        "z_solver": "random",
        "max_evals": 12,
        "inner_iter": 4,
        "random_state": 3,
    },
    "data": {"dataset": "breast_cancer", "test_size": 0.3},
}


def _write(tmp_path: Path, node, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(node, sort_keys=False), encoding="utf-8")
    return path


def test_load_config_from_yaml_file(tmp_path):
    config = load_config(_write(tmp_path, GOOD))
    assert isinstance(config, Config)
    assert config.estimator == GOOD["estimator"]
    assert config.data == GOOD["data"]
    est = config.make_estimator()
    assert type(est) is ADMM
    assert est.max_evals == 12 and est.inner_iter == 4 and est.random_state == 3
    assert est.get_params()["rho"] == ADMM().rho  # unspecified parameters keep their defaults


def test_load_config_from_str_path_and_dict(tmp_path):
    path = _write(tmp_path, GOOD)
    assert load_config(str(path)).estimator == load_config(GOOD).estimator == GOOD["estimator"]
    assert load_config({}).estimator == {} and load_config({}).data == {}


def test_empty_file_is_an_empty_config(tmp_path):
    path = tmp_path / "empty.yaml"
    path.write_text("", encoding="utf-8")
    config = load_config(path)
    assert config.estimator == {} and config.data == {}


@pytest.mark.parametrize(
    "node, message",
    [
        (
            {"estimatr": {}},
            r"^estimatr: unknown key\. Did you mean 'estimator'\? Allowed: data, estimator$",
        ),
        (
            {"estimator": {"max_eval": 5}},
            r"^estimator\.max_eval: unknown key\. Did you mean 'max_evals'\? Allowed: .*max_evals",
        ),
        (
            {"estimator": {"theta_solvr": "random"}},
            r"^estimator\.theta_solvr: unknown key\. Did you mean 'theta_solver'\?",
        ),
        (
            {"data": {"datset": "iris"}},
            r"^data\.datset: unknown key\. Did you mean 'dataset'\? "
            r"Allowed: csv, data_dir, dataset, target, test_size$",
        ),
        ({"estimator": [1, 2]}, r"^estimator: expected a mapping, got list"),
    ],
)
def test_unknown_keys(node, message):
    with pytest.raises(ConfigError, match=message):
        load_config(node)


def test_unknown_key_in_file_names_the_file(tmp_path):
    path = _write(tmp_path, {"estimator": {"max_evalz": 3}})
    with pytest.raises(
        ConfigError, match=re.escape(f"{path}: estimator.max_evalz: unknown key. Did you mean 'max_evals'?")
    ):
        load_config(path)


def test_top_level_list_in_file(tmp_path):
    with pytest.raises(ConfigError, match=r"expected a mapping, got list"):
        load_config(_write(tmp_path, [1, 2]))


def test_missing_file_and_invalid_yaml(tmp_path):
    with pytest.raises(ConfigError, match=r"configuration file '.*nope\.yaml' does not exist"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("estimator: {max_evals: [1,\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.yaml: not valid YAML"):
        load_config(bad)


@pytest.mark.parametrize(
    "estimator, message",
    [
        ({"max_evals": -5}, r"'max_evals' parameter of ADMM must be a positive integer or None\. Got -5"),
        ({"max_evals": 0}, r"'max_evals' .* Got 0"),
        ({"time_budget": -1.0}, r"'time_budget' parameter of ADMM must be a positive number"),
        ({"rho": 0}, r"'rho' parameter"),
        ({"cv": 1}, r"'cv' parameter of ADMM must be one of 'auto', 'holdout' or an integer >= 2 or None"),
        ({"task": "clasification"}, r"'task' parameter of ADMM must be one of 'auto', 'classification', 'regression'\. Got 'clasification'"),
        (
            {"theta_solver": "randm"},
            r"Unknown theta solver 'randm'\. Did you mean 'random'\? Available: .*'random'",
        ),
        ({"z_solver": "no_such_solver"}, r"Unknown z solver 'no_such_solver'\. Available: .*'random'"),
        (
            {"theta_solver": {"name": "random", "param": {}}},
            r"needs the keys 'name' and optionally 'params'; got \['name', 'param'\]",
        ),
        (
            {"theta_solver": {"name": "random", "params": {"foo": 1}}},
            r"theta solver 'random': .*unexpected keyword argument 'foo'",
        ),
    ],
)
def test_bad_values(estimator, message):
    """A bad value fails at load time with a ConfigError that names it."""
    with pytest.raises(ConfigError, match=r"^estimator: .*" + message):
        load_config({"estimator": estimator})


def test_solver_as_mapping_works():
    config = load_config({"estimator": {"theta_solver": {"name": "random", "params": {}}}})
    est = config.make_estimator()
    assert est.theta_solver == {"name": "random", "params": {}}
    solver = THETA_SOLVERS.create(est.theta_solver)
    assert type(solver) is THETA_SOLVERS.get("random")
    assert type(Z_SOLVERS.create({"name": "random"})) is Z_SOLVERS.get("random")


def test_unknown_search_space_is_a_config_error():
    with pytest.raises(ConfigError, match=r"Unknown search space 'paper_smal'\. Did you mean 'paper_small'\?"):
        load_config({"estimator": {"search_space": "paper_smal"}})


def test_unknown_dataset_is_a_config_error():
    with pytest.raises(ConfigError, match=r"Unknown dataset 'irs'\. Did you mean 'iris'\?"):
        load_config({"data": {"dataset": "irs"}})


def test_bad_test_size_is_a_config_error():
    with pytest.raises(ConfigError, match=r"test_size"):
        load_config({"data": {"dataset": "iris", "test_size": 1.5}})


def test_data_section_rules():
    with pytest.raises(ConfigError, match=r"^data\.target: required with data\.csv"):
        load_config({"data": {"csv": "x.csv"}})
    with pytest.raises(ConfigError, match=r"^data: give either 'dataset' or 'csv', not both"):
        load_config({"data": {"csv": "x.csv", "target": "y", "dataset": "iris"}})
    config = load_config({"data": {"csv": "x.csv", "target": "label"}})
    assert config.data == {"csv": "x.csv", "target": "label"}


def test_task_picks_the_estimator_class():
    assert type(load_config({"estimator": {"task": "classification"}}).make_estimator()) is ADMMClassifier
    assert type(load_config({"estimator": {"task": "regression"}}).make_estimator()) is ADMMRegressor
    est = load_config({"estimator": {"task": "auto"}}).make_estimator()
    assert type(est) is ADMM and est.task == "auto"


@pytest.mark.parametrize(
    "est",
    [
        ADMM(),
        ADMM(
            search_space="blds",
            theta_solver={"name": "random", "params": {}},
            max_evals=np.int64(7),
            time_budget=12.5,
            inner_iter=3,
            inner_iter_step=0,
            cv=3,
            scoring="accuracy",
            random_state=np.int64(5),
            task="auto",
        ),
        ADMMClassifier(max_evals=4, random_state=0),
        ADMMRegressor(rho=2.0, z_solver={"name": "random"}),
    ],
    ids=["defaults", "many", "classifier", "regressor"],
)
def test_round_trip(tmp_path, est):
    """config_from_estimator -> dump_config -> load_config rebuilds an estimator with the same params."""
    data = {"dataset": "iris", "test_size": 0.2}
    path = tmp_path / "resolved.yaml"
    dump_config(config_from_estimator(est, data), path)
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert set(raw) == {"estimator", "data"}
    loaded = load_config(path)
    assert loaded.data == data
    again = loaded.make_estimator()
    assert type(again) is type(est)
    assert again.get_params() == est.get_params()
    assert all(type(v) is not np.int64 for v in raw["estimator"].values())


def test_task_in_a_config_selects_the_task_specific_estimator(tmp_path):
    """``task: classification`` in YAML gives an ADMMClassifier (scikit-learn must know the
    estimator type before fit); its parameters otherwise round-trip."""
    from sklearn.base import is_classifier, is_regressor

    est = ADMM(task="classification", max_evals=3)
    path = tmp_path / "resolved.yaml"
    dump_config(config_from_estimator(est), path)
    again = load_config(path).make_estimator()
    assert type(again) is ADMMClassifier and is_classifier(again)
    expected = {**est.get_params(), "task": "auto"}
    assert again.get_params() == expected
    reg = load_config({"estimator": {"task": "regression"}}).make_estimator()
    assert is_regressor(reg)


def test_round_trip_of_solver_instance_and_path(tmp_path):
    """Solver instances are written as {name, params}; paths as strings."""
    solver = THETA_SOLVERS.create("random")
    est = ADMM(theta_solver=solver, output_dir=tmp_path / "out")
    path = tmp_path / "resolved.yaml"
    dump_config(config_from_estimator(est), path)
    loaded = load_config(path).make_estimator()
    assert loaded.theta_solver == {"name": "random", "params": {}}
    assert loaded.output_dir == str(tmp_path / "out")
    assert "data" not in yaml.safe_load(path.read_text(encoding="utf-8"))


def test_dump_rejects_unwritable_values(tmp_path):
    est = ADMM(scoring=lambda est, X, y: 0.0)
    with pytest.raises(ConfigError, match=r"cannot write .*function.* to YAML"):
        dump_config(config_from_estimator(est), tmp_path / "x.yaml")


def test_config_keys_are_exactly_the_estimator_parameters():
    """Every ADMM parameter is accepted in the estimator section, and nothing else."""
    params = ADMM().get_params()
    config = load_config({"estimator": params})
    assert config.make_estimator().get_params() == params
