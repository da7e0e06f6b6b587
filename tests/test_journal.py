"""The trial journal (admm_automl/journal.py): records appended and flushed as they come, a
resume that drops a line cut short and refuses another run's header, the crash-only marks of
trials never finished, and a record's schema written by make_record and read by observation_of."""

from __future__ import annotations

import numpy as np
import pytest

from admm_automl.exceptions import ResumeError
from admm_automl.journal import Journal, make_record, observation_of, record_problem
from admm_automl.records import Request, Status

HEADER = {"metric": "roc_auc", "model_seed": 0}


def record(eval_id, request=Request((0, 0), np.zeros(1)), result=None, **kw):
    return make_record(eval_id, f"k{eval_id}", request,
                       {"status": "ok", "loss": 0.1} if result is None else result,
                       **{**dict(config={}, pipeline="p", worst_loss=1.0, time=0.0, tags={},
                                 stopped=False), **kw})


def test_records_are_flushed_as_they_come_and_a_line_cut_short_is_dropped_on_resume(tmp_path):
    path = tmp_path / "journal.jsonl"
    journal = Journal(path, HEADER)
    journal.append(record(0))
    journal.append(record(1))
    assert [r["eval_id"] for r in Journal.read(path)] == [0, 1]  # on disk before the close
    journal.close()
    with open(path, "a") as fh:
        fh.write('{"eval_id": 2, "loss": 0.')  # a crash mid-write
    resumed = Journal(path, HEADER)
    assert [r["eval_id"] for r in resumed.records] == [0, 1] and resumed.n_resumed == 2
    assert resumed.next_id() == 2  # ids continue after the file's
    resumed.append(record(2))
    resumed.close()
    assert [r["eval_id"] for r in Journal.read(path)] == [0, 1, 2]  # the cut line is gone
    assert Journal.read_header(path) == HEADER


def test_another_run_s_journal_is_refused_naming_what_differs_or_moved_aside(tmp_path):
    path = tmp_path / "journal.jsonl"
    journal = Journal(path, HEADER)
    journal.append(record(0))
    journal.close()
    with pytest.raises(ResumeError, match=r"records a different run.*metric: recorded "
                                          r"\"roc_auc\", now \"accuracy\""):
        Journal(path, {**HEADER, "metric": "accuracy"})
    fresh = Journal(path, {**HEADER, "metric": "accuracy"}, resume=False)
    fresh.close()
    assert len(fresh) == 0 and Journal.read_header(path)["metric"] == "accuracy"
    assert [r["eval_id"] for r in Journal.read(tmp_path / "journal-1.jsonl")] == [0]


def test_a_resumed_journal_counts_the_deaths_of_each_unfinished_trial(tmp_path):
    """Each start mark of a trial followed by neither its record nor an interrupt is a session
    that died during it; an interrupt takes back its own start only, a record clears them all."""
    path = tmp_path / "journal.jsonl"
    journal = Journal(path)
    a, b, c = (Request((0, j), np.zeros(1)) for j in range(3))
    journal.start("a", a)  # died
    journal.start("a", a)  # interrupted
    journal.interrupt("a")
    journal.start("b", b)  # died, then finished
    journal.start("b", b)
    journal.append({"eval_id": 0, "key": "b", "config": {}, "fidelity": 1.0, "loss": 0.1,
                    "status": "ok"})
    journal.start("c", c)  # died twice
    journal.start("c", c)
    journal.close()
    resumed = Journal(path)
    assert {m["key"]: m["deaths"] for m in resumed.unfinished} == {"a": 1, "c": 2}
    assert [r["key"] for r in resumed.records] == ["b"]


def test_a_failed_or_stopped_trial_is_recorded_with_the_worst_loss_its_own_kept_aside():
    failed = record(0, result={"status": "failed", "loss": 0.3, "error": "boom"})
    assert (failed["loss"], failed["raw_loss"], failed["status"]) == (1.0, 0.3, "failed")
    nan = record(1, result={"status": "ok", "loss": float("nan")})
    assert nan["loss"] == 1.0 and nan["status"] == "ok"
    stopped = observation_of(record(2, result={"status": "timeout", "loss": 0.2}, stopped=True))
    assert stopped.status is Status.CANCELLED and stopped.budget_stop and stopped.loss == 1.0
    ok = observation_of(record(3, result={"status": "ok", "loss": 0.25, "fit_time": 1.5}))
    assert (ok.loss, ok.status, ok.fit_time, ok.eval_id, ok.budget_stop) == (
        0.25, Status.OK, 1.5, 3, False)


def test_the_journal_keeps_each_folds_rounds_and_the_refit_takes_their_rounded_mean():
    request = Request((0, 0), np.zeros(1))
    record = make_record(0, "k", request, {"status": "ok", "loss": 0.1, "rounds": [10, 13, 14]},
                         config={}, pipeline="p", worst_loss=1.0, time=0.0, tags={},
                         stopped=False)
    assert record["rounds"] == [10, 13, 14]
    observation = observation_of(record)
    assert observation.rounds == (10, 13, 14) and observation.refit_rounds == 12
    plain = make_record(1, "k", request, {"status": "ok", "loss": 0.1}, config={}, pipeline="p",
                        worst_loss=1.0, time=0.0, tags={}, stopped=False)
    assert "rounds" not in plain and observation_of(plain).refit_rounds is None


def test_a_record_a_resume_cannot_read_back_is_named_with_what_is_wrong():
    assert record_problem(record(0)) is None
    assert record_problem({**record(0), "config": ["a"]}) == "its config ['a'] is not a mapping"
    assert record_problem({**record(0), "key": 7}) == "its key 7 is not a string"
    assert record_problem({**record(0), "eval_id": -1}) == "its eval_id -1 is not a whole number"
