"""The ensemble (admm_automl/final/ensemble.py): greedy ensemble selection (Caruana et al. 2004)
within the refit's cost allowance, the pooled loss of kept predictions, and the constraint-aware
ensemble a fit returns — never worse than the best pipeline on the validation rows, feasible or
not built, its latency measured on the ensemble itself."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from admm_automl import ADMMClassifier
from admm_automl.constraints.bounds import ModelSize
from admm_automl.constraints.latency import PredictionLatency
from admm_automl.exceptions import InvalidParameterError
from admm_automl.final.ensemble import ensemble_selection, prediction_loss
from admm_automl.testing.spaces import diverse_space

SERIAL = dict(executor="serial", random_state=0, theta_solver="random", z_solver="random",
              inner_iter=2, inner_iter_step=0, cv=None)
DIVERSE = diverse_space()


def test_ensemble_selection_is_never_worse_than_the_best_single_model():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    for trial in range(20):
        preds = [np.clip(y + rng.normal(0, s, 200), 0, 1) for s in rng.uniform(0.3, 2.0, 6)]
        loss = lambda p: 1.0 - roc_auc_score(y, p)  # noqa: E731
        counts, best = ensemble_selection(preds, loss, 10)
        assert best <= min(loss(p) for p in preds) + 1e-12
        assert 1 <= counts.sum() <= 10
        assert best == pytest.approx(loss(sum(c * p for c, p in zip(counts, preds)) / counts.sum()))
    with pytest.raises(ValueError, match="size"):
        ensemble_selection(preds, loss, 0)


def test_ensemble_selection_adds_members_only_while_their_costs_fit():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 300)
    preds = [np.clip(y + rng.normal(0, 1.0, 300), 0, 1) for _ in range(6)]
    loss = lambda p: 1.0 - roc_auc_score(y, p)  # noqa: E731
    free, _ = ensemble_selection(preds, loss, 12)
    assert np.count_nonzero(free) >= 3  # without a limit, more than two members
    costs = [1.0] * 6
    counts, best = ensemble_selection(preds, loss, 12, costs, allowance=2.0)
    assert np.count_nonzero(counts) == 2  # two fit; a member chosen again costs nothing
    assert best <= min(loss(p) for p in preds)
    none, inf = ensemble_selection(preds, loss, 12, costs, allowance=0.5)
    assert none.sum() == 0 and inf == np.inf  # not even one member fits


def test_bagged_selection_averages_selections_over_random_halves_of_the_candidates():
    """Caruana et al. 2004's bagged selection: each bag a greedy selection over the candidates
    it drew, the weights the mean of the bags' normalised counts — so the best candidate sits
    out about half the bags and the weight spreads over more members than one selection's."""
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 300).astype(float)
    preds = [y + rng.normal(0, s, 300) for s in np.linspace(0.5, 1.5, 10)]
    loss = lambda p: float(np.mean((p - y) ** 2))  # noqa: E731
    plain, _ = ensemble_selection(preds, loss, 4)
    weights, best = ensemble_selection(preds, loss, 4, bags=20, random_state=0)
    assert weights.sum() == pytest.approx(1.0)
    assert best == pytest.approx(loss(np.tensordot(weights, np.stack(preds), axes=1)))
    assert np.count_nonzero(weights) > np.count_nonzero(plain)
    assert 0.1 < weights[0] < 0.6  # the best candidate leads no more than its bags allow
    assert weights[:3].sum() > 2 * weights[-3:].sum()  # the weight goes to the better ones
    # the same seed, the same weights; another seed, other bags
    again, _ = ensemble_selection(preds, loss, 4, bags=20, random_state=0)
    other, _ = ensemble_selection(preds, loss, 4, bags=20, random_state=1)
    np.testing.assert_array_equal(weights, again)
    assert not np.array_equal(weights, other)
    with pytest.raises(ValueError, match="bags"):
        ensemble_selection(preds, loss, 4, bags=0)


def test_bagged_selection_pays_a_members_cost_once_over_all_bags():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 300).astype(float)
    preds = [y + rng.normal(0, 1.0, 300) for _ in range(6)]
    loss = lambda p: float(np.mean((p - y) ** 2))  # noqa: E731
    weights, _ = ensemble_selection(preds, loss, 12, [1.0] * 6, allowance=2.0, bags=10)
    assert np.count_nonzero(weights) == 2  # the two first paid for; later bags reuse them
    free, _ = ensemble_selection(preds, loss, 12, bags=10)
    assert np.count_nonzero(free) > 2


