"""How long ``import admm_automl; from admm_automl import ADMM`` takes, against scikit-learn's own
import (``import sklearn; from sklearn.pipeline import Pipeline``: the estimator returns a
Pipeline, so no user of the package imports less of scikit-learn), each in a fresh interpreter.

The statements are timed in turn, round after round (interleaved, so that a change in the
machine's load falls on all of them alike), after one round that is not counted (it fills the
bytecode cache, kept under a folder of its own so that no source tree is written to, and the
page cache); the wall clock of the whole process and its CPU time (user + system, from the
operating system's accounting of the child) are printed as medians. ``--before DIR`` times a
second checkout beside this one, the same way (``git worktree add DIR COMMIT``).

    python experiments/import_time.py --runs 15 --before ../before
    python experiments/import_time.py --smoke          # make smoke: one round
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKLEARN = "import sklearn; from sklearn.pipeline import Pipeline"
ADMM = "import admm_automl; from admm_automl import ADMM"


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="rounds counted (default 15)")
    parser.add_argument("--before", type=Path, help="another checkout of the package to time too")
    parser.add_argument("--smoke", action="store_true", help="one round (make smoke)")
    args = parser.parse_args(argv)
    runs = 1 if args.smoke else args.runs
    cases = {"python -c pass": ("pass", ROOT), "scikit-learn": (SKLEARN, ROOT)}
    if args.before:
        cases["admm-automl, before"] = (ADMM, args.before.resolve())
    cases["admm-automl"] = (ADMM, ROOT)
    cache = tempfile.mkdtemp(prefix="import-time-pyc-")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = cache

    def run(code: str, tree: Path) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), _child_cpu()
        subprocess.run([sys.executable, "-c", code], env=dict(env, PYTHONPATH=str(tree)),
                       cwd=cache, check=True)
        return time.perf_counter() - wall, _child_cpu() - cpu

    times: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    try:
        for code, tree in cases.values():  # not counted: fills the caches
            run(code, tree)
        for _ in range(runs):
            for name, (code, tree) in cases.items():
                times[name].append(run(code, tree))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print(f"{runs} rounds, {sys.executable} (Python {sys.version.split()[0]}), "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    print(f"{'':22s} {'wall median':>12s} {'min':>7s} {'÷ sklearn':>10s} "
          f"{'CPU median':>11s} {'min':>7s} {'÷ sklearn':>10s}")
    med = {name: [statistics.median(t[i] for t in v) for i in (0, 1)] for name, v in times.items()}
    for name, v in times.items():
        print(f"{name:22s} {med[name][0]:11.3f}s {min(t[0] for t in v):6.3f}s "
              f"{med[name][0] / med['scikit-learn'][0]:10.2f} {med[name][1]:10.3f}s "
              f"{min(t[1] for t in v):6.3f}s {med[name][1] / med['scikit-learn'][1]:10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
