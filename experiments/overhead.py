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

``overhead.py pending`` measures one thing more closely: the CPU time (``time.process_time``)
of ONE proposal with ``--pending`` trials pending (63: a search with 64 workers), after ``N``
observations, in the steady state of an asynchronous run (a trial ends and is told, its worker
gets the next proposal); for ``bo`` and every z-solver that declares asking with pending points,
asked as the package's asynchronous loop asks them, and for Optuna's TPE (constant liar) and GP
samplers asked as a user with 64 workers asks them (``study.ask()`` with 63 trials RUNNING). The
median, 90th percentile and mean per N, and the ratio to Optuna's TPE (see :func:`steady_asks`,
:func:`steady_optuna_asks`).

``overhead.py workers`` measures what starting worker processes costs a search: ``--fits``
searches in one process, one after the other, each of ``--evals`` evaluations on one worker
process with ``trial_timeout`` 0.5 s, on a space whose only learner sleeps U(0, 1) s in ``fit``
(``admm_automl.testing.SleepingClassifier``), so about half of the trials are stopped at their
limit and their worker replaced. Per search: its wall clock, the trials' own seconds, the rest
(set-up, worker starts, the refit: what the trials did not use) and that rest per stopped trial.
The first search of the process starts its workers cold; the later ones show what a session's
second search, and every replacement, costs.

``--before PATH`` runs the same measurements on another checkout (e.g. main before this change,
``PYTHONPATH=PATH``) in a subprocess first and prints its tables next to this one's, with ratios.

Usage::

    .venv/bin/python experiments/overhead.py --smoke                 # seconds (make smoke)
    .venv/bin/python experiments/overhead.py --before ../main        # the full tables
    .venv/bin/python experiments/overhead.py pending --smoke         # seconds (make smoke)
    nice .venv/bin/python experiments/overhead.py pending --ask 1 5  # 63 pending, N 50/200/1000
    .venv/bin/python experiments/overhead.py workers --smoke         # seconds (make smoke)
    nice .venv/bin/python experiments/overhead.py workers --before ../main-before

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
    from admm_automl.clock import Deadline
    from admm_automl.methods.driver import Budget, Schedule
    from admm_automl.benchmarks import peers
    from admm_automl.benchmarks.runner import open_run, parse_method
    from admm_automl.methods.registry import make_optimizer
    from admm_automl.run.seeds import benchmark_seeds

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
                budget = Budget(max_evals, Deadline(time_budget))
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


# ----------------------------------------------------------------------------- pending mode
# ``overhead.py pending``: the CPU time of ONE proposal with W − 1 trials pending, as a search
# with W workers asks it in its steady state (a trial ends, is told, and its worker gets the
# next proposal while the other W − 1 are still running), for the package's solvers that
# declare asking with pending points and for Optuna's samplers asked the same way.
PENDING_THETA = ("bo",)
#: Optuna's samplers of the pending mode (the GP sampler needs torch)
PENDING_PEERS = ("Optuna(TPE)", "Optuna(GP)")


def pending_solvers() -> tuple[str, ...]:
    """``bo`` and every registered z-solver that declares asking with pending points
    (``supports_batch``): the bandit ``cmab``, ``flash``'s model and uniform ``random``."""
    from admm_automl.solvers.registry import Z_SOLVERS

    return PENDING_THETA + tuple(n for n in Z_SOLVERS.names()
                                 if Z_SOLVERS.get(n).supports_batch)


