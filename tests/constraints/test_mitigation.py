"""fairlearn's mitigations as choices of the space: the wrappers predict from X alone, a
wrapping module makes one-step pipelines with no shared prefix, and a constraint that no plain
learner meets is met through a mitigation."""

from __future__ import annotations

import json
import pickle
import warnings

import fairlearn.metrics as fm
import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

from admm_automl import ADMMClassifier
from admm_automl.constraints import (ExponentiatedGradientClassifier,
                                     ThresholdOptimizerClassifier, make_constraints,
                                     is_mitigated, mitigation_module)
from admm_automl.constraints.mitigation import TIE_BREAK
from admm_automl.evaluation.prefix_cache import prefix_keys
from admm_automl.exceptions import ConfigError, DataError, InvalidParameterError
from admm_automl.run.spaces import task_space
from admm_automl.space import space_from_dict
from admm_automl.testing import tiny_space


def unfair(n=600, seed=0):
    """Labels that differ by group (85 % against 15 % positive), so every accurate learner
    predicts the difference: a demographic parity difference near 0.7."""
    rng = np.random.default_rng(seed)
    group = rng.integers(0, 2, n)
    X = pd.DataFrame({"x": rng.normal(size=n) + group, "noise": rng.normal(size=n),
                      "sex": np.where(group == 1, "m", "f")})
    y = np.where(rng.random(n) < np.where(group == 1, 0.85, 0.15), "yes", "no")
    return X, y


def dp(y, predicted, groups):
    """fairlearn's demographic parity difference of "yes" labels."""
    return fm.demographic_parity_difference(np.asarray(y) == "yes", np.asarray(predicted) == "yes",
                                            sensitive_features=groups)


def linear():
    from sklearn.compose import make_column_transformer
    from sklearn.preprocessing import OneHotEncoder

    return Pipeline([("prep", make_column_transformer((OneHotEncoder(), ["sex"]),
                                                      remainder="passthrough")),
                     ("model", LogisticRegression())])


@pytest.mark.parametrize("cls", [ThresholdOptimizerClassifier, ExponentiatedGradientClassifier])
def test_a_wrapper_reads_the_groups_from_X_and_meets_demographic_parity(cls):
    X, y = unfair()
    plain = linear().fit(X, y)
    before = dp(y, plain.predict(X), X["sex"])
    model = cls(linear(), group_by="sex", random_state=0).fit(X, y)
    predicted = model.predict(X)
    after = dp(y, predicted, X["sex"])
    assert before > 0.5 and after < 0.1
    assert set(predicted) <= {"no", "yes"} and list(model.classes_) == ["no", "yes"]
    proba = model.predict_proba(X)
    assert proba.shape == (len(X), 2) and np.allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(model.predict(X), predicted)  # seeded draws
    again = pickle.loads(pickle.dumps(model))
    assert np.array_equal(again.predict(X), predicted)
    assert clone(model).get_params()["group_by"] == "sex"


@pytest.mark.parametrize("cls", [ThresholdOptimizerClassifier, ExponentiatedGradientClassifier])
def test_the_probabilities_rank_rows_by_the_learner_within_each_level_of_the_decision(cls):
    from sklearn.metrics import roc_auc_score

    # labels that depend on x within each group, and on the group: a mitigation shifts the
    # groups' decisions, the learner still ranks the rows of a group
    rng = np.random.default_rng(1)
    group = rng.integers(0, 2, 1000)
    X = pd.DataFrame({"x": rng.normal(size=1000), "sex": np.where(group == 1, "m", "f")})
    logit = 2.0 * X["x"].to_numpy() + 1.5 * (2 * group - 1)
    y = np.where(rng.random(1000) < 1.0 / (1.0 + np.exp(-logit)), "yes", "no")
    model = cls(linear(), group_by="sex", random_state=0).fit(X, y)
    pmf = np.asarray(model._pmf(X))[:, 1]  # what the decisions are drawn from
    proba = model.predict_proba(X)
    score = model._score(X)
    assert np.allclose(proba.sum(axis=1), 1.0) and proba.min() >= 0.0 and proba.max() <= 1.0
    assert np.allclose(proba[:, 1], pmf, atol=1e-6)  # the probabilities, nearly unchanged
    # a level of the decision's probability is ordered by the learner's score; levels keep
    # their order
    for level in np.unique(pmf):
        rows = pmf == level
        order = np.argsort(proba[rows, 1], kind="stable")
        assert np.all(np.diff(score[rows][order]) >= 0)
    assert np.all(np.diff(pmf[np.argsort(proba[:, 1], kind="stable")]) >= 0)
    # so a ranking metric sees the learner's ranking where the probabilities alone tie
    truth = np.asarray(y) == "yes"
    assert len(np.unique(pmf)) < 20 < len(np.unique(proba[:, 1]))
    assert roc_auc_score(truth, proba[:, 1]) > roc_auc_score(truth, pmf) + 0.01
    # the decisions are still drawn from the probabilities of fairlearn's decision
    draws = np.random.default_rng(0).random(len(pmf)) < pmf
    assert np.array_equal(model.predict(X) == "yes", draws)


