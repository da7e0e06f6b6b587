"""The AutoML experiments of Liu et al. (2020), scaled down: Table A4 (ADMM vs JOPT), the
average-rank comparison with Optuna, FLAML and random search, adaptive vs fixed ADMM (Fig. 4 / A8)
and ρ / f̂ sensitivity.

Every run goes through :func:`admm_automl.benchmarks.runner.run`: the same pipeline space
(``paper_large``, Table A2), the same fixed 80/20 stratified split per dataset, the same engine
(one single-threaded worker process that is stopped when the budget ends) and the same wall-clock
budget, set-up included. Results land in ``experiments/results/automl/<problem>/<method>/seed<k>/``
(``journal.jsonl`` + ``run.json``), shared by the suites, so a run is never repeated for a second
table; ``analyze`` reads whatever is there for the suite's problems and methods.

Usage (BLAS/OpenMP are set to one thread below, before numpy is imported)::

    python experiments/automl_benchmark.py run --suite table_a4 --data-dir ../shared/data
    python experiments/automl_benchmark.py run --suite peers --data-dir ../shared/data
    python experiments/automl_benchmark.py run --suite adaptive
    python experiments/automl_benchmark.py run --suite sensitivity
    python experiments/automl_benchmark.py analyze --suite table_a4      # tables + PNGs
    python experiments/automl_benchmark.py smoke --data-dir ../shared/data   # CI: ~1 min

``run`` options: ``--budget`` (seconds per dataset run), ``--artificial-budget``, ``--seeds``,
``--datasets``, ``--methods`` (override the suite's), ``--parallel`` (runs at once; each run is
single-threaded), ``--force`` (redo runs that already have a ``run.json`` for this budget).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "experiments" / "results" / "automl"

#: the datasets of Liu et al.'s speedup table (Tables 1/A4/A5) that are in the shared data
TABLE_A4_DATASETS = ("fri_c2_1000_10", "pc4", "pollen", "sylvine", "wind", "bank8FM", "puma8NH",
                     "cpu_small")
ADMM_BA, ADMM_BO, JOPT = "AdADMM-F16(BO,Ba)", "AdADMM-F16(BO,BO)", "JOPT(BO)"
PEER_METHODS = (ADMM_BA, ADMM_BO, JOPT, "Random", "Optuna(TPE)", "FLAML(BlendSearch)")
SUITES = {
    # problems ("artificial" or dataset names) and methods of each table / figure
    "table_a4": (("artificial", *TABLE_A4_DATASETS), (ADMM_BA, ADMM_BO, JOPT)),
    "peers": (TABLE_A4_DATASETS, PEER_METHODS),
    "adaptive": (("artificial",), (ADMM_BA, "AdADMM-F8(BO,Ba)", "ADMM-I16(BO,Ba)",
                                   "ADMM-I32(BO,Ba)", "ADMM-I64(BO,Ba)", "ADMM-I128(BO,Ba)")),
    "sensitivity": (("artificial", "fri_c2_1000_10"), (ADMM_BA, f"{ADMM_BA}@rho=0.1", f"{ADMM_BA}@rho=10",
                                      f"{ADMM_BA}@z.loss_bound=0.5", f"{ADMM_BA}@z.loss_bound=0.9")),
}
#: the reference and compared methods of the speedup tables
SPEEDUP = {"table_a4": (JOPT, (ADMM_BA, ADMM_BO))}
#: Liu et al. 2020, Tables A4 (AdADMM-F16(BO,Ba)) and A5 (AdADMM-F16(BO,BO)) vs JOPT(BO):
#: (speedup ×, improvement %) after 3600 s (1024 s for the artificial objective), 10 runs
PAPER = {
    ADMM_BA: {"artificial": (108, 31), "bank8FM": (10, 0), "cpu_small": (4, 0),
              "fri_c2_1000_10": (153, 56), "pc4": (42, 8), "pollen": (25, 4), "puma8NH": (11, 1),
              "sylvine": (9, 9), "wind": (40, 0)},
    ADMM_BO: {"artificial": (39, 27), "bank8FM": (2, 5), "cpu_small": (5, 5),
              "fri_c2_1000_10": (25, 64), "pc4": (5, 13), "pollen": (7, 3), "puma8NH": (4, 1),
              "sylvine": (2, 26), "wind": (5, 5)},
}


def load_problem(name: str, data_dir: str | None):
    from admm_automl.benchmarks.runner import artificial_problem, data_problem
    from admm_automl.datasets import load_dataset

    if name == "artificial":
        return artificial_problem("paper_large", seed=0)
    X, y = load_dataset(name, data_dir)
    return data_problem(name, X, y, space="paper_large")


# ----------------------------------------------------------------------------------- running
def run_one(args: argparse.Namespace) -> None:
    """One run in this process (the ``run`` command starts one process per run)."""
    from admm_automl.benchmarks.campaign import run_dir
    from admm_automl.benchmarks.runner import run

    warnings.simplefilter("ignore")
    problem = load_problem(args.problem, args.data_dir)
    summary = run(problem, args.method, seed=args.seed, time_budget=args.budget,
                  out_dir=run_dir(Path(args.root), args.problem, args.method, args.seed))
    print(json.dumps({k: summary[k] for k in ("problem", "method", "seed", "n_evals",
                                              "best_loss", "wall_time")}), flush=True)


def suite(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """The suite's problems and methods, with --datasets / --methods applied."""
    problems, methods = SUITES[args.suite]
    if args.datasets:
        problems = [p for p in problems if p == "artificial"] + list(args.datasets)
    return list(problems), list(args.methods or methods)


