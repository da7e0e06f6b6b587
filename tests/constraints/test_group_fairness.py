"""fairlearn's group-fairness metrics as constraints, by their usual names: each agrees with
fairlearn's own value, ratios are lower bounds, several sensitive columns give their
intersection, and a constrained fit records them."""

from __future__ import annotations

import warnings

import fairlearn.metrics as fm
import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from admm_automl import ADMMClassifier
from admm_automl.constraints import CONSTRAINTS, make_constraints
from admm_automl.evaluation.splits import Split
from admm_automl.exceptions import InvalidParameterError
from admm_automl.testing import tiny_space

NAMES = ["demographic_parity_difference", "demographic_parity_ratio",
         "equalized_odds_difference", "equalized_odds_ratio",
         "equal_opportunity_difference", "equal_opportunity_ratio"]


def data(n=600, seed=0):
    """A label that depends on the group, so a plain learner is unfair."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"x": rng.normal(size=n), "sex": rng.choice(["f", "m"], size=n),
                      "race": rng.choice(["a", "b", "c"], size=n)})
    y = (X["x"] + 1.0 * (X["sex"] == "m") + 0.5 * (X["race"] == "a")
         + rng.normal(scale=0.5, size=n) > 0.7).astype(int).to_numpy()
    return X, y


def fitted(X, y):
    design = np.column_stack([X["x"], X["sex"] == "m", X["race"] == "a"]).astype(float)

    class Model:  # the pipeline's view: predict on the raw frame
        classes_ = np.array([0, 1])
        model = LogisticRegression().fit(design, y)

        def predict(self, frame):
            return self.model.predict(np.column_stack(
                [frame["x"], frame["sex"] == "m", frame["race"] == "a"]).astype(float))

    return Model()


@pytest.mark.parametrize("name", NAMES)
def test_each_metric_is_fairleans_value_on_the_validation_rows(name):
    X, y = data()
    model = fitted(X, y)
    rows = np.arange(400, 600)
    constraint = CONSTRAINTS.create({"name": name, "params": {"group_by": "sex"}})
    constraint.bind(X, y, groups=None, splits=[Split(np.arange(400), rows, np.arange(400))],
                    task="classification")
    value = constraint.measure(model, X.iloc[rows], y[rows], rows)
    expected = getattr(fm, name)(y[rows], model.predict(X.iloc[rows]),
                                 sensitive_features=X["sex"].iloc[rows])
    assert value == pytest.approx(expected) and 0.0 <= value <= 1.0
    if name.endswith("ratio"):
        assert (constraint.sense, constraint.threshold) == (">=", 0.8)  # the four-fifths rule
    else:
        assert (constraint.sense, constraint.threshold) == ("<=", 0.1)


def test_several_columns_are_their_intersection():
    X, y = data()
    model = fitted(X, y)
    rows = np.arange(600)
    constraint = CONSTRAINTS.create({"name": "demographic_parity_difference",
                                     "params": {"group_by": ["sex", "race"]}})
    constraint.bind(X, y, groups=None, splits=[Split(rows, rows, rows)], task="classification")
    assert set(constraint.groups_) == {f"{s} & {r}" for s in "fm" for r in "abc"}
    value = constraint.measure(model, X, y, rows)
    expected = fm.demographic_parity_difference(y, model.predict(X),
                                                sensitive_features=X[["sex", "race"]])
    assert value == pytest.approx(expected)
    # the same from fit(..., sensitive_features=) with two columns
    from_features = CONSTRAINTS.create("demographic_parity_difference")
    from_features.bind(X, y, groups=X[["sex", "race"]], splits=[Split(rows, rows, rows)],
                       task="classification")
    assert list(from_features.groups_) == list(constraint.groups_)


def test_expressions_and_clear_errors():
    (ratio,) = make_constraints(["demographic_parity_ratio >= 0.9"])
    assert (ratio.name, ratio.sense, ratio.threshold) == ("demographic_parity_ratio", ">=", 0.9)
    X, y = data()
    with pytest.raises(InvalidParameterError, match="sense must be one of"):
        make_constraints(["demographic_parity_ratio <= 0.9"])[0].validate()
    (diff,) = make_constraints(["equalized_odds_difference <= 0.1"])
    with pytest.raises(InvalidParameterError, match="equalized_odds_difference needs group_by"):
        diff.bind(X, y, groups=None, splits=[], task="classification")
    with pytest.raises(InvalidParameterError, match="applies to classification only"):
        diff.bind(X, y, groups=X["sex"], splits=[], task="regression")
    bad = CONSTRAINTS.create({"name": "equal_opportunity_difference",
                              "params": {"group_by": "gender"}})
    with pytest.raises(Exception, match="equal_opportunity_difference: group_by column 'gender'"):
        bad.bind(X, y, groups=None, splits=[], task="classification")


def test_a_constrained_fit_records_the_metric_per_evaluation():
    X, y = data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ADMMClassifier(search_space=tiny_space(), theta_solver="random",
                               z_solver="random", executor="serial", max_evals=6,
                               random_state=0, ensemble_size=0, cv=None,
                               constraints=["demographic_parity_difference <= 0.2"]).fit(
            X[["x"]], y, sensitive_features=X["sex"])
    values = model.history_["constraint:demographic_parity_difference"]
    assert values.notna().all() and ((values >= 0) & (values <= 1)).all()


def _families():
    from admm_automl.constraints.fairness import _RATES

    return [(name, _RATES[name.rpartition("_")[0]], name.endswith("ratio")) for name in NAMES]


@pytest.mark.parametrize("name, kinds, ratio", _families())
def test_the_counted_rates_give_fairlearns_values(name, kinds, ratio):
    """The bootstrap computes the metrics from per-group counts: on the sample itself they are
    fairlearn's values, three groups and all."""
    from admm_automl.constraints.fairness import combine_rates, group_rates

    rng = np.random.default_rng(1)
    y = rng.integers(2, size=300)
    pred = (rng.random(300) < 0.3 + 0.4 * y).astype(int)
    groups = rng.choice(["a", "b", "c"], size=300)
    names, index = np.unique(groups, return_inverse=True)
    counted = combine_rates(group_rates(y, pred, index, len(names)), kinds, ratio)
    assert counted.shape == (1,)
    assert counted[0] == pytest.approx(getattr(fm, name)(y, pred, sensitive_features=groups))


