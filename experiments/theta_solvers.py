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

    # the comparison of bo with Optuna's GP sampler: 20 seeds, 50 evaluations, Hartmann-6 and
    # Branin (the defaults); Optuna's sampler runs under another interpreter when this
    # environment has no torch (Optuna caps at 3.6.1 here through flaml[blendsearch])
    .venv/bin/python experiments/theta_solvers.py --optuna-python /path/to/venv/bin/python \
        --per-seed
    # every solver, 100 evaluations, and the real θ-subproblem
    .venv/bin/python experiments/theta_solvers.py --seeds 10 --budget 100 --problems \
        branin,hartmann6,gb_fri_c2 --methods bo,skopt,rbfopt,random,optuna_gp \
        --data-dir ../shared/data
    .venv/bin/python experiments/theta_solvers.py --seeds 2 --budget 25 --methods bo  # smoke

Prints one Markdown table: per (problem, method) the median regret at the checkpoints, the
quartiles at the last one, the ratio of the medians to Optuna's GP sampler, how many seeds ended
below 0.01 (Hartmann-6 is bimodal: a run either reaches the global basin or stays at the −3.20
local minimum, regret ≈ 0.12, so this count says more than a median of 20 seeds, which sits
between the two modes when about half the runs reach each) and the optimiser's seconds per ask.
``--per-seed`` adds every seed's regret; ``--out`` keeps the per-seed trajectories as JSON.
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
        from admm_automl.run.executor import single_threaded_executor
        from admm_automl.run.header import run_header
        from admm_automl.run.seeds import benchmark_seeds
        from admm_automl.run.setup import open_objective
        from admm_automl.run.task import prepare_task
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


def optuna_gp_study(dim, seed):
    """Optuna's ``GPSampler`` (default settings) on ``dim`` floats in [0, 1], and a function that
    asks it for a point (timed together with the previous point's tell)."""
    import optuna
    import torch

    torch.set_num_threads(1)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    dists = {f"x{i}": optuna.distributions.FloatDistribution(0.0, 1.0) for i in range(dim)}
    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.GPSampler(seed=seed))
    return study, dists


