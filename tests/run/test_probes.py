"""Probes never hide a model: when the time budget ends with every pipeline evaluated on a
subsample only (the probes of large data), fit returns the best of them refitted on all rows and
says so, instead of "all evaluated pipelines failed"; and when a probed pipeline beats every
fully fitted one by a margin, it is returned refitted, with both scores, instead of the worse."""

from __future__ import annotations

import math

import pytest
from sklearn.datasets import make_classification
from sklearn.metrics import roc_auc_score

from admm_automl import ADMM
from admm_automl.evaluation.policy import PROBE_FIDELITY, TrialPolicy
from admm_automl.exceptions import SubsampleOnlyWarning
from admm_automl.constraints.ranking import Constraints
from admm_automl.run import deadline
from admm_automl.final.outcome import evaluations_of
from admm_automl.final.results import SUBSAMPLE_MARGIN, subsample_rival
from admm_automl.testing import tiny_space


def test_a_run_of_probes_only_returns_the_best_probe_refitted_on_all_rows(monkeypatch,
                                                                          breast_cancer_full):
    # every pipeline is probed, and every probe predicts a full fit past its timeout: the
    # situation of 45 000 rows and a 10 s budget, on 569 rows
    monkeypatch.setattr(deadline, "PROBE_MIN_ROWS", 0)
    monkeypatch.setattr(TrialPolicy, "full_duration", staticmethod(lambda probe: math.inf))
    X, y = breast_cancer_full
    with pytest.warns(SubsampleOnlyWarning, match=r"No pipeline was evaluated on all 455 training "
                      r"rows .* Returning the best on the largest one \(10% of the rows\)"):
        model = ADMM(search_space=tiny_space(), theta_solver="random", z_solver="random",
                     time_budget=3, executor="serial", cv=None, random_state=0).fit(X, y)
    history = model.history_
    assert len(history) >= 2 and (history["status"] == "ok").all()
    assert (history["fidelity"] == PROBE_FIDELITY).all()
    assert model.best_loss_ == history["loss"].min()
    assert model.best_eval_id_ == history.loc[history["loss"].idxmin(), "eval_id"]
    assert model.score(X, y) > 0.85  # refitted on all rows, not on the probe's 45


#: a chance-level learner that fits at once, and a good one too slow for all rows: its fit sleeps
#: 0.2 s whatever the rows, so its probe predicts a full fit of 2 s, past a 1 s trial timeout
def _prior_or_slow_nb(seconds: float) -> dict:
    return {
        "prior": {"class": "sklearn.dummy.DummyClassifier",
                  "hyperparameters": {"strategy": {"type": "fixed", "value": "prior"}}},
        "slow_nb": {"class": "admm_automl.testing.SlowGaussianNB", "hyperparameters": {
            "seconds": {"type": "fixed", "value": seconds},
            "var_smoothing": {"type": "float", "low": 1e-9, "high": 1e-1, "log": True,
                              "default": 1e-9}}},
    }


PROBED_OR_FITTED = tiny_space(_prior_or_slow_nb(0.2))


def test_a_probed_pipeline_far_better_than_every_fully_fitted_one_is_returned_refitted():
    """The returned model is never one the search's own numbers show to be worse: on 10 000
    training rows the chance-level learner is fitted on all of them (AUROC 0.5) and the good one
    only probed; the good one is refitted on all rows and returned, with a warning giving both
    scores, not the chance-level one in silence."""
    X, y = make_classification(n_samples=12_500, n_features=2, n_informative=2, n_redundant=0,
                               random_state=0)
    with pytest.warns(SubsampleOnlyWarning, match=r"The best pipeline evaluated on all 10000 "
                      r"training rows \(\w+ -> prior\) scored AUROC 0\.5 on the validation rows, "
                      r"while \w+ -> slow_nb scored 0\.9\d* fitted on 10% of the training rows"):
        model = ADMM(search_space=PROBED_OR_FITTED, theta_solver="random", z_solver="random",
                     trial_timeout=1, max_evals=6, executor="process", n_jobs=1, cv=None,
                     random_state=0).fit(X, y)
    history = model.history_
    full, probes = history[history["fidelity"] == 1.0], history[history["fidelity"] < 1.0]
    assert len(full) and full["pipeline"].str.endswith("prior").all()  # the situation built
    assert (full["loss"] == 0.5).all()
    slow = probes[probes["pipeline"].str.endswith("slow_nb")]
    assert len(slow) and (slow["status"] == "ok").all()
    assert model.best_eval_id_ == slow.loc[slow["loss"].idxmin(), "eval_id"]
    assert model.best_score_ > 0.9
    assert model.best_pipeline_[-1].class_count_.sum() == len(y)  # refitted on all rows
    assert roc_auc_score(y, model.predict_proba(X)[:, 1]) > 0.9