def planned(args: argparse.Namespace) -> list:
    from admm_automl.benchmarks.campaign import Job

    problems, methods = suite(args)
    return [Job(problem, method, seed,
                args.artificial_budget if problem == "artificial" else args.budget)
            for seed in args.seeds for problem in problems for method in methods]


def run_all(args: argparse.Namespace) -> None:
    from admm_automl.benchmarks.campaign import run_campaign

    run_campaign(__file__, planned(args), root=args.root, parallel=args.parallel,
                 force=args.force, one_run=("run-one",), options={"--data-dir": args.data_dir})


# ---------------------------------------------------------------------------------- analysis
def analyze(args: argparse.Namespace) -> str:
    """Print (and return) the suite's tables; draw its figures next to the results."""
    from admm_automl.benchmarks import analysis

    root = Path(args.root)
    problems, methods = suite(args)
    runs = [r for r in analysis.load_runs(root) if r["problem"] in problems and r["method"] in methods]
    if not runs:
        raise SystemExit(f"no runs of suite {args.suite!r} under {root}")
    report = analysis.Report(runs, methods=methods, problems=problems)
    out = [report.header()]
    out.append(report.final_table())
    if args.suite in SPEEDUP:
        reference, compared = SPEEDUP[args.suite]
        for method in compared:
            out.append(report.speedup_table(reference, method, paper=PAPER.get(method)))
    if args.suite in ("adaptive", "sensitivity"):
        out.append(report.anytime_table())
    if args.suite == "peers":
        out.append(report.rank_table())
        out.append(report.wins_table())
    text = "\n\n".join(out)
    print(text)
    figures = root / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    written = report.plot_curves(figures / f"{args.suite}_curves.png")
    if args.suite == "peers":
        written += report.plot_ranks(figures / f"{args.suite}_ranks.png")
    for path in written:
        print(f"figure: {path}")
    return text


def smoke(args: argparse.Namespace) -> None:
    """Tiny budgets on the artificial objective and one dataset (scikit-learn's breast cancer when
    the data directory is missing); every method of every suite runs and the analysis of every
    suite is printed, so the script cannot rot."""
    data_dir = args.data_dir if args.data_dir and Path(args.data_dir).is_dir() else None
    dataset = args.dataset if data_dir else "breast_cancer"
    with tempfile.TemporaryDirectory() as tmp:
        for suite in SUITES:
            ns = argparse.Namespace(
                suite=suite, root=tmp, data_dir=data_dir, seeds=[0, 1], budget=4.0,
                artificial_budget=2.0, parallel=2, force=False, methods=None, datasets=[dataset],
            )
            run_all(ns)
            analyze(ns)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("run", "analyze"):
        p = sub.add_parser(name)
        p.add_argument("--suite", choices=sorted(SUITES), required=True)
        p.add_argument("--root", default=str(RESULTS))
        p.add_argument("--data-dir", help="directory of NAME.csv[.gz] files (target column 'target')")
        p.add_argument("--datasets", nargs="+", help="override the suite's datasets")
        p.add_argument("--methods", nargs="+", help="override the suite's methods")
        p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
        p.add_argument("--budget", type=float, default=45.0, help="seconds per dataset run")
        p.add_argument("--artificial-budget", type=float, default=60.0)
        p.add_argument("--parallel", type=int, default=2)
        p.add_argument("--force", action="store_true")
    one = sub.add_parser("run-one")
    one.add_argument("--problem", required=True)
    one.add_argument("--method", required=True)
    one.add_argument("--seed", type=int, required=True)
    one.add_argument("--budget", type=float, required=True)
    one.add_argument("--root", required=True)
    one.add_argument("--data-dir")
    sm = sub.add_parser("smoke")
    sm.add_argument("--data-dir", help="shared data directory (default: use breast_cancer)")
    sm.add_argument("--dataset", default="fri_c2_1000_10")
    args = parser.parse_args(argv)
    if args.command == "run":
        run_all(args)
    elif args.command == "analyze":
        analyze(args)
    elif args.command == "run-one":
        run_one(args)
    else:
        smoke(args)


if __name__ == "__main__":
    main()
