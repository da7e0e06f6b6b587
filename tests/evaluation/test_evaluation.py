"""The evaluation engine: splits, fidelity subsamples, metrics, failure capture, cache, journal."""

from __future__ import annotations

import json
import threading
from dataclasses import replace

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes

from admm_automl.evaluation import (
    PipelineObjective,
    ProcessExecutor,
    SerialExecutor,
    TrialContext,
    get_metric,
    make_splits,
    nested_order,
)
from admm_automl.evaluation.policy import PROBE_FIDELITY, TrialPolicy
from admm_automl.exceptions import InvalidParameterError
from admm_automl.run.executor import make_executor
from admm_automl.journal import Journal
from admm_automl.final.results import records_to_frame
from admm_automl.testing import tiny_space
from admm_automl.records import Request, Status

X, Y = load_breast_cancer(return_X_y=True)
MISBEHAVING = tiny_space(
    {
        "gnb": {"class": "sklearn.naive_bayes.GaussianNB"},
        "sleeper": {"class": "admm_automl.testing.SleepingClassifier"},
        "raiser": {"class": "admm_automl.testing.RaisingClassifier"},
        "nan": {"class": "admm_automl.testing.NaNClassifier"},
        "hog": {"class": "admm_automl.testing.MemoryHogClassifier"},
        "busy": {"class": "admm_automl.testing.BusyClassifier"},
    }
).for_task("classification")
THETA = MISBEHAVING.encoding.initial_theta


def context(space=MISBEHAVING, cv=None):
    splits = make_splits(Y, classification=True, cv=cv, validation_size=0.2, seed=0)
    return TrialContext(space, X, Y, splits, get_metric(None, "classification", "binary"))


# ---------------------------------------------------------------------------- splits
def test_holdout_split_is_stratified_and_disjoint():
    (split,) = make_splits(Y, classification=True, cv=None, validation_size=0.2, seed=1)
    assert len(np.intersect1d(split.train, split.valid)) == 0
    assert len(split.train) + len(split.valid) == len(Y)
    assert len(split.valid) == pytest.approx(0.2 * len(Y), abs=1)
    assert Y[split.valid].mean() == pytest.approx(Y.mean(), abs=0.01)


def test_kfold_splits_cover_every_row_once():
    splits = make_splits(Y, classification=True, cv=3, validation_size=0.2, seed=0)
    valid = np.sort(np.concatenate([s.valid for s in splits]))
    np.testing.assert_array_equal(valid, np.arange(len(Y)))


def test_regression_splits_are_not_stratified():
    _, y = load_diabetes(return_X_y=True)
    (split,) = make_splits(y, classification=False, cv=None, validation_size=0.25, seed=0)
    assert len(split.valid) == pytest.approx(0.25 * len(y), abs=1)


def test_fidelity_subsamples_are_nested_and_stratified():
    (split,) = make_splits(Y, classification=True, cv=None, validation_size=0.2, seed=0)
    previous = np.array([], dtype=int)
    for fidelity in (0.05, 0.1, 0.25, 0.5, 1.0):
        rows = split.train_rows(fidelity)
        assert len(rows) == int(np.ceil(fidelity * len(split.train)))
        assert set(previous) <= set(rows)
        assert set(rows) <= set(split.train)
        assert Y[rows].mean() == pytest.approx(Y[split.train].mean(), abs=0.05)
        previous = rows


def test_nested_order_keeps_class_proportions_in_every_prefix():
    y = np.array([0] * 90 + [1] * 10)
    order = nested_order(y, np.random.default_rng(0))
    assert sorted(order) == list(range(100))
    for n in (10, 20, 50):
        assert y[order[:n]].sum() == pytest.approx(n / 10, abs=1)


