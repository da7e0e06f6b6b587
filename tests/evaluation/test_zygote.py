"""The zygote that forks the process pool's workers (admm_automl/evaluation/zygote.py): one per
setting of the thread caps, kept between pools, the parent's environment in every worker, and a
zygote that dies or cannot start is replaced or named."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from admm_automl.evaluation import ProcessExecutor
from admm_automl.exceptions import WorkerError
from fault_probe import ProbeTask, job


def parent(pid):
    return int(Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].split()[1])


def started(n_workers=1, **kwargs):
    executor = ProcessExecutor(n_workers, **kwargs)
    executor.start(ProbeTask())
    return executor


@pytest.mark.timeout(60)
def test_the_workers_of_successive_pools_come_from_one_zygote_not_the_parent():
    first = started(2)
    try:
        zygotes = {parent(pid) for pid in first.worker_pids()}
    finally:
        first.close()
    second = started(1)
    try:
        assert {parent(pid) for pid in second.worker_pids()} == zygotes
    finally:
        second.close()
    (zygote,) = zygotes
    assert zygote != os.getpid() and parent(zygote) == os.getpid()


@pytest.mark.timeout(60)
def test_a_worker_has_the_environment_of_the_parent_when_it_was_forked(monkeypatch):
    monkeypatch.setenv("PROBE_VALUE", "before")
    executor = started(1)
    try:
        (result,) = executor.run([job()], [None])
        assert result["constraints"]["env"] == "before"
    finally:
        executor.close()
    monkeypatch.setenv("PROBE_VALUE", "after")  # the zygote was started before this
    executor = started(1)
    try:
        (result,) = executor.run([job()], [None])
        assert result["constraints"]["env"] == "after"
    finally:
        executor.close()


@pytest.mark.timeout(60)
def test_workers_die_with_their_zygote_and_the_pool_goes_on_with_a_new_one():
    executor = started(1)
    try:
        (worker,) = executor.worker_pids()
        zygote = parent(worker)
        os.kill(zygote, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while Path(f"/proc/{worker}").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not Path(f"/proc/{worker}").exists()  # killed by the kernel, reaped by init
        (result,) = executor.run([job(loss=0.3)], [None])  # a replacement runs it
        assert (result["status"], result["loss"]) == ("ok", 0.3)
        assert parent(result["constraints"]["pid"]) not in (zygote, os.getpid())
    finally:
        executor.close()


@pytest.mark.timeout(60)
def test_a_zygote_that_cannot_import_what_it_preloads_is_named(tmp_path, monkeypatch):
    broken = tmp_path / "sklearn"
    broken.mkdir()
    (broken / "__init__.py").write_text("raise ImportError('broken on purpose')\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    # thread caps of their own: a zygote of this environment, not the one other tests started
    with pytest.raises(WorkerError, match=r"(?s)worker processes cannot start: a worker process "
                       r"could not be created: the worker zygote could not start: it exited; its "
                       r"output: Traceback .*ImportError: broken on purpose$"):
        started(1, threads=7)
