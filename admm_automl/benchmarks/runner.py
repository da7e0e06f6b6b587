"""One runner for every method of the benchmark (Liu et al. 2020, Section 5): ADMM variants, JOPT,
random search, Optuna and FLAML on the same problem, the same splits, the same engine and the same
time budget.

A *method* is named as in the paper and parsed by :func:`parse_method`:

==============================  =============================================================
``AdADMM-F16(BO,Ba)``           adaptive ADMM: θ-min by BO, z-min by the bandit (CMAB); 16
                                sub-solver iterations, +16 per ADMM iteration, up to 128
``AdADMM-F8(BO,BO)``            the same with step 8 and BO for z-min
``ADMM-I32(BO,Ba)``             fixed-I ADMM, 32 iterations per sub-problem
``AdADMM-F16(BO,BO)@cap=256``   adaptive up to 256 iterations (Liu et al.'s cap on the
                                artificial objective; 128 on data)
``JOPT(BO)``                    one θ-solver over the joint space (the splitting's baseline)
``Random``                      uniform random search over the joint space
``FLASH(BO)``                   FLASH (Zhang et al., KDD 2016): design, EIPS pruning, then the
                                θ-solver in parentheses on the pruned space
``SELECT(BLDS)@z.disc=2``       algorithm selection only (every hyperparameter at its default)
                                by the z-solver in parentheses, as Kishimoto et al. (2021) run
                                BLDS, CMAB, DAUB, Hyperband and random search
``Optuna(TPE)``                 Optuna's TPE sampler, define-by-run conditional space
``FLAML(BlendSearch)``          FLAML's BlendSearch (``FLAML(CFO)``: CFO alone)
``SMAC3(HPO)``                  SMAC3's hyperparameter-optimisation facade (random forest + EI)
``SMAC3(Hyperband)``            SMAC3's Hyperband (``SMAC3(BOHB)``: its BOHB-style facade) over
                                the training length of a one-learner iterative space
==============================  =============================================================

Solver names inside the parentheses are registry names (``bo``, ``cmab``, ``rbfopt``, ``blds``,
``flash``, …) or the paper's abbreviations (``BO``, ``Ba`` = CMAB, ``RND`` = random). A suffix
``@key=value,…`` sets ``rho``, a solver parameter (``theta.<param>``, ``z.<param>``), a FLASH
parameter (``flash.<param>``), the adaptive schedule's cap (``cap``, ADMM only) or the size in MiB
of the workers' prefix cache (``cache``, 0 = off), e.g. ``AdADMM-F16(BO,Ba)@rho=10``, ``AdADMM-F16(BO,Ba)@z.loss_bound=0.5``,
``FLASH(BO)@flash.top_r=5`` or ``FLASH(BO)@cache=0``. The cache size is recorded in ``run.json``;
it takes effect once the worker fits pipelines through
:mod:`admm_automl.evaluation.prefix_cache`.

A *problem* is a pipeline space with a task (pipelines on data, or the artificial objective). Each
run is set up by :mod:`admm_automl.run` (:func:`open_run`: its executor factory, seeds and run
header) and writes the package's journal (the run header, then one JSON record per evaluation, with
its time since the start of the run) and a ``run.json`` summary.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..clock import Deadline
from ..methods.driver import Budget, Schedule
from ..exceptions import InvalidParameterError
from ..space import PipelineSpace, load_space
from ..final.results import prefix_cache_totals
from .analysis import is_score
from .iterative_peers import FACADES as MULTIFIDELITY_FACADES, run_smac_multifidelity
from .peers import FLAML_SEARCHERS, OPTUNA_SAMPLERS, SMAC_FACADES, run_flaml, run_optuna, run_smac

#: the paper's abbreviations of solver names
SOLVER_ALIASES = {"ba": "cmab", "rnd": "random", "hb": "hyperband"}
#: SMAC3's Hyperband and BOHB-style facades over an iterative learner's training length (the
#: BAPI benchmark's peers) beside its HPO facade
PEERS = {"optuna": OPTUNA_SAMPLERS, "flaml": FLAML_SEARCHERS,
         "smac3": SMAC_FACADES + MULTIFIDELITY_FACADES}
_ADMM = re.compile(r"^(Ad)?ADMM-([FI])(\d+)\((\w+),(\w+)\)$")
_JOPT = re.compile(r"^JOPT\((\w+)\)$")
_FLASH = re.compile(r"^FLASH\((\w+)\)$")
_SELECT = re.compile(r"^SELECT\((\w+)\)$")
_PEER = re.compile(r"^(Optuna|FLAML|SMAC3)\((\w+)\)$")


@dataclass(frozen=True)
class Method:
    """A parsed method name (see the module docstring)."""

    label: str
    kind: str  # "admm", "jopt", "flash", "select", "optuna", "flaml" or "smac3"
    theta_solver: Any = None
    z_solver: Any = None
    schedule: Schedule = Schedule()
    rho: float = 1.0
    option: str | None = None  # the Optuna sampler, FLAML searcher or SMAC3 facade
    params: dict[str, Any] = field(default_factory=dict)  # FLASH's parameters
    cache_size: float | None = None  # MiB of the workers' prefix cache (None: the default)

    @property
    def slug(self) -> str:
        """A file-name-safe form of the label."""
        return re.sub(r"[^A-Za-z0-9_.=-]+", "_", self.label).strip("_")


def _solver(name: str, params: dict[str, Any]) -> Any:
    name = SOLVER_ALIASES.get(name.lower(), name.lower())
    return {"name": name, "params": params} if params else name


def _options(text: str, label: str) -> dict[str, Any]:
    import yaml

    out: dict[str, Any] = {}
    for item in filter(None, text.split(",")):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidParameterError(f"method {label!r}: option {item!r} is not key=value")
        out[key.strip()] = yaml.safe_load(value)
    return out


def parse_method(label: str) -> Method:
    """The :class:`Method` of a paper-style name such as ``AdADMM-F16(BO,Ba)``."""
    name, _, suffix = label.strip().partition("@")
    options = _options(suffix, label)
    params: dict[str, dict[str, Any]] = {"theta": {}, "z": {}, "flash": {}}
    rho, cache, cap = 1.0, options.pop("cache", None), options.pop("cap", None)
    for key, value in options.items():
        target, dot, param = key.partition(".")
        if key == "rho":
            rho = float(value)
        elif dot and target in params and param:
            params[target][param] = value
        else:
            raise InvalidParameterError(
                f"method {label!r}: unknown option {key!r} (use rho, cache, cap, theta.<param>, "
                "z.<param> or flash.<param>)"
            )
    if cache is not None:
        from ..evaluation.prefix_cache import PrefixCache

        PrefixCache(cache)  # checks the size
    method = _parse_name(name, label, params, options.get("rho"))
    if cap is not None:
        if method.kind != "admm" or method.schedule.step == 0:
            raise InvalidParameterError(f"method {label!r}: cap applies to adaptive ADMM only")
        method = replace(method, schedule=Schedule(method.schedule.start, method.schedule.step,
                                                   int(cap)))
    return replace(method, rho=rho, cache_size=cache)


def _parse_name(name: str, label: str, params: dict[str, dict[str, Any]],
                rho: Any) -> Method:
    """The :class:`Method` of a name without its ``@`` options (``params`` are theirs)."""
    if params["flash"] and not _FLASH.match(name):
        raise InvalidParameterError(f"method {label!r}: flash.<param> applies to FLASH only")
    if m := _ADMM.match(name):
        adaptive, kind, n, theta, z = m.groups()
        n = int(n)
        if adaptive and kind == "F":
            schedule = Schedule(16, n, 128)
        elif not adaptive and kind == "I":
            schedule = Schedule(n, 0, n)
        else:
            raise InvalidParameterError(
                f"method {label!r}: write AdADMM-F<step>(θ,z) (adaptive) or ADMM-I<n>(θ,z) (fixed)"
            )
        return Method(label, "admm", _solver(theta, params["theta"]), _solver(z, params["z"]),
                      schedule)
    if m := _SELECT.match(name):
        if rho is not None or params["theta"]:
            raise InvalidParameterError(f"method {label!r}: SELECT takes z.<param> options only")
        return Method(label, "select", z_solver=_solver(m.group(1), params["z"]))
    if params["z"] or rho is not None:
        raise InvalidParameterError(f"method {label!r}: rho and z.<param> apply to ADMM methods only")
    if m := _JOPT.match(name):
        return Method(label, "jopt", _solver(m.group(1), params["theta"]))
    if m := _FLASH.match(name):
        from ..methods.flash import FlashSettings

        FlashSettings.from_params(params["flash"])
        return Method(label, "flash", _solver(m.group(1), params["theta"]),
                      params=params["flash"])
    if name.lower() == "random":
        return Method(label, "jopt", _solver("random", params["theta"]))
    if m := _PEER.match(name):
        library, option = m.group(1).lower(), m.group(2).lower()
        if option not in PEERS[library]:
            raise InvalidParameterError(
                f"method {label!r}: {m.group(1)} supports {', '.join(PEERS[library])}"
            )
        return Method(label, library, option=option)
    raise InvalidParameterError(
        f"unknown method {label!r}: expected AdADMM-F<k>(θ,z), ADMM-I<k>(θ,z), JOPT(θ), FLASH(θ), "
        "SELECT(z), Random, Optuna(TPE|Random|GP), FLAML(BlendSearch|CFO) or "
        "SMAC3(HPO|Hyperband|BOHB)"
    )


@dataclass
class Problem:
    """A pipeline space and the task that evaluates it.

    ``make_task(seed)`` returns the task of one run (the seed is the models' random_state for data
    problems). ``worst_loss`` is the loss of a failed pipeline and of a run with no score yet (1.0
    for 1 − AUROC, as in Liu et al. 2020); ``isolate`` runs trials in a worker process, so a fit
    that would overrun the time budget is stopped. ``header(seed)`` is what the losses of run
    ``seed`` depend on, the first line of its journal (:func:`~admm_automl.run.header.run_header`
    for pipelines on data, :func:`~admm_automl.run.header.function_header` for a function).
    """

    name: str
    space: PipelineSpace
    make_task: Callable[[int], Any]
    worst_loss: float
    n_train: int | None = None
    isolate: bool = True
    info: dict[str, Any] = field(default_factory=dict)
    header: Callable[[int], dict[str, Any]] | None = None


def _classification_space(space: "str | PipelineSpace") -> PipelineSpace:
    return load_space(space).for_task("classification") if isinstance(space, str) else space


def artificial_problem(space: "str | PipelineSpace" = "paper_large", seed: int = 0) -> Problem:
    """The artificial objective of Liu et al. 2020 over ``space`` (one fixed function for every
    run); it has no failures, so "no score yet" is NaN rather than a worst loss."""
    from ..run.header import function_header
    from .artificial import ArtificialObjective

    space = _classification_space(space)
    function = ArtificialObjective(space, seed=seed)
    header = function_header("artificial", space, function_seed=seed)
    return Problem("artificial", space, lambda _seed: function, float("nan"), isolate=False,
                   info={"function_seed": seed, "space": space.name},
                   header=lambda _seed: header)


def data_problem(
    name: str, X: Any, y: Any, *, space: "str | PipelineSpace" = "paper_large",
    validation_size: float = 0.2, split_seed: int = 0, scoring: str = "roc_auc",
) -> Problem:
    """Pipelines on (X, y) scored by 1 − AUROC (or ``scoring``) on one fixed stratified holdout
    split, shared by every method and seed (the run seed is the models' ``random_state``: see
    :func:`~admm_automl.run.seeds.benchmark_seeds`)."""
    from ..run.header import run_header
    from ..run.seeds import benchmark_seeds
    from ..run.task import prepare_task

    y = np.asarray(y)
    target = "binary" if len(np.unique(y)) == 2 else "multiclass"
    space = _classification_space(space)
    task = prepare_task(X, y, space=space, task="classification", target_type=target,
                        scoring=scoring, validation_size=validation_size,
                        split_seed=split_seed)  # the one split of every run (benchmark_seeds)
    ctx = task.context

    def make_task(seed: int) -> Any:
        return replace(ctx, random_state=benchmark_seeds(seed, split_seed).models)

    def header(seed: int) -> dict[str, Any]:
        return run_header(replace(task, context=make_task(seed)), cv=None,
                          validation_size=validation_size)

    return Problem(
        name, space, make_task,
        task.metric.worst if task.metric.worst is not None else float("nan"),
        n_train=len(ctx.splits[0].train),
        info={"rows": int(len(y)), "columns": int(X.shape[1]), "space": space.name,
              "metric": task.metric.name, "validation_size": validation_size,
              "split_seed": split_seed},
        header=header,
    )


def open_run(
    problem: Problem, seed: int, *, out_dir: "str | Path | None" = None,
    deadline: Deadline | None = None, trial_timeout: float | None = None,
    cache_size: float | None = None, header: dict[str, Any] | None = None,
) -> Any:
    """The objective of run ``seed`` of ``problem``, through the run set-up of
    :mod:`admm_automl.run`; every method of the benchmark, peers included, evaluates through it.

    The executor is one single-threaded worker process for an isolated problem, else serial
    (:func:`~admm_automl.run.executor.single_threaded_executor`); the task is the problem's for
    ``seed``, with a prefix cache of ``cache_size`` MiB when given; ``header`` (default:
    ``problem.header(seed)``) is the first line of the journal, ``out_dir/journal.jsonl`` (in
    memory without ``out_dir``); the records' times run on ``deadline`` (default: a clock started
    now).

    Trials have a fixed ``trial_timeout`` or none, not the estimator's automatic timeouts and
    probes (:func:`~admm_automl.run.deadline.trial_policy`), on purpose: every method
    of a benchmark evaluates a pipeline the same way, whatever it has found so far.
    """
    from ..run.executor import single_threaded_executor
    from ..run.setup import open_objective

    if header is None and problem.header is not None:
        header = problem.header(seed)
    executor = single_threaded_executor("process" if problem.isolate else "serial")
    task = problem.make_task(seed)
    if cache_size is not None and hasattr(task, "cache_size"):
        task = replace(task, cache_size=cache_size)
    # no crash marks: a benchmark function cannot crash, and a pipeline problem runs isolated
    return open_objective(task, executor=executor, worst_loss=problem.worst_loss,
                          output_dir=out_dir, header=header, deadline=deadline,
                          trial_timeout=trial_timeout, crash_marks=False)


def run(
    problem: Problem, method: "str | Method", *, seed: int, time_budget: float | None = None,
    max_evals: int | None = None, out_dir: "str | Path | None" = None,
    trial_timeout: float | None = None, peer: Callable[..., tuple[int, str]] | None = None,
    overhead_aware: bool | None = None, method_options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One search of ``problem`` by ``method``; returns (and writes to ``out_dir/run.json``) a
    summary. The journal goes to ``out_dir/journal.jsonl``; an existing run there is replaced.
    ``trial_timeout`` stops one evaluation after that many seconds (status ``timeout``, the
    failure loss; it needs an isolated problem, whose trials run in a worker process).

    ``peer``, when given, is the search instead of the method's (which then only names the run):
    ``peer(space, engine, budget, seed=seed) -> (n_evals, stop_reason)``, as the Optuna and FLAML
    peers are called."""
    method = parse_method(method) if isinstance(method, str) else method
    if time_budget is None and max_evals is None:
        raise InvalidParameterError("give time_budget or max_evals (or both)")
    out = Path(out_dir) if out_dir is not None else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        for stale in ("journal.jsonl", "run.json"):  # never resume: the run would be replayed
            (out / stale).unlink(missing_ok=True)
    # the header (a hash of the data) before the clock, so that the budget is the search's as
    # before the journal had one; the budget covers the rest of the set-up and worker start-up.
    # No reserve: nothing is refitted after a benchmark run, the search is what is measured.
    header = problem.header(seed) if problem.header is not None else None
    deadline = Deadline(time_budget)
    objective = open_run(problem, seed, out_dir=out, deadline=deadline,
                         trial_timeout=trial_timeout, cache_size=method.cache_size, header=header)
    journal = objective.journal
    try:
        n_evals, stop_reason = _search(problem, method, objective, seed=seed, peer=peer,
                                       max_evals=max_evals, deadline=deadline,
                                       overhead_aware=overhead_aware,
                                       method_options=method_options or {})
    finally:
        objective.close()
    summary = {
        "problem": problem.name,
        "method": method.label,
        "seed": seed,
        "time_budget": time_budget,
        "max_evals": max_evals,
        "trial_timeout": trial_timeout,
        "overhead_aware": overhead_aware,
        "method_options": method_options or {},
        "n_evals": n_evals,
        "n_records": len(journal.records),
        "n_failed": objective.n_failed,
        "n_timeouts": objective.n_timeouts,
        "best_loss": min((r["loss"] for r in journal.records if is_score(r)), default=None),
        "worst_loss": problem.worst_loss,
        "stop_reason": stop_reason,
        "wall_time": deadline.elapsed(),
        "cache_size": method.cache_size,
        "prefix_cache": prefix_cache_totals(journal.records),
        "problem_info": problem.info,
        "machine": {"python": platform.python_version(), "processor": platform.machine(),
                    "load": os.getloadavg()[0]},  # the 1-minute load at the end: was it quiet?
        "commit": code_commit(),
    }
    if out is not None:
        (out / "run.json").write_text(json.dumps(summary, indent=1, default=str))
    return summary


