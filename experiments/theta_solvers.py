"""θ-min solver benchmark: bo vs skopt, rbfopt, random and Optuna's GP sampler.

Problems
--------
* ``branin`` (2-d) and ``hartmann6`` (6-d) from :mod:`admm_automl.benchmarks` (unit box, known
  optimum): regret = best value found − global minimum.
* ``gb_fri_c2``: a real θ-subproblem of ADMM — the algorithm selection is fixed to gradient
  boosting (100 trees; learning_rate, max_depth, min_samples_leaf, subsample, max_features, the two
  integers relaxed) on ``fri_c2_1000_10`` from ``--data-dir``, loss 1 − AUROC on a fixed 80/20
  holdout, plus the first ADMM iteration's penalty (ρ/2)‖θ̃d − b‖² with ρ = 1, λ = 0 and b = the
  projected defaults. Its regret is the augmented value minus the best augmented value found by
  any method and seed in this run (the true optimum is unknown).

Every (problem, method, seed) runs the same evaluation budget; the optimiser's time is the wall
time of the run minus the time spent in the objective, divided by the number of evaluations
("optimiser seconds per ask"). Methods: our ``bo``, ``skopt``, ``rbfopt`` and ``random`` θ-solvers
(from the registry, default parameters, rng seeded per seed), and ``optuna_gp`` — Optuna's
``GPSampler`` (needs torch) driven by ``study.ask``/``study.tell`` as a peer reference, with the
augmented value as its objective.

Usage (single-threaded BLAS is set below before numpy is imported)::

    nice -n 10 .venv/bin/python experiments/theta_solvers.py            # the full table
    .venv/bin/python experiments/theta_solvers.py --seeds 2 --budget 30 --real-budget 20  # smoke

Prints one Markdown table; ``--out`` also keeps the per-seed trajectories as JSON.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
METHODS = ("bo", "skopt", "rbfopt", "random", "optuna_gp")
PROBLEMS = ("branin", "hartmann6", "gb_fri_c2")
CHECKPOINTS = (25, 50, 100)

GB_SPACE = {
    "name": "gb_fri_c2",
    "modules": [
        {
            "name": "estimator",
            "choices": [
                {
                    "name": "gradient_boosting",
                    "class": "sklearn.ensemble.GradientBoostingClassifier",
                    "hyperparameters": {
                        "learning_rate": {"type": "float", "low": 0.01, "high": 1.0, "log": True,
                                          "default": 0.1},
                        "max_depth": {"type": "int", "low": 1, "high": 8, "default": 3},
                        "min_samples_leaf": {"type": "int", "low": 1, "high": 50, "log": True,
                                             "default": 1},
                        "subsample": {"type": "float", "low": 0.1, "high": 1.0, "default": 1.0},
                        "max_features": {"type": "float", "low": 0.1, "high": 1.0, "default": 1.0},
                        "n_estimators": {"type": "fixed", "value": 100},
                    },
                }
            ],
        }
    ],
}


# ----------------------------------------------------------------------------- problems
class Timed:
    """Wraps ``fn(x) -> (loss, augmented)`` and accumulates the time spent inside it."""

    def __init__(self, fn):
        self.fn = fn
        self.seconds = 0.0
        self.values: list[float] = []  # augmented value of every evaluation, in order

    def __call__(self, x: np.ndarray) -> tuple[float, float]:
        start = time.perf_counter()
        loss, value = self.fn(x)
        self.seconds += time.perf_counter() - start
        self.values.append(value)
        return loss, value


def synthetic(name: str):
    """``(dim, fn, penalty, optimum)`` for a test function (no penalty)."""
    from admm_automl.benchmarks import get_function

    f = get_function(name)
    return f.dim, (lambda x: (float(f(x)), float(f(x)))), (lambda x: 0.0), f.optimum


_REAL_CACHE: dict = {}


def real_problem(data_dir: str):
    """``(dim, fn, penalty, None)`` for gradient boosting on fri_c2_1000_10 (see module doc)."""
    if "gb" not in _REAL_CACHE:
        from admm_automl.datasets import load_from_dir
        from admm_automl.records import Request
        from admm_automl.run.setup import (benchmark_seeds, open_objective, prepare_task,
                                           run_header, single_threaded_executor)
        from admm_automl.space import space_from_dict

        X, y = load_from_dir("fri_c2_1000_10", data_dir)
        y = np.asarray(y)
        space = space_from_dict(GB_SPACE).for_task("classification")
        enc = space.encoding
        seeds = benchmark_seeds(0)  # one subproblem, the same for every method and seed
        task = prepare_task(X, y, space=space, task="classification", target_type="binary",
                            validation_size=0.2, split_seed=seeds.splits, model_seed=seeds.models)
        # serial, in this process: the optimiser's time is the run's wall time less the time
        # spent in this objective (--jobs runs whole runs side by side instead)
        objective = open_objective(task.context, executor=single_threaded_executor("serial"),
                                   worst_loss=task.worst_loss,
                                   header=run_header(task, cv=None, validation_size=0.2))
        theta0 = enc.project(enc.initial_theta)
        z = (0,)
        is_d = enc.discrete[enc.active(z)]
        b = theta0[enc.active(z)][is_d]  # δ⁰ = projected defaults, λ = 0, ρ = 1
        rho = 1.0

        def penalty(x):
            diff = np.asarray(x, dtype=float)[is_d] - b
            return 0.5 * rho * float(diff @ diff)

        def fn(x):
            theta = theta0.copy()
            theta[enc.active(z)] = np.clip(x, 0.0, 1.0)
            (obs,) = objective([Request(z, enc.project(theta), 1.0)])
            loss = obs.loss if math.isfinite(obs.loss) else 1.0
            return loss, loss + penalty(x)

        _REAL_CACHE["gb"] = (len(enc.active(z)), fn, penalty, None)
    return _REAL_CACHE["gb"]


# ----------------------------------------------------------------------------- one run
def run_registry_solver(name, dim, fn, penalty, budget, seed):
    from admm_automl.problem import ThetaProblem
    from admm_automl.solvers import THETA_SOLVERS
    from admm_automl.records import Observation

    timed = Timed(fn)

    def evaluate(suggestions):
        out = []
        for s in suggestions:
            loss, _ = timed(np.clip(np.asarray(s.config, dtype=float), 0.0, 1.0))
            out.append(Observation(loss=loss))
        return out

    problem = ThetaProblem(
        dim=dim, evaluate=evaluate, augment=lambda x, o: o.loss + penalty(x), penalty=penalty,
        discrete=np.zeros(dim, dtype=bool), history=[], start=None,
    )
    solver = THETA_SOLVERS.create(name)
    start = time.perf_counter()
    solver.setup(problem, np.random.default_rng(seed))
    solver.run(budget)
    total = time.perf_counter() - start
    return timed.values, total - timed.seconds


def run_optuna(dim, fn, budget, seed):
    import optuna
    import torch

    torch.set_num_threads(1)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    timed = Timed(fn)
    dists = {f"x{i}": optuna.distributions.FloatDistribution(0.0, 1.0) for i in range(dim)}
    start = time.perf_counter()
    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.GPSampler(seed=seed))
    for _ in range(budget):
        trial = study.ask(dists)
        x = np.array([trial.params[f"x{i}"] for i in range(dim)])
        _, value = timed(x)
        study.tell(trial, value)
    total = time.perf_counter() - start
    return timed.values, total - timed.seconds


def one_run(task):
    problem, method, seed, budget, data_dir = task
    warnings.filterwarnings("ignore")
    if problem == "gb_fri_c2":
        dim, fn, penalty, optimum = real_problem(data_dir)
    else:
        dim, fn, penalty, optimum = synthetic(problem)
    if method == "optuna_gp":
        values, opt_seconds = run_optuna(dim, fn, budget, seed)
    else:
        values, opt_seconds = run_registry_solver(method, dim, fn, penalty, budget, seed)
    return {
        "problem": problem, "method": method, "seed": seed, "budget": budget,
        "values": [float(v) for v in values], "optimum": optimum,
        "optimizer_seconds": opt_seconds, "seconds_per_ask": opt_seconds / max(1, len(values)),
    }


# ----------------------------------------------------------------------------- report
def table(results, methods, problems) -> str:
    floor = {}  # the reference value of each problem: known optimum, or best found in this run
    for p in problems:
        rows = [r for r in results if r["problem"] == p]
        if not rows:
            continue
        known = rows[0]["optimum"]
        floor[p] = known if known is not None else min(min(r["values"]) for r in rows)

    def regret_at(r, k):
        if len(r["values"]) < k:
            return math.nan
        return float(np.min(r["values"][:k]) - floor[r["problem"]])

    lines = [
        "| problem | method | regret@25 | regret@50 | regret@100 | s/ask | regret@50 ×skopt "
        "| regret@50 ×random | s/ask ×skopt |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    fmt = lambda v: "—" if not np.isfinite(v) else (f"{v:.3g}" if abs(v) >= 1e-3 else f"{v:.1e}")
    for p in problems:
        stats = {}
        for m in methods:
            rows = [r for r in results if r["problem"] == p and r["method"] == m]
            if not rows:
                continue
            stats[m] = {
                **{k: float(np.median([regret_at(r, k) for r in rows])) for k in CHECKPOINTS},
                "spa": float(np.mean([r["seconds_per_ask"] for r in rows])),
            }

        def ratio(m, ref, key):
            if m not in stats or ref not in stats:
                return math.nan
            a, b = stats[m][key], stats[ref][key]
            if not (np.isfinite(a) and np.isfinite(b)):
                return math.nan
            return a / b if b > 0 else (math.inf if a > 0 else 1.0)

        for m, s in stats.items():
            lines.append(
                f"| {p} | {m} | {fmt(s[25])} | {fmt(s[50])} | {fmt(s[100])} | {s['spa']:.4f} | "
                f"{fmt(ratio(m, 'skopt', 50))} | {fmt(ratio(m, 'random', 50))} | "
                f"{fmt(ratio(m, 'skopt', 'spa'))} |"
            )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--budget", type=int, default=100, help="evaluations on the test functions")
    parser.add_argument("--real-budget", type=int, default=50,
                        help="evaluations on the gradient-boosting θ-subproblem")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--problems", default=",".join(PROBLEMS))
    parser.add_argument("--data-dir", default=str(REPO.parent / "shared" / "data"))
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (runs in parallel)")
    parser.add_argument("--out", help="write the per-seed results to this JSON file")
    args = parser.parse_args(argv)
    methods = [m for m in args.methods.split(",") if m]
    problems = [p for p in args.problems.split(",") if p]
    for m in methods:
        if m not in METHODS:
            parser.error(f"unknown method {m!r}; choose from {', '.join(METHODS)}")
    for p in problems:
        if p not in PROBLEMS:
            parser.error(f"unknown problem {p!r}; choose from {', '.join(PROBLEMS)}")
    if "optuna_gp" in methods:
        try:
            import optuna  # noqa: F401
            import torch  # noqa: F401
        except ImportError as err:
            print(f"skipping optuna_gp ({err}); pip install optuna torch", file=sys.stderr)
            methods.remove("optuna_gp")
    tasks = [
        (p, m, seed, args.real_budget if p == "gb_fri_c2" else args.budget, args.data_dir)
        for p in problems for seed in range(args.seeds) for m in methods
    ]
    start = time.perf_counter()
    results = []
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            for r in pool.map(one_run, tasks):
                results.append(r)
    else:
        for task in tasks:
            results.append(one_run(task))
    elapsed = time.perf_counter() - start
    print(
        f"θ-min solvers: {args.seeds} seeds, {args.budget} evaluations on the test functions, "
        f"{args.real_budget} on gb_fri_c2; median regret; s/ask = optimiser seconds per "
        f"evaluation (mean over seeds); {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, jobs={args.jobs}, wall {elapsed / 60:.1f} min"
    )
    print()
    print(table(results, methods, problems))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(results), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
