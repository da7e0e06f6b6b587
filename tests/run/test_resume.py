"""Resuming a run from its journal: the run header guards it, ids continue, nothing is lost or
repeated, and a run killed with SIGKILL continues to the same history as an uninterrupted one."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_wine, make_classification

from admm_automl import ADMM
from admm_automl.cli import main
from admm_automl.exceptions import EvaluationFailedWarning, ResumeError, RunDirectoryWarning
from admm_automl.journal import Journal
from admm_automl.testing import tiny_space
from admm_automl.testing.estimators import KILL_AT_FIT

FAST = dict(search_space=tiny_space(), theta_solver="random", z_solver="random", inner_iter=3,
            inner_iter_step=0, random_state=0, executor="serial", cv=None)
COMPARED = ["eval_id", "pipeline", "key", "loss", "status", "phase", "admm_iter"]


@pytest.mark.slow
def test_resume_replays_the_journal_and_continues_the_same_search(tmp_path, breast_cancer_full):
    X, Y = breast_cancer_full
    first = ADMM(**FAST, max_evals=12, output_dir=tmp_path).fit(X, Y)
    second = ADMM(**FAST, max_evals=20, output_dir=tmp_path).fit(X, Y)
    straight = ADMM(**FAST, max_evals=20).fit(X, Y)
    records = Journal.read(tmp_path / "journal.jsonl")
    # the budget is the run's: 12 replayed + 8 new; ids continue; history_ is the whole journal
    assert second.n_evals_ == 20 and len(records) == 20
    assert [r["eval_id"] for r in records] == list(range(20))
    assert second.history_["key"].tolist() == [r["key"] for r in records]
    assert not second.history_["key"].duplicated().any()
    assert second.history_[COMPARED].head(12).equals(first.history_[COMPARED])
    # the same seed and budget give the same history as a run that was never interrupted
    assert second.history_[COMPARED].equals(straight.history_[COMPARED])
    assert second.best_eval_id_ == straight.best_eval_id_
    best = second.history_.loc[second.history_["eval_id"] == second.best_eval_id_].iloc[0]
    assert best["loss"] == second.best_loss_ == second.history_["loss"].min()


def test_a_finished_run_resumed_with_the_same_budget_evaluates_nothing(tmp_path,
                                                                       breast_cancer_full,
                                                                       caplog):
    X, Y = breast_cancer_full
    ADMM(**FAST, max_evals=8, output_dir=tmp_path).fit(X, Y)
    before = (tmp_path / "journal.jsonl").read_bytes()
    with caplog.at_level("INFO", logger="admm_automl"):
        again = ADMM(**FAST, max_evals=8, output_dir=tmp_path).fit(X, Y)
    assert "8 evaluations of an earlier session are replayed" in caplog.text  # it says so
    assert (tmp_path / "journal.jsonl").read_bytes() == before
    assert again.n_evals_ == 8 and len(again.history_) == 8


@pytest.mark.parametrize("change,expected", [
    ({"X": load_wine(return_X_y=True)[0][:, :5], "y": load_wine(return_X_y=True)[1]},
     r"data\.fingerprint: recorded"),
    ({"scoring": "accuracy"}, r"metric: recorded \"roc_auc\", now \"accuracy\""),
    ({"validation_size": 0.3}, r"splits\.validation_size: recorded 0\.2, now 0\.3"),
    ({"random_state": 1}, r"model_seed: recorded"),
    ({"search_space": "paper_small"}, r"space\.name: recorded \"tiny\", now \"paper_small\""),
    ({"shrink_to_fit": True}, r"shrink_to_fit: only in the new run"),
    ({"boost_to_fit": True}, r"boost_to_fit: only in the new run"),
])
def test_a_journal_of_another_run_is_refused_with_what_differs(tmp_path, change, expected,
                                                                breast_cancer_full):
    X, Y = breast_cancer_full
    ADMM(**FAST, max_evals=4, output_dir=tmp_path).fit(X, Y)
    data = {"X": change.pop("X", X), "y": change.pop("y", Y)}
    with pytest.raises(ResumeError, match=expected):
        ADMM(**{**FAST, **change}, max_evals=4, output_dir=tmp_path).fit(data["X"], data["y"])
    assert len(Journal.read(tmp_path / "journal.jsonl")) == 4  # untouched


def test_shrink_to_fit_auto_is_what_the_data_s_rows_make_it_in_the_journal(tmp_path,
                                                                          breast_cancer_full):
    """``"auto"`` is off on 569 rows, so its journal resumes with the shrink off; on 3 000 rows
    it is on, and a resume with it off is refused (its trials would be sized otherwise); a
    journal made without it there (as every version before the default) is told how to resume."""
    X, Y = breast_cancer_full
    ADMM(**FAST, max_evals=2, output_dir=tmp_path / "small").fit(X, Y)
    again = ADMM(**FAST, max_evals=2, shrink_to_fit=False, output_dir=tmp_path / "small").fit(X, Y)
    assert again.n_evals_ == 2
    X, Y = make_classification(n_samples=3000, n_features=4, random_state=0)
    ADMM(**FAST, max_evals=2, output_dir=tmp_path / "large").fit(X, Y)
    with pytest.raises(ResumeError, match=r"shrink_to_fit: only in the recorded run"):
        ADMM(**FAST, max_evals=2, shrink_to_fit=False, output_dir=tmp_path / "large").fit(X, Y)
    ADMM(**FAST, max_evals=2, shrink_to_fit=False, output_dir=tmp_path / "before").fit(X, Y)
    with pytest.raises(ResumeError, match=r"only in the new run.*resumes with shrink_to_fit=False"):
        ADMM(**FAST, max_evals=2, output_dir=tmp_path / "before").fit(X, Y)


def test_a_resume_whose_longer_budget_changes_cv_auto_s_repeats_says_how_to_pin_them(
        tmp_path, breast_cancer_full):
    """cv='auto' repeats its folds while rows x features x repeats <= 500 x the budget: 300 rows
    of 8 features are folded once at 5 s and twice at 10 s."""
    X, Y = breast_cancer_full
    X, Y = X[:300, :8], Y[:300]
    params = {**FAST, "cv": "auto", "executor": "serial", "max_evals": 2}
    ADMM(**params, time_budget=5, output_dir=tmp_path).fit(X, Y)
    with pytest.raises(ResumeError, match=r"splits\.repeats: only in the new run.* cv='auto''s "
                                          r"choice, which depends on .* the time budget \(now "
                                          r"5-fold, 2 time\(s\)\).* explicit cv"):
        ADMM(**params, time_budget=10, output_dir=tmp_path).fit(X, Y)
    with pytest.raises(ResumeError) as explicit:  # an explicit cv has nothing to explain
        ADMM(**{**params, "cv": 3}, time_budget=5, output_dir=tmp_path).fit(X, Y)
    assert "cv='auto'" not in str(explicit.value)


def test_a_finished_run_run_again_returns_the_same_ensemble(tmp_path, breast_cancer_full):
    """Everything fit needs to rebuild its result is in the run directory: re-running a finished
    run evaluates nothing and returns the same ensemble and predictions (the kept validation
    predictions are read back from ``predictions/``, plain ``.npy`` files)."""
    X, Y = breast_cancer_full
    first = ADMM(**FAST, max_evals=10, output_dir=tmp_path).fit(X, Y)
    assert len(first.ensemble_weights_) >= 2
    kept = sorted(p.name for p in (tmp_path / "predictions").iterdir())
    assert set(kept) >= {f"{i}.npy" for i in first.ensemble_weights_}
    with warnings.catch_warnings():
        warnings.simplefilter("error", RunDirectoryWarning)  # the files it removed: no warning
        again = ADMM(**FAST, max_evals=10, output_dir=tmp_path).fit(X, Y)
    assert again.ensemble_weights_ == first.ensemble_weights_
    np.testing.assert_array_equal(again.predict_proba(X), first.predict_proba(X))
    assert sorted(p.name for p in (tmp_path / "predictions").iterdir()) == kept


def test_resume_false_keeps_the_old_journal_beside_a_new_one(tmp_path, breast_cancer_full):
    X, Y = breast_cancer_full
    ADMM(**FAST, max_evals=4, output_dir=tmp_path).fit(X, Y)
    wine_X, wine_y = load_wine(return_X_y=True)
    model = ADMM(**FAST, max_evals=3, output_dir=tmp_path, resume=False).fit(wine_X, wine_y)
    assert len(Journal.read(tmp_path / "journal-1.jsonl")) == 4
    assert len(Journal.read(tmp_path / "journal.jsonl")) == 3 == len(model.history_)
    assert model.history_["eval_id"].tolist() == list(range(3))


@pytest.mark.slow
def test_the_cli_refuses_another_datasets_journal_and_names_the_difference(tmp_path, capsys):
    args = ["fit", "--max-evals", "3", "--seed", "0", "--output", str(tmp_path),
            "--theta-solver", "random", "--z-solver", "random"]
    assert main([*args, "--dataset", "breast_cancer"]) == 0
    assert main([*args, "--dataset", "wine"]) != 0
    err = capsys.readouterr().err
    assert "records a different run" in err and "data.fingerprint" in err and "--no-resume" in err
    assert main([*args, "--dataset", "wine", "--no-resume"]) == 0
    assert (tmp_path / "journal-1.jsonl").exists()


CHILD = textwrap.dedent("""
    import sys
    from sklearn.datasets import load_breast_cancer
    from admm_automl import ADMM
    from admm_automl.testing import tiny_space

    X, y = load_breast_cancer(return_X_y=True)
    if __name__ == "__main__":
        # trials in worker processes (a killed serial run: test_a_serial_run_killed_...)
        ADMM(search_space=tiny_space(), theta_solver="random", z_solver="random", inner_iter=3,
             inner_iter_step=0, random_state=0, executor="process", cv=None,
             max_evals=int(sys.argv[2]),
             output_dir=sys.argv[1]).fit(X, y)