def test_thresholds_chosen_on_held_out_scores_hold_on_new_rows_for_a_learner_that_overfits():
    """A forest scores its own training rows almost perfectly: thresholds that equalise those
    scores (fairlearn's fit, ``cv=None``) miss on new rows; chosen on held-out scores they hold."""
    from sklearn.compose import make_column_transformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.preprocessing import OneHotEncoder

    def data(n, seed):
        rng = np.random.default_rng(seed)
        group = rng.integers(0, 2, n)
        X = pd.DataFrame({"x": rng.normal(size=n), "z": rng.normal(size=n),
                          "sex": np.where(group == 1, "m", "f")})
        logit = X["x"].to_numpy() + (2 * group - 1)
        return X, np.where(rng.random(n) < 1.0 / (1.0 + np.exp(-logit)), "yes", "no")

    forest = Pipeline([("prep", make_column_transformer((OneHotEncoder(), ["sex"]),
                                                        remainder="passthrough")),
                       ("model", RandomForestClassifier(50, random_state=0, n_jobs=1))])
    X, y = data(2000, 0)
    new_X, new_y = data(4000, 1)
    difference = {}
    for cv in (None, 3):
        model = ThresholdOptimizerClassifier(forest, group_by="sex", cv=cv,
                                             constraints="equalized_odds", random_state=0)
        predicted = model.fit(X, y).predict(new_X)
        difference[cv] = fm.equalized_odds_difference(new_y == "yes", predicted == "yes",
                                                      sensitive_features=new_X["sex"])
    assert difference[None] > 0.3 and difference[3] < 0.08, difference
    with pytest.raises(InvalidParameterError,
                       match="cv must be None, an int >= 2 or 'folds', got 1"):
        ThresholdOptimizerClassifier(forest, group_by="sex", cv=1).fit(X, y)


def test_a_wrapper_refuses_what_it_cannot_mitigate():
    X, y = unfair()
    with pytest.raises(InvalidParameterError, match="binary classification only"):
        ThresholdOptimizerClassifier(linear(), group_by="sex").fit(X, np.arange(len(X)) % 3)
    with pytest.raises(InvalidParameterError, match="constraints must be one of"):
        ThresholdOptimizerClassifier(linear(), group_by="sex", constraints="parity").fit(X, y)


def test_the_mitigation_target_of_each_constraint():
    targets = {
        "demographic_parity_difference <= 0.1": "demographic_parity",
        "demographic_parity_ratio >= 0.8": "demographic_parity",
        "equalized_odds_difference <= 0.1": "equalized_odds",
        "equal_opportunity_ratio >= 0.8": "true_positive_rate_parity",
    }
    for text, target in targets.items():
        (constraint,) = make_constraints([text])
        assert constraint.mitigation_target == target
    for metric, target in [("tpr", "true_positive_rate_parity"), ("roc_auc", None)]:
        (di,) = make_constraints([{"name": "disparate_impact", "threshold": 0.1,
                                   "metric": metric}])
        assert di.mitigation_target == target
    # groups that are not columns of X, and not given beside it: nothing to mitigate by
    (no_columns,) = make_constraints(["demographic_parity_difference <= 0.1"])
    assert mitigation_module(no_columns) is None
    (latency,) = make_constraints(["latency <= 1e-3"])
    assert mitigation_module(latency) is None