class ArtificialSetting:
    """The one problem every proposer of the pending mode faces: the artificial objective of
    Liu et al. (2020, App. 15) over ``paper_large`` (function seed 0). ``bo`` searches its joint
    box (JOPT's: a relaxed categorical per module and every hyperparameter, 95 coordinates) or
    ADMM's θ-step of the pipeline with the most hyperparameters (18 active coordinates, the
    largest θ-step of the space; the others at their defaults, the quadratic penalty at ρ = 1
    centred on the defaults), the z-solvers its pipelines at the default hyperparameters
    (ADMM's z-step with θ at the defaults), Optuna the same space define-by-run (the benchmark
    peer's ``_optuna_point``)."""

    def __init__(self) -> None:
        from admm_automl.benchmarks.artificial import ArtificialObjective
        from admm_automl.benchmarks.runner import artificial_problem
        from admm_automl.problem import all_pipelines
        from admm_automl.space.joint import JointSpace

        self.space = artificial_problem().space
        self.encoding = self.space.encoding
        self.function = ArtificialObjective(self.space, seed=0)
        self.joint = JointSpace(self.encoding)
        self.theta0 = self.encoding.project(self.encoding.initial_theta)
        pipelines = [tuple(int(j) for j in p) for p in all_pipelines(self.encoding.n_choices)]
        self.step_z = max(pipelines, key=lambda z: len(self.encoding.active(z)))
        self.step_active = self.encoding.active(self.step_z)

    def joint_value(self, x: np.ndarray) -> float:
        return self.function.value(*self.joint.decode(x))

    def z_value(self, z: Any) -> float:
        return self.function.value(tuple(int(j) for j in z), self.theta0)

    def step_value(self, x: np.ndarray) -> float:
        theta = self.theta0.copy()
        theta[self.step_active] = np.clip(np.asarray(x, dtype=float), 0.0, 1.0)
        return self.function.value(self.step_z, theta)

    def theta_dim(self, box: str) -> int:
        return self.joint.dim if box == "joint" else len(self.step_active)

    def theta_value(self, box: str) -> Callable[[np.ndarray], float]:
        return self.joint_value if box == "joint" else self.step_value


def package_problem(setting: ArtificialSetting, kind: str, width: int,
                    history: list, box: str = "joint") -> Any:
    """The sub-problem a package solver is set up on: ``batch_size`` the number of workers, as
    an asynchronous run of ``width`` workers passes it. Nothing is evaluated through it here
    (the loop below asks and tells), so ``evaluate`` only answers a stray call."""
    from admm_automl.problem import QuadraticPenalty, ThetaProblem, ZProblem
    from admm_automl.records import Observation

    if kind == "theta":
        value = setting.theta_value(box)

        def evaluate(suggestions: Any) -> list:
            return [Observation(loss=value(s.config)) for s in suggestions]

        if box == "joint":
            joint = setting.joint
            # an ADMM θ-problem's penalty (vectorised), at ρ = 0: JOPT has none
            penalty = QuadraticPenalty(0.0, np.zeros(joint.dim, dtype=bool), np.zeros(0))
            return ThetaProblem(dim=joint.dim, evaluate=evaluate, augment=lambda x, o: o.loss,
                                penalty=penalty, discrete=joint.discrete, names=joint.names,
                                history=history, batch_size=width, grids=joint.grids)
        enc, active = setting.encoding, setting.step_active
        is_d = np.asarray(enc.discrete)[active]
        penalty = QuadraticPenalty(1.0, is_d, setting.theta0[active][is_d])
        return ThetaProblem(dim=len(active), evaluate=evaluate,
                            augment=lambda x, o: o.loss + penalty(x), penalty=penalty,
                            discrete=is_d, names=tuple(enc.theta_names[i] for i in active),
                            history=history, start=setting.theta0[active].copy(),
                            batch_size=width, grids=tuple(enc.grids[i] for i in active))

    def evaluate_z(suggestions: Any) -> list:
        return [Observation(loss=setting.z_value(s.config)) for s in suggestions]

    enc = setting.encoding
    return ZProblem(n_choices=enc.n_choices, evaluate=evaluate_z, augment=lambda z, o: o.loss,
                    module_names=enc.module_names, choice_names=enc.choice_names,
                    history=history, batch_size=width)