def _record(eval_id, pipeline, fidelity, loss, status="ok", **extra):
    return {"eval_id": eval_id, "config": {"estimator": pipeline}, "fidelity": fidelity,
            "loss": loss, "status": status, "pipeline": pipeline, **extra}


def _evaluations(*records):
    """The typed evaluations of journal records (their points, never asked for, need no space;
    their refit estimates, never asked for, any rows)."""
    return evaluations_of(records, tiny_space(), 100, 1)


@pytest.mark.parametrize("probe_loss,rival", [
    (0.5 * (1 - SUBSAMPLE_MARGIN) - 1e-6, True),  # past the margin
    (0.5 * (1 - SUBSAMPLE_MARGIN) + 1e-6, False),  # better, within the margin: the refit measured
    (0.6, False),
])
def test_a_probe_beats_the_full_data_best_only_by_more_than_the_margin(probe_loss, rival):
    evaluations = _evaluations(_record(0, "weak", 1.0, 0.5),
                               _record(1, "good", PROBE_FIDELITY, probe_loss))
    found = subsample_rival(evaluations, Constraints(), evaluations[0].observation)
    assert (found is evaluations[1]) if rival else found is None


@pytest.mark.parametrize("full", [
    {"status": "timeout", "loss": 1.0},  # its full fit ran past its limit: no rival
    {"status": "failed", "loss": 1.0},  # ... or failed
    {"status": "ok", "loss": 0.3},  # fitted on all rows: the full-data ranking has it
])
def test_a_pipeline_whose_full_fit_ran_is_no_subsample_rival(full):
    records = [_record(0, "weak", 1.0, 0.5), _record(1, "good", PROBE_FIDELITY, 0.1),
               _record(2, "good", 1.0, **full)]
    evaluations = _evaluations(*records)
    assert subsample_rival(evaluations, Constraints(), evaluations[0].observation) is None
    # one whose full fit the end of the budget cancelled is
    cancelled = _evaluations(*records[:2],
                             _record(2, "good", 1.0, 1.0, "cancelled", budget_stop=True))
    assert subsample_rival(cancelled, Constraints(), cancelled[0].observation) is cancelled[1]


def test_a_probed_pipeline_whose_refit_would_overrun_the_budget_is_refitted_on_what_it_affords():
    """The time budget stays a limit when the returned pipeline was only probed: its probe
    predicts a refit on all 12 500 rows of 12.5 × 0.6 s (a fit past the 2 s trial timeout, so
    never started), more than the 6 s budget and the 1 s overrun fit tolerates, so it is
    refitted on a class-stratified subsample — at least the tenth it was evaluated on — with a
    warning that says so."""
    X, y = make_classification(n_samples=12_500, n_features=2, n_informative=2, n_redundant=0,
                               random_state=0)
    with pytest.warns(SubsampleOnlyWarning, match=r"never fitted on all of them"), \
            pytest.warns(SubsampleOnlyWarning, match=r"its refit on all 12500 rows would take "
                         r"about [\d.]+ s where [\d.]+ s of the time budget are left: "
                         r"best_pipeline_ is fitted on \d+ of them"):
        model = ADMM(search_space=tiny_space(_prior_or_slow_nb(0.6)), theta_solver="random",
                     z_solver="random", trial_timeout=2, time_budget=6, executor="process",
                     n_jobs=1, cv=None, random_state=0).fit(X, y)
    assert model.best_pipeline_[-1].__class__.__name__ == "SlowGaussianNB"  # the probed one
    fitted_on = model.best_pipeline_[-1].class_count_.sum()
    assert PROBE_FIDELITY * len(y) <= fitted_on < len(y)
    assert roc_auc_score(y, model.predict_proba(X)[:, 1]) > 0.9