@pytest.fixture(scope="module")
def ensembled(breast_cancer):
    X, y = breast_cancer
    return ADMMClassifier(search_space=DIVERSE, max_evals=14, ensemble_size=10,
                          **SERIAL).fit(X, y)


def test_the_leaderboard_gives_each_pipelines_share_of_the_ensemble(ensembled):
    weights = ensembled.ensemble_weights_
    board = ensembled.leaderboard(n=len(ensembled.history_))
    shares = dict(zip(board["eval_id"], board["ensemble_weight"]))
    total = sum(weights.values())
    assert {i: w for i, w in shares.items() if w} == pytest.approx(
        {i: c / total for i, c in weights.items()})
    assert sum(shares.values()) == pytest.approx(1.0)


def test_ensemble_beats_the_best_single_pipeline_on_validation_data(ensembled, breast_cancer):
    from sklearn.ensemble import VotingClassifier
    from sklearn.pipeline import Pipeline

    X, y = breast_cancer
    model = ensembled
    assert isinstance(model.ensemble_, VotingClassifier)
    assert isinstance(model.best_pipeline_, Pipeline)
    assert len(model.ensemble_weights_) >= 2
    assert model.ensemble_loss_ < model.best_loss_  # holdout: pooled loss = recorded loss
    assert set(model.ensemble_weights_) <= set(model.history_["eval_id"])
    np.testing.assert_allclose(model.predict_proba(X), model.ensemble_.predict_proba(X))
    assert (model.predict(X) == model.classes_[model.ensemble_.predict(X)]).all()


def test_the_ensemble_reuses_the_refitted_best_pipeline(ensembled, breast_cancer):
    from sklearn.base import clone
    from sklearn.frozen import FrozenEstimator

    X, y = breast_cancer
    model = ensembled
    member = model.ensemble_.named_estimators_[f"eval{model.best_eval_id_}"]
    assert isinstance(member, FrozenEstimator) and member.estimator is model.best_pipeline_
    # the same predictions as the ensemble fitted from scratch, every member refitted
    scratch = clone(model.ensemble_).set_params(**{
        name: clone(est.estimator if isinstance(est, FrozenEstimator) else est)
        for name, est in model.ensemble_.estimators}).fit(X, model.classes_.searchsorted(y))
    np.testing.assert_allclose(model.ensemble_.predict_proba(X), scratch.predict_proba(X))


@pytest.mark.parametrize("slack", [100.0, 1.05])
def test_constrained_ensemble_is_feasible_or_falls_back_to_the_best_feasible_pipeline(
        ensembled, breast_cancer, slack):
    X, y = breast_cancer
    sizes = [ModelSize(1.0).measure(model, None, None, None)
             for model in (ensembled.best_pipeline_, ensembled.ensemble_)]
    limit = sizes[0] * slack  # the single pipeline meets it; the ensemble only with a large slack
    model = ADMMClassifier(search_space=DIVERSE, max_evals=14, ensemble_size=10,
                           constraints=[f"model_size <= {limit}"], **SERIAL).fit(X, y)
    assert model.feasible_
    final = model.ensemble_ if model.ensemble_ is not None else model.best_pipeline_
    assert ModelSize(1.0).measure(final, None, None, None) <= limit
    if slack > 10:  # loose: the unconstrained run's ensemble is feasible, so one is built
        assert sizes[1] <= limit and model.ensemble_ is not None
    else:  # tight: every ensemble of two or more members is larger: the best pipeline is kept
        assert sizes[1] > limit and model.ensemble_ is None
        assert model.best_params_ == ensembled.best_params_


class RecordingLatency(PredictionLatency):
    """The latency constraint, remembering what it measured (serial runs measure in-process)."""

    seen: list = []

    def measure(self, pipeline, X, y, rows):
        value = super().measure(pipeline, X, y, rows)
        RecordingLatency.seen.append((type(pipeline).__name__, value))
        return value