def steady_asks(setting: ArtificialSetting, solver_name: str, n_observed: int, width: int,
                n_proposals: int, ask: int, seed: int, box: str = "joint") -> dict[str, Any]:
    """CPU milliseconds per proposal of a package solver with ``width − 1`` trials pending.

    ``n_observed`` observations first: ``bo`` gets them as its problem's history (uniform
    points of its box, ``box`` "joint" or "step" (:class:`ArtificialSetting`): how ADMM hands a
    θ-solver the earlier iterations' points; the GP is fitted on them at the first ask); a
    z-solver makes them itself, ask then tell one at a
    time (``cmab`` keeps no statistics of a history). Then every worker is handed a proposal at
    once (``ask_batch(width)``, the asynchronous loop's first ask; not timed), and the steady
    state: the oldest trial ends and is told, leaving ``width − 1`` pending, and the freed
    worker's proposal is asked — ``ask_batch(1)``, as :meth:`RunLoop._run_async` asks when
    one worker frees with the rest of the width in flight; with ``ask > 1``, ``ask_batch(ask)``
    when the queue is empty and the queued ones handed to the next workers to free, as it asks
    ahead when other steps hold workers (the queued suggestions are pending meanwhile). Each
    sample is one ``ask_batch`` call's ``time.process_time`` over the proposals it made."""
    from collections import deque

    from admm_automl.records import Observation
    from admm_automl.solvers.registry import THETA_SOLVERS, Z_SOLVERS

    rng = np.random.default_rng(seed)
    kind = "theta" if solver_name in THETA_SOLVERS else "z"
    value = setting.theta_value(box) if kind == "theta" else setting.z_value
    history: list = []
    if kind == "theta":
        for x in rng.uniform(0.0, 1.0, size=(n_observed, setting.theta_dim(box))):
            history.append((x, Observation(loss=value(x))))
    params = {"loss_bound": 5.0} if solver_name == "cmab" else {}  # scale.py's (App. 15 scale)
    registry = THETA_SOLVERS if kind == "theta" else Z_SOLVERS
    solver = registry.get(solver_name)(**params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        solver.setup(package_problem(setting, kind, width, history, box),
                     np.random.default_rng(seed))
        if kind == "z":
            for _ in range(n_observed):
                s = solver.ask()
                solver.tell(s, Observation(loss=value(s.config)))
        flying = deque(solver.ask_batch(width))
        queue: deque = deque()
        samples: list[float] = []
        made = 0
        while made < n_proposals:
            done = flying.popleft()
            solver.tell(done, Observation(loss=value(done.config)))
            if not queue:
                start = time.process_time()
                batch = solver.ask_batch(ask)
                spent = time.process_time() - start
                samples.append(spent * 1e3 / len(batch))
                made += len(batch)
                queue.extend(batch)
            flying.append(queue.popleft())
    return {"samples": samples, "proposals": made, "pending": width - 1}


def steady_optuna_asks(setting: ArtificialSetting, sampler: str, n_observed: int, width: int,
                       n_proposals: int, seed: int) -> dict[str, Any]:
    """CPU milliseconds per proposal of Optuna's sampler asked as a user with ``width`` workers
    asks it: ``n_observed`` completed trials (uniform ones, made by Optuna's RandomSampler and
    added to the study), ``width`` trials asked (RUNNING; not timed), then the steady state —
    the oldest is told, and one ``study.ask()`` with its define-by-run suggestions (the
    benchmark peer's space; TPE samples at each ``suggest_*``) is timed with ``width − 1``
    trials running. TPE with ``constant_liar=True`` (Optuna's advice for parallel runs: the
    running trials count as bad ones); the GP sampler with its defaults (Optuna 3.6+; torch)."""
    from collections import deque

    import optuna
    from admm_automl.benchmarks.peers import _optuna_point

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = setting.space

    def objective(trial: Any) -> float:
        return setting.function.value(*_optuna_point(trial, space))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ExperimentalWarning: constant_liar, GPSampler
        if sampler == "Optuna(GP)":
            chosen = optuna.samplers.GPSampler(seed=seed)
        else:
            chosen = optuna.samplers.TPESampler(seed=seed, constant_liar=True)
        made = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
        made.optimize(objective, n_trials=n_observed)
        study = optuna.create_study(direction="minimize", sampler=chosen)
        study.add_trials(made.trials)

        def propose() -> tuple[Any, tuple, float]:
            start = time.process_time()
            trial = study.ask()
            point = _optuna_point(trial, space)
            return trial, point, (time.process_time() - start) * 1e3

        running = deque(propose()[:2] for _ in range(width))
        samples: list[float] = []
        while len(samples) < n_proposals:
            trial, point = running.popleft()
            study.tell(trial, setting.function.value(*point))
            trial, point, ms = propose()
            samples.append(ms)
            running.append((trial, point))
    return {"samples": samples, "proposals": len(samples), "pending": width - 1}


def torch_missing() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is None


def problem_label(setting: ArtificialSetting, name: str, box: str | None) -> str:
    if name in PENDING_PEERS:
        return "space, define-by-run"
    if box is None:
        return f"{int(np.prod(setting.encoding.n_choices))} pipelines"
    return f"{'joint box' if box == 'joint' else 'θ-step'}, {setting.theta_dim(box)} coordinates"


def measure_pending(args: argparse.Namespace) -> dict[str, Any]:
    setting = ArtificialSetting()
    rows = []
    for n in args.observed:
        for name in args.solvers:
            asks = [1] if name in PENDING_PEERS else args.ask
            boxes = args.theta_box if name in PENDING_THETA else [None]
            for box, ask in ((b, a) for b in boxes for a in asks):
                row: dict[str, Any] = {"solver": name, "observed": n, "ask": ask,
                                       "problem": problem_label(setting, name, box)}
                start = time.perf_counter()
                if name == "Optuna(GP)" and torch_missing():
                    row["skipped"] = "torch is not installed"
                elif name == "Optuna(GP)" and n > args.gp_max_observed:
                    row["skipped"] = f"beyond --gp-max-observed {args.gp_max_observed}"
                else:
                    runs = [steady_optuna_asks(setting, name, n, args.pending + 1,
                                               args.proposals, seed)
                            if name in PENDING_PEERS else
                            steady_asks(setting, name, n, args.pending + 1, args.proposals,
                                        ask, seed, box)
                            for seed in args.seeds]
                    # the seeds' samples pooled; each seed's median beside them
                    row.update(samples=[v for r in runs for v in r["samples"]],
                               proposals=sum(r["proposals"] for r in runs),
                               seed_medians=[float(np.median(r["samples"])) for r in runs])
                row["seconds"] = time.perf_counter() - start
                rows.append(row)
                print(f"  {name} {row['problem']} N={n} ask={ask}: "
                      f"{row.get('skipped') or '%.1f s' % row['seconds']}", file=sys.stderr)
    return {"rows": rows, "machine": machine(), "pending": args.pending, "seeds": args.seeds}


def pending_table(res: dict[str, Any]) -> str:
    """Median, 90th percentile and mean CPU ms per proposal, and the median's ratio to Optuna's
    TPE at the same number of observations."""
    tpe = {r["observed"]: float(np.median(r["samples"])) for r in res["rows"]
           if r["solver"] == "Optuna(TPE)" and r.get("samples")}
    lines = [f"CPU ms per proposal with {res['pending']} trials pending (time.process_time, "
             "single-threaded BLAS)", "",
             "| solver | problem | observations N | asked per search | proposals | median ms "
             "| p90 ms | mean ms | median ÷ Optuna(TPE) | median per seed |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in res["rows"]:
        label = r["solver"] + (", constant liar" if r["solver"] == "Optuna(TPE)" else "")
        if r.get("skipped"):
            lines.append(f"| {label} | {r.get('problem', '')} | {r['observed']} | — | — | "
                         f"not run: {r['skipped']} | — | — | — | — |")
            continue
        s = np.asarray(r["samples"], dtype=float)
        med = float(np.median(s))
        ref = tpe.get(r["observed"])
        ratio = fmt(med / ref) if ref else "—"
        lines.append(f"| {label} | {r.get('problem', '')} | {r['observed']} | {r['ask']} "
                     f"| {r['proposals']} | "
                     f"{fmt(med)} | {fmt(float(np.percentile(s, 90)))} | {fmt(float(s.mean()))} "
                     f"| {ratio} | {', '.join(fmt(v) for v in r.get('seed_medians', []))} |")
    return "\n".join(lines)


def parse_pending(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="overhead.py pending",
        description="CPU time of one proposal with trials pending, the package's solvers "
                    "beside Optuna's samplers asked the same way")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (seconds)")
    parser.add_argument("--pending", type=int, default=63,
                        help="trials pending at each timed proposal (workers − 1)")
    parser.add_argument("--observed", type=int, nargs="+", default=[50, 200, 1000],
                        help="observations N before the pending trials")
    parser.add_argument("--proposals", type=int, default=50,
                        help="steady-state proposals timed per solver and N")
    parser.add_argument("--ask", type=int, nargs="+", default=[1],
                        help="proposals per ask_batch of a package solver: 1 (one worker "
                             "freed, the rest in flight), or the asynchronous loop's ask-ahead "
                             "(1 + workers // 16 = 5 at 64 workers)")
    parser.add_argument("--solvers", default=None,
                        help="comma-separated; default: bo, every z-solver that declares "
                             "pending asks, Optuna(TPE), Optuna(GP)")
    parser.add_argument("--theta-box", nargs="+", default=["step", "joint"],
                        choices=["step", "joint"],
                        help="bo's problem: ADMM's largest θ-step (18 coordinates) and/or the "
                             "joint box (95)")
    parser.add_argument("--gp-max-observed", type=int, default=200,
                        help="largest N for Optuna's GP sampler (its ask grows as N³)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                        help="seeds of the history and the solvers; their samples are pooled")
    parser.add_argument("--json", help="write the measurements to this file")
    args = parser.parse_args(argv)
    if args.smoke:
        args.seeds = [0]
        args.pending, args.observed, args.proposals = 7, [20], 4
        args.gp_max_observed = 20
    allowed = pending_solvers() + PENDING_PEERS
    args.solvers = [s for s in (args.solvers or ",".join(allowed)).split(",") if s]
    for s in args.solvers:
        if s not in allowed:
            parser.error(f"unknown solver {s!r}; choose from {', '.join(allowed)}")
    return args


def pending_main(argv: list[str]) -> int:
    args = parse_pending(argv)
    start = time.perf_counter()
    res = measure_pending(args)
    res["wall_minutes"] = (time.perf_counter() - start) / 60
    if args.json:
        Path(args.json).write_text(json.dumps(res, default=float))
    print(f"One proposal with {args.pending} trials pending: seeds "
          f"{' '.join(map(str, args.seeds))}, {args.proposals} steady-state proposals per seed "
          f"and row (pooled); {res['machine']}; "
          f"{res['wall_minutes']:.1f} min")
    print()
    print(pending_table(res))
    return 0


# ----------------------------------------------------------------------------- workers
SLEEPER = {"sleeper": {"class": "admm_automl.testing.SleepingClassifier", "hyperparameters": {
    "seconds": {"type": "float", "low": 0.0, "high": 1.0, "default": 0.1}}}}


def measure_workers(args: argparse.Namespace) -> dict[str, Any]:
    from sklearn.datasets import load_breast_cancer

    from admm_automl import ADMM
    from admm_automl.testing import tiny_space

    X, y = load_breast_cancer(return_X_y=True)
    fits = []
    for seed in range(args.fits):
        start = time.perf_counter()
        model = ADMM(search_space=tiny_space(SLEEPER), theta_solver="random", z_solver="random",
                     max_evals=args.evals, inner_iter=2, inner_iter_step=0, executor="process",
                     n_jobs=1, trial_timeout=0.5, cv=None, random_state=seed).fit(X, y)
        wall = time.perf_counter() - start
        history = model.history_
        fits.append({"wall": wall, "trials": float(history["duration"].sum()),
                     "evals": len(history), "stopped": int((history["status"] == "timeout").sum())})
        print(f"  search {seed}: {wall:.1f} s", file=sys.stderr)
    return {"fits": fits, "machine": machine()}


def workers_table(now: dict[str, Any], before: dict[str, Any] | None) -> str:
    """Per search: wall, the trials' seconds, the rest and the rest per stopped trial; with
    ``before``, its rest and the ratio now ÷ before."""
    head = "| search | evaluations (stopped) | wall s | trials s | rest s | rest per stopped s |"
    rule = "|---:|---|---:|---:|---:|---:|"
    if before:
        head += " before: evaluations (stopped) | rest before s | rest ÷ before |"
        rule += "---|---:|---:|"
    lines = [head, rule]
    for i, fit in enumerate(now["fits"]):
        rest = fit["wall"] - fit["trials"]
        line = (f"| {i + 1}{' (cold)' if i == 0 else ''} | {fit['evals']} ({fit['stopped']}) "
                f"| {fmt(fit['wall'])} | {fmt(fit['trials'])} | {fmt(rest)} "
                f"| {fmt(rest / max(fit['stopped'], 1))} |")
        if before:
            old = before["fits"][i] if i < len(before["fits"]) else None
            old_rest = old["wall"] - old["trials"] if old else None
            counts = f"{old['evals']} ({old['stopped']})" if old else "—"
            line += (f" {counts} | {fmt(old_rest)} | {fmt(rest / old_rest) if old_rest else '—'} |")
        lines.append(line)
    return "\n".join(lines)


def parse_workers(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="overhead.py workers",
        description="what starting worker processes costs searches with trials stopped at "
                    "their limit")
    parser.add_argument("--smoke", action="store_true", help="two searches of 4 (seconds)")
    parser.add_argument("--fits", type=int, default=5, help="searches, one after the other")
    parser.add_argument("--evals", type=int, default=20, help="evaluations per search")
    parser.add_argument("--before", help="another checkout to measure first (PYTHONPATH)")
    parser.add_argument("--json", help="write the measurements to this file")
    args = parser.parse_args(argv)
    if args.smoke:
        args.fits, args.evals = 2, 4
    return args


def workers_main(argv: list[str]) -> int:
    args = parse_workers(argv)
    before = measure_before(args.before, ["workers", *argv]) if args.before else None
    now = measure_workers(args)
    if args.json:
        Path(args.json).write_text(json.dumps(now, default=float))
    print(f"Worker starts: {args.fits} searches of {args.evals} evaluations in one process, one "
          f"worker, trial_timeout 0.5 s, fits of U(0, 1) s; {now['machine']}")
    print()
    print(workers_table(now, before))
    return 0


def measure_before(checkout: str, argv: list[str]) -> dict[str, Any]:
    """This script's measurements with ``argv`` on another checkout (``PYTHONPATH``), in a
    subprocess."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "before.json"
        rest = without_options(argv, ("--before", "--json"))
        env = {**os.environ, "PYTHONPATH": str(Path(checkout).resolve())}
        print(f"measuring {checkout} first ...", file=sys.stderr)
        subprocess.run([sys.executable, __file__, *rest, "--json", str(path)], env=env,
                       check=True)
        return json.loads(path.read_text())


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
    if argv and argv[0] == "pending":
        return pending_main(argv[1:])
    if argv and argv[0] == "workers":
        return workers_main(argv[1:])
    args = parse(argv)
    before = measure_before(args.before, argv) if args.before else None
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
