"""The Dask executor on a real ``distributed.LocalCluster`` bound to 127.0.0.1 (two single-threaded
worker processes, started once for the module): the same losses and history as the serial and
process executors, timeouts, memory limit, raising and NaN pipelines, a Dask worker killed
mid-trial, a client given by the user, a scheduler address, and a local cluster of its own.

Most tests drive the executor with tests/evaluation/fault_probe.py's task, whose trial processes start in a
fraction of a second; the pipeline tests use real scikit-learn pipelines on breast-cancer data.
Every test on a cluster is marked ``slow`` (about 35 s together on two cores); the parameter checks
run in the fast suite.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from multiprocessing import resource_tracker

import pytest

distributed = pytest.importorskip(
    "distributed", reason="the Dask executor needs dask[distributed]: pip install -e '.[dask]'"
)

import psutil  # noqa: E402  (a dependency of distributed)
from sklearn.datasets import load_breast_cancer  # noqa: E402

from admm_automl import ADMM  # noqa: E402
from admm_automl.evaluation import (  # noqa: E402
    DaskExecutor,
    PipelineObjective,
    SerialExecutor,
    TrialContext,
    get_metric,
    make_splits,
)
from admm_automl.evaluation.executors import TIME_LIMIT  # noqa: E402
from admm_automl.evaluation.dask_executor import restore_environ  # noqa: E402
from admm_automl.evaluation.policy import TrialPolicy  # noqa: E402
from admm_automl.exceptions import (  # noqa: E402
    InvalidParameterError,
    MissingDependencyError,
    WorkerError,
)
from admm_automl.journal import Journal  # noqa: E402
from admm_automl.records import Request, Status  # noqa: E402
from admm_automl.testing import tiny_space  # noqa: E402
from fault_probe import OK, RAISE, SEGFAULT, ProbeTask, job  # noqa: E402

X, Y = load_breast_cancer(return_X_y=True)

# The tests on the module's cluster or timed against deadlines are marked serial: `make test` runs
# them alone, after the rest; the checks of parameters and addresses run beside other tests.
serial = pytest.mark.serial


SPACE = tiny_space({
    "gnb": {"class": "sklearn.naive_bayes.GaussianNB"},
    "raiser": {"class": "admm_automl.testing.RaisingClassifier"},
    "nan": {"class": "admm_automl.testing.NaNClassifier"},
    "sleeper": {"class": "admm_automl.testing.SleepingClassifier"},
    "hog": {"class": "admm_automl.testing.MemoryHogClassifier"},
}).for_task("classification")
THETA = SPACE.encoding.initial_theta
#: a space whose pipelines fit in milliseconds (scaler x Gaussian NB with its smoothing), for fits
GNB = tiny_space({"gnb": {"class": "sklearn.naive_bayes.GaussianNB", "hyperparameters": {
    "var_smoothing": {"type": "float", "low": 1e-10, "high": 1e-6, "log": True, "default": 1e-9}}}})


def z_of(name, scaler=0):
    return (scaler, SPACE.modules[1].index(name))


def context():
    splits = make_splits(Y, classification=True, cv=None, validation_size=0.2, seed=0)
    return TrialContext(SPACE, X, Y, splits, get_metric(None, "classification", "binary"))


@pytest.fixture(scope="module")
def client():
    """A client of a loopback cluster of two single-threaded worker processes (not made the
    default client, so that the tests that start a cluster of their own get one)."""
    environ = dict(os.environ)
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
    )
    client = distributed.Client(cluster, set_as_default=False)
    yield client
    client.close()
    cluster.close()
    restore_environ(environ)  # what the nannies wrote into it (OMP_NUM_THREADS=1, ...)


@pytest.fixture
def probe(client):
    """A started executor of the probe task on the module's cluster; closed after the test."""
    executors = []

    def make(**kwargs):
        executor = DaskExecutor(client=client, **kwargs)
        executors.append(executor)
        executor.start(ProbeTask())
        return executor

    yield make
    for executor in executors:
        executor.close()


def worker_pids(client):
    """Dask worker address -> process id."""
    return client.run(os.getpid)


def parent(pid):
    return psutil.Process(pid).ppid()


