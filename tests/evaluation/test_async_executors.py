"""The executors' asynchronous contract (``submit`` / ``wait`` / ``pending``), the same checks for
the serial executor, the process pool and a Dask cluster: a job starts when a worker is free and
comes back when it ends, not when the slowest of a batch ends; ``run`` keeps the results of jobs
submitted before it; timeouts and deadlines hold as in ``run``.

The jobs are tests/evaluation/fault_probe.py's (they sleep ``fidelity`` seconds and return loss
``θ[0]``); the durations are long enough apart (0.3 s against 2 s) for a loaded machine."""

from __future__ import annotations

import time

import pytest

from admm_automl.evaluation import ProcessExecutor, SerialExecutor
from fault_probe import OK, RAISE, ProbeTask, job

# timing-sensitive (which trial ends first): `make test` runs them alone, after the rest
pytestmark = pytest.mark.serial


@pytest.fixture(scope="module", params=["process", "dask"])
def parallel(request):
    """A started two-worker executor of each kind, shared by the module's tests (each leaves
    nothing pending)."""
    if request.param == "process":
        executor = ProcessExecutor(2)
    else:
        pytest.importorskip("distributed", reason="needs dask[distributed]")
        from admm_automl.evaluation import DaskExecutor

        executor = DaskExecutor(n_workers=2)
    executor.start(ProbeTask())
    yield executor
    assert executor.pending == 0
    executor.close()


def losses(done):
    return [(r["status"], r["loss"]) for _, r in done]


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_a_job_ends_as_soon_as_it_is_done_not_with_the_slowest_of_its_batch(parallel):
    slow = parallel.submit(job(OK, 2.0, 0.9))
    quick = parallel.submit(job(OK, 0.3, 0.1))
    assert parallel.pending == 2
    started = time.monotonic()
    first = parallel.wait()
    assert [t for t, _ in first] == [quick] and losses(first) == [("ok", 0.1)]
    assert time.monotonic() - started < 2.0  # not held back by the 2 s trial
    # the freed worker takes the next job while the slow one still runs
    again = parallel.submit(job(OK, 0.3, 0.2))
    second = parallel.wait()
    assert [t for t, _ in second] == [again] and losses(second) == [("ok", 0.2)]
    assert [t for t, _ in parallel.wait()] == [slow]
    assert parallel.pending == 0 and parallel.wait() == []


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_wait_with_a_timeout_returns_nothing_when_no_job_ended_yet(parallel):
    ticket = parallel.submit(job(OK, 2.0, 0.4))
    assert parallel.wait(timeout=0.2) == []
    assert parallel.pending == 1
    assert [(t, r["loss"]) for t, r in parallel.wait()] == [(ticket, 0.4)]


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_run_keeps_the_results_of_jobs_submitted_before_it(parallel):
    early = parallel.submit(job(OK, 0.2, 0.7))
    results = parallel.run([job(OK, 0.5, 0.1), job(RAISE)], [None, None])
    assert [r["status"] for r in results] == ["ok", "failed"] and results[0]["loss"] == 0.1
    assert [(t, r["loss"]) for t, r in parallel.wait()] == [(early, 0.7)]
    assert parallel.pending == 0


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_a_submitted_job_past_its_timeout_is_stopped_and_frees_its_worker(parallel):
    stuck = parallel.submit(job(OK, 60.0, 0.5), timeout=0.5)
    done = []
    started = time.monotonic()
    while len(done) < 1:
        done += parallel.wait()
    assert [t for t, _ in done] == [stuck] and done[0][1]["status"] == "timeout"
    assert time.monotonic() - started < 0.5 + 15  # the Dask driver's grace at most
    assert losses([(None, r) for r in parallel.run([job(OK, 0.0, 0.3)], [None])]) == [("ok", 0.3)]


@pytest.mark.timeout(60)
def test_a_job_still_queued_at_its_deadline_is_cancelled_in_the_process_pool():
    executor = ProcessExecutor(1)
    executor.start(ProbeTask())
    try:
        busy = executor.submit(job(OK, 1.0, 0.1))
        queued = executor.submit(job(OK, 0.0, 0.2), deadline=time.monotonic() + 0.3)
        done = dict(executor.wait())
        while len(done) < 2:
            done.update(executor.wait())
        assert done[busy]["status"] == "ok"
        assert done[queued]["status"] == "cancelled" and done[queued]["budget_stop"]
    finally:
        executor.close()


def test_the_serial_executor_runs_a_submitted_job_when_waited_for_oldest_first():
    executor = SerialExecutor()
    executor.start(ProbeTask())
    first, second = executor.submit(job(OK, 0.0, 0.1)), executor.submit(job(RAISE))
    assert executor.pending == 2
    assert [(t, r["loss"]) for t, r in executor.wait()] == [(first, 0.1)]
    [(ticket, result)] = executor.wait()
    assert ticket == second and result["status"] == "failed" and "probe failure" in result["error"]
    assert executor.pending == 0 and executor.wait() == []