# ---------------------------------------------------------------------------- metrics
@pytest.mark.parametrize(
    "scoring,task,target,name,worst",
    [
        (None, "classification", "binary", "roc_auc", 1.0),
        (None, "classification", "multiclass", "log_loss", None),
        (None, "regression", "continuous", "rmse", None),
        ("accuracy", "classification", "multiclass", "accuracy", 1.0),
        ("r2", "regression", "continuous", "r2", None),
        ("roc_auc", "classification", "multiclass", "roc_auc_ovr", 1.0),
        ("neg_median_absolute_error", "regression", "continuous", "neg_median_absolute_error", None),
    ],
)
def test_metric_resolution(scoring, task, target, name, worst):
    metric = get_metric(scoring, task, target)
    assert metric.name == name
    assert metric.worst == worst


def test_metric_errors_name_the_problem():
    with pytest.raises(InvalidParameterError, match="Unknown scoring 'roc_acu'. Did you mean 'roc_auc'"):
        get_metric("roc_acu", "classification", "binary")
    with pytest.raises(InvalidParameterError) as raised:  # what people call it; each name once
        get_metric("AUROC", "classification", "binary")
    assert "Did you mean 'roc_auc'" in str(raised.value)
    assert str(raised.value).count("'accuracy',") == 1
    with pytest.raises(InvalidParameterError, match="'rmse' does not apply to classification"):
        get_metric("rmse", "classification", "binary")


def test_loss_is_one_minus_auroc():
    from sklearn.metrics import roc_auc_score
    from sklearn.naive_bayes import GaussianNB

    metric = get_metric(None, "classification", "binary")
    model = GaussianNB().fit(X[:400], Y[:400])
    expected = 1 - roc_auc_score(Y[400:], model.predict_proba(X[400:])[:, 1])
    assert metric.loss(metric.make_scorer(), model, X[400:], Y[400:]) == pytest.approx(expected)


# ---------------------------------------------------------------------------- objective
def z_of(name):
    return (0, MISBEHAVING.modules[1].index(name))


def test_failures_are_captured_with_the_worst_loss_and_the_error_text(tmp_path):
    journal = Journal(tmp_path / "journal.jsonl")
    objective = PipelineObjective(context(), SerialExecutor(), journal, worst_loss=1.0)
    good, raised, nan = objective(
        [Request(z_of("gnb"), THETA), Request(z_of("raiser"), THETA), Request(z_of("nan"), THETA)]
    )
    objective.close()
    assert good.status is Status.OK and 0 < good.loss < 0.2
    assert raised.status is Status.FAILED and raised.loss == 1.0
    assert "RuntimeError: this estimator always fails" in raised.error
    assert nan.status is Status.FAILED and nan.loss == 1.0 and "NaN" in nan.error
    header, *lines = [json.loads(line)
                      for line in (tmp_path / "journal.jsonl").read_text().splitlines()]
    assert header == {"run": {}}
    # a serial trial runs between its start mark and its record (crash-only trials)
    assert [next(iter(r)) if len(r) == 1 else "record" for r in lines] == ["started", "record"] * 3
    lines = lines[1::2]
    assert [r["status"] for r in lines] == ["ok", "failed", "failed"]
    assert [r["eval_id"] for r in lines] == [0, 1, 2]
    assert "always fails" in lines[1]["error"]
    assert objective.n_failed == 2


