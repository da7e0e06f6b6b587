"""BlendSearch and CFO (Wang, Wu, Huang and Saied, ICLR 2021; Wu, Wang and Huang, AAAI 2021), the
claims of the paper's §5.3 that fit this machine, scaled down.

Suite ``learner`` — tuning one cost-heavy learner (scikit-learn's HistGradientBoosting, and LightGBM
when it is installed: the ``default`` space's ranges, FLAML's for LightGBM) on four shared datasets:
BlendSearch vs CFO (local search only), each with the low-cost point and without it (the paper's
"agnostic" ablation, Fig. 11), vs BO (our ``bo``) and Optuna's TPE (the paper's BO). Each is
``JOPT`` over a one-learner space (``method="jopt"``: the solver sees FLAML's own space of the
learner), trial cost = measured fit + predict time.

Suite ``admm`` — ADMM with ``theta_solver="blendsearch"`` vs the default ADMM (AdADMM-F16(BO,Ba)) on
the ``paper_large`` space (Liu et al., AAAI 2020, Table A2), same datasets.

Every run goes through :func:`admm_automl.benchmarks.runner.run` (the same fixed 80/20 stratified
split per dataset, one single-threaded worker process stopped at the end of the wall-clock budget,
set-up included). Printed: median incumbent (1 − AUROC) at fractions of the budget, and the time
each method needs to reach the final median of BO (``JOPT(bo)``; for the ``admm`` suite, of the
default ADMM), with the speedup. Results land in ``experiments/results/blendsearch/``.

    python experiments/blendsearch.py --data-dir ../shared/data     # full: both suites, then tables
    python experiments/blendsearch.py --smoke --data-dir ../shared/data   # CI: 5 evaluations a run

Options: ``--seeds``, ``--datasets``, ``--budget`` (learner suite, s), ``--admm-budget``,
``--parallel`` (runs at once; each run is single-threaded), ``--suites``, ``--analyze-only``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

from admm_automl.benchmarks import campaign  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "experiments" / "results" / "blendsearch"

#: mid-sized shared datasets, where a boosted model's fit cost varies by orders of magnitude
DATASETS = ("electricity", "phishing_websites", "sylvine", "cpu_small")
BO = "JOPT(bo)"
LEARNER_METHODS = ("JOPT(blendsearch)", "JOPT(blendsearch)@theta.low_cost=false", "JOPT(cfo)",
                   "JOPT(cfo)@theta.low_cost=false", BO, "Optuna(TPE)")
ADMM_DEFAULT = "AdADMM-F16(BO,Ba)"
ADMM_METHODS = ("AdADMM-F16(blendsearch,Ba)", ADMM_DEFAULT)
FRACTIONS = (0.05, 0.1, 0.25, 0.5, 1.0)


def learners() -> list[str]:
    """HistGradientBoosting, and LightGBM when it is installed."""
    return ["hist_gradient_boosting"] + (["lightgbm"] if importlib.util.find_spec("lightgbm") else [])



def learner_space(name: str):
    """A one-module space holding the classification ``name`` of the ``default`` space."""
    from admm_automl.space import Module, PipelineSpace, load_space

    default = load_space("default").for_task("classification")
    estimator = next(m for m in default.modules if m.name == "estimator")
    algo = next(a for a in estimator.choices if a.name == name)
    return PipelineSpace(f"default:{name}", (Module("estimator", (algo,)),),
                         {"classification": {"estimator": name}})


def load_problem(problem: str, data_dir: str | None, rows: int | None):
    """``dataset:learner`` (suite learner) or ``dataset`` (suite admm)."""
    import numpy as np

    from admm_automl.benchmarks.runner import data_problem
    from admm_automl.datasets import load_dataset

    dataset, _, learner = problem.partition(":")
    X, y = load_dataset(dataset, data_dir)
    if rows is not None and len(y) > rows:  # smoke: a stratified-enough random subset
        keep = np.sort(np.random.default_rng(0).choice(len(y), rows, replace=False))
        X = X.iloc[keep].reset_index(drop=True) if hasattr(X, "iloc") else X[keep]
        y = np.asarray(y)[keep]
    space = learner_space(learner) if learner else "paper_large"
    return data_problem(problem, X, y, space=space)


def plan(args: argparse.Namespace) -> dict[str, tuple[list[str], list[str], float]]:
    """Per suite: problems, methods and budget."""
    suites = {
        "learner": ([f"{d}:{lr}" for d in args.datasets
                     for lr in getattr(args, "smoke_learners", None) or learners()],
                    list(LEARNER_METHODS), args.budget),
        "admm": (list(args.datasets), list(ADMM_METHODS), args.admm_budget),
    }
    return {k: v for k, v in suites.items() if k in args.suites}


def run_one(args: argparse.Namespace) -> None:
    """One run in this process (``run_all`` starts one process per run)."""
    from admm_automl.benchmarks.campaign import run_dir
    from admm_automl.benchmarks.runner import run

    warnings.simplefilter("ignore")
    problem = load_problem(args.problem, args.data_dir, args.rows)
    summary = run(problem, args.method, seed=args.seed, time_budget=args.budget,
                  max_evals=args.max_evals, out_dir=run_dir(Path(args.root), args.problem, args.method, args.seed))
    print(json.dumps({k: summary[k] for k in ("problem", "method", "seed", "n_evals", "best_loss")}),
          flush=True)


def run_all(args: argparse.Namespace) -> None:
    from admm_automl.benchmarks.campaign import Job, run_campaign

    jobs = [Job(problem, method, seed, budget) for seed in args.seeds
            for problems, methods, budget in plan(args).values()
            for problem in problems for method in methods]
    run_campaign(__file__, jobs, root=args.root, parallel=args.parallel, force=args.force,
                 options={"--data-dir": args.data_dir, "--rows": args.rows,
                          "--max-evals": args.max_evals})


def analyze(args: argparse.Namespace) -> str:
    """The tables of every suite (medians at budget fractions, time to reach the reference)."""
    from admm_automl.benchmarks import analysis

    runs = analysis.load_runs(args.root)
    out = [f"machine: {platform.node()}, {os.cpu_count()} cores, {platform.python_version()}"]
    for suite, (problems, methods, _) in plan(args).items():
        reference = BO if suite == "learner" else ADMM_DEFAULT
        mine = [r for r in runs if r["problem"] in problems and r["method"] in methods]
        if not mine:
            out.append(f"suite {suite}: no runs under {args.root}")
            continue
        report = analysis.Report(mine, methods=methods, problems=problems)
        out += [f"## suite {suite}", report.header(), report.final_table(),
                report.anytime_table(FRACTIONS), report.rank_table(FRACTIONS)]
        out += [report.speedup_table(reference, m) for m in methods if m != reference]
    text = "\n\n".join(out)
    print(text)
    return text


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--smoke", action="store_true",
                        help="one dataset (breast cancer without --data-dir), 600 rows, one seed, "
                             "HistGradientBoosting only, 5 evaluations per run, results in a "
                             "temporary folder")
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--budget", type=float, default=120.0, help="s per learner-suite run")
    parser.add_argument("--admm-budget", type=float, default=300.0, help="s per ADMM-suite run")
    parser.add_argument("--suites", nargs="+", default=["learner", "admm"],
                        choices=["learner", "admm"])
    parser.add_argument("--rows", type=int, default=None, help="subsample each dataset")
    parser.add_argument("--max-evals", type=int, default=None, help="evaluations per run (cap)")
    campaign.add_arguments(parser, root=RESULTS)
    campaign.main(parser.parse_args(argv), run_one=run_one, run_all=run_all, analyze=analyze,
                  smoke=smoke)


def smoke(args: argparse.Namespace) -> None:
    if not (args.data_dir and Path(args.data_dir).is_dir()):
        args.data_dir, args.datasets = None, ["breast_cancer"]
    args.datasets, args.seeds, args.rows, args.max_evals = args.datasets[-1:], [0], 600, 5
    args.budget = args.admm_budget = 60.0  # a cap: worker start-up is slow on a busy machine
    args.smoke_learners = ["hist_gradient_boosting"]


if __name__ == "__main__":
    main()
