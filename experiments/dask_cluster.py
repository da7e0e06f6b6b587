"""A real search on a Dask cluster started as a user starts one, with workers killed and restarted.

The ``dask scheduler`` and ``dask worker`` command-line programs run as separate processes on
127.0.0.1 (``--workers`` worker processes of one thread each, under one ``dask worker`` program
and its nannies). The package's estimator searches a real dataset on that cluster through its
scheduler address (``ADMM(executor="dask", dask_address=...)``, asynchronous trials, the
default), with ``--budget`` seconds and a run directory, twice with the same seed:

* ``quiet``: nothing happens to the cluster;
* ``faults``: at 25 % and at 45 % of the budget one Dask worker process that is running a trial
  is killed (SIGKILL; its nanny starts a new one), and at 65 % the whole ``dask worker`` program
  is killed and, two seconds later, a new one is started (new workers that have never seen the
  data join the running search).

Reported per run: evaluations, their statuses (a trial whose worker died is run again elsewhere
by Dask's scheduler, up to its ``allowed-failures``, then recorded as failed), whether the
journal holds every evaluation of ``history_`` once (nothing lost), the best validation loss and
the test AUROC of the fitted model on a 30 % hold-out. What the run must show: no evaluation
lost, the search ends normally. The script exits with an error if the journal and the history
disagree.

Where the faults' cost goes: the scheduler's task stream (``distributed.get_task_stream``, on a
client of the script's own) gives each trial's worker and compute interval. Per fault the table
after the main one prints, for the window from the fault to the next one (or to the end): the
trials that ended in it, the seconds until the replacement worker's first trial started, and the
surviving workers' busy share of the window (their trials' compute time over the window's
length times their number): a survivor slowed by the replacement's start-up (a new Python
process, the task's data unpickled, its trial process started, all on the same cores) shows as
a busy share near 100 % with fewer trials, a survivor left waiting as a low one.

Usage::

    .venv/bin/python experiments/dask_cluster.py                       # breast cancer, 60 s
    .venv/bin/python experiments/dask_cluster.py --data-dir ../shared/data --dataset NAME  # binary
    .venv/bin/python experiments/dask_cluster.py --smoke               # CI: 20 s, faults only
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
#: fractions of the budget at which a worker process, another, then the worker program are killed
PLAN = (0.25, 0.45, 0.65)


class Cluster:
    """``dask scheduler`` and one ``dask worker`` program, as separate processes on loopback."""

    def __init__(self, folder: Path, workers: int) -> None:
        self.dask = str(Path(sys.executable).with_name("dask"))
        self.file = folder / "scheduler.json"
        self.workers = workers
        self.env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        self.scheduler = self._start("scheduler", "--host", "127.0.0.1", "--port", "0",
                                     "--dashboard-address", ":0", "--scheduler-file",
                                     str(self.file))
        deadline = time.monotonic() + 60
        while not self.file.exists():
            if time.monotonic() > deadline:
                raise RuntimeError("dask scheduler did not start within 60 s")
            time.sleep(0.1)
        self.address = json.loads(self.file.read_text())["address"]
        self.worker = self.start_workers()

    def _start(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen([self.dask, *args], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=self.env, start_new_session=True)

    def start_workers(self) -> subprocess.Popen:
        return self._start("worker", "--scheduler-file", str(self.file), "--nworkers",
                           str(self.workers), "--nthreads", "1", "--host", "127.0.0.1",
                           "--dashboard-address", ":0")

    def close(self) -> None:
        for proc in (self.worker, self.scheduler):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()


def kill_busy_worker(client: Any) -> int | None:
    """SIGKILL one Dask worker process that is running a trial; its pid, or None if none is."""
    busy = [a for a, keys in client.processing().items()
            if any(str(k).startswith("trial-") for k in keys)]
    if not busy:
        return None
    pid = client.run(os.getpid, workers=busy[:1])[busy[0]]
    os.kill(pid, signal.SIGKILL)
    return pid


def faults(cluster: Cluster, budget: float, events: list[str], stop: threading.Event) -> None:
    """The fault plan of the module docstring, told into ``events`` as it happens."""
    from distributed import Client

    start = time.monotonic()

    def at(fraction: float) -> bool:
        return not stop.wait(max(0.0, start + fraction * budget - time.monotonic()))

    with Client(cluster.address, set_as_default=False, timeout=30) as client:
        for fraction in PLAN[:2]:
            if not at(fraction):
                return
            for _ in range(50):  # up to 5 s for a worker to be in a trial
                pid = kill_busy_worker(client)
                if pid is not None:
                    events.append(f"{time.monotonic() - start:.1f} s: killed worker process "
                                  f"{pid} mid-trial")
                    break
                time.sleep(0.1)
        if not at(PLAN[2]):
            return
        os.killpg(cluster.worker.pid, signal.SIGKILL)
        cluster.worker.wait()
        events.append(f"{time.monotonic() - start:.1f} s: killed the dask worker program")
        time.sleep(2.0)
        cluster.worker = cluster.start_workers()
        events.append(f"{time.monotonic() - start:.1f} s: started a new dask worker program")


def run_one(args: argparse.Namespace, mode: str, folder: Path) -> dict[str, Any]:
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import train_test_split

    from distributed import Client, get_task_stream

    from admm_automl import ADMM
    from admm_automl.datasets import load_dataset
    from admm_automl.journal import Journal

    X, y = load_dataset(args.dataset, args.data_dir)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y,
                                                        random_state=args.seed)
    cluster = Cluster(folder, args.workers)
    events: list[str] = []
    stop = threading.Event()
    try:
        killer = threading.Thread(target=faults, args=(cluster, args.budget, events, stop),
                                  daemon=True) if mode == "faults" else None
        model = ADMM(executor="dask", dask_address=cluster.address, time_budget=args.budget,
                     random_state=args.seed, output_dir=folder / "run")
        with Client(cluster.address, set_as_default=False, timeout=30) as watcher, \
                get_task_stream(client=watcher) as stream:
            started, started_wall = time.monotonic(), time.time()
            if killer is not None:
                killer.start()
            model.fit(X_train, y_train)
            wall = time.monotonic() - started
        stop.set()
        if killer is not None:
            killer.join(timeout=30)
    finally:
        stop.set()
        cluster.close()
    records = Journal.read(folder / "run" / "journal.jsonl")
    history = model.history_
    statuses = Counter(history["status"])
    return {
        "mode": mode, "seed": args.seed, "budget": args.budget, "workers": args.workers,
        "wall": round(wall, 1), "evaluations": int(len(history)), "statuses": dict(statuses),
        "journal_records": len(records),
        "journal_ids_once": sorted(r["eval_id"] for r in records) == list(range(len(records))),
        # evaluations ended between the fault plan's moments (the same cuts for both runs)
        "per_phase": np.histogram([float(r["time"]) for r in records],
                                  bins=[0.0, *(f * args.budget for f in PLAN), np.inf])[0].tolist(),
        "best_loss": float(model.best_loss_) if hasattr(model, "best_loss_") else None,
        "test_auroc": float(roc_auc_score(y_test, model.predict_proba(X_test)[:, 1])),
        "events": events, "trials": trial_intervals(stream.data, started_wall),
        "machine": platform.node(), "date": str(date.today()),
    }


def trial_intervals(stream: list[dict[str, Any]], origin: float) -> list[list[Any]]:
    """``[worker, start, stop]`` of each trial's compute in the task stream, in seconds from
    ``origin`` (the search's start on the wall clock, which the task stream uses)."""
    out = []
    for task in stream:
        if not str(task.get("key", "")).startswith("trial-"):
            continue
        for ss in task.get("startstops", ()):
            if ss.get("action") == "compute":
                out.append([task["worker"], round(ss["start"] - origin, 3),
                            round(ss["stop"] - origin, 3)])
    return sorted(out, key=lambda t: t[1])


def kill_times(row: dict[str, Any]) -> list[float]:
    """The seconds into the search at which ``row``'s faults killed something (its events read
    ``"<seconds> s: killed ..."``)."""
    return [float(e.split(" s:")[0]) for e in row["events"] if "killed" in e]


def fault_windows(row: dict[str, Any]) -> list[str]:
    """Per fault of a ``faults`` run (module docstring): trials ended in the window after it, the
    seconds to the replacement's first trial, the survivors' busy share."""
    times = kill_times(row)
    trials = row["trials"]
    lines = []
    for k, t in enumerate(times):
        end = times[k + 1] if k + 1 < len(times) else row["wall"]
        before = {w for w, a, b in trials if a < t}
        after = [(w, a, b) for w, a, b in trials if b > t and a < end]
        new = [a for w, a, b in after if w not in before]
        survivors = {w for w, a, b in after if w in before and a < t + 0.5}
        busy = sum(min(b, end) - max(a, t) for w, a, b in after if w in survivors)
        share = busy / ((end - t) * len(survivors)) if survivors else float("nan")
        ended = sum(t < b <= end for w, a, b in trials)
        lines.append(f"| {t:.1f}-{end:.1f} s | {ended} | "
                     f"{f'{min(new) - t:.1f}' if new else 'none'} | {len(survivors)} | "
                     f"{share:.0%} |")
    return lines


def table(rows: list[dict[str, Any]]) -> None:
    cuts = " / ".join(f"{int(100 * a)}-{int(100 * b)} %" for a, b in
                      zip((0.0, *PLAN), (*PLAN, 1.0)))
    print(f"| run | wall (s) | evaluations ({cuts} of the budget) | statuses | journal: "
          "records, ids once | best loss | test AUROC |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(r["statuses"].items()))
        phases = " / ".join(str(n) for n in r["per_phase"])
        print(f"| {r['mode']} | {r['wall']} | {r['evaluations']} ({phases}) | {statuses} | "
              f"{r['journal_records']}, {'yes' if r['journal_ids_once'] else 'NO'} | "
              f"{r['best_loss'] if r['best_loss'] is None else round(r['best_loss'], 4)} | "
              f"{r['test_auroc']:.4f} |")
    for r in rows:
        for event in r["events"]:
            print(f"- {r['mode']}: {event}")
    for r in rows:
        if r["events"]:
            print(f"\n{r['mode']}: the window after each fault\n")
            print("| window | trials ended | replacement's first trial after (s) | survivors | "
                  "survivors busy |")
            print("|---|---|---|---|---|")
            print("\n".join(fault_windows(r)))
    quiet = [r for r in rows if not r["events"]]
    if quiet:  # the same windows, undisturbed
        times = [t for r in rows for t in kill_times(r)]
        cuts = [*times, quiet[0]["wall"]]
        counts = [sum(a < b_ <= c for _, _, b_ in quiet[0]["trials"])
                  for a, c in zip(cuts, cuts[1:])]
        if counts:
            print(f"\nquiet: trials ended in the same windows: {counts}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=60.0, help="seconds per search")
    parser.add_argument("--workers", type=int, default=2, help="Dask worker processes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--dataset", default="breast_cancer",
                        help="a dataset of --data-dir, or a bundled one (default: breast_cancer)")
    parser.add_argument("--modes", nargs="+", default=["quiet", "faults"],
                        choices=["quiet", "faults"])
    parser.add_argument("--smoke", action="store_true", help="20 s, the faults run only")
    args = parser.parse_args(argv)
    if args.smoke:
        args.budget, args.modes = 20.0, ["faults"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for mode in args.modes:
            folder = Path(tmp) / mode
            folder.mkdir()
            print(f"{mode}: {args.budget:g} s on {args.workers} workers ...", flush=True)
            rows.append(run_one(args, mode, folder))
    table(rows)
    bad = [r["mode"] for r in rows
           if not r["journal_ids_once"] or r["journal_records"] != r["evaluations"]]
    if bad:
        raise SystemExit(f"evaluations lost or journalled twice in: {', '.join(bad)}")


if __name__ == "__main__":
    main()