""")


def _records(path):
    return Journal.read(path) if path.exists() else []


def _children(pid: int) -> list[int]:
    """The process ids of ``pid``'s children and theirs: the workers' zygote and the workers
    (Linux's /proc; empty elsewhere)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
            children = [int(p) for p in f.read().split()]
    except OSError:
        return []
    return children + [p for child in children for p in _children(child)]


def _wait_gone(pids: list[int], seconds: float = 30.0) -> None:
    """Assert that the processes ``pids`` end within ``seconds`` (a worker whose driver died
    must not linger, holding memory and a core)."""
    end = time.monotonic() + seconds
    alive = list(pids)
    while alive and time.monotonic() < end:
        alive = [p for p in alive if os.path.exists(f"/proc/{p}")
                 and "zombie" not in _state(p)]
        time.sleep(0.05)
    assert not alive, f"worker processes {alive} outlived their killed run"


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            return next((line for line in f if line.startswith("State:")), "").lower()
    except OSError:
        return "zombie"


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="signals")
@pytest.mark.parametrize("signal_name,after", [("SIGKILL", 3), ("SIGKILL", 8), ("SIGTERM", 5)])
def test_a_run_killed_mid_search_resumes_without_losing_or_repeating_work(
        tmp_path, breast_cancer_full, signal_name, after):
    """A run with its trials in worker processes killed during the search (SIGKILL or SIGTERM,
    once ``after`` evaluations are journalled: between two trials or in one), then resumed:
    every evaluation the killed run recorded is kept (byte for byte), none is run again, its
    worker processes did not outlive it, and the finished history and predictions equal an
    uninterrupted run's."""
    X, Y = breast_cancer_full
    n, out = 20, tmp_path / "run"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    child = subprocess.Popen([sys.executable, str(script), str(out), str(n)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    journal, deadline = out / "journal.jsonl", time.monotonic() + 120
    while len(_records(journal)) < after and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    workers = _children(child.pid)
    assert workers or not os.path.isdir("/proc")  # the trial worker processes, to watch
    os.kill(child.pid, getattr(signal, signal_name))
    child.wait(timeout=30)
    killed = _records(journal)
    assert after <= len(killed) < n, f"the child was not killed mid-search ({len(killed)} records)"
    _wait_gone(workers)
    kept_lines = journal.read_text().splitlines()
    resumed = ADMM(**FAST, max_evals=n, output_dir=out).fit(X, Y)
    final = Journal.read(journal)
    assert journal.read_text().splitlines()[: len(kept_lines)] == [
        line for line in kept_lines if line.endswith("}")]  # nothing recorded was rewritten
    assert len(final) == n and resumed.n_evals_ == n
    assert [r["eval_id"] for r in final] == list(range(n))
    assert len({r["key"] for r in final}) == n  # no evaluation repeated
    assert resumed.history_["key"].tolist() == [r["key"] for r in final]
    assert resumed.history_["loss"].tolist() == [r["loss"] for r in final]
    straight = ADMM(**FAST, max_evals=n).fit(X, Y)
    assert resumed.history_[COMPARED].equals(straight.history_[COMPARED])
    assert np.isclose(resumed.best_loss_, straight.best_loss_)
    # the same model: the kept validation predictions of the killed run were in the directory
    assert resumed.ensemble_weights_ == straight.ensemble_weights_
    assert len(straight.ensemble_weights_) >= 2
    np.testing.assert_array_equal(resumed.predict_proba(X), straight.predict_proba(X))
    assert json.loads(journal.read_text().splitlines()[0])["run"]["space"]["name"] == "tiny"


SEGFAULT_CHILD = textwrap.dedent("""
    import sys
    from sklearn.datasets import load_breast_cancer
    from admm_automl import ADMM
    from admm_automl.testing import tiny_space

    X, y = load_breast_cancer(return_X_y=True)
    space = tiny_space({
        "segfault": {"class": "admm_automl.testing.SegfaultingClassifier"},
        "gnb": {"class": "sklearn.naive_bayes.GaussianNB",
                "hyperparameters": {"var_smoothing": {"type": "float", "low": 1e-10,
                                                      "high": 1e-6, "log": True,
                                                      "default": 1e-9}}},
    })
    if __name__ == "__main__":
        model = ADMM(search_space=space, theta_solver="random", z_solver="random", inner_iter=2,
                     inner_iter_step=0, random_state=0, executor="serial", cv=None,
                     max_evals=6, output_dir=sys.argv[1]).fit(X, y)
        print(model.n_evals_, model.n_failed_)
""")


@pytest.mark.skipif(os.name != "posix", reason="SIGSEGV")
def test_a_serial_trial_that_kills_the_process_says_so_on_standard_error(tmp_path):
    """Python's fatal-error report with the stack of the fit that crashed, not a bare exit
    status 139."""
    script = tmp_path / "child.py"
    script.write_text(SEGFAULT_CHILD)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONFAULTHANDLER"}
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "run")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGSEGV
    assert "Fatal Python error: Segmentation fault" in proc.stderr
    assert re.search(r"testing/estimators\.py\", line \d+ in fit\n", proc.stderr)
    assert re.search(r"evaluation/executors\.py\", line \d+ in _run_one\n", proc.stderr)


def _starts(journal):
    """The cache keys of the trial start marks of a journal file, in order."""
    return [json.loads(line)["started"]["key"] for line in journal.read_text().splitlines()
            if line.startswith('{"started"')]


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="SIGSEGV")
def test_a_serial_trial_that_kills_the_process_is_recorded_as_failed_on_resume(tmp_path):
    """Crash-only trials: a serial trial whose estimator segfaults takes the user's process with
    it; the run started it in the journal, so the same call again runs it once more (a first
    death may be a kill), and the call after its second crash records it as failed (not run a
    third time, which would crash every resume at the same pipeline) and finishes."""
    script, out = tmp_path / "child.py", tmp_path / "run"
    script.write_text(SEGFAULT_CHILD)
    crashes = 0
    for _ in range(8):
        proc = subprocess.run([sys.executable, str(script), str(out)], capture_output=True,
                              text=True, timeout=120)
        if proc.returncode == 0:
            break
        assert proc.returncode == -signal.SIGSEGV, proc.stderr[-2000:]
        crashes += 1
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert crashes >= 2, crashes  # the space's first segfaulting pipeline did crash two sessions
    records = Journal.read(out / "journal.jsonl")
    crashed = [r for r in records if "process died during this evaluation" in str(r["error"])]
    assert 2 * len(crashed) == crashes and all(r["status"] == "failed" for r in crashed)
    assert all(r["pipeline"].endswith("segfault") for r in crashed)
    starts = _starts(out / "journal.jsonl")
    assert all(starts.count(r["key"]) == 2 for r in crashed)  # started twice, never a third time
    assert len({r["key"] for r in records}) == len(records) == 6  # nothing recorded twice
    assert proc.stdout.split() == ["6", str(sum(r["status"] != "ok" for r in records))]


