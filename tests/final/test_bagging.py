"""Bags: the fold models of the search's evaluations, kept and averaged as the ensemble's members
instead of refits on all rows."""

from __future__ import annotations

import json
import tempfile

import numpy as np
import pytest
from sklearn.frozen import FrozenEstimator
from sklearn.metrics import roc_auc_score
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.pipeline import Pipeline

from admm_automl import ADMMClassifier
from admm_automl.final.bagging import BaggedClassifier, BaggedRegressor
from admm_automl.final.library import ENSEMBLE_POOL
from admm_automl.testing.spaces import diverse_space

DIVERSE = diverse_space("logistic_regression", "gaussian_nb", "k_neighbors")
# scaled inputs only: unscaled, the logistic regression runs to its 500 iterations on every fit
# (nine tenths of these tests' time), and what is tested here is the bags, not the scaling
SCALED = DIVERSE.restrict(scaler="standard")
SERIAL = dict(search_space=SCALED, executor="serial", random_state=0, theta_solver="random",
              z_solver="random", inner_iter=2, inner_iter_step=0, portfolio=None)


def test_a_bag_predicts_the_mean_of_its_fold_models():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(90, 3)), rng.integers(0, 2, 90)
    bag = BaggedClassifier(KNeighborsClassifier(3), cv=3).fit(X, y)
    assert [m.n_samples_fit_ for m in bag.estimators_] == [60, 60, 60]  # each on its folds
    np.testing.assert_allclose(bag.predict_proba(X),
                               np.mean([m.predict_proba(X) for m in bag.estimators_], axis=0))
    assert (bag.predict(X) == bag.classes_[np.argmax(bag.predict_proba(X), axis=1)]).all()
    reg = BaggedRegressor(KNeighborsRegressor(3), cv=3).fit(X, X[:, 0])
    np.testing.assert_allclose(reg.predict(X),
                               np.mean([m.predict(X) for m in reg.estimators_], axis=0))


@pytest.fixture(scope="module")
def bagged(breast_cancer):
    """A cross-validated run, with the fold models' folder counted after every evaluation."""
    X, y = breast_cancer
    seen: list[int] = []
    folder = tempfile.mkdtemp()
    old, tempfile.tempdir = tempfile.tempdir, folder  # the run's bags folder goes in here
    try:
        from pathlib import Path

        def count(record, best):
            seen.append(sum(len(list(p.glob("*.pkl"))) for p in Path(folder).iterdir()))

        model = ADMMClassifier(**SERIAL, max_evals=24, cv=3, ensemble_size=10,
                               callbacks=[count]).fit(X, y)
    finally:
        tempfile.tempdir = old
    return model, seen, Path(folder)


def test_the_ensemble_members_are_the_searchs_fold_models(bagged, breast_cancer):
    X, y = breast_cancer
    model, _, _ = bagged
    assert model.ensemble_ is not None
    history = model.history_.set_index("eval_id")
    members = dict(model.ensemble_.named_estimators_)
    assert members and all(isinstance(m, FrozenEstimator) for m in members.values())
    for name, member in members.items():
        bag = member.estimator
        assert isinstance(bag, BaggedClassifier) and len(bag.estimators_) == 3
        # no refit: scored on its folds' validation rows, the fold models give the loss the
        # search recorded for that evaluation
        losses = [1 - roc_auc_score(y[valid] == model.classes_[1],
                                    fold.predict_proba(X[valid])[:, 1])
                  for fold, (_, valid) in zip(bag.estimators_, bag.cv)]
        assert np.mean(losses) == pytest.approx(history.loc[int(name[4:]), "loss"])
    assert all(m["bag"] for m in model.summary()["ensemble"]["members"])
    assert isinstance(model.best_pipeline_, Pipeline)  # the best single pipeline is refitted


def test_the_fold_models_kept_are_bounded_by_the_library_and_removed_after_fit(bagged):
    model, seen, folder = bagged
    learners = 3
    assert max(seen) > 0 and max(seen) <= ENSEMBLE_POOL + learners
    assert not list(folder.iterdir())  # fit removed the run's folder


def test_without_bagging_or_cross_validation_the_members_are_refitted(breast_cancer):
    X, y = breast_cancer
    for settings in (dict(cv=3, bagging=False), dict(cv=None)):
        model = ADMMClassifier(**SERIAL, max_evals=12, ensemble_size=10, **settings).fit(X, y)
        assert model.ensemble_ is not None, settings
        for member in dict(model.ensemble_.named_estimators_).values():
            assert isinstance(member, Pipeline) or isinstance(member.estimator, Pipeline)