def test_a_latency_with_confidence_is_searched_and_refitted_as_a_bound(breast_cancer):
    """With ``confidence`` each evaluation records the bound of a new reading as the value and
    the reading itself beside it (``history_``), and the returned model is read again as a
    bound, shown beside its reading."""
    from admm_automl.final.results import describe_constraints

    X, y = breast_cancer
    model = ADMMClassifier(search_space=DIVERSE, max_evals=6, ensemble_size=0,
                           constraints=[{"name": "latency", "threshold": 1.0,
                                         "confidence": 0.9}], **SERIAL).fit(X, y)
    ok = model.history_[model.history_["status"] == "ok"]
    bound, point = ok["constraint:latency"], ok["constraint:latency:point"]
    assert len(ok) and (bound >= point).all() and (bound > point).any()
    deployed = model.deployed_constraints_
    assert deployed["latency"] >= deployed["latency:point"] > 0
    assert "(90% bound; " in describe_constraints(model)[0]


def test_the_latency_of_the_ensemble_predict_uses_is_measured_and_reported(breast_cancer):
    """With an ensemble, the latency reported (attribute, the per-constraint lines, summary.json)
    is a measurement of the voting ensemble itself, not of its best member."""
    from admm_automl.reporting.rundir import ensemble_summary
    from admm_automl.final.results import describe_constraints

    X, y = breast_cancer
    RecordingLatency.seen.clear()
    model = ADMMClassifier(search_space=DIVERSE, max_evals=14, ensemble_size=10,
                           constraints=[RecordingLatency(threshold=1.0)], **SERIAL).fit(X, y)
    assert model.ensemble_ is not None and model.feasible_
    voting = [v for name, v in RecordingLatency.seen if name == "VotingClassifier"]
    # one holdout split: the ensemble was measured once as a trial measures, then refitted
    assert len(voting) == 2
    assert model.ensemble_constraints_ == {"latency": voting[0]}
    assert model.deployed_constraints_ == {"latency": voting[1]}
    assert describe_constraints(model) == [
        f"latency <= 1: {voting[1]:.4g} refitted ({voting[0]:.4g} in the search), met"]
    assert ensemble_summary(model)["constraints"] == {"latency": voting[0]}
    best = model.history_.set_index("eval_id").loc[model.best_eval_id_, "constraint:latency"]
    assert best != voting[0]


def test_no_ensemble_when_nothing_meets_the_constraints(breast_cancer):
    from admm_automl.exceptions import ConstraintViolationWarning

    X, y = breast_cancer
    model = ADMMClassifier(search_space=DIVERSE, max_evals=6, ensemble_size=10,
                           constraints=["model_size <= 10"], **SERIAL)
    with pytest.warns(ConstraintViolationWarning, match="least violating"):
        model.fit(X, y)
    assert not model.feasible_ and model.ensemble_ is None and model.ensemble_weights_ == {}


def test_prediction_loss_matches_the_recorded_holdout_loss(breast_cancer):
    from admm_automl.run.params import SearchSettings
    from admm_automl.run.setup import run_search

    X, y = breast_cancer
    space = DIVERSE.for_task("classification")
    outcome = run_search(X, y, SearchSettings(max_evals=4, ensemble_size=4, **{
        k: v for k, v in SERIAL.items()}), space=space, task="classification",
        target_type="binary")
    loss = prediction_loss(outcome.task.context)
    recorded = {r["eval_id"]: r["loss"] for r in outcome.records}
    assert outcome.predictions
    for eval_id, values in outcome.predictions.items():
        assert loss(values) == pytest.approx(recorded[eval_id])


@pytest.fixture(scope="module")
def repeated_context(breast_cancer):
    """The trial context of a short search with 3-fold cross-validation repeated twice: every
    row validated once per repeat."""
    from admm_automl.run.params import SearchSettings
    from admm_automl.run.setup import run_search

    X, y = breast_cancer
    settings = SearchSettings(max_evals=2, ensemble_size=4, **{**SERIAL, "cv": 3})
    outcome = run_search(X, y, settings, space=DIVERSE.for_task("classification"),
                         task="classification", target_type="binary")
    ctx = outcome.task.context
    from admm_automl.evaluation.splits import make_splits

    ctx.splits = make_splits(ctx.y, classification=True, cv=3, validation_size=0.2, seed=0,
                             repeats=2)
    outcome.close()
    return ctx