KILLED_SPACE = tiny_space({"nb": {"class": "admm_automl.testing.KilledAtFitNB", "hyperparameters": {
    "var_smoothing": {"type": "float", "low": 1e-9, "high": 1e-1, "log": True, "default": 1e-9}}}})
KILLED = {**FAST, "search_space": KILLED_SPACE}

KILLED_CHILD = textwrap.dedent("""
    import sys
    from sklearn.datasets import load_breast_cancer
    from admm_automl import ADMM
    from admm_automl.testing import tiny_space

    X, y = load_breast_cancer(return_X_y=True)
    space = tiny_space({"nb": {"class": "admm_automl.testing.KilledAtFitNB", "hyperparameters": {
        "var_smoothing": {"type": "float", "low": 1e-9, "high": 1e-1, "log": True,
                          "default": 1e-9}}}})
    ADMM(search_space=space, theta_solver="random", z_solver="random", inner_iter=3,
         inner_iter_step=0, random_state=0, executor="serial", cv=None,
         max_evals=int(sys.argv[2]), output_dir=sys.argv[1]).fit(X, y)
""")


def _killed_session(tmp_path, out, n, signal_name, at_fit):
    """Run the serial search of ``KILLED_CHILD`` in a process that ``signal_name`` kills in the
    middle of its ``at_fit``-th trial (:class:`~admm_automl.testing.KilledAtFitNB`)."""
    script = tmp_path / "killed_child.py"
    script.write_text(KILLED_CHILD)
    env = {**os.environ, KILL_AT_FIT: f"{signal_name} {at_fit}"}
    proc = subprocess.run([sys.executable, str(script), str(out), str(n)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -getattr(signal, signal_name), proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="signals")
@pytest.mark.parametrize("signal_name,at_fit", [("SIGKILL", 1), ("SIGKILL", 5), ("SIGTERM", 8)])
def test_a_serial_run_killed_mid_trial_resumes_to_the_uninterrupted_history(
        tmp_path, breast_cancer_full, signal_name, at_fit):
    """A kill costs nothing: a serial run killed in the middle of a trial (its start mark is the
    journal's last line) runs that trial again on resume, and finishes with the configurations,
    losses and model of a run that was never interrupted, as the README promises."""
    X, Y = breast_cancer_full
    n, out = 10, tmp_path / "run"
    _killed_session(tmp_path, out, n, signal_name, at_fit)
    journal = out / "journal.jsonl"
    assert len(Journal.read(journal)) == at_fit - 1  # killed in the at_fit-th trial ...
    assert journal.read_text().splitlines()[-1].startswith('{"started"')  # ... while it ran
    resumed = ADMM(**KILLED, max_evals=n, output_dir=out).fit(X, Y)
    straight = ADMM(**KILLED, max_evals=n).fit(X, Y)
    columns = COMPARED + [c for c in straight.history_ if c.startswith("param:")]
    assert (resumed.history_["status"] == "ok").all()
    assert resumed.history_[columns].equals(straight.history_[columns])
    assert resumed.best_eval_id_ == straight.best_eval_id_
    np.testing.assert_array_equal(resumed.predict_proba(X), straight.predict_proba(X))
    starts = _starts(journal)
    assert starts.count(starts[at_fit - 1]) == 2  # the killed trial was started once more


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="signals")
def test_a_serial_trial_killed_twice_is_recorded_failed_on_the_third_start(tmp_path,
                                                                           breast_cancer_full):
    """A second death of the same trial is no coincidence: the third session records it as
    failed, with an error that says so, instead of running it again, and goes on."""
    X, Y = breast_cancer_full
    n, out = 6, tmp_path / "run"
    _killed_session(tmp_path, out, n, "SIGKILL", 3)  # in the third trial
    _killed_session(tmp_path, out, n, "SIGKILL", 1)  # two replayed, the third run and killed
    journal = out / "journal.jsonl"
    assert len(Journal.read(journal)) == 2
    with pytest.warns(EvaluationFailedWarning, match="1 of 6 evaluated pipelines failed"):
        model = ADMM(**KILLED, max_evals=n, output_dir=out).fit(X, Y)
    records = Journal.read(journal)
    assert len(records) == n == model.n_evals_ and model.n_failed_ == 1
    failed = records[2]
    assert failed["status"] == "failed" and failed["loss"] == 1.0
    assert "process died during this evaluation in 2 sessions" in failed["error"]
    assert _starts(journal).count(failed["key"]) == 2  # not started a third time
    assert all(r["status"] == "ok" for r in records if r is not failed)


