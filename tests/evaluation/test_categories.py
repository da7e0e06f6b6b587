"""Category columns reach tree learners as codes, boosted learners as pandas category columns
they split natively, and the others one-hot encoded."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

from admm_automl import ADMMClassifier
from admm_automl.evaluation.data import (
    category_columns, make_preprocessor, native_categories, ordinal_categories,
)
from admm_automl.exceptions import ConfigError
from admm_automl.space import space_from_dict


def _data(n=240, seed=0):
    rng = np.random.default_rng(seed)
    colour = rng.choice(["red", "green", "blue", "grey"], n)
    size = rng.normal(size=n)
    y = ((colour == "red") | (colour == "blue")) ^ (size > 1.5)
    return pd.DataFrame({"colour": colour, "size": size}), y.astype(int)


SPACE_DICT = {
    "name": "two_learners",
    "modules": [{"name": "estimator", "choices": [
        {"name": "tree", "class": "sklearn.tree.DecisionTreeClassifier", "categories": "ordinal",
         "hyperparameters": {"max_depth": {"type": "int", "low": 1, "high": 4, "default": 2}}},
        {"name": "logistic_regression", "class": "sklearn.linear_model.LogisticRegression"},
    ]}],
}
SPACE = space_from_dict(SPACE_DICT)


def _encoders(pipeline):
    encoders = []
    for _, steps, _ in pipeline.named_steps["preprocess"].transformers_:
        encoders += [s for s in getattr(steps, "named_steps", {}).values()
                     if isinstance(s, (OneHotEncoder, OrdinalEncoder))]
    return encoders


def test_ordinal_categories_gives_one_column_of_codes_per_category_column():
    X, _ = _data()
    one_hot = make_preprocessor(X).fit(X)
    ordinal = ordinal_categories(make_preprocessor(X)).fit(X)
    assert one_hot.transform(X).shape[1] == 1 + 4
    codes = ordinal.transform(X)
    assert codes.shape == (len(X), 2)
    assert sorted(set(codes[:, 1])) == [0, 1, 2, 3]  # numbers first, then the categories
    unseen = X.head(2).assign(colour=["purple", "red"])
    assert ordinal.transform(unseen)[:, 1].tolist() == [-1, codes[X["colour"] == "red"][0, 1]]
    assert ordinal_categories(make_preprocessor(np.zeros((4, 2)))) is None  # nothing to encode


@pytest.mark.parametrize("learner, encoder", [("tree", OrdinalEncoder),
                                               ("logistic_regression", OneHotEncoder)])
@pytest.mark.parametrize("bagging", [False, True])
def test_each_learner_gets_the_encoding_its_choice_declares_in_trials_refit_and_ensemble(
        learner, encoder, bagging):
    """The refitted best pipeline, the ensemble's refitted members, and (bagging) the trials'
    own fold models that the bagged members are."""
    from sklearn.frozen import FrozenEstimator

    from admm_automl.final.bagging import BaggedClassifier

    X, y = _data()
    only = space_from_dict({"name": learner, "modules": [{"name": "estimator", "choices": [
        c for c in SPACE_DICT["modules"][0]["choices"] if c["name"] == learner]}]})
    model = ADMMClassifier(search_space=only, executor="serial", random_state=0,
                           theta_solver="random", z_solver="random", max_evals=8, cv=3,
                           portfolio=None, ensemble_size=8, bagging=bagging,
                           stacking=False).fit(X, y)
    pipelines = [model.best_pipeline_]
    for member in [] if model.ensemble_ is None else model.ensemble_.estimators_:
        member = member.estimator if isinstance(member, FrozenEstimator) else member
        pipelines += (member.estimators_ if isinstance(member, BaggedClassifier) else [member])
    assert all([type(e) for e in _encoders(p)] == [encoder] for p in pipelines)
    assert learner != "tree" or len(pipelines) > 2


def test_the_trial_context_encodes_codes_only_for_an_ordinal_learner_on_category_columns():
    from admm_automl.evaluation.trial import TrialContext
    from admm_automl.evaluation.metrics import get_metric

    X, y = _data()
    ctx = TrialContext(SPACE, X, y, [], get_metric(None, "classification", "binary"),
                       make_preprocessor(X))
    tree, linear = (0,), (1,)
    assert (ctx.encoding(tree), ctx.encoding(linear)) == ("ordinal", "one_hot")
    categorical_branch = ctx.pipeline(tree, SPACE.encoding.initial_theta)[0].transformers[1][1]
    assert isinstance(categorical_branch[-1], OrdinalEncoder)
    numeric = TrialContext(SPACE, X[["size"]], y, [], ctx.metric, make_preprocessor(X[["size"]]))
    assert numeric.encoding(tree) == "one_hot"  # no category columns: nothing to tell apart


def test_a_space_file_with_an_unknown_encoding_is_refused_by_name():
    with pytest.raises(ConfigError, match=r"^modules\[0\]\.choices\[0\]: algorithm 'tree': "
                                          r"categories='binary'; expected one of"):
        space_from_dict({"name": "bad", "modules": [{"name": "estimator", "choices": [
            {"name": "tree", "class": "sklearn.tree.DecisionTreeClassifier",
             "categories": "binary"}]}]})


def test_target_encoding_is_fitted_inside_each_fold_so_no_validation_label_reaches_its_feature():
    """A key column of 150 values, two rows each, and a label of pure noise. Fitted on all rows
    before the folds, the target encoding carries each validation row's own label into its
    feature (the leaky validation AUROC computed below is far above 0.5); a trial fits it inside
    the pipeline on each fold's training rows, so its validation AUROC stays near 0.5."""
    from sklearn.metrics import roc_auc_score

    from admm_automl.evaluation.metrics import get_metric
    from admm_automl.evaluation.splits import make_splits
    from admm_automl.evaluation.trial import TrialContext, run_trial

    rng = np.random.default_rng(0)
    key = rng.permutation(np.repeat([f"k{i:03d}" for i in range(150)], 2))
    X, y = pd.DataFrame({"key": key}), rng.integers(0, 2, 300)
    preprocessor = make_preprocessor(X)
    assert preprocessor.transformers[0][0] == "high_cardinality"  # target-encoded, not one-hot
    linear = space_from_dict({"name": "linear", "modules": [{"name": "estimator", "choices": [
        c for c in SPACE_DICT["modules"][0]["choices"] if c["name"] == "logistic_regression"]}]})
    splits = make_splits(y, classification=True, cv=3, validation_size=0.2, seed=0)
    ctx = TrialContext(linear, X, y, splits, get_metric("roc_auc", "classification", "binary"),
                       preprocessor, 0, labels=np.unique(y), cache_size=0)
    result = run_trial(ctx, (0,), linear.encoding.initial_theta, 1.0)
    assert result["status"] == "ok", result.get("error")
    leaky = []
    for split in splits:
        encoded = make_preprocessor(X).fit(X, y)  # every row's label, the validation rows' too
        model = LogisticRegression().fit(encoded.transform(X.iloc[split.train]), y[split.train])
        leaky.append(roc_auc_score(y[split.valid], model.predict_proba(
            encoded.transform(X.iloc[split.valid]))[:, 1]))
    assert np.mean(leaky) > 0.75
    assert abs((1 - result["loss"]) - 0.5) < 0.12


