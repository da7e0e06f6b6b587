"""A trial that cannot finish in its time limit, run at a training length that fits it
(admm_automl/evaluation/shrink.py), with ``shrink_to_fit`` on; off, every trial runs as
configured.

The forests are mostly :class:`~admm_automl.testing.NappingForest`: a fit sleeps in proportion
to its trees and rows, so a trial's seconds are known in advance and a loaded machine only
lengthens them. The throwaway fits are made, but (fixture ``designed``) they report the seconds
they are designed to take rather than those measured: on a loaded machine the measured ones
swing by more than the margins of a test (a second fit slowed by a neighbour makes the line
flat and the trial not started), and a prediction known in advance is what lets each test say
what must happen. The limits are real, with room for the machine's load."""

from __future__ import annotations

import re

import pytest
from sklearn.datasets import load_breast_cancer

from admm_automl.evaluation import (
    PipelineObjective, SerialExecutor, TrialContext, get_metric, make_splits, run_trial,
)
from admm_automl.evaluation import shrink
from admm_automl.evaluation.policy import TrialPolicy, trial_limit
from admm_automl.final.ensemble import _members as ensemble_members
from admm_automl.final.outcome import evaluations_of
from admm_automl.final.refit import refit
from admm_automl.final.results import records_to_frame
from admm_automl.journal import Journal
from admm_automl.records import Request, Status
from admm_automl.space import space_from_dict
from admm_automl.testing import NappingForest

X, Y = load_breast_cancer(return_X_y=True)
#: the first of 5 folds of the 569 rows trains on 455: a throwaway fit on an eighth of them, 57
TRAIN_ROWS, FEW_ROWS = 455, 57
#: the napping forest's seconds per tree and per thousand rows: 100 trees on a split's 455 rows
#: sleep 0.8 s (a 5-fold trial 4 s), on its eighth 0.1 s
SECONDS = 0.8 / (100 * TRAIN_ROWS / 1000)
#: the trials' limit: past the first fold's 0.8 s, 5 folds project 4 s > 2.8 s; the throwaway
#: fit predicts about 4 s, past half of it, and a fifth of it holds about 13 of the 100 trees
LIMIT = 2.8


def forest_space(low: int = 4, fixed: float = 0.0, seconds: float = SECONDS,
                 length: bool = True, cls: str = "admm_automl.testing.NappingForest",
                 stopping: dict | None = None, parameter: str = "n_estimators",
                 default: int = 100):
    """One module, one forest-like learner whose training length ``parameter`` is tunable from
    ``low`` (declared as its ``iterations`` when ``length``), ``default`` as configured."""
    hyperparameters = {parameter: {"type": "int", "low": low, "high": 256, "log": True,
                                   "default": default}}
    if cls.endswith("NappingForest"):
        hyperparameters |= {"seconds": {"type": "fixed", "value": seconds},
                            "fixed": {"type": "fixed", "value": fixed}}
    choice = {"name": "forest", "class": cls, "task": "classification",
              "hyperparameters": hyperparameters}
    if length:
        choice["iterations"] = {"parameter": parameter, "method": "warm_start"}
    if stopping is not None:
        choice["stopping"] = stopping
    return space_from_dict({
        "name": "forest", "initial": {"classification": {"estimator": "forest"}},
        "modules": [{"name": "estimator", "choices": [choice]}],
    }).for_task("classification")


def context(space, shrink_to_fit: bool = True) -> TrialContext:
    splits = make_splits(Y, classification=True, cv=5, validation_size=0.2, seed=0)
    assert len(splits[0].train) == TRAIN_ROWS
    return TrialContext(space, X, Y, splits, get_metric(None, "classification", "binary"),
                        random_state=0, cache_size=0, shrink_to_fit=shrink_to_fit)