# ----------------------------------------------------------- damaged run files
@pytest.fixture(scope="module")
def finished_once(tmp_path_factory, breast_cancer_full):
    """A finished run with an ensemble, fitted once for the module (the tests damage copies)."""
    X, Y = breast_cancer_full
    folder = tmp_path_factory.mktemp("finished")
    first = ADMM(**FAST, max_evals=10, output_dir=folder).fit(X, Y)
    assert len(first.ensemble_weights_) >= 2
    return folder, first


@pytest.fixture
def finished(finished_once, tmp_path):
    """A finished run with an ensemble (its kept predictions in ``predictions/``): a copy of
    the module's run directory, which the test may damage, and the model fitted there."""
    import shutil

    folder, first = finished_once
    copy = tmp_path / "run"
    shutil.copytree(folder, copy)
    return copy, first


@pytest.mark.parametrize("damage", ["shape", "not numbers", "fifo", "deleted"])
@pytest.mark.timeout(60)
def test_a_lost_prediction_file_of_a_member_is_made_again_with_a_warning_naming_it(
        finished, damage, breast_cancer_full):
    """A kept prediction file of another shape, of something other than numbers, a FIFO (which
    is never opened: it would block) or a file deleted since its session wrote it is named in a
    warning (it used to end in a bare IndexError, or hang), and its evaluation is run again for
    the ensemble: the resumed run returns the uninterrupted run's ensemble and predictions."""
    folder, first = finished
    member = min(first.ensemble_weights_)
    path = folder / "predictions" / f"{member}.npy"
    path.unlink()
    if damage == "fifo":
        os.mkfifo(path)
    elif damage != "deleted":
        np.save(path, np.zeros(5) if damage == "shape" else np.array(["a", "b"]))
    X, Y = breast_cancer_full
    expected = {"shape": r"its shape is \(5,\)", "not numbers": "not an array of numbers",
                "fifo": "is a special file"}.get(damage)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = ADMM(**FAST, max_evals=10, output_dir=folder).fit(X, Y)
    said = [str(w.message) for w in caught if issubclass(w.category, RunDirectoryWarning)]
    if expected is None:  # nothing to read: a deleted file is simply made again
        assert said == []
    else:
        assert len(said) == 1 and re.search(rf"{re.escape(str(path))}.*{expected}.*treated as "
                                            rf"missing: evaluation {member} is evaluated again",
                                            said[0]), said
    assert again.ensemble_weights_ == first.ensemble_weights_
    np.testing.assert_array_equal(again.predict_proba(X), first.predict_proba(X))
    other = max(first.ensemble_weights_)
    assert np.load(path).shape == np.load(folder / "predictions" / f"{other}.npy").shape
    assert again.n_evals_ == 10 and len(Journal.read(folder / "journal.jsonl")) == 10