# ---------------------------------------------------------------------------- pipelines
@serial
@pytest.mark.slow
@pytest.mark.timeout(120)
def test_pipelines_fail_time_out_and_run_out_of_memory_as_in_the_process_pool(client, tmp_path):
    requests = [Request(z_of("gnb"), THETA), Request(z_of("gnb", scaler=1), THETA),
                Request(z_of("raiser"), THETA), Request(z_of("nan"), THETA),
                Request(z_of("sleeper"), THETA), Request(z_of("hog"), THETA)]
    executor = DaskExecutor(client=client, memory_limit_mb=1500)
    objective = PipelineObjective(context(), executor, Journal(tmp_path / "journal.jsonl"),
                                  worst_loss=1.0, policy=TrialPolicy(trial_timeout=3.0))
    try:
        observed = objective(requests)
        (again,) = objective([requests[0]])
        # the time budget's end stops a trial as a timeout would: cancelled, not a failure
        (stopped,) = objective([Request(z_of("sleeper", scaler=1), THETA)], time_left=1.0)
    finally:
        objective.close()
    assert stopped.status is Status.CANCELLED and stopped.budget_stop
    good, scaled, raised, nan, sleeper, hog = observed
    assert [o.status for o in observed] == [Status.OK, Status.OK, Status.FAILED, Status.FAILED,
                                            Status.TIMEOUT, Status.MEMOUT]
    assert "RuntimeError: this estimator always fails" in raised.error
    assert nan.error.startswith("ValueError: the pipeline produced non-finite values")
    # its 60 s cut short: the 3 s timeout plus a generous margin for a busy machine
    assert sleeper.error == f"stopped after 3 s: {TIME_LIMIT}" and sleeper.duration < 30
    assert [o.loss for o in (raised, nan, sleeper, hog)] == [1.0] * 4
    # the losses are the serial executor's
    serial = PipelineObjective(context(), SerialExecutor(), Journal(), worst_loss=1.0)
    assert [o.loss for o in serial(requests[:4])] == [o.loss for o in observed[:4]]
    # the repeat came from the cache; the driver's journal has every evaluation, in order
    assert again.cached and again.loss == good.loss
    records = Journal.read(tmp_path / "journal.jsonl")
    assert [r["status"] for r in records] == ["ok", "ok", "failed", "failed", "timeout", "memout",
                                              "cancelled"]
    assert [r["eval_id"] for r in records] == list(range(7))


@serial
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_seeded_search_on_a_scheduler_address_has_the_process_pools_history(client):
    def search(**executor):
        # in batches a seed fixes a parallel run's history (asynchronously, the order in
        # which trials end decides it)
        model = ADMM(search_space=GNB, theta_solver="random", z_solver="random",
                     max_evals=8, inner_iter=2, inner_iter_step=0, random_state=0,
                     asynchronous=False, **executor)
        return model.fit(X, Y).history_

    # n_jobs=1, but the cluster has two threads: the search asks for batches of two
    with distributed.get_task_stream(client) as stream:
        dask = search(executor="dask", dask_address=client.scheduler.address)
    process = search(executor="process", n_jobs=2)
    trials = [t for t in stream.data if t["key"].startswith("trial-")]
    assert len(trials) == 8 and {t["worker"] for t in trials} == set(worker_pids(client))
    assert list(dask["loss"]) == list(process["loss"])
    assert list(dask["pipeline"]) == list(process["pipeline"])
    assert list(dask["eval_id"]) == list(range(8))



# ---------------------------------------------------------------------------- the probe task
@serial
@pytest.mark.slow
@pytest.mark.timeout(60)
def test_trials_run_in_processes_of_the_given_clients_workers_which_stays_open(client, probe):
    executor = probe()
    assert executor.n_workers == 2
    results = executor.run([job(OK, 0.3, 0.1), job(OK, 0.3, 0.2), job(OK, 0.0, 0.3)], [None] * 3)
    assert [(r["status"], r["loss"]) for r in results] == [("ok", 0.1), ("ok", 0.2), ("ok", 0.3)]
    # each trial's own wall time: the sleeping ones at least their 0.3 s (a busy machine only
    # stretches that), the third, which starts ~0.3 s into the batch, next to nothing
    durations = [r["duration"] for r in results]
    assert all(0.3 <= d < 5.0 for d in durations[:2]) and durations[2] < 0.2, durations
    trial_pids = {r["constraints"]["pid"] for r in results}  # forked by a Dask worker's zygote
    assert {parent(parent(pid)) for pid in trial_pids} <= set(worker_pids(client).values())
    executor.close()
    deadline = time.monotonic() + 30  # the workers end their trial processes (busy machine: slow)
    while any(psutil.pid_exists(p) and psutil.Process(p).status() != "zombie" for p in trial_pids):
        assert time.monotonic() < deadline, "trial processes left running after close"
        time.sleep(0.05)
    assert client.submit(sum, [1, 2]).result() == 3  # the user's client is still open