def _native_space(*choices, scaler=False):
    modules = [{"name": "estimator", "choices": list(choices)}]
    if scaler:
        modules.insert(0, {"name": "scaler", "choices": [
            {"name": "standard_scaler", "class": "sklearn.preprocessing.StandardScaler"}]})
    return space_from_dict({"name": "native", "modules": modules})


HGB_STUMP = {"name": "stump", "class": "sklearn.ensemble.HistGradientBoostingClassifier",
             "hyperparameters": {"max_iter": {"type": "fixed", "value": 1},
                                 "max_leaf_nodes": {"type": "fixed", "value": 2},
                                 "learning_rate": {"type": "fixed", "value": 1.0}}}


def test_native_categories_puts_category_columns_first_as_a_category_dtype_of_codes():
    X, _ = _data()
    X = X.assign(shade=np.where(X["colour"] == "grey", "dark", "light"))
    preprocessor = native_categories(make_preprocessor(X))
    out = preprocessor.fit(X).transform(X)
    assert category_columns(make_preprocessor(X)) == 2
    assert list(out.columns) == ["colour", "shade", "size"]
    assert [str(t) for t in out.dtypes] == ["category", "category", "float64"]
    assert list(out["colour"].cat.categories) == [-1, 0, 1, 2, 3]  # -1: a value never seen
    unseen = preprocessor.transform(X.head(2).assign(colour=["purple", "red"]))
    assert unseen["colour"].tolist() == [-1, out["colour"][X["colour"] == "red"].iloc[0]]
    assert native_categories(make_preprocessor(np.zeros((4, 2)))) is None  # nothing to encode


def test_a_native_split_groups_values_that_a_split_of_codes_cannot():
    """Eight values, the positive class on the codes 0, 3, 5 and 6: no single cut of the codes
    separates them, a native categorical split (a subset of the values) does — a one-split
    HistGradientBoosting is perfect on the validation rows with native categories and far from
    it with the same codes as numbers."""
    from admm_automl.evaluation.metrics import get_metric
    from admm_automl.evaluation.splits import make_splits
    from admm_automl.evaluation.trial import TrialContext, run_trial

    rng = np.random.default_rng(1)
    values = np.array(list("abcdefgh"))
    X = pd.DataFrame({"letter": rng.choice(values, 800), "noise": rng.normal(size=800)})
    y = X["letter"].isin(["a", "d", "f", "g"]).to_numpy().astype(int)
    splits = make_splits(y, classification=True, cv=None, validation_size=0.25, seed=0)
    losses = {}
    for categories in ("native", "ordinal"):
        space = _native_space(dict(HGB_STUMP, categories=categories))
        ctx = TrialContext(space, X, y, splits, get_metric("roc_auc", "classification", "binary"),
                           make_preprocessor(X), 0, labels=np.unique(y), cache_size=0)
        result = run_trial(ctx, (0,), space.encoding.initial_theta, 1.0)
        assert result["status"] == "ok", result.get("error")
        losses[categories] = result["loss"]
    assert losses["native"] < 1e-9 and losses["ordinal"] > 0.1