def mitigated_space(group_by="sex"):
    (constraint,) = make_constraints([{"name": "demographic_parity_difference",
                                       "threshold": 0.1, "group_by": group_by}])
    return tiny_space().for_task("classification").wrapped(mitigation_module(constraint))


def test_a_wrapping_module_makes_one_step_with_no_prefix_and_none_adds_no_step():
    space = mitigated_space()
    enc = space.encoding
    assert [m.name for m in space.modules] == ["scaler", "estimator", "mitigation"]
    assert space.decode(enc.initial_z, enc.initial_theta)["mitigation"] == "none"
    names = enc.choice_names[-1]
    z_none = (1, 1, names.index("none"))
    z_to = (1, 1, names.index("threshold_optimizer"))
    plain = space.to_pipeline(z_none, enc.initial_theta, preprocessor="passthrough")
    assert [name for name, _ in plain.steps] == ["preprocess", "scaler", "estimator"]
    wrapped = space.to_pipeline(z_to, enc.initial_theta, preprocessor="passthrough",
                                random_state=3)
    assert [name for name, _ in wrapped.steps] == ["mitigation"]
    inner = wrapped[-1].estimator
    assert [name for name, _ in inner.steps] == ["preprocess", "scaler", "estimator"]
    assert wrapped[-1].random_state == 3 and wrapped[-1].group_by == "sex"
    assert prefix_keys(space, z_to, enc.initial_theta, split=0, fidelity=1.0,
                       random_state=0) == []
    assert len(prefix_keys(space, z_none, enc.initial_theta, split=0, fidelity=1.0,
                           random_state=0)) == 2  # preprocess, scaler: before the estimator


def test_a_mitigated_configuration_read_back_from_the_journal_encodes_again():
    """JSON turns the fixed ``bins`` tuple into a list; the configuration a journal holds (the
    best pipeline to refit, a resumed run's history) must still encode to the same point."""
    (constraint,) = make_constraints([{"name": "demographic_parity_difference",
                                       "threshold": 0.1, "group_by": "age",
                                       "bins": [0, 26, 120]}])
    space = tiny_space().for_task("classification").wrapped(mitigation_module(constraint))
    enc = space.encoding
    z = (1, 1, enc.choice_names[-1].index("threshold_optimizer"))
    config = space.decode(z, enc.initial_theta)
    assert config["mitigation__bins"] == (0, 26, 120)
    read_back = json.loads(json.dumps(config))
    assert read_back["mitigation__bins"] == [0, 26, 120]
    z_again, theta = space.encode(read_back)
    assert z_again == z and space.decode(z_again, theta) == config
    with pytest.raises(InvalidParameterError, match="'bins' is fixed to"):
        space.encode({**read_back, "mitigation__bins": [0, 30, 120]})


def test_only_the_last_module_may_wrap():
    node = {"name": "s", "modules": [
        {"name": "wrap", "wraps": True, "choices": [{"name": "none"}]},
        {"name": "estimator", "choices": [
            {"name": "lr", "class": "sklearn.linear_model.LogisticRegression"}]}]}
    with pytest.raises(ConfigError, match=r"modules\[0\].wraps: only the last module"):
        space_from_dict(node)
    node["modules"][0]["wraps"] = "yes"
    with pytest.raises(ConfigError, match="expected true or false"):
        space_from_dict(node)
    with pytest.raises(InvalidParameterError, match="already ends with the wrapping module"):
        mitigated_space().wrapped(mitigation_module(make_constraints([
            {"name": "demographic_parity_difference", "threshold": 0.1, "group_by": "sex"}])[0]))


def test_the_run_adds_mitigations_only_where_they_apply():
    dp = [{"name": "demographic_parity_difference", "threshold": 0.1, "group_by": "sex"}]
    assert task_space(tiny_space(), "classification", 100, dp, "auto").modules[-1].name == \
        "mitigation"
    assert task_space(tiny_space(), "classification", 100, dp, False).modules[-1].name == \
        "estimator"
    assert task_space(tiny_space(), "classification", 100, ["latency <= 1"], "auto"
                      ).modules[-1].name == "estimator"
    # a wrapped learner cannot be trained further by a θ-solver that chooses training lengths
    assert task_space(tiny_space(), "classification", 100, dp, "auto", "bapi"
                      ).modules[-1].name == "estimator"
    with pytest.raises(InvalidParameterError, match="whose groups are columns of X"):
        task_space(tiny_space(), "classification", 100,
                   ["demographic_parity_difference <= 0.1"], True)