@serial
@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_raising_and_a_crashing_trial_are_recorded_and_the_worker_goes_on(probe):
    executor = probe()
    raised, crashed = executor.run([job(RAISE), job(SEGFAULT)], [None, None])
    assert (raised["status"], raised["error"]) == ("failed", "RuntimeError: probe failure")
    assert "fault_probe.py" in raised["traceback"]
    assert crashed["status"] == "failed"
    assert "died during this trial: killed by signal 11 (SIGSEGV)" in crashed["error"]
    results = executor.run([job(OK, 0.0, 0.5), job(OK, 0.0, 0.6)], [None, None])
    assert [r["loss"] for r in results] == [0.5, 0.6]


@serial
@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_trial_past_its_timeout_is_stopped_and_frees_its_worker(probe):
    executor = probe()
    slow, quick = executor.run([job(OK, 60.0), job(OK, 0.2, 0.2)], [0.5, 30.0])
    assert (slow["status"], slow["error"]) == ("timeout", f"stopped after 0.5 s: {TIME_LIMIT}")
    # margin for a busy machine; a timeout that never fired would take the trial's 60 s
    assert 0.5 <= slow["duration"] < 10
    assert (quick["status"], quick["loss"]) == ("ok", 0.2)
    # both workers take trials again at once: no 60 s trial is left running on either
    started = time.monotonic()
    results = executor.run([job(OK, 1.0, 1.0), job(OK, 1.0, 2.0)], [30.0, 30.0])
    assert [r["loss"] for r in results] == [1.0, 2.0]
    assert len({parent(parent(r["constraints"]["pid"])) for r in results}) == 2
    # two 1 s trials side by side, with room for a busy machine; a 60 s trial left running would
    # hold its worker for nearly a minute
    assert time.monotonic() - started < 30


@serial
@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_dask_worker_killed_mid_trial_has_its_trial_run_again_elsewhere(client, probe):
    executor = probe()
    before = worker_pids(client)
    killed = {}

    def kill_a_busy_worker():
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            busy = [a for a, keys in client.processing().items()
                    if any(str(k).startswith("trial-") for k in keys)]
            if len(busy) == 2:
                time.sleep(0.5)  # well inside the 3 s trials
                killed["address"] = busy[0]
                os.kill(before[busy[0]], signal.SIGKILL)
                return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_a_busy_worker, daemon=True)
    killer.start()
    started = time.monotonic()
    results = executor.run([job(OK, 3.0, 0.1), job(OK, 3.0, 0.2)], [None, None])
    elapsed = time.monotonic() - started
    killer.join()
    assert killed, "no worker was seen in a trial"
    # retried: both trials finished with their own result, one of them a second time
    assert [(r["status"], r["loss"]) for r in results] == [("ok", 0.1), ("ok", 0.2)]
    assert 3.5 < elapsed < 60
    pid = before[killed["address"]]
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"
    assert all(parent(parent(r["constraints"]["pid"])) != pid for r in results)
    # the nanny replaced the worker; the task reached the new one too; the run goes on with both
    client.wait_for_workers(2, timeout=30)
    has_task = client.run(lambda dask_worker: any(
        name.startswith("admm-automl-task-") for name in dask_worker.plugins))
    assert list(has_task.values()) == [True, True]
    results = executor.run([job(OK, 0.0, 0.3), job(OK, 0.0, 0.4)], [None, None])
    assert [(r["status"], r["loss"]) for r in results] == [("ok", 0.3), ("ok", 0.4)]


