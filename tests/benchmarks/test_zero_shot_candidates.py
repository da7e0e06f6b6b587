"""``experiments/zero_shot_candidates.py`` translates FLAML's and AutoGluon's published zero-shot
configurations into the ``default`` space, and ``experiments/portfolio.py --external`` adds them
to the candidates of every portfolio, the held-out ones included."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from admm_automl._yaml import read_yaml
from admm_automl.space import load_space

EXTERNAL = Path(__file__).resolve().parents[2] / "experiments" / "portfolio_external.yaml"


@pytest.fixture(scope="module")
def classification():
    return load_space("default").for_task("classification")


def test_every_committed_candidate_is_a_canonical_configuration_of_the_default_space():
    node = read_yaml(EXTERNAL.read_text(encoding="utf-8"))
    assert node["space"] == "default"
    for task in ("classification", "regression"):
        space = load_space("default").for_task(task)
        entries = node[task]
        assert len(entries) >= 20 and len({e["source"] for e in entries}) == len(entries)
        seen = set()
        for entry in entries:
            z, theta = space.encode(entry["config"])
            # decoding the encoded configuration gives it back: every value lies in its range
            assert space.decode(z, space.encoding.project(theta)) == entry["config"], entry["source"]
            key = json.dumps(entry["config"], sort_keys=True)
            assert key not in seen  # one entry per configuration
            seen.add(key)
        sources = " ".join(e["source"] for e in entries)
        assert "FLAML" in sources and "AutoGluon" in sources


def test_flaml_s_log_max_bin_becomes_max_bin_and_its_sample_size_is_not_a_hyperparameter(
        load_script, classification):
    script = load_script("zero_shot_candidates")
    entry = script.translate("lightgbm", {"n_estimators": 141, "num_leaves": 139,
                                          "log_max_bin": 9, "FLAML_sample_size": 436899},
                             "classification", classification)
    config = entry["config"]
    assert config["estimator"] == "lightgbm" and config["estimator__max_bin"] == 511
    assert config["estimator__n_estimators"] == 141 and config["estimator__num_leaves"] == 139
    assert entry["dropped"] == [] and entry["clipped"] == []


def test_autogluon_s_names_are_renamed_what_the_space_lacks_is_dropped_and_ranges_clipped(
        load_script, classification):
    script = load_script("zero_shot_candidates")
    params = {**script.AUTOGLUON_BASELINES["GBM"], "extra_trees": True,
              "feature_fraction": 0.7, "min_data_in_leaf": 500, "lambda_l2": 2.0,
              "learning_rate": 0.012, "ag_args": {"name_suffix": "_r1"}}
    entry = script.translate("lightgbm", params, "classification", classification)
    config = entry["config"]
    assert config["estimator__colsample_bytree"] == pytest.approx(0.7)
    assert config["estimator__reg_lambda"] == pytest.approx(2.0)
    assert config["estimator__learning_rate"] == pytest.approx(0.012)
    assert config["estimator__n_estimators"] == 10_000  # AutoGluon's round cap
    assert config["estimator__min_child_samples"] == 129  # the top of our range
    assert entry["dropped"] == ["extra_trees"] and entry["clipped"] == ["min_data_in_leaf"]
    forest = script.translate("random_forest", {**script.AUTOGLUON_BASELINES["RF"],
                                                "max_features": None, "min_samples_leaf": 2},
                              "classification", classification)
    assert forest["config"]["estimator__max_features"] == 1.0  # scikit-learn's None: all
    assert forest["config"]["estimator__max_leaf_nodes"] == 15_000
    assert forest["dropped"] == ["min_samples_leaf"]
    named = script.translate("extra_trees", {"max_features": "sqrt", "criterion": "entropy"},
                             "classification", classification)
    assert named["dropped"] == ["max_features"]  # a name where the space takes a fraction
    assert named["config"]["estimator__criterion"] == "entropy"
    # a learner the task's space does not hold gives no entry
    regression = load_space("default").for_task("regression")
    assert script.translate("logistic_regression", {}, "regression", regression) is None


def test_external_candidates_join_every_portfolio_and_are_never_left_out_of_a_held_out_one(
        tmp_path, load_script, classification):
    script = load_script("portfolio")
    work = tmp_path / "work"
    for name in ("a", "b"):
        path = script.search_file(work, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"candidates": [], "seconds": 1.0}))
    args = argparse.Namespace(task="classification", smoke=True, datasets=["a", "b"], work=work,
                              external=str(EXTERNAL))
    candidates, origin = script.gather_candidates(args)
    external = read_yaml(EXTERNAL.read_text(encoding="utf-8"))["classification"]
    n_defaults = origin.count(None)
    assert n_defaults == 3 and origin.count(script.EXTERNAL) == len(candidates) - 3
    assert candidates[3:] == [e["config"] for e in external
                              if e["config"] not in candidates[:3]]
    # the held-out portfolio of "a" may take an external candidate: only a's own are left out
    import numpy as np

    losses = np.ones((len(candidates), 2))
    losses[-1] = 0.0  # the last external candidate is the best on both datasets
    lodo = script.leave_one_out(losses, origin, ["a", "b"], size=1, default_index=0)
    assert lodo["a"]["portfolio"] == [len(candidates) - 1]

    bad = tmp_path / "bad.yaml"
    bad.write_text("space: default\nclassification:\n- source: mine\n  config: "
                   "{scaler: none, estimator: lightgbm, estimator__leaves: 3}\n")
    with pytest.raises(SystemExit, match="mine: .*Unknown hyperparameter 'leaves'"):
        script.external_configs(bad, "classification", classification)


def test_the_portfolios_without_the_external_candidates_come_from_the_same_matrix(load_script):
    import numpy as np

    script = load_script("portfolio")
    origin = [None, "a", "b", script.EXTERNAL]
    losses = np.array([[0.5, 0.5, 0.5],    # the default
                       [0.4, 0.1, 0.4],    # a's own candidate
                       [0.2, 0.4, 0.1],    # b's own candidate
                       [0.1, 0.15, 0.2]])  # external: best on a, good on b and c
    names = ["a", "b", "c"]
    with_external = script.leave_one_out(losses, origin, names, size=1, default_index=0)
    without = script.leave_one_out(losses, origin, names, size=1, default_index=0,
                                   without=script.EXTERNAL)
    assert with_external["a"]["portfolio"] == [3] and with_external["a"]["portfolio_loss"] == 0.1
    assert without["a"]["portfolio"] == [2] and without["a"]["portfolio_loss"] == 0.2
    assert all(3 not in r["portfolio"] for r in without.values())