@pytest.mark.parametrize("learner", ["hist_gradient_boosting", "catboost"])
def test_native_learners_get_their_category_columns_untouched_by_the_scaler_before_them(learner):
    """Through a searched scaler, in the refitted best pipeline and the ensemble's members (the
    trials built them the same way, or the search would not have found a good one):
    HistGradientBoosting marks the category column categorical from its dtype, CatBoost is
    given its position; the scaler leaves the codes as they are."""
    from sklearn.base import clone

    if learner == "catboost":
        pytest.importorskip("catboost")
        choice = {"name": "catboost", "class": "catboost.CatBoostClassifier",
                  "categories": "native", "category_parameter": "cat_features",
                  "hyperparameters": {"iterations": {"type": "int", "low": 5, "high": 20,
                                                     "default": 10},
                                      "thread_count": {"type": "fixed", "value": 1},
                                      "verbose": {"type": "fixed", "value": 0},
                                      "allow_writing_files": {"type": "fixed", "value": False}}}
    else:
        choice = {"name": "hgb", "class": "sklearn.ensemble.HistGradientBoostingClassifier",
                  "categories": "native",
                  "hyperparameters": {"max_iter": {"type": "int", "low": 5, "high": 20,
                                                   "default": 10}}}
    X, y = _data()
    model = ADMMClassifier(search_space=_native_space(choice, scaler=True), executor="serial",
                           random_state=0, theta_solver="random", z_solver="random", max_evals=4,
                           cv=3, portfolio=None, ensemble_size=4, bagging=False,
                           stacking=False).fit(X, y)
    members = [] if model.ensemble_ is None else model.ensemble_.estimators_
    pipelines = [model.best_pipeline_] + [m.estimator if hasattr(m, "estimator") else m
                                          for m in members]
    for pipeline in pipelines:
        clone(pipeline)  # as the bags clone the fold models a trial kept
        scaled = pipeline[:-1].transform(X)
        assert str(scaled.dtypes["colour"]) == "category"
        assert sorted(set(scaled["colour"])) == [0, 1, 2, 3]
        assert abs(scaled["size"].std() - 1) < 0.01  # the numbers were scaled
        estimator = pipeline[-1]
        if learner == "catboost":
            assert tuple(estimator.get_params()["cat_features"]) == (0,)
        else:
            assert estimator.is_categorical_.tolist() == [True, False]
    assert model.score(X, y) > 0.9


def test_a_category_parameter_without_native_categories_is_refused_by_name():
    with pytest.raises(ConfigError, match=r"^modules\[0\]\.choices\[0\]: algorithm 'tree': "
                                          r"category_parameter='cat_features' must be a parameter "
                                          r"name, with categories: native \(it has 'ordinal'\)"):
        space_from_dict({"name": "bad", "modules": [{"name": "estimator", "choices": [
            {"name": "tree", "class": "sklearn.tree.DecisionTreeClassifier",
             "categories": "ordinal", "category_parameter": "cat_features"}]}]})


@pytest.mark.parametrize("learner", ["hist_gradient_boosting", "lightgbm", "xgboost", "catboost"])
def test_the_default_space_gives_its_boosted_learners_codes_as_a_numeric_array(learner):
    """Not native categories: from pandas category columns the fitted pipeline builds a
    DataFrame on every predict call and HistGradientBoosting, LightGBM and XGBoost re-encode it
    (HistGradientBoosting keeps an OrdinalEncoder inside for it): 1.7-2.3x slower per row on a
    1 000-row batch, for no measured gain in test AUROC."""
    from admm_automl.evaluation.metrics import get_metric
    from admm_automl.evaluation.trial import TrialContext
    from admm_automl.space import load_space

    if learner != "hist_gradient_boosting":
        pytest.importorskip(learner)
    space = load_space("default").for_task("classification").restrict(estimator=learner)
    X, y = _data()
    ctx = TrialContext(space, X, y, [], get_metric(None, "classification", "binary"),
                       make_preprocessor(X))
    z = space.encoding.initial_z
    assert ctx.encoding(z) == "ordinal"
    pipeline = ctx.pipeline(z, space.encoding.initial_theta).fit(X, y)
    features = pipeline[:-1].transform(X)
    assert isinstance(features, np.ndarray) and features.dtype.kind == "f"
    if learner == "hist_gradient_boosting":
        assert pipeline[-1].is_categorical_ is None  # no encoder inside its predict
    assert (pipeline.predict(X) == y).mean() > 0.9
