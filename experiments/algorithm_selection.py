"""Algorithm-selection benchmark: the experiment of Kishimoto et al. (2021), scaled down.

No hyperparameter tuning: every algorithm of the ``blds`` space (Kishimoto et al., Table 1, 3072
pipelines) stays at its defaults and a z-solver picks one algorithm per module
(``method="select"``, i.e. :class:`admm_automl.methods.baselines.SelectionOptimizer`). Loss 1 − AUROC on a
stratified 70/30 split (one fixed split per dataset, seed 0, shared by every method and seed: the
paper says all methods use the same training and validation sets but gives neither the split seed
nor whether it stratifies); the runs differ in the solver seed (and the pipelines' own
random_state). Methods: BLDS(1), BLDS(2), CMAB, DAUB, Hyperband and random search, all with
b = 100, η = 2 where they use fidelities.

Each run writes the package's own journal (one JSON record per evaluation, with its time, fidelity
and loss) under ``experiments/results/algorithm_selection/<dataset>/<method>/seed<k>/``. The
anytime curve of a run is the best 1 − AUROC among *fully trained* pipelines so far (our reading
of "best so far", which the paper leaves open: a loss after training on a subset is not comparable
with a full-data one; the initial pipeline, Gaussian NB with no preprocessing, is evaluated first
by every method). The script prints, per dataset and method, the median (IQR) of that curve at a
few times, the time to reach Hyperband's final median value, and its ratio to Hyperband's own
time (the statistic Kishimoto et al. quote for bank-marketing: BLDS(1) converges 19.4 times faster
than Hyperband); it draws median/IQR incumbent-vs-time curves on log-log axes (Kishimoto et al.,
Fig. 1) to ``curves.png``.

The runs are set up as the benchmark runner's (:func:`admm_automl.benchmarks.runner.data_problem`
and :func:`~admm_automl.benchmarks.runner.open_run`: the run set-up of :mod:`admm_automl.run`) and
searched by the method registry's ``select`` rather than by ``ADMM(method="select").fit`` only to
skip the final refit on all rows, which is not part of the measured search and would cost up to a
minute per run on the larger datasets.

Usage (single-threaded BLAS is set below before numpy is imported)::

    nice -n 10 .venv/bin/python experiments/algorithm_selection.py            # full: ~40 min
    .venv/bin/python experiments/algorithm_selection.py --smoke              # ~15 s
    .venv/bin/python experiments/algorithm_selection.py --analyze-only       # table + figure again
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import shutil  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "experiments" / "results" / "algorithm_selection"
DATASETS = ("bank_marketing", "electricity", "phishing_websites", "bank8FM")
METHODS = {
    "BLDS(1)": {"name": "blds", "params": {"disc": 1}},
    "BLDS(2)": {"name": "blds", "params": {"disc": 2}},
    "CMAB": "cmab",
    "DAUB": "daub",
    "Hyperband": "hyperband",
    "RND": "random",
}
SPLIT_SEED = 0


def slug(method: str) -> str:
    return method.lower().replace("(", "").replace(")", "")


# ----------------------------------------------------------------------------- running
def run_one(dataset: str, X, y, method: str, seed: int, budget: float, out: Path) -> dict:
    """One search; the journal goes to ``out/journal.jsonl`` (an existing one is removed first)."""
    from admm_automl.benchmarks.runner import data_problem, open_run
    from admm_automl.methods.registry import make_optimizer
    from admm_automl.run.seeds import benchmark_seeds
    from admm_automl.space import load_space

    if out.exists():
        shutil.rmtree(out)  # never resume: a resumed journal would be replayed
    out.mkdir(parents=True)
    space = load_space("blds").for_task("classification")
    problem = data_problem(dataset, X, y, space=space, validation_size=0.3,
                           split_seed=SPLIT_SEED)  # 1 - AUROC
    objective = open_run(problem, seed, out_dir=out)
    splits = objective.ctx.splits
    # no deadline, unlike the benchmark runner's runs: the budget is counted from the
    # optimiser's start, after the set-up, as in the runs recorded in experiments/README.md
    optimizer = make_optimizer("select", space.encoding, objective, z_solver=METHODS[method],
                               time_budget=budget, seed=benchmark_seeds(seed).solvers,
                               n_train=problem.n_train)
    start = time.monotonic()
    try:
        result = optimizer.run()
    finally:
        objective.close()
    records = objective.journal.records
    summary = {
        "dataset": dataset, "method": method, "seed": seed, "budget": budget,
        "wall": time.monotonic() - start, "n_evals": result.n_evals,
        "n_full": sum(1 for r in records if r["fidelity"] >= 1.0),
        "n_failed": sum(1 for r in records if r["status"] != "ok"),
        "best_loss": result.incumbent.observation.loss if result.incumbent else None,
        "best_pipeline": None,
        "n_train": len(splits[0].train), "n_valid": len(splits[0].valid),
        "stop_reason": result.stop_reason,
    }
    if result.incumbent is not None:
        summary["best_pipeline"] = " -> ".join(
            space.decode(result.incumbent.z, result.incumbent.theta)[m]
            for m in space.encoding.module_names
        )
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def load_records(out: Path) -> list[dict]:
    from admm_automl.journal import Journal

    return Journal.read(out / "journal.jsonl")


# ----------------------------------------------------------------------------- analysis
def incumbent_curve(records: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """Step function (times, best full-fidelity loss so far) of one run."""
    times, values, best = [], [], math.inf
    for r in sorted(records, key=lambda r: r["time"]):
        if r["fidelity"] >= 1.0 and not r.get("budget_stop") and r["loss"] < best:
            best = r["loss"]
            times.append(r["time"])
            values.append(best)
    return np.array(times), np.array(values)


def value_at(curve, t: float) -> float:
    """The incumbent at time t (1.0 — the worst AUROC loss — before the first result)."""
    times, values = curve
    k = np.searchsorted(times, t, side="right")
    return float(values[k - 1]) if k > 0 else 1.0


def time_to(curve, target: float) -> float:
    times, values = curve
    hit = np.flatnonzero(values <= target + 1e-12)
    return float(times[hit[0]]) if len(hit) else math.inf


def analyze(datasets, methods, seeds, budget, figure: Path) -> str:
    curves = {}
    for d in datasets:
        for m in methods:
            for s in seeds:
                out = RESULTS / d / slug(m) / f"seed{s}"
                if (out / "journal.jsonl").exists():
                    curves[d, m, s] = incumbent_curve(load_records(out))
    checkpoints = [t for t in (5.0, 10.0) if t < budget] + [budget]
    lines = [
        f"Median (IQR) best fully-trained 1 − AUROC over {len(seeds)} seeds at t seconds; "
        "t→HB: median time to reach Hyperband's final median (n/a when that is the initial "
        "pipeline's loss); ×HB: Hyperband's time / the method's (> 1 = faster than Hyperband, "
        "0 = never reached); evals / full evals: medians per run.",
        "",
        "| dataset | method | " + " | ".join(f"t={t:g}s" for t in checkpoints)
        + " | t→HB (s) | ×HB | evals | full evals |",
        "|---|---|" + "---|" * (len(checkpoints) + 4),
    ]
    summaries = {}
    for d in datasets:
        for m in methods:
            for s in seeds:
                path = RESULTS / d / slug(m) / f"seed{s}" / "summary.json"
                if path.exists():
                    summaries[d, m, s] = json.loads(path.read_text())
    for d in datasets:
        hb = [curves[d, "Hyperband", s] for s in seeds if (d, "Hyperband", s) in curves]
        target = float(np.median([value_at(c, budget) for c in hb])) if hb else math.nan
        hb_time = float(np.median([time_to(c, target) for c in hb])) if hb else math.nan
        # the first point of every curve is the initial pipeline (Gaussian NB, no preprocessing)
        initial = max((float(c[1][0]) for k, c in curves.items() if k[0] == d and len(c[1])),
                      default=math.nan)
        degenerate = not target < initial  # Hyperband never beat the initial pipeline
        for m in methods:
            runs = [curves[d, m, s] for s in seeds if (d, m, s) in curves]
            if not runs:
                continue
            cells = []
            for t in checkpoints:
                v = np.array([value_at(c, t) for c in runs])
                q1, med, q3 = np.percentile(v, [25, 50, 75])
                cells.append(f"{med:.4f} ({q1:.4f}–{q3:.4f})")
            tt = float(np.median([time_to(c, target) for c in runs]))
            if degenerate:
                to_hb = "n/a | n/a"  # the target is the initial pipeline: every method has it
            elif math.isfinite(tt):
                to_hb = f"{tt:.1f} | {hb_time / tt:.2f}"
            else:
                to_hb = "never | 0"
            evals = [summaries[d, m, s]["n_evals"] for s in seeds if (d, m, s) in summaries]
            full = [summaries[d, m, s]["n_full"] for s in seeds if (d, m, s) in summaries]
            lines.append(
                f"| {d} | {m} | " + " | ".join(cells)
                + f" | {to_hb} | {int(np.median(evals))} | {int(np.median(full))} |"
            )
    plot(curves, datasets, methods, seeds, budget, figure)
    shown = figure.relative_to(REPO) if figure.is_relative_to(REPO) else figure
    lines += ["", f"Figure: {shown}"]
    return "\n".join(lines)


def plot(curves, datasets, methods, seeds, budget, figure: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = np.logspace(-0.3, math.log10(budget), 200)
    n = len(datasets)
    fig, axes = plt.subplots(1, n, figsize=(4.2 * n, 3.6), squeeze=False)
    for ax, d in zip(axes[0], datasets):
        for m in methods:
            runs = [curves[d, m, s] for s in seeds if (d, m, s) in curves]
            if not runs:
                continue
            v = np.array([[value_at(c, t) for t in grid] for c in runs])
            v[v >= 1.0] = np.nan  # nothing yet: not drawn (the table counts it as 1.0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
                q1, med, q3 = np.nanpercentile(v, [25, 50, 75], axis=0)
            line, = ax.plot(grid, med, label=m, lw=1.5)
            ax.fill_between(grid, q1, q3, color=line.get_color(), alpha=0.15, lw=0)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(d)
        ax.set_xlabel("wall-clock seconds")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("best fully-trained 1 − AUROC")
    axes[0][-1].legend(fontsize=8)
    fig.tight_layout()
    figure.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(figure, dpi=120)
    plt.close(fig)


# ----------------------------------------------------------------------------- main
def main() -> None:
    global RESULTS  # --out replaces the default results folder
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=str(REPO.parent / "shared" / "data"))
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--budget", type=float, default=30.0, help="seconds per run")
    parser.add_argument("--smoke", action="store_true",
                        help="one dataset (bank8FM), BLDS(1) and Hyperband, one seed, 5 s")
    parser.add_argument("--analyze-only", action="store_true", help="re-read the results")
    parser.add_argument("--out", default=str(RESULTS), help="results folder")
    args = parser.parse_args()
    RESULTS = Path(args.out)
    if args.smoke:
        args.datasets, args.methods, args.seeds, args.budget = ["bank8FM"], ["BLDS(1)",
                                                                             "Hyperband"], 1, 5.0
    seeds = list(range(args.seeds))
    figure = RESULTS / ("curves_smoke.png" if args.smoke else "curves.png")

    if not args.analyze_only:
        from admm_automl.datasets import load_from_dir

        import sklearn

        print(f"# {platform.node()} | python {platform.python_version()} | scikit-learn "
              f"{sklearn.__version__} | {os.cpu_count()} cores | budget {args.budget:g} s/run | "
              f"seeds {seeds}", flush=True)
        for d in args.datasets:
            X, y = load_from_dir(d, args.data_dir)
            for s in seeds:
                for m in args.methods:
                    out = RESULTS / d / slug(m) / f"seed{s}"
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        summary = run_one(d, X, y, m, s, args.budget, out)
                    with open(RESULTS / "runs.jsonl", "a") as fh:
                        fh.write(json.dumps(summary) + "\n")
                    print(f"{d:>18} {m:>9} seed {s}: best {summary['best_loss']:.4f} "
                          f"({summary['best_pipeline']}), {summary['n_evals']} evals "
                          f"({summary['n_full']} full, {summary['n_failed']} failed), "
                          f"{summary['wall']:.1f} s", flush=True)
    print(analyze(args.datasets, args.methods, seeds, args.budget, figure))


if __name__ == "__main__":
    main()