def code_commit() -> str | None:
    """The git commit of the package's tree (with ``+dirty`` when it has changes), so that an
    analysis can tell runs of different code apart; None outside a git checkout."""
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--",
                                "admm_automl"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty.strip() else "")


def _search(problem: Problem, method: Method, objective: Any, *, seed: int,
            max_evals: int | None, deadline: Deadline,
            peer: Callable[..., tuple[int, str]] | None,
            overhead_aware: bool | None = None,
            method_options: dict[str, Any] | None = None) -> tuple[int, str]:
    """Search ``objective`` by ``method`` (or by ``peer``) within ``max_evals`` and the time
    budget of ``deadline``; returns (n_evals, stop_reason). Our methods come from the method
    registry, seeded by :func:`~admm_automl.run.seeds.benchmark_seeds`; the peers take the run's
    seed as the int their own generators are seeded with, and evaluate through the same
    objective."""
    from ..methods.registry import make_optimizer
    from ..run.seeds import benchmark_seeds

    if peer is None and method.kind in ("admm", "jopt", "flash", "select"):
        optimizer = make_optimizer(
            {"name": method.kind, "params": method.params}, problem.space.encoding, objective,
            theta_solver=method.theta_solver, z_solver=method.z_solver, rho=method.rho,
            schedule=method.schedule, max_evals=max_evals, deadline=deadline,
            seed=benchmark_seeds(seed).solvers, n_train=problem.n_train,
            space=problem.space, overhead_aware=overhead_aware, **(method_options or {}),
        )
        result = optimizer.run()
        return result.n_evals, result.stop_reason
    budget = Budget(max_evals, deadline)
    if peer is not None:
        return peer(problem.space, objective, budget, seed=seed)
    peer = {"optuna": run_optuna, "flaml": run_flaml, "smac3": run_smac}[method.kind]
    if method.option in MULTIFIDELITY_FACADES:
        peer = run_smac_multifidelity
    return peer(problem.space, objective, budget, seed=seed, option=method.option)


def run_processes(commands: list[list[str]], parallel: int) -> None:
    """Run each command as its own process, ``parallel`` at a time, and wait for all (the
    experiment scripts start one process per run).

    A run that fails does not stop the others (each writes its own result file, so what finished
    is kept and a re-run repeats only what is missing); once all have ended, a
    :class:`SystemExit` names every failed command and its exit status, so a campaign never loses
    a run silently."""
    running: list[subprocess.Popen] = []
    failed: list[str] = []

    def reap() -> None:
        nonlocal running
        for p in running:
            if p.poll() is not None and p.returncode != 0:
                failed.append(f"exit status {p.returncode}: {' '.join(map(str, p.args))}")
        running = [p for p in running if p.poll() is None]

    for cmd in commands:
        while len(running) >= parallel:
            time.sleep(0.2)
            reap()
        running.append(subprocess.Popen(cmd))
    for p in running:
        p.wait()
    reap()
    if failed:
        raise SystemExit(f"{len(failed)} of {len(commands)} runs failed (their results are "
                         "missing; running the same command again repeats only those):\n  "
                         + "\n  ".join(failed))
