"""Benchmark campaigns: many (problem, method, seed) runs of :func:`.runner.run`, each in its own
process, ``parallel`` at a time, skipping the runs already done with the same budget.

The experiment scripts share this driver: each keeps its own problems, methods and tables, and
re-invokes itself with its one-run arguments (``--problem P --method M --seed S --budget B --root
R`` plus its own options) for every run not done yet, so a campaign stopped half-way resumes where
it stopped.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .runner import run_processes


@dataclass(frozen=True)
class Job:
    """One run of a campaign."""

    problem: str
    method: str
    seed: int
    budget: float


def run_dir(root: Path | str, problem: str, method: str, seed: int) -> Path:
    """Where a run writes its journal and ``run.json`` (file-name-safe names)."""
    slug = re.sub(r"[^A-Za-z0-9_.=-]+", "_", method).strip("_")
    return Path(root) / problem.replace(":", "__") / slug / f"seed{seed}"


def is_done(root: Path | str, job: Job) -> bool:
    """Whether ``job`` has a finished run with the same time budget under ``root``."""
    import json

    path = run_dir(root, job.problem, job.method, job.seed) / "run.json"
    return path.is_file() and json.loads(path.read_text()).get("time_budget") == job.budget


def run_campaign(
    script: str, jobs: Sequence[Job], *, root: Path | str, parallel: int, force: bool = False,
    one_run: Sequence[str] = ("--run-one",), options: Mapping[str, Any] | None = None,
) -> list[Job]:
    """Run every job of ``jobs`` not done yet (all with ``force``) as ``python script *one_run
    --problem ... --root root`` plus ``options`` (``{"--data-dir": path}``; None values are left
    out), ``parallel`` processes at a time; return the jobs it ran."""
    pending = [job for job in jobs if force or not is_done(root, job)]
    print(f"{len(pending)} runs, {parallel} at a time, on {platform.node()} ({os.cpu_count()} "
          f"cores, load {os.getloadavg()[0]:.2f}, Python {platform.python_version()}), results "
          f"in {root}", flush=True)
    extra = [str(a) for name, value in (options or {}).items() if value is not None
             for a in (name, value)]
    commands = [
        [sys.executable, script, *one_run, "--problem", job.problem, "--method", job.method,
         "--seed", str(job.seed), "--budget", str(job.budget), "--root", str(root), *extra]
        for job in pending
    ]
    run_processes(commands, parallel)
    return pending


def add_arguments(parser: argparse.ArgumentParser, *, root: Path | str,
                  seeds: Sequence[int] = (0, 1, 2), parallel: int = 2) -> None:
    """The options every campaign script has (seeds, parallelism, results folder, ``--force``,
    ``--analyze-only``) and the hidden one-run options :func:`run_campaign` passes."""
    parser.add_argument("--seeds", type=int, nargs="+", default=list(seeds))
    parser.add_argument("--parallel", type=int, default=parallel,
                        help="runs at a time (each uses one core)")
    parser.add_argument("--root", default=str(root), help="results folder")
    parser.add_argument("--force", action="store_true", help="redo runs that are done")
    parser.add_argument("--analyze-only", action="store_true", help="only print the tables")
    parser.add_argument("--run-one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--problem", help=argparse.SUPPRESS)
    parser.add_argument("--method", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)


def main(args: argparse.Namespace, *, run_one: Callable[[argparse.Namespace], Any],
         run_all: Callable[[argparse.Namespace], Any],
         analyze: Callable[[argparse.Namespace], Any],
         smoke: Callable[[argparse.Namespace], Any] | None = None) -> None:
    """A campaign script's flow: ``--run-one`` makes one run; ``--smoke`` lets ``smoke(args)``
    shrink the campaign, then runs and analyses it in a temporary folder; otherwise every run not
    done yet (none with ``--analyze-only``), then the tables."""
    if args.run_one:
        run_one(args)
        return
    if smoke is not None and getattr(args, "smoke", False):
        smoke(args)
        with tempfile.TemporaryDirectory() as tmp:
            args.root = tmp
            run_all(args)
            analyze(args)
        return
    if not args.analyze_only:
        run_all(args)
    analyze(args)