def run_optuna(dim, fn, budget, seed, python=None):
    """Optuna's GP sampler driven by ``study.ask``/``study.tell``: in this process, or with
    ``python`` (another interpreter, e.g. a virtualenv with a newer Optuna and torch) in a child
    process that runs :func:`optuna_worker` and exchanges points and values over its pipes (the
    objective is evaluated here, so both interpreters see the same function)."""
    timed = Timed(fn)
    if python:
        import subprocess

        child = subprocess.Popen(
            [python, str(Path(__file__).resolve()), "--optuna-worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
            env={**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                 "MKL_NUM_THREADS": "1"},
        )
        child.stdin.write(json.dumps({"dim": dim, "seed": seed, "budget": budget}) + "\n")
        for _ in range(budget):
            x = np.array(json.loads(child.stdout.readline())["x"])
            _, value = timed(x)
            child.stdin.write(json.dumps({"value": value}) + "\n")
        seconds = json.loads(child.stdout.readline())["seconds"]
        child.wait()
        return timed.values, seconds
    study, dists = optuna_gp_study(dim, seed)
    start = time.perf_counter()
    for _ in range(budget):
        trial = study.ask(dists)
        x = np.array([trial.params[f"x{i}"] for i in range(dim)])
        _, value = timed(x)
        study.tell(trial, value)
    total = time.perf_counter() - start
    return timed.values, total - timed.seconds


def optuna_worker() -> int:
    """The child of :func:`run_optuna`: one JSON line in (dim, seed, budget), then per evaluation
    a point out and its value in; finally the seconds spent in ask and tell."""
    task = json.loads(sys.stdin.readline())
    study, dists = optuna_gp_study(task["dim"], task["seed"])
    seconds = 0.0
    for _ in range(task["budget"]):
        start = time.perf_counter()
        trial = study.ask(dists)
        seconds += time.perf_counter() - start
        print(json.dumps({"x": [trial.params[f"x{i}"] for i in range(task["dim"])]}), flush=True)
        value = json.loads(sys.stdin.readline())["value"]
        start = time.perf_counter()
        study.tell(trial, value)
        seconds += time.perf_counter() - start
    print(json.dumps({"seconds": seconds}), flush=True)
    return 0


def one_run(task):
    problem, method, seed, budget, data_dir, optuna_python = task
    warnings.filterwarnings("ignore")
    if problem == "gb_fri_c2":
        dim, fn, penalty, optimum = real_problem(data_dir)
    else:
        dim, fn, penalty, optimum = synthetic(problem)
    if method == "optuna_gp":
        values, opt_seconds = run_optuna(dim, fn, budget, seed, optuna_python)
    else:
        values, opt_seconds = run_registry_solver(method, dim, fn, penalty, budget, seed)
    return {
        "problem": problem, "method": method, "seed": seed, "budget": budget,
        "values": [float(v) for v in values], "optimum": optimum,
        "optimizer_seconds": opt_seconds, "seconds_per_ask": opt_seconds / max(1, len(values)),
    }


# ----------------------------------------------------------------------------- report
def _fmt(v: float) -> str:
    if not np.isfinite(v):
        return "—"
    return f"{v:.3g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.1e}"


def regrets(results, problems, checkpoints=CHECKPOINTS) -> dict:
    """``{(problem, method): {k: [regret after k evaluations, one per seed in seed order]}}``
    and the seconds per ask, per seed; the reference of each problem is its known optimum, or the
    best value any method and seed found in this run."""
    floor = {}
    for p in problems:
        rows = [r for r in results if r["problem"] == p]
        if rows:
            known = rows[0]["optimum"]
            floor[p] = known if known is not None else min(min(r["values"]) for r in rows)
    out: dict = {}
    for r in sorted(results, key=lambda r: (r["problem"], r["method"], r["seed"])):
        cell = out.setdefault((r["problem"], r["method"]), {"spa": [], "seeds": []})
        cell["spa"].append(r["seconds_per_ask"])
        cell["seeds"].append(r["seed"])
        for k in checkpoints:
            value = (float(np.min(r["values"][:k]) - floor[r["problem"]])
                     if len(r["values"]) >= k else math.nan)
            cell.setdefault(k, []).append(value)
    return out


def table(results, methods, problems, reference: str = "optuna_gp", at: int = 50,
          checkpoints=CHECKPOINTS) -> str:
    """One Markdown row per (problem, method): median regret at the checkpoints, the quartiles
    at ``at`` evaluations, the ratio of the medians to ``reference``'s, the seeds that ended
    below 1 % of the problem's reference scale (regret < 0.01), and the optimiser's seconds per
    ask (mean over seeds) with its ratio to ``reference``'s."""
    checkpoints = sorted(set(checkpoints) | {at})
    cells = regrets(results, problems, checkpoints)
    ks = [k for k in checkpoints if any(np.isfinite(c[k]).any() for c in cells.values())]
    lines = [
        "| problem | method | " + " | ".join(f"regret@{k}" for k in ks)
        + f" | IQR@{at} | regret@{at} ×{reference} | <0.01@{at} | s/ask | s/ask ×{reference} |",
        "|---|---|" + "---:|" * (len(ks) + 5),
    ]
    for p in problems:
        ref = cells.get((p, reference))
        for m in methods:
            c = cells.get((p, m))
            if c is None:
                continue
            med = {k: float(np.median(c[k])) for k in checkpoints}
            q1, q3 = np.percentile(c[at], [25, 75])
            spa = float(np.mean(c["spa"]))
            if ref is not None:
                b = float(np.median(ref[at]))
                ratio = med[at] / b if b > 0 else (math.inf if med[at] > 0 else 1.0)
                spa_ratio = spa / float(np.mean(ref["spa"]))
            else:
                ratio = spa_ratio = math.nan
            hits = int(np.sum(np.asarray(c[at]) < 0.01))
            lines.append(
                f"| {p} | {m} | " + " | ".join(_fmt(med[k]) for k in ks)
                + f" | {_fmt(q1)}–{_fmt(q3)} | {_fmt(ratio)} | {hits}/{len(c[at])} | {spa:.4f} | "
                f"{_fmt(spa_ratio)} |"
            )
    return "\n".join(lines)


def per_seed(results, problems, at: int = 50) -> str:
    """The regret after ``at`` evaluations of every seed (one row per problem and method)."""
    cells = regrets(results, problems, (at,))
    lines = []
    for (p, m), c in sorted(cells.items()):
        lines.append(f"{p:10s} {m:10s} " + " ".join(f"{v:.1e}" for v in c[at]))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--budget", type=int, default=50, help="evaluations on the test functions")
    parser.add_argument("--real-budget", type=int, default=50,
                        help="evaluations on the gradient-boosting θ-subproblem")
    parser.add_argument("--methods", default="bo,optuna_gp")
    parser.add_argument("--problems", default="hartmann6,branin")
    parser.add_argument("--data-dir", default=str(REPO.parent / "shared" / "data"))
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (runs in parallel)")
    parser.add_argument("--optuna-python", default=None,
                        help="interpreter that runs optuna_gp (a virtualenv with optuna and "
                             "torch); default: this one")
    parser.add_argument("--per-seed", action="store_true",
                        help="also print every seed's regret after --budget evaluations")
    parser.add_argument("--out", help="write the per-seed results to this JSON file")
    parser.add_argument("--optuna-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.optuna_worker:
        return optuna_worker()
    methods = [m for m in args.methods.split(",") if m]
    problems = [p for p in args.problems.split(",") if p]
    for m in methods:
        if m not in METHODS:
            parser.error(f"unknown method {m!r}; choose from {', '.join(METHODS)}")
    for p in problems:
        if p not in PROBLEMS:
            parser.error(f"unknown problem {p!r}; choose from {', '.join(PROBLEMS)}")
    if "optuna_gp" in methods:
        import subprocess

        python = args.optuna_python or sys.executable
        probe = subprocess.run([python, "-c", "import optuna, torch; print(optuna.__version__, "
                                "torch.__version__)"], capture_output=True, text=True)
        if probe.returncode:
            print(f"skipping optuna_gp: {python} has no optuna and torch "
                  "(pip install optuna torch, or --optuna-python)", file=sys.stderr)
            methods.remove("optuna_gp")
        else:
            optuna_versions = probe.stdout.split()
    tasks = [
        (p, m, seed, args.real_budget if p == "gb_fri_c2" else args.budget, args.data_dir,
         args.optuna_python)
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
    peer = (f"; optuna {optuna_versions[0]}, torch {optuna_versions[1]}"
            if "optuna_gp" in methods else "")
    print(
        f"θ-min solvers: {args.seeds} seeds, {args.budget} evaluations on the test functions, "
        f"{args.real_budget} on gb_fri_c2; median regret; s/ask = optimiser seconds per "
        f"evaluation (mean over seeds); {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, jobs={args.jobs}{peer}; wall {elapsed / 60:.1f} min"
    )
    print()
    reference = "optuna_gp" if "optuna_gp" in methods else methods[0]
    # the quartiles, ratios and per-seed regrets are read after the smallest budget of the run
    at = min(args.budget, args.real_budget) if "gb_fri_c2" in problems else args.budget
    print(table(results, methods, problems, reference, at))
    if args.per_seed:
        print()
        print(f"regret after {at} evaluations, seeds 0–{args.seeds - 1}:")
        print(per_seed(results, problems, at))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(results), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
