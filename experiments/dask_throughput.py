"""Throughput of the Dask executor against the local process pool.

Trials per second with 1 and 2 workers, on cheap pipelines (standard scaling + logistic regression,
a few milliseconds: the executor's own overhead dominates) and on slow ones (standard scaling + a
100-tree random forest, about a second: the parallel speed-up dominates), both on the same 3 000
synthetic rows (scikit-learn's ``make_classification``, 20 features, one stratified 80/20 split,
loss 1 - AUROC), for

* ``process``: the package's process pool (:class:`admm_automl.evaluation.ProcessExecutor`),
* ``dask``: :class:`admm_automl.evaluation.DaskExecutor` on a local cluster of as many
  single-threaded Dask workers, bound to 127.0.0.1, started by the executor.

Both run the same trials (configurations drawn from one seed), single-threaded (BLAS/OpenMP
threads = 1), in batches of as many trials as there are workers, the way a search asks for them.
Throughput is counted from the end of start-up (reported apart) and after one untimed batch of each
kind, so that first imports are not charged; each cell is the median over ``--repeats`` repeats, the
two executors taking turns to go first, so that a change of machine load hits both alike. The
script also checks that both executors give identical losses.

Targets: on slow pipelines 2 workers give >= 1.8x the throughput of one, and Dask stays
within 10 % of the local pool. Results go to ``experiments/results/dask_throughput/results.json``
and a Markdown table is printed.

Usage (single-threaded BLAS is set below before numpy is imported)::

    .venv/bin/python experiments/dask_throughput.py           # full: about 5 min on 2 quiet cores
    .venv/bin/python experiments/dask_throughput.py --smoke   # CI: tiny trials, one repeat
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "experiments" / "results" / "dask_throughput"
EXECUTORS = ("process", "dask")

#: the two kinds of pipelines (estimator choices of one space) and their trials per cell
PIPELINES = {
    "cheap": {
        "class": "sklearn.linear_model.LogisticRegression",
        "hyperparameters": {
            "C": {"type": "float", "low": 0.01, "high": 100.0, "log": True, "default": 1.0},
            "max_iter": {"type": "fixed", "value": 1000},
        },
    },
    "slow": {
        "class": "sklearn.ensemble.RandomForestClassifier",
        "hyperparameters": {
            "max_features": {"type": "float", "low": 0.2, "high": 0.4, "default": 0.3},
            "n_estimators": {"type": "fixed", "value": 100},
        },
    },
}
TRIALS = {"cheap": 200, "slow": 24}


def make_task():
    """The trial context: standard scaler + one of :data:`PIPELINES` on 3 000 synthetic rows, one
    stratified 80/20 split and the models' seed 0, set up by :mod:`admm_automl.run`."""
    from dataclasses import replace

    from sklearn.datasets import make_classification

    from admm_automl.run.seeds import benchmark_seeds
    from admm_automl.run.task import prepare_task
    from admm_automl.space import space_from_dict

    X, y = make_classification(n_samples=3000, n_features=20, n_informative=8, random_state=0)
    space = space_from_dict({
        "name": "throughput",
        "modules": [
            {"name": "scaler", "choices": [
                {"name": "standard", "class": "sklearn.preprocessing.StandardScaler"}]},
            {"name": "estimator", "choices": [{"name": k, **v} for k, v in PIPELINES.items()]},
        ],
    }).for_task("classification")
    seeds = benchmark_seeds(0)
    task = prepare_task(X, y, space=space, task="classification", target_type="binary",
                        validation_size=0.2, split_seed=seeds.splits, model_seed=seeds.models)
    # without the set-up's imputation step: the synthetic rows have no missing values, and the
    # trials timed are the two pipelines above, as in the recorded results (an extra step would
    # add its own time to the cheap trials, whose throughput measures the executors' overhead)
    return replace(task.context, preprocessor=None)


def make_jobs(task, kind: str, n: int, fidelity: float, seed: int = 0) -> list[tuple]:
    """``n`` trials of ``kind`` with hyperparameters drawn uniformly (in the encoded box)."""
    rng = np.random.default_rng(seed)
    z = (0, task.space.modules[1].index(kind))
    return [(z, rng.random(task.space.encoding.theta_dim), fidelity) for _ in range(n)]


