"""The refit returns the model it measured: constraints on the fitted object itself (size,
latency) are measured again on the refitted model, and a pipeline whose refit misses them is
replaced by the next one that meets them refitted."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_moons

from admm_automl import ADMMClassifier
from admm_automl.constraints import ModelSize
from admm_automl.exceptions import ConstraintViolationWarning
from admm_automl.final import refit as final_refit
from admm_automl.final.results import describe_constraints
from admm_automl.testing import tiny_space

X, Y = make_moons(n_samples=300, noise=0.3, random_state=0)
KNN = {"class": "sklearn.neighbors.KNeighborsClassifier", "hyperparameters": {
    "n_neighbors": {"type": "int", "low": 5, "high": 30, "default": 15}}}
GNB = {"class": "sklearn.naive_bayes.GaussianNB"}
#: 3-fold cross-validation: a fold model keeps 2/3 of the rows a refit keeps
FAST = dict(max_evals=8, inner_iter=3, inner_iter_step=0, cv=3, random_state=0,
            executor="serial")


def size(model) -> float:
    return ModelSize(1.0).measure(model, None, None, None)


def knn_sizes() -> tuple[float, float]:
    """A k-NN pipeline's pickled size fitted on 2/3 of the rows (as a fold model) and on all."""
    from sklearn.neighbors import KNeighborsClassifier

    return size(KNeighborsClassifier().fit(X[:200], Y[:200])), size(
        KNeighborsClassifier().fit(X, Y))


def limit_between_fold_and_refit() -> float:
    """A size limit every k-NN fold model meets and every k-NN refit misses (it stores the rows)."""
    fold, full = knn_sizes()
    assert full > fold + 2000  # the premise: a k-NN grows with its training rows
    return (fold + full) / 2


@pytest.mark.slow
def test_a_pipeline_whose_refit_misses_a_size_limit_is_replaced_by_one_that_meets_it():
    """k-NN wins on the moons and its fold models meet the limit, its refit does not: the model
    returned is naive Bayes, which meets it refitted, and says so."""
    limit = limit_between_fold_and_refit()
    model = ADMMClassifier(search_space=tiny_space({"knn": KNN, "gnb": GNB}),
                           constraints=[f"model_size <= {limit}"], **FAST).fit(X, Y)
    h = model.history_
    feasible = h[h["feasible"]].sort_values("loss", kind="stable")
    assert feasible.iloc[0]["param:estimator"] == "knn"  # what the search ranked first
    assert model.best_params_["estimator"] == "gnb"
    assert model.best_eval_id_ in set(feasible["eval_id"])
    assert model.feasible_
    assert size(model._model()) <= limit  # the model predict uses, ensemble or not
    assert model.deployed_constraints_["model_size"] == pytest.approx(size(model.best_pipeline_))
    assert model.deployed_constraints_["model_size"] <= limit


@pytest.mark.slow
def test_when_no_refit_meets_a_size_limit_the_least_violating_is_returned_with_a_warning():
    limit = limit_between_fold_and_refit()
    model = ADMMClassifier(search_space=tiny_space({"knn": KNN}),
                           constraints=[f"model_size <= {limit}"], **FAST)
    with pytest.warns(ConstraintViolationWarning, match=r"refitted best pipeline misses .*"
                      r"model_size [0-9.e+]+ refitted \(limit"):
        model.fit(X, Y)
    assert not model.feasible_
    assert model.deployed_constraints_["model_size"] > limit
    assert model.history_.loc[model.history_["eval_id"] == model.best_eval_id_,
                              "feasible"].item()  # it met the limit in the search
    [line] = describe_constraints(model)
    assert "refitted (" in line and "in the search), NOT met" in line


def test_constraints_on_predictions_are_not_measured_again():
    """A fairness or metric bound is estimated on held-out rows; only size and latency are
    properties of the fitted object (a refit has no held-out rows to measure the others on)."""
    from admm_automl.constraints import MetricBound, PredictionLatency

    assert ModelSize.of_the_model and PredictionLatency.of_the_model
    assert not MetricBound.of_the_model
    model = ADMMClassifier(search_space=tiny_space({"gnb": GNB}), constraints=["fpr <= 0.5"],
                           **FAST).fit(X, Y)
    assert model.deployed_constraints_ == {}
    assert model.feasible_ == bool(np.asarray(model.history_["feasible"]).any())


@pytest.mark.parametrize("runnable,threads", [(1, 2), (2, 1), (5, 1)])
def test_the_refit_uses_no_more_threads_than_cores_other_programs_leave_free(
        monkeypatch, tmp_path, runnable, threads):
    """Two trial workers ran one thread each, but with another program busy on one of the two
    cores an OpenMP team of two would spin at every barrier (59 s against 0.7 s for one
    histogram gradient-boosting refit): the refit takes the cores free right now."""
    from threadpoolctl import threadpool_info

    loadavg = tmp_path / "loadavg"
    loadavg.write_text(f"0.50 0.40 0.30 {runnable}/300 12345\n")  # this process is one of them
    monkeypatch.setattr(final_refit, "LOADAVG", str(loadavg))
    monkeypatch.setattr(final_refit.os, "sched_getaffinity", lambda pid: {0, 1})
    assert final_refit.cores_free() == threads
    with final_refit.refit_threads(2):
        assert {pool["num_threads"] for pool in threadpool_info()} == {threads}


@pytest.mark.parametrize("repeats", [1, 2])
def test_the_refitted_model_is_read_on_every_fold_as_a_trial_reads_its_fold_models(repeats):
    """A latency is a noisy reading and the search's value is the mean of one reading per fold:
    the refitted model gets the same, one reading per fold of one repeat (a second repeat would
    read the same model on the same rows again), combined as the search combines them."""
    from types import SimpleNamespace

    from sklearn.naive_bayes import GaussianNB

    from admm_automl.constraints import PredictionLatency
    from admm_automl.evaluation.splits import make_splits

    readings = iter(np.arange(1.0, 100.0))
    seconds = []

    def timer():  # each timed call reads a new start and end: call k lasts 1 "second"
        t = next(readings)
        seconds.append(t)
        return t

    splits = make_splits(Y, classification=True, cv=3, validation_size=0.2, seed=0,
                         repeats=repeats)
    latency = PredictionLatency(1.0, repeats=1, warmup=0, timer=timer)
    ctx = SimpleNamespace(measures={"latency": latency}, splits=splits, X=X, y=Y)
    deployed = final_refit.measure_deployed(ctx, GaussianNB().fit(X, Y))
    assert len(seconds) == 2 * 3  # one timed call per fold of one repeat, two timer reads each
    rows = [min(1000, len(s.valid)) for s in splits[:3]]
    assert deployed["latency"] == pytest.approx(np.mean([1.0 / n for n in rows]))