def test_the_halves_keep_a_rows_copies_together_and_the_classes_in_proportion(
        repeated_context):
    from admm_automl.final.ensemble import _halves, pooled_rows, pooled_targets

    ctx = repeated_context
    rows, y = pooled_rows(ctx), pooled_targets(ctx)
    assert len(rows) == 2 * len(ctx.y)  # each row pooled once per repeat
    first, second = _halves(ctx)
    assert len(np.intersect1d(first, second)) == 0
    assert np.array_equal(np.sort(np.concatenate([first, second])), np.arange(len(rows)))
    assert not set(rows[first]) & set(rows[second])  # a row's copies in one half
    assert abs(len(first) - len(second)) <= 2
    assert y[first].mean() == pytest.approx(y.mean(), abs=0.01)  # stratified
    assert np.array_equal(_halves(ctx)[0], first)  # the run's seed: the same halves again
    regression = dataclasses.replace(ctx, labels=None)
    first, second = _halves(regression)
    assert abs(len(first) - len(second)) <= 2 and not set(rows[first]) & set(rows[second])


def test_the_held_out_check_sees_through_an_ensemble_fitted_to_the_validation_rows(
        repeated_context):
    """One informative candidate and 30 of pure noise: greedy selection on all the pooled rows
    finds noise that lowers its loss below the single best's, a gain the held-out halves do not
    show; two informative candidates with independent errors gain on both."""
    from admm_automl.final.ensemble import _halves, held_out_losses, pooled_targets

    ctx = repeated_context
    y = pooled_targets(ctx).astype(float)
    rng = np.random.default_rng(0)

    def proba(p: np.ndarray) -> np.ndarray:
        p = np.clip(p, 0.0, 1.0)
        return np.column_stack([1.0 - p, p])

    good = proba(y + rng.normal(0, 0.9, len(y)))
    noise = [proba(rng.uniform(size=len(y))) for _ in range(30)]
    loss = prediction_loss(ctx)
    _, in_sample = ensemble_selection([good] + noise, loss, 16)
    assert in_sample < loss(good)  # the selection fits the noise of the pooled rows
    held = held_out_losses(ctx, [good] + noise, 16)
    assert held["weighted"] >= held["single"]  # the gain is not there on rows not chosen on
    assert "stack" not in held

    other = proba(y + rng.normal(0, 0.9, len(y)))
    held = held_out_losses(ctx, [good, other], 16, stack_oof=good)
    assert held["weighted"] < held["single"]  # a real gain holds out
    # the stack's reading: its out-of-fold predictions scored on each half, averaged
    assert held["stack"] == pytest.approx(
        np.mean([prediction_loss(ctx, h)(good[h]) for h in _halves(ctx)]))


def test_an_ensemble_checked_on_held_out_rows_is_the_in_sample_one_or_none(ensembled,
                                                                           breast_cancer):
    """The check only takes options away: the same search (serial, the same seed and
    evaluations) gives the in-sample ensemble or the best pipeline alone, never another."""
    X, y = breast_cancer
    model = ADMMClassifier(search_space=DIVERSE, max_evals=14, ensemble_size=10,
                           ensemble_check="held_out", **SERIAL).fit(X, y)
    assert model.history_["loss"].tolist() == ensembled.history_["loss"].tolist()
    assert model.ensemble_weights_ in ({}, ensembled.ensemble_weights_)
    assert model.ensemble_kind_ in (None, ensembled.ensemble_kind_)
    # here the in-sample ensemble (holdout of 114 rows) does not hold out: the best pipeline
    assert ensembled.ensemble_ is not None and model.ensemble_ is None
    np.testing.assert_allclose(model.predict_proba(X), model.best_pipeline_.predict_proba(X))
    with pytest.raises(InvalidParameterError, match="ensemble_check"):
        ADMMClassifier(ensemble_check="nested", max_evals=2).fit(X, y)


def test_a_bagged_ensemble_weighs_its_members_by_fractions(breast_cancer):
    """With ``ensemble_bags`` the ensemble's weights are the bags' mean shares (summing to 1),
    and it is used only where it beats the best pipeline on validation data; a bag count below
    one is refused, naming the parameter."""
    X, y = breast_cancer
    model = ADMMClassifier(search_space=DIVERSE, max_evals=14, ensemble_size=10,
                           ensemble_bags=20, **{**SERIAL, "random_state": 4}).fit(X, y)
    assert model.ensemble_ is not None and len(model.ensemble_weights_) >= 2
    assert sum(model.ensemble_weights_.values()) == pytest.approx(1.0)
    assert model.ensemble_loss_ < model.best_loss_
    np.testing.assert_allclose(model.predict_proba(X), model.ensemble_.predict_proba(X))
    with pytest.raises(InvalidParameterError, match="ensemble_bags"):
        ADMMClassifier(ensemble_bags=0, max_evals=2).fit(X, y)