def designed_seconds(forest, rows: int) -> float:
    """The seconds a fit of ``forest`` on ``rows`` rows is designed to take: a napping forest's
    sleep; 25 ms a tree for a random forest."""
    if isinstance(forest, NappingForest):
        return forest.fixed + forest.seconds * forest.n_estimators * rows / 1000
    return 0.025 * forest.n_estimators


@pytest.fixture
def designed(monkeypatch):
    """The throwaway fits are made (and may fail) as always, and report their designed seconds
    (:func:`designed_seconds`)."""
    real = shrink._throwaway

    def throwaway(ctx, z, theta, rows, iterations):
        if real(ctx, z, theta, rows, iterations) is None:
            return None
        return designed_seconds(ctx.pipeline(z, theta, iterations=iterations)[-1], len(rows))

    monkeypatch.setattr(shrink, "_throwaway", throwaway)


def search_one(ctx: TrialContext, limit: float = LIMIT):
    """The observation and the journal record of the initial configuration's trial under a
    timeout of ``limit`` seconds, as a search makes it."""
    NappingForest.fits = []
    objective = PipelineObjective(ctx, SerialExecutor(), Journal(), worst_loss=1.0,
                                  policy=TrialPolicy(trial_timeout=limit))
    try:
        (obs,) = objective([Request((0,), ctx.space.encoding.initial_theta)])
    finally:
        objective.close()
    return obs, objective.journal.records[0]


def test_a_forest_predicted_past_its_limit_runs_whole_at_the_trees_that_fit(designed):
    ctx = context(forest_space())
    obs, record = search_one(ctx)
    assert obs.status is Status.OK
    trees = record["iterations"]
    assert 4 <= trees < 100 and record["shrunk_from"] == 100
    assert obs.iterations == trees  # what the refit trains
    assert record["config"]["estimator__n_estimators"] == 100  # the configuration asked for
    # the throwaway fits on an eighth of split 1 (the configured trees, then half of them),
    # then every split whole at the trees that fit
    assert NappingForest.fits == [(FEW_ROWS, 100), (FEW_ROWS, 50)] + [
        (len(split.train), trees) for split in ctx.splits]
    history = records_to_frame([record])
    assert (history.loc[0, "iterations"], history.loc[0, "shrunk_from"]) == (trees, 100)


def test_with_the_option_off_the_same_trial_is_stopped_between_folds_as_configured():
    obs, record = search_one(context(forest_space(), shrink_to_fit=False))
    assert obs.status is Status.TIMEOUT
    assert record["error"].startswith("stopped after 1 of 5 folds")
    assert "iterations" not in record and "shrunk_from" not in record
    assert NappingForest.fits == [(TRAIN_ROWS, 100)]  # no throwaway fit, one fold


@pytest.mark.parametrize("low, fixed", [(50, 0.0), (4, 0.05)],
                         ids=["its-fewest-trees", "its-fixed-costs"])
def test_a_forest_whose_fewest_trees_cannot_fit_is_not_started(low, fixed, designed):
    # fewest 50 trees: about 2 s, past a fifth of the 2.8 s. With 50 ms a fit that no tree
    # saves (as the steps before a forest cost), the line through the two throwaway fits
    # (0.1 s and 0.075 s, scaled to the trial: 4 s and 3 s) keeps 2 s at any length, where
    # scaling the first fit in proportion to the trees would have started it (4 trees: 0.16 s)
    seconds = SECONDS * (1 - fixed / 0.1)  # the throwaway fit at 100 trees: 0.1 s + fixed
    obs, record = search_one(context(forest_space(low=low, fixed=fixed, seconds=seconds)))
    assert obs.status is Status.TIMEOUT and not obs.budget_stop
    message = record["error"]
    assert message.startswith(f"not started: at its fewest n_estimators={low} it is predicted")
    predicted = float(re.search(r"predicted to take ([\d.e+-]+) s", message).group(1))
    assert predicted > 0.2 * LIMIT  # its prediction, quoted: past a fifth of the limit
    assert "throwaway fits on 57 of split 1's 455 training rows" in message
    assert all(rows == FEW_ROWS for rows, _ in NappingForest.fits)  # no fold was fitted
    assert "shrunk_from" not in record


