"""Where the time of a search goes, per evaluation.

For each problem × executor × method, one run of ``--max-evals`` evaluations is timed by wrappers
around the public seams, never inside the package:

* **solver** — the θ- and z-solvers' ``setup``, ``update_problem``, ``ask``, ``ask_cheap``,
  ``tell`` and ``best`` (each solver instance the optimiser's factories create is wrapped);
* **engine** — the objective call (cache, executor dispatch, data transfer, result, journal
  write) minus the evaluation itself;
* **evaluation** — the evaluations' own ``duration`` as the executor measured it (a worker's fit,
  predict and scoring);
* **loop** — what is left of the wall clock: the optimiser's own bookkeeping (ADMM's steps,
  recorder, budget checks). For the peers (Optuna's samplers) solver and loop are one number,
  "solver+loop", as their loop is theirs.

The breakdown is given per evaluation over the windows that end at 50, 200 and 1000 observations
(evaluations 1–50, 51–200, 201–1000), for the serial and the process executor, on the artificial
objective of Liu et al. (2020, App. 15; microseconds per evaluation, so everything else is
overhead) and on scikit-learn's breast-cancer data (``paper_large`` space, 1 − AUROC on one fixed
80/20 split). Methods: the package's default ADMM, ``AdADMM-F16(BO,Ba)``; random search over the
joint box on the same engine; Optuna's TPE and GP samplers through the same engine (the GP sampler
needs torch, and as its ask grows with the cube of the observations it stops at ``--gp-max-evals``).
A run with an evaluation budget is not overhead-aware (no cheap proposals), so these tables show
the solvers' own cost.

Then the headline question, whether the search pays for its own overhead: on the artificial objective, ``--seconds`` of wall clock (serial
executor, as the benchmark runner uses for it), the default ADMM against random search, and the
default ADMM with an evaluation budget of 1000 (no time budget, so no cheap proposals) for the
quality at equal evaluation counts: evaluations made, the best loss, the best loss after 50, 200
and 1000 evaluations, and how many of ADMM's sub-solver proposals were cheap ones.

``--before PATH`` runs the same measurements on another checkout (e.g. main before this change,
``PYTHONPATH=PATH``) in a subprocess first and prints its tables next to this one's, with ratios.

Usage::

    .venv/bin/python experiments/overhead.py --smoke                 # seconds (make smoke)
    .venv/bin/python experiments/overhead.py --before ../main        # the full tables

Only the public hooks are used, so the script runs against older checkouts too (a feature they
lack — the Optuna GP peer, overhead-awareness — is left out there and shown as "—").
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402

METHODS = ("ADMM", "Random", "Optuna(TPE)", "Optuna(GP)")
LABELS = {"ADMM": "AdADMM-F16(BO,Ba)", "Random": "Random"}
PROBLEMS = ("artificial", "breast_cancer")
EXECUTORS = ("serial", "process")
CHECKPOINTS = (50, 200, 1000)
PARTS = ("solver", "loop", "engine", "evaluation")
SOLVER_METHODS = ("setup", "update_problem", "ask", "ask_cheap", "tell", "best")


# ----------------------------------------------------------------------------- timers
class Clock:
    """Seconds spent in the solvers, in the engine and in the evaluations, and a snapshot of the
    running totals after every new evaluation."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.solver = self.engine = self.evaluation = 0.0
        self.snapshots: list[tuple[float, float, float, float]] = []  # (wall, solver, engine, eval)
        self.losses: list[float] = []

    def snapshot(self) -> None:
        self.snapshots.append(
            (time.perf_counter() - self.t0, self.solver, self.engine, self.evaluation))