def _bound(name, n, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(2, size=n)
    groups = rng.choice(["a", "b"], size=n, p=[0.8, 0.2])
    pred = (rng.random(n) < 0.3 + 0.3 * y + 0.1 * (groups == "b")).astype(int)
    c = CONSTRAINTS.create({"name": name, "params": {"confidence": 0.9}})
    point = getattr(fm, name)(y, pred, sensitive_features=groups)
    return point, c.bound(point, y, pred, groups)


@pytest.mark.parametrize("name", NAMES)
def test_the_bound_is_never_on_the_good_side_and_shrinks_with_more_rows(name):
    gaps = []
    for n in (300, 3000):
        point, bound = _bound(name, n)
        assert (bound <= point) if name.endswith("ratio") else (bound >= point)
        gaps.append(abs(bound - point))
        assert _bound(name, n)[1] == bound  # a fixed seed: the same pipeline, the same bound
    assert gaps[1] < gaps[0] and gaps[0] > 0


def test_confidence_is_checked():
    for params, message in (({"confidence": 1.0}, "confidence must be None or a number in"),
                            ({"confidence": 0.9, "n_bootstrap": 5}, "n_bootstrap must be")):
        with pytest.raises(InvalidParameterError, match=message):
            CONSTRAINTS.create({"name": "demographic_parity_difference",
                                "params": params}).validate()


def test_measure_with_confidence_is_the_bound_of_the_validation_value():
    X, y = data()
    model = fitted(X, y)
    rows = np.arange(400, 600)
    split = [Split(np.arange(400), rows, np.arange(400))]
    values = []
    for confidence in (None, 0.9):
        c = CONSTRAINTS.create({"name": "equal_opportunity_difference",
                                "params": {"group_by": "sex", "confidence": confidence}})
        c.bind(X, y, groups=None, splits=split, task="classification")
        values.append(c.measure(model, X.iloc[rows], y[rows], rows))
    assert values[1] > values[0]


def test_a_bounded_constraint_reports_its_point_value_beside_the_bound():
    """With ``confidence`` the search constrains the bound, and the run keeps the point value on
    the validation rows too: measure_point gives both, history_ has both columns, and the
    per-constraint line of the returned model shows both."""
    from admm_automl.final.results import describe_constraints

    X, y = data()
    model = fitted(X, y)
    rows = np.arange(400, 600)
    split = [Split(np.arange(400), rows, np.arange(400))]
    plain, bounded = (CONSTRAINTS.create({"name": "demographic_parity_difference",
                                          "params": {"group_by": "sex", "confidence": c}})
                      for c in (None, 0.9))
    for c in (plain, bounded):
        c.bind(X, y, groups=None, splits=split, task="classification")
    value = plain.measure(model, X.iloc[rows], y[rows], rows)
    assert plain.measure_point(model, X.iloc[rows], y[rows], rows) == (value, None)
    bound, point = bounded.measure_point(model, X.iloc[rows], y[rows], rows)
    assert point == value and bound > value
    assert bound == bounded.measure(model, X.iloc[rows], y[rows], rows)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = ADMMClassifier(
            search_space=tiny_space(), theta_solver="random", z_solver="random",
            executor="serial", max_evals=6, random_state=0, ensemble_size=0,
            fairness_mitigation=False, constraints=[{
                "name": "demographic_parity_difference", "threshold": 1.0, "group_by": "sex",
                "confidence": 0.9}]).fit(X, y)
    history = search.history_.set_index("eval_id")
    bounds = history["constraint:demographic_parity_difference"]
    points = history["constraint:demographic_parity_difference:point"]
    assert (bounds >= points).all() and (bounds > points).any()
    board = search.leaderboard(n=3)
    assert {"constraint:demographic_parity_difference",
            "constraint:demographic_parity_difference:point"} <= set(board.columns)
    (line,) = describe_constraints(search)
    assert line == (f"demographic_parity_difference <= 1: {bounds[search.best_eval_id_]:.4g} "
                    f"(90% bound; {points[search.best_eval_id_]:.4g} on the validation rows), met")


class _OneClass:
    """Predicts the positive class for every row (its scores could still rank well); every
    rate of every group is then 1, so every difference is 0 and every ratio 1 (predicting the
    negative class for every row gives ratios of 0/0)."""

    classes_ = np.array([0, 1])

    def predict(self, frame):
        return np.ones(len(frame), dtype=int)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("confidence", [None, 0.9])
def test_a_classifier_of_one_class_does_not_meet_a_parity_vacuously(name, confidence):
    """fairlearn gives it perfect parity (0, or 1 for a ratio): it selects everybody. By default
    it gets the worst value instead; allow_one_class=True keeps fairlearn's."""
    X, y = data()
    rows = np.arange(400, 600)
    split = [Split(np.arange(400), rows, np.arange(400))]
    values = {}
    for allow in (False, True):
        constraint = CONSTRAINTS.create({"name": name, "params": {
            "group_by": "sex", "confidence": confidence, "allow_one_class": allow}})
        constraint.bind(X, y, groups=None, splits=split, task="classification")
        values[allow] = constraint.measure(_OneClass(), X.iloc[rows], y[rows], rows)
        assert constraint.feasible(values[allow]) is allow
    vacuous = getattr(fm, name)(y[rows], np.ones(200, dtype=int),
                                sensitive_features=X["sex"].iloc[rows])
    assert values[True] == pytest.approx(vacuous)
    assert values[False] == (0.0 if name.endswith("ratio") else 1.0)


def test_a_spread_of_selection_rates_is_not_met_by_a_classifier_of_one_class():
    X, y = data()
    rows = np.arange(400, 600)
    split = [Split(np.arange(400), rows, np.arange(400))]
    for metric, allow, expected in [("selection_rate", False, 1.0), ("selection_rate", True, 0.0),
                                    ("tpr", False, 1.0), ("tpr", True, 0.0)]:
        constraint = CONSTRAINTS.create({"name": "disparate_impact", "params": {
            "group_by": "sex", "metric": metric, "allow_one_class": allow}})
        constraint.bind(X, y, groups=None, splits=split, task="classification")
        assert constraint.measure(_OneClass(), X.iloc[rows], y[rows], rows) == expected


# ------------------------------------------------------------------ bounds over several splits
def _splits(n_rows, k, repeats=1):
    rows = np.arange(n_rows)
    folds = np.array_split(rows, k)
    return [Split(np.setdiff1d(rows, f), f, np.setdiff1d(rows, f))
            for _ in range(repeats) for f in folds]


def test_the_bound_of_cross_validated_values_is_the_bound_of_their_mean():
    """k folds' bounds combine as the errors of a mean: the point values' mean plus the margins'
    root mean square over √k (k distinct validation sets); a holdout keeps its bound; repeated
    folds validate the same rows, so their k is the folds', not the splits'; a ratio's bound
    is a lower one; plain values are averaged."""
    from admm_automl.constraints import DemographicParityDifference, DemographicParityRatio
    from admm_automl.constraints.base import combine_splits
    from admm_automl.records import POINT

    key = "demographic_parity_difference"
    measures = {key: DemographicParityDifference(0.1), "r": DemographicParityRatio(0.8)}
    measured = {key: [0.15, 0.25, 0.2, 0.2], key + POINT: [0.1, 0.1, 0.1, 0.1],
                "latency": [1.0, 2.0, 3.0, 2.0]}
    margins = np.array([0.05, 0.15, 0.1, 0.1])
    folds = combine_splits(measured, _splits(400, 4), measures)
    assert folds[key] == pytest.approx(0.1 + np.sqrt(np.mean(margins ** 2)) / 2)
    assert folds[key + POINT] == pytest.approx(0.1) and folds["latency"] == 2.0
    assert folds[key] < np.mean(measured[key])  # not the mean of the bounds
    holdout = {key: [0.2], key + POINT: [0.1]}
    assert combine_splits(holdout, _splits(400, 4)[:1], measures)[key] == pytest.approx(0.2)
    repeated = combine_splits(measured, _splits(400, 2, repeats=2), measures)
    assert repeated[key] == pytest.approx(0.1 + np.sqrt(np.mean(margins ** 2)) / np.sqrt(2))
    ratio = {"r": [0.7, 0.8], "r" + POINT: [0.8, 0.9]}
    assert combine_splits(ratio, _splits(400, 2), measures)["r"] == pytest.approx(0.85 - 0.1 / np.sqrt(2))


def test_a_cross_validated_bound_is_close_to_the_bootstrap_bound_on_all_the_rows():
    """What the combination approximates: with 5 folds the recorded bound's margin over the point
    value is near the margin of the bootstrap bound of one model's predictions on all the rows
    (the same sampling error: 5 times the rows of one fold), and well under a fold's own."""
    from admm_automl.constraints.base import combine_splits, measure_all

    X, y = data(n=3000, seed=3)
    model = fitted(X, y)
    c = CONSTRAINTS.create({"name": "demographic_parity_difference",
                            "params": {"group_by": "sex", "confidence": 0.9}})
    splits = _splits(3000, 5)
    c.bind(X, y, groups=None, splits=splits, task="classification")
    measured = {}
    for split in splits:
        measure_all({c.key: c}, model, X.iloc[split.valid], y[split.valid], split.valid, measured)
    combined = combine_splits(measured, splits, {c.key: c})
    margin = combined[c.key] - combined[c.key + ":point"]
    rows = np.arange(3000)
    bound, point = c.measure_point(model, X, y, rows)
    fold_margin = np.mean(np.subtract(measured[c.key], measured[c.key + ":point"]))
    assert 0.6 * (bound - point) < margin < 1.5 * (bound - point)
    assert margin < 0.6 * fold_margin


def test_with_group_by_gives_the_column_to_group_constraints_that_have_none():
    from admm_automl.constraints import DemographicParityDifference, with_group_by

    own = {"name": "disparate_impact", "threshold": 0.1, "group_by": "age"}
    specs = ["latency <= 1", "equalized_odds_difference <= 0.1", own,
             {"name": "demographic_parity_ratio", "threshold": 0.8, "confidence": 0.9},
             DemographicParityDifference(0.05)]
    out = with_group_by(specs, "sex")
    assert out[0] == "latency <= 1" and out[2] == own
    assert out[1] == {"name": "equalized_odds_difference", "threshold": 0.1, "sense": "<=",
                      "group_by": "sex"}
    assert out[3] == {"name": "demographic_parity_ratio", "threshold": 0.8, "confidence": 0.9,
                      "group_by": "sex"}
    assert out[4].group_by == "sex" and specs[4].group_by is None  # a copy
    with pytest.raises(InvalidParameterError, match="no group-fairness constraint"):
        with_group_by(["latency <= 1", own], "sex")