@pytest.mark.parametrize("space", [
    forest_space(cls="sklearn.ensemble.HistGradientBoostingClassifier", parameter="max_iter",
                 stopping={"parameter": "max_iter", "method": "hist_gradient_boosting"},
                 default=20),
    forest_space(length=False),
], ids=["early-stopping", "no-training-length"])
def test_a_learner_that_stops_early_or_has_no_training_length_is_never_shrunk(space,
                                                                             monkeypatch):
    throwaways = []
    monkeypatch.setattr(shrink, "_throwaway", lambda *args: throwaways.append(args) or 1e3)
    ctx = context(space)
    with trial_limit(0.05):  # 1000 s a throwaway fit: past any limit, were there one
        result = run_trial(ctx, (0,), space.encoding.initial_theta, 1.0)
    assert throwaways == [] and "shrunk_from" not in result
    assert not result["error"] or result["error"].startswith("stopped after")


def test_a_random_forest_shrunk_in_a_search_is_refitted_at_the_trees_it_ran(designed):
    space = forest_space(cls="sklearn.ensemble.RandomForestClassifier", default=32)
    ctx = context(space)
    theta = space.encoding.initial_theta
    # 32 trees, designed at 0.8 s a throwaway fit, predict 32 s, past half of 40 s: a fifth of
    # it holds about 8 trees, which a random forest on 455 rows fits in far less
    obs, record = search_one(ctx, limit=40.0)
    assert obs.status is Status.OK and record["shrunk_from"] == 32
    assert 4 <= obs.iterations == record["iterations"] < 32
    model, _ = refit(ctx, (0,), theta, X, Y, iterations=obs.iterations)
    assert model[-1].n_estimators == obs.iterations and len(model[-1].estimators_) == obs.iterations
    # refitted as an ensemble member too, from the journal's record
    (evaluation,) = evaluations_of([record], space, len(Y), len(ctx.splits))
    ((_, member),) = ensemble_members(ctx, {evaluation.eval_id: evaluation}, [evaluation.eval_id])
    assert member[-1].n_estimators == obs.iterations


def test_a_throwaway_fit_takes_at_least_its_fit_and_says_none_when_it_fails():
    space = forest_space()
    ctx = context(space)
    rows = ctx.splits[0].train_rows(shrink.SHRINK_SAMPLE)
    seconds = shrink._throwaway(ctx, (0,), space.encoding.initial_theta, rows, 100)
    assert seconds >= 0.1  # 100 trees on 57 rows sleep 0.1 s
    raiser = forest_space(fixed=-1.0)  # its fit raises: a sleep cannot be negative
    assert shrink._throwaway(context(raiser), (0,), raiser.encoding.initial_theta, rows,
                             100) is None


def test_the_seconds_against_the_length_lie_between_proportional_and_flat():
    assert shrink._line([(100, 4.0)]) == (0.0, 0.04)  # one fit: proportional
    assert shrink._line([(100, 4.0), (50, 3.0)]) == pytest.approx((2.0, 0.02))
    assert shrink._line([(100, 4.0), (50, 1.0)]) == (0.0, 0.04)  # steeper: proportional
    assert shrink._line([(100, 4.0), (50, 4.5)]) == (4.0, 0.0)  # rising as it shrinks: flat


def test_auto_shrinks_from_its_row_threshold_on_and_a_boolean_is_taken_as_given():
    assert shrink.resolve_auto("auto", shrink.SHRINK_MIN_ROWS)
    assert not shrink.resolve_auto("auto", shrink.SHRINK_MIN_ROWS - 1)
    assert shrink.resolve_auto(True, 10) and not shrink.resolve_auto(False, 10 ** 6)
