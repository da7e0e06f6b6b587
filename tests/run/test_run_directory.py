"""The run directory under stress: one writer at a time (a second fit on a directory in use is
refused at once with the holder's process id, and a holder killed with SIGKILL leaves no stale
lock), and a directory that cannot be written (a full disk) names its file and loses no model."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from admm_automl import ADMM
from admm_automl.exceptions import InvalidParameterError, ResumeError, RunLockedError
from admm_automl.journal import Journal
from admm_automl.run.lock import HOLDER_FILE, run_lock
from admm_automl.testing import tiny_space

FAST = dict(search_space=tiny_space(), theta_solver="random", z_solver="random", inner_iter=3,
            inner_iter_step=0, random_state=0, executor="serial", cv=None, max_evals=4)


@pytest.fixture
def holder(tmp_path):
    """A process that holds ``tmp_path``'s lock until it is killed."""
    code = textwrap.dedent(f"""
        import sys, time
        from admm_automl.run.lock import run_lock
        with run_lock({str(tmp_path)!r}):
            print("held", flush=True)
            time.sleep(120)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL")
def test_a_second_fit_is_refused_with_the_holders_pid_and_a_killed_holder_frees_it(
        tmp_path, holder, breast_cancer_full):
    X, y = breast_cancer_full
    with pytest.raises(RunLockedError, match=rf"in use by process {holder.pid} on "):
        ADMM(**FAST, output_dir=tmp_path).fit(X, y)
    assert not (tmp_path / "journal.jsonl").exists()  # refused before the journal was opened
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    model = ADMM(**FAST, output_dir=tmp_path).fit(X, y)
    assert model.n_evals_ == 4
    assert [r["eval_id"] for r in Journal.read(tmp_path / "journal.jsonl")] == [0, 1, 2, 3]
    assert not (tmp_path / HOLDER_FILE).exists()  # the holder's note goes with the lock


def test_the_lock_is_released_when_fit_raises(tmp_path, breast_cancer_full):
    X, y = breast_cancer_full
    ADMM(**FAST, output_dir=tmp_path).fit(X, y)
    with pytest.raises(ResumeError):  # raised inside the lock: the journal is another run's
        ADMM(**{**FAST, "random_state": 1}, output_dir=tmp_path).fit(X, y)
    with run_lock(tmp_path):  # not held by the failed fit
        with pytest.raises(RunLockedError, match=rf"process {os.getpid()}"):
            with run_lock(tmp_path):  # nor re-entrant: two fits in one process conflict too
                pass


def test_an_output_dir_that_is_a_file_is_refused(tmp_path, breast_cancer_full):
    X, y = breast_cancer_full
    (tmp_path / "f").write_text("")
    with pytest.raises(InvalidParameterError, match="is a file"):
        ADMM(**FAST, output_dir=tmp_path / "f").fit(X, y)


def test_a_run_directory_that_cannot_be_written_at_the_end_keeps_the_model(tmp_path,
                                                                           breast_cancer_full):
    """A full disk at the end of fit: a warning names the file and fit returns the fitted model
    (it used to raise a bare OSError without a path and lose it)."""
    from admm_automl.exceptions import RunDirectoryWarning

    X, y = breast_cancer_full
    (tmp_path / "trace.csv").mkdir()  # the write fails there, with pandas' own error
    model = ADMM(**FAST, output_dir=tmp_path)
    with pytest.warns(RunDirectoryWarning, match=r"could not be written at the end of fit "
                      r"\(.*trace\.csv.*\); the fitted model is kept in memory"):
        assert model.fit(X, y) is model
    assert model.predict(X).shape == (len(y),)


@pytest.mark.skipif(os.name != "posix", reason="RLIMIT_FSIZE")
def test_a_journal_that_cannot_grow_names_its_file(tmp_path):
    """A disk full mid-search (here a file-size limit, EFBIG): the error names the journal."""
    code = textwrap.dedent(f"""
        import resource, signal
        from sklearn.datasets import load_breast_cancer
        from admm_automl import ADMM
        from admm_automl.testing import tiny_space
        X, y = load_breast_cancer(return_X_y=True)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (6000, 6000))
        ADMM(search_space=tiny_space(), theta_solver="random", z_solver="random",
             executor="serial", cv=None, max_evals=40, random_state=0,
             output_dir={str(tmp_path)!r}).fit(X, y)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]  # what the user reads: not masked by close()
    assert last.startswith("OSError: [Errno 27] cannot append to the journal: File too large: ")
    assert str(tmp_path / "journal.jsonl") in last


#: the files a fit and its report write in a run directory, and the folders they write into
PLANTED = ["summary.json", "lock.json", "trace.csv", "config.resolved.yaml", "best_pipeline.pkl",
           "journal.jsonl", ".lock", "predictions/0.npy", "predictions/0.npy.partial",
           "report.html", "report.md", "predictions", "report_files"]


