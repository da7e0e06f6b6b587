"""Asynchronous against batched trials on many workers, simulated on a Dask cluster on loopback.

A cluster of ``W`` worker threads (``--workers``, by default 1, 4, 16 and 64) on 127.0.0.1 runs
trials that *sleep* for a simulated cost and return the artificial objective of Liu et al. (2020,
Appendix 15) over the ``paper_large`` space, so that 64 workers fit on a 2-core machine: a
sleeping trial holds a worker, not a core. The cost of a trial is heavy-tailed, as real AutoML
trials are (a 3-leaf boosted model against a 1000-tree forest: 10-100x): each learner has a base
cost drawn once from a log-normal (σ = 1, so the dearest of the 14 learners costs about 30x the
cheapest), scaled so the mean over learners is ``--mean-cost`` seconds, times ``0.5 + mean(θ)``
of the pipeline's unit hyperparameters (bigger settings cost more), deterministic in (z, θ).

Each run is the package's ADMM (``bo`` θ-solver, ``cmab`` z-solver with its loss bound at 5, on
the function's scale, the estimator's schedule 16 + 16t up to 128) through the package's engine and :class:`~admm_automl.evaluation.DaskExecutor`
on the cluster, for ``--budget`` seconds, in one of two modes:

* ``batch``: as by default, batches of ``W`` trials, each waiting for its slowest;
* ``async``: ``asynchronous=True``, a worker gets the next trial as soon as it is free.

Measured per run, from its journal: **worker utilisation** (the trials' own durations, summed,
over ``W`` × the search's wall time), trials per second, the best loss at the end and over time
(``table`` prints the median best loss at a quarter, half, three quarters and all of the budget).
And the **driver's CPU share**: the seconds of CPU the driver's process used (proposals, the
GP fits, Dask's client threads) over the wall time; near 100 % the driver, not the trials, sets
the pace (``--profile`` also writes the run's cProfile listing, by cumulative time, beside its
result). Per cluster size, the **overhead per trial**: ``4·W`` trials of no cost (sleep 0)
submitted through the executor ``W`` at a time: wall time over trials, and the CPU time they
took in the caller's process (the engine, and Dask's scheduler, which a local cluster runs
there) and in the Dask workers with their trial processes. On this 2-core machine all of them
share two cores, so the wall time per trial is bounded below by their CPU time over 2.

Targets (written before the runs): at 64 workers, utilisation ≥ 90 % asynchronously (the batch
figure beside it) and overhead ≤ 5 ms per trial; and the 16-worker search at ``B`` seconds
reaches a best loss no worse than the 1-worker search at ``16·B`` (``--long``), over ≥ 5 seeds
(median, and seed by seed).

``driver``: the driver alone, at 1, 16, 64 and 256 workers (``--workers``), without Dask.
The same asynchronous ADMM runs on ``W`` simulated workers (:class:`SimulatedExecutor`) whose
trials end their simulated cost later on a :class:`VirtualClock` made of the driver's own CPU
seconds plus the seconds it waits for a trial to end: no process, thread or sleep, so 256
workers fit on a laptop and the machine's load does not enter the clock. Printed per run and as
a table: the **driver's CPU share** (its CPU seconds over the clock's), its **CPU seconds per
proposal** (everything the driver's process does, over the trials: the solvers' asks, the
engine's journal and cache, cache hits, the ADMM steps), the utilisation the workers would
have if the driver were the only limit (no Dask scheduler, no transfer), and how long freed
workers waited for their next trial per second of trials (the engine's own measure, which it
logs a warning about past 10 %).

Results: ``experiments/results/scale/<W>-<mode>-seed<k>.json`` (one per run; a run whose file
exists is skipped, so the command resumes) and ``overhead-<W>.json``; ``table`` prints them.

Usage::

    nice .venv/bin/python experiments/scale.py run --seeds 0 1 2 3 4          # all sizes, both modes
    nice .venv/bin/python experiments/scale.py run --workers 16 --seeds 0 1 2 3 4 --long
    .venv/bin/python experiments/scale.py table
    .venv/bin/python experiments/scale.py --smoke   # CI: 4 workers, both modes, 4 s, 0.05 s trials
    nice .venv/bin/python experiments/scale.py driver --seeds 0 1 2 --budget 30   # 1-256, ~4 min
    # a cluster started as a user starts it, its scheduler and workers separate processes:
    dask scheduler --host 127.0.0.1 --port 8786 &
    dask worker tcp://127.0.0.1:8786 --nworkers 4 --nthreads 16 &
    nice .venv/bin/python experiments/scale.py run --address tcp://127.0.0.1:8786 --workers 64
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import cProfile  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import pstats  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from datetime import date  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "experiments" / "results" / "scale"
MODES = ("batch", "async")
#: cmab with a loss bound on the artificial objective's scale (its best pipelines score about
#: 0.43, a random one 4.3: the bound 0.7 made for 1 - AUROC would give nearly every pull reward 0)
Z_SOLVER = {"name": "cmab", "params": {"loss_bound": 5.0}}


class SleepingArtificial:
    """The artificial objective of Liu et al. (2020) whose trials sleep a simulated cost (module
    docstring); a task of the package's engine (``space`` + ``run``)."""

    def __init__(self, mean_cost: float, seed: int = 0) -> None:
        from admm_automl.benchmarks.artificial import ArtificialObjective
        from admm_automl.space import load_space

        self.space = load_space("paper_large").for_task("classification")
        self.objective = ArtificialObjective(self.space, seed=seed)
        rng = np.random.default_rng(seed + 1000)
        n_learners = self.space.encoding.n_choices[-1]
        base = rng.lognormal(0.0, 1.0, size=n_learners)
        self.costs = base * mean_cost / base.mean()

    def cost(self, z: tuple[int, ...], theta: np.ndarray) -> float:
        enc = self.space.encoding
        slots = enc.slots[-1][z[-1]]
        t = np.asarray(theta, dtype=float)[slots]
        return float(self.costs[z[-1]] * (0.5 + (t.mean() if t.size else 0.5)))

    def run(self, z: tuple[int, ...], theta: np.ndarray, fidelity: float = 1.0) -> dict[str, Any]:
        seconds = self.cost(z, theta)
        time.sleep(seconds)
        result = self.objective.run(z, theta, fidelity)
        result["fit_time"] = seconds
        return result