def test_a_lost_prediction_file_the_budget_has_no_room_to_make_again_is_named(
        finished, breast_cancer_full, monkeypatch):
    """When the time left cannot evaluate the member again, it is left out, and a warning
    names its file and says why."""
    from admm_automl.final.library import PredictionLibrary

    folder, first = finished
    member = min(first.ensemble_weights_)
    (folder / "predictions" / f"{member}.npy").unlink()
    real = PredictionLibrary.restore_lost
    monkeypatch.setattr(PredictionLibrary, "restore_lost",
                        lambda self, records, space, executor, left: real(
                            self, records, space, executor, 0.0))  # no time left
    X, Y = breast_cancer_full
    with pytest.warns(RunDirectoryWarning, match=rf"evaluation {member} \(.*{member}\.npy\) "
                                                 r"are missing from the run directory or "
                                                 r"damaged .* and the time budget had no room"):
        again = ADMM(**FAST, max_evals=10, output_dir=folder).fit(X, Y)
    assert member not in again.ensemble_weights_


def _edit_record(path, eval_id, edit):
    """Apply ``edit`` to the journal record of ``eval_id``; returns its line number."""
    lines = path.read_text(encoding="utf-8").splitlines()
    n = next(i for i, line in enumerate(lines) if json.loads(line).get("eval_id") == eval_id)
    record = json.loads(lines[n])
    edit(record)
    lines[n] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return n + 1


@pytest.mark.parametrize("edit,expected", [
    (lambda r: r.pop("fidelity"), "it has no 'fidelity'"),
    (lambda r: r.update(eval_id="../../x"), r"its eval_id '\.\./\.\./x' is not a whole number"),
    (lambda r: r.update(status="done"), "'done' is not a valid Status"),
])
def test_a_damaged_journal_record_is_refused_naming_its_line(tmp_path, edit, expected,
                                                             breast_cancer_full):
    """A record missing a key, or with an eval_id that is not a number, used to end the resume
    with a bare KeyError or ValueError: now a ResumeError names the file, the line and what is
    wrong."""
    X, Y = breast_cancer_full
    ADMM(**FAST, max_evals=4, output_dir=tmp_path, ensemble_size=0).fit(X, Y)
    line = _edit_record(tmp_path / "journal.jsonl", 2, edit)
    with pytest.raises(ResumeError, match=rf"journal\.jsonl, line {line}: .*{expected}"):
        ADMM(**FAST, max_evals=4, output_dir=tmp_path, ensemble_size=0).fit(X, Y)
