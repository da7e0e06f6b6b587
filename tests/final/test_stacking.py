"""The stack layer over the ensemble's members: trained only on out-of-fold predictions, scored
on its own out-of-fold predictions, and used by the estimator when it beats the weighted average."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression

from admm_automl import ADMMRegressor
from admm_automl.final.stacking import (StackedClassifier, StackedRegressor, final_layer,
                                      meta_features, stack_out_of_fold)
from admm_automl.testing.spaces import tiny_space


class RowMemory(ClassifierMixin, BaseEstimator):
    """Certain of the label of every row it was fitted on, undecided (1/2) on any other row: its
    predictions on a row are informative only if it saw that row."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        self.seen_ = {tuple(row): label for row, label in zip(np.asarray(X), y)}
        return self

    def predict_proba(self, X):
        out = np.full((len(X), 2), 0.5)
        for i, row in enumerate(np.asarray(X)):
            if tuple(row) in self.seen_:
                out[i] = np.eye(2)[int(self.seen_[tuple(row)])]
        return out

    def predict(self, X):
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


@pytest.fixture
def noise():
    rng = np.random.default_rng(0)
    return rng.normal(size=(200, 3)), rng.integers(0, 2, 200)


def test_the_second_layer_is_trained_only_on_out_of_fold_predictions(noise):
    X, y = noise
    stack = StackedClassifier([("memory", RowMemory())], LogisticRegression(), cv=5).fit(X, y)
    # out of fold, the member is undecided on every row (logit 0): nothing to learn from it
    assert stack.final_estimator_.coef_ == pytest.approx(np.zeros((1, 1)))
    # in sample it would look perfect, and the second layer would trust it
    leaked = LogisticRegression().fit(meta_features([RowMemory().fit(X, y).predict_proba(X)],
                                                    True), y)
    assert leaked.coef_[0, 0] > 0.1 and leaked.score(meta_features(
        [RowMemory().fit(X, y).predict_proba(X)], True), y) == 1.0
    # the members are refitted on all rows for prediction
    assert len(stack.named_estimators_["memory"].seen_) == len(X)


def test_a_frozen_second_layer_refits_only_the_members(noise):
    X, y = noise
    final = LogisticRegression().fit(np.zeros((4, 1)) + [[-1], [1], [-2], [2]], [0, 1, 0, 1])
    stack = StackedClassifier([("memory", RowMemory())], FrozenEstimator(final)).fit(X, y)
    assert stack.final_estimator_.estimator is final
    np.testing.assert_allclose(stack.predict_proba(X),
                               final.predict_proba(stack.transform(X)))
    assert set(stack.predict(X)) <= {0, 1}
    # a frozen member under a second layer to be trained would feed it in-sample predictions
    with pytest.raises(ValueError, match="frozen member"):
        StackedClassifier([("m", FrozenEstimator(RowMemory().fit(X, y)))],
                          LogisticRegression()).fit(X, y)


def test_each_validation_split_is_scored_by_a_layer_fitted_without_it():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 120)
    groups = np.repeat([0, 1, 2], 40)
    # the feature says the label in group 0 only; elsewhere it says the opposite
    meta = np.where(groups == 0, 2 * y - 1, 1 - 2 * y)[:, None].astype(float)
    oof, final = stack_out_of_fold(meta, y, groups, final_layer(True, 0))
    # group 0 is scored by a layer fitted on groups 1 and 2, which learnt the opposite rule
    assert (oof[groups == 0, 1] > 0.5).mean() == pytest.approx(float((y[groups == 0] == 0).mean()))
    assert final.coef_[0, 0] < 0  # the layer on all rows follows the majority


def test_meta_features_are_logits_log_probabilities_or_values():
    binary = np.array([[0.25, 0.75], [0.5, 0.5]])
    assert meta_features([binary], True)[:, 0] == pytest.approx([np.log(3), 0.0])
    three = np.array([[0.2, 0.3, 0.5]])
    assert meta_features([three, three], True) == pytest.approx(np.log([[0.2, 0.3, 0.5] * 2]))
    assert meta_features([np.array([1.0, 2.0]), np.array([3.0, 4.0])], False).tolist() == \
        [[1.0, 3.0], [2.0, 4.0]]


#: two learners that both shrink their predictions towards the mean, each missing a part of the
#: target the other sees: averaging them cannot undo the shrinkage, a second layer can
SHRUNK = tiny_space({
    "ridge": {"class": "sklearn.linear_model.Ridge", "hyperparameters": {
        "alpha": {"type": "float", "low": 100.0, "high": 400.0, "log": True, "default": 200.0}}},
    "k_neighbors": {"class": "sklearn.neighbors.KNeighborsRegressor", "hyperparameters": {
        "n_neighbors": {"type": "int", "low": 30, "high": 60, "default": 40}}},
}, name="shrunk")


