"""BAPI (Belakaria, Doppa, Fusi and Sheth, 2022): the paper's Table 1 (average rank over tasks)
scaled down to scikit-learn's iterative learners on this machine.

Tasks: one learner of the ``iterative`` space (a StandardScaler, then the MLP trained epoch by epoch
with ``partial_fit``, or HistGradientBoosting with ``max_iter`` boosting rounds; t_max = 100 for
both) on a dataset: four shared datasets and scikit-learn's digits. Methods, each a search of that
learner's hyperparameters *and* its training length where it chooses one:

* ``BAPI-4`` — ``theta_solver="bapi"`` (monotone learning-curve GP, horizon of at most 4);
* ``BAPI-4-NM`` — the paper's ablation without the monotonicity constraint (``monotone=False``);
* ``EI`` — our ``bo`` solver, every configuration trained to t_max (the paper's EI);
* ``Hyperband`` and ``BOHB`` — SMAC3's Hyperband and multi-fidelity (BOHB-style) facades with the
  training length as budget (:mod:`admm_automl.benchmarks.iterative_peers`; η = 3, four rungs);
* ``Random`` — uniform random configurations trained to t_max.

BAPI, EI and Random run as JOPT over the one-learner space (``method="jopt"``: no ADMM split, one
θ-solver over the whole search, BAPI's budget = the time left in the run). Every run goes through
:func:`admm_automl.benchmarks.runner.run`: one fixed stratified 80/20 split per dataset, one
single-threaded worker process that holds the partly trained models (so Hyperband's and BOHB's
promotions are continued as BAPI's are), and a wall-clock budget counted from the start of the
run, set-up included. The loss is the validation error, 1 − accuracy, the paper's metric (so
BAPI's ε = 0.01 is the paper's "1 % of accuracy"). Printed: median best validation error at
fractions of the budget, the average rank over tasks at those fractions (Table 1's statistic at
the end), and PNG figures of the best validation error and of the average rank against time.

    python experiments/bapi.py --data-dir ../shared/data          # full: runs, then tables
    python experiments/bapi.py --smoke --data-dir ../shared/data  # CI: digits only, 6 evaluations

Options: ``--seeds``, ``--datasets``, ``--learners``, ``--budget`` (s per run), ``--parallel``
(runs at once; each run is single-threaded), ``--methods``, ``--analyze-only``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import warnings  # noqa: E402
from functools import partial  # noqa: E402
from pathlib import Path  # noqa: E402

from admm_automl.benchmarks import campaign  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "experiments" / "results" / "bapi"

#: mid-sized shared binary datasets (3 800 - 11 000 rows), and scikit-learn's digits (10 classes)
DATASETS = ("sylvine", "phishing_websites", "cpu_small", "pollen", "digits")
LEARNERS = ("mlp", "hist_gradient_boosting")
#: method label -> (kind, θ-solver or peer option)
METHODS = {
    "BAPI-4": ("jopt", "bapi"),
    "BAPI-4-NM": ("jopt", {"name": "bapi", "params": {"monotone": False}}),
    "EI": ("jopt", "bo"),
    "Hyperband": ("peer", "hyperband"),
    "BOHB": ("peer", "bohb"),
    "Random": ("jopt", "random"),
}
FRACTIONS = (0.1, 0.25, 0.5, 1.0)


def learner_space(name: str):
    """The classification ``iterative`` space with one estimator choice, ``name``."""
    from admm_automl.space import Module, PipelineSpace, load_space

    space = load_space("iterative").for_task("classification")
    modules = tuple(Module(m.name, tuple(a for a in m.choices if a.name == name))
                    if m.name == "estimator" else m for m in space.modules)
    return PipelineSpace(f"iterative:{name}", modules,
                         {"classification": {"scaler": "standard_scaler", "estimator": name}})


def load_problem(problem: str, data_dir: str | None, rows: int | None):
    """``dataset:learner``."""
    import numpy as np

    from admm_automl.benchmarks.runner import data_problem
    from admm_automl.datasets import load_dataset

    dataset, _, learner = problem.partition(":")
    X, y = load_dataset(dataset, data_dir if dataset != "digits" else None)
    if rows is not None and len(y) > rows:  # smoke: a random subset
        keep = np.sort(np.random.default_rng(0).choice(len(y), rows, replace=False))
        X = X.iloc[keep].reset_index(drop=True) if hasattr(X, "iloc") else X[keep]
        y = np.asarray(y)[keep]
    return data_problem(problem, X, y, space=learner_space(learner), scoring="accuracy")


def run_one(args: argparse.Namespace) -> None:
    """One run in this process (``run_all`` starts one process per run)."""
    from admm_automl.benchmarks.campaign import run_dir
    from admm_automl.benchmarks.iterative_peers import run_smac_multifidelity
    from admm_automl.benchmarks.runner import Method, run

    warnings.simplefilter("ignore")
    problem = load_problem(args.problem, args.data_dir, args.rows)
    kind, what = METHODS[args.method]
    method = Method(args.method, "jopt", theta_solver=what if kind == "jopt" else None)
    peer = partial(run_smac_multifidelity, option=what) if kind == "peer" else None
    summary = run(problem, method, seed=args.seed, time_budget=args.budget,
                  max_evals=args.max_evals, peer=peer,
                  out_dir=run_dir(Path(args.root), args.problem, args.method, args.seed))
    print(json.dumps({k: summary[k] for k in ("problem", "method", "seed", "n_evals", "best_loss")}),
          flush=True)


def problems(args: argparse.Namespace) -> list[str]:
    return [f"{d}:{lr}" for d in args.datasets for lr in args.learners]


def run_all(args: argparse.Namespace) -> None:
    from admm_automl.benchmarks.campaign import Job, run_campaign

    jobs = [Job(problem, method, seed, args.budget) for seed in args.seeds
            for problem in problems(args) for method in args.methods]
    run_campaign(__file__, jobs, root=args.root, parallel=args.parallel, force=args.force,
                 options={"--data-dir": args.data_dir, "--rows": args.rows,
                          "--max-evals": args.max_evals})


def analyze(args: argparse.Namespace) -> str:
    """Medians at budget fractions, average ranks over tasks (Table 1), curves as PNG."""
    from admm_automl.benchmarks import analysis

    mine = [r for r in analysis.load_runs(args.root)
            if r["problem"] in problems(args) and r["method"] in args.methods]
    if not mine:
        text = f"no runs under {args.root}"
    else:
        report = analysis.Report(mine, methods=args.methods, problems=problems(args))
        (Path(args.root) / "figures").mkdir(parents=True, exist_ok=True)
        figures = report.plot_curves(Path(args.root) / "figures" / "curves.png")
        figures += report.plot_ranks(Path(args.root) / "figures" / "ranks.png")
        text = "\n\n".join([
            f"machine: {platform.node()}, {os.cpu_count()} cores, {platform.python_version()}",
            report.header(), report.final_table(), report.anytime_table(FRACTIONS),
            "Average rank over tasks (the paper's Table 1: BAPI 2.9 of 8 methods)",
            report.rank_table(FRACTIONS),
            "figures: " + ", ".join(str(f) for f in figures),
        ])
    print(text)
    return text


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--smoke", action="store_true",
                        help="digits (600 rows) with the MLP, one seed, 6 evaluations per run, "
                             "results in a temporary folder")
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--learners", nargs="+", default=list(LEARNERS), choices=LEARNERS + ("sgd",))
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--budget", type=float, default=120.0, help="s per run")
    parser.add_argument("--rows", type=int, default=None, help="subsample each dataset")
    parser.add_argument("--max-evals", type=int, default=None, help="evaluations per run (cap)")
    campaign.add_arguments(parser, root=RESULTS)
    campaign.main(parser.parse_args(argv), run_one=run_one, run_all=run_all, analyze=analyze,
                  smoke=smoke)


def smoke(args: argparse.Namespace) -> None:
    args.datasets, args.learners, args.seeds = ["digits"], ["mlp"], [0]
    args.rows, args.max_evals, args.budget = 600, 6, 60.0  # the budget is only a cap here


if __name__ == "__main__":
    main()