def measure(name: str, n_workers: int, task, jobs: dict[str, list[tuple]]) -> dict[str, dict]:
    """Start an executor, run one untimed batch of each kind, then each kind's jobs in batches of
    ``n_workers``; per kind: start-up time, throughput, the trials' own mean time, the losses.

    The executor comes from the run set-up's factory; it is driven directly, without an objective
    or a journal, on purpose: what is measured is the executor's own throughput."""
    from admm_automl.run.executor import single_threaded_executor

    executor = single_threaded_executor(name, n_workers)
    started = time.perf_counter()
    executor.start(task)
    startup = time.perf_counter() - started
    out = {}
    try:
        for kind_jobs in jobs.values():  # first imports, in every worker
            executor.run(kind_jobs[:n_workers], [None] * n_workers)
        for kind, kind_jobs in jobs.items():
            results = []
            started = time.perf_counter()
            for i in range(0, len(kind_jobs), n_workers):
                batch = kind_jobs[i:i + n_workers]
                results += executor.run(batch, [None] * len(batch))
            wall = time.perf_counter() - started
            bad = [r["error"] for r in results if r["status"] != "ok"]
            if bad:
                raise RuntimeError(f"{name} with {n_workers} workers: a trial failed: {bad[0]}")
            out[kind] = {
                "startup": startup,
                "throughput": len(kind_jobs) / wall,
                "trial_time": statistics.fmean(r["duration"] for r in results),
                "losses": [r["loss"] for r in results],
            }
    finally:
        executor.close()
    return out


def run(args: argparse.Namespace) -> dict:
    task = make_task()
    jobs = {kind: make_jobs(task, kind, args.trials or TRIALS[kind], args.fidelity)
            for kind in args.pipelines}
    cells: dict[str, list[dict]] = {}
    identical = True
    for repeat in range(args.repeats):
        for n_workers in args.workers:
            losses = {}
            for name in EXECUTORS if repeat % 2 == 0 else EXECUTORS[::-1]:
                for kind, m in measure(name, n_workers, task, jobs).items():
                    losses[name, kind] = m.pop("losses")
                    cells.setdefault(f"{kind}|{n_workers}|{name}", []).append(m)
                    print(f"repeat {repeat} {kind:5s} {n_workers} worker(s) {name:7s} "
                          f"{m['throughput']:8.2f} trials/s (trial {m['trial_time'] * 1000:.0f} "
                          f"ms, start-up {m['startup']:.1f} s)", flush=True)
            identical &= all(losses["process", k] == losses["dask", k] for k in args.pipelines)
    summary = {key: {k: statistics.median(m[k] for m in runs) for k in runs[0]}
               for key, runs in cells.items()}
    return {"cells": summary, "runs": cells, "identical_losses": identical}


def table(results: dict, pipelines: list[str], workers: list[int]) -> str:
    cells = results["cells"]
    lines = [
        "| pipelines | trial (ms) | workers | process pool (trials/s) | Dask (trials/s) | "
        "Dask / pool | start-up pool / Dask (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind in pipelines:
        for n in workers:
            p, d = cells[f"{kind}|{n}|process"], cells[f"{kind}|{n}|dask"]
            lines.append(
                f"| {kind} | {p['trial_time'] * 1000:.0f} | {n} | {p['throughput']:.2f} | "
                f"{d['throughput']:.2f} | {d['throughput'] / p['throughput']:.2f} | "
                f"{p['startup']:.1f} / {d['startup']:.1f} |"
            )
    if len(workers) > 1:
        low, high = min(workers), max(workers)
        lines += ["", f"| pipelines | speed-up {high} vs {low} workers: process pool | Dask |",
                  "|---|---|---|"]
        for kind in pipelines:
            ratio = [cells[f"{kind}|{high}|{e}"]["throughput"]
                     / cells[f"{kind}|{low}|{e}"]["throughput"] for e in EXECUTORS]
            lines.append(f"| {kind} | {ratio[0]:.2f} | {ratio[1]:.2f} |")
    lines += ["", f"identical losses (process pool vs Dask): {results['identical_losses']}"]
    return "\n".join(lines)


def machine() -> dict:
    import distributed
    import sklearn

    return {"python": platform.python_version(), "cpus": os.cpu_count(),
            "platform": platform.platform(), "scikit-learn": sklearn.__version__,
            "distributed": distributed.__version__}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--pipelines", nargs="+", default=list(PIPELINES), choices=list(PIPELINES))
    parser.add_argument("--trials", type=int, help="trials per cell (default: 200 cheap, 24 slow)")
    parser.add_argument("--fidelity", type=float, default=1.0,
                        help="fraction of the training rows each trial fits on")
    parser.add_argument("--smoke", action="store_true",
                        help="CI: 4 trials per cell on 5 %% of the rows, one repeat")
    parser.add_argument("--out", default=str(RESULTS), help="results folder")
    args = parser.parse_args(argv)
    if args.smoke:
        args.repeats, args.trials, args.fidelity = 1, 4, 0.05
    load = os.getloadavg()
    results = run(args)
    results.update(machine=machine(), load_before=load, load_after=os.getloadavg(),
                   settings={k: v for k, v in vars(args).items() if k != "out"})
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1))
    print()
    print(table(results, args.pipelines, sorted(args.workers)))
    print(f"\nload average before / after: {load[0]:.1f} / {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores; results in {out / 'results.json'}")
    if not results["identical_losses"]:
        raise SystemExit("the process pool and Dask gave different losses")


if __name__ == "__main__":
    main()