@pytest.fixture(scope="module")
def shrunk_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    return X, 3 * X[:, 0] + 3 * np.sin(2 * X[:, 1]) + 0.1 * rng.normal(size=300)


def test_the_estimator_uses_the_stack_when_it_beats_the_weighted_average(shrunk_data):
    X, y = shrunk_data
    settings = dict(search_space=SHRUNK, max_evals=8, executor="serial", random_state=0,
                    theta_solver="random", z_solver="random", inner_iter=2, inner_iter_step=0,
                    cv=3, portfolio=None)
    stacked = ADMMRegressor(**settings).fit(X, y)
    weighted = ADMMRegressor(**settings, stacking=False).fit(X, y)
    assert stacked.ensemble_kind_ == "stack" and isinstance(stacked.ensemble_, StackedRegressor)
    assert weighted.ensemble_kind_ != "stack"
    # the same search; the stack's members include a learner the weighted ensemble left out, and
    # its out-of-fold loss is below the average's (or the best single pipeline's, without one)
    assert (stacked.history_["loss"] == weighted.history_["loss"]).all()
    names = {stacked.history_.set_index("eval_id").loc[i, "pipeline"].split(" -> ")[-1]
             for i in stacked.ensemble_weights_}
    assert names == {"ridge", "k_neighbors"}
    assert set(stacked.ensemble_weights_.values()) == {1}
    assert stacked.ensemble_loss_ < np.nanmin([weighted.ensemble_loss_, weighted.best_loss_])
    # predict is the second layer on the refitted members' predictions
    members = stacked.ensemble_.estimators_
    np.testing.assert_allclose(
        stacked.predict(X),
        stacked.ensemble_.final_estimator_.predict(np.column_stack([m.predict(X) for m in members])))
    # refitting the stack (as the constraints' measurement does) refits the members only
    refitted = clone(stacked.ensemble_).fit(X[:200], y[:200])
    assert refitted.final_estimator_ is stacked.ensemble_.final_estimator_
    assert stacked.summary()["ensemble"]["kind"] == "stack"


def test_the_ensembles_auroc_shortcut_gives_the_scorers_loss():
    """The greedy selection scores AUROC by ranks; the value is the scikit-learn scorer's, ties
    included, and a split without both classes is left to the scorer."""
    from types import SimpleNamespace

    from admm_automl.evaluation.metrics import get_metric
    from admm_automl.final import ensemble

    rng = np.random.default_rng(3)
    y = rng.choice(["no", "yes"], 500)
    q = np.round(rng.uniform(size=500), 1)  # many ties
    ctx = SimpleNamespace(y=y, splits=[SimpleNamespace(valid=np.arange(500))],
                          labels=np.array(["no", "yes"]),
                          metric=get_metric("roc_auc", "classification", "binary"))
    values = np.column_stack([1 - q, q])
    scorer = ctx.metric.make_scorer(ctx.labels)
    expected = ctx.metric.loss(scorer, ensemble._FixedClassifier(values, ctx.labels),
                               np.zeros((500, 1)), y)
    assert ensemble.prediction_loss(ctx)(values) == pytest.approx(expected, abs=1e-12)
    one_class = np.flatnonzero(y == "yes")
    assert ctx.metric.shortcut(y[one_class], ctx.labels) is None


def test_a_rows_copies_from_repeated_folds_are_scored_in_one_group():
    """With repeated folds a row is validated once per repeat; a second layer fitted on one copy
    must not be scored on another, so all copies fall in one group (and without repeats each
    split is its own group)."""
    from types import SimpleNamespace

    from admm_automl.evaluation.splits import make_splits
    from admm_automl.final.ensemble import _row_groups

    y = np.repeat([0, 1], [30, 20])
    for repeats in (1, 3):
        splits = make_splits(y, classification=True, cv=5, validation_size=0.2, seed=0,
                             repeats=repeats)
        groups = _row_groups(SimpleNamespace(y=y, splits=splits))
        rows = np.concatenate([s.valid for s in splits])
        assert len(groups) == len(rows) == repeats * len(y)
        for row in range(len(y)):
            assert len(set(groups[rows == row])) == 1
        assert sorted(set(groups)) == [0, 1, 2, 3, 4]
        if repeats == 1:
            assert groups.tolist() == np.repeat(range(5), [len(s.valid) for s in splits]).tolist()
