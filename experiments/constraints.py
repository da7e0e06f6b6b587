"""Liu et al. (2020), Figures 2 and 3, scaled down: constrained AutoML under latency and disparate
impact.

Objective 1 - AUROC on bank_marketing (the shared data has an ``age`` column); constraints on the
prediction latency (seconds per row) and on the disparate impact (max - min AUROC over the age
groups 20-30, ..., 60-70). Sweep each threshold over five values with the other fixed and compare

* CST: constrained ADMM (``constraint_mode="admm"``, slack variables and multipliers),
* penalty: a fixed-weight penalty (``constraint_mode="penalty"``),
* UCST: unconstrained ADMM, constraints checked afterwards (``constraint_mode="filter"``). Its
  search ignores the thresholds, so one run per seed serves every threshold.

Reported per (sweep, threshold, method): the best validation objective among feasible pipelines
(median over seeds; "-" when no seed found one) and the fraction of evaluated pipelines that were
feasible. Latency is wall-clock: numbers depend on the machine and on its load.

    python experiments/constraints.py --data-dir ../shared/data   # about 30-40 min on 2 cores
    python experiments/constraints.py --smoke            # CI: tiny budget, two thresholds
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from admm_automl import ADMM  # noqa: E402
from admm_automl.datasets import load_from_dir  # noqa: E402

AGE_BINS = [20, 30, 40, 50, 60, 70]
# grids chosen from the measured scale on this machine: most pipelines predict in 6-25 µs per row
# and have an AUROC gap of 0.08-0.25 across age groups (Liu et al. 2020 used 1-20 µs and 0.05-0.15)
LATENCIES = [5e-6, 1e-5, 1.5e-5, 2e-5, 4e-5]  # seconds per row
DISPARITIES = [0.05, 0.075, 0.1, 0.125, 0.15]
FIXED_LATENCY, FIXED_DISPARITY = 2e-5, 0.15
METHODS = {"CST": "admm", "penalty": "penalty", "UCST": "filter"}


def constraints(latency: float, disparity: float) -> list:
    return [
        f"latency <= {latency}",
        {"name": "disparate_impact", "threshold": disparity, "group_by": "age", "bins": AGE_BINS},
    ]


def load(data_dir: str, rows: int, seed: int):
    X, y = load_from_dir("bank_marketing", data_dir)
    rng = np.random.default_rng(seed)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    n_pos = int(round(rows * len(pos) / len(y)))
    keep = np.sort(np.r_[rng.choice(pos, n_pos, replace=False), rng.choice(neg, rows - n_pos, replace=False)])
    return X.iloc[keep].reset_index(drop=True), y[keep]


def run(X, y, latency, disparity, mode, seed, args) -> dict:
    model = ADMM(
        search_space="paper_small",
        constraints=constraints(latency, disparity),
        constraint_mode=mode,
        max_evals=args.max_evals,
        inner_iter=args.inner_iter,
        inner_iter_step=args.inner_iter,
        trial_timeout=args.trial_timeout,
        random_state=seed,
        n_jobs=1,
    )
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    h = model.history_
    return {
        "seed": seed,
        "mode": mode,
        "seconds": time.perf_counter() - start,
        "loss": h["loss"].tolist(),
        "ok": (h["status"] == "ok").tolist(),
        "latency": h["constraint:latency"].tolist(),
        "disparate_impact": h["constraint:disparate_impact"].tolist(),
    }


def summarise(record: dict, latency: float, disparity: float) -> tuple[float | None, float]:
    """Best feasible objective and feasible fraction of one run under the given thresholds."""
    loss = np.array(record["loss"], dtype=float)
    lat = np.array(record["latency"], dtype=float)
    di = np.array(record["disparate_impact"], dtype=float)
    ok = np.array(record["ok"], dtype=bool)
    feasible = ok & (lat <= latency) & (di <= disparity)
    best = float(loss[feasible].min()) if feasible.any() else None
    return best, float(feasible.mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--max-evals", type=int, default=40)
    parser.add_argument("--inner-iter", type=int, default=8)
    parser.add_argument("--trial-timeout", type=float, default=10.0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "constraints"))
    parser.add_argument("--smoke", action="store_true", help="tiny budget for CI")
    args = parser.parse_args()
    latencies, disparities = LATENCIES, DISPARITIES
    if args.smoke:
        args.rows, args.max_evals, args.inner_iter, args.seeds = 1500, 6, 2, [0]
        latencies, disparities = LATENCIES[2:4], DISPARITIES[2:4]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    X, y = load(args.data_dir, args.rows, seed=12345)
    print(f"bank_marketing: {len(y)} rows (stratified subsample), {X.shape[1]} columns, "
          f"{args.max_evals} evaluations per run, seeds {args.seeds}")

    sweeps = {
        "latency": [(t, FIXED_DISPARITY) for t in latencies],
        "disparate_impact": [(FIXED_LATENCY, d) for d in disparities],
    }
    records = []
    results_file = open(out / "runs.jsonl", "w")
    for seed in args.seeds:  # UCST: one unconstrained run per seed serves every threshold
        rec = run(X, y, FIXED_LATENCY, FIXED_DISPARITY, "filter", seed, args)
        records.append({"sweep": "all", **rec})
        results_file.write(json.dumps(records[-1]) + "\n")
        results_file.flush()
    for sweep, points in sweeps.items():
        for latency, disparity in points:
            for seed in args.seeds:
                for name in ("CST", "penalty"):
                    rec = run(X, y, latency, disparity, METHODS[name], seed, args)
                    records.append({"sweep": sweep, "latency_t": latency, "di_t": disparity, **rec})
                    results_file.write(json.dumps(records[-1]) + "\n")
                    results_file.flush()
                    print(f"  {sweep:<16} lat<={latency:g} di<={disparity:g} {name:<8} seed {seed}: "
                          f"{rec['seconds']:.0f} s", flush=True)
    results_file.close()

    table = []
    for sweep, points in sweeps.items():
        for latency, disparity in points:
            row = {"sweep": sweep, "threshold": latency if sweep == "latency" else disparity}
            for name, mode in METHODS.items():
                runs = [r for r in records if r["mode"] == mode and (
                    r["sweep"] == "all" or (r["sweep"] == sweep and r["latency_t"] == latency
                                            and r["di_t"] == disparity))]
                stats = [summarise(r, latency, disparity) for r in runs]
                bests = [b for b, _ in stats if b is not None]
                row[f"{name} best"] = float(np.median(bests)) if bests else None
                row[f"{name} found"] = f"{len(bests)}/{len(stats)}"
                row[f"{name} feasible"] = float(np.median([f for _, f in stats]))
            table.append(row)
    print_table(table)
    plot(table, out)
    (out / "table.json").write_text(json.dumps(table, indent=1))


def print_table(table: list[dict]) -> None:
    head = "| sweep | threshold | " + " | ".join(
        f"{m} best 1-AUROC | {m} seeds feasible | {m} feasible frac" for m in METHODS) + " |"
    print()
    print(head)
    print("|" + "---|" * (2 + 3 * len(METHODS)))
    for row in table:
        cells = [row["sweep"], f"{row['threshold']:g}"]
        for m in METHODS:
            best = row[f"{m} best"]
            cells += ["-" if best is None else f"{best:.4f}", row[f"{m} found"], f"{row[f'{m} feasible']:.3f}"]
        print("| " + " | ".join(cells) + " |")


def plot(table: list[dict], out: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install 'admm-automl[experiments]'): no figures")
        return
    for metric, ylabel, fname in (("best", "best feasible 1 - AUROC (median)", "objective"),
                                  ("feasible", "fraction of feasible pipelines", "feasible")):
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for ax, sweep, xlabel in ((axes[0], "latency", "latency threshold (s / row)"),
                                  (axes[1], "disparate_impact", "disparate impact threshold")):
            rows = [r for r in table if r["sweep"] == sweep]
            for m in METHODS:
                xs = [r["threshold"] for r in rows if r[f"{m} {metric}"] is not None]
                ys = [r[f"{m} {metric}"] for r in rows if r[f"{m} {metric}"] is not None]
                ax.plot(xs, ys, marker="o", label=m)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            if any(r[f"{m} {metric}"] for r in rows for m in METHODS):
                ax.set_yscale("log")  # only when there is a positive value to show
            ax.grid(alpha=0.3)
            ax.legend()
        fig.tight_layout()
        path = out / f"constraints_{fname}.png"
        fig.savefig(path, dpi=110)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
