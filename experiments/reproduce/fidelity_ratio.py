"""Where multi-fidelity can pay: the seconds of an evaluation on all training rows against one
on the ladder's first level, for random pipelines of a claim's space, through the benchmark's
own engine (one single-threaded worker process, a trial timeout).

Kishimoto et al. (2021, BLDS), Hyperband and BAPI rest on a low level costing far less than a
full fit. A level's evaluation still scores every validation row (BLDS's GETCURRENTPERFORMANCE
"evaluates p with V"), so on data of tens of thousands of rows the ratio is bounded well below
the ratio of the rows: this script measures it, per dataset, for the claim it names.

    python experiments/reproduce/fidelity_ratio.py --data-dir ../shared/data \\
        --datasets bank_marketing electricity --pipelines 30 --timeout 60
    python experiments/reproduce/fidelity_ratio.py --smoke --data-dir ../shared/data   # CI
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import blds  # noqa: E402
import harness  # noqa: E402


def measure(name: str, pipelines: int, timeout: float, data_dir: str | None, seed: int = 0
            ) -> dict:
    """``pipelines`` random pipelines of BLDS's `early` claim's space at their defaults (seeded),
    each evaluated at the claim's first level and on all training rows: their seconds and
    statuses, and the ratio's median and quartiles over the pipelines both evaluations of which
    succeeded (a full evaluation stopped at ``timeout`` gives a lower bound, counted apart)."""
    from admm_automl.benchmarks.runner import open_run
    from admm_automl.records import Request, Status

    claim = next(c for c in blds.CLAIMS if c.name == "early")
    problem = harness.load_problem(claim, name, seed, data_dir)
    first = blds.first_level(problem)
    space = problem.space
    theta = space.encoding.initial_theta
    theta = theta() if callable(theta) else theta
    rng = np.random.default_rng(seed)
    objective = open_run(problem, seed, trial_timeout=timeout)
    rows = []
    try:
        for _ in range(pipelines):
            z = tuple(int(rng.integers(len(m.choices))) for m in space.modules)
            low, full = objective([Request(z, theta, first), Request(z, theta, 1.0)])
            rows.append((low.duration, full.duration, low.status, full.status))
    finally:
        objective.close()
    ok = [(f / lo) for lo, f, s1, s2 in rows if s1 is Status.OK and s2 is Status.OK and lo > 0]
    capped = sum(s2 is Status.TIMEOUT for *_, s2 in rows)
    q1, med, q3 = (np.percentile(ok, q) if ok else float("nan") for q in (25, 50, 75))
    return {"dataset": name, "n_train": int(problem.n_train),
            "first_rows": round(first * problem.n_train), "pipelines": pipelines,
            "first_s": float(np.median([r[0] for r in rows])),
            "full_s": float(np.median([r[1] for r in rows])),
            "ratio_median": float(med), "ratio_q1": float(q1), "ratio_q3": float(q3),
            "at_least_50x": float(np.mean([r >= 50 for r in ok])) if ok else float("nan"),
            "both_ok": len(ok), "full_timeouts": capped}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--datasets", nargs="+", default=["bank_marketing", "electricity"])
    parser.add_argument("--pipelines", type=int, default=30)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--smoke", action="store_true", help="2 pipelines on a small dataset")
    args = parser.parse_args(argv)
    if args.smoke:
        args.datasets, args.pipelines, args.timeout = ["fri_c2_1000_10"], 2, 10.0
    print("| dataset | training rows | first level (rows) | first-level s (median) | full s "
          "(median) | full ÷ first: median (IQR) | ≥ 50× | both ok | full at the timeout |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.datasets:
        r = measure(name, args.pipelines, args.timeout, args.data_dir)
        print(f"| {name} | {r['n_train']} | {r['first_rows']} | {r['first_s']:.2f} | "
              f"{r['full_s']:.1f} | {r['ratio_median']:.1f} ({r['ratio_q1']:.1f}–"
              f"{r['ratio_q3']:.1f}) | {r['at_least_50x']:.0%} | {r['both_ok']}/"
              f"{r['pipelines']} | {r['full_timeouts']} |", flush=True)
        print(json.dumps(r), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