def cluster(workers: int, address: str | None = None) -> tuple[Any, Any]:
    """A local Dask cluster of ``workers`` threads on 127.0.0.1 (at most 4 worker processes,
    the threads spread over them) and its client; with ``address``, a client of the running
    cluster there (``dask scheduler`` + ``dask worker``, as a user starts them), which must
    have ``workers`` threads, and no local cluster."""
    from distributed import Client, LocalCluster

    if address is not None:
        client = Client(address, set_as_default=False)
        threads = sum(client.nthreads().values())
        if threads != workers:
            client.close()
            sys.exit(f"the cluster at {address} has {threads} worker threads, not --workers "
                     f"{workers}")
        return None, client
    processes = min(workers, 4)
    local = LocalCluster(n_workers=processes, threads_per_worker=max(1, workers // processes),
                         processes=True, host="127.0.0.1", dashboard_address=None)
    return local, Client(local, set_as_default=False)


def run_one(client: Any, workers: int, mode: str, seed: int, budget: float,
            mean_cost: float, profile: bool = False) -> dict[str, Any]:
    """One ADMM run on the cluster; its utilisation, throughput, best loss over time and the
    driver's CPU share (with ``profile``, its cProfile listing)."""
    from admm_automl.evaluation import DaskExecutor, PipelineObjective
    from admm_automl.journal import Journal
    from admm_automl.methods.driver import Schedule
    from admm_automl.methods.registry import make_optimizer

    task = SleepingArtificial(mean_cost)
    created = time.monotonic()  # the journal's times count from here (the executor's start too)
    objective = PipelineObjective(task, DaskExecutor(client=client), Journal(),
                                  worst_loss=float("nan"), crash_marks=False)
    profiler = cProfile.Profile() if profile else None
    try:
        started, cpu = time.monotonic(), time.process_time()
        if profiler is not None:
            profiler.enable()
        result = make_optimizer(
            "admm", task.space.encoding, objective, theta_solver="bo", z_solver=Z_SOLVER,
            schedule=Schedule(16, 16, 128), time_budget=budget, seed=seed,
            batch_size=objective.executor.n_workers, asynchronous=mode == "async",
        ).run()
        wall, cpu = time.monotonic() - started, time.process_time() - cpu
    finally:
        if profiler is not None:
            profiler.disable()
        objective.close()
    records = [r for r in objective.journal.records if r.get("status") != "cancelled"]
    busy = sum(float(r.get("duration") or 0.0) for r in records)
    best, curve, origin = float("inf"), [], started - created
    for r in sorted(records, key=lambda r: r["time"]):
        if r["status"] == "ok" and r["loss"] < best:
            best = float(r["loss"])
            curve.append((round(float(r["time"]) - origin, 3), best))
    return {"workers": workers, "mode": mode, "seed": seed, "budget": budget,
            "mean_cost": mean_cost, "wall": wall, "trials": len(records),
            "utilisation": busy / (workers * wall), "trials_per_second": len(records) / wall,
            "best": best, "curve": curve, "curve_from": "search start",
            "stop": result.stop_reason, "driver_cpu": cpu / wall,
            "profile": None if profiler is None else _listing(profiler)}


def _listing(profiler: cProfile.Profile, lines: int = 40) -> str:
    """The profile's first ``lines`` functions by cumulative time, as pstats prints them."""
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(lines)
    return out.getvalue()


def overhead(client: Any, workers: int, rounds: int = 4) -> dict[str, Any]:
    """Seconds per trial of no cost, ``workers`` in flight (module docstring): wall time, and
    the CPU time it took in the caller's process (the engine and, on a local cluster, Dask's
    scheduler, which runs there) and in the Dask workers' processes with their trial processes."""
    from admm_automl.evaluation import DaskExecutor

    task = SleepingArtificial(0.0)
    executor = DaskExecutor(client=client)
    executor.start(task)
    try:
        n = rounds * workers
        jobs = [((0,) * len(task.space.encoding.n_choices), task.space.encoding.initial_theta, 1.0)
                for _ in range(n)]
        executor.run(jobs[:workers], [None] * workers)  # warm: first imports, first round trip
        workers_cpu = sum(client.run(_cpu_seconds).values())
        started, cpu = time.monotonic(), time.process_time()
        sent = done = 0
        while done < n:
            while sent < n and sent - done < workers:
                executor.submit(jobs[sent], None)
                sent += 1
            done += len(executor.wait())
        wall, cpu = time.monotonic() - started, time.process_time() - cpu
        workers_cpu = sum(client.run(_cpu_seconds).values()) - workers_cpu
    finally:
        executor.close()
    return {"workers": workers, "trials": n, "seconds_per_trial": wall / n,
            "caller_cpu_per_trial": cpu / n, "workers_cpu_per_trial": workers_cpu / n}


def _cpu_seconds() -> float:
    """CPU seconds of this process and its living children (a Dask worker's trial processes)."""
    import psutil

    me = psutil.Process()
    return sum(sum(p.cpu_times()[:2]) for p in [me, *me.children(recursive=True)])


class VirtualClock:
    """The simulated wall clock of :func:`driver_run`: the driver's own CPU seconds since it
    started, plus the seconds it spent waiting for a trial to end (skipped at once). On this
    clock the driver runs alone on a core, as on a cluster's head node, whatever else the
    machine runs: its CPU time is what a proposal costs, not the load of the machine."""

    def __init__(self) -> None:
        self.cpu0 = time.process_time()
        self.skipped = 0.0

    def __call__(self) -> float:
        return time.process_time() - self.cpu0 + self.skipped

    def cpu(self) -> float:
        return time.process_time() - self.cpu0


class SimulatedExecutor:
    """``W`` workers on a :class:`VirtualClock` (the executor contract of
    :mod:`admm_automl.evaluation.executors`): a submitted trial starts at once (the driver never
    submits more than ``W``) and ends its simulated cost later on the clock; :meth:`wait`
    advances the clock to the first trial to end when none has. No process, thread or sleep: the
    driver's cost per proposal at 256 workers can be measured on a laptop."""

    name = "simulated"
    enforces_timeout = False
    in_process = False

    def __init__(self, workers: int, clock: VirtualClock) -> None:
        self.n_workers = int(workers)
        self.clock = clock
        self.busy = 0.0  # the simulated seconds of every trial started
        self.max_running = 0

    def start(self, task: Any) -> None:
        self.task = task
        self._tickets = 0
        self._running: list[tuple[float, int, dict[str, Any]]] = []  # (end, ticket, result)

    def submit(self, job: tuple, timeout: float | None = None,
               deadline: float | None = None) -> int:
        import heapq

        z, theta, fidelity = job[:3]
        seconds = self.task.cost(z, theta)
        result = self.task.objective.run(z, theta, fidelity)
        result["fit_time"] = result["duration"] = seconds
        self.busy += seconds
        self._tickets += 1
        heapq.heappush(self._running, (self.clock() + seconds, self._tickets, result))
        self.max_running = max(self.max_running, len(self._running))
        return self._tickets

    def wait(self, timeout: float | None = None) -> list[tuple[int, dict[str, Any]]]:
        import heapq

        if not self._running:
            return []
        now = self.clock()
        if self._running[0][0] > now:
            self.clock.skipped += self._running[0][0] - now
            now = self.clock()
        out = []
        while self._running and self._running[0][0] <= now:
            _, ticket, result = heapq.heappop(self._running)
            out.append((ticket, result))
        return out

    def run(self, jobs: list[tuple], timeouts: list[float | None],
            deadline: float | None = None) -> list[dict[str, Any]]:
        tickets = [self.submit(job) for job in jobs]
        done: dict[int, dict[str, Any]] = {}
        while len(done) < len(tickets):
            done.update(self.wait())
        return [done[t] for t in tickets]

    @property
    def pending(self) -> int:
        return len(self._running)

    def close(self) -> None:
        self.task = None


def driver_run(workers: int, seed: int, budget: float, mean_cost: float,
               profile: bool = False) -> dict[str, Any]:
    """One asynchronous ADMM run (as :func:`run_one`) on ``workers`` simulated workers
    (:class:`SimulatedExecutor`) for ``budget`` seconds of the :class:`VirtualClock`: the
    driver's CPU share, its CPU seconds per proposal (everything the driver's process does per
    trial: the solvers' asks, the engine's journal and cache, the ADMM steps) and the
    utilisation the workers would have if the driver were the only limit."""
    from admm_automl.clock import Deadline
    from admm_automl.evaluation import PipelineObjective
    from admm_automl.journal import Journal
    from admm_automl.methods.driver import Schedule
    from admm_automl.methods.registry import make_optimizer

    task = SleepingArtificial(mean_cost)
    clock = VirtualClock()
    executor = SimulatedExecutor(workers, clock)
    objective = PipelineObjective(task, executor, Journal(), worst_loss=float("nan"),
                                  crash_marks=False)
    from admm_automl.methods.driver import RunListener

    class Keep(RunListener):  # the run's recorder, for its measured waits
        def run_finished(self, recorder: Any, stop_reason: str) -> None:
            seen["recorder"] = recorder

    seen: dict[str, Any] = {}
    profiler = cProfile.Profile() if profile else None
    if profiler is not None:
        profiler.enable()
    try:
        deadline = Deadline(budget, clock=clock)
        start = deadline.start
        result = make_optimizer(
            "admm", task.space.encoding, objective, theta_solver="bo", z_solver=Z_SOLVER,
            schedule=Schedule(16, 16, 128), deadline=deadline, seed=seed,
            batch_size=workers, asynchronous=workers > 1, listeners=[Keep()],
        ).run()
        wall, cpu = clock() - start, clock.cpu()
    finally:
        if profiler is not None:
            profiler.disable()
        objective.close()
    records = [r for r in objective.journal.records if r.get("status") != "cancelled"]
    best = min((float(r["loss"]) for r in records if r["status"] == "ok"), default=float("inf"))
    return {"workers": workers, "seed": seed, "budget": budget, "mean_cost": mean_cost,
            "wall": wall, "trials": len(records), "driver_cpu": cpu / wall,
            "cpu_per_proposal": cpu / max(len(records), 1),
            "utilisation": executor.busy / (workers * wall), "best": best,
            # seconds freed workers waited for their next trial per second of trials (None:
            # a version of the package that does not measure it)
            "waits": getattr(getattr(seen.get("recorder"), "waits", None), "share", None),
            "stop": result.stop_reason, "max_in_flight": executor.max_running,
            "profile": None if profiler is None else _listing(profiler)}


def driver(args: argparse.Namespace) -> None:
    """``scale.py driver``: :func:`driver_run` at each ``--workers`` (default 1, 16, 64, 256)
    and seed; prints a table and, with ``--profile``, each run's cProfile listing."""
    rows = []
    for workers in args.workers:
        for seed in args.seeds:
            out = driver_run(workers, seed, args.budget, args.mean_cost, args.profile)
            listing = out.pop("profile")
            if listing:
                print(f"--- profile, {workers} workers, seed {seed} ---\n{listing}")
            rows.append(out)
            print(json.dumps(out), flush=True)
    print(f"\n| workers | runs | trials | driver CPU share | driver CPU per proposal (ms) | "
          f"utilisation bound | waits for proposals per trial second | best loss (median) |")
    print("|---|---|---|---|---|---|---|---|")
    for workers in args.workers:
        cell = [r for r in rows if r["workers"] == workers]
        med = lambda key: statistics.median(r[key] for r in cell)  # noqa: E731
        print(f"| {workers} | {len(cell)} | {med('trials'):.0f} | {med('driver_cpu'):.0%} | "
              f"{1000 * med('cpu_per_proposal'):.2f} | {med('utilisation'):.1%} | "
              f"{_median_or_dash([r['waits'] for r in cell])} | {med('best'):.4f} |")


def path_of(root: Path, workers: int, mode: str, seed: int, budget: float) -> Path:
    return root / f"{workers}-{mode}-seed{seed}-{budget:g}s.json"


def run(args: argparse.Namespace) -> None:
    root = Path(args.root)
    root.mkdir(parents=True, exist_ok=True)
    plan = [(w, mode, seed, args.budget) for w in args.workers for mode in args.modes
            for seed in args.seeds]
    if args.long:  # the 1-worker search at 16x the budget, against the 16-worker one
        plan += [(1, "batch", seed, 16 * args.budget) for seed in args.seeds]
    for workers in sorted({w for w, *_ in plan}):
        todo = [p for p in plan if p[0] == workers and not path_of(root, *p).is_file()]
        cost_file = root / f"overhead-{workers}.json"
        if not todo and cost_file.is_file():
            continue
        local, client = cluster(workers, args.address)
        try:
            if not cost_file.is_file():
                cost_file.write_text(json.dumps(overhead(client, workers)))
            for p in todo:
                print(f"{p[0]} workers, {p[1]}, seed {p[2]}, {p[3]:g} s ...", flush=True)
                out = run_one(client, *p, mean_cost=args.mean_cost, profile=args.profile)
                out.update(machine=platform.node(), date=str(date.today()))
                listing = out.pop("profile")
                if listing:
                    path_of(root, *p).with_suffix(".profile.txt").write_text(listing)
                path_of(root, *p).write_text(json.dumps(out))
        finally:
            client.close()
            if local is not None:
                local.close()
    table(root, args.budget)


def table(root: Path, budget: float | None = None) -> None:
    rows = [json.loads(p.read_text()) for p in sorted(root.glob("*-seed*.json"))]
    if not rows:
        print("no results")
        return
    print("| workers | mode | budget (s) | runs | utilisation (median) | trials/s | best loss "
          "(median) | driver CPU (median) | overhead per trial: wall / caller CPU / workers' "
          "CPU (ms) |")
    print("|---|---|---|---|---|---|---|---|---|")
    keys = sorted({(r["workers"], r["mode"], r["budget"]) for r in rows})
    for w, mode, b in keys:
        cell = [r for r in rows if (r["workers"], r["mode"], r["budget"]) == (w, mode, b)]
        cost = root / f"overhead-{w}.json"
        ms = _overhead_cell(json.loads(cost.read_text())) if cost.is_file() else "-"
        print(f"| {w} | {mode} | {b:g} | {len(cell)} | "
              f"{statistics.median(r['utilisation'] for r in cell):.1%} | "
              f"{statistics.median(r['trials_per_second'] for r in cell):.2f} | "
              f"{statistics.median(r['best'] for r in cell):.4f} | {_median_share(cell)} | "
              f"{ms} |")
    print("\n| workers | mode | budget (s) | median best loss at 1/4 / 1/2 / 3/4 / all of the "
          "budget |")
    print("|---|---|---|---|")
    for w, mode, b in keys:
        # earlier runs' curves count from the executor's start, not the search's: left out
        cell = [r for r in rows if (r["workers"], r["mode"], r["budget"]) == (w, mode, b)
                and r.get("curve_from") == "search start"]
        at = [statistics.median(_best_at(r["curve"], f * b) for r in cell) if cell else None
              for f in (0.25, 0.5, 0.75, 1.0)]
        print(f"| {w} | {mode} | {b:g} | "
              f"{' / '.join('-' if v is None else f'{v:.4f}' for v in at)} |")
    short = {r["seed"]: r["best"] for r in rows
             if r["workers"] == 16 and r["mode"] == "async" and budget and r["budget"] == budget}
    long = {r["seed"]: r["best"] for r in rows if r["workers"] == 1 and budget
            and r["budget"] == 16 * budget}
    seeds = sorted(set(short) & set(long))
    if seeds:
        wins = sum(short[s] <= long[s] for s in seeds)
        print(f"\n16 workers asynchronous at {budget:g} s against 1 worker at {16 * budget:g} s: "
              f"best loss no worse on {wins} of {len(seeds)} seeds (median "
              f"{statistics.median(short[s] for s in seeds):.4f} against "
              f"{statistics.median(long[s] for s in seeds):.4f})")


def _best_at(curve: list[list[float]], seconds: float) -> float:
    """The best loss a run had reached ``seconds`` into its search (inf before its first)."""
    reached = [best for t, best in curve if t <= seconds]
    return reached[-1] if reached else float("inf")


def _overhead_cell(cost: dict[str, Any]) -> str:
    """Wall, caller CPU and workers' CPU per trial of no cost, in ms (earlier files: wall)."""
    parts = [cost.get(k) for k in ("seconds_per_trial", "caller_cpu_per_trial",
                                   "workers_cpu_per_trial")]
    return " / ".join("-" if v is None else f"{1000 * v:.2f}" for v in parts)


def _median_or_dash(values: list[float | None]) -> str:
    known = [v for v in values if v is not None]
    return f"{statistics.median(known):.0%}" if known else "-"


def _median_share(cell: list[dict[str, Any]]) -> str:
    """The median driver CPU share of the runs that recorded it (earlier runs did not)."""
    shares = [r["driver_cpu"] for r in cell if "driver_cpu" in r]
    return f"{statistics.median(shares):.0%}" if shares else "-"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", nargs="?", choices=["run", "table", "driver"], default="run")
    parser.add_argument("--workers", type=int, nargs="+", default=None,
                        help="cluster sizes (default 1 4 16 64; for driver 1 16 64 256)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--budget", type=float, default=60.0, help="seconds per run")
    parser.add_argument("--mean-cost", type=float, default=2.0,
                        help="mean simulated seconds of a trial over the learners")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES),
                        help="batch, async or both (run)")
    parser.add_argument("--long", action="store_true",
                        help="also 1 worker at 16x the budget (the batch-efficiency target)")
    parser.add_argument("--root", default=str(RESULTS))
    parser.add_argument("--address", default=None,
                        help="run on the Dask cluster at this scheduler address (one --workers "
                             "size: the cluster's worker threads) instead of a local one")
    parser.add_argument("--profile", action="store_true",
                        help="write each run's cProfile listing beside its result")
    parser.add_argument("--smoke", action="store_true",
                        help="4 workers, both modes, one seed, 4 s, 0.05 s trials (CI)")
    args = parser.parse_args(argv)
    if args.workers is None:
        args.workers = [1, 16, 64, 256] if args.command == "driver" else [1, 4, 16, 64]
    if args.address is not None and len(args.workers) != 1:
        parser.error("--address runs one cluster: give its worker threads as one --workers")
    if args.command == "driver":
        driver(args)
        return
    if args.smoke:
        args.workers, args.seeds, args.budget, args.mean_cost = [4], [0], 4.0, 0.05
        args.root = tempfile.mkdtemp(prefix="scale-smoke-")
    if args.command == "table":
        table(Path(args.root), args.budget)
        return
    run(args)
    if args.smoke:
        rows = [json.loads(p.read_text()) for p in Path(args.root).glob("*-seed*.json")]
        shutil.rmtree(args.root)
        if len(rows) != 2 or not all(r["trials"] > 0 and np.isfinite(r["best"]) for r in rows):
            sys.exit(f"smoke: expected two runs with trials, got {rows}")


if __name__ == "__main__":
    main()
