"""``callbacks=``: user functions told of each new evaluation with its record and the best so
far, which can stop the search; they are checked like every parameter and never written to the
run's configuration."""

from __future__ import annotations

import warnings

import pytest
import yaml

from admm_automl import ADMMClassifier
from admm_automl.exceptions import InvalidParameterError
from admm_automl.testing import tiny_space

SPACE = tiny_space()
FAST = dict(search_space=SPACE, theta_solver="random", z_solver="random", executor="serial",
            random_state=0, ensemble_size=0)


def fit(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ADMMClassifier(**{**FAST, **kw}).fit(X, y)


def test_each_new_evaluation_is_passed_with_the_best_so_far(breast_cancer):
    X, y = breast_cancer
    seen = []
    model = fit(X, y, max_evals=8, callbacks=[lambda rec, best: seen.append((rec, best))])
    history = model.history_
    assert [r["eval_id"] for r, _ in seen] == list(history["eval_id"])
    assert [r["loss"] for r, _ in seen] == pytest.approx(list(history["loss"]))
    running = float("inf")
    for record, best in seen:  # serial: one evaluation per batch, so best includes it
        running = min(running, record["loss"])
        assert best["loss"] == pytest.approx(running)
    assert model.stop_reason_ == "max_evals"


def test_a_callback_that_returns_true_stops_the_search_and_the_model_is_fitted(breast_cancer):
    X, y = breast_cancer
    calls = []

    def enough(record, best):
        calls.append(record["eval_id"])
        return len(calls) >= 3

    model = fit(X, y, max_evals=30, callbacks=[enough, lambda r, b: "not a stop"])
    assert model.stop_reason_ == "callback" and model.n_evals_ == 3 and len(calls) == 3
    assert model.predict(X).shape == (len(y),)


def test_a_callback_cannot_change_the_journal(breast_cancer):
    X, y = breast_cancer

    def vandal(record, best):
        record["loss"] = -1.0
        if best is not None:
            best["loss"] = -1.0

    model = fit(X, y, max_evals=4, callbacks=[vandal])
    assert (model.history_["loss"] >= 0).all() and model.best_loss_ >= 0


@pytest.mark.parametrize("value", [print, ["not callable"], "print"])
def test_callbacks_must_be_a_list_of_callables(value, breast_cancer):
    X, y = breast_cancer
    with pytest.raises(InvalidParameterError, match="The 'callbacks' parameter of ADMMClassifier must be a list of callables or None"):
        ADMMClassifier(callbacks=value).fit(X, y)


def test_callbacks_are_not_written_to_the_run_configuration(breast_cancer, tmp_path):
    X, y = breast_cancer
    fit(X, y, max_evals=2, callbacks=[lambda r, b: None], output_dir=tmp_path)
    written = yaml.safe_load((tmp_path / "config.resolved.yaml").read_text())["estimator"]
    assert "callbacks" not in written and written["max_evals"] == 2


def test_the_time_spent_in_each_callback_is_counted_and_named_in_an_overrun_warning():
    """A slow callback runs in the search's time and nothing stops it: the overrun warning
    names it rather than blaming the evaluations (a 3 s callback under time_budget=6)."""
    from types import SimpleNamespace

    from admm_automl.exceptions import TimeBudgetWarning
    from admm_automl.run.callbacks import CallbackListener
    from admm_automl.run.deadline import warn_overrun

    now = [0.0]

    def slow_check(record, best):
        now[0] += 3.0

    def quick(record, best):
        now[0] += 0.001

    journal = SimpleNamespace(records=[])
    listener = CallbackListener([slow_check, quick], journal, clock=lambda: now[0])
    journal.records += [{"eval_id": 0, "status": "ok"}, {"eval_id": 1, "status": "cancelled"}]
    listener.evaluated(SimpleNamespace(incumbent=None), [])
    assert listener.seconds == pytest.approx({
        "test_the_time_spent_in_each_callback_is_counted_and_named_in_an_overrun_warning."
        "<locals>.slow_check": 3.0,
        "test_the_time_spent_in_each_callback_is_counted_and_named_in_an_overrun_warning."
        "<locals>.quick": 0.001})  # the cancelled trial is passed to neither
    with pytest.warns(TimeBudgetWarning, match=r"fit took 8.9 s for time_budget=6 s: the search "
                      r"ended at 8.8 s, 3 s of it in the callbacks \(.*slow_check: 3 s\); "
                      r"callbacks run between evaluations"):
        warn_overrun(6.0, "process", 8.8, 8.9, listener.seconds)
    with pytest.warns(TimeBudgetWarning, match=r"the search ended at 8.8 s; the set-up or the "
                      r"last evaluations"):  # a quick callback is not blamed
        warn_overrun(6.0, "process", 8.8, 8.9, {"quick": 0.001})
