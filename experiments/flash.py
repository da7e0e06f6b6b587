"""FLASH benchmark: Table 2 of Zhang et al. (KDD 2016), scaled down.

Methods (named as :func:`admm_automl.benchmarks.runner.parse_method` reads them):

* ``FLASH(BO)`` — FLASH (``method="flash"``): D-optimal design, EIPS pruning to the top-10
  sub-graph, then GP-BO on the pruned space (the paper tunes it with SMAC; see
  :class:`admm_automl.methods.flash.FlashOptimizer`);
* ``FLASH(BO)@cache=0`` — the same without the prefix cache of fitted steps (the flag is recorded
  in ``run.json``; it changes the runs once the worker fits through
  :mod:`admm_automl.evaluation.prefix_cache`; until then both FLASH rows run the same search);
* ``AdADMM-F16(BO,Ba)`` — the package's default ADMM; ``AdADMM-F16(BO,FLASH)`` — ADMM with the
  ``flash`` z-solver;
* ``Optuna(TPE)`` (the paper's TPE), ``SMAC3(HPO)`` (the paper's SMAC: SMAC3's random forest +
  EI) and ``Random`` (uniform over the joint box).

Set-up: the ``paper_large`` space (Liu et al. 2020, Table A2: 8 × 11 × 7 × 11 = 6776 pipelines);
the loss is the classification error, 1 − accuracy (the paper's metric, as a fraction rather than
in percent), on one fixed stratified 80/20 split per dataset (the paper uses 3-fold CV on its
training split; one holdout keeps the evaluations affordable); one single-threaded worker process
per run; every method has the same wall-clock budget per run (set-up and optimiser overhead
included) and the same per-evaluation timeout, budget/40 as in the paper (15 min of 10 h), after
which an evaluation counts as failed. Datasets: the four largest shared ones on which
``paper_large`` still gets through a few hundred evaluations in the budget.

Printed: the median final validation error at 30 %, 50 % and 100 % of the budget (the paper's 3,
5 and 10 h of 10 h), the time each method's median takes to reach its own final value, the
average rank over datasets, and for the cache the evaluations per minute and fits avoided with and
without it. Runs land in ``experiments/results/flash/<dataset>/<method>/seed<k>/`` (``journal.jsonl``
+ ``run.json``); an existing run for the same budget is not repeated.

Usage (BLAS/OpenMP are set to one thread below, before numpy is imported)::

    python experiments/flash.py --data-dir ../shared/data                 # full: see README
    python experiments/flash.py --smoke --data-dir ../shared/data         # CI, ~1–2 min
    python experiments/flash.py --analyze-only                            # the tables again
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

from admm_automl.benchmarks import campaign  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "experiments" / "results" / "flash"
DATASETS = ("phishing_websites", "bank8FM", "cpu_small", "puma8NH")
METHODS = ("FLASH(BO)", "FLASH(BO)@cache=0", "AdADMM-F16(BO,Ba)", "AdADMM-F16(BO,FLASH)",
           "Optuna(TPE)", "SMAC3(HPO)", "Random")
#: the paper's read-out times (3, 5 and 10 h of a 10 h budget) as fractions of the budget
FRACTIONS = (0.3, 0.5, 1.0)
#: Zhang et al. (2016), Table 2, median 3-fold CV error (%) after 10 h over 10 runs
PAPER_CV_10H = {
    "Madelon": {"Random": 20.77, "TPE": 17.28, "SMAC": 17.34, "FLASH": 13.87, "FLASH*": 13.76},
    "MNIST": {"Random": 6.58, "TPE": 5.39, "SMAC": 5.64, "FLASH": 4.03, "FLASH*": 4.46},
    "MRBI": {"Random": 57.20, "TPE": 53.92, "SMAC": 54.60, "FLASH": 41.15, "FLASH*": 41.90},
    "Convex": {"Random": 24.51, "TPE": 22.21, "SMAC": 23.30, "FLASH": 20.49, "FLASH*": 20.62},
}


def run_one(args: argparse.Namespace) -> None:
    """One run in this process (the driver starts one process per run)."""
    from admm_automl.benchmarks.campaign import run_dir
    from admm_automl.benchmarks.runner import data_problem, run
    from admm_automl.datasets import load_dataset

    warnings.simplefilter("ignore")
    X, y = load_dataset(args.problem, args.data_dir)
    problem = data_problem(args.problem, X, y, space="paper_large", scoring="accuracy")
    summary = run(problem, args.method, seed=args.seed, time_budget=args.budget,
                  trial_timeout=args.trial_timeout or args.budget / 40,
                  out_dir=run_dir(args.root, args.problem, args.method, args.seed))
    print(json.dumps({k: summary[k] for k in ("problem", "method", "seed", "n_evals",
                                              "best_loss", "wall_time")}), flush=True)


def run_all(args: argparse.Namespace) -> None:
    """Every (seed, dataset, method) run not done yet, ``--parallel`` processes at a time."""
    from admm_automl.benchmarks.campaign import Job, run_campaign

    jobs = [Job(d, m, s, args.budget) for s in args.seeds for d in args.datasets
            for m in args.methods]
    run_campaign(__file__, jobs, root=args.root, parallel=args.parallel, force=args.force,
                 options={"--data-dir": args.data_dir, "--trial-timeout": args.trial_timeout})


def analyze(args: argparse.Namespace) -> str:
    """Print (and return) the tables of the runs under ``--root``."""
    from admm_automl.benchmarks import analysis

    runs = [r for r in analysis.load_runs(args.root)
            if r["problem"] in args.datasets and r["method"] in args.methods]
    if not runs:
        raise SystemExit(f"no runs under {args.root}")
    report = analysis.Report(runs, methods=args.methods, problems=args.datasets)
    paper = ["Zhang et al. (2016), Table 2: median 3-fold CV error (%) after 10 h, 10 runs\n",
             "| dataset | " + " | ".join(PAPER_CV_10H["Madelon"]) + " |",
             "|---|" + "---|" * len(PAPER_CV_10H["Madelon"])]
    paper += [f"| {d} | " + " | ".join(f"{v:.2f}" for v in row.values()) + " |"
              for d, row in PAPER_CV_10H.items()]
    text = "\n\n".join([
        report.header() + " (validation error = 1 − accuracy; × 100 for the paper's percent)",
        report.final_table(),
        report.anytime_table(FRACTIONS),
        report.time_to_final_table(),
        report.rank_table(FRACTIONS),
        report.throughput_table(),
        "\n".join(paper),
    ])
    print(text)
    figures = Path(args.root) / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    for path in report.plot_curves(figures / "flash_curves.png") + report.plot_ranks(
            figures / "flash_ranks.png"):
        print(f"figure: {path}")
    return text


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", help="directory of NAME.csv[.gz] files (target 'target')")
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    parser.add_argument("--budget", type=float, default=600.0, help="seconds per run")
    parser.add_argument("--trial-timeout", type=float,
                        help="seconds one evaluation may take (default: budget / 40, the paper's "
                        "15 min of 10 h)")
    parser.add_argument("--smoke", action="store_true",
                        help="every method once on one small dataset for 15 s, in a temporary "
                        "folder (scikit-learn's breast-cancer data without --data-dir)")
    campaign.add_arguments(parser, root=RESULTS)
    campaign.main(parser.parse_args(argv), run_one=run_one, run_all=run_all, analyze=analyze,
                  smoke=smoke)


def smoke(args: argparse.Namespace) -> None:
    data = args.data_dir and Path(args.data_dir).is_dir()
    args.data_dir = args.data_dir if data else None
    args.datasets = ["fri_c2_1000_10" if data else "breast_cancer"]
    args.seeds, args.budget, args.trial_timeout = [0], 15.0, 5.0


if __name__ == "__main__":
    main()