@serial
@pytest.mark.slow
@pytest.mark.timeout(120)
def test_asynchronous_trials_on_a_cluster_of_dask_programs_survive_a_killed_worker(tmp_path):
    """A cluster as a user starts one: the ``dask scheduler`` and ``dask worker`` programs as
    separate processes. Trials are submitted one at a time, two in flight; a Dask worker killed
    mid-trial is replaced by its nanny and its trial run again: every trial ends with its own
    result, none is lost."""
    import subprocess

    dask = os.path.join(os.path.dirname(sys.executable), "dask")
    if not os.path.exists(dask):
        pytest.skip("the dask command-line program is not installed")
    scheduler_file = tmp_path / "scheduler.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    scheduler = subprocess.Popen(
        [dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address", ":0",
         "--scheduler-file", str(scheduler_file)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    workers = None
    try:
        deadline = time.monotonic() + 30
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        workers = subprocess.Popen(
            [dask, "worker", "--scheduler-file", str(scheduler_file), "--nworkers", "2",
             "--nthreads", "1", "--host", "127.0.0.1", "--dashboard-address", ":0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        address = json.loads(scheduler_file.read_text())["address"]
        executor = DaskExecutor(address=address)
        with distributed.Client(address, set_as_default=False) as watcher:
            watcher.wait_for_workers(2, timeout=30)
            executor.start(ProbeTask())
            try:
                pids = worker_pids(watcher)
                tickets = {executor.submit(job(OK, 2.0, loss)): loss for loss in (0.1, 0.2)}
                done = {}
                killed = False
                waiting = [0.3, 0.4]  # submitted as workers free up
                while len(done) < 4:
                    if not killed:
                        busy = [a for a, keys in watcher.processing().items()
                                if any(str(k).startswith("trial-") for k in keys)]
                        if busy:
                            time.sleep(0.5)  # inside the 2 s trial
                            os.kill(pids[busy[0]], signal.SIGKILL)
                            killed = True
                    for ticket, result in executor.wait(timeout=0.5):
                        done[ticket] = result
                        if waiting:
                            loss = waiting.pop(0)
                            tickets[executor.submit(job(OK, 0.5, loss))] = loss
            finally:
                executor.close()
        assert killed
        assert sorted((r["status"], r["loss"]) for r in done.values()) == [
            ("ok", 0.1), ("ok", 0.2), ("ok", 0.3), ("ok", 0.4)]
        assert {t: r["loss"] for t, r in done.items()} == tickets  # each under its own ticket
    finally:
        for process in (workers, scheduler):
            if process is not None:
                process.terminate()
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()


# ---------------------------------------------------------------------------- start-up
@serial
@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_memory_limit_too_low_for_the_trial_processes_stops_start(client):
    executor = DaskExecutor(client=client, memory_limit_mb=32)
    with pytest.raises(WorkerError, match=r"^Dask worker tcp://127\.0\.0\.1:\d+: worker processes "
                       r"cannot start: memory_limit=32 MiB is below the \d+ MiB"):
        executor.start(ProbeTask())
    assert executor.client is None
    assert client.submit(sum, [1]).result() == 1  # the given client is left open


@pytest.mark.timeout(60)
def test_an_address_with_no_scheduler_is_a_clear_error():
    with pytest.raises(WorkerError, match=r"cannot connect to the Dask scheduler at "
                       r"'tcp://127\.0\.0\.1:9'"):
        DaskExecutor(address="tcp://127.0.0.1:9", start_timeout=1.0).start(ProbeTask())


@serial  # its check for left-over processes counts any child a test beside it would start
@pytest.mark.slow
@pytest.mark.timeout(120)
def test_fit_starts_a_local_cluster_of_n_jobs_workers_and_closes_it():
    me = psutil.Process()
    # Python's multiprocessing helper, started once on the first spawn and kept until the
    # process exits, is not the cluster's to close: start it first so it is in `before`
    resource_tracker.ensure_running()
    before = {p.pid for p in me.children(recursive=True)}
    environ = dict(os.environ)
    model = ADMM(search_space=GNB, theta_solver="random", z_solver="random",
                 max_evals=3, inner_iter=1, inner_iter_step=0, executor="dask", n_jobs=1,
                 random_state=0).fit(X, Y)
    assert model.n_evals_ == 3 and set(model.history_["status"]) == {"ok"}
    assert dict(os.environ) == environ  # not OMP_NUM_THREADS=1 for every later process
    deadline = time.monotonic() + 30  # processes end slowly on a busy machine; a leak never does
    while {p.pid for p in me.children(recursive=True)} - before:
        assert time.monotonic() < deadline, "the local cluster's processes outlived fit"
        time.sleep(0.1)


def test_parameters_are_checked():
    with pytest.raises(InvalidParameterError, match="not both"):
        DaskExecutor(client=object(), address="tcp://127.0.0.1:8786")
    with pytest.raises(InvalidParameterError, match="n_workers must be >= 1, got 0"):
        DaskExecutor(n_workers=0)
    with pytest.raises(InvalidParameterError, match="dask_address='tcp://127.0.0.1:8786' needs "
                       "executor='dask', got executor='auto'"):
        ADMM(dask_address="tcp://127.0.0.1:8786", max_evals=1).fit(X[:50], Y[:50])
    with pytest.raises(InvalidParameterError, match="dask_address"):
        ADMM(executor="dask", dask_address="").fit(X[:50], Y[:50])


def test_without_distributed_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    with pytest.raises(MissingDependencyError, match=r"executor='dask' needs Dask's distributed "
                       r"scheduler: pip install 'admm-automl\[dask\]'"):
        DaskExecutor().start(ProbeTask())