def fit_unfair(X, y, *, max_evals, ensemble_size, threshold=0.1, **constraint):
    """A random search of ``tiny_space`` with its mitigations under a demographic parity
    constraint on ``sex`` (warnings silenced: the plain learners' violations)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ADMMClassifier(
            search_space=tiny_space(), theta_solver="random", z_solver="random",
            executor="serial", max_evals=max_evals, random_state=0, ensemble_size=ensemble_size,
            cv=None, constraints=[{"name": "demographic_parity_difference",
                                   "threshold": threshold, "group_by": "sex", **constraint}],
        ).fit(X, y)


def test_a_constraint_no_plain_learner_meets_is_met_through_a_mitigation():
    X, y = unfair(n=800)
    train, test = np.arange(600), np.arange(600, 800)
    model = fit_unfair(X.iloc[train], y[train], max_evals=16, ensemble_size=0)
    history = model.history_[model.history_["status"] == "ok"]
    plain = history["param:mitigation"] == "none"
    value = history["constraint:demographic_parity_difference"]
    assert plain.sum() >= 3 and (~plain).sum() >= 3
    assert value[plain].min() > 0.3  # no plain learner comes near the constraint
    assert model.feasible_ and model.best_params_["mitigation"] != "none"
    assert dp(y[test], model.predict(X.iloc[test]), X["sex"].iloc[test]) <= 0.15


@pytest.fixture
def ensemble_candidates(monkeypatch):
    """Spies on the ensemble's greedy selection: the eval ids of the pipelines it was offered
    (``members``, None if it never ran) and their configurations (``configs``)."""
    from admm_automl.final import ensemble, refit

    seen = {"members": None, "configs": {}}
    real_build, real_select = ensemble.build_ensemble, ensemble.ensemble_selection

    def build(outcome, *args, **kwargs):
        seen["outcome"] = outcome
        return real_build(outcome, *args, **kwargs)

    def select(predictions, *args, **kwargs):
        outcome = seen["outcome"]
        seen["members"] = [i for i, p in outcome.predictions.items()
                           if any(p is q for q in predictions)]
        seen["configs"] = {i: outcome.by_eval_id[i].config for i in outcome.predictions}
        return real_select(predictions, *args, **kwargs)

    monkeypatch.setattr(refit, "build_ensemble", build)
    monkeypatch.setattr(ensemble, "ensemble_selection", select)
    return seen


def test_a_mitigated_pipeline_is_never_averaged_into_an_ensemble(ensemble_candidates):
    """A mitigation predicts by random draws from its probabilities; a soft-voting ensemble
    thresholds their average, which keeps neither member's group rates (on the constrained
    benchmark's compas task two members at 0.065 and 0.067 equalized odds on the test rows
    made an ensemble at 0.20). So the ensemble is built of unmitigated pipelines only (here a
    loose limit that plain learners meet too), and not at all when the best pipeline is
    mitigated (a limit only mitigations meet: the selection never runs)."""
    X, y = unfair(n=800)
    model = fit_unfair(X, y, max_evals=24, ensemble_size=8, threshold=1.0, confidence=None)
    configs, members = ensemble_candidates["configs"], ensemble_candidates["members"]
    assert model.feasible_ and not is_mitigated(model.best_params_)
    assert sum(is_mitigated(c) for c in configs.values()) >= 2  # feasible mitigated ones kept
    assert len(members) >= 2 and not any(is_mitigated(configs[i]) for i in members)

    ensemble_candidates["members"] = None
    model = fit_unfair(X, y, max_evals=24, ensemble_size=8, confidence=None)
    assert model.feasible_ and is_mitigated(model.best_params_)
    assert ensemble_candidates["members"] is None
    assert model.ensemble_ is None and model.ensemble_weights_ == {}
    assert is_mitigated({"mitigation": "threshold_optimizer", "estimator": "knn"})
    assert not is_mitigated({"mitigation": "none"}) and not is_mitigated({"estimator": "knn"})


@pytest.mark.parametrize("hidden", [(), ("lightgbm", "xgboost", "catboost")])
def test_the_portfolio_s_leading_pipelines_are_also_tried_mitigated_first(hidden, monkeypatch):
    """With a fairness constraint and mitigations in the space, the warm start (ADMM's first
    z-step) begins with the portfolio's first two pipelines post-processed by the threshold
    optimizer: a search of 4 evaluations (the initial pipeline, then a z-step of 3) already has
    a feasible pipeline where no plain learner comes near the constraint. The third is mitigated
    too: the initial pipeline (plain) was far over the limit and the first mitigated one met
    it, so the mitigated versions of the other portfolio pipelines come before the plain ones
    (in the warm start's own order the third is the plain version of the first). Without the
    boosting libraries (an install without the ``boost`` extra) the first ones the space keeps
    are mitigated."""
    from admm_automl.space import loader

    monkeypatch.setattr(loader, "module_available",
                        lambda name, real=loader.module_available: name not in hidden and real(name))
    loader._load_builtin.cache_clear()
    X, y = unfair(n=300)  # 300 rows: the portfolio's forests fit 4 times a trial
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = ADMMClassifier(
                max_evals=4, inner_iter=3, random_state=0, ensemble_size=0, cv=None,
                executor="serial",
                constraints=[{"name": "demographic_parity_difference", "threshold": 0.1,
                              "group_by": "sex"}]).fit(X, y)
    finally:
        loader._load_builtin.cache_clear()  # no other test sees a space loaded under the pretence
    history = model.history_
    start = history[history["phase"] == "z"]
    assert list(history["phase"]) == ["initial", "z", "z", "z"]
    assert list(start["param:mitigation"]) == ["threshold_optimizer"] * 3
    assert len(set(start["pipeline"])) == 3
    assert (history.loc[history["param:mitigation"] == "none",
                        "constraint:demographic_parity_difference"] > 0.3).all()
    assert model.feasible_ and model.best_params_["mitigation"] == "threshold_optimizer"


def test_mitigated_starts_leave_other_spaces_alone():
    from admm_automl.constraints import mitigated_starts
    from admm_automl.space import load_space

    configs = [{"scaler": "none", "estimator": "lightgbm"}]
    assert mitigated_starts(configs, load_space("default").for_task("classification")) == configs


def test_a_space_with_mitigations_keeps_its_base_space_s_portfolio():
    """The default space with the mitigation module appended (``default+mitigation``) is warm-
    started by the default space's portfolio (it had none: the name did not match)."""
    from admm_automl.space.portfolio import resolve_portfolio

    space = task_space("default", "classification", 600, [{
        "name": "demographic_parity_difference", "threshold": 0.1, "group_by": "sex"}], "auto")
    assert space.name == "default+mitigation" and space.base_name == "default"
    plain = task_space("default", "classification", 600)
    assert resolve_portfolio("auto", space, "classification") == resolve_portfolio(
        "auto", plain, "classification") != []


def test_a_cross_validated_trial_takes_each_fold_s_thresholds_from_the_other_folds(monkeypatch):
    """With ``cv="folds"`` (the default) a threshold-optimized trial fits its learner once a
    fold, as the plain pipeline does (``cv=3``'s inner folds fit it four times), and its thresholds,
    chosen on the other folds' held-out scores, meet the constraint on each fold's validation
    rows. One holdout split has no other fold: inner folds choose them."""
    from admm_automl.evaluation.data import make_preprocessor
    from admm_automl.evaluation.metrics import get_metric
    from admm_automl.evaluation.splits import make_splits
    from admm_automl.evaluation.trial import TrialContext, run_trial

    # labels that depend on x within each group, and on the group (the learner ranks the rows
    # of a group, so thresholds chosen on one model's scores carry to another's)
    rng = np.random.default_rng(1)
    group = rng.integers(0, 2, 1000)
    X = pd.DataFrame({"x": rng.normal(size=1000), "sex": np.where(group == 1, "m", "f")})
    logit = 2.0 * X["x"].to_numpy() + 1.5 * (2 * group - 1)
    y = np.where(rng.random(1000) < 1.0 / (1.0 + np.exp(-logit)), "yes", "no")
    space = mitigated_space()
    enc = space.encoding
    lr, mitigations = enc.choice_names[1].index("logistic_regression"), enc.choice_names[-1]
    fits = []
    real_fit = LogisticRegression.fit
    monkeypatch.setattr(LogisticRegression, "fit",
                        lambda self, *a, **k: fits.append(1) or real_fit(self, *a, **k))

    def trial(mitigation, cv):
        splits = make_splits(y, classification=True, cv=cv, validation_size=0.2, seed=0)
        ctx = TrialContext(space, X, y, splits, get_metric("roc_auc", "classification", "binary"),
                           make_preprocessor(X), 0, labels=np.unique(y), cache_size=0)
        (constraint,) = make_constraints([{"name": "demographic_parity_difference",
                                           "threshold": 0.1, "group_by": "sex"}])
        constraint.bind(X, y, groups=None, splits=splits, task="classification")
        ctx.measures = {constraint.key: constraint}
        fits.clear()
        result = run_trial(ctx, (1, lr, mitigations.index(mitigation)), enc.initial_theta, 1.0)
        assert result["status"] == "ok", result.get("error")
        return result["constraints"][constraint.key], len(fits)

    assert trial("none", 5)[1] == 5
    value, n_fits = trial("threshold_optimizer", 5)
    assert n_fits == 5 and value < 0.1, value  # the default: the learner once a fold
    assert trial("none", 5)[0] > 0.4
    value, n_fits = trial("threshold_optimizer", None)  # one holdout: 3 inner folds
    assert n_fits == 4 and value < 0.15, value
    monkeypatch.setitem(ThresholdOptimizerClassifier.__init__.__kwdefaults__, "cv", 3)
    value, n_fits = trial("threshold_optimizer", 5)
    assert n_fits == 20 and value < 0.1, value  # 3 inner folds and the learner, a fold


def test_thresholds_from_held_out_rows_refuse_labels_the_learner_never_saw():
    X, y = unfair()
    model = ThresholdOptimizerClassifier(linear(), group_by="sex").fit_learner(X, y)
    scores, groups = model.held_out(X)
    with pytest.raises(InvalidParameterError, match=r"labels \['maybe'\] of the held-out rows"):
        model.fit_thresholds(scores, np.where(y == "yes", "maybe", y), groups)
    predicted = model.fit_thresholds(scores, y, groups).predict(X)
    assert dp(y, predicted, X["sex"]) < 0.1


@pytest.mark.parametrize("target", ["demographic_parity", "equalized_odds",
                                    "false_positive_rate_parity"])
def test_the_threshold_optimizer_predicts_with_fairlearn_s_thresholds(target):
    """The thresholds applied with numpy give fairlearn's own probabilities, row for row, on
    three groups cut from a numeric column (equalized odds adds fairlearn's ``p_ignore`` mix
    toward a constant)."""
    rng = np.random.default_rng(3)
    n = 900
    age = rng.uniform(18, 80, n)
    X = pd.DataFrame({"x": rng.normal(size=n) + (age > 40), "age": age})
    y = np.where(rng.random(n) < np.where(age > 60, 0.8, np.where(age > 40, 0.5, 0.2)),
                 "yes", "no")
    model = ThresholdOptimizerClassifier(linear_numeric(), group_by="age", bins=(0, 40, 60, 99),
                                         constraints=target, random_state=0).fit(X, y)
    groups = model._groups(X)
    score = model._score(X)
    theirs = model.mitigator_._pmf_predict(score[:, None], sensitive_features=groups)
    assert len(set(groups.tolist())) == 3
    assert np.allclose(model._pmf(X), theirs, atol=1e-12)
    if target == "equalized_odds":
        assert any("p_ignore" in rule for rule in
                   model.mitigator_.interpolated_thresholder_.interpolation_dict.values())
    # and the draws are fairlearn's probabilities' draws
    draws = np.random.default_rng(0).random(n) < theirs[:, 1]
    assert np.array_equal(model.predict(X) == "yes", draws)


def linear_numeric():
    return Pipeline([("model", LogisticRegression())])


def test_a_threshold_optimizer_refuses_a_group_it_has_no_threshold_for():
    """A group no training row had (a new value, a missing one) has no threshold: fairlearn
    predicts the negative class for every such row, so the model says so instead, naming the
    column and the values; the fitted groups predict as before."""
    X, y = unfair()
    model = ThresholdOptimizerClassifier(linear(), group_by="sex", random_state=0).fit(X, y)
    expected = model.predict(X)
    for value, shown in (("Martian", "'Martian'"), (np.nan, r"'\(none\)'")):
        with pytest.raises(ValueError, match=rf"group_by 'sex' has values \[{shown}\] .* that no "
                                             r"training row had.*fitted on groups \['f', 'm'\]"):
            model.predict(X.assign(sex=value))
        with pytest.raises(ValueError, match="no training row had"):
            model.predict_proba(X.assign(sex=value))
    assert np.array_equal(model.predict(X), expected)


# -- the groups given beside X, as fairlearn takes them: fit(X, y, sensitive_features=s)

def beside(n=600, seed=0):
    """:func:`unfair` with the groups taken out of X: X holds no trace of them but ``x``'s
    shift, and ``sex`` is given beside it."""
    X, y = unfair(n, seed)
    return X.drop(columns="sex"), y, X["sex"].to_numpy()


def test_the_reduction_takes_the_groups_beside_X_and_predicts_without_them():
    X, y, sex = beside()
    plain = LogisticRegression().fit(X, y)
    model = ExponentiatedGradientClassifier(LogisticRegression(), random_state=0).fit(
        X, y, sensitive_features=sex)
    assert model.reads_sensitive_features
    assert dp(y, plain.predict(X), sex) > 0.3 and dp(y, model.predict(X), sex) < 0.1
    assert model.predict_proba(X).shape == (len(X), 2)
    with pytest.raises(InvalidParameterError, match="sensitive_features="):
        ExponentiatedGradientClassifier(LogisticRegression()).fit(X, y)
    with pytest.raises(InvalidParameterError, match="single group"):
        ExponentiatedGradientClassifier(LogisticRegression()).fit(
            X, y, sensitive_features=np.full(len(X), "f"))
    X_sex, _ = unfair()
    with pytest.raises(InvalidParameterError, match="give group_by=None"):
        ExponentiatedGradientClassifier(linear(), group_by="sex").fit(X_sex, y,
                                                                      sensitive_features=sex)
    # the threshold optimizer's thresholds are per group: it would need them at every predict
    with pytest.raises(InvalidParameterError, match="needs group_by"):
        ThresholdOptimizerClassifier(LogisticRegression()).fit(X, y, sensitive_features=sex)


def test_groups_given_beside_X_add_the_reduction_alone_to_the_space():
    from admm_automl.constraints import START_ROUNDS, mitigated_starts

    limit = ["demographic_parity_difference <= 0.1"]
    space = task_space(tiny_space(), "classification", 100, limit, "auto",
                       sensitive_features=True)
    module = space.modules[-1]
    assert module.wraps and [a.name for a in module.choices] == ["none",
                                                                 "exponentiated_gradient"]
    assert task_space(tiny_space(), "classification", 100, limit, "auto"
                      ).modules[-1].name == "estimator"
    # a constraint on a column keeps both mitigations, whatever else was given
    on_column = [{"name": "demographic_parity_difference", "threshold": 0.1, "group_by": "sex"}]
    assert len(task_space(tiny_space(), "classification", 100, on_column, "auto",
                          sensitive_features=True).modules[-1].choices) == 3
    # the warm start's leading pipelines are tried inside the reduction, at its cheap end
    configs = [{"scaler": "none", "estimator": e} for e in ("gaussian_nb", "logistic_regression")]
    starts = mitigated_starts(configs * 2, space)
    assert starts[0] == {**configs[0], "mitigation": "exponentiated_gradient",
                         "mitigation__max_iter": START_ROUNDS}
    # ... with the learner at its low-cost point where it declares one
    forest = tiny_space({"forest": {
        "class": "sklearn.ensemble.RandomForestClassifier", "hyperparameters": {
            "n_estimators": {"type": "int", "low": 4, "high": 512, "log": True, "default": 100,
                             "low_cost": 4},
            "max_features": {"type": "float", "low": 0.1, "high": 1.0, "default": 0.5}}}})
    forest = task_space(forest, "classification", 100, limit, "auto", sensitive_features=True)
    config = {"scaler": "none", "estimator": "forest", "estimator__n_estimators": 300,
              "estimator__max_features": 0.3}
    (start, *_) = mitigated_starts([config], forest)
    assert start == {**config, "estimator__n_estimators": 4, "mitigation__max_iter": 5,
                     "mitigation": "exponentiated_gradient"}
    forest.encode(start)
    assert [c.get("mitigation", "none") for c in starts] == ["exponentiated_gradient"] * 2 + [
        "none"] * 4 + ["exponentiated_gradient"] * 2
    z, theta = space.encode(starts[0])
    assert space.decode(z, theta)["mitigation__max_iter"] == START_ROUNDS


def test_sensitive_features_alone_meet_a_limit_the_labels_exceed():
    """No column of X names the groups: the search gets them beside X, tries the reduction and
    returns a mitigated model that predicts from X alone and keeps the parity on new rows."""
    X, y, sex = beside(n=800)
    train, test = np.arange(600), np.arange(600, 800)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ADMMClassifier(
            search_space=tiny_space(), theta_solver="random", z_solver="random",
            executor="serial", max_evals=8, random_state=0, ensemble_size=0, cv=None,
            constraints=["demographic_parity_difference <= 0.1"],
        ).fit(X.iloc[train], y[train], sensitive_features=sex[train])
    history = model.history_[model.history_["status"] == "ok"]
    plain = history["param:mitigation"] == "none"
    assert plain.any() and history.loc[plain, "constraint:demographic_parity_difference"
                                       ].min() > 0.3
    assert model.feasible_ and model.best_params_["mitigation"] == "exponentiated_gradient"
    assert dp(y[test], model.predict(X.iloc[test]), sex[test]) <= 0.15
    assert dp(y[train], model.predict(X.iloc[train]), sex[train]) <= 0.1


@pytest.mark.parametrize("sensitive, constraints, error, message", [
    (np.array(["f", "m"] * 10), ["demographic_parity_difference <= 0.1"], DataError,
     "20 rows but X has 40"),
    (np.zeros((40, 2, 2)), ["demographic_parity_difference <= 0.1"], DataError, "shape"),
    (np.full(40, "f"), ["demographic_parity_difference <= 0.1"], DataError,
     "at least two groups"),
    (np.array(["f", "m"] * 20), ["latency <= 1"], InvalidParameterError,
     "no constraint compares their groups"),
])
def test_sensitive_features_that_cannot_be_used_are_refused_before_the_search(
        sensitive, constraints, error, message):
    X, y, _ = beside(n=40)
    with pytest.raises(error, match=message):
        ADMMClassifier(search_space=tiny_space(), executor="serial", max_evals=2, cv=None,
                       constraints=constraints).fit(X, y, sensitive_features=sensitive)


def test_the_reduction_fits_a_pipeline_s_steps_before_the_learner_once():
    """fairlearn fits the learner about three times a round; the steps before it get no weights
    and the same rows each time, so they are fitted once and the learner alone is reweighted:
    the model predicts as the reduction over the whole pipeline does."""
    import fairlearn.reductions

    from admm_automl.testing import CountingScaler

    X, y, sex = beside()
    pipeline = Pipeline([("scale", CountingScaler()), ("model", LogisticRegression())])
    CountingScaler.n_fits = 0
    model = ExponentiatedGradientClassifier(pipeline, max_iter=5, random_state=0).fit(
        X, y, sensitive_features=sex)
    assert CountingScaler.n_fits == 1
    with warnings.catch_warnings():  # fairlearn's own deprecated pandas calls
        warnings.simplefilter("ignore")
        whole = fairlearn.reductions.ExponentiatedGradient(
            pipeline, fairlearn.reductions.DemographicParity(), eps=0.01, max_iter=5,
            sample_weight_name="model__sample_weight").fit(X, (y == "yes").astype(int),
                                                           sensitive_features=sex)
    assert CountingScaler.n_fits > 5  # the whole pipeline, refitted in every fit
    np.testing.assert_allclose(model.predict_proba(X)[:, 1],
                               whole._pmf_predict(X)[:, 1], atol=2 * TIE_BREAK)