def test_a_resumed_run_rebuilds_the_bags_it_lost_and_returns_the_same_model(tmp_path,
                                                                             breast_cancer):
    X, y = breast_cancer
    settings = dict(**SERIAL, max_evals=12, cv=3, ensemble_size=10, output_dir=tmp_path)
    first = ADMMClassifier(**settings).fit(X, y)
    # the fold models of the first session are gone: the second replays the journal and fits
    # its members' folds again, as their trials did
    again = ADMMClassifier(**settings).fit(X, y)
    assert again.ensemble_weights_ == first.ensemble_weights_
    assert all(m["bag"] for m in again.summary()["ensemble"]["members"])
    np.testing.assert_allclose(again.predict_proba(X), first.predict_proba(X))


def test_fold_models_above_the_size_limit_are_not_kept(tmp_path, monkeypatch):
    from admm_automl.evaluation import fold_models

    models = [np.zeros(1000), np.ones(1000)]
    name = fold_models.write_models(tmp_path, models)
    assert [list(m) for m in fold_models.read_models(tmp_path, name)] == \
        [list(m) for m in models]
    monkeypatch.setattr(fold_models, "MAX_MODEL_MB", 0.01)  # 10 kB: the two take 16 kB
    assert fold_models.write_models(tmp_path, models) is None
    assert [p.name for p in tmp_path.iterdir()] == [name]
    assert fold_models.read_models(tmp_path, "gone.pkl") is None


@pytest.mark.parametrize("time_left", [0.0, -0.5])
def test_bags_need_no_refit_so_they_fit_where_no_time_is_left(time_left, breast_cancer,
                                                              monkeypatch):
    """What bagging buys under a time budget: with nothing left of it after the search (or a
    search that ran a little past it: the last trial's end is not the budget's), refitted
    members do not fit (only the best pipeline, refitted anyway, would), while kept bags cost
    nothing to fit and the ensemble is still built from them."""
    from admm_automl.final import refit

    real = refit.build_ensemble
    monkeypatch.setattr(refit, "build_ensemble",
                        lambda outcome, size, best, _, **kw:
                        real(outcome, size, best, time_left, **kw))
    X, y = breast_cancer
    built = {}
    for bagging in (True, False):
        model = ADMMClassifier(**SERIAL, max_evals=12, cv=3, ensemble_size=10,
                               bagging=bagging).fit(X, y)
        built[bagging] = model.ensemble_weights_
    assert len(built[True]) >= 2
    assert built[False] == {}


def test_repeated_folds_give_bags_of_every_repeats_models(breast_cancer, tmp_path):
    """cv="auto" on small data with a generous budget repeats its folds: the journal says so,
    and each member's bag averages the fold models of every repeat."""
    from admm_automl.evaluation.splits import resolve_repeats

    X, y = breast_cancer
    repeats = resolve_repeats("auto", len(y), X.shape[1], time_budget=100)
    assert repeats >= 2
    # the whole space: in 8 evaluations of the scaled one alone no ensemble beats the best pipeline
    model = ADMMClassifier(**{**SERIAL, "cv": "auto", "search_space": DIVERSE}, max_evals=8,
                           time_budget=100, ensemble_size=10, output_dir=tmp_path).fit(X, y)
    header = json.loads((tmp_path / "journal.jsonl").read_text().splitlines()[0])
    assert header["run"]["splits"]["cv"] == 5
    assert header["run"]["splits"]["repeats"] == repeats
    assert model.ensemble_ is not None
    for member in dict(model.ensemble_.named_estimators_).values():
        assert len(member.estimator.estimators_) == 5 * repeats
    assert model.predict_proba(X).shape == (len(y), 2)


def test_a_member_whose_bag_cannot_be_made_is_refitted_with_a_warning(breast_cancer, monkeypatch):
    """One member that cannot be bagged (a learner scikit-learn cannot clone once fitted: CatBoost
    given a list parameter) does not end the fit: it is warned about and refitted."""
    import admm_automl.final.refit as refit

    def cannot_clone(models, splits):
        raise RuntimeError("Cannot clone object")

    monkeypatch.setattr(refit, "bag_of", cannot_clone)
    X, y = breast_cancer
    with pytest.warns(RuntimeWarning, match=r"fold models cannot be bagged \(RuntimeError: "
                                            r"Cannot clone object\); it is refitted on all rows"):
        model = ADMMClassifier(**SERIAL, max_evals=12, cv=3, ensemble_size=10).fit(X, y)
    assert model.ensemble_ is not None
    for member in dict(model.ensemble_.named_estimators_).values():
        assert isinstance(member, Pipeline) or isinstance(member.estimator, Pipeline)