def test_a_serial_trial_interrupted_by_ctrl_c_is_run_again_on_resume(tmp_path, monkeypatch):
    """Crash-only trials tell an interrupt from a crash: a KeyboardInterrupt inside a serial
    trial marks it interrupted, so the resumed objective evaluates it (a crash is recorded as
    failed instead: tests/run/test_resume.py)."""
    path = tmp_path / "journal.jsonl"
    executor = SerialExecutor()
    objective = PipelineObjective(context(), executor, Journal(path), worst_loss=1.0)
    objective([Request(z_of("gnb"), THETA)])
    monkeypatch.setattr(executor.task, "run", lambda *job: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        objective([Request(z_of("raiser"), THETA)])
    objective.close()
    monkeypatch.undo()
    journal = Journal(path)
    assert journal.unfinished == [] and len(journal.records) == 1
    resumed = PipelineObjective(context(), SerialExecutor(), journal, worst_loss=1.0)
    (again,) = resumed([Request(z_of("raiser"), THETA)])
    resumed.close()
    assert again.status is Status.FAILED and "always fails" in again.error  # run, not replayed


def test_identical_requests_are_answered_from_the_cache():
    objective = PipelineObjective(context(), SerialExecutor(), Journal(), worst_loss=1.0)
    first, duplicate = objective([Request(z_of("gnb"), THETA), Request(z_of("gnb"), THETA)])
    (again,) = objective([Request(z_of("gnb"), THETA)])
    assert not first.cached and duplicate.cached and again.cached
    assert first.loss == duplicate.loss == again.loss
    assert len(objective.journal) == 1
    # a different fidelity is a different request
    (low,) = objective([Request(z_of("gnb"), THETA, 0.25)])
    assert not low.cached and low.fidelity == 0.25
    assert objective.journal.records[-1]["n_train"] == int(np.ceil(0.25 * 455))


def test_the_records_are_timed_on_the_run_s_clock_and_a_resumed_journal_continues_it(tmp_path):
    from admm_automl.clock import Deadline
    from admm_automl.testing import FakeClock

    clock = FakeClock()
    deadline = Deadline(None, clock=clock)
    clock.now = 7.0  # the set-up before the first trial counts
    path = tmp_path / "journal.jsonl"
    objective = PipelineObjective(context(), SerialExecutor(), Journal(path), worst_loss=1.0,
                                  deadline=deadline)
    objective([Request(z_of("gnb"), THETA)])
    objective.close()
    assert objective.journal.records[-1]["time"] == 7.0
    clock.now = 100.0
    resumed = PipelineObjective(context(), SerialExecutor(), Journal(path), worst_loss=1.0,
                                deadline=Deadline(None, clock=clock))
    clock.now = 102.0
    resumed([Request(z_of("raiser"), THETA)])
    resumed.close()
    assert resumed.journal.records[-1]["time"] == 7.0 + 2.0  # after the earlier session's last


@pytest.mark.slow
def test_process_executor_stops_a_runaway_fit_and_enforces_the_memory_limit():
    executor = ProcessExecutor(n_workers=1, memory_limit_mb=1500)
    objective = PipelineObjective(context(), executor, Journal(), worst_loss=1.0,
                                  policy=TrialPolicy(trial_timeout=2.0))
    try:
        sleeper, hog, good = objective(
            [Request(z_of("sleeper"), THETA), Request(z_of("hog"), THETA), Request(z_of("gnb"), THETA)]
        )
    finally:
        objective.close()
    assert sleeper.status is Status.TIMEOUT and sleeper.loss == 1.0
    assert sleeper.duration < 15  # the 60 s sleep was cut short
    assert hog.status is Status.MEMOUT and hog.loss == 1.0
    assert good.status is Status.OK  # the pool recovered
    statuses = [r["status"] for r in objective.journal.records]
    assert statuses == ["timeout", "memout", "ok"]


def test_time_left_stops_a_trial_and_marks_it_as_a_budget_stop():
    objective = PipelineObjective(context(), ProcessExecutor(1), Journal(), worst_loss=1.0)
    try:
        (obs,) = objective([Request(z_of("sleeper"), THETA)], time_left=1.5)
    finally:
        objective.close()
    assert obs.status is Status.CANCELLED and obs.budget_stop
    assert objective.journal.records[0]["budget_stop"] is True
    assert not objective.cache  # not cached: it might finish with more time


def test_a_trial_stuck_in_a_c_call_is_stopped_at_its_timeout():
    # sum(range(10**12)) never returns to the interpreter, so a Python SIGTERM handler (Pebble's)
    # could not run; the worker must die at once, not after Pebble's 3 s grace period
    objective = PipelineObjective(context(), ProcessExecutor(1), Journal(), worst_loss=1.0,
                                  policy=TrialPolicy(trial_timeout=0.5))
    try:
        (busy,) = objective([Request(z_of("busy"), THETA)])
    finally:
        objective.close()
    assert busy.status is Status.TIMEOUT
    # 2.5 s over the 0.5 s timeout for a busy machine, still below the 3.5 s that waiting out a
    # 3 s SIGTERM grace period would take (and a stuck worker would never end at all)
    assert busy.duration < 3.0


#: a learner whose every fit sleeps 0.2 s: a 5-fold trial of it takes at least 1 s
NAPPER = tiny_space({"napper": {"class": "admm_automl.testing.SleepingClassifier", "hyperparameters": {
    "seconds": {"type": "fixed", "value": 0.2}}}}).for_task("classification")


def _nap(executor, policy=None, time_left=None):
    objective = PipelineObjective(context(NAPPER, cv=5), executor, Journal(), worst_loss=1.0,
                                  **({} if policy is None else {"policy": policy}))
    try:
        (obs,) = objective([Request((0, 0), NAPPER.encoding.initial_theta)], time_left=time_left)
    finally:
        objective.close()
    return obs, objective.journal.records[0]


@pytest.mark.parametrize("executor", [SerialExecutor, lambda: ProcessExecutor(1)],
                         ids=["serial", "process"])
def test_a_trial_whose_first_folds_project_past_its_timeout_stops_between_folds(executor):
    # fold 1 takes >= 0.2 s, so the 5 folds project >= 1 s, past the 0.7 s timeout: the trial
    # stops after its first fold (a busy machine only lengthens the sleep, never the count)
    obs, record = _nap(executor(), TrialPolicy(trial_timeout=0.7))
    assert obs.status is Status.TIMEOUT and not obs.budget_stop
    assert record["error"].startswith("stopped after 1 of 5 folds")
    assert "past its time limit" in record["error"]


def test_a_serial_trial_projected_past_the_budgets_end_is_a_budget_stop():
    obs, record = _nap(SerialExecutor(), time_left=0.7)
    assert obs.status is Status.CANCELLED and obs.budget_stop  # as if the budget had cut it
    assert record["error"].startswith("stopped after 1 of 5 folds")
    assert "past the time budget's end" in record["error"]


def test_a_trial_whose_folds_fit_within_its_limit_runs_them_all():
    obs, _ = _nap(SerialExecutor(), TrialPolicy(trial_timeout=30.0))
    assert obs.status is Status.OK and obs.fidelity == 1.0


def test_process_and_serial_executors_give_the_same_losses():
    requests = [Request(z_of("gnb"), THETA), Request((1, 0), THETA)]
    serial = PipelineObjective(context(), SerialExecutor(), Journal(), worst_loss=1.0)
    process = PipelineObjective(context(), ProcessExecutor(2), Journal(), worst_loss=1.0)
    try:
        a = [o.loss for o in serial(requests)]
        b = [o.loss for o in process(requests)]
    finally:
        process.close()
    assert a == b


def _records(journal):
    """A journal's records without what differs between two runs of the same trials."""
    return [{k: v for k, v in r.items() if k not in ("time", "duration", "fit_time",
                                                      "predict_time")}
            for r in journal.records]


def _submit_all(objective, requests, **kwargs):
    """Submit every request, then collect until all are answered; observations by ticket."""
    tickets = [objective.submit(r, **kwargs) for r in requests]
    answers = {}
    while objective.pending:
        answers.update(objective.collect())
    return [answers[t] for t in tickets]


def test_submitted_requests_give_the_journal_of_a_batch_with_one_worker(tmp_path):
    requests = [Request(z_of("gnb"), THETA), Request(z_of("raiser"), THETA),
                Request(z_of("nan"), THETA), Request((1, 0), THETA)]
    batch = PipelineObjective(context(), SerialExecutor(), Journal(tmp_path / "a.jsonl"),
                              worst_loss=1.0)
    asked = PipelineObjective(context(), SerialExecutor(), Journal(tmp_path / "b.jsonl"),
                              worst_loss=1.0)
    by_batch = batch(requests, tags={"phase": "theta"})
    by_submit = _submit_all(asked, requests, tags={"phase": "theta"})
    batch.close()
    asked.close()
    assert [(o.eval_id, o.status, o.loss) for o in by_submit] == [
        (o.eval_id, o.status, o.loss) for o in by_batch]
    assert _records(asked.journal) == _records(batch.journal)
    # the in-process trials ran between their start marks and their records alike
    lines = [(tmp_path / name).read_text().splitlines() for name in ("a.jsonl", "b.jsonl")]
    marks = [[next(iter(json.loads(x))) for x in f if len(json.loads(x)) == 1] for f in lines]
    assert marks[0] == marks[1] == ["run"] + ["started"] * 4


def test_a_request_asked_while_the_same_trial_is_in_flight_is_answered_by_it():
    objective = PipelineObjective(context(), ProcessExecutor(1), Journal(), worst_loss=1.0)
    try:
        first = objective.submit(Request(z_of("gnb"), THETA))
        again = objective.submit(Request(z_of("gnb"), THETA))
        assert objective.pending == 2
        answers = dict(objective.collect())
        while objective.pending:
            answers.update(objective.collect())
        assert not answers[first].cached and answers[again].cached
        assert answers[first].loss == answers[again].loss
        assert len(objective.journal) == 1  # run once
        later = objective.submit(Request(z_of("gnb"), THETA))  # a cache hit: answered at once
        assert objective.collect(timeout=0) == [(later, replace(answers[first], cached=True))]
    finally:
        objective.close()


def test_a_cache_hit_is_answered_at_submit_and_the_objective_says_so():
    """``answered(ticket)``: a request answered at once from the cache waits for ``collect``
    (the recorder keeps it out of the trials in flight); a trial sent to the executor does
    not, until it ends."""
    objective = PipelineObjective(context(), SerialExecutor(), Journal(), worst_loss=1.0)
    try:
        first = objective.submit(Request(z_of("gnb"), THETA))
        assert not objective.answered(first)
        [(ticket, observation)] = objective.collect()
        assert ticket == first and not objective.answered(first)
        later = objective.submit(Request(z_of("gnb"), THETA))
        assert objective.answered(later) and objective.pending == 1
        assert objective.collect() == [(later, replace(observation, cached=True))]
        assert not objective.answered(later) and len(objective.journal) == 1
    finally:
        objective.close()


@pytest.mark.slow
def test_collect_hands_back_a_quick_trial_before_a_slow_one_and_journals_it_first():
    objective = PipelineObjective(context(), ProcessExecutor(2), Journal(), worst_loss=1.0,
                                  policy=TrialPolicy(trial_timeout=3.0))
    try:
        slow = objective.submit(Request(z_of("sleeper"), THETA))
        quick = objective.submit(Request(z_of("gnb"), THETA))
        [(ticket, observation)] = objective.collect()
        assert ticket == quick and observation.status is Status.OK
        assert [r["eval_id"] for r in objective.journal.records] == [observation.eval_id]
        [(ticket, observation)] = objective.collect()
        assert ticket == slow and observation.status is Status.TIMEOUT
        assert objective.pending == 0 and objective.collect() == []
    finally:
        objective.close()


@pytest.mark.slow
def test_a_batch_is_journaled_in_the_order_it_was_asked_whatever_ends_first():
    """So a seeded search with the same batch size writes the same journal on any executor."""
    objective = PipelineObjective(context(), ProcessExecutor(2), Journal(), worst_loss=1.0,
                                  policy=TrialPolicy(trial_timeout=2.0))
    try:
        slow, quick = objective([Request(z_of("sleeper"), THETA), Request(z_of("gnb"), THETA)])
    finally:
        objective.close()
    assert slow.status is Status.TIMEOUT and quick.status is Status.OK
    assert quick.duration < slow.duration  # it ended first ...
    # ... and is recorded second, as it was asked
    assert [r["status"] for r in objective.journal.records] == ["timeout", "ok"]
    assert (slow.eval_id, quick.eval_id) == (0, 1)


@pytest.mark.slow
def test_submitted_full_data_requests_are_probed_as_in_a_batch():
    """With probes on, a pipeline whose probe cannot finish is answered by the probe and one
    that can is then fitted on all rows, whether asked in a batch or one at a time."""
    policy = TrialPolicy(trial_timeout=1.5, probe_min_rows=100)
    requests = [Request(z_of("sleeper"), THETA), Request(z_of("gnb"), THETA)]
    journals = []
    for ask in ("batch", "submit"):
        objective = PipelineObjective(context(), ProcessExecutor(1), Journal(), worst_loss=1.0,
                                      policy=policy)
        try:
            answers = (objective(requests) if ask == "batch"
                       else _submit_all(objective, requests))
        finally:
            objective.close()
        assert [(o.status, o.fidelity) for o in answers] == [
            (Status.TIMEOUT, PROBE_FIDELITY), (Status.OK, 1.0)]
        journals.append([(r["status"], r["fidelity"], r.get("probe", False))
                         for r in objective.journal.records])
    assert sorted(journals[1]) == sorted(journals[0]) == sorted([
        ("timeout", PROBE_FIDELITY, True), ("ok", PROBE_FIDELITY, True), ("ok", 1.0, False)])


def test_unpicklable_context_gives_a_clear_error():
    # lambdas and local classes travel by value (cloudpickle); a lock cannot travel at all
    ctx = context()
    ctx.measures = {"bad": threading.Lock()}
    with pytest.raises(InvalidParameterError, match="must be picklable .*cannot pickle '_thread.lock'"):
        ProcessExecutor(1).start(ctx)


def test_executor_choice():
    assert make_executor("auto", n_jobs=1, memory_limit_mb=None, needs_isolation=False).name == "serial"
    assert make_executor("auto", n_jobs=1, memory_limit_mb=None, needs_isolation=True).name == "process"
    assert make_executor("auto", n_jobs=2, memory_limit_mb=None, needs_isolation=False).name == "process"
    with pytest.raises(InvalidParameterError, match="need executor='process'"):
        make_executor("serial", n_jobs=2, memory_limit_mb=None, needs_isolation=False)
    with pytest.raises(InvalidParameterError, match="'auto', 'serial', 'process' or 'dask'"):
        make_executor("threads", n_jobs=1, memory_limit_mb=None, needs_isolation=False)


# ---------------------------------------------------------------------------- journal
def test_journal_survives_a_truncated_last_line_and_replays_on_resume(tmp_path):
    path = tmp_path / "journal.jsonl"
    objective = PipelineObjective(context(), SerialExecutor(), Journal(path), worst_loss=1.0)
    objective([Request(z_of("gnb"), THETA), Request(z_of("raiser"), THETA)])
    objective.close()
    with open(path, "a") as fh:
        fh.write('{"eval_id": 2, "loss": 0.')  # a crash mid-write
    records = Journal.read(path)
    assert len(records) == 2
    resumed = PipelineObjective(context(), SerialExecutor(), Journal(path), worst_loss=1.0)
    assert len(resumed.replay) == 2
    (obs,) = resumed([Request(z_of("gnb"), THETA)])
    # replayed: counted as an evaluation of this session, not run and not recorded again
    assert not obs.cached and obs.loss == records[0]["loss"] and obs.eval_id == 0
    (again,) = resumed([Request(z_of("gnb"), THETA)])
    assert again.cached
    (new,) = resumed([Request(z_of("nan"), THETA)])
    resumed.close()
    assert new.eval_id == 2  # ids continue after the file's
    assert [r["eval_id"] for r in Journal.read(path)] == [0, 1, 2]  # the cut line is gone
    frame = records_to_frame(Journal.read(path))
    assert list(frame["status"]) == ["ok", "failed", "failed"]
    assert "param:estimator" in frame.columns