@pytest.mark.skipif(os.name != "posix", reason="symbolic links")
@pytest.mark.parametrize("name", PLANTED)
def test_a_link_planted_in_the_run_directory_is_never_followed(tmp_path, name, capsys,
                                                               breast_cancer_full):
    """Someone who can write in a shared run directory plants a symbolic link where the run
    writes a file (or a folder): the fit and its report either refuse it, naming it, or replace
    the link with their own file; the file it points to is never written (it used to be
    overwritten)."""
    pytest.importorskip("matplotlib")
    from admm_automl.cli import main
    from admm_automl.exceptions import RunDirectoryError

    X, y = breast_cancer_full
    run = tmp_path / "run"
    (run / "predictions").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = "." not in name
    target = outside if folder else outside / "precious.txt"
    for file in ([outside / "0.npy", outside / "convergence.png"] if folder else [target]):
        file.write_text("precious\n")
    before = {p.name: p.read_bytes() for p in outside.iterdir()}
    if name == "predictions":
        (run / name).rmdir()
    (run / name).symlink_to(target, target_is_directory=folder)
    try:
        ADMM(**FAST, output_dir=run).fit(X, y)
    except RunDirectoryError as err:
        refused = str(err)
    else:  # the command line's report: an error is one line on stderr
        refused = None if main(["report", str(run)]) == 0 else capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in outside.iterdir()} == before  # nothing written there
    if name in ("journal.jsonl", ".lock", "predictions"):  # used in place: refused at once
        assert refused is not None and f"{str(run / name)!r} is a symbolic link" in refused
    elif name == "report_files":  # the report's figures
        assert refused is not None and f"{str(run / name)!r} is a symbolic link" in refused
    elif name.endswith(".partial"):  # no longer a name the run writes to
        assert refused is None and (run / name).is_symlink()
    else:  # written whole and renamed onto the name: the link itself is replaced
        assert refused is None and not (run / name).is_symlink()
        assert (run / name).is_file() or name == HOLDER_FILE  # it goes with the lock


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs")
@pytest.mark.timeout(60)
def test_a_fifo_where_the_journal_should_be_is_refused_without_blocking(tmp_path,
                                                                         breast_cancer_full):
    """Opening a FIFO blocks until a writer comes: the journal's type is checked first."""
    from admm_automl.exceptions import RunDirectoryError

    X, y = breast_cancer_full
    os.mkfifo(tmp_path / "journal.jsonl")
    with pytest.raises(RunDirectoryError, match=r"journal\.jsonl' is a special file"):
        ADMM(**FAST, output_dir=tmp_path).fit(X, y)


@pytest.mark.parametrize("ensemble_size", [10, 0], ids=["ensemble", "single pipeline"])
def test_the_run_directorys_model_predicts_what_the_estimator_predicts(tmp_path, breast_cancer,
                                                                      ensemble_size):
    """``model.pkl`` is the model ``predict`` uses (an ensemble here, or the best pipeline), so
    a user deploys what was scored: loaded, it predicts the same labels and probabilities."""
    import pickle

    import joblib
    import numpy as np

    from admm_automl.testing.spaces import diverse_space

    X, y = breast_cancer
    labels = np.where(y == 1, "yes", "no")
    settings = {**FAST, "max_evals": 14, "inner_iter": 2, "search_space": diverse_space()}
    model = ADMM(**settings, ensemble_size=ensemble_size, output_dir=tmp_path).fit(X, labels)
    assert (model.ensemble_ is not None) == bool(ensemble_size)  # both cases are met
    with open(tmp_path / "model.pkl", "rb") as fh:
        loaded = pickle.load(fh)
    predictions = model.predict(X)
    assert set(predictions) == {"no", "yes"}
    np.testing.assert_array_equal(loaded.predict(X), predictions)
    np.testing.assert_array_equal(joblib.load(tmp_path / "model.pkl").predict(X), predictions)
    np.testing.assert_allclose(loaded.predict_proba(X), model.predict_proba(X))


def test_the_run_directorys_model_predicts_the_same_in_a_fresh_process(tmp_path, breast_cancer):
    """What a deployment does: another Python process, which never ran the search, loads
    ``model.pkl`` and predicts the same probabilities (nothing it needs lives only in the
    fitting process, such as a class made at run time or a space registered in memory)."""
    import subprocess
    import sys

    import numpy as np

    from admm_automl.testing.spaces import diverse_space

    X, y = breast_cancer
    model = ADMM(**{**FAST, "max_evals": 10, "inner_iter": 2, "search_space": diverse_space()},
                 output_dir=tmp_path / "run").fit(X, y)
    np.save(tmp_path / "X.npy", np.asarray(X))
    script = ("import sys, joblib, numpy as np; model = joblib.load(sys.argv[1]); "
              "np.save(sys.argv[3], model.predict_proba(np.load(sys.argv[2])))")
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "run" / "model.pkl"),
                    str(tmp_path / "X.npy"), str(tmp_path / "p.npy")], check=True, timeout=120)
    np.testing.assert_array_equal(np.load(tmp_path / "p.npy"), model.predict_proba(X))


@pytest.mark.skipif(os.name != "posix", reason="flock")
def test_a_file_system_without_locks_is_named_instead_of_a_bare_os_error(tmp_path, monkeypatch):
    """NFS without its lock service answers flock with ENOLCK."""
    import errno
    import fcntl

    from admm_automl.exceptions import RunDirectoryError

    def no_locks(fd, operation):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(fcntl, "flock", no_locks)
    with pytest.raises(RunDirectoryError, match=r"output_dir .* is on a file system \(\w+, "
                                                r"mounted at /.*\) that cannot lock files "
                                                r"\(ENOLCK: No locks available; NFS"):
        with run_lock(tmp_path):
            pass