def timed_solvers(factory: Callable[[], Any], clock: Clock) -> Callable[[], Any]:
    """A factory whose solvers count the time of their public calls into ``clock.solver``."""

    def wrap(method: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                clock.solver += time.perf_counter() - start
        return timed

    def make() -> Any:
        solver = factory()
        for name in SOLVER_METHODS:
            if hasattr(solver, name):
                setattr(solver, name, wrap(getattr(solver, name)))
        return solver

    return make


def timed_engine(engine: Callable[..., Any], clock: Clock) -> Callable[..., Any]:
    """The objective, counting its time (less the evaluations' own) and snapshotting the totals
    after each new evaluation."""

    def call(requests: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        observations = engine(requests, **kwargs)
        spent = time.perf_counter() - start
        fresh = [o for o in observations if not o.cached]
        evaluation = sum(float(o.duration) for o in fresh)
        clock.evaluation += evaluation
        clock.engine += spent - evaluation
        for obs in fresh:
            clock.losses.append(float(obs.loss))
            clock.snapshot()
        return observations

    return call


# ----------------------------------------------------------------------------- one run
def make_problem(name: str):
    from admm_automl.benchmarks.runner import artificial_problem, data_problem

    if name == "artificial":
        return artificial_problem()
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    return data_problem("breast_cancer", X, y)


def supports_overhead_aware() -> bool:
    from admm_automl.methods.driver import RunOptions

    return "overhead_aware" in {f.name for f in dataclasses.fields(RunOptions)}


def run_one(problem_name: str, executor: str, method: str, *, seed: int,
            max_evals: int | None = None, time_budget: float | None = None,
            overhead_aware: bool | None = None) -> dict[str, Any]:
    """One timed run; returns the snapshots, the losses and the run's summary numbers."""
    from admm_automl.methods.driver import Budget, Schedule
    from admm_automl.benchmarks import peers
    from admm_automl.benchmarks.runner import open_run, parse_method
    from admm_automl.methods.registry import make_optimizer
    from admm_automl.run.setup import benchmark_seeds

    # the benchmark runner's set-up, but with the executor asked for (both are measured), the
    # run header made before the start-up is timed, and the optimiser built below, so that its
    # solvers can be timed
    problem = dataclasses.replace(make_problem(problem_name), isolate=executor == "process")
    header = problem.header(seed)
    with tempfile.TemporaryDirectory() as out:  # the journal is written, as in a real run
        started = time.perf_counter()
        objective = open_run(problem, seed, out_dir=out, header=header)
        startup = time.perf_counter() - started
        clock = Clock()
        engine = timed_engine(objective, clock)
        extra: dict[str, Any] = {}
        try:
            if method in LABELS:
                spec = parse_method(LABELS[method])
                options: dict[str, Any] = {}
                if overhead_aware is not None and supports_overhead_aware():
                    options["overhead_aware"] = overhead_aware
                optimizer = make_optimizer(
                    spec.kind, problem.space.encoding, engine, theta_solver=spec.theta_solver,
                    z_solver=spec.z_solver, rho=spec.rho,
                    schedule=spec.schedule if spec.kind == "admm" else Schedule(),
                    max_evals=max_evals, time_budget=time_budget,
                    seed=benchmark_seeds(seed).solvers, n_train=problem.n_train, **options)
                optimizer.theta_solver = timed_solvers(optimizer.theta_solver, clock)
                if hasattr(optimizer, "z_solver"):
                    optimizer.z_solver = timed_solvers(optimizer.z_solver, clock)
                clock.t0 = time.perf_counter()
                result = optimizer.run()
                trace = result.trace[-1] if result.trace else {}
                extra = {k: trace[k] for k in ("solver_proposals", "cheap_proposals") if k in trace}
            else:
                sampler = "gp" if method == "Optuna(GP)" else "tpe"
                if sampler not in peers.OPTUNA_SAMPLERS:
                    return {"skipped": f"this checkout has no Optuna {sampler} peer"}
                clock.t0 = time.perf_counter()
                budget = Budget(max_evals, time_budget)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    peers.run_optuna(problem.space, engine, budget, seed=seed, option=sampler)
        finally:
            objective.close()
    return {"snapshots": clock.snapshots, "losses": clock.losses, "startup": startup,
            "peer": method not in LABELS, **extra}


def breakdown(run: dict[str, Any], lo: int, hi: int) -> dict[str, float] | None:
    """Milliseconds per evaluation in each part over evaluations lo+1 … hi (None: not reached)."""
    snaps = run.get("snapshots") or []
    if len(snaps) < hi:
        return None
    a = snaps[lo - 1] if lo > 0 else (0.0, 0.0, 0.0, 0.0)
    b = snaps[hi - 1]
    wall, solver, engine, evaluation = ((y - x) * 1e3 / (hi - lo) for x, y in zip(a, b))
    if run.get("peer"):
        return {"solver": math.nan, "loop": wall - engine - evaluation, "engine": engine,
                "evaluation": evaluation, "wall": wall}
    return {"solver": solver, "loop": wall - solver - engine - evaluation, "engine": engine,
            "evaluation": evaluation, "wall": wall}


def best_at(losses: list[float], k: int) -> float:
    finite = [v for v in losses[:k] if math.isfinite(v)]
    return min(finite) if finite and len(losses) >= k else math.nan


# ----------------------------------------------------------------------------- the whole set
def measure(args: argparse.Namespace) -> dict[str, Any]:
    checkpoints = [c for c in CHECKPOINTS if c <= args.max_evals] or [args.max_evals]
    runs = []
    for problem in args.problems:
        for executor in args.executors:
            for method in args.methods:
                n = args.max_evals if method != "Optuna(GP)" else min(args.max_evals,
                                                                      args.gp_max_evals)
                start = time.perf_counter()
                run = run_one(problem, executor, method, seed=args.seed, max_evals=n)
                run.update(problem=problem, executor=executor, method=method,
                           seconds=time.perf_counter() - start)
                run["windows"] = {}
                lo = 0
                for c in checkpoints:
                    run["windows"][c] = breakdown(run, lo, c)
                    lo = c
                run.pop("snapshots", None)
                runs.append(run)
                print(f"  {problem}/{executor}/{method}: {run['seconds']:.1f} s", file=sys.stderr)
    headline = []
    if args.seconds > 0:
        for seed in range(args.headline_seeds):
            row: dict[str, Any] = {"seed": seed}
            for key, method, kwargs in (
                ("admm", "ADMM", {"time_budget": args.seconds}),
                ("random", "Random", {"time_budget": args.seconds}),
                ("admm_evals", "ADMM", {"max_evals": args.equal_evals, "overhead_aware": False}),
            ):
                run = run_one("artificial", "serial", method, seed=seed, **kwargs)
                row[key] = {"n_evals": len(run["losses"]),
                            "best": best_at(run["losses"], len(run["losses"])),
                            **{f"best@{c}": best_at(run["losses"], c) for c in CHECKPOINTS},
                            **{k: run[k] for k in ("cheap_proposals", "solver_proposals")
                               if k in run}}
            headline.append(row)
            print(f"  headline seed {seed} done", file=sys.stderr)
    return {"runs": runs, "headline": headline, "checkpoints": checkpoints,
            "machine": machine()}


def machine() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else math.nan
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}, load average {load:.1f} at the start")


# ----------------------------------------------------------------------------- report
def fmt(v: float | None) -> str:
    if v is None or not np.isfinite(v):
        return "—"
    return f"{v:.3g}" if abs(v) >= 0.01 else f"{v:.1e}"


def tables(now: dict[str, Any], before: dict[str, Any] | None) -> str:
    out = []
    cps = now["checkpoints"]
    head = "| problem | executor | method | window | " + " | ".join(f"{p} ms" for p in PARTS)
    head += " | total ms/eval | overhead ms/eval |"
    sep = "|---|---|---|---|" + "---:|" * (len(PARTS) + 2)
    if before is not None:
        head += " before: total | before: overhead | overhead ×before |"
        sep += "---:|---:|---:|"
    out += ["Milliseconds per evaluation (overhead = everything but the evaluation itself)", "",
            head, sep]
    old = {(r["problem"], r["executor"], r["method"]): r for r in (before or {}).get("runs", [])}
    for r in now["runs"]:
        lo = 0
        for c in cps:
            w = r["windows"].get(c) or r["windows"].get(str(c))
            label = f"{lo + 1}–{c}"
            lo = c
            if r.get("skipped"):
                cells = ["—"] * (len(PARTS) + 2)
            elif w is None:
                cells = ["—"] * (len(PARTS) + 2)
            else:
                over = w["wall"] - w["evaluation"]
                cells = [fmt(w[p]) if not (p == "solver" and r.get("peer")) else "(in loop)"
                         for p in PARTS] + [fmt(w["wall"]), fmt(over)]
            line = f"| {r['problem']} | {r['executor']} | {r['method']} | {label} | " + " | ".join(cells)
            if before is not None:
                o = old.get((r["problem"], r["executor"], r["method"]))
                ow = None if o is None or o.get("skipped") else (
                    o["windows"].get(str(c)) or o["windows"].get(c))
                if ow is None or w is None:
                    line += " | — | — | —"
                else:
                    o_over = ow["wall"] - ow["evaluation"]
                    ratio = (w["wall"] - w["evaluation"]) / o_over if o_over > 0 else math.nan
                    line += f" | {fmt(ow['wall'])} | {fmt(o_over)} | {fmt(ratio)}"
            out.append(line + " |")
    out.append("")
    out.append(ratio_table(now))
    if now["headline"]:
        out += ["", headline_table(now, "now")]
    if before is not None and before.get("headline"):
        out += ["", headline_table(before, "before")]
    return "\n".join(out)


def ratio_table(res: dict[str, Any]) -> str:
    """Overhead per evaluation of ADMM relative to each reference, per window."""
    lines = ["Overhead per evaluation, ADMM ÷ reference (same problem, executor and window)", "",
             "| problem | executor | window | ÷ Random | ÷ Optuna(TPE) | ÷ Optuna(GP) |",
             "|---|---|---|---:|---:|---:|"]
    by = {(r["problem"], r["executor"], r["method"]): r for r in res["runs"]}
    for (problem, executor, method), r in by.items():
        if method != "ADMM":
            continue
        lo = 0
        for c in res["checkpoints"]:
            cells = []
            for ref in ("Random", "Optuna(TPE)", "Optuna(GP)"):
                a, b = (x["windows"].get(c) if x else None
                        for x in (r, by.get((problem, executor, ref))))
                if a is None or b is None:
                    cells.append("—")
                else:
                    denom = b["wall"] - b["evaluation"]
                    cells.append(fmt((a["wall"] - a["evaluation"]) / denom if denom > 0 else math.nan))
            lines.append(f"| {problem} | {executor} | {lo + 1}–{c} | " + " | ".join(cells) + " |")
            lo = c
    return "\n".join(lines)


def headline_table(res: dict[str, Any], label: str) -> str:
    lines = [f"Headline ({label}): artificial objective, serial executor; median over "
             f"{len(res['headline'])} seed(s)", "",
             "| run | evaluations | best loss | best@50 | best@200 | best@1000 | cheap proposals |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    names = {"admm": "ADMM, time budget", "random": "Random, time budget",
             "admm_evals": "ADMM, evaluation budget (no cheap proposals)"}
    for key, name in names.items():
        rows = [h[key] for h in res["headline"] if key in h]
        if not rows:
            continue
        med = lambda k: float(np.nanmedian([r.get(k, math.nan) for r in rows]))  # noqa: E731
        cheap = [r.get("cheap_proposals") for r in rows if "cheap_proposals" in r]
        cheap_text = (f"{np.median(cheap):.0f} of {np.median([r['solver_proposals'] + r['cheap_proposals'] for r in rows]):.0f}"
                      if cheap else "—")
        lines.append(f"| {name} | {med('n_evals'):.0f} | {fmt(med('best'))} | {fmt(med('best@50'))} "
                     f"| {fmt(med('best@200'))} | {fmt(med('best@1000'))} | {cheap_text} |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- main
def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true",
                        help="tiny budgets, artificial objective only, serial and process (seconds)")
    parser.add_argument("--max-evals", type=int, default=1000)
    parser.add_argument("--gp-max-evals", type=int, default=200,
                        help="evaluations of the Optuna GP peer (its ask grows as n³)")
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="the headline's time budget (0: no headline)")
    parser.add_argument("--headline-seeds", type=int, default=3)
    parser.add_argument("--equal-evals", type=int, default=1000,
                        help="evaluation budget of the headline's equal-count ADMM run")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--problems", default=",".join(PROBLEMS))
    parser.add_argument("--executors", default=",".join(EXECUTORS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--before", help="another checkout to measure first (PYTHONPATH)")
    parser.add_argument("--json", help="write the measurements to this file")
    args = parser.parse_args(argv)
    if args.smoke:
        args.max_evals, args.gp_max_evals, args.seconds = 30, 12, 2.0
        args.headline_seeds, args.equal_evals = 1, 30
        args.problems, args.methods = "artificial", "ADMM,Random,Optuna(TPE)"
    args.methods = [m for m in args.methods.split(",") if m]
    args.problems = [p for p in args.problems.split(",") if p]
    args.executors = [e for e in args.executors.split(",") if e]
    for values, allowed, what in ((args.methods, METHODS, "method"),
                                  (args.problems, PROBLEMS, "problem"),
                                  (args.executors, EXECUTORS, "executor")):
        for v in values:
            if v not in allowed:
                parser.error(f"unknown {what} {v!r}; choose from {', '.join(allowed)}")
    return args


def without_options(argv: list[str], names: tuple[str, ...]) -> list[str]:
    """``argv`` less the options ``names`` and their values (``--x v`` or ``--x=v``)."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in names:
            skip = True
        elif not any(a.startswith(n + "=") for n in names):
            out.append(a)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse(argv)
    before = None
    if args.before:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "before.json"
            rest = without_options(argv, ("--before", "--json"))
            env = {**os.environ, "PYTHONPATH": str(Path(args.before).resolve())}
            print(f"measuring {args.before} first ...", file=sys.stderr)
            subprocess.run([sys.executable, __file__, *rest, "--json", str(path)], env=env,
                           check=True)
            before = json.loads(path.read_text())
    start = time.perf_counter()
    now = measure(args)
    now["wall_minutes"] = (time.perf_counter() - start) / 60
    if args.json:
        Path(args.json).write_text(json.dumps(now, default=float))
    print(f"Overhead per evaluation: seed {args.seed}, up to {args.max_evals} evaluations "
          f"(Optuna GP: {args.gp_max_evals}); {now['machine']}; {now['wall_minutes']:.1f} min")
    print()
    print(tables(now, before))
    return 0


if __name__ == "__main__":
    sys.exit(main())
